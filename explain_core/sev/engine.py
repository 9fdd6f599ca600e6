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
from dataclasses import dataclass
from math import comb
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import IntakeError, check_choice, names_method
from ..intake.data import Dataset, GroupLayout
from ..intake.models import ModelAdapter
from ..reference import Reference
from ..results import Explanation
from .cube import DEFAULT_CHUNK_ROWS, ProgressFn, VertexScorer, layer_masks, one_row

DEFAULT_MAX_DEPTH = 6
MAX_LAYER_VERTICES = 2_000_000  # one layer per query; deeper layers of wide data are cut off (status beyond_depth)
HYPERCUBE_MAX_GROUPS = 12
KINDS = ("minus", "plus")


@dataclass(frozen=True)
class SEVResult(Explanation):
    """One SEV value for one query, with every minimal explanation and the vertices evaluated.

    ``explanations`` lists, for each flipping vertex at the minimal depth, the groups that moved
    (to the reference for ``minus``, to the query's value for ``plus``). ``status`` is
    ``explained``, ``beyond_depth`` (nothing flips up to ``max_depth``, the depth searched: the
    requested depth, or less where a layer would exceed ``MAX_LAYER_VERTICES``), ``unexplainable``
    (nothing flips even when every movable group moves) or ``limit`` (an exact engine's budget ran out:
    ``value``, when set, is the fewest moves found, ``bound`` a proven lower bound).

    ``engine`` names what answered (``bfs``, ``cp-sat``, ``additive``: :mod:`.dispatch`); ``certified`` says the
    value (or "nothing flips") is proven; ``complete`` that every minimal explanation is listed (the exact engines
    cap the list); ``note`` says in words why an engine was chosen or what it could not do.
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
    engine: str = "bfs"
    certified: bool | None = None  # None: filled in from the status (the BFS proves what it reports, within depth)
    bound: int | None = None
    complete: bool = True
    note: str = ""

    meta_parameters = ("kind", "max_depth", "restricted")

    def __post_init__(self):
        if self.certified is None:
            object.__setattr__(self, "certified", self.status in ("explained", "unexplainable"))

    @property
    def method(self) -> str:
        return self.label

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
        if self.status == "limit":
            return f"≤ {self.value}" if self.value is not None else f"≥ {self.bound or 0}"
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
            listed = "" if self.complete else ", the first found: more exist"
            return f"{self.label} = {self.value} ({len(self.explanations)} minimal explanation(s){listed})"
        if self.reference_class == self.explained_class and self.kind == "minus":
            return (f"{self.label}: not found — the reference is itself predicted in the query's class; "
                    "use a reference built from the other class")
        if self.status == "beyond_depth":
            return f"{self.label}: no explanation within depth {self.max_depth} (deeper layers were not searched)"
        if self.status == "limit":
            if self.value is not None:
                return (f"{self.label}: between {self.bound or 0} and {self.value} — the solver's budget ran out before "
                        "it proved the minimum")
            return f"{self.label}: at least {self.bound or 0} — the solver's budget ran out before any flip was found"
        held = f" with {', '.join(self.restricted)} held fixed" if self.restricted else ""
        return f"{self.label}: not explainable — moving every feature{held} does not flip the prediction"


@names_method("SEV")
def sev_batch(model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame, reference: Reference, *,
              kind: str = "minus", restricted: Sequence[str] = (), max_depth: int = DEFAULT_MAX_DEPTH,
              chunk_rows: int = DEFAULT_CHUNK_ROWS, keep_scores: bool = True,
              progress: ProgressFn | None = None, scorer: VertexScorer | None = None) -> list[SEVResult]:
    """SEV of many queries by one BFS: each layer is evaluated for all unresolved queries together.

    Each query is explained for its own predicted class. ``restricted`` applies to ``minus`` (SEV®).
    A ``scorer`` built for these queries and this reference can be passed to share its encoding.
    """
    check_choice(kind, KINDS, "SEV kind")
    if restricted and kind == "plus":
        raise IntakeError("Restricted features apply to SEV⁻ (SEV®), not to SEV⁺.")
    n, p = len(queries), layout.size
    if n == 0:
        return []
    scorer = scorer or VertexScorer(model, layout, queries, reference, chunk_rows)
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


@names_method("the SEV hypercube")
def hypercube(model: ModelAdapter, layout: GroupLayout, query, reference: Reference) -> Hypercube:
    """Every vertex of the SEV hypercube (Def. 1) scored in one batched call; p ≤ 12 groups."""
    p = layout.size
    if p > HYPERCUBE_MAX_GROUPS:
        raise IntakeError(f"The full hypercube has 2^{p} vertices; it is computed for at most {HYPERCUBE_MAX_GROUPS} "
                          "feature groups (the SEV search itself has no such limit).")
    codes = np.arange(2 ** p)
    masks = ((codes[:, None] >> np.arange(p)) & 1).astype(bool)
    scores = VertexScorer(model, layout, one_row(query), reference).scores(np.array([0]), masks)[0]
    return Hypercube(layout.names, masks, scores, model.labels_of(scores))


@dataclass(frozen=True)
class SEVExplanation(Explanation):
    """SEV⁺, SEV⁻ and (with restricted groups) SEV® of one query, with what a table needs."""

    query: pd.Series
    reference: Reference
    layout: GroupLayout
    score: float
    explained_class: int
    plus: SEVResult
    minus: SEVResult
    restricted: SEVResult | None

    method = "SEV"
    meta_parameters = ("held", "searched_depth")

    @property
    def held(self) -> tuple[str, ...]:
        """The restricted groups of SEV® (empty without)."""
        return self.restricted.restricted if self.restricted is not None else ()

    @property
    def searched_depth(self) -> int:
        return self.minus.max_depth

    def table(self, which: str = "minus", unchanged: str = "—") -> pd.DataFrame:
        """The paper's table (Fig. 1c/1d): query, one row per explanation (moved groups only), reference."""
        result = {"plus": self.plus, "minus": self.minus, "restricted": self.restricted}[which]
        if result is None:
            raise IntakeError("No SEV® here: pass restricted features to explain_sev.")
        query_row = self.layout.values(self.query.to_dict())
        ref_row = self.layout.values(self.reference.values)
        moved_to = ref_row if result.kind == "minus" else query_row
        start, end = (("Query", query_row), ("Reference", ref_row))[::1 if result.kind == "minus" else -1]
        rows, index = [start[1]], [start[0]]  # from the search's start (SEV⁺: the reference), explanations 1, 2, …
        for i, groups in enumerate((e for e in result.explanations if e), 1):
            rows.append({g: (moved_to[g] if g in groups else unchanged) for g in self.layout.names})
            index.append(f"Explanation {i}")
        rows.append(end[1])
        index.append(end[0])
        return pd.DataFrame(rows, index=index, columns=list(self.layout.names))


@names_method("SEV")
def explain_sev(model: ModelAdapter, dataset: Dataset, query, reference: Reference, *,
                restricted: Sequence[str] = (), max_depth: int = DEFAULT_MAX_DEPTH) -> SEVExplanation:
    """SEV⁺, SEV⁻ and SEV® (when ``restricted`` is given) of one query row of ``dataset``."""
    layout = dataset.layout
    row = one_row(query)
    scorer = VertexScorer(model, layout, row, reference, first_layers=True)  # one scoring for all three searches

    def search(kind: str, held: Sequence[str] = ()) -> SEVResult:
        return sev_batch(model, layout, row, reference, kind=kind, restricted=held, max_depth=max_depth,
                         scorer=scorer)[0]

    minus, plus = search("minus"), search("plus")
    held = search("minus", restricted) if restricted else None
    return SEVExplanation(row.iloc[0].rename(0), reference, layout, float(scorer.query_scores[0]), minus.explained_class,
                          plus, minus, held)

