"""References and restricted features (SEV paper §3 and App. A).

The reference is the point every explanation moves towards or from: by default the mean of numeric
features and the mode of binary/categorical ones over the training rows of the opposite class.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import IntakeError, check_choice
from .intake.data import Dataset, find_value, show
from .intake.layout import FeatureGroup
from .vocabulary import format_number

STATISTICS = ("mean", "median", "nearest_row")
STATISTIC_WORDS = {"mean": "mean", "median": "median", "nearest_row": "a real row (nearest to the median)"}
POPULATIONS = ("opposite", "all")


@dataclass(frozen=True)
class Reference:
    """One value per raw feature column, and how it was obtained.

    Built by :func:`make_reference`.

    Parameters
    ----------
    values : dict
        Raw column → the reference's value.
    description : str
        How the values were obtained, in words.
    overrides : dict
        The columns set by hand, with their values.
    statistic : str
        ``"mean"``, ``"median"`` or ``"nearest_row"``.
    population : str
        ``"opposite"`` or ``"all"``.
    explain_class : int
        The class whose rows it explains (1 = positive).
    threshold : float, optional
        A regression's threshold the opposite side was taken from.
    rounded : bool
        Whether whole-valued numeric features were rounded to a whole value.
    """

    values: dict
    description: str
    overrides: dict = field(default_factory=dict)
    statistic: str = "mean"
    population: str = "all"
    explain_class: int = 1
    threshold: float | None = None  # regression: the model's threshold the opposite side is taken from
    rounded: bool = False  # numeric features that only take whole values rounded to a whole value

    def as_frame(self, columns: Sequence[str]) -> pd.DataFrame:
        """The reference as a one-row frame of ``columns``.

        Parameters
        ----------
        columns : sequence of str
            The columns, in order.

        Returns
        -------
        pandas.DataFrame
            One row.
        """
        return pd.DataFrame({c: [self.values[c]] for c in columns})


def make_reference(dataset: Dataset, rows: Sequence[int] | None = None, *, statistic: str = "mean",
                   population: str = "opposite", explain_class: int = 1, threshold: float | None = None,
                   overrides: Mapping[str, object] | None = None, rounded: bool = True) -> Reference:
    """Reference over ``rows`` (default: all rows; pass the training rows).

    Realistic references: ``statistic="nearest_row"`` takes the real row of the population nearest to its
    median profile (numeric features scaled by their interquartile range, a categorical mismatch counts 1), so
    every value is one a real case has. ``rounded`` (the default): a numeric feature whose values over ``rows``
    (the training rows) are all whole numbers — a count, an age in years — takes the whole number nearest to its
    mean or median (a half rounds up), so "1.98 prior offences" reads "2" and an explanation moves the row to a
    value a real person can have; ``rounded=False`` keeps the exact statistic.

    ``population="opposite"`` uses only rows whose true class differs from ``explain_class`` (the
    negatives when explaining positives) — for a regression, whose target lies on the other side of the
    model's ``threshold`` (below it when explaining rows at or above it; without a threshold every row);
    ``"all"`` uses every row. Numeric groups take the mean or median, binary/categorical groups their mode,
    a declared one-hot block its most common row pattern. ``overrides`` sets custom values per column, or per
    one-hot group by naming the column that is 1.

    Parameters
    ----------
    dataset : Dataset
        The data.
    rows : sequence of int, optional
        Row positions the statistic is taken over.
    statistic : str
        ``"mean"``, ``"median"`` or ``"nearest_row"``.
    population : str
        ``"opposite"`` or ``"all"``.
    explain_class : int
        1 (explaining positives) or 0.
    threshold : float, optional
        A regression's decision threshold.
    overrides : mapping of str to object, optional
        Custom values per column.
    rounded : bool
        Round whole-valued numeric features.

    Returns
    -------
    Reference
        One value per raw column, with its description.

    Raises
    ------
    IntakeError
        When ``statistic``, ``population``, ``explain_class`` or an override is not valid, or the population is empty.
    """
    check_choice(statistic, STATISTICS, "reference statistic")
    check_choice(population, POPULATIONS, "reference population")
    if explain_class not in (0, 1):
        raise IntakeError(f"explain_class must be 1 (the positive class) or 0, not {explain_class!r}.")
    rows = np.arange(len(dataset.features)) if rows is None else np.asarray(rows)
    whole_columns = [g.columns[0] for g in dataset.groups if g.kind == "numeric" and len(g.columns) == 1
             and _whole(dataset.features[g.columns[0]].iloc[rows])] if rounded and statistic != "nearest_row" else []
    regression = dataset.task == "regression"
    opposite = population == "opposite" and (not regression or threshold is not None)
    if opposite:
        rows = _opposite_rows(dataset, rows, explain_class, threshold)
    frame = dataset.features.iloc[rows]
    values = {}
    for group in dataset.groups:
        values.update(_group_value(frame, group, "median" if statistic == "nearest_row" else statistic))
    picked = None
    if statistic == "nearest_row":
        picked = _nearest_row(dataset, frame, values)
        values = {c: _python(frame.iloc[picked][c]) for c in dataset.columns}
    else:
        values.update({c: float(np.floor(values[c] + 0.5)) for c in whole_columns})
    overrides = dict(overrides or {})
    for key, value in overrides.items():
        values.update(custom_value(dataset, key, value))
    if not opposite:
        who = "rows"
    elif regression:
        who = f"rows with {dataset.target.name} {'<' if explain_class == 1 else '≥'} {format_number(threshold)}"
    else:
        who = f"rows of class {dataset.class_value(1 - explain_class)}"
    if picked is not None:
        text = (f"real row {int(frame.index[picked])}: of {len(rows)} {who}, the one nearest to their median "
                "profile")
    else:
        whole = ", whole-valued features rounded" if rounded else ""
        text = f"{statistic} of numeric / mode of categorical features over {len(rows):,} {who}{whole}"
    return Reference(values, text + (f"; custom: {', '.join(map(str, overrides))}" if overrides else ""), overrides,
                     statistic, population if opposite else "all", explain_class,
                     threshold if opposite and regression else None, rounded and picked is None)


def _whole(values: pd.Series) -> bool:
    """A numeric column whose values are all whole numbers (a count, an age in years)."""
    values = values.dropna()
    return bool(len(values)) and bool(np.all(np.mod(values.to_numpy(dtype=float), 1) == 0))


def _python(value):
    return value.item() if isinstance(value, np.generic) else value


def _nearest_row(dataset: Dataset, frame: pd.DataFrame, centre: dict) -> int:
    """Position in ``frame`` of the row nearest to ``centre``: numeric distance scaled by the interquartile range
    (the standard deviation when that is 0), 1 per mismatching categorical value or one-hot pattern; ties: first."""
    distance = np.zeros(len(frame))
    for group in dataset.groups:
        block = frame[list(group.columns)]
        if group.kind == "numeric" and len(group.columns) == 1:
            x = block.iloc[:, 0].to_numpy(dtype=float)
            q1, q3 = np.nanpercentile(x, [25, 75])
            scale = (q3 - q1) or float(np.nanstd(x)) or 1.0
            distance += np.nan_to_num(np.abs(x - float(centre[group.columns[0]])) / scale, nan=1.0)
        else:
            want = pd.Series({c: centre[c] for c in group.columns})
            distance += (block != want.to_numpy()).any(axis=1).to_numpy(dtype=float)
    return int(np.argmin(distance))


def _opposite_rows(dataset: Dataset, rows: np.ndarray, explain_class: int, threshold: float | None) -> np.ndarray:
    labels = (dataset.y[rows] >= threshold).astype(int) if dataset.task == "regression" else dataset.y[rows]
    opposite = rows[labels != explain_class]
    if len(opposite) == 0:
        side = "class" if dataset.task == "classification" else "side of the threshold"
        raise IntakeError(f"No rows of the opposite {side} to build a reference from; use population='all'.")
    return opposite


def _group_value(frame: pd.DataFrame, group: FeatureGroup, statistic: str) -> dict:
    if len(group.columns) > 1:  # declared one-hot block: the most common row pattern (ties: earliest column 1)
        counts = frame[list(group.columns)].value_counts()
        return dict(zip(group.columns, counts[counts == counts.max()].sort_index(ascending=False).index[0]))
    col = group.columns[0]
    values = frame[col].dropna()
    if values.empty:
        raise IntakeError(f"Column {col!r} has no values in the reference rows; set a custom reference value.")
    if group.kind == "numeric":
        return {col: float(values.mean() if statistic == "mean" else values.median())}
    return {col: values.mode().iloc[0]}


def custom_value(dataset: Dataset, key: str, value) -> dict:
    """Validate one value typed for a feature (a custom reference value, a what-if edit): a number for a numeric
    column, an occurring value otherwise; ``{column: value}`` (a one-hot group named by its column that is 1: every
    column of the group)."""
    group = next((g for g in dataset.groups if key == g.name or key in g.columns), None)
    if group is None:
        raise IntakeError(f"Custom reference value for unknown feature {key!r}; "
                          f"choose from {', '.join(dataset.group_names)}.")
    if len(group.columns) > 1 and key == group.name:  # one-hot block: name the column that is 1
        if value not in group.columns:
            raise IntakeError(f"Custom reference for {key!r} must name one of its columns: {', '.join(group.columns)}.")
        return {c: int(c == value) for c in group.columns}
    if group.kind == "numeric":
        try:
            return {key: float(value)}
        except (TypeError, ValueError):
            raise IntakeError(f"Custom reference for numeric feature {key!r} must be a number, "
                              f"not {value!r}.") from None
    options = list(pd.unique(dataset.features[key].dropna()))
    match = find_value(value, options)
    if match is None:
        more = ", …" if len(options) > 10 else ""
        raise IntakeError(f"Custom reference {value!r} for {key!r} does not occur in the data; "
                          f"choose one of: {show(options[:10])}{more}.")
    return {key: match}


def check_restricted(dataset: Dataset, names: Sequence[str]) -> tuple[str, ...]:
    """Validate restricted feature groups (SEV®: groups that may not move).

    Parameters
    ----------
    dataset : Dataset
        The dataset whose groups are named.
    names : sequence of str
        Group names (a one-hot block by its name).

    Returns
    -------
    tuple of str
        The names, in dataset order.

    Raises
    ------
    IntakeError
        When a name is not a feature group, or every group is restricted.
    """
    unknown = [n for n in names if n not in dataset.group_names]
    if unknown:
        raise IntakeError(f"Unknown restricted features: {', '.join(map(str, unknown))}; "
                          f"choose from {', '.join(dataset.group_names)}.")
    restricted = tuple(n for n in dataset.group_names if n in set(names))
    if len(restricted) == len(dataset.groups):
        raise IntakeError("Every feature is restricted, so nothing may move and no explanation exists; "
                          "leave at least one feature unrestricted.")
    return restricted
