"""SEV against each kind of reference, for a setup: the explanations of many rows, batched, against the parts
fitted once per explained class (:mod:`.fits`); the kinds side by side are in :mod:`.table`.

Kinds (:data:`REFERENCE_KINDS`): ``single`` (SEV¹, the setup's own reference), ``flexible`` (SEV^F), ``cluster``
(SEV^©), ``tree`` (SEVᵀ: values seen in training that the model's trees lead to; tree models only, see
:func:`available_kinds`). With ``credible`` set, the first three run the credible search (:mod:`.search`) at that
percentile threshold; SEVᵀ's point is measured for credibility but not gated (its exact search knows no density).
The setup's restricted features are held (SEV®) in every kind.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from ..errors import IntakeError, Unreadable, check_choice
from ..vertices import VertexScorer
from ..intake.encoding import encoded_model
from ..sev.engine import BFSSearch, searched_depth, sev_batch
from ..sev.exact_sev import exact_engine
from ..sev.tree_sev import tree_sev
from ..sev.trees import TreeEnsemble
from .fits import FittedReferences, ReferenceFits, fit_references
from .outcome import (ClusterSEV, FlexibleSEV, ReferenceSEV, SingleSEV, TreeKindSEV, from_found, from_sev, measure,
                      spread_seconds)
from .prototypes import Prototype, fewest, sparsest
from .search import Candidates, Found, SearchOptions, search_each

REFERENCE_KINDS = {"single": "one reference (SEV¹)", "flexible": "a flexible reference (SEV^F)",
                   "cluster": "typical cases (SEV^©)", "tree": "values seen in training (SEVᵀ, tree models)"}
"""The kinds of reference, each with its description in words."""


def available_kinds(setup) -> tuple[str, ...]:
    """The kinds this setup's model allows: SEVᵀ only for a tree model the exact engine reads (read once, kept).

    Parameters
    ----------
    setup : Setup
        Whose model's trees are read, if any.

    Returns
    -------
    tuple of str
        Keys of :data:`REFERENCE_KINDS`.
    """
    try:
        tree = isinstance(exact_engine(setup.model, setup.dataset.layout).read.structure, TreeEnsemble)
    except Unreadable:
        tree = False
    return tuple(k for k in REFERENCE_KINDS if k != "tree" or tree)


def explain_kind(setup, queries: pd.DataFrame, kind: str, fitted: dict[int, FittedReferences], *,
                 max_depth: int = 6, credible: float | None = None) -> list[ReferenceSEV]:
    """SEV of every row of ``queries`` against the ``kind`` of reference, one batch per predicted class
    (``fitted`` maps each class to its :class:`FittedReferences`, missing classes are fitted here); SEV^© assigns
    each row its typical case by the fitted parts' ``assignment`` rule.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    queries : pandas.DataFrame
        The rows.
    kind : str
        ``"single"``, ``"flexible"``, ``"cluster"`` or ``"tree"``.
    fitted : dict of int to FittedReferences
        The fits per class.
    max_depth : int
        The search depth.
    credible : float, optional
        The credibility threshold.

    Returns
    -------
    list of ReferenceSEV
        One result per row, in order.

    Raises
    ------
    IntakeError
        When ``kind`` is unknown, or ``"tree"`` for a model whose trees are not read.
    """
    check_choice(kind, REFERENCE_KINDS, "reference kind")
    if kind not in available_kinds(setup):
        raise IntakeError("SEVᵀ needs a tree model (a tree ensemble whose trees this app reads); this model is not "
                          "one. Choose another kind of reference.")
    labels = _labels(setup, queries) if len(queries) else np.zeros(0, dtype=int)
    out: list[ReferenceSEV | None] = [None] * len(queries)
    for label in np.unique(labels):
        at = np.flatnonzero(labels == label)
        if isinstance(fitted, ReferenceFits) or int(label) in fitted:
            part = fitted[int(label)]
        else:
            part = fitted.setdefault(int(label), fit_references(setup, int(label)))
        found = _EXPLAINERS[kind](setup, _rows(queries, at), part, max_depth, credible)
        for i, result in zip(at, found):
            out[i] = result
    return out


def _rows(queries: pd.DataFrame, at: np.ndarray) -> pd.DataFrame:
    """The rows at positions ``at`` (ascending): the frame itself when they are all of its rows (no copy)."""
    return queries if len(at) == len(queries) else queries.iloc[at]


def _labels(setup, queries: pd.DataFrame) -> np.ndarray:
    """The model's labels, read off the dataset's encoded rows when the model's encoding is traced (no
    preprocessing call for rows of the data)."""
    model, layout = setup.model, setup.dataset.layout
    encoded = encoded_model(model, layout.groups)
    if encoded is None:
        return model.label(queries)
    X = encoded.encode_rows(queries, setup.dataset.features, list(model.columns))
    return model.labels_of(model.scores_of(encoded.estimator, X))


def _common(setup, fitted: FittedReferences, credible: float | None) -> dict:
    return {"restricted": tuple(setup.restricted), "threshold": credible}



def _single(setup, queries, fitted, max_depth, credible) -> list[SingleSEV]:
    started = time.perf_counter()
    searched = _single_search(setup, queries, fitted, max_depth, credible)
    return _single_results(setup, queries, fitted, credible, searched, started)


@dataclass(frozen=True)
class _Searched:
    """The rows' search outcomes, each (value, status, class, depth, credible), and each row's moves; with the
    sparsest rule, each row's reference and its position in the queries (repeats allowed)."""

    outcomes: list[tuple]
    moves: list[list[tuple]]
    references: Sequence | None = None
    at: np.ndarray | None = None


