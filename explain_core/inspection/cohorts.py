"""Cohorts compared side by side on the **test rows**: size, accuracy, AUC, the SEV⁻/SEV⁺ distribution, prevalence,
mean |SHAP| and the unexplainable share (the SEV and SHAP parts on a seeded sample of at most ``budget`` rows per
cohort). The cohorts themselves, their filters and what "wrong" means are :mod:`explain_core.inspection.filters`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from ..analysis import dataset_sev
from ..errors import IntakeError
from ..vertices import ProgressFn
from ..results import Explanation, ValueEquality
from ..setup import SEVParameters, Setup
from ..sev.summaries import prevalence_table
from .filters import Cohort, Outcome, error_words, model_outcome

DEFAULT_BUDGET = 100


@dataclass(frozen=True, eq=False)
class CohortStats(ValueEquality):
    """One cohort on the test rows; the SEV and SHAP parts over ``sampled`` (at most the budget, seeded)."""

    name: str
    text: str
    size: int
    error_rate: float | None
    accuracy: float | None
    auc: float | None
    sampled: tuple[int, ...]
    sev_minus: tuple[int | None, ...]
    sev_plus: tuple[int | None, ...]
    prevalence: dict[str, float]
    shap: dict[str, float]
    unexplainable: float | None
    sev_label: str = "SEV⁻"


@dataclass(frozen=True, eq=False)
class CohortComparison(Explanation):
    """Cohorts side by side (:func:`compare_cohorts`).

    Parameters
    ----------
    cohorts : tuple of Cohort
        The cohorts.
    stats : tuple of CohortStats
        Each cohort's numbers.
    budget, seed : int
        Sampled rows per cohort, and the sample's seed.
    error : str
        What counts as an error, in words.
    """

    cohorts: tuple[Cohort, ...]
    stats: tuple[CohortStats, ...]
    budget: int
    seed: int
    error: str = ""

    method = "cohort comparison"
    meta_parameters = ("budget", "seed")

    def table(self) -> pd.DataFrame:
        """One line per cohort: size, error rate, accuracy, AUC and the SEV summaries of its sample.

        Returns
        -------
        pandas.DataFrame
            The cohorts.
        """
        rows = []
        for s in self.stats:
            minus = [v for v in s.sev_minus if v is not None]
            plus = [v for v in s.sev_plus if v is not None]
            rows.append({"cohort": s.name, "filters": s.text, "test rows": s.size, "error rate": s.error_rate,
                         "accuracy": s.accuracy, "AUC": s.auc, "rows sampled": len(s.sampled),
                         f"mean {s.sev_label}": np.mean(minus) if minus else None,
                         "mean SEV⁺": np.mean(plus) if plus else None, "unexplainable share": s.unexplainable})
        return pd.DataFrame(rows)

    def feature_table(self, part: str = "shap") -> pd.DataFrame:
        """Feature × cohort: mean |SHAP| (``part="shap"``) or SEV prevalence (``"prevalence"``).

        Parameters
        ----------
        part : str
            ``"shap"`` or ``"prevalence"``.

        Returns
        -------
        pandas.DataFrame
            Features × cohorts.
        """
        return pd.DataFrame({s.name: pd.Series(getattr(s, part), dtype=float) for s in self.stats})


def compare_cohorts(setup: Setup, cohorts: Sequence[Cohort], params: SEVParameters, *,
                    budget: int = DEFAULT_BUDGET, seed: int = 0, shap_background: int | None = 100,
                    progress: ProgressFn | None = None) -> CohortComparison:
    """Each cohort on the test rows (size, error rate, accuracy, AUC) and on a seeded sample of at most ``budget`` of
    its rows: SEV⁻ (SEV® with the setup's restricted features) with every minimal explanation (prevalence,
    unexplainable share), SEV⁺'s value (first flip) and mean |SHAP| (the model page's global SHAP, on the sample, with
    ``shap_background`` background rows; None: no SHAP, which is minutes for models SHAP's tree explainer cannot
    read, as its permutation explainer scores each row thousands of times).

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    cohorts : sequence of Cohort
        The cohorts.
    params : SEVParameters
        SEV's parameters.
    budget : int
        Sampled rows per cohort, at least 1.
    seed : int
        The sample's seed.
    shap_background : int, optional
        SHAP's background rows (None: no SHAP).
    progress : callable, optional
        ``progress(fraction, message)``.

    Returns
    -------
    CohortComparison
        The cohorts side by side.

    Raises
    ------
    IntakeError
        When ``budget`` is below 1 or a filter names an unknown feature.
    """
    if budget < 1:
        raise IntakeError(f"The cohort budget must be at least one row, not {budget}.")
    cohorts = tuple(c.check(setup.dataset) for c in cohorts)
    stats = []
    for i, cohort in enumerate(cohorts):
        stats.append(cohort_stats(setup, cohort, params, budget=budget, seed=seed, shap_background=shap_background))
        if progress is not None:
            progress((i + 1) / len(cohorts), f"Cohorts: {i + 1} of {len(cohorts)} compared")
    return CohortComparison(cohorts, tuple(stats), int(budget), int(seed), error_words(setup))


def cohort_stats(setup: Setup, cohort: Cohort, params: SEVParameters, *, budget: int, seed: int,
                 shap_background: int | None) -> CohortStats:
    from .global_shap import global_shap  # the model page's SHAP sample

    rows = cohort.rows(setup)
    outcome = model_outcome(setup, rows)
    sample = np.sort(np.random.default_rng(seed).choice(rows, size=min(budget, len(rows)), replace=False))
    minus = plus = prevalence = shap = unexplainable = None
    if len(sample):
        minus = dataset_sev(setup, sample, params, kind="minus")
        plus = dataset_sev(setup, sample, params, kind="plus", explanations="first")
        table = prevalence_table(minus.results, setup.dataset.group_names)
        prevalence = dict(zip(table["group"], table["share"].astype(float)))
        if shap_background is not None:
            shap = global_shap(replace(setup, test_rows=sample), rows=len(sample), seed=seed,
                               background=shap_background).importance().to_dict()
        unexplainable = float(np.mean([not r.explainable for r in minus.results]))
    classification = setup.dataset.task == "classification"
    return CohortStats(cohort.name, cohort.text(setup), len(rows),
                       float(outcome.wrong.mean()) if len(rows) else None,
                       float(1 - outcome.wrong.mean()) if len(rows) and classification else None,
                       _auc(outcome) if classification else None, tuple(int(r) for r in sample),
                       tuple(minus.values) if minus else (), tuple(plus.values) if plus else (),
                       prevalence or {}, {str(k): float(v) for k, v in (shap or {}).items()}, unexplainable,
                       "SEV®" if setup.restricted else "SEV⁻")


def _auc(outcome: Outcome) -> float | None:
    """AUC of the scores against the true class; None when the rows hold one class only."""
    if len(np.unique(outcome.true)) < 2:
        return None
    return float(roc_auc_score(outcome.true, outcome.score))
