"""Sparse Explanation Values (SEV paper, Defs 1-4) by batched breadth-first search on the SEV hypercube.

A vertex is a Boolean vector b over the feature groups: b_g = 1 keeps the query's value of group g,
b_g = 0 takes the reference's. SEV⁻ (Def. 3) is the fewest groups moved from the query to the
reference that flip the prediction; SEV® (Def. 4) the same with restricted groups held at the query;
SEV⁺ (Def. 2) the fewest groups moved from the reference to the query that reach the query's class.
Each BFS layer (all vertices at one depth) is evaluated in one batched model call (chunked), and a
dataset-wide run evaluates that layer for all unresolved queries at once.
"""
from __future__ import annotations

import itertools
from math import comb
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from .data import Dataset, FeatureGroup
from .models import ModelAdapter, encoded_model
from .reference import Reference

ProgressFn = Callable[[float, str], None]
DEFAULT_MAX_DEPTH = 6
DEFAULT_CHUNK_ROWS = 32_768  # model calls of ~20-50k rows run fastest per row here (bench/sev_speed.py)
MAX_LAYER_VERTICES = 2_000_000  # one layer per query; deeper layers of wide data are cut off (status beyond_depth)
HYPERCUBE_MAX_GROUPS = 12
KINDS = ("minus", "plus")


@dataclass(frozen=True)
class GroupLayout:
    """The dataset's feature groups: their names and, for each model input column, its group."""

    groups: tuple[FeatureGroup, ...]

    @classmethod
    def of(cls, dataset: Dataset) -> "GroupLayout":
        return cls(tuple(dataset.groups))

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.groups)

    @cached_property
    def columns(self) -> tuple[str, ...]:
        return tuple(c for g in self.groups for c in g.columns)

    @cached_property
    def column_group(self) -> tuple[int, ...]:
        return tuple(i for i, g in enumerate(self.groups) for _ in g.columns)

    @property
    def size(self) -> int:
        return len(self.groups)

    def indices(self, names: Sequence[str]) -> list[int]:
        return [self.names.index(n) for n in names]


@dataclass(frozen=True)
class SEVResult:
    """One SEV value for one query, with every minimal explanation and the vertices evaluated.

    ``explanations`` lists, for each flipping vertex at the minimal depth, the groups that moved
    (to the reference for ``minus``, to the query's value for ``plus``). ``status`` is
    ``explained``, ``beyond_depth`` (nothing flips up to ``max_depth``, the depth searched: the
    requested depth, or less where a layer would exceed ``MAX_LAYER_VERTICES``) or ``unexplainable``
    (nothing flips even when every movable group moves).
    """

    kind: str
    value: int | None
    explanations: tuple[tuple[str, ...], ...]
    status: str
    explained_class: int
    max_depth: int
    restricted: tuple[str, ...] = ()
    reference_class: int | None = None
    vertex_masks: np.ndarray | None = None  # (m, p) bool, True = query value
    vertex_scores: np.ndarray | None = None  # (m,) model score of each evaluated vertex

    @property
    def explainable(self) -> bool:
        return self.status == "explained"

    @property
    def label(self) -> str:
        return {"plus": "SEV⁺", "minus": "SEV®" if self.restricted else "SEV⁻"}[self.kind]

    @property
    def shown(self) -> str:
        """The value as the app and reports show it: ``> d`` when nothing flips within depth d, ``none`` when
        nothing flips at all."""
        if self.status == "explained":
            return str(self.value)
        return f"> {self.max_depth}" if self.status == "beyond_depth" else "none"

    def paths(self) -> list[tuple[str, ...]]:
        """Every shortest hypercube path, as the order in which groups move (each explanation's orderings)."""
        return [order for groups in self.explanations for order in itertools.permutations(groups)]

    @property
    def message(self) -> str:
        """A one-line reading of the outcome."""
        if self.value == 0:
            return f"{self.label} = 0: the reference itself is already predicted in the query's class"
        if self.status == "explained":
            return f"{self.label} = {self.value} ({len(self.explanations)} minimal explanation(s))"
        if self.reference_class == self.explained_class and self.kind == "minus":
            return (f"{self.label}: not found — the reference is itself predicted in the query's class; "
                    "use a reference built from the other class")
        if self.status == "beyond_depth":
            return f"{self.label}: no explanation within depth {self.max_depth} (deeper layers were not searched)"
        held = f" with {', '.join(self.restricted)} held fixed" if self.restricted else ""
        return f"{self.label}: not explainable — moving every feature{held} does not flip the prediction"


