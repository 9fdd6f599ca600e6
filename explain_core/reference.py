"""References and restricted features (SEV paper §3 and App. A).

The reference is the point every explanation moves towards or from: by default the mean of numeric
features and the mode of binary/categorical ones over the training rows of the opposite class.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .data import Dataset, FeatureGroup, IntakeError

STATISTICS = ("mean", "median")
POPULATIONS = ("opposite", "all")


@dataclass(frozen=True)
class Reference:
    """One value per raw feature column, and how it was obtained."""

    values: dict
    description: str
    overrides: dict = field(default_factory=dict)

    def as_frame(self, columns: Sequence[str]) -> pd.DataFrame:
        return pd.DataFrame({c: [self.values[c]] for c in columns})


def make_reference(dataset: Dataset, rows: Sequence[int] | None = None, *, statistic: str = "mean",
                   population: str = "opposite", explain_class: int = 1,
                   overrides: Mapping[str, object] | None = None) -> Reference:
    """Reference over ``rows`` (default: all rows; pass the training rows).

    ``population="opposite"`` uses only rows whose true class differs from ``explain_class`` (the
    negatives when explaining positives); ``"all"`` uses every row. Numeric groups take the mean or
    median, binary/categorical groups (and declared one-hot blocks) their mode. ``overrides`` sets
    custom values per column.
    """
    if statistic not in STATISTICS:
        raise IntakeError(f"Reference statistic must be one of {STATISTICS}, not {statistic!r}.")
    if population not in POPULATIONS:
        raise IntakeError(f"Reference population must be one of {POPULATIONS}, not {population!r}.")
    rows = np.arange(len(dataset.features)) if rows is None else np.asarray(rows)
    if population == "opposite":
        rows = _opposite_rows(dataset, rows, explain_class)
    frame = dataset.features.iloc[rows]
    values = {}
    for group in dataset.groups:
        values.update(_group_value(frame, group, statistic))
    overrides = dict(overrides or {})
    unknown = [c for c in overrides if c not in values]
    if unknown:
        raise IntakeError(f"Custom reference values for unknown columns: {', '.join(map(str, unknown))}.")
    values.update(overrides)
    opposite = population == "opposite" and dataset.task == "classification"
    who = f"rows of class {_class_name(dataset, 1 - explain_class)}" if opposite else "rows"
    text = f"{statistic} of numeric / mode of categorical features over {len(rows)} {who}"
    return Reference(values, text + (f"; custom: {', '.join(overrides)}" if overrides else ""), overrides)


def _opposite_rows(dataset: Dataset, rows: np.ndarray, explain_class: int) -> np.ndarray:
    if dataset.task == "regression":
        return rows
    opposite = rows[dataset.y[rows] != explain_class]
    if len(opposite) == 0:
        raise IntakeError("No rows of the opposite class to build a reference from; use population='all'.")
    return opposite


def _class_name(dataset: Dataset, label: int) -> str:
    if label == 1:
        return str(dataset.positive_class)
    others = [c for c in pd.unique(dataset.target) if c != dataset.positive_class]
    return str(others[0]) if others else "other"


def _group_value(frame: pd.DataFrame, group: FeatureGroup, statistic: str) -> dict:
    if len(group.columns) > 1:  # declared one-hot block: the most common row pattern
        pattern = frame[list(group.columns)].value_counts().idxmax()
        return dict(zip(group.columns, pattern))
    col = group.columns[0]
    values = frame[col].dropna()
    if values.empty:
        raise IntakeError(f"Column {col!r} has no values in the reference rows; set a custom reference value.")
    if group.kind == "numeric":
        return {col: float(values.mean() if statistic == "mean" else values.median())}
    return {col: values.mode().iloc[0]}


def check_restricted(dataset: Dataset, names: Sequence[str]) -> tuple[str, ...]:
    """Validate restricted feature groups (SEV®: groups that may not move); returns them in dataset order."""
    unknown = [n for n in names if n not in dataset.group_names]
    if unknown:
        raise IntakeError(f"Unknown restricted features: {', '.join(unknown)}; choose from {', '.join(dataset.group_names)}.")
    return tuple(n for n in dataset.group_names if n in set(names))
