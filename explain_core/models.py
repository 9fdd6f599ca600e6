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
from typing import Any, Sequence

import numpy as np
import pandas as pd
import sklearn
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.exceptions import NotFittedError
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
from sklearn.impute import SimpleImputer
from sklearn.linear_model import Lasso, LogisticRegression, Ridge
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score, roc_auc_score
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (FunctionTransformer, KBinsDiscretizer, MaxAbsScaler, MinMaxScaler, OneHotEncoder, OrdinalEncoder,
                                   RobustScaler, StandardScaler)

from .data import Dataset, FeatureGroup, IntakeError, find_value, load_demo, show

TRUSTED_ENV = "EXPLAIN_TRUSTED_MODELS"
CACHE_ENV = "EXPLAIN_CACHE_DIR"
DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".cache"


class UntrustedModelError(IntakeError):
    """A model file that would run arbitrary code (pickle) or holds types nobody vetted (skops).

    ``types`` lists a skops file's unvetted types (empty for a pickle): trusting exactly those loads it.
    """

    def __init__(self, message: str, types: Sequence[str] = ()):
        super().__init__(message)
        self.types = tuple(types)


@dataclass
class ModelAdapter:
    """Batched scores and labels of any sklearn-compatible model over the dataset's feature table.

    ``takes`` is ``"raw"`` (a Pipeline that encodes the raw ``columns`` itself) or ``"encoded"`` (a
    bare estimator fed ``encoder.transform(raw)``, the dataset's encoded matrix). ``positive_class``
    is the model's own label for the dataset's positive class.
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
    splits: dict = field(default_factory=dict, repr=False, compare=False)  # encoded_model() by groups

    def inputs(self, frame: pd.DataFrame):
        frame = frame[self.columns]
        if self.takes == "raw":
            return frame
        names = getattr(self.estimator, "feature_names_in_", None)
        encoded = self.encoder.transform(frame)
        return encoded if names is None else pd.DataFrame(encoded, columns=names)

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        """One float per row: P(positive), the decision value for the positive class, or the prediction."""
        return self.scores_of(self.estimator, self.inputs(frame))

    def scores_of(self, estimator, X) -> np.ndarray:
        """:meth:`score` of ``estimator`` (this model, or its final step on encoded rows ``X``)."""
        if self.score_kind == "proba":
            return np.asarray(estimator.predict_proba(X))[:, self._positive_index()].astype(float)
        if self.score_kind == "decision":  # sklearn: a decision value > 0 means classes_[1]
            decision = np.asarray(estimator.decision_function(X), dtype=float).ravel()
            return decision if self._positive_index() == 1 else -decision
        pred = np.asarray(estimator.predict(X)).ravel()
        if self.task == "classification":
            return (pred == self.positive_class).astype(float)
        return pred.astype(float)

    def label(self, frame: pd.DataFrame) -> np.ndarray:
        """1 where the model predicts the positive class (score above the threshold), else 0."""
        return self.labels_of(self.score(frame))

    def labels_of(self, scores: np.ndarray) -> np.ndarray:
        return (np.asarray(scores) > self.threshold).astype(np.int8)

    def _positive_index(self) -> int:
        return list(self.estimator.classes_).index(self.positive_class)


def wrap_model(estimator, dataset: Dataset, *, encoder=None, threshold: float | None = None,
               score_kind: str | None = None, positive_class=None, name: str = "model") -> ModelAdapter:
    """Wrap an estimator or Pipeline for ``dataset``, checking its inputs and classes.

    A model that records the dataset's column names (``feature_names_in_``) takes raw columns; a
    bare estimator takes the encoded matrix of the fitted ``encoder`` it was trained on.
    ``positive_class`` is the model's label for the dataset's positive class when the model was
    trained on a recoded target (e.g. ``1`` for a 0/1 target); by default the same label.
    """
    takes, columns = _input_columns(estimator, dataset, encoder)
    kind = score_kind or _default_score_kind(estimator, dataset.task)
    positive = None
    if dataset.task == "classification":
        wanted = dataset.positive_class if positive_class is None else positive_class
        positive = _model_class(estimator, wanted, kind)
    if threshold is None:
        threshold = float(np.median(dataset.y)) if dataset.task == "regression" else 0.0 if kind == "decision" else 0.5
    return ModelAdapter(estimator, columns, dataset.task, takes, encoder if takes == "encoded" else None,
                        positive, float(threshold), kind, name)


def _default_score_kind(estimator, task: str) -> str:
    if task == "regression":
        return "predict"
    if hasattr(estimator, "predict_proba"):
        return "proba"
    binary = len(getattr(estimator, "classes_", ())) == 2
    return "decision" if binary and hasattr(estimator, "decision_function") else "predict"


def _model_class(estimator, positive, kind: str):
    """The model's class label equal to ``positive`` (text and numbers compared as text)."""
    classes = getattr(estimator, "classes_", None)
    if classes is None:
        if kind == "predict":
            return positive
        raise IntakeError("The model does not list its classes (no classes_), so its scores cannot be matched "
                          "to the positive class; upload a fitted scikit-learn classifier or Pipeline.")
    match = find_value(positive, list(classes))
    if match is None:
        raise IntakeError(f"The model's classes [{show(classes)}] do not include the positive class "
                          f"{show([positive])}; the model was trained on a differently coded target — recode "
                          "the target column to the model's classes, or name the model's label for the positive class.")
    return match