def layer_masks(p: int, movable: Sequence[int], depth: int, start: bool, chunk: int) -> Iterator[np.ndarray]:
    """All vertices ``depth`` moves from the start vertex (all ``start``), in chunks of ≤ ``chunk`` rows."""
    combos = itertools.combinations(movable, depth)
    while True:
        block = np.array(list(itertools.islice(combos, chunk)), dtype=np.intp).reshape(-1, depth)
        if len(block) == 0:
            return
        masks = np.full((len(block), p), start, dtype=bool)
        masks[np.arange(len(block))[:, None], block] = not start
        yield masks


def mix(layout: GroupLayout, queries: pd.DataFrame, reference: Reference, masks: np.ndarray) -> pd.DataFrame:
    """Model inputs for every (query i, vertex j), row i·m + j: query values where the mask is True."""
    n, m = len(queries), len(masks)
    data = {}
    for column, g in zip(layout.columns, layout.column_group):
        q = queries[column].to_numpy()
        ref = np.asarray(reference.values[column], dtype=q.dtype if q.dtype == object else None)
        data[column] = np.where(masks[None, :, g], q[:, None], ref).reshape(n * m)
    return pd.DataFrame(data)


class VertexScorer:
    """Model scores of hypercube vertices of many queries against one reference.

    When the model's preprocessing works column by column (:func:`encoded_model`), the queries and the
    reference are encoded once and vertices are mixed as numeric arrays for the final estimator — the
    same scores as encoding each mixed raw row, without per-call preprocessing. Otherwise vertices are
    mixed as raw rows (:func:`mix`) for the whole model.
    """

    def __init__(self, model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame, reference: Reference):
        self.model, self.layout, self.queries, self.reference = model, layout, queries, reference
        self.encoded = encoded_model(model, layout.groups)
        columns = list(layout.columns)
        if self.encoded is None:
            self.query_scores = model.score(queries)
            self.reference_score = float(model.score(reference.as_frame(columns))[0])
            equal = np.column_stack([queries[c].to_numpy() == reference.values[c] for c in columns])
            column_group = np.array(layout.column_group)
        else:
            encoded = self.encoded.encode(pd.concat([queries[model.columns], reference.as_frame(model.columns)]))
            self._queries, self._reference = encoded[:-1], encoded[-1]
            scores = model.scores_of(self.encoded.estimator, encoded)
            self.query_scores, self.reference_score = scores[:-1], float(scores[-1])
            equal, column_group = self._queries == self._reference, self.encoded.column_group
        self.same = np.column_stack([equal[:, column_group == g].all(axis=1) for g in range(layout.size)])

    def scores(self, rows: np.ndarray, masks: np.ndarray, fresh: np.ndarray | None = None) -> np.ndarray:
        """(len(rows), len(masks)) scores: query ``rows[i]`` with the groups where ``masks[j]`` is False moved.

        Only pairs where ``fresh`` is True are evaluated (the rest are NaN).
        """
        fresh = np.ones((len(rows), len(masks)), dtype=bool) if fresh is None else fresh
        out = np.full(fresh.shape, np.nan)
        pick = np.flatnonzero(fresh)
        if len(pick) == 0:
            return out
        if self.encoded is None:
            frame = mix(self.layout, self.queries.iloc[rows], self.reference, masks).iloc[pick]
            out.flat[pick] = self.model.score(frame)
            return out
        i, j = np.divmod(pick, len(masks))
        keep = masks[j][:, self.encoded.column_group]
        X = np.where(keep, self._queries[rows[i]], self._reference)
        out.flat[pick] = self.model.scores_of(self.encoded.estimator, X)
        return out


