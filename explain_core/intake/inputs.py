"""Matching a model's inputs to the dataset's columns.

A model names its inputs (``feature_names_in_``, an ONNX graph's inputs, a booster's feature names) or it only
counts them (a model fitted on a numpy array, a single-tensor ONNX graph). Names that differ from the dataset's
only by the sanitisation exporters apply (skl2onnx, LightGBM and XGBoost turn spaces, ``-``, ``.``, brackets …
into ``_``) match automatically through :class:`RenamedInputs`; unnamed inputs take the dataset's columns in
their order through :class:`OrderedInputs`, once the caller confirms that order (the counts must agree).
Either wrapper records the mapping (``mapping``: dataset column → model input) so it can be shown.
"""
from __future__ import annotations

import difflib
import re
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import IntakeError


def input_names(estimator) -> list[str] | None:
    """The names a model records for its inputs: scikit-learn's ``feature_names_in_`` (also XGBoost, LightGBM and
    the wrappers here), or CatBoost's ``feature_names_``; None when it records none."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is None and type(estimator).__module__.startswith("catboost"):
        names = getattr(estimator, "feature_names_", None)
    return None if names is None else [str(n) for n in names]


def sanitise(name) -> str:
    """What exporters make of a column name: every character other than letters, digits and ``_`` becomes ``_``."""
    return re.sub(r"[^0-9A-Za-z_]", "_", str(name))


def closest(name: str, options: Sequence[str]) -> list[str]:
    """The dataset's names closest to a missing column's (similar spelling, or one starting with the other)."""
    options = [str(o) for o in options]
    key = sanitise(name).lower()
    prefixed = [o for o in options
                if key and (sanitise(o).lower().startswith(key) or key.startswith(sanitise(o).lower()))]
    return list(dict.fromkeys(prefixed + difflib.get_close_matches(str(name), options, n=3, cutoff=0.6)))[:3]


def sanitised_mapping(model_names: Sequence[str], columns: Sequence[str]) -> dict[str, str] | None:
    """Dataset column → model input when every model input is a dataset column after :func:`sanitise`, one to one."""
    by_clean: dict[str, list[str]] = {}
    for column in columns:
        by_clean.setdefault(sanitise(column), []).append(column)
    mapping = {}
    for name in model_names:
        found = [c for c in by_clean.get(sanitise(name), []) if c not in mapping]
        if len(found) != 1 and str(name) not in columns:
            return None
        mapping[str(name) if str(name) in columns else found[0]] = str(name)
    return mapping


class _Wrapped:
    """A model whose inputs are prepared by :meth:`prepare`; everything else is the inner model's."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        if name in ("inner", "__setstate__"):
            raise AttributeError(name)
        value = getattr(self.inner, name)
        if name in ("predict", "predict_proba", "decision_function"):
            return lambda X: value(self.prepare(X))
        return value


class RenamedInputs(_Wrapped):
    """The dataset's columns renamed to the model's input names (``mapping``: dataset column → model name)."""

    def __init__(self, inner, mapping: dict[str, str]):
        super().__init__(inner)
        self.mapping = dict(mapping)
        self.feature_names_in_ = np.array(list(mapping), dtype=object)

    def prepare(self, X: pd.DataFrame) -> pd.DataFrame:
        return X[list(self.mapping)].rename(columns=self.mapping)


class OrderedInputs(_Wrapped):
    """Unnamed inputs fed the dataset's ``columns`` in order, as one numeric matrix (``mapping``: column →
    position)."""

    def __init__(self, inner, columns: Sequence[str]):
        super().__init__(inner)
        self.mapping = {c: f"input {i}" for i, c in enumerate(columns)}
        self.feature_names_in_ = np.array(list(columns), dtype=object)

    def prepare(self, X: pd.DataFrame) -> np.ndarray:
        return X[list(self.feature_names_in_)].to_numpy(dtype=float)


def unwrap(estimator) -> tuple[tuple, object]:
    """(The wrappers around a model, outermost first, as plain data; the model inside them)."""
    layers = []
    while isinstance(estimator, (RenamedInputs, OrderedInputs)):
        kind = "renamed" if isinstance(estimator, RenamedInputs) else "ordered"
        layers.append((kind, estimator.mapping if kind == "renamed" else list(estimator.feature_names_in_)))
        estimator = estimator.inner
    return tuple(layers), estimator


def rewrap(estimator, layers) -> object:
    """:func:`unwrap`'s layers put back around ``estimator`` (in a model's worker, around the real model)."""
    for kind, value in reversed(tuple(layers)):
        estimator = RenamedInputs(estimator, value) if kind == "renamed" else OrderedInputs(estimator, value)
    return estimator


def by_position(estimator, frame: pd.DataFrame) -> OrderedInputs:
    """Unnamed model inputs mapped to the dataset's columns in order (the caller has confirmed the order); the
    counts must agree and every column must be numeric."""
    wanted = getattr(estimator, "n_features_in_", None)
    columns = list(frame.columns)
    if wanted is not None and wanted != len(columns):
        raise IntakeError(f"The model expects {wanted} unnamed inputs but the dataset has {len(columns)} feature "
                          "columns, so they cannot be matched in order; upload the dataset the model was trained "
                          "on, or a model that records its column names.")
    text = [str(c) for c in columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if text:
        raise IntakeError(f"The model takes one numeric matrix, but {', '.join(text[:5])} hold text; encode them "
                          "as numbers (as the model was trained), or upload a Pipeline that includes its encoding.")
    return OrderedInputs(estimator, columns)
