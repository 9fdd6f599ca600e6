"""The kinds of reference side by side over many rows (the paper's tables, "Improving Decision Sparsity"): per
kind, mean SEV, median ℓ∞, mean credibility, share explained and milliseconds per row, each kind named as its
results name it (SEV^© with the rule that answered, :func:`~.outcome.kind_label`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..results import Explanation
from .fits import ReferenceFits
from .kinds import available_kinds, explain_kind
from .outcome import kind_label, summary_row
from .prototypes import DEFAULT_ASSIGNMENT


@dataclass(frozen=True, eq=False)
class KindsTable(Explanation):
    """The kinds side by side over many rows (the paper's tables): per kind, mean SEV, median ℓ∞, mean credibility,
    share explained and milliseconds per row; the one-off fitting seconds apart.

    Parameters
    ----------
    rows : numpy.ndarray
        The rows compared.
    table : pandas.DataFrame
        One line per kind.
    fit_seconds : dict
        The one-off fitting seconds per part.
    credible : float, optional
        The credibility threshold.
    results : dict, optional
        Per kind, each row's result.
    assignment : str
        The typical-case assignment.
    """

    rows: np.ndarray
    table: pd.DataFrame
    fit_seconds: dict
    credible: float | None = None
    results: dict | None = field(default=None, repr=False, compare=False)
    assignment: str = DEFAULT_ASSIGNMENT

    method = "SEV against each kind of reference (dataset-wide)"
    meta_parameters = ("credible", "assignment")


def compare_kinds(setup, rows: Sequence[int], fitted: ReferenceFits, *, kinds: Sequence[str] | None = None,
                  max_depth: int = 6, credible: float | None = None, progress=None) -> KindsTable:
    """Every kind the model allows (:func:`available_kinds`; and, with ``credible``, each credible search too) on
    the same rows; SEV^©'s typical cases assigned by the fits' ``assignment`` rule.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    rows : sequence of int
        The rows compared.
    fitted : ReferenceFits
        The fitted parts.
    kinds : sequence of str, optional
        The kinds (default: every one available).
    max_depth : int
        The search depth.
    credible : float, optional
        The credibility threshold.
    progress : callable, optional
        ``progress(fraction, message)``.

    Returns
    -------
    KindsTable
        The kinds side by side.

    Raises
    ------
    IntakeError
        When a kind is unknown or unavailable for the model.
    """
    rows = np.asarray(rows, dtype=int)
    queries = setup.dataset.features.iloc[rows]
    kinds = available_kinds(setup) if kinds is None else kinds
    gated = [kind for kind in kinds if kind != "tree"] if credible is not None else []
    runs = [(kind, None) for kind in kinds] + [(kind, credible) for kind in gated]
    lines, results = [], {}
    for i, (kind, gate) in enumerate(runs):
        found = explain_kind(setup, queries, kind, fitted, max_depth=max_depth, credible=gate)
        label = _label(kind, gate, found)
        results[label] = tuple(found)
        lines.append({"kind": label, **summary_row(found)})
        if progress is not None:
            progress((i + 1) / len(runs), f"{label}: {len(rows)} rows done")
    table = pd.DataFrame(lines).set_index("kind") if lines else pd.DataFrame()
    return KindsTable(rows, table, fitted.seconds, credible, results,
                      fitted.options.get("assignment", DEFAULT_ASSIGNMENT))


def _label(kind: str, credible: float | None, found: Sequence) -> str:
    """The kind's label as its results name it (:attr:`~.outcome.ReferenceSEV.method`: SEV^© with the rule that
    answered); rows whose SEV^© chose among different numbers of typical cases: the largest."""
    methods = {r.method for r in found}
    if len(methods) == 1:
        return methods.pop()
    if kind == "cluster" and found:
        return kind_label(kind, credible, found[0].assignment, max(r.cases for r in found))
    return kind_label(kind, credible)
