"""Fairness on the test rows, with fairlearn's :class:`~fairlearn.metrics.MetricFrame`: per group of each protected
feature, and of each cohort against the rest of the test rows, the count, selection rate, TPR, FPR and accuracy,
with fairlearn's demographic-parity and equalised-odds differences (between groups); plus how often a row's
unrestricted SEV⁻ explanation uses a protected feature.

A numeric protected feature with more than :data:`MAX_LEVELS` values is cut into :data:`BINS` quantile bins of
the test rows (fewer where quantiles tie); others are read by value. A regression is read at or above / below the
model's threshold: true class = the target ≥ it, predicted class = the prediction ≥ it. A group without positive
(negative) rows has TPR (FPR) 0, fairlearn's convention.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import pandas as pd
from fairlearn.metrics import MetricFrame, false_positive_rate, selection_rate, true_positive_rate
from sklearn.metrics import accuracy_score

from ..analysis import dataset_sev
from ..errors import IntakeError
from ..vertices import ProgressFn
from ..results import Explanation, ValueEquality
from ..setup import SEVParameters, Setup
from ..vocabulary import format_number
from .filters import Cohort, level_strings, model_outcome


def rows_counted(y_true, y_pred, sample_weight) -> float:
    """The rows a group holds: the sum of the weights (each weight counts the rows of one (true, predicted) pair)."""
    return float(np.sum(sample_weight))


BINS = 4
MAX_LEVELS = 10  # a numeric feature with more distinct values than this is binned
SEV_BUDGET = 200
METRICS = {"count": rows_counted, "selection rate": selection_rate, "TPR": true_positive_rate,
           "FPR": false_positive_rate, "accuracy": accuracy_score}
REST = "rest of the test rows"


@dataclass(frozen=True, eq=False)
class GroupSplit(ValueEquality):
    """The metrics of each group of one split of the test rows (a protected feature, or a cohort against the rest)."""

    split: str
    kind: str  # "protected" or "cohort"
    binning: str  # how a numeric feature was cut, in words ("" when read by value)
    groups: pd.DataFrame  # group, count, selection rate, TPR, FPR, accuracy
    parity_difference: float
    odds_difference: float


@dataclass(frozen=True, eq=False)
class FairnessReport(Explanation):
    """Group metrics of every split (:func:`fairness_report`) and the protected features' share of the SEV
    explanations over a seeded sample of ``sev_rows`` test rows (``sev_any``: some minimal explanation uses a
    protected feature; ``sev_all``: every one does; None without protected features or explained rows).

    Parameters
    ----------
    splits : tuple of GroupSplit
        Each split's group metrics.
    protected : tuple of str
        The protected features.
    rows : int
        Test rows.
    outcome : str
        The positive outcome, in words.
    sev_rows : int
        Rows of the SEV share.
    sev_any, sev_all : float, optional
        The shares.
    seed : int
        The sample's seed.
    """

    splits: tuple[GroupSplit, ...]
    protected: tuple[str, ...]
    rows: int
    outcome: str
    sev_rows: int
    sev_any: float | None
    sev_all: float | None
    seed: int = 0

    method = "fairness (fairlearn MetricFrame)"
    meta_parameters = ("protected", "sev_rows", "seed")

    def table(self) -> pd.DataFrame:
        """Every split's groups, one line each.

        Returns
        -------
        pandas.DataFrame
            ``split``, ``group`` and the metrics.
        """
        if not self.splits:
            return pd.DataFrame(columns=["split", "group", *METRICS])
        return pd.concat([s.groups.assign(split=s.split)[["split", "group", *METRICS]] for s in self.splits],
                         ignore_index=True)

    def differences(self) -> pd.DataFrame:
        """Per split: fairlearn's demographic-parity and equalised-odds differences.

        Returns
        -------
        pandas.DataFrame
            One line per split.
        """
        return pd.DataFrame({"split": [s.split for s in self.splits], "kind": [s.kind for s in self.splits],
                             "demographic parity difference": [s.parity_difference for s in self.splits],
                             "equalised odds difference": [s.odds_difference for s in self.splits],
                             "binning": [s.binning for s in self.splits]})


def group_split(y_true, y_pred, groups, split: str, kind: str, binning: str = "") -> GroupSplit:
    """MetricFrame of :data:`METRICS` by ``groups``, with the two differences read off the same frame
    (``MetricFrame.difference`` between groups: what fairlearn's ``demographic_parity_difference`` and
    ``equalized_odds_difference`` compute). Every metric depends only on how many rows each (group, true class,
    predicted class) holds, so the frame is given those combinations once each, weighted by their rows: the same
    numbers as row by row, without fairlearn's per-row conversion (seconds on Adult's 6,513 test rows)."""
    rows = pd.DataFrame({"group": np.asarray(groups, dtype=str), "true": np.asarray(y_true, dtype=int),
                         "predicted": np.asarray(y_pred, dtype=int)}).value_counts(sort=False).reset_index(name="n")
    weight = rows["n"].to_numpy()
    frame = MetricFrame(metrics=METRICS, y_true=rows["true"].to_numpy(), y_pred=rows["predicted"].to_numpy(),
                        sensitive_features=rows["group"], sample_params={m: {"sample_weight": weight} for m in METRICS})
    gaps = frame.difference(method="between_groups")
    return GroupSplit(split, kind, binning, frame.by_group.reset_index().astype({"count": int}),
                      float(gaps["selection rate"]), float(max(gaps["TPR"], gaps["FPR"])))


def protected_groups(setup: Setup, feature: str, rows: np.ndarray) -> tuple[np.ndarray, str]:
    """Each row's group of a protected feature and how it was cut (module docstring)."""
    group = setup.dataset.group(feature)
    raw = group.values_in(setup.dataset.features.iloc[rows])
    x = pd.to_numeric(pd.Series(raw), errors="coerce")
    if group.kind != "numeric" or x.nunique() <= MAX_LEVELS:
        return level_strings(raw), ""
    bins = pd.qcut(x, BINS, duplicates="drop")
    names = [f"{format_number(x.min() if i == 0 else b.left)}–{format_number(b.right)}"
             for i, b in enumerate(bins.cat.categories)]
    labels = np.array(["missing" if code < 0 else names[code] for code in bins.cat.codes], dtype=object)
    return labels, f"{len(names)} quantile bins of the test rows (each holds its upper end, not its lower)"


