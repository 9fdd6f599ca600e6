"""Tracing a fitted preprocessing step's output columns back to its inputs: which feature group each encoded column
of a ColumnTransformer comes from (:func:`encoded_column_groups`), and which input column is behind each output of a
column-wise step (:func:`column_sources`). Only passthrough and column-wise steps (:data:`COLUMNWISE_STEPS`) are
traced; anything else answers None.

The sandboxed worker traces its model's encoder here too, so this module imports no model wrapper.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (FunctionTransformer, KBinsDiscretizer, MaxAbsScaler, MinMaxScaler, OneHotEncoder,
                                   OrdinalEncoder, RobustScaler, StandardScaler)

from .layout import FeatureGroup
COLUMNWISE_STEPS = (StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler, SimpleImputer, OrdinalEncoder,
                    KBinsDiscretizer, OneHotEncoder)


def encoded_column_groups(encoder, groups: Sequence[FeatureGroup]) -> np.ndarray | None:
    """Group index of each output column of a fitted ColumnTransformer, or of a column-wise step (a scaler, an
    imputer, a Pipeline of them: :func:`column_sources`) fitted on named columns; None where it cannot be traced."""
    group_of = {c: i for i, g in enumerate(groups) for c in g.columns}
    if not isinstance(encoder, ColumnTransformer):
        names = getattr(encoder, "feature_names_in_", None)
        sources = column_sources(encoder, [str(n) for n in names]) if names is not None else None
        if sources is None or not {str(names[s]) for s in sources} <= set(group_of):
            return None
        return np.array([group_of[str(names[s])] for s in sources], dtype=int)
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


def column_sources(step, names: Sequence[str]) -> list[int] | None:
    """Position in ``names`` (the step's input columns) of the one input behind each output column of a fitted
    preprocessing ``step`` (a ColumnTransformer, a Pipeline of column-wise steps, or one such step); None where an
    output column cannot be traced to a single input."""
    if isinstance(step, ColumnTransformer):
        traced = encoded_column_groups(step, [FeatureGroup(str(n), (str(n),), "numeric") for n in names])
        return None if traced is None else [int(g) for g in traced]
    position = {str(n): i for i, n in enumerate(names)}
    sources = _trace(step, [str(n) for n in names])
    if sources is None or not set(map(str, sources)) <= set(position):
        return None
    return [position[str(s)] for s in sources]


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
