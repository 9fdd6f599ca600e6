"""Which engine computes SEV: ``method="auto"``, ``"bfs"`` or ``"exact"``.

The exact engines read tree ensembles, additive models and ReLU networks (:mod:`.exact_sev`): their answers are
certified when the solver proves them. The BFS (:mod:`.engine`) works for any model, exactly up to its depth, and is
the fastest where a few layers hold the answer. So ``auto`` runs the BFS alone on narrow data (up to
:data:`AUTO_BFS_GROUPS` groups, as deep as ``max_depth``), and on wider data the BFS's first layers (up to
:data:`AUTO_BFS_VERTICES` vertices per query) with the exact engine for the rows those layers do not explain — the
BFS alone, with a note, where the model is not one the exact engine reads. Every result says which engine answered
(``SEVResult.engine``), whether it is certified, and in ``note`` why the exact engine was not used.
``explanations="first"`` (values only: audits, dataset-wide numbers) stops the BFS at each row's first flipping
vertex and caps the exact engine's list at one; ``"all"`` lists every minimal explanation.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from math import comb

import pandas as pd

from ..errors import IntakeError, Unreadable, check_choice, names_method
from ..vertices import ProgressFn, one_row
from ..intake.data import Dataset
from ..intake.layout import GroupLayout
from ..intake.models import ModelAdapter
from ..reference import Reference
from .engine import (DEFAULT_BUDGET_ROWS, DEFAULT_MAX_DEPTH, EXPLANATIONS, BFSSearch, SEVExplanation, SEVResult,
                     check_held, sev_batch)
from .engine import explain_sev as bfs_explain_sev
from .exact_sev import (DEFAULT_BUDGET, MAX_EXPLANATIONS, ExactEngine, ExactSearch, exact_engine, exact_sev_batch,
                        prepare)

METHODS = ("auto", "bfs", "exact")
"""The SEV engines :func:`explain_sev` and :func:`sev_results` choose from: ``auto``, ``bfs``, ``exact``."""
AUTO_BFS_GROUPS = 12  # up to this many groups the BFS is faster than the exact engines (bench/sev_exact.py)
AUTO_BFS_VERTICES = 10_000  # on wider data, auto's BFS layers per query before the exact engine takes over


@dataclass(frozen=True)
class SEVParameters:
    """What SEV reads: the engine (``auto``, ``bfs``, ``exact``: :mod:`~explain_core.sev.dispatch`), the breadth-first
    search depth and its budget of model rows per search (a row it leaves open is bracketed), and the exact engine's
    budget per search (:data:`~.exact_sev.BUDGET_UNIT`: the same answer on any machine).

    Parameters
    ----------
    max_depth : int
        The BFS's deepest layer.
    sev_method : str
        ``"auto"``, ``"bfs"`` or ``"exact"``.
    sev_budget : float
        The exact engine's work per search: CP-SAT deterministic seconds on tree ensembles, tens of
        branch-and-bound nodes on ReLU networks (:data:`~.exact_sev.BUDGET_UNIT`).
    sev_budget_rows : int
        The BFS's model rows per query; a row it leaves open gets a bracket.
    """

    max_depth: int = DEFAULT_MAX_DEPTH
    sev_method: str = "auto"
    sev_budget: float = DEFAULT_BUDGET
    sev_budget_rows: int = DEFAULT_BUDGET_ROWS


DEFAULT_SEV = SEVParameters()
"""The default engine (``auto``), depth and budgets."""


@dataclass(frozen=True)
class SEVRequest:
    """Which SEV :func:`sev_results` computes and what each result holds, whichever engine answers (the engine and
    its bounds are :class:`SEVParameters`').

    Parameters
    ----------
    kind, restricted, keep_scores
        As for :class:`~.engine.BFSSearch`.
    explanations : str
        ``"all"`` lists every minimal explanation; ``"first"`` the first flip found (the same value, SEV Def. 3,
        with one explanation).
    """

    kind: str = "minus"
    restricted: Sequence[str] = ()
    keep_scores: bool = True
    explanations: str = "all"


DEFAULT_REQUEST = SEVRequest()
"""SEV⁻, nothing held, the vertices kept and every minimal explanation listed."""


def choose_engine(model: ModelAdapter, layout: GroupLayout, method: str = "auto") -> tuple[ExactEngine | None, str]:
    """The exact engine to use (None: the BFS) and, when ``auto`` falls back to the BFS on wide data, why."""
    check_choice(method, METHODS, "SEV method")
    if method == "bfs":
        return None, ""
    try:
        engine = exact_engine(model, layout)
    except Unreadable as exc:
        if method == "exact":
            raise IntakeError(f"The exact SEV engine cannot be used on this model: {exc}. It reads tree ensembles "
                              "(scikit-learn, XGBoost, LightGBM, CatBoost), linear models and ReLU networks "
                              "(scikit-learn MLPs, ONNX Gemm/MatMul + Relu graphs) behind column-wise "
                              "preprocessing; choose the method 'auto' or 'bfs' (the breadth-first search).") from None
        return None, (f"Breadth-first search: the exact engine cannot be used on this model ({exc})."
                      if layout.size > AUTO_BFS_GROUPS else "")
    if method == "auto" and layout.size <= AUTO_BFS_GROUPS:
        return None, ""
    return engine, ""


def first_layers(method: str, movable: int, max_depth: int) -> int:
    """How deep the BFS goes before the exact engine: none for ``exact``; for ``auto`` the layers holding at most
    :data:`AUTO_BFS_VERTICES` vertices in all (at least one, at most ``max_depth``)."""
    if method == "exact":
        return 0
    depth, total = 0, 0
    while depth < min(max_depth, movable) and total + comb(movable, depth + 1) <= AUTO_BFS_VERTICES:
        depth += 1
        total += comb(movable, depth)
    return max(depth, 1)


def _merge(first: list[SEVResult], exact: list[SEVResult]) -> list[SEVResult]:
    """The BFS's results where its layers explained the row, the exact engine's for the others (in order)."""
    rest = iter(exact)
    return [next(rest) if r.status == "beyond_depth" else r for r in first]


def _fallback(method: str, exc: Unreadable) -> str:
    if method == "exact":
        raise IntakeError(f"The exact SEV engine cannot be used on these rows: {exc}; choose the method 'auto' or "
                          "'bfs' (the breadth-first search).") from None
    return f"Breadth-first search: the exact engine's reading of the model did not hold on these rows ({exc})."


def _listed(explanations: str) -> int:
    """The exact engine's cap on listed explanations for ``explanations`` (``all`` or ``first``)."""
    check_choice(explanations, EXPLANATIONS, "SEV explanations")
    return 1 if explanations == "first" else MAX_EXPLANATIONS


def _noted(results: list[SEVResult], note: str) -> list[SEVResult]:
    return [replace(r, note=note) for r in results] if note else results


@names_method("SEV")
def sev_results(model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame, reference: Reference,
                request: SEVRequest = DEFAULT_REQUEST, *, options: SEVParameters = DEFAULT_SEV,
                progress: ProgressFn | None = None) -> list[SEVResult]:
    """SEV of many queries, the one ``request`` names, by the engine ``options.sev_method`` picks
    (:func:`choose_engine`); ``options.max_depth`` and ``options.sev_budget_rows`` (model rows per query) bound the
    BFS only, and a row the BFS leaves open gets a bracket (:mod:`.bracket`); ``options.sev_budget`` (the exact
    engine's work per search, :data:`~.exact_sev.BUDGET_UNIT`) bounds the exact engine only.

    Parameters
    ----------
    model, layout, queries, reference, progress
        As for :func:`~explain_core.sev.engine.sev_batch`.
    request : SEVRequest
        Which SEV, the groups held, whether the vertices are kept, all explanations or the first.
    options : SEVParameters
        The engine, the BFS's depth and its budget of model rows, the exact engine's budget.

    Returns
    -------
    list of SEVResult
        One result per query.

    Raises
    ------
    IntakeError
        When a choice or restricted group is not valid, or ``options.sev_method`` is ``"exact"`` and the model cannot
        be read.
    """
    kind, restricted, keep_scores, method = request.kind, request.restricted, request.keep_scores, options.sev_method
    check_held(layout, kind, restricted)
    cap = _listed(request.explanations)
    engine, note = choose_engine(model, layout, method)
    bfs = BFSSearch(kind=kind, restricted=restricted, keep_scores=keep_scores, explanations=request.explanations)
    full = replace(bfs, max_depth=options.max_depth, budget_rows=options.sev_budget_rows, bracket=True)
    if engine is None:
        return _noted(sev_batch(model, layout, queries, reference, full, progress=progress), note)
    depth = first_layers(method, layout.size - len(restricted), options.max_depth)
    first = sev_batch(model, layout, queries, reference, replace(bfs, max_depth=depth)) if depth else []
    pending = [i for i, r in enumerate(first) if r.status == "beyond_depth"] if depth else list(range(len(queries)))
    if not pending:
        return first
    try:
        search = ExactSearch(kind=kind, restricted=restricted, budget=options.sev_budget, cap=cap,
                             keep_scores=keep_scores, cleared=depth + 1 if depth else 0)
        exact = exact_sev_batch(engine, queries.iloc[pending], reference, search, progress=progress)
    except Unreadable as exc:
        note = _fallback(method, exc)
        return _noted(sev_batch(model, layout, queries, reference, full, progress=progress), note)
    return _merge(first, exact) if depth else exact


@names_method("SEV")
def explain_sev(model: ModelAdapter, dataset: Dataset, query, reference: Reference, *,
                restricted: Sequence[str] = (), explanations: str = "all",
                options: SEVParameters = DEFAULT_SEV) -> SEVExplanation:
    """SEV⁺, SEV⁻ and SEV® (when ``restricted`` is given) of one query row of ``dataset``, by the engine
    ``options.sev_method`` picks (:func:`choose_engine`) within its depth and budgets; ``explanations``: see
    :func:`sev_results`.

    Parameters
    ----------
    model : ModelAdapter
        The model.
    dataset : Dataset
        Its data.
    query : pandas.DataFrame or pandas.Series
        The row.
    reference, restricted, explanations
        As for :func:`sev_results`.
    options : SEVParameters
        The engine, the BFS's depth and its budget of model rows, the exact engine's budget.

    Returns
    -------
    SEVExplanation
        SEV⁺, SEV⁻ and SEV®.

    Raises
    ------
    IntakeError
        When the method or a restricted group is not valid, or the method is ``"exact"`` and the model cannot be
        read.
    """
    method, max_depth, budget = options.sev_method, options.max_depth, options.sev_budget
    layout, row, cap = dataset.layout, one_row(query), _listed(explanations)
    check_held(layout, "minus", restricted)
    engine, note = choose_engine(model, layout, method)
    bfs = BFSSearch(restricted=restricted, explanations=explanations)
    full = replace(bfs, max_depth=max_depth, budget_rows=options.sev_budget_rows, bracket=True)
    if engine is None:
        return _noted_explanation(bfs_explain_sev(model, dataset, row, reference, full), note)
    depth = first_layers(method, layout.size, max_depth)
    ex = bfs_explain_sev(model, dataset, row, reference, replace(bfs, max_depth=depth)) if depth else None
    kinds = [("minus", ()), ("plus", ())] + ([("restricted", tuple(restricted))] if restricted else [])
    pending = [(name, held) for name, held in kinds if ex is None or ex.result(name).status == "beyond_depth"]
    if not pending:
        return ex
    try:
        prepared = prepare(engine, row, reference)
    except Unreadable as exc:
        note = _fallback(method, exc)
        return _noted_explanation(bfs_explain_sev(model, dataset, row, reference, full), note)
    found = {name: exact_sev_batch(engine, row, reference,
                                   ExactSearch(kind="plus" if name == "plus" else "minus", restricted=held,
                                               budget=budget, cap=cap, cleared=depth + 1 if depth else 0),
                                   prepared=prepared)[0]
             for name, held in pending}
    if ex is None:
        return SEVExplanation(row.iloc[0].rename(0), reference, layout, float(prepared.query_scores[0]),
                              found["minus"].explained_class, found["plus"], found["minus"], found.get("restricted"))
    return replace(ex, **found)


def _noted_explanation(ex: SEVExplanation, note: str) -> SEVExplanation:
    if not note:
        return ex
    return replace(ex, plus=replace(ex.plus, note=note), minus=replace(ex.minus, note=note),
                   restricted=replace(ex.restricted, note=note) if ex.restricted is not None else None)
