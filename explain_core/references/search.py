"""Breadth-first SEV⁻ search in which each moved group may take one of several values: the engine of SEV^F (the
values of its flexible window, notes §2) and of the credible searches (notes §5, S11), which accept a flip only
where it lands densely enough.

A vertex moves a set S of groups, each to one of its candidate values (the plain reference's value first). SEV⁻ is
the smallest |S| whose vertex flips the prediction; with one candidate per group this is the SEV engine's SEV⁻
(:func:`~explain_core.sev.sev_batch`). As there, a vertex that "moves" a group to the value the row already has is
the vertex of a smaller set and is skipped. Each layer is scored for all unresolved rows in batched model calls,
on the model's encoded inputs when its preprocessing is traced column by column.

With a density, values other than the reference's are kept for a moved set only where they land at least as
credibly as the reference's values for that set (when those flip too) and as the row's closest flip at the
reference's values of the same size (when there is one); of what is kept the closest is shown. So where SEV^F has
SEV¹'s size, its shown explanation is never farther (ℓ∞, then ℓ1) nor less credible than SEV¹'s.

Several sets of candidates with the same sizes (SEV^©'s typical cases, notes §3) are searched together
(:func:`search_each`): each (set, query) pair is one row of the search, so a layer is scored for every pair left in
the same model calls, and the depth searched is reported per set, as if each set had been searched alone.

Credible search (``density`` and ``threshold`` given): a flip is accepted only where its credibility percentile is
at least ``threshold``. The search goes on at most ``slack`` sizes past the first flip; when nothing credible is
found there, the flips of the first flipping size are returned, flagged not credible (the fallback, always
defined: the paper's C2). So the credible value is never below the plain one, and equals it with threshold 0.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

import numpy as np
import pandas as pd

from ..cache import Memo, memo_field
from ..vertices import DEFAULT_CHUNK_ROWS
from ..intake.layout import GroupLayout
from ..intake.encoding import encoded_model
from ..intake.models import ModelAdapter
from ..reference import Reference
from ..sev.engine import MAX_LAYER_VERTICES
from .credibility import ReferenceDensity
from .space import PopulationSpace, same_values


@dataclass(frozen=True)
class Candidates:
    """Per feature group (layout order), the values it may be moved to, each as column → value; the first is the
    plain reference's. Their model inputs and population coordinates are kept per model and space (:meth:`table`).

    Parameters
    ----------
    values : tuple of tuple of dict
        Per group, its candidate values (column → value), the reference's first.
    """

    values: tuple[tuple[dict, ...], ...]
    tables: Memo = memo_field("the candidates as model inputs and population coordinates", max_entries=4)

    @classmethod
    def of_reference(cls, layout: GroupLayout, reference: Reference) -> Candidates:
        """The plain reference's candidates: each group's own reference value only (SEV¹).

        Parameters
        ----------
        layout : GroupLayout
            The feature groups.
        reference : Reference
            The reference.

        Returns
        -------
        Candidates
            One value per group.
        """
        return cls(tuple(({c: reference.values[c] for c in g.columns},) for g in layout.groups))

    @property
    def sizes(self) -> list[int]:
        return [len(v) for v in self.values]

    def table(self, model: ModelAdapter, layout: GroupLayout, space: PopulationSpace) -> _Table:
        """The :class:`_Table` of these candidates for ``model`` and ``space`` (built once; the key's objects are
        kept with it, so their ids are not reused while it is).

        Parameters
        ----------
        model, layout, space
            As for :func:`search`.

        Returns
        -------
        _Table
            The candidates' model inputs and coordinates.
        """
        return self.tables.get((id(model), id(layout), id(space)), lambda: (
            model, layout, space, _Table(model, layout, self, space)))[3]


@dataclass(frozen=True)
class Flip:
    """One flipping vertex: the groups moved, the candidate taken by each, the model's score, the numeric steps'
    ℓ∞ / ℓ1 in population SDs and the credibility percentile (None without a density)."""

    groups: tuple[int, ...]
    choice: tuple[int, ...]
    score: float
    linf: float
    l1: float
    credibility: float | None


@dataclass(frozen=True)
class Found:
    """One row's outcome: SEV (None when nothing acceptable flips), status, the depth searched, the row's class,
    the accepted flips and whether they passed the credibility gate (None without a gate)."""

    value: int | None
    status: str
    max_depth: int
    explained_class: int
    flips: tuple[Flip, ...]
    credible: bool | None


class _Table:
    """What the search needs of its candidates alone: one raw row per candidate (every group at the reference but
    the candidate's own), its model input and population coordinates, and which columns each candidate sets."""

    def __init__(self, model: ModelAdapter, layout: GroupLayout, candidates: Candidates, space: PopulationSpace):
        self.offsets = np.concatenate([[0], np.cumsum(candidates.sizes)])
        self.group_of = np.repeat(np.arange(layout.size), candidates.sizes)
        base = {c: v for values in candidates.values for c, v in values[0].items()}
        self.frame = pd.DataFrame([{**base, **value} for values in candidates.values for value in values],
                                  columns=list(layout.columns)).infer_objects()
        self.values = {c: self.frame[c].to_numpy(dtype=object) for c in layout.columns}
        self.encoded = encoded_model(model, layout.groups)
        if self.encoded is not None:
            self.c_model = self.encoded.encode(self.frame[list(model.columns)])
            self.model_mask = self.encoded.column_group[None, :] == self.group_of[:, None]
        self.c_space = space.encode(self.frame)
        self.space_mask = space.group_columns()[None, :] == self.group_of[:, None]
        numeric = np.array([g.kind == "numeric" and not g.is_block for g in layout.groups])
        self.numeric_cols = np.flatnonzero(numeric[space.group_columns()])


class _Mixer:
    """Vertices of many rows as model inputs and as population coordinates, mixed column by column. Row r of the
    search is query ``query_of[r]`` against the set of candidates ``block_of[r]`` (set by set); the sets have the
    same sizes, so a candidate id is the same group's slot in each, at ``first[r]`` in the stacked tables."""

    def __init__(self, model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame,
                 candidates: Sequence[Candidates], space: PopulationSpace):
        if any(c.sizes != candidates[0].sizes for c in candidates):
            raise ValueError("candidate sets searched together need the same number of values per group")
        self.model, self.layout, self.queries = model, layout, queries
        tables = [c.table(model, layout, space) for c in candidates]
        table = tables[0]
        self.offsets, self.group_of, self.numeric_cols = table.offsets, table.group_of, table.numeric_cols
        width = len(table.group_of)
        self.query_of = np.tile(np.arange(len(queries)), len(tables))
        self.block_of = np.repeat(np.arange(len(tables)), len(queries))
        self.first = self.block_of * width
        self.encoded = table.encoded
        if self.encoded is not None:
            source = layout.source.features if layout.source is not None else None
            self.q_model = self.encoded.encode_rows(queries, source, list(model.columns))
            self.c_model, self.model_mask = np.concatenate([t.c_model for t in tables]), table.model_mask
        self.c_space, self.space_mask = np.concatenate([t.c_space for t in tables]), table.space_mask
        self.values = {c: np.concatenate([t.values[c] for t in tables]) for c in layout.columns}
        self.native = {c: _native(queries[c].to_numpy(), self.values[c]) for c in layout.columns}
        rows = space.arrays(queries)
        self.q_space = space.encode(rows)
        slots = self.first[:, None] + np.arange(width)
        self.same = np.ones((len(self.query_of), width), dtype=bool)  # (rows, candidates): no move
        for g, group in enumerate(layout.groups):
            at = slice(self.offsets[g], self.offsets[g + 1])
            for c in group.columns:
                self.same[:, at] &= same_values(rows[c][self.query_of, None], self.values[c][slots[:, at]])

    def _mix(self, base: np.ndarray, cand: np.ndarray, mask: np.ndarray, qi: np.ndarray, ids: np.ndarray):
        X = base[self.query_of[qi]]
        for t in range(ids.shape[1]):
            X = np.where(mask[ids[:, t]], cand[self.first[qi] + ids[:, t]], X)
        return X

    def query_scores(self) -> np.ndarray:
        """The queries' own scores (each once)."""
        if self.encoded is not None:
            return self.model.scores_of(self.encoded.estimator, self.q_model)
        return self.model.score(self.queries)

    def scores(self, qi: np.ndarray, ids: np.ndarray) -> np.ndarray:
        if self.encoded is not None:
            X = self._mix(self.q_model, self.c_model, self.model_mask, qi, ids)
            return self.model.scores_of(self.encoded.estimator, X)
        return self.model.score(self.raw(qi, ids))

    def space_points(self, qi: np.ndarray, ids: np.ndarray) -> np.ndarray:
        return self._mix(self.q_space, self.c_space, self.space_mask, qi, ids)

    def raw(self, qi: np.ndarray, ids: np.ndarray) -> pd.DataFrame:
        """The vertices as raw rows (the model's own input): a numeric column stays numeric (the dtype that
        inferring the objects would give), any other is made of objects and inferred."""
        data = {}
        for c, g in zip(self.layout.columns, self.layout.column_group):
            query, candidates = self.native[c]
            values = query[self.query_of[qi]]
            for t in range(ids.shape[1]):
                hit = self.group_of[ids[:, t]] == g
                values[hit] = candidates[self.first[qi[hit]] + ids[hit, t]]
            data[c] = values
        frame = pd.DataFrame(data)
        return frame.infer_objects() if any(v.dtype.kind == "O" for v in data.values()) else frame


def _native(query: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A column's query values and candidate values in one numeric dtype when both are numbers (ints, floats), as
    objects otherwise."""
    inferred = pd.Series(candidates, dtype=object).infer_objects().to_numpy()
    if query.dtype.kind in "iuf" and inferred.dtype.kind in "iuf":
        kind = np.result_type(query.dtype, inferred.dtype)
        return query.astype(kind), inferred.astype(kind)
    return query.astype(object), candidates


def layer_moves(movable: Sequence[int], sizes: Sequence[int], offsets: np.ndarray, depth: int,
                limit: int = MAX_LAYER_VERTICES) -> tuple | None:
    """Every (set of ``depth`` movable groups, one candidate each) as candidate ids (V, depth), in the order of the
    group sets' combinations and then of the product of their candidates; the index of each vertex's group set; and
    the group sets. None when the layer has more than ``limit`` vertices."""
    if comb(len(movable), depth) > limit:  # every set has at least one vertex
        return None
    subsets = np.array(list(itertools.combinations(movable, depth)), dtype=np.intp).reshape(-1, depth)
    sizes = np.asarray(sizes, dtype=np.intp)
    counts = sizes[subsets].prod(axis=1)
    if counts.sum() > limit:
        return None
    set_of = np.repeat(np.arange(len(subsets)), counts)
    local = np.arange(len(set_of)) - np.repeat(np.cumsum(counts) - counts, counts)  # the vertex within its set
    ids = np.empty((len(set_of), depth), dtype=np.intp)
    for t in reversed(range(depth)):  # the last group's candidate varies fastest
        group = subsets[set_of, t]
        ids[:, t] = offsets[group] + local % sizes[group]
        local //= sizes[group]
    return ids, set_of, [tuple(g) for g in subsets.tolist()]


def search(model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame, candidates: Candidates,
           space: PopulationSpace, **options) -> list[Found]:
    """SEV⁻ of every query over ``candidates``: :func:`search_each` with one set (the same ``options``).

    Parameters
    ----------
    model, layout
        As for :func:`~explain_core.sev.engine.sev_batch`.
    queries : pandas.DataFrame
        The rows to explain, each for its predicted class.
    candidates : Candidates
        The values each group may move to.
    space : PopulationSpace
        The coordinates distances are measured in.
    **options
        ``restricted``, ``max_depth``, ``density``, ``threshold`` (the credible gate), ``slack``, ``chunk_rows``,
        ``classes``, ``fewest_only``: the fields of :class:`SearchOptions`.

    Returns
    -------
    list of Found
        One outcome per query: its SEV, status, depth searched and accepted flips.
    """
    return search_each(model, layout, queries, (candidates,), space, SearchOptions(**options))[0]


@dataclass(frozen=True)
class SearchOptions:
    """How :func:`search_each` searches: the groups held (``restricted``), the deepest layer, the credible gate
    (``density`` and its ``threshold``; None: no gate), how many sizes past a row's first flip the search goes on
    when nothing credible is found (``slack``), the rows per model call, the queries' classes (when the caller has
    them; else scored), and ``fewest_only`` (SEV^©'s sparsest rule: see :func:`search_each`)."""

    restricted: Sequence[str] = ()
    max_depth: int = 6
    density: ReferenceDensity | None = None
    threshold: float | None = None
    slack: int = 1
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    classes: np.ndarray | None = None
    fewest_only: bool = False


def search_each(model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame, candidates: Sequence[Candidates],
                space: PopulationSpace, options: SearchOptions = SearchOptions()) -> list[list[Found]]:
    """SEV⁻ of every query over each set of ``candidates`` (module docstring), per set the queries' outcomes: one
    search whose layers score every (set, query) pair left in the same model calls. Each query is explained for its
    predicted class (``options.classes``, when the caller has them; else scored here). Per moved set of groups, the
    closest flipping choice of values is kept (smallest ℓ∞, then ℓ1). With ``options.fewest_only`` (SEV^©'s
    sparsest rule, which takes the sets that explain a query with the fewest groups, credibly when gated), a query's
    other sets are not searched past the layer where one of them explains it: they come back unexplained (beyond
    that depth)."""
    restricted, max_depth, density = options.restricted, options.max_depth, options.density
    threshold, slack, chunk_rows = options.threshold, options.slack, options.chunk_rows
    classes, fewest_only = options.classes, options.fewest_only
    n = len(queries)
    if n == 0:
        return [[] for _ in candidates]
    mixer = _Mixer(model, layout, queries, candidates, space)
    classes = (model.labels_of(mixer.query_scores()) if classes is None else np.asarray(classes))[mixer.query_of]
    movable = [g for g, name in enumerate(layout.names) if name not in set(restricted)]
    gate = threshold if density is not None and threshold is not None else None
    first: dict[int, tuple[int, list[Flip]]] = {}
    accepted: dict[int, tuple[int, list[Flip], bool | None]] = {}
    pending = np.arange(len(classes))
    reached = np.zeros(len(classes), dtype=int)  # the last depth each row was searched at
    for depth in range(1, min(max_depth, len(movable)) + 1):
        moves = layer_moves(movable, candidates[0].sizes, mixer.offsets, depth) if len(pending) else None
        if moves is None:
            break
        reached[pending] = depth
        for qi, (every, credible) in _layer(mixer, classes, pending, moves, density, gate, chunk_rows).items():
            first.setdefault(qi, (depth, every))
            if gate is None or credible:
                accepted[qi] = (depth, every if gate is None else credible, None if gate is None else True)
        pending = np.array([q for q in pending.tolist() if q not in accepted
                            and (q not in first or depth < first[q][0] + slack)], dtype=np.intp)
        if fewest_only and accepted and len(pending):
            done = mixer.query_of[np.fromiter(accepted, dtype=np.intp)]
            pending = pending[~np.isin(mixer.query_of[pending], done)]
    for qi, (depth, every) in first.items():
        accepted.setdefault(qi, (depth, every, False))
    searched = np.zeros(len(candidates), dtype=int)  # per set: the deepest layer any of its rows was searched at
    np.maximum.at(searched, mixer.block_of, reached)
    out = []
    for i, depth in enumerate(searched[mixer.block_of].tolist()):
        missing = "unexplainable" if depth == len(movable) else "beyond_depth"
        out.append(Found(accepted[i][0], "explained", depth, int(classes[i]), tuple(accepted[i][1]), accepted[i][2])
                   if i in accepted else Found(None, missing, depth, int(classes[i]), (),
                                               None if gate is None else False))
    return [out[k * n:(k + 1) * n] for k in range(len(candidates))]


def _not_less_credible(mixer: _Mixer, chosen: np.ndarray, rows: np.ndarray, sets: np.ndarray, cred: np.ndarray,
                       linf: np.ndarray, l1: np.ndarray) -> np.ndarray:
    """Flips of one layer that may be kept: the plain reference's values always; other values only where they land
    at least as credibly as the plain reference's values for the same row and moved set (where those flip too) and
    as the row's closest plain flip of this size (where there is one: SEV¹'s explanation, so the closest kept flip
    is never farther from the row nor less credible than SEV¹'s when both have this size)."""
    plain = (chosen == mixer.offsets[mixer.group_of[chosen]]).all(axis=1)
    if not plain.any():
        return np.ones(len(rows), bool)
    at = np.flatnonzero(plain)
    per_set = dict(zip(zip(rows[at].tolist(), sets[at].tolist()), cred[at].tolist()))
    closest = at[np.lexsort((sets[at], l1[at], linf[at], rows[at]))]  # each row's closest plain flip first
    per_row = dict(zip(rows[closest][::-1].tolist(), cred[closest][::-1].tolist()))
    floor = np.maximum([per_set.get(key, -np.inf) for key in zip(rows.tolist(), sets.tolist())],
                       [per_row.get(r, -np.inf) for r in rows.tolist()])
    return plain | (cred >= floor)


def _layer(mixer: _Mixer, classes: np.ndarray, pending: np.ndarray, moves: tuple, density: ReferenceDensity | None,
           gate: float | None, chunk_rows: int) -> dict[int, tuple[list, list]]:
    """Row → (the closest flip per moved set, the closest credible flip per moved set) of one layer (``moves``, of
    :func:`layer_moves`), scored in calls of about ``chunk_rows`` vertices."""
    ids, set_of, subsets = moves
    found = []
    per_call = max(1, chunk_rows // max(1, len(ids)))
    for start in range(0, len(pending) if len(ids) else 0, per_call):
        part = pending[start:start + per_call]
        qi, vi = np.nonzero(~mixer.same[part][:, ids].any(axis=2))  # fresh vertices only
        if len(qi) == 0:
            continue
        rows = part[qi]
        scores = mixer.scores(rows, ids[vi])
        hit = mixer.model.labels_of(scores) != classes[rows]
        rows, vi, scores = rows[hit], vi[hit], scores[hit]
        if len(rows):
            points = mixer.space_points(rows, ids[vi])
            steps = np.abs(points[:, mixer.numeric_cols] - mixer.q_space[mixer.query_of[rows]][:, mixer.numeric_cols])
            cred = density.percentile_of_encoded(points) if density is not None else np.full(len(rows), np.nan)
            found.append((rows, vi, scores, steps.max(axis=1, initial=0.0), steps.sum(axis=1), cred))
    if not found:
        return {}
    rows, vi, scores, linf, l1, cred = (np.concatenate(parts) for parts in zip(*found))
    order = np.lexsort((l1, linf, set_of[vi], rows))
    eligible = _not_less_credible(mixer, ids[vi], rows, set_of[vi], cred, linf, l1) if density is not None \
        else np.ones(len(rows), bool)
    out: dict[int, tuple[list, list]] = {}
    for keep, slot in ((eligible, 0), (eligible & (cred >= gate) if gate is not None else None, 1)):
        if keep is None:
            continue
        picked = order[keep[order]]
        key = np.stack([rows[picked], set_of[vi[picked]]], axis=1)
        firsts = picked[np.unique(key, axis=0, return_index=True)[1]] if len(picked) else picked
        for j in sorted(firsts.tolist(), key=lambda j: (linf[j], l1[j])):
            choice = tuple(int(i - mixer.offsets[mixer.group_of[i]]) for i in ids[vi[j]])
            flip = Flip(tuple(subsets[set_of[vi[j]]]), choice, float(scores[j]), float(linf[j]), float(l1[j]),
                        None if np.isnan(cred[j]) else float(cred[j]))
            out.setdefault(int(rows[j]), ([], []))[slot].append(flip)
    return out
