"""Gradient-boosted models in their own file formats: XGBoost (``.json``/``.ubj``), LightGBM (``.txt``) and CatBoost
(``.cbm``). These formats hold trees and numbers only — loading one runs no code — and each library reads its own.

A native booster (no scikit-learn wrapper) becomes a :class:`NativeBooster`: scikit-learn's ``predict`` /
``predict_proba`` with ``classes_`` (0/1 for a binary objective) and ``feature_names_in_`` from the file, so
:func:`~explain_core.intake.models.wrap_model` treats it as any other model. A library that is not installed is named
with the command that installs it.
"""
from __future__ import annotations

import importlib
import json
import numpy as np
import pandas as pd

from ..errors import IntakeError
from ..limits import Limits, over
from .formats import NATIVE_SUFFIXES

INSTALL = {"xgboost": "pip install xgboost", "lightgbm": "pip install lightgbm", "catboost": "pip install catboost",
           "sklearn": "pip install scikit-learn", "onnxruntime": "pip install onnxruntime",
           "skops": "pip install skops"}
LIBRARY_NAMES = {"xgboost": "XGBoost", "lightgbm": "LightGBM", "catboost": "CatBoost"}
BINARY = {"xgboost": ("binary:logistic", "binary:logitraw", "binary:hinge"),
          "lightgbm": ("binary", "cross_entropy", "xentropy"), "catboost": ("Logloss", "CrossEntropy")}


def require(package: str, name: str):
    """Import ``package`` for the model file ``name``, or an IntakeError naming the command that installs it."""
    try:
        return importlib.import_module(package)
    except ImportError:
        raise IntakeError(f"{name} needs the package {package}, which is not installed on this server; the server's "
                          f"operator can add it with `{INSTALL.get(package, 'pip install ' + package)}`.") from None


PARALLEL_ROWS = 1024  # fewer rows are scored on one thread: waking a pool costs more than it saves (a one-row SEV
# search's calls of tens of rows; bench/sandbox_overhead.py)


