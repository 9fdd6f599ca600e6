"""Models trained here: the demo estimators (SEV paper App. B settings), training on a seeded split with its
metrics, and the demo models cached on disk (skops, loaded back with exactly the types they were written with).

Every fitted model is a :class:`~explain_core.intake.trained.TrainedModel`: the adapter, its split, its metrics,
and where it came from — ``key`` (one scheme for every origin, :func:`~explain_core.intake.trained.model_key`: what
the results' caches are keyed by) and ``source`` (the same in words).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import sklearn
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
from sklearn.linear_model import Lasso, LogisticRegression, Ridge
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from ..cache import cache_dir, held, write_atomic
from ..errors import UntrustedModelError, check_choice
from ..limits import limits, over
from .boosters import require
from .data import Dataset
from .demos import load_demo
from .encoding import make_encoder
from .models import ModelAdapter, wrap_model
from .skops_policy import ALLOWED_TYPES, skops_io
from .trained import TrainedModel, evaluate, model_key

DEMO_KINDS = {"l1_lr": "L1 logistic regression", "l2_lr": "L2 logistic regression",
              "gbdt": "Gradient boosting", "mlp": "MLP (128-128)", "xgb": "XGBoost", "lgbm": "LightGBM"}
# what the linear kinds are for a regression (make_estimator): a lasso and a ridge, not a logistic regression
REGRESSION_KINDS = {"l1_lr": "Lasso (L1 linear regression)", "l2_lr": "Ridge (L2 linear regression)"}
# scikit-learn 1.8 deprecated LogisticRegression(penalty=...) in favour of l1_ratio
_L1 = {"l1_ratio": 1.0} if tuple(int(v) for v in sklearn.__version__.split(".")[:2]) >= (1, 8) else {"penalty": "l1"}


def kind_label(kind: str, task: str = "classification") -> str:
    """The demo model kind's name for a dataset's task (:data:`DEMO_KINDS`, :data:`REGRESSION_KINDS`)."""
    return (REGRESSION_KINDS.get(kind) if task == "regression" else None) or DEMO_KINDS[kind]


def make_estimator(kind: str, task: str, seed: int = 0):
    """The SEV paper's App. B settings: L2 LR with C=0.01 (L1 LR with C=1, as the paper's code: with C=0.01 the L1
    model is constant on German credit), GBDT 200 trees depth 3, MLP 128-128 ReLU early stopping;
    XGBoost and LightGBM with the GBDT's budget (200 trees of depth 3, learning rate 0.1), one thread (seeded and
    repeatable)."""
    check_choice(kind, DEMO_KINDS, "model kind")
    mlp = dict(hidden_layer_sizes=(128, 128), activation="relu", early_stopping=True, max_iter=500, random_state=seed)
    boost = dict(n_estimators=200, max_depth=3, learning_rate=0.1, random_state=seed, n_jobs=1)
    classifiers = {
        "l1_lr": lambda: LogisticRegression(C=1.0, solver="liblinear", random_state=seed, **_L1),
        "l2_lr": lambda: LogisticRegression(C=0.01, max_iter=1000, random_state=seed),
        "gbdt": lambda: GradientBoostingClassifier(n_estimators=200, max_depth=3, random_state=seed),
        "mlp": lambda: MLPClassifier(**mlp),
        "xgb": lambda: _xgboost().XGBClassifier(**boost),
        "lgbm": lambda: _lightgbm().LGBMClassifier(**boost, num_leaves=8, verbose=-1),
    }
    regressors = {
        "l1_lr": lambda: Lasso(alpha=0.01, random_state=seed),
        "l2_lr": lambda: Ridge(alpha=1.0),
        "gbdt": lambda: GradientBoostingRegressor(n_estimators=200, max_depth=3, random_state=seed),
        "mlp": lambda: MLPRegressor(**mlp),
        "xgb": lambda: _xgboost().XGBRegressor(**boost),
        "lgbm": lambda: _lightgbm().LGBMRegressor(**boost, num_leaves=8, verbose=-1),
    }
    model = (classifiers if task == "classification" else regressors)[kind]()
    if task == "classification":
        return model
    return TransformedTargetRegressor(regressor=model, transformer=StandardScaler())


def _xgboost():
    return require("xgboost", "The XGBoost demo model")


def _lightgbm():
    return require("lightgbm", "The LightGBM demo model")


def train_model(dataset: Dataset, kind: str, *, seed: int = 0) -> TrainedModel:
    """Fit encoder + estimator on a stratified 80/20 split (seeded) and report train/test metrics.

    Classifiers are trained on the 0/1 target (1 = the positive class). The training rows are capped by
    :attr:`~explain_core.limits.Limits.train_rows`.

    Parameters
    ----------
    dataset : Dataset
        The data to train on.
    kind : str
        A demo model kind (see :func:`demo_model`).
    seed : int
        The seed of the split and of the estimator.

    Returns
    -------
    TrainedModel
        The fitted model with its split and metrics.

    Raises
    ------
    IntakeError
        When ``kind`` is unknown or the training rows are over the ``train_rows`` limit.
    """
    estimator = make_estimator(kind, dataset.task, seed)
    train, test = dataset.split(seed)
    cap = limits().train_rows
    if len(train) > cap:
        raise over("The number of training rows", len(train), cap, "upload a sample of the rows to train on here, "
                   "or train the model elsewhere and upload it.")
    pipe = Pipeline([("encode", make_encoder(dataset)), ("model", estimator)])
    pipe.fit(dataset.features.iloc[train], dataset.y[train])
    label = kind_label(kind, dataset.task)
    adapter = _wrap_demo(pipe, dataset, f"{label} on {dataset.name}",
                         float(np.median(dataset.y[train])) if dataset.task == "regression" else None)
    return TrainedModel(adapter, train, test, evaluate(adapter, dataset, train, test), seed,
                        model_key("trained", dataset.key, kind, seed), f"trained here: {label} (seed {seed})",
                        dataset.key)


def _wrap_demo(pipe, dataset: Dataset, name: str, threshold: float | None) -> ModelAdapter:
    return wrap_model(pipe, dataset, threshold=threshold, positive_class=1, name=name)


CACHE_FORMAT = 2  # the cached files' layout: raised when it changes (2: metrics say where their test rows come from)


def demo_model(dataset: Dataset | str, kind: str = "gbdt", *, seed: int = 0) -> TrainedModel:
    """A demo model for a bundled dataset: trained on first use (seeded), then loaded from the disk cache.

    Parameters
    ----------
    dataset : Dataset or str
        A bundled dataset, or its name.
    kind : str
        ``l1_lr``, ``l2_lr``, ``gbdt``, ``mlp``, ``xgb`` or ``lgbm`` (lasso / ridge for a regression's LR kinds).
    seed : int
        The seed of the split and the training.

    Returns
    -------
    TrainedModel
        The model with its split and metrics; the same on every call with the same arguments.

    Raises
    ------
    IntakeError
        When ``kind`` is not a demo model kind.
    """
    dataset = load_demo(dataset) if isinstance(dataset, str) else dataset
    check_choice(kind, DEMO_KINDS, "model kind")
    origin = dict(key=model_key("demo", dataset.name, kind, seed), dataset_key=dataset.key)
    name = f"{dataset.name}-{kind}-{seed}-v{CACHE_FORMAT}-sk{sklearn.__version__}-{dataset.content_hash}"
    path, meta = cache_dir() / f"{name}.skops", cache_dir() / f"{name}.json"
    if not (path.exists() and meta.exists()):
        with held(path):  # trained once: a process arriving meanwhile waits, then loads it
            if not (path.exists() and meta.exists()):
                trained = _train_kept(dataset, kind, seed, path, meta)
                return replace(trained, source=f"{trained.model.name} (demo, seed {seed})", **origin)
    info = json.loads(meta.read_text())
    adapter = _wrap_demo(load_own_skops(path), dataset, f"{kind_label(kind, dataset.task)} on {dataset.name}",
                         info["threshold"])
    return TrainedModel(adapter, *dataset.split(seed), info["metrics"], seed,
                        source=f"{adapter.name} (demo, seed {seed})", **origin)


def _train_kept(dataset: Dataset, kind: str, seed: int, path: Path, meta: Path) -> TrainedModel:
    """Train a demo model and write it (``path``) and its metadata (``meta``) to the cache."""
    trained = train_model(dataset, kind, seed=seed)
    sio = skops_io()

    write_atomic(path, lambda tmp: sio.dump(trained.model.estimator, tmp))
    write_atomic(meta, lambda tmp: tmp.write_text(json.dumps(
        {"threshold": trained.model.threshold, "metrics": trained.metrics})))
    return trained


def load_own_skops(path: Path):
    """Load a cache file this module wrote, accepting only the vetted types (:data:`ALLOWED_TYPES`)."""
    sio = skops_io()

    types = sio.get_untrusted_types(file=path)
    foreign = sorted(set(types) - ALLOWED_TYPES)
    if foreign:
        raise UntrustedModelError(f"Cached model {path.name} holds unexpected types {foreign}; "
                                  f"delete the cache folder {path.parent} to retrain.")
    return sio.load(path, trusted=types)