def _input_columns(estimator, dataset: Dataset, encoder) -> tuple[str, list[str]]:
    """``("encoded", raw columns)`` or ``("raw", the model's columns in its order)``, or an IntakeError."""
    names = getattr(estimator, "feature_names_in_", None)
    names = None if names is None else list(names)
    if encoder is not None:
        try:
            encoded = [str(n) for n in encoder.get_feature_names_out()]
        except NotFittedError as exc:
            raise IntakeError("The encoder is not fitted; pass the fitted encoder the model was trained on.") from exc
        if names is None or list(map(str, names)) == encoded:
            wanted = getattr(estimator, "n_features_in_", None)
            if wanted is not None and wanted != len(encoded):
                raise IntakeError(f"The model expects {wanted} input columns but the dataset's encoding has "
                                  f"{len(encoded)}; the model was trained on a different encoding — upload a "
                                  "Pipeline that includes its preprocessing.")
            return "encoded", dataset.columns
    if names is None:
        n = getattr(estimator, "n_features_in_", None)
        raise IntakeError(f"The model does not record its input column names (it expects {n} unnamed columns); "
                          "upload a Pipeline fitted on a DataFrame with the dataset's columns, or give the encoder it was trained on.")
    missing = [str(c) for c in names if c not in dataset.columns]
    if missing:
        raise IntakeError(f"The model needs columns the dataset lacks: {', '.join(missing)}; "
                          "upload the dataset the model was trained on, or a model trained on these columns.")
    extra = [str(c) for c in dataset.columns if c not in names]
    if extra:
        raise IntakeError(f"The dataset has feature columns the model does not use: {', '.join(extra)}; "
                          "drop them from the file so every feature can be explained.")
    return "raw", names


# ---------------------------------------------------------------------------------------------------
# The model as encoder + estimator, when each encoded column comes from one feature group

COLUMNWISE_STEPS = (StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler, SimpleImputer, OrdinalEncoder,
                    KBinsDiscretizer, OneHotEncoder)


@dataclass(frozen=True)
class EncodedModel:
    """A model split into a column-wise ``encoder`` and the ``estimator`` fed its output.

    ``column_group[j]`` is the feature group behind encoded column j. Because every step works column
    by column, mixing encoded rows group by group equals encoding the mixed raw rows.
    """

    encoder: Any
    estimator: Any
    column_group: np.ndarray

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        X = self.encoder.transform(frame)
        return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)


def encoded_model(model: ModelAdapter, groups: Sequence[FeatureGroup]) -> EncodedModel | None:
    """Split ``model`` into encoder + estimator over ``groups``; None unless the encoding is column-wise."""
    key = tuple(groups)
    if key not in model.splits:
        model.splits[key] = _split(model, key)
    return model.splits[key]


def _split(model: ModelAdapter, groups: Sequence[FeatureGroup]) -> EncodedModel | None:
    if model.takes == "encoded":
        encoder, estimator = model.encoder, model.estimator
    elif isinstance(model.estimator, Pipeline) and len(model.estimator.steps) == 2:
        encoder, estimator = model.estimator[0], model.estimator[-1]
    else:
        return None
    if getattr(estimator, "feature_names_in_", None) is not None:
        return None
    column_group = encoded_column_groups(encoder, groups)
    return None if column_group is None else EncodedModel(encoder, estimator, column_group)