def fairness_report(setup: Setup, params: SEVParameters, protected: Sequence[str] | None = None,
                    cohorts: Sequence[Cohort] = (), *, sev_budget: int = SEV_BUDGET, seed: int = 0,
                    progress: ProgressFn | None = None) -> FairnessReport:
    """Group metrics on the test rows across each of ``protected`` (default: the setup's restricted features, else the
    data card's suggestion) and each cohort against the rest; the SEV share over ``sev_budget`` seeded test rows.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    params : SEVParameters
        SEV's parameters.
    protected : sequence of str, optional
        The protected features.
    cohorts : sequence of Cohort
        Cohorts, each against the rest.
    sev_budget : int
        Rows of the SEV share, at least 1.
    seed : int
        The sample's seed.
    progress : callable, optional
        ``progress(fraction, message)``.

    Returns
    -------
    FairnessReport
        The group metrics and the SEV share.

    Raises
    ------
    IntakeError
        When a protected feature is unknown or ``sev_budget`` is below 1.
    """
    protected = tuple(protected if protected is not None else setup.restricted or setup.dataset.restricted_suggestion)
    for name in protected:
        setup.dataset.group(name)  # an unknown name is an IntakeError naming the features
    if sev_budget < 1:
        raise IntakeError(f"The fairness SEV budget must be at least one row, not {sev_budget}.")
    rows = np.asarray(setup.test_rows, dtype=int)
    outcome = model_outcome(setup, rows)
    splits = []
    for name in protected:
        groups, binning = protected_groups(setup, name, rows)
        splits.append(group_split(outcome.true, outcome.predicted, groups, name, "protected", binning))
    for cohort in cohorts:
        inside = cohort.check(setup.dataset).mask(setup, rows)
        splits.append(group_split(outcome.true, outcome.predicted, np.where(inside, cohort.name, REST), cohort.name,
                                  "cohort"))
    sample = np.sort(np.random.default_rng(seed).choice(rows, size=min(sev_budget, len(rows)), replace=False))
    any_share, all_share = protected_sev_shares(setup, sample, params, protected, progress)
    words = "classes" if setup.dataset.task == "classification" else "at or above / below the model's threshold"
    return FairnessReport(tuple(splits), protected, len(rows), words, len(sample), any_share, all_share, int(seed))


def protected_sev_shares(setup: Setup, rows: np.ndarray, params: SEVParameters, protected: Sequence[str],
                         progress: ProgressFn | None = None) -> tuple[float | None, float | None]:
    """Of the rows explained by unrestricted SEV⁻: the share with some / every minimal explanation using a
    protected feature (None, None without protected features or explained rows)."""
    if not protected or not len(rows):
        return None, None
    results = [r for r in dataset_sev(replace(setup, restricted=()), rows, params, kind="minus",
                                      progress=progress).results if r.explainable]
    if not results:
        return None, None
    held = set(protected)
    uses = [[bool(held & set(e)) for e in r.explanations] for r in results]
    return float(np.mean([any(u) for u in uses])), float(np.mean([all(u) for u in uses]))
