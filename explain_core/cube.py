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

from .data import GroupLayout
from .encoding import encoded_model
from .models import ModelAdapter
from .reference import Reference

ProgressFn = Callable[[float, str], None]
DEFAULT_CHUNK_ROWS = 32_768  # model calls of ~20-50k rows run fastest per row here (bench/sev_speed.py)


def one_row(query) -> pd.DataFrame:
    """A query given as a one-row frame or a Series, as a one-row frame."""
    return query.to_frame().T.infer_objects() if isinstance(query, pd.Series) else query.iloc[:1]


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