def encoded_column_groups(encoder, groups: Sequence[FeatureGroup]) -> np.ndarray | None:
    """Group index of each output column of a fitted ColumnTransformer; None where it cannot be traced."""
    if not isinstance(encoder, ColumnTransformer):
        return None
    group_of = {c: i for i, g in enumerate(groups) for c in g.columns}
    width = max((s.stop for s in encoder.output_indices_.values()), default=0)
    out = np.full(width, -1)
    for name, transformer, columns in encoder.transformers_:
        part = encoder.output_indices_[name]
        if part.stop == part.start:
            continue
        sources = _trace(transformer, _column_names(encoder, columns))
        if sources is None or len(sources) != part.stop - part.start or not set(sources) <= set(group_of):
            return None
        out[part] = [group_of[c] for c in sources]
    return out if (out >= 0).all() else None


def _column_names(encoder: ColumnTransformer, columns) -> list:
    columns = [columns] if isinstance(columns, str) else list(columns)
    if columns and all(isinstance(c, (int, np.integer)) for c in columns):
        return list(encoder.feature_names_in_[columns])
    return columns


def _trace(transformer, names: list) -> list | None:
    """The raw column behind each output column: passthrough and COLUMNWISE_STEPS only."""
    if isinstance(transformer, str):
        return list(names) if transformer == "passthrough" else None
    sources, current = list(names), list(names)
    steps = [s for _, s in transformer.steps] if isinstance(transformer, Pipeline) else [transformer]
    for step in steps:
        if step is None or step == "passthrough" or _is_identity(step):
            continue
        if not isinstance(step, COLUMNWISE_STEPS) or getattr(step, "add_indicator", False):
            return None
        out = list(step.get_feature_names_out(current))
        if isinstance(step, (OneHotEncoder, KBinsDiscretizer)) and len(out) != len(current):
            counts = _onehot_counts(step)
            if counts is None or sum(counts) != len(out):
                return None
            sources = list(np.repeat(np.array(sources, dtype=object), counts))
        elif len(out) != len(current):
            return None
        current = out
    return sources


def _is_identity(step) -> bool:
    """A fitted ColumnTransformer stores "passthrough" as a FunctionTransformer without a function."""
    return isinstance(step, FunctionTransformer) and step.func is None


def _onehot_counts(step) -> list[int] | None:
    """Output columns per input column of a one-hot step (OneHotEncoder, or KBinsDiscretizer one-hot)."""
    if isinstance(step, KBinsDiscretizer):
        return list(step.n_bins_) if step.encode != "ordinal" else None
    drops = step.drop_idx_ if step.drop_idx_ is not None else [None] * len(step.categories_)
    infrequent = getattr(step, "infrequent_categories_", None)
    if infrequent is not None and any(i is not None for i in infrequent):
        return None
    return [len(c) - (d is not None) for c, d in zip(step.categories_, drops)]


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
# scikit-learn 1.8 deprecated LogisticRegression(penalty=...) in favour of l1_ratio
_L1 = {"l1_ratio": 1.0} if tuple(int(v) for v in sklearn.__version__.split(".")[:2]) >= (1, 8) else {"penalty": "l1"}


def make_estimator(kind: str, task: str, seed: int = 0):
    """The SEV paper's App. B settings: LR with C=0.01, GBDT 200 trees depth 3, MLP 128-128 ReLU early stopping."""
    mlp = dict(hidden_layer_sizes=(128, 128), activation="relu", early_stopping=True, max_iter=500, random_state=seed)
    classifiers = {
        "l1_lr": lambda: LogisticRegression(C=0.01, solver="liblinear", random_state=seed, **_L1),
        "l2_lr": lambda: LogisticRegression(C=0.01, max_iter=1000, random_state=seed),
        "gbdt": lambda: GradientBoostingClassifier(n_estimators=200, max_depth=3, random_state=seed),
        "mlp": lambda: MLPClassifier(**mlp),
    }
    regressors = {
        "l1_lr": lambda: Lasso(alpha=0.01, random_state=seed),
        "l2_lr": lambda: Ridge(alpha=1.0),
        "gbdt": lambda: GradientBoostingRegressor(n_estimators=200, max_depth=3, random_state=seed),
        "mlp": lambda: MLPRegressor(**mlp),
    }
    table = classifiers if task == "classification" else regressors
    if kind not in table:
        raise IntakeError(f"Unknown model kind {kind!r}; choose one of: {', '.join(DEMO_KINDS)}.")
    model = table[kind]()
    return model if task == "classification" else TransformedTargetRegressor(regressor=model, transformer=StandardScaler())