def _single_search(setup, queries, fitted, max_depth, credible) -> _Searched:
    """SEV⁻ of the rows against ``fitted.reference`` (the credible search with ``credible``)."""
    ref, layout = fitted.reference, setup.dataset.layout
    if credible is None:
        scorer = VertexScorer(setup.model, layout, queries, ref)
        search = BFSSearch(kind="minus", restricted=setup.restricted, max_depth=max_depth, keep_scores=False)
        results = sev_batch(setup.model, layout, queries, ref, search, scorer=scorer)
        plain = [(r.value, r.status, r.explained_class, r.max_depth, None) for r in results]
        return _Searched(plain, from_sev(layout, results, ref, scorer))
    candidates = fitted.candidates()
    results = _search(setup, queries, (candidates,), fitted, max_depth, credible)[0]
    return _Searched([_outcome(f) for f in results], [from_found(f, layout, candidates) for f in results])


def _outcome(found: Found, depth: int | None = None) -> tuple:
    """A search's outcome as :func:`_single_search` gives it: (value, status, class, depth, credible); ``depth``
    replaces the depth searched (the SEV engine reports the depth it would search to, not the depth reached)."""
    return found.value, found.status, found.explained_class, found.max_depth if depth is None else depth, \
        found.credible


def _single_results(setup, queries, fitted, credible, searched: _Searched, started: float) -> list[SingleSEV]:
    """The rows' :class:`SingleSEV` s from their search outcomes and moves, measured in one batch; against
    ``fitted.reference``, or row by row against ``searched.references``; for the rows of ``queries`` at positions
    ``searched.at`` when given."""
    out = _measured(setup, queries, searched.moves, fitted.space, fitted.density, searched.at)
    seconds = spread_seconds(time.perf_counter() - started, len(out))
    references = [fitted.reference] * len(out) if searched.references is None else searched.references
    return [SingleSEV(v, st, c, d, q, ref, dest, credible=cr, seconds=seconds, **_common(setup, fitted, credible))
            for (v, st, c, d, cr), (q, dest), ref in zip(searched.outcomes, out, references)]


def _flexible(setup, queries, fitted, max_depth, credible) -> list[FlexibleSEV]:
    ref, density, space = fitted.reference, fitted.density, fitted.space
    candidates = fitted.flexible
    started = time.perf_counter()
    found = _search(setup, queries, (candidates,), fitted, max_depth, credible)[0]
    out = _measured(setup, queries, [from_found(f, setup.dataset.layout, candidates) for f in found], space, density)
    seconds = spread_seconds(time.perf_counter() - started, len(queries))
    return [FlexibleSEV(f.value, f.status, f.explained_class, f.max_depth, q, ref, dest, credible=f.credible,
                        seconds=seconds, tau=fitted.tau, k=fitted.k, **_common(setup, fitted, credible))
            for f, (q, dest) in zip(found, out)]


