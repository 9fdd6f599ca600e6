"""The SEV hypercube's primitives (SEV paper Def. 1), shared by SEV, LENS, the linear literal space and the
baselines: the vertices of one layer, rows that mix a query and a reference group by group, and a scorer that
evaluates vertices in batched (chunked) model calls.

A vertex is a Boolean vector b over the feature groups: b_g = 1 keeps the query's value of group g, b_g = 0
takes the reference's.
"""
from __future__ import annotations

import itertools
from typing import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from .intake.layout import GroupLayout
from .intake.encoding import encoded_model
from .intake.mixed import MixedRows
from .intake.models import ModelAdapter
from .reference import Reference

ProgressFn = Callable[[float, str], None]
DEFAULT_CHUNK_ROWS = 32_768  # model calls of ~20-50k rows run fastest per row here (bench/sev_speed.py)


def one_row(query) -> pd.DataFrame:
    """A query given as a one-row frame or a Series, as a one-row frame."""
    return query.to_frame().T.infer_objects() if isinstance(query, pd.Series) else query.iloc[:1]


def layer_masks(p: int, movable: Sequence[int], depth: int, start: bool,
                chunk: int | Callable[[], int]) -> Iterator[np.ndarray]:
    """All vertices ``depth`` moves from the start vertex (all ``start``), in ``itertools.combinations`` order of the
    moved groups, in chunks of ≤ ``chunk`` rows (a callable ``chunk`` is asked again before each chunk)."""
    combos = itertools.combinations(movable, depth)
    size = chunk if callable(chunk) else lambda: chunk
    while True:
        block = np.array(list(itertools.islice(combos, size())), dtype=np.intp).reshape(-1, depth)
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


def first_layer_masks(p: int) -> np.ndarray:
    """The vertices one move from the query (SEV⁻'s first layer) and one move from the reference (SEV⁺'s)."""
    eye = np.eye(p, dtype=bool)
    return np.concatenate([~eye, eye])


AHEAD_ROWS = 156  # vertices a one-row search scores ahead in its first call: two layers from each side to 12 groups
AHEAD_ROWS_SANDBOXED = 512  # the same for a model in a sandboxed worker, where a call costs a round trip: to 22


def ahead_masks(p: int, rows: int = AHEAD_ROWS) -> np.ndarray:
    """The vertices a one-row search scores in its first model call, with the query and the reference: one move
    from the query (SEV⁻'s first layer) and from the reference (SEV⁺'s), and two moves from each where all of
    them fit in ``rows``, so the many rows whose SEV is 1 or 2 need no second call (what a model in a sandboxed
    worker pays most for)."""
    if p * p + p > rows:
        return first_layer_masks(p)
    pairs = np.array(list(itertools.combinations(range(p), 2)), dtype=int).reshape(-1, 2)
    two = np.zeros((len(pairs), p), dtype=bool)
    two[np.arange(len(pairs))[:, None], pairs] = True
    return np.concatenate([first_layer_masks(p), ~two, two])


