"""Which engine computes SEV: ``method="auto"`` (the exact engines where the model allows them and the data is
wider than :data:`AUTO_BFS_GROUPS` groups, else the breadth-first search), ``"bfs"`` or ``"exact"``.

The exact engines read tree ensembles and additive models (:mod:`.exact_sev`): their answers are certified at any
width. The BFS (:mod:`.engine`) works for any model, exactly up to its depth. Every result says which engine
answered (``SEVResult.engine``), whether it is certified, and in ``note`` why an exact engine was not used.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from ..errors import IntakeError, check_choice, names_method
from ..intake.data import Dataset, GroupLayout
from ..intake.models import ModelAdapter
from ..reference import Reference
from .cube import ProgressFn, one_row
from .engine import DEFAULT_MAX_DEPTH, SEVExplanation, SEVResult, sev_batch
from .engine import explain_sev as bfs_explain_sev
from .exact_sev import DEFAULT_BUDGET, ExactEngine, exact_engine, exact_sev_batch, prepare
from .trees import Unreadable

METHODS = ("auto", "bfs", "exact")
AUTO_BFS_GROUPS = 12  # up to this many groups the BFS is faster than the exact engines (bench/sev_exact.py)


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
                              "(scikit-learn, XGBoost, LightGBM, CatBoost) and linear models behind column-wise "
                              "preprocessing; choose the method 'auto' or 'bfs' (the breadth-first search).") from None
        return None, (f"Breadth-first search: the exact engine cannot be used on this model ({exc})."
                      if layout.size > AUTO_BFS_GROUPS else "")
    if method == "auto" and layout.size <= AUTO_BFS_GROUPS:
        return None, ""
    return engine, ""


def _fallback(method: str, exc: Unreadable) -> str:
    if method == "exact":
        raise IntakeError(f"The exact SEV engine cannot be used on these rows: {exc}; choose the method 'auto' or "
                          "'bfs' (the breadth-first search).") from None
    return f"Breadth-first search: the exact engine's reading of the model did not hold on these rows ({exc})."


def _noted(results: list[SEVResult], note: str) -> list[SEVResult]:
    return [replace(r, note=note) for r in results] if note else results


@names_method("SEV")
def sev_results(model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame, reference: Reference, *,
                kind: str = "minus", restricted: Sequence[str] = (), max_depth: int = DEFAULT_MAX_DEPTH,
                method: str = "auto", budget: float = DEFAULT_BUDGET, keep_scores: bool = True,
                progress: ProgressFn | None = None) -> list[SEVResult]:
    """SEV of many queries by the chosen engine (:func:`choose_engine`); ``max_depth`` bounds the BFS only,
    ``budget`` (CP-SAT deterministic seconds per search) the exact engine only."""
    if restricted and kind == "plus":
        raise IntakeError("Restricted features apply to SEV⁻ (SEV®), not to SEV⁺.")
    engine, note = choose_engine(model, layout, method)
    if engine is not None:
        try:
            return exact_sev_batch(engine, queries, reference, kind=kind, restricted=restricted, budget=budget,
                                   keep_scores=keep_scores, progress=progress)
        except Unreadable as exc:
            note = _fallback(method, exc)
    return _noted(sev_batch(model, layout, queries, reference, kind=kind, restricted=restricted, max_depth=max_depth,
                            keep_scores=keep_scores, progress=progress), note)


@names_method("SEV")
def explain_sev(model: ModelAdapter, dataset: Dataset, query, reference: Reference, *,
                restricted: Sequence[str] = (), max_depth: int = DEFAULT_MAX_DEPTH, method: str = "auto",
                budget: float = DEFAULT_BUDGET) -> SEVExplanation:
    """SEV⁺, SEV⁻ and SEV® (when ``restricted`` is given) of one query row of ``dataset``, by the engine ``method``
    picks (:func:`choose_engine`)."""
    layout, row = dataset.layout, one_row(query)
    engine, note = choose_engine(model, layout, method)
    if engine is not None:
        try:
            prepared = prepare(engine, row, reference)
        except Unreadable as exc:
            note = _fallback(method, exc)
        else:
            def search(kind: str, held: Sequence[str] = ()) -> SEVResult:
                return exact_sev_batch(engine, row, reference, kind=kind, restricted=held, budget=budget,
                                       prepared=prepared)[0]

            minus, plus = search("minus"), search("plus")
            return SEVExplanation(row.iloc[0].rename(0), reference, layout, float(prepared.query_scores[0]),
                                  minus.explained_class, plus, minus, search("minus", restricted) if restricted else None)
    ex = bfs_explain_sev(model, dataset, row, reference, restricted=restricted, max_depth=max_depth)
    if not note:
        return ex
    return replace(ex, plus=replace(ex.plus, note=note), minus=replace(ex.minus, note=note),
                   restricted=replace(ex.restricted, note=note) if ex.restricted is not None else None)