@dataclass
class TrainedModel:
    """A fitted model with the split it was trained on and its train/test metrics."""

    model: ModelAdapter
    train_rows: np.ndarray
    test_rows: np.ndarray
    metrics: dict = field(default_factory=dict)
    seed: int = 0


def train_model(dataset: Dataset, kind: str, *, seed: int = 0) -> TrainedModel:
    """Fit encoder + estimator on a stratified 80/20 split (seeded) and report train/test metrics.

    Classifiers are trained on the 0/1 target (1 = the positive class).
    """
    train, test = dataset.split(seed)
    pipe = Pipeline([("encode", make_encoder(dataset)), ("model", make_estimator(kind, dataset.task, seed))])
    pipe.fit(dataset.features.iloc[train], dataset.y[train])
    adapter = _wrap_demo(pipe, dataset, f"{DEMO_KINDS[kind]} on {dataset.name}",
                         float(np.median(dataset.y[train])) if dataset.task == "regression" else None)
    return TrainedModel(adapter, train, test, evaluate(adapter, dataset, train, test), seed)


def _wrap_demo(pipe, dataset: Dataset, name: str, threshold: float | None) -> ModelAdapter:
    return wrap_model(pipe, dataset, threshold=threshold, positive_class=1, name=name)


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
    key = f"{dataset.name}-{kind}-{seed}-sk{sklearn.__version__}-{data_hash(dataset)}"
    path, meta = cache_dir() / f"{key}.skops", cache_dir() / f"{key}.json"
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text())
        adapter = _wrap_demo(load_own_skops(path), dataset, info["name"], info["threshold"])
        return TrainedModel(adapter, *dataset.split(seed), info["metrics"], seed)
    trained = train_model(dataset, kind, seed=seed)
    import skops.io as sio

    write_atomic(path, lambda tmp: sio.dump(trained.model.estimator, tmp))
    write_atomic(meta, lambda tmp: tmp.write_text(json.dumps(
        {"name": trained.model.name, "threshold": trained.model.threshold, "metrics": trained.metrics})))
    return trained


def write_atomic(path: Path, write) -> None:
    """Write via a temporary file and rename, so a concurrent reader never sees half a file."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)


def data_hash(dataset: Dataset) -> str:
    digest = hashlib.sha1(pd.util.hash_pandas_object(dataset.features, index=False).to_numpy().tobytes())
    digest.update(np.ascontiguousarray(dataset.y).tobytes())
    return digest.hexdigest()[:10]


# The non-default types skops reports for this module's own demo pipelines (all plain sklearn/numpy state).
CACHE_TYPES = {"numpy.dtype", "sklearn.tree._tree.Tree", "sklearn.neural_network._stochastic_optimizers.AdamOptimizer"}


def load_own_skops(path: Path):
    """Load a cache file this module wrote, accepting only the types its demo pipelines contain."""
    import skops.io as sio

    types = sio.get_untrusted_types(file=path)
    foreign = sorted(set(types) - CACHE_TYPES)
    if foreign:
        raise UntrustedModelError(f"Cached model {path.name} holds unexpected types {foreign}; "
                                  f"delete the cache folder {path.parent} to retrain.")
    return sio.load(path, trusted=types)


# ---------------------------------------------------------------------------------------------------
# Loading model files

def trusted_mode(trusted: bool | None = None) -> bool:
    """Explicit argument wins; otherwise env EXPLAIN_TRUSTED_MODELS=1 turns trusted mode on."""
    return bool(trusted) if trusted is not None else os.environ.get(TRUSTED_ENV, "") == "1"


def load_model_file(path, *, trusted: bool | None = None, trusted_types: list[str] | None = None):
    """Load an estimator from ``.skops`` or ``.onnx``; ``.joblib``/``.pkl`` only in trusted mode.

    Pickle-based files run arbitrary code when loaded, so they are refused (without being read)
    unless trusted mode is on. skops files holding types outside skops' trusted set are refused
    unless those types are listed in ``trusted_types`` or trusted mode is on.
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

        try:
            return joblib.load(path)
        except Exception as exc:
            raise IntakeError(f"{path.name} could not be unpickled ({type(exc).__name__}: {exc}); re-save the "
                              "model (skops.io.dump is safer) with the same library versions.") from exc
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
                                  f"or turning on trusted mode ({TRUSTED_ENV}=1).", unknown)
    return sio.load(path, trusted=untrusted)


