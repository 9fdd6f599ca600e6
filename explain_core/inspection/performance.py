"""The standard numbers of a model on its test rows — ROC and precision-recall curves, the confusion matrix at the
model's threshold, calibration, class balance — as one small result object; the figures are
:mod:`explain_core.views.model`'s.

Numbers are scikit-learn's own (``roc_curve``, ``precision_recall_curve``, ``confusion_matrix``,
``calibration_curve``), computed once per setup; a regression is read against its threshold (at or above /
below), with predicted against true values instead of calibration.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.calibration import calibration_curve
from sklearn.metrics import (average_precision_score, confusion_matrix, precision_recall_curve, roc_auc_score,
                             roc_curve)

from ..setup import Setup
CALIBRATION_BINS = 10


@dataclass(frozen=True)
class ModelPerformance:
    """A model on its test rows: true labels (0/1; a regression's side of the threshold), scores, and what the
    views draw. ``calibration`` is None unless the score is a probability; ``values`` (true, predicted) only
    for a regression."""

    y: np.ndarray
    scores: np.ndarray
    threshold: float
    class_names: tuple[str, str]
    roc: pd.DataFrame | None
    auc: float | None
    pr: pd.DataFrame | None
    average_precision: float | None
    confusion: pd.DataFrame
    calibration: pd.DataFrame | None
    balance: pd.DataFrame
    values: pd.DataFrame | None = None


def model_performance(setup: Setup) -> ModelPerformance:
    """Every standard view of ``setup``'s model on its test rows (scikit-learn's functions)."""
    data, model = setup.dataset, setup.model
    rows = np.asarray(setup.test_rows)
    scores = np.asarray(model.score(data.features.iloc[rows]), dtype=float)
    truth = np.asarray(data.y[rows])
    regression = data.task != "classification"
    y = model.labels_of(truth) if regression else truth.astype(int)
    names = setup.class_names
    both = len(np.unique(y)) == 2
    roc = pr = auc = ap = None
    if both:
        fpr, tpr, cut = roc_curve(y, scores)
        roc, auc = pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": cut}), float(roc_auc_score(y, scores))
        precision, recall, cut = precision_recall_curve(y, scores)
        pr = pd.DataFrame({"recall": recall, "precision": precision, "threshold": np.append(cut, np.nan)})
        ap = float(average_precision_score(y, scores))
    matrix = confusion_matrix(y, model.labels_of(scores), labels=[0, 1])
    confusion = pd.DataFrame(matrix, index=pd.Index(names, name="true"), columns=pd.Index(names, name="predicted"))
    calibration = None
    if model.score_kind == "proba" and both:
        observed, predicted = calibration_curve(y, scores, n_bins=CALIBRATION_BINS, strategy="uniform")
        calibration = pd.DataFrame({"predicted": predicted, "observed": observed})
    balance = pd.DataFrame({part: np.bincount(labels, minlength=2) for part, labels in
                            (("train", _labels(setup, setup.train_rows)), ("test", y))}, index=list(names))
    values = pd.DataFrame({"true": truth, "predicted": scores}) if regression else None
    return ModelPerformance(y, scores, float(model.threshold), names, roc, auc, pr, ap, confusion, calibration,
                            balance, values)


def _labels(setup: Setup, rows) -> np.ndarray:
    truth = np.asarray(setup.dataset.y[np.asarray(rows)])
    return setup.model.labels_of(truth) if setup.dataset.task != "classification" else truth.astype(int)