class NativeBooster:
    """A native XGBoost / LightGBM / CatBoost model behind scikit-learn's interface.

    Binary objectives give ``predict_proba`` (classes 0 and 1) and ``predict`` (0/1); other objectives are
    regressions (``predict`` only). ``feature_names_in_`` are the names stored in the file.
    """

    def __init__(self, booster, library: str, objective: str, feature_names, categorical=()):
        self.booster, self.library, self.objective = booster, library, objective
        self._threads = None  # XGBoost's thread count as last set (_positive)
        self.feature_names_in_ = np.array(list(feature_names), dtype=object)
        self.categorical = tuple(categorical)  # XGBoost's native categorical inputs (feature type "c")
        if objective in BINARY[library]:
            self.classes_ = np.array([0, 1])

    @property
    def reads_floats(self) -> bool:
        """XGBoost and LightGBM read their inputs as one float matrix, column by position (CatBoost may hold
        categorical features, and so may an XGBoost model trained with ``enable_categorical``)."""
        return self.library == "lightgbm" or (self.library == "xgboost" and not self.categorical)

    def _positive(self, X) -> np.ndarray:
        threads = 1 if len(X) < PARALLEL_ROWS else 0  # 0: the library's default
        if self.library == "lightgbm":
            X = X.to_numpy(dtype=float) if isinstance(X, pd.DataFrame) else np.asarray(X, dtype=float)
            return np.asarray(self.booster.predict(X, num_threads=threads), dtype=float)
        if self.library == "xgboost":  # in place: no DMatrix copy; a frame's names are checked against the file's
            X = self._categories(X) if isinstance(X, pd.DataFrame) else np.asarray(X, dtype=float)
            if threads != self._threads:
                self.booster.set_param({"nthread": threads})
                self._threads = threads
            return np.asarray(self.booster.inplace_predict(X), dtype=float)
        frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X), columns=self.feature_names_in_)
        kind = "Probability" if hasattr(self, "classes_") else "RawFormulaVal"
        out = np.asarray(self.booster.predict(frame, prediction_type=kind), dtype=float)
        return out[:, 1] if out.ndim == 2 else out

    def _categories(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The frame with XGBoost's categorical inputs as pandas categories: XGBoost (≥ 3.1) keeps the categories
        it was trained on in the model and re-codes a frame's by value, so a row's own categories score alike."""
        if not self.categorical:
            return frame
        return frame.assign(**{c: frame[c].astype("category") for c in self.categorical if c in frame})

    @property
    def predict_proba(self):
        if not hasattr(self, "classes_"):
            raise AttributeError(f"a {self.library} model with objective {self.objective} has no probabilities")
        return self._predict_proba

    def _predict_proba(self, X) -> np.ndarray:
        p = self._positive(X)
        return np.column_stack([1 - p, p])

    def predict(self, X) -> np.ndarray:
        out = self._positive(X)
        return (out > 0.5).astype(int) if hasattr(self, "classes_") else out


def load_native(data: bytes, suffix: str, name: str) -> NativeBooster:
    """A native booster from its file's bytes (by the file's suffix; a ``.json`` is XGBoost's JSON model format)."""
    library = NATIVE_SUFFIXES[suffix]
    module = require(library, name)
    try:
        if library == "xgboost":
            booster = module.Booster()
            booster.load_model(bytearray(data))
            objective = json.loads(booster.save_config())["learner"]["objective"]["name"]
            names, types = booster.feature_names or [], booster.feature_types or []
            return NativeBooster(booster, library, objective, names,
                                 [n for n, t in zip(names, types) if t == "c"])
        if library == "lightgbm":
            booster = module.Booster(model_str=data.decode("utf-8"))
            objective = str(booster.params.get("objective") or booster.dump_model().get("objective", "")).split()[0]
            return NativeBooster(booster, library, objective, booster.feature_name())
        booster = module.CatBoost()
        booster.load_model(blob=data)
        return NativeBooster(booster, library, str(booster.get_all_params().get("loss_function", "RMSE")),
                             booster.feature_names_)
    except IntakeError:
        raise
    except Exception as exc:
        raise damaged(library, name, " ".join(str(exc).split())[:300]) from exc


def damaged(library: str, name: str, detail: str) -> IntakeError:
    return IntakeError(f"{name}: this {LIBRARY_NAMES[library]} file is damaged ({detail}); save the model again with "
                       "the booster's save_model and upload the whole file.")


def check_native_header(data: bytes, suffix: str, name: str, caps: Limits) -> None:
    """Refuse a booster file whose header declares more features, classes or trees than the limits allow, or that
    is cut short, before the library reads it (LightGBM text and XGBoost JSON; the binary formats are checked
    after loading, by :func:`~explain_core.intake.sandbox.loaders.describe`, before any prediction)."""
    library = NATIVE_SUFFIXES[suffix]
    if suffix == ".txt":
        sizes = _lightgbm_header(data, name)
    elif suffix == ".json":
        sizes = _xgboost_header(data, name)
    else:
        return
    for what, value, limit in (("features", sizes["features"], caps.columns),
                               ("classes", sizes["classes"], caps.model_classes),
                               ("trees", sizes["trees"], caps.model_trees)):
        if value > limit:
            raise over(f"The number of {what} {name} declares", value, limit, "upload a smaller model.")
    if min(sizes.values()) < 0:
        raise damaged(library, name, "its header declares a negative size")


def _lightgbm_header(data: bytes, name: str) -> dict:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise damaged("lightgbm", name, "it is not text") from None
    head = text.split("\nTree=", 1)[0]
    if not text.startswith("tree") or "end of trees" not in text:
        raise damaged("lightgbm", name, "it is cut short: the line 'end of trees' is missing")
    fields = dict(line.split("=", 1) for line in head.splitlines() if "=" in line)
    try:
        return {"features": int(fields["max_feature_idx"]) + 1, "classes": int(fields.get("num_class", 1)),
                "trees": text.count("\nTree=")}
    except (KeyError, ValueError) as exc:
        raise damaged("lightgbm", name, f"its header has no valid {exc}") from None


def _xgboost_header(data: bytes, name: str) -> dict:
    try:
        learner = json.loads(data)["learner"]
        params = learner["learner_model_param"]
        trees = learner["gradient_booster"].get("model", {}).get("gbtree_model_param", {}).get("num_trees", 0)
        return {"features": int(params["num_feature"]), "classes": int(params.get("num_class", 0)),
                "trees": int(trees)}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise damaged("xgboost", name, f"not an XGBoost JSON model: {' '.join(str(exc).split())[:200]}") from None
