"""What every model carries once fitted or loaded, wherever it came from (a demo, a training run here, an uploaded
file): its key (:func:`model_key`, the one scheme the results' caches are keyed by), a :class:`TrainedModel` with its
split and metrics, and the metrics themselves (:func:`evaluate`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score, roc_auc_score

from .data import Dataset
from .models import ModelAdapter


def model_key(origin: str, *parts) -> str:
    """The one model-key scheme: ``demo:<data>:<kind>:<seed>``, ``trained:<dataset key>:<kind>:<seed>``,
    ``file:<content digest>:<wrapping choices>:<seed>``."""
    return ":".join([origin, *(str(p) for p in parts)])


@dataclass
class TrainedModel:
    """A fitted model with the split it was trained (or is evaluated) on, its train/test metrics and its origin.

    ``key`` identifies the model's content (:func:`model_key`); ``source`` says in words where it came from;
    ``dataset_key`` is the :attr:`~explain_core.intake.data.Dataset.key` of the data it was fitted or checked on.

    Parameters
    ----------
    model : ModelAdapter
        The model, wrapped for the dataset.
    train_rows, test_rows : numpy.ndarray
        Row positions of the training and test rows.
    metrics : dict
        Train and test metrics (accuracy and AUC, or R² and RMSE for a regression) and where the test rows come
        from (``test_rows``).
    seed : int
        The seed of the split (and of the training).
    key, source, dataset_key : str
        The model's content key, its origin in words, and its dataset's key.
    """

    model: ModelAdapter
    train_rows: np.ndarray
    test_rows: np.ndarray
    metrics: dict = field(default_factory=dict)
    seed: int = 0
    key: str = ""
    source: str = ""
    dataset_key: str = ""


def evaluate(model: ModelAdapter, dataset: Dataset, train_rows, test_rows, test_rows_are: str | None = None) -> dict:
    """Accuracy and AUC (classification) or R² and RMSE (regression) on train and test rows, and where the test rows
    come from (``test_rows``, a key of :data:`~explain_core.intake.holdout.TEST_ROWS`; default: the analyst's
    hold-out when the data has one, else the seeded split, as for a model trained here)."""
    out: dict = {"test_rows": test_rows_are or ("holdout" if dataset.holdout is not None else "split")}
    for part, rows in (("train", train_rows), ("test", test_rows)):
        scores = model.score(dataset.features.iloc[rows])
        y = dataset.y[rows]
        if dataset.task == "classification":
            out[f"{part}_accuracy"] = float(accuracy_score(y, model.labels_of(scores)))
            out[f"{part}_auc"] = float(roc_auc_score(y, scores)) if len(set(y)) == 2 else float("nan")
        else:
            out[f"{part}_r2"] = float(r2_score(y, scores))
            out[f"{part}_rmse"] = float(np.sqrt(mean_squared_error(y, scores)))
    return out
