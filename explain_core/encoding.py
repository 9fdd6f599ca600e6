"""The model as encoder + estimator: the dataset's default encoding, and tracing which feature group each encoded
column comes from, so hypercube vertices can be mixed as encoded arrays (see :class:`~explain_core.cube.VertexScorer`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (FunctionTransformer, KBinsDiscretizer, MaxAbsScaler, MinMaxScaler, OneHotEncoder,
                                   OrdinalEncoder, RobustScaler, StandardScaler)

from .data import Dataset, FeatureGroup
from .models import ModelAdapter

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


def make_encoder(dataset: Dataset) -> ColumnTransformer:
    """The demo models' encoding (SEV paper App. A). Numeric: impute median + standardise; binary/categorical: impute mode + one-hot (one dummy for binary)."""
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