def sev_batch(model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame, reference: Reference, *,
              kind: str = "minus", restricted: Sequence[str] = (), max_depth: int = DEFAULT_MAX_DEPTH,
              chunk_rows: int = DEFAULT_CHUNK_ROWS, keep_scores: bool = True,
              progress: ProgressFn | None = None, scorer: VertexScorer | None = None) -> list[SEVResult]:
    """SEV of many queries by one BFS: each layer is evaluated for all unresolved queries together.

    Each query is explained for its own predicted class. ``restricted`` applies to ``minus`` (SEV®).
    A ``scorer`` built for these queries and this reference can be passed to share its encoding.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    if restricted and kind == "plus":
        raise ValueError("restricted features apply to SEV⁻ (SEV®), not to SEV⁺")
    queries = queries.reset_index(drop=True)
    n, p = len(queries), layout.size
    if n == 0:
        return []
    scorer = scorer or VertexScorer(model, layout, queries, reference)
    classes = model.labels_of(scorer.query_scores)
    reference_class = int(model.labels_of([scorer.reference_score])[0])
    start = kind == "minus"  # minus starts at the query (all True), plus at the reference (all False)
    movable = [i for i in range(p) if layout.names[i] not in set(restricted)]
    depth_limit = min(max_depth, len(movable))
    searched_depth = sum(1 for _ in itertools.takewhile(lambda d: comb(len(movable), d) <= MAX_LAYER_VERTICES,
                                                         range(1, depth_limit + 1)))
    seen_masks: list[list[np.ndarray]] = [[] for _ in range(n)]
    seen_scores: list[list[np.ndarray]] = [[] for _ in range(n)]
    found: dict[int, tuple[int, list[tuple[str, ...]]]] = {}  # query → (depth, moved groups of each flip)
    if kind == "plus":  # depth 0: SEV⁺ = 0 when the reference is already in the query's class
        origin = np.zeros((1, p), dtype=bool)
        for qi in range(n):
            if keep_scores:
                seen_masks[qi].append(origin)
                seen_scores[qi].append(np.array([scorer.reference_score]))
            if reference_class == classes[qi]:
                found[qi] = (0, [()])
    pending = np.array([i for i in range(n) if i not in found], dtype=np.intp)
    for depth in range(1, searched_depth + 1):
        if len(pending) == 0:
            break
        flips: dict[int, list[tuple[str, ...]]] = {}
        for masks in layer_masks(p, movable, depth, start, max(1, chunk_rows)):
            moved = masks != start
            moved_names: dict[int, tuple[str, ...]] = {}
            for part in np.array_split(pending, max(1, -(-len(pending) * len(masks) // chunk_rows))):
                # a vertex that moves a group whose query and reference values are equal is the same point as
                # a vertex of an earlier layer, which did not flip: it is skipped
                fresh = (scorer.same[part].astype(np.uint8) @ moved.T.astype(np.uint8)) == 0
                scores = scorer.scores(part, masks, fresh)
                labels = model.labels_of(scores)
                flipped = fresh & ((labels != classes[part, None]) if kind == "minus" else (labels == classes[part, None]))
                if keep_scores:
                    for row, qi in enumerate(part):
                        seen_masks[qi].append(masks[fresh[row]])
                        seen_scores[qi].append(scores[row][fresh[row]])
                rows, vertices = np.nonzero(flipped)
                for qi, j in zip(part[rows].tolist(), vertices.tolist()):
                    if j not in moved_names:
                        moved_names[j] = tuple(itertools.compress(layout.names, moved[j]))
                    flips.setdefault(qi, []).append(moved_names[j])
        found.update({qi: (depth, hits) for qi, hits in flips.items()})
        pending = np.setdiff1d(pending, list(flips), assume_unique=True)
        if progress:
            progress(1 - len(pending) / n, f"{kind}: depth {depth} done, {len(pending)} of {n} queries left")
    status_if_missing = "unexplainable" if searched_depth == len(movable) else "beyond_depth"
    common = dict(kind=kind, max_depth=searched_depth, restricted=tuple(restricted), reference_class=reference_class)
    return [SEVResult(value=found.get(i, (None,))[0], explanations=tuple(found.get(i, (None, ()))[1]),
                      status="explained" if i in found else status_if_missing, explained_class=int(classes[i]),
                      vertex_masks=np.concatenate(seen_masks[i]) if seen_masks[i] else None,
                      vertex_scores=np.concatenate(seen_scores[i]) if seen_scores[i] else None, **common)
            for i in range(n)]


def sev(model: ModelAdapter, layout: GroupLayout, query: pd.DataFrame | pd.Series, reference: Reference, *,
        kind: str = "minus", restricted: Sequence[str] = (), max_depth: int = DEFAULT_MAX_DEPTH) -> SEVResult:
    """SEV⁻ / SEV® / SEV⁺ of one query (a one-row frame or a Series)."""
    return sev_batch(model, layout, one_row(query), reference, kind=kind, restricted=restricted,
                     max_depth=max_depth)[0]


def one_row(query) -> pd.DataFrame:
    return query.to_frame().T.infer_objects() if isinstance(query, pd.Series) else query.iloc[:1]


@dataclass(frozen=True)
class Hypercube:
    """Scores of all 2^p vertices; row v has mask bits (v >> g) & 1 (1 = query value of group g)."""

    names: tuple[str, ...]
    masks: np.ndarray
    scores: np.ndarray
    labels: np.ndarray

    @property
    def depth_from_query(self) -> np.ndarray:
        return (~self.masks).sum(axis=1)

    def table(self) -> pd.DataFrame:
        """One row per vertex, by depth: the groups at the reference, the depth, the score and the label."""
        moved = [", ".join(n for n, keep in zip(self.names, mask) if not keep) or "(none: the query)"
                 for mask in self.masks]
        table = pd.DataFrame({"at the reference": moved, "depth": self.depth_from_query, "score": self.scores,
                              "label": self.labels})
        return table.sort_values("depth", kind="stable").reset_index(drop=True)


def hypercube(model: ModelAdapter, layout: GroupLayout, query, reference: Reference) -> Hypercube:
    """Every vertex of the SEV hypercube (Def. 1) scored in one batched call; p ≤ 12 groups."""
    p = layout.size
    if p > HYPERCUBE_MAX_GROUPS:
        raise ValueError(f"the full hypercube has 2^{p} vertices; it is drawn for at most {HYPERCUBE_MAX_GROUPS} groups")
    codes = np.arange(2 ** p)
    masks = ((codes[:, None] >> np.arange(p)) & 1).astype(bool)
    scores = VertexScorer(model, layout, one_row(query), reference).scores(np.array([0]), masks)[0]
    return Hypercube(layout.names, masks, scores, model.labels_of(scores))


@dataclass(frozen=True)
class SEVExplanation:
    """SEV⁺, SEV⁻ and (with restricted groups) SEV® of one query, with what a table needs."""

    query: pd.Series
    reference: Reference
    layout: GroupLayout
    score: float
    explained_class: int
    plus: SEVResult
    minus: SEVResult
    restricted: SEVResult | None

    def table(self, which: str = "minus", unchanged: str = "—") -> pd.DataFrame:
        """The paper's table (Fig. 1c/1d): query, one row per explanation (moved groups only), reference."""
        result = {"plus": self.plus, "minus": self.minus, "restricted": self.restricted}[which]
        if result is None:
            raise ValueError("no SEV® here: pass restricted features to explain_sev")
        query_row = {g: self._value(g, self.query.to_dict()) for g in self.layout.names}
        ref_row = {g: self._value(g, self.reference.values) for g in self.layout.names}
        moved_to = ref_row if result.kind == "minus" else query_row
        rows, index = [query_row], ["Query"]
        for i, groups in enumerate((e for e in result.explanations if e), 1):
            rows.append({g: (moved_to[g] if g in groups else unchanged) for g in self.layout.names})
            index.append(f"Explanation {i}")
        rows.append(ref_row)
        index.append("Reference")
        if result.kind == "plus":
            rows, index = rows[::-1], index[::-1]
        return pd.DataFrame(rows, index=index, columns=list(self.layout.names))

    def _value(self, group: str, values: dict):
        cols = [c for c, g in zip(self.layout.columns, self.layout.column_group) if self.layout.names[g] == group]
        if len(cols) == 1:
            return values[cols[0]]
        active = [c for c in cols if values[c] == 1]
        return active[0] if active else "none"


def explain_sev(model: ModelAdapter, dataset: Dataset, query, reference: Reference, *,
                restricted: Sequence[str] = (), max_depth: int = DEFAULT_MAX_DEPTH) -> SEVExplanation:
    """SEV⁺, SEV⁻ and SEV® (when ``restricted`` is given) of one query row of ``dataset``."""
    layout = GroupLayout.of(dataset)
    row = one_row(query).reset_index(drop=True)
    scorer = VertexScorer(model, layout, row, reference)  # the row is encoded and scored once for all three

    def search(kind: str, held: Sequence[str] = ()) -> SEVResult:
        return sev_batch(model, layout, row, reference, kind=kind, restricted=held, max_depth=max_depth,
                         scorer=scorer)[0]

    minus, plus = search("minus"), search("plus")
    held = search("minus", restricted) if restricted else None
    return SEVExplanation(row.iloc[0], reference, layout, float(scorer.query_scores[0]), minus.explained_class,
                          plus, minus, held)