class VertexScorer:
    """Model scores of hypercube vertices of many queries against one reference.

    When the model's preprocessing works column by column (:func:`encoded_model`), the queries and the
    reference are encoded once (a dataset's rows are encoded once per model) and vertices are mixed as numeric
    arrays for the final estimator — the same scores as encoding each mixed raw row, without per-call
    preprocessing. Otherwise vertices are mixed as raw rows (:func:`mix`) for the whole model. With
    ``first_layers`` (one query), the vertices of :func:`ahead_masks` (the first layers of both SEV⁻ and SEV⁺, the
    second too on narrow data) are scored in the same model call as the query and the reference. On encoded rows
    the queries' and the reference's scores are computed when first read, so that :meth:`ahead` can add a search's
    first layer to that same call.
    """

    def __init__(self, model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame, reference: Reference,
                 chunk_rows: int = DEFAULT_CHUNK_ROWS, first_layers: bool = False):
        self.model, self.layout, self.queries, self.reference = model, layout, queries, reference
        self.encoded = encoded_model(model, layout.groups)
        self.chunk_rows = max(1, chunk_rows)
        self._ahead: np.ndarray | None = None  # the (n, m) scores of the masks scored ahead (NaN: not scored)
        self._ahead_masks = np.zeros((0, layout.size), dtype=bool)  # those masks, in their order
        self._ahead_index: dict[bytes, int] | None = None  # mask → its column, built when first needed
        self._ahead_kept: list[int] = []  # the counts of query groups kept by the masks scored ahead
        self._scores: np.ndarray | None = None  # the queries' scores, then the reference's
        columns = list(layout.columns)
        n = len(queries)
        self.compact = model.sandboxed  # vertices cross to its worker compact (MixedRows), mixed there
        budget = AHEAD_ROWS_SANDBOXED if self.compact else AHEAD_ROWS
        ahead = ahead_masks(layout.size, budget) if first_layers and n == 1 else np.zeros((0, layout.size), bool)
        if self.encoded is None:
            parts = [queries[columns], reference.as_frame(columns)]
            if len(ahead):
                parts.append(mix(layout, queries, reference, ahead))
            scores = self._chunked(model.score, pd.concat(parts, ignore_index=True))
            equal = np.column_stack([queries[c].to_numpy() == reference.values[c] for c in columns])
            column_group = np.array(layout.column_group)
            self._keep(scores, n, ahead, np.ones((n, len(ahead)), bool))
        else:
            source = layout.source.features if layout.source is not None else None
            self._queries = self.encoded.encode_rows(queries, source, list(model.columns))
            self._reference = self.encoded.encode_reference(reference.values, model.columns)
            equal, column_group = self._queries == self._reference, self.encoded.column_group
        differs = np.zeros((layout.size, n), dtype=bool)
        np.logical_or.at(differs, np.asarray(column_group), ~np.asarray(equal, dtype=bool).T)  # one pass, any p
        self.same = ~differs.T
        if len(ahead) and self.encoded is not None:
            self.ahead(ahead, np.ones((n, len(ahead)), bool))

    def _first_scores(self) -> np.ndarray:
        """The queries' scores, then the reference's (scored in one call when first read)."""
        if self._scores is None:
            self.ahead(np.zeros((0, self.layout.size), bool), np.zeros((len(self.queries), 0), bool))
        return self._scores

    @property
    def query_scores(self) -> np.ndarray:
        return self._first_scores()[:-1]

    @property
    def reference_score(self) -> float:
        return float(self._first_scores()[-1])

    def ahead(self, masks: np.ndarray, fresh: np.ndarray) -> None:
        """Score the queries, the reference and the vertices ``masks`` of each query where ``fresh`` (n, m) is
        True in one model call (chunked), before the queries' scores are first read; :meth:`scores` then reads
        those vertices off. Does nothing once the queries are scored (or off encoded rows)."""
        if self._scores is not None or self.encoded is None:
            return
        n, p = len(self.queries), self.layout.size
        qi, vi = np.nonzero(fresh)
        keep = np.vstack([np.ones((n, p), bool), np.zeros((1, p), bool), masks[vi]])
        which = np.concatenate([np.arange(n), np.zeros(1, int), qi])
        scores = self._chunked(lambda X: self.model.scores_of(self.encoded.estimator, X), self._mixed(which, keep))
        self._keep(scores, n, masks, fresh)

    def _keep(self, scores: np.ndarray, n: int, masks: np.ndarray, fresh: np.ndarray) -> None:
        """Store the scores of one first call: the n queries, the reference, then the fresh (query, vertex) pairs
        in row order."""
        self._scores = scores[:n + 1]
        if len(masks):
            table = np.full(fresh.shape, np.nan)
            table[fresh] = scores[n + 1:]
            self._ahead, self._ahead_masks, self._ahead_index = table, masks, None
            self._ahead_kept = sorted(set(masks.sum(axis=1).tolist()))

    def _chunked(self, score, X) -> np.ndarray:
        """``score`` over the rows of ``X`` in calls of at most ``chunk_rows`` rows."""
        pick = (lambda a, b: X.iloc[a:b]) if isinstance(X, pd.DataFrame) else (lambda a, b: X[a:b])
        return np.concatenate([score(pick(a, a + self.chunk_rows)) for a in range(0, len(X), self.chunk_rows)])

    def _read_ahead(self, rows: np.ndarray, masks: np.ndarray, pick: np.ndarray) -> np.ndarray:
        """The scores of the pairs ``pick`` (flat indices into (len(rows), len(masks))) scored ahead; NaN for the
        rest."""
        table = self._ahead
        found = np.full(len(pick), np.nan)
        if masks.shape == self._ahead_masks.shape and np.array_equal(masks, self._ahead_masks):
            column = np.arange(len(masks))  # the very vertices scored ahead (a search's first layer)
        else:  # only masks keeping as many query groups as one scored ahead can be one (a later layer's have none)
            if self._ahead_index is None:
                self._ahead_index = {m.tobytes(): j for j, m in enumerate(self._ahead_masks)}
            column = np.full(len(masks), -1)
            cand = np.flatnonzero((masks.sum(axis=1)[:, None] == self._ahead_kept).any(axis=1))
            column[cand] = [self._ahead_index.get(masks[j].tobytes(), -1) for j in cand]
        i, j = np.divmod(pick, len(masks))
        have = column[j] >= 0
        found[have] = table[rows[i[have]], column[j[have]]]
        return found

    def scores(self, rows: np.ndarray, masks: np.ndarray, fresh: np.ndarray | None = None) -> np.ndarray:
        """(len(rows), len(masks)) scores: query ``rows[i]`` with the groups where ``masks[j]`` is False moved.

        Only pairs where ``fresh`` is True are evaluated (the rest are NaN).
        """
        fresh = np.ones((len(rows), len(masks)), dtype=bool) if fresh is None else fresh
        out = np.full(fresh.shape, np.nan)
        pick = np.flatnonzero(fresh)
        if len(pick) == 0:
            return out
        if self._ahead is not None:  # vertices scored ahead are read off
            known = self._read_ahead(rows, masks, pick)
            out.flat[pick] = known
            pick = pick[np.isnan(known)]
            if len(pick) == 0:
                return out
        if self.encoded is None:
            frame = mix(self.layout, self.queries.iloc[rows], self.reference, masks).iloc[pick]
            out.flat[pick] = self.model.score(frame)
            return out
        i, j = np.divmod(pick, len(masks))
        out.flat[pick] = self.model.scores_of(self.encoded.estimator, self._mixed(rows[i], masks[j]))
        return out

    def _mixed(self, which: np.ndarray, keep: np.ndarray):
        """The encoded vertices: row r keeps query ``which[r]``'s groups where ``keep[r]``, the reference's
        elsewhere; compact (:class:`MixedRows`, mixed in the worker) for a sandboxed model, as an array here."""
        rows = MixedRows(self._queries, self._reference, which, keep, self.encoded.column_group)
        return rows if self.compact else rows.array()