def load_model_bytes(data: bytes, filename: str, *, trusted: bool | None = None,
                     trusted_types: Sequence[str] | None = None):
    """:func:`load_model_file` for an upload's bytes: written under its own name to a temporary folder
    (so messages name the user's file), loaded, and deleted."""
    import tempfile

    name = Path(str(filename)).name or "model"
    with tempfile.TemporaryDirectory(prefix="explain-upload-") as folder:
        path = Path(folder) / name
        path.write_bytes(bytes(data))
        return load_model_file(path, trusted=trusted, trusted_types=list(trusted_types or []))


_ONNX_DTYPES = {"tensor(string)": object, "tensor(float)": np.float32, "tensor(double)": np.float64,
                "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": bool}


class OnnxModel:
    """An ONNX classifier/regressor (onnxruntime) with sklearn's predict/predict_proba interface.

    A graph with one input per raw column takes the raw table; a graph with one 2-D input takes
    the dataset's encoded matrix (wrap it with the encoder). Outputs follow skl2onnx: the label
    first, then the probabilities (a tensor, or a ZipMap list of {class: probability}).
    """

    def __init__(self, path):
        import onnx
        import onnxruntime as ort

        try:
            graph = onnx.load(str(path)).graph
            self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise IntakeError(f"{Path(path).name} is not a loadable ONNX model ({exc}); re-export it.") from exc
        inputs = self.session.get_inputs()
        self.input_types = {i.name: _ONNX_DTYPES.get(i.type, np.float32) for i in inputs}
        if len(inputs) > 1:
            self.feature_names_in_ = np.array([i.name for i in inputs], dtype=object)
        elif isinstance(inputs[0].shape[-1], int):
            self.n_features_in_ = inputs[0].shape[-1]
        self.outputs = [o.name for o in self.session.get_outputs()]
        classes = _onnx_classes(graph)
        if classes is not None:
            self.classes_ = classes

    def _feed(self, X) -> dict:
        if len(self.input_types) == 1:
            (name, dtype), = self.input_types.items()
            return {name: np.asarray(X, dtype=dtype)}
        return {name: np.asarray(X[name]).astype(str if dtype is object else dtype).reshape(-1, 1)
                for name, dtype in self.input_types.items()}

    def predict(self, X):
        return np.asarray(self.session.run(self.outputs[:1], self._feed(X))[0]).ravel()

    @property
    def predict_proba(self):
        if len(self.outputs) < 2 or not hasattr(self, "classes_"):
            raise AttributeError("this ONNX model has no probability output with known classes")
        return self._predict_proba

    def _predict_proba(self, X):
        proba = self.session.run(self.outputs[1:2], self._feed(X))[0]
        if isinstance(proba, list):  # ZipMap: one {class: probability} per row
            return np.array([[row[c] for c in self.classes_] for row in proba], dtype=float)
        return np.asarray(proba, dtype=float)


def _onnx_classes(graph) -> np.ndarray | None:
    """Class labels in probability-column order: a classifier/ZipMap node's classlabels_* attribute,
    or the ``classes`` initializer skl2onnx writes for MLPs and similar."""
    import onnx
    from onnx import numpy_helper

    for node in graph.node:
        for attr in node.attribute:
            if attr.name in ("classlabels_strings", "classlabels_int64s", "classlabels_ints"):
                values = onnx.helper.get_attribute_value(attr)
                return np.array([v.decode() if isinstance(v, bytes) else v for v in values])
    init = next((i for i in graph.initializer if i.name == "classes"), None)
    return None if init is None else numpy_helper.to_array(init)


def model_from_file(path, dataset: Dataset, *, trusted: bool | None = None, encoder=None,
                    threshold: float | None = None, positive_class=None) -> ModelAdapter:
    """Load a model file and wrap it for ``dataset`` in one step."""
    return wrap_model(load_model_file(path, trusted=trusted), dataset, encoder=encoder, threshold=threshold,
                      positive_class=positive_class, name=Path(path).name)
