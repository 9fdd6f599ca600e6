"""The decision threshold: the confusion matrix and the usual metrics at each of a grid of thresholds, from one
scoring of the test rows (:func:`threshold_sweep`); :meth:`~explain_core.setup.Setup.with_threshold` moves the
session's model to one of them.

A row is labelled as the setup's model would label it with that threshold (:meth:`Setup.with_threshold`): positive
at score ≥ t (for a classifier at the model's current threshold: its own rule, ``ModelAdapter.labels_of``); a
regression's true class is then the target's side of the same t (at or above / below).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..results import Explanation
from ..setup import Setup

GRID_POINTS = 41  # thresholds at the 0, 2.5, …, 100 % quantiles of the test rows' scores (and the current one)
METRICS = ("accuracy", "precision", "recall (TPR)", "FPR", "F1", "selection rate")


@dataclass(frozen=True, eq=False)
class ThresholdSweep(Explanation):
    """Counts of the test rows at each threshold (``thresholds`` ascending; ``current``: the setup's), and the
    metrics read off them (:meth:`table`): accuracy, precision, recall (TPR), FPR, F1 and selection rate (share
    predicted positive); a ratio whose denominator is 0 is NaN."""

    thresholds: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    tn: np.ndarray
    current: float
    class_names: tuple[str, str]
    score_label: str
    task: str

    method = "Decision threshold sweep"
    meta_parameters = ("current", "task")

    @property
    def rows(self) -> int:
        return int(self.tp[0] + self.fp[0] + self.fn[0] + self.tn[0])

    def table(self) -> pd.DataFrame:
        """One line per threshold: the four counts and the metrics."""
        tp, fp, fn, tn = (np.asarray(c, dtype=float) for c in (self.tp, self.fp, self.fn, self.tn))
        with np.errstate(divide="ignore", invalid="ignore"):
            metrics = {"accuracy": (tp + tn) / (tp + fp + fn + tn), "precision": tp / (tp + fp),
                       "recall (TPR)": tp / (tp + fn), "FPR": fp / (fp + tn), "F1": 2 * tp / (2 * tp + fp + fn),
                       "selection rate": (tp + fp) / (tp + fp + fn + tn)}
        table = pd.DataFrame({"threshold": self.thresholds, "TP": self.tp, "FP": self.fp, "FN": self.fn,
                              "TN": self.tn, **{k: np.where(np.isfinite(v), v, np.nan) for k, v in metrics.items()}})
        return table.set_index("threshold")

    def index_of(self, threshold: float) -> int:
        """The grid line nearest to ``threshold``."""
        return int(np.argmin(np.abs(np.asarray(self.thresholds) - float(threshold))))

    def at(self, threshold: float) -> pd.Series:
        """The line of :meth:`table` nearest to ``threshold``."""
        return self.table().iloc[self.index_of(threshold)]

    def confusion(self, threshold: float) -> pd.DataFrame:
        """The 2 × 2 confusion matrix (true × predicted, class names as labels) nearest to ``threshold``."""
        i = self.index_of(threshold)
        names = list(self.class_names)
        return pd.DataFrame([[int(self.tn[i]), int(self.fp[i])], [int(self.fn[i]), int(self.tp[i])]],
                            index=pd.Index(names, name="true"), columns=pd.Index(names, name="predicted"))


def sweep_grid(scores: np.ndarray, current: float, points: int = GRID_POINTS, also=()) -> np.ndarray:
    """The observed scores' quantiles (``points`` of them, 0 to 100 %), ``current`` and the thresholds ``also``,
    ascending and distinct."""
    quantiles = np.quantile(np.asarray(scores, dtype=float), np.linspace(0, 1, points))
    return np.unique(np.concatenate([quantiles, [float(current)], np.asarray(also, dtype=float).ravel()]))


def threshold_sweep(setup: Setup, *, points: int = GRID_POINTS, also=()) -> ThresholdSweep:
    """The confusion matrix of ``setup``'s test rows at each threshold of :func:`sweep_grid` (with ``also``, e.g.
    the analyst's choice), from one scoring of those rows."""
    data, model = setup.dataset, setup.model
    rows = np.asarray(setup.test_rows)
    scores = np.asarray(model.score(data.features.iloc[rows]), dtype=float)
    grid = sweep_grid(scores, model.threshold, points, also)
    regression = data.task != "classification"
    predicted = scores[None, :] >= grid[:, None]
    here = grid == model.threshold
    predicted[here] = model.labels_of(scores).astype(bool)  # the model's own rule at its threshold (ties)
    truth = np.asarray(data.y[rows], dtype=float)
    actual = truth[None, :] >= grid[:, None] if regression else np.broadcast_to(truth.astype(int) == 1, predicted.shape)
    counts = [np.sum(p & a, axis=1) for p, a in ((predicted, actual), (predicted, ~actual), (~predicted, actual),
                                                  (~predicted, ~actual))]
    return ThresholdSweep(grid, *counts, float(model.threshold), setup.class_names, setup.score_label, data.task)