def _cluster(setup, queries, fitted, max_depth, credible) -> list[ClusterSEV]:
    """SEV¹ of each row against its typical case by the fitted ``assignment`` rule (:data:`~.prototypes.ASSIGNMENTS`):
    one batch per prototype, over the rows assigned to it (``nearest``), or one search of every row against every
    prototype, then the rows' choices measured (``sparsest``)."""
    prototypes, assignment = fitted.prototypes, fitted.assignment
    started = time.perf_counter()
    valid, distance = prototypes.distances(queries)
    proxies = [_Proxy(fitted, prototypes.prototypes[i]) for i in valid]
    if assignment == "nearest":
        chosen = distance.argmin(axis=1)
        found = {int(k): dict(zip(at.tolist(), _single(setup, _rows(queries, at), proxies[k], max_depth, credible)))
                 for k in np.unique(chosen) for at in [np.flatnonzero(chosen == k)]}
    else:
        chosen, found = _sparsest(setup, queries, proxies, distance, max_depth, credible, started)
    seconds = spread_seconds(time.perf_counter() - started, len(queries))
    out = []
    for i, k in enumerate(chosen.tolist()):
        r = found[k][i]
        out.append(ClusterSEV(**{f.name: getattr(r, f.name) for f in fields(r)} | {"seconds": seconds},
                              prototype=prototypes.prototypes[valid[k]].number, assigned_distance=float(distance[i, k]),
                              assignment=assignment, cases=len(valid)))
    return out


def _sparsest(setup, queries, proxies, distance, max_depth, credible, started) -> tuple[np.ndarray, dict]:
    """The sparsest rule: every row searched against every typical case in one search (:func:`~.search.search_each`,
    one model call per layer for every (typical case, row) pair left; a row's typical cases are searched no deeper
    than the layer where one explains it, credibly when gated: ``fewest_only``); the explanations of the typical
    cases that tie for the fewest features (and the gate) measured, in one batch, to break the tie by credibility;
    the chosen column per row and, per column, row → result. The plain search's outcomes read as the SEV engine's
    (SEV¹'s)."""
    layout = setup.dataset.layout
    sets = [proxy.candidates() for proxy in proxies]
    found = _search(setup, queries, sets, proxies[0], max_depth, credible, rated=credible is not None,
                    fewest_only=True)
    movable = sum(name not in set(setup.restricted) for name in layout.names)
    depth = searched_depth(movable, max_depth) if credible is None else None
    value = np.array([[np.nan if f.value is None else f.value for f in column] for column in found]).T
    passed = None if credible is None else np.array([[bool(f.credible) for f in column] for column in found]).T
    rows, columns = np.nonzero(fewest(value, passed))
    pairs = list(zip(rows.tolist(), columns.tolist()))
    searched = _Searched([_outcome(found[k][i], depth) for i, k in pairs],
                         [from_found(found[k][i], layout, sets[k]) for i, k in pairs],
                         [proxies[k].reference for _, k in pairs], at=rows)
    results = _single_results(setup, queries, proxies[0], credible, searched, started)
    credibility = np.full(value.shape, -np.inf)
    credibility[rows, columns] = [-np.inf if r.first is None or r.first.credibility is None else r.first.credibility
                                  for r in results]
    out: dict[int, dict] = {}
    for (i, k), result in zip(pairs, results):
        out.setdefault(k, {})[i] = result
    return sparsest(value, distance, passed, credibility), out


def _tree(setup, queries, fitted, max_depth, credible) -> list[TreeKindSEV]:
    """SEVᵀ of each row (one exact search a row, candidate values from the training rows), measured as the other
    kinds; ``max_depth`` does not bound it and ``credible`` does not gate it."""
    started = time.perf_counter()
    found = [tree_sev(setup.model, setup.dataset, queries.iloc[[i]], setup.train_rows, restricted=setup.restricted)
             for i in range(len(queries))]
    moves = [[(t.moved, t.point, t.score)] if t.status == "explained" else [] for t in found]
    out = _measured(setup, queries, moves, fitted.space, fitted.density)
    seconds = spread_seconds(time.perf_counter() - started, len(queries))
    return [TreeKindSEV(t.value, t.status, t.explained_class, setup.dataset.layout.size, q, fitted.reference, dest,
                        seconds=seconds, engine=t.engine, restricted=tuple(setup.restricted))
            for t, (q, dest) in zip(found, out)]


