"""Models: one adapter over any scikit-learn-compatible estimator, safe file loading, demo models.

The adapter turns a feature table (the dataset's raw columns) into one score per row — the positive
class probability, a decision value or a regression prediction — and a 0/1 label by its threshold.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import sklearn
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import Lasso, LogisticRegression, Ridge
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score, roc_auc_score
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from .data import Dataset, IntakeError, load_demo

TRUSTED_ENV = "EXPLAIN_TRUSTED_MODELS"
CACHE_ENV = "EXPLAIN_CACHE_DIR"
DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".cache"


class UntrustedModelError(IntakeError):
    """A model file that would run arbitrary code (pickle) or holds types nobody vetted (skops)."""


@dataclass
class ModelAdapter:
    """Batched scores and labels of any sklearn-compatible model over the dataset's feature table.

    ``takes`` is ``"raw"`` (a Pipeline that encodes the raw columns itself) or ``"encoded"`` (a bare
    estimator fed ``encoder.transform(raw)``, the dataset's encoded matrix).
    """

    estimator: Any
    columns: list[str]
    task: str
    takes: str = "raw"
    encoder: Any = None
    positive_class: Any = 1
    threshold: float = 0.5
    score_kind: str = "proba"
    name: str = "model"

    def inputs(self, frame: pd.DataFrame):
        frame = frame[self.columns]
        return self.encoder.transform(frame) if self.takes == "encoded" else frame

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        """One float per row: P(positive), the decision value, or the regression prediction."""
        X = self.inputs(frame)
        if self.score_kind == "proba":
            proba = self.estimator.predict_proba(X)
            return np.asarray(proba)[:, self._positive_index()].astype(float)
        if self.score_kind == "decision":
            return np.asarray(self.estimator.decision_function(X), dtype=float).ravel()
        pred = np.asarray(self.estimator.predict(X)).ravel()
        if self.task == "classification":
            return (pred == self.positive_class).astype(float)
        return pred.astype(float)

    def label(self, frame: pd.DataFrame) -> np.ndarray:
        """1 where the model predicts the positive class (score above the threshold), else 0."""
        return self.labels_of(self.score(frame))

    def labels_of(self, scores: np.ndarray) -> np.ndarray:
        return (np.asarray(scores) > self.threshold).astype(np.int8)

    def _positive_index(self) -> int:
        classes = list(getattr(self.estimator, "classes_", [0, 1]))
        for i, c in enumerate(classes):
            if c == self.positive_class or str(c) == str(self.positive_class):
                return i
        return len(classes) - 1 if set(map(str, classes)) == {"0", "1"} else _missing_class(self, classes)


def _missing_class(model: ModelAdapter, classes) -> int:
    raise IntakeError(f"The model's classes {classes} do not include the positive class {model.positive_class!r}; "
                      "pick the positive class the model was trained with.")


def wrap_model(estimator, dataset: Dataset, *, encoder=None, threshold: float | None = None,
               score_kind: str | None = None, name: str = "model") -> ModelAdapter:
    """Wrap an estimator or Pipeline for ``dataset``, checking it takes the dataset's columns.

    A Pipeline/estimator with ``feature_names_in_`` takes raw columns; otherwise pass the fitted
    ``encoder`` whose output the estimator was trained on.
    """
    takes = "encoded" if encoder is not None else "raw"
    _check_input_columns(estimator, dataset, encoder)
    kind = score_kind or _default_score_kind(estimator, dataset.task)
    default = {"proba": 0.5, "decision": 0.0}.get(kind, 0.5)
    if dataset.task == "regression":
        default = float(np.median(dataset.y))
    return ModelAdapter(estimator, dataset.columns, dataset.task, takes, encoder, dataset.positive_class,
                        default if threshold is None else float(threshold), kind, name)


def _default_score_kind(estimator, task: str) -> str:
    if task == "regression":
        return "predict"
    if hasattr(estimator, "predict_proba"):
        return "proba"
    return "decision" if hasattr(estimator, "decision_function") else "predict"


def _check_input_columns(estimator, dataset: Dataset, encoder) -> None:
    if encoder is not None:
        width = len(encoder.get_feature_names_out())
        wanted = getattr(estimator, "n_features_in_", width)
        if wanted != width:
            raise IntakeError(f"The model expects {wanted} input columns but the dataset's encoding has {width}; "
                              "the model was trained on a different encoding — upload a Pipeline that includes its preprocessing.")
        return
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        n = getattr(estimator, "n_features_in_", None)
        raise IntakeError(f"The model does not record its input column names (it expects {n} unnamed columns); "
                          "upload a Pipeline fitted on a DataFrame with the dataset's columns, or give the encoder it was trained on.")
    missing = [str(c) for c in names if c not in dataset.columns]
    if missing:
        raise IntakeError(f"The model needs columns the dataset lacks: {', '.join(missing)}; "
                          "upload the dataset the model was trained on, or a model trained on these columns.")
    extra = [c for c in dataset.columns if c not in set(names)]
    if extra:
        raise IntakeError(f"The dataset has feature columns the model does not use: {', '.join(map(str, extra))}; "
                          "drop them from the file so every feature can be explained.")


# ---------------------------------------------------------------------------------------------------
# Encodings and demo models (SEV paper App. A-B settings)

def make_encoder(dataset: Dataset) -> ColumnTransformer:
    """Numeric: impute median + standardise; binary/categorical: impute mode + one-hot (one dummy for binary)."""
    numeric = [c for g in dataset.groups if g.kind == "numeric" for c in g.columns]
    binary = [c for g in dataset.groups if g.kind == "binary" for c in g.columns]
    categorical = [c for g in dataset.groups if g.kind == "categorical" and len(g.columns) == 1 for c in g.columns]
    onehot_blocks = [c for g in dataset.groups if len(g.columns) > 1 for c in g.columns]
    parts = [
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
        ("bin", make_pipeline(SimpleImputer(strategy="most_frequent"),
                              OneHotEncoder(drop="if_binary", handle_unknown="ignore", sparse_output=False)), binary),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"),
                              OneHotEncoder(handle_unknown="ignore", sparse_output=False)), categorical),
        ("onehot", "passthrough", onehot_blocks),
    ]
    return ColumnTransformer([p for p in parts if p[2]], verbose_feature_names_out=True)


DEMO_KINDS = {"l1_lr": "L1 logistic regression", "l2_lr": "L2 logistic regression",
              "gbdt": "Gradient boosting", "mlp": "MLP (128-128)"}


def make_estimator(kind: str, task: str, seed: int = 0):
    """The SEV paper's App. B settings: LR with C=0.01, GBDT 200 trees depth 3, MLP 128-128 ReLU early stopping."""
    classifiers = {
        "l1_lr": lambda: LogisticRegression(penalty="l1", C=0.01, solver="liblinear", random_state=seed),
        "l2_lr": lambda: LogisticRegression(C=0.01, max_iter=1000, random_state=seed),
        "gbdt": lambda: GradientBoostingClassifier(n_estimators=200, max_depth=3, random_state=seed),
        "mlp": lambda: MLPClassifier((128, 128), activation="relu", early_stopping=True, max_iter=500, random_state=seed),
    }
    regressors = {
        "l1_lr": lambda: Lasso(alpha=0.01, random_state=seed),
        "l2_lr": lambda: Ridge(alpha=1.0),
        "gbdt": lambda: GradientBoostingRegressor(n_estimators=200, max_depth=3, random_state=seed),
        "mlp": lambda: MLPRegressor((128, 128), activation="relu", early_stopping=True, max_iter=500, random_state=seed),
    }
    table = classifiers if task == "classification" else regressors
    if kind not in table:
        raise IntakeError(f"Unknown model kind {kind!r}; choose one of: {', '.join(DEMO_KINDS)}.")
    model = table[kind]()
    return model if task == "classification" else TransformedTargetRegressor(model, transformer=StandardScaler())


@dataclass
class TrainedModel:
    """A fitted model with the split it was trained on and its train/test metrics."""

    model: ModelAdapter
    train_rows: np.ndarray
    test_rows: np.ndarray
    metrics: dict = field(default_factory=dict)
    seed: int = 0


def train_model(dataset: Dataset, kind: str, *, seed: int = 0, split_seed: int | None = None) -> TrainedModel:
    """Fit encoder + estimator on a stratified 80/20 split (seeded) and report train/test metrics."""
    train, test = dataset.split(seed if split_seed is None else split_seed)
    pipe = Pipeline([("encode", make_encoder(dataset)), ("model", make_estimator(kind, dataset.task, seed))])
    target = dataset.y
    pipe.fit(dataset.features.iloc[train], target[train])
    adapter = wrap_model(pipe, dataset, name=f"{DEMO_KINDS[kind]} on {dataset.name}")
    if dataset.task == "regression":
        adapter.threshold = float(np.median(target[train]))
    return TrainedModel(adapter, train, test, evaluate(adapter, dataset, train, test), seed)


def evaluate(model: ModelAdapter, dataset: Dataset, train_rows, test_rows) -> dict:
    """Accuracy and AUC (classification) or R² and RMSE (regression) on train and test rows."""
    out = {}
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


def cache_dir() -> Path:
    path = Path(os.environ.get(CACHE_ENV, DEFAULT_CACHE)) / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def demo_model(dataset: Dataset | str, kind: str = "gbdt", *, seed: int = 0) -> TrainedModel:
    """A demo model for a bundled dataset: trained on first use (seeded), then loaded from the disk cache."""
    dataset = load_demo(dataset) if isinstance(dataset, str) else dataset
    key = f"{dataset.name}-{kind}-{seed}-sk{sklearn.__version__}-{_data_hash(dataset)}"
    path, meta = cache_dir() / f"{key}.skops", cache_dir() / f"{key}.json"
    if path.exists() and meta.exists():
        train, test = dataset.split(seed)
        info = json.loads(meta.read_text())
        pipe = _load_own_skops(path)
        adapter = wrap_model(pipe, dataset, threshold=info["threshold"], name=info["name"])
        return TrainedModel(adapter, train, test, info["metrics"], seed)
    trained = train_model(dataset, kind, seed=seed)
    import skops.io as sio

    sio.dump(trained.model.estimator, path)
    meta.write_text(json.dumps({"name": trained.model.name, "threshold": trained.model.threshold,
                                "metrics": trained.metrics}))
    return trained


def _data_hash(dataset: Dataset) -> str:
    digest = pd.util.hash_pandas_object(dataset.features, index=False).to_numpy().tobytes()
    return hashlib.sha1(digest).hexdigest()[:10]


def _load_own_skops(path: Path):
    """Load a cache file this module wrote: only sklearn/numpy/scipy types are accepted."""
    import skops.io as sio

    types = sio.get_untrusted_types(file=path)
    foreign = [t for t in types if not t.startswith(("sklearn.", "numpy.", "scipy.", "builtins."))]
    if foreign:
        raise UntrustedModelError(f"Cached model {path.name} holds unexpected types {foreign}; delete the cache folder.")
    return sio.load(path, trusted=types)


# ---------------------------------------------------------------------------------------------------
# Loading model files

def trusted_mode(trusted: bool | None = None) -> bool:
    """Explicit argument wins; otherwise env EXPLAIN_TRUSTED_MODELS=1 turns trusted mode on."""
    return bool(trusted) if trusted is not None else os.environ.get(TRUSTED_ENV, "") == "1"


def load_model_file(path, *, trusted: bool | None = None, trusted_types: list[str] | None = None):
    """Load an estimator from ``.skops`` or ``.onnx``; ``.joblib``/``.pkl`` only in trusted mode.

    Pickle-based files run arbitrary code when loaded, so they are refused (without being read)
    unless trusted mode is on. skops files are checked for types outside skops' trusted set.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".skops":
        return _load_skops(path, trusted, trusted_types or [])
    if suffix == ".onnx":
        return OnnxModel(path)
    if suffix in (".joblib", ".pkl", ".pickle"):
        if not trusted_mode(trusted):
            raise UntrustedModelError(
                f"{path.name} is a pickle file: loading it can run any code it contains, so it is refused. "
                "Save the model with skops (skops.io.dump) or export it to ONNX; or, only for a file you made "
                f"yourself, turn on trusted mode ({TRUSTED_ENV}=1).")
        import joblib

        return joblib.load(path)
    raise IntakeError(f"{path.name}: unsupported model format {suffix!r}; upload .skops or .onnx "
                      "(.joblib/.pkl only in trusted mode).")


def _load_skops(path: Path, trusted: bool | None, trusted_types: list[str]):
    import skops.io as sio

    try:
        untrusted = sio.get_untrusted_types(file=path)
    except Exception as exc:
        raise IntakeError(f"{path.name} is not a readable skops file ({exc}); save it with skops.io.dump.") from exc
    unknown = [t for t in untrusted if t not in trusted_types]
    if unknown and not trusted_mode(trusted):
        raise UntrustedModelError(f"{path.name} contains types that are not known to be safe: {', '.join(unknown)}. "
                                  "Load it only if you trust its author, by listing these types as trusted "
                                  f"or turning on trusted mode ({TRUSTED_ENV}=1).")
    return sio.load(path, trusted=untrusted)


class OnnxModel:
    """An ONNX classifier/regressor (onnxruntime) with sklearn's predict/predict_proba interface.

    A graph with one input per raw column takes the raw table; a graph with one 2-D float input
    takes the dataset's encoded matrix (wrap it with the encoder).
    """

    def __init__(self, path):
        import onnxruntime as ort

        try:
            self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise IntakeError(f"{Path(path).name} is not a loadable ONNX model ({exc}); re-export it.") from exc
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.input_types = {i.name: i.type for i in self.session.get_inputs()}
        self.outputs = [o.name for o in self.session.get_outputs()]
        if len(self.input_names) > 1:
            self.feature_names_in_ = np.array(self.input_names, dtype=object)
        else:
            self.n_features_in_ = self.session.get_inputs()[0].shape[1]
        self.classes_ = self._classes()

    def _classes(self):
        if len(self.outputs) < 2:
            return None
        probe = self.session.get_outputs()[1]
        return [0, 1] if "map" not in probe.type and "tensor" in probe.type else None

    def _feed(self, X) -> dict:
        if len(self.input_names) == 1:
            return {self.input_names[0]: np.asarray(X, dtype=np.float32)}
        feed = {}
        for name in self.input_names:
            col = np.asarray(X[name]).reshape(-1, 1)
            feed[name] = col.astype(str) if "string" in self.input_types[name] else col.astype(np.float32)
        return feed

    def predict(self, X):
        return np.asarray(self.session.run([self.outputs[0]], self._feed(X))[0]).ravel()

    def predict_proba(self, X):
        if len(self.outputs) < 2:
            raise AttributeError("this ONNX model has no probability output")
        proba = self.session.run([self.outputs[1]], self._feed(X))[0]
        if isinstance(proba, list):  # ZipMap output: list of {class: prob}
            keys = sorted(proba[0])
            self.classes_ = keys
            return np.array([[row[k] for k in keys] for row in proba])
        return np.asarray(proba)


def model_from_file(path, dataset: Dataset, *, trusted: bool | None = None, encoder=None,
                    threshold: float | None = None) -> ModelAdapter:
    """Load a model file and wrap it for ``dataset`` in one step."""
    return wrap_model(load_model_file(path, trusted=trusted), dataset, encoder=encoder,
                      threshold=threshold, name=Path(path).name)