class _Proxy:
    """The fitted parts of a class with a typical case in place of the setup's reference."""

    def __init__(self, fitted: FittedReferences, prototype: Prototype):
        self.space, self.density, self.reference = fitted.space, fitted.density, prototype.reference
        self.explain_class = fitted.explain_class
        self._fitted, self._prototype = fitted, prototype

    def candidates(self) -> Candidates:
        return self._fitted.candidates(self._prototype)


def _search(setup, queries, sets: Sequence[Candidates], fitted, max_depth, credible, *,
            rated: bool = True, fewest_only: bool = False) -> list[list[Found]]:
    """:func:`~.search.search_each` over each set of candidates of rows the model predicts ``fitted.explain_class``
    (as :func:`explain_kind` groups them); with ``rated``, the flips' credibility is read in the search (the gate,
    SEV^F's other values) rather than only where the chosen flips are measured."""
    options = SearchOptions(restricted=setup.restricted, max_depth=max_depth,
                            density=fitted.density if rated else None, threshold=credible,
                            classes=np.full(len(queries), fitted.explain_class), fewest_only=fewest_only)
    return search_each(setup.model, setup.dataset.layout, queries, sets, fitted.space, options)


def _measured(setup, queries: pd.DataFrame, moves: Sequence[list], space, density,
              at: np.ndarray | None = None) -> list[tuple[pd.Series, tuple]]:
    """Each row as a Series with its moves measured (:func:`~.outcome.measure`), in one batch; the rows at
    positions ``at`` when given, without taking them out of the frame (a repeated position shares its Series:
    the sparsest rule keeps one result per row)."""
    if at is None:
        return list(zip(row_series(queries), measure(queries, moves, space, density)))
    columns = {c: values[at] for c, values in space.arrays(queries).items()}
    series = row_series(queries)
    return [(series[i], found) for i, found in zip(at.tolist(), measure(columns, moves, space, density))]


ROWS_BY_COLUMN = 32  # from this many rows, reading column by column is the faster (a fixed cost per column)


def row_series(frame: pd.DataFrame) -> list[pd.Series]:
    """Each row as ``frame.iloc[i]`` gives it (the same dtype, scalars, index and name), built from one array per
    column rather than row by row (``iloc`` gathers every block per row: most of a batch's time on wide data).
    Columns of other dtypes than numpy numbers, text and categories are read row by row with ``iloc``."""
    dtype = frame.iloc[0].dtype if len(frame) >= ROWS_BY_COLUMN else None  # the rows' common dtype, as pandas finds
    text = isinstance(dtype, np.dtype) and dtype.kind == "O"
    if isinstance(dtype, np.dtype) and not text:
        values = frame.to_numpy(dtype=dtype)
    elif text and all(_plain_column(d) for d in frame.dtypes):
        values = np.empty(frame.shape, dtype=object)
        for j in range(frame.shape[1]):
            values[:, j] = list(frame.iloc[:, j].to_numpy())  # the column's own scalars, as iloc gives them
    else:  # few rows, or a dtype whose scalars could differ: row by row
        return [frame.iloc[i] for i in range(len(frame))]
    return [pd.Series(values[i], index=frame.columns, name=name, dtype=dtype)
            for i, name in enumerate(frame.index)]


def _plain_column(dtype) -> bool:
    """A column whose ``to_numpy`` scalars are the ones ``iloc`` puts in an object row: numpy numbers and booleans,
    objects, text, categories."""
    return (isinstance(dtype, np.dtype) and dtype.kind in "biufO") or isinstance(dtype, (pd.StringDtype,
                                                                                          pd.CategoricalDtype))


_EXPLAINERS = {"single": _single, "flexible": _flexible, "cluster": _cluster, "tree": _tree}
