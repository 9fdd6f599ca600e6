"""Cohorts' rows: named sets of rows the analyst defines by filters on the data card's features (``age < 25``,
``sex = Female``, a one-hot block read as its active column) or on the model's outcome (misclassified, predicted
class, true class); :func:`parse_filter` reads a filter typed as text. The comparison of cohorts is
:mod:`explain_core.inspection.cohorts`.

"Wrong" for a classifier is a misclassified row; for a regression it is a row whose |residual| is above the
:data:`ERROR_QUANTILE` quantile of the test rows' |residuals| (the top fifth of errors), and its "class" is the side
of the model's threshold, 1 at or above it (as every explanation of a regression reads it).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import IntakeError, check_choice
from ..results import ValueEquality
from ..setup import Setup
from ..vocabulary import MISSING, format_number

MISCLASSIFIED, PREDICTED, TRUE_CLASS = "@misclassified", "@predicted", "@true"  # the model-based filters
MODEL_FILTERS = {MISCLASSIFIED: "misclassified", PREDICTED: "predicted", TRUE_CLASS: "true class"}
NUMERIC_OPS = ("<", "<=", ">", ">=", "=", "!=", "between")
LEVEL_OPS = ("=", "!=", "in", "not in")
OP_WORDS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "=": "=", "!=": "≠", "in": "in", "not in": "not in"}
ERROR_QUANTILE = 0.8


@dataclass(frozen=True)
class Filter:
    """One condition on a row: ``feature`` (a feature group, or one of :data:`MODEL_FILTERS`), ``op`` and ``value``
    (a number; a pair (low, high) for ``between``, both ends included; a level or a tuple of levels for ``in``).
    ``missing``: a numeric comparison also holds where the value is missing (else a missing value never matches).

    Parameters
    ----------
    feature : str
        A feature group or a model filter.
    op : str
        ``<``, ``<=``, ``>``, ``>=``, ``=``, ``!=``, ``between`` (numeric); ``=``, ``!=``, ``in``, ``not in`` (levels).
    value : object
        The number, pair or level(s).
    missing : bool
        Whether a missing value satisfies a numeric comparison.
    """

    feature: str
    op: str
    value: object = None
    missing: bool = False

    def __post_init__(self):
        if isinstance(self.value, (list, np.ndarray)):
            object.__setattr__(self, "value", tuple(self.value))

    def check(self, dataset) -> "Filter":
        """This filter when it can be read on ``dataset``, else an :class:`IntakeError` saying what to change.

        Parameters
        ----------
        dataset : Dataset
            The data.

        Returns
        -------
        Filter
            This filter.

        Raises
        ------
        IntakeError
            When the feature, the comparison or the value does not fit the data.
        """
        if self.feature in MODEL_FILTERS:
            _check_model_filter(self)
            return self
        if self.feature not in dataset.group_names:
            raise IntakeError(f"A cohort filter names {self.feature!r}, which is not a feature of {dataset.name}; "
                              f"choose one of: {', '.join(dataset.group_names)}, or misclassified / predicted / "
                              "true class.")
        if dataset.group(self.feature).kind == "numeric":
            check_choice(self.op, NUMERIC_OPS, f"comparison for the numeric feature {self.feature}")
            bounds = self.value if self.op == "between" else (self.value,)
            if self.op == "between" and not (isinstance(bounds, tuple) and len(bounds) == 2):
                raise IntakeError(f"“{self.feature} between” needs two numbers (low, high), not {self.value!r}.")
            if not all(_is_number(v) for v in bounds) or (self.op == "between" and bounds[0] > bounds[1]):
                raise IntakeError(f"“{self.feature} {self.op}” needs a number (between: low ≤ high), not "
                                  f"{self.value!r}.")
        else:
            check_choice(self.op, LEVEL_OPS, f"comparison for the feature {self.feature}")
            if self.op in ("in", "not in") and not _levels(self):
                raise IntakeError(f"“{self.feature} {self.op}” needs at least one value.")
            levels = set(level_strings(pd.unique(dataset.group(self.feature).values_in(dataset.features))))
            unknown = [v for v in _levels(self) if v not in levels]
            if unknown:
                raise IntakeError(f"{self.feature} has no value {', '.join(unknown)}; its values are: "
                                  f"{', '.join(sorted(levels))}.")
        return self

    def mask(self, setup: Setup, rows: np.ndarray, outcome: "Outcome | None" = None) -> np.ndarray:
        """Which of ``rows`` (dataset positions) the filter selects.

        Parameters
        ----------
        setup : Setup
            The data, model and reference.
        rows : numpy.ndarray
            Row positions.
        outcome : Outcome, optional
            The model's labels of ``rows``, when known.

        Returns
        -------
        numpy.ndarray
            One boolean per row.

        Raises
        ------
        IntakeError
            When the feature is not a group of the data.
        """
        if self.feature in MODEL_FILTERS:
            outcome = outcome or model_outcome(setup, rows)
            values = {MISCLASSIFIED: outcome.wrong, PREDICTED: outcome.predicted, TRUE_CLASS: outcome.true}
            return values[self.feature] == int(self.value)
        group = setup.dataset.group(self.feature)
        raw = group.values_in(setup.dataset.features.iloc[rows])
        if group.kind != "numeric":
            chosen = np.isin(level_strings(raw), _levels(self))
            return ~chosen if self.op in ("!=", "not in") else chosen
        x = pd.to_numeric(pd.Series(raw), errors="coerce").to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            lo, hi = self.value if self.op == "between" else (self.value, self.value)
            found = {"<": x < lo, "<=": x <= lo, ">": x > lo, ">=": x >= lo, "=": x == lo, "!=": x != lo,
                     "between": (x >= lo) & (x <= hi)}[self.op]
        return found & ~np.isnan(x) | (np.isnan(x) & self.missing)

    def text(self, setup: Setup) -> str:
        """The filter in words: ``age < 25``, ``sex = Female``, ``misclassified``, ``predicted recidivated``.

        Parameters
        ----------
        setup : Setup
            The data, model and reference.

        Returns
        -------
        str
            The words.
        """
        if self.feature == MISCLASSIFIED:
            return "misclassified" if self.value else "correctly classified"
        if self.feature in (PREDICTED, TRUE_CLASS):
            word = "predicted" if self.feature == PREDICTED else "truly"
            return f"{word} {setup.class_names[int(self.value)]}"
        missing = " or missing" if self.missing else ""
        if self.op == "between":
            return f"{self.feature} between {format_number(self.value[0])} and {format_number(self.value[1])}"
        if self.op in ("in", "not in"):
            return f"{self.feature} {self.op} {{{', '.join(_levels(self))}}}"
        value = format_number(self.value) if _is_number(self.value) else str(self.value)
        return f"{self.feature} {OP_WORDS[self.op]} {value}{missing}"


TEXT_OPS = {"≤": "<=", "≥": ">=", "≠": "!=", "==": "="}
_COMPARISON = re.compile(r"^(?P<feature>.+?)\s*(?P<op><=|>=|!=|==|≤|≥|≠|<|>|=)\s*(?P<value>.+)$")
_BETWEEN = re.compile(r"^(?P<feature>.+?)\s+between\s+(?P<low>\S+)\s+and\s+(?P<high>\S+)$", re.I)
_MEMBERSHIP = re.compile(r"^(?P<feature>.+?)\s+(?P<op>not in|in)\s+(?P<values>.+)$", re.I)


def parse_filter(text: str, dataset) -> Filter:
    """A filter from text: ``age < 25`` (also ≤ ≥ ≠), ``age between 18 and 25``, ``sex = Female``,
    ``race in White, Black``, ``misclassified`` / ``correctly classified``, ``predicted 1`` / ``true class 0``
    (1 = the positive class); checked on ``dataset`` (an :class:`IntakeError` says what to change)."""
    words = " ".join(str(text).split())
    lowered = words.lower()
    if lowered in ("misclassified", "correctly classified"):
        return Filter(MISCLASSIFIED, "=", int(lowered == "misclassified"))
    for name, feature in (("predicted", PREDICTED), ("true class", TRUE_CLASS)):
        if lowered in (f"{name} 1", f"{name} 0"):
            return Filter(feature, "=", int(lowered[-1]))
    found = _BETWEEN.match(words) or _COMPARISON.match(words) or _MEMBERSHIP.match(words)
    if found is None:
        raise IntakeError(f"“{words}” is not a filter; write e.g. “age < 25”, “age between 18 and 25”, "
                          "“sex = Female”, “race in White, Black” or “misclassified”.")
    parts = found.groupdict()
    feature = parts["feature"].strip()
    numeric = feature in dataset.group_names and dataset.group(feature).kind == "numeric"
    if "low" in parts:
        return Filter(feature, "between", (_number(parts["low"]), _number(parts["high"]))).check(dataset)
    if "values" in parts:
        values = tuple(_level(dataset, feature, v) for v in parts["values"].split(","))
        return Filter(feature, parts["op"].lower(), values).check(dataset)
    value = _number(parts["value"]) if numeric else _level(dataset, feature, parts["value"])
    return Filter(feature, TEXT_OPS.get(parts["op"], parts["op"]), value).check(dataset)


def _level(dataset, feature: str, text: str) -> str:
    """The feature's level that ``text`` names, read without regard to case (``female`` → ``Female``) when exactly
    one does; else ``text`` as written (the check names the levels)."""
    text = text.strip()
    if feature not in dataset.group_names:
        return text
    matches = [v for v in set(level_strings(pd.unique(dataset.group(feature).values_in(dataset.features))))
               if v.casefold() == text.casefold()]
    return matches[0] if len(matches) == 1 else text


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return text  # the check says a number is needed


def _check_model_filter(f: Filter) -> None:
    if f.op != "=" or not isinstance(f.value, (bool, int, np.integer)) or f.value not in (0, 1):
        raise IntakeError(f"The filter “{MODEL_FILTERS[f.feature]}” takes “= 1” or “= 0” (yes/no; for a class: "
                          f"1 = the positive class), not {f.op} {f.value!r}.")


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and np.isfinite(value)


def _levels(f: Filter) -> list[str]:
    values = f.value if isinstance(f.value, tuple) else (f.value,)
    return [MISSING if v is None else str(v) for v in values]


def level_strings(values) -> np.ndarray:
    """A categorical group's values as the strings filters compare (a missing value is ``"missing"``)."""
    series = pd.Series(values, dtype=object)
    return series.where(series.notna(), MISSING).astype(str).to_numpy(dtype=object)


def levels_of(dataset, feature: str) -> list[str]:
    """The values a categorical, binary or one-hot group takes in the data, as strings, in order of frequency."""
    strings = level_strings(dataset.group(feature).values_in(dataset.features))
    return list(pd.Series(strings).value_counts(sort=True).index)


@dataclass(frozen=True)
class Cohort:
    """A named set of rows: those every filter selects (no filter: every row).

    Parameters
    ----------
    name : str
        The cohort's name.
    filters : tuple of Filter
        Its conditions, all of which hold.
    """

    name: str
    filters: tuple[Filter, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "filters", tuple(self.filters))
        if not str(self.name).strip():
            raise IntakeError("A cohort needs a name.")

    def check(self, dataset) -> "Cohort":
        """This cohort when every filter can be read on ``dataset``.

        Parameters
        ----------
        dataset : Dataset
            As for :meth:`Filter.check`.

        Returns
        -------
        Cohort
            This cohort.

        Raises
        ------
        IntakeError
            As :meth:`Filter.check`.
        """
        for f in self.filters:
            f.check(dataset)
        return self

    def mask(self, setup: Setup, rows: Sequence[int]) -> np.ndarray:
        """Which of ``rows`` (dataset positions) every filter selects.

        Parameters
        ----------
        setup : Setup
            The data, model and reference.
        rows : sequence of int
            Row positions.

        Returns
        -------
        numpy.ndarray
            One boolean per row.
        """
        rows = np.asarray(rows, dtype=int)
        self.check(setup.dataset)
        outcome = model_outcome(setup, rows) if any(f.feature in MODEL_FILTERS for f in self.filters) else None
        found = np.ones(len(rows), dtype=bool)
        for f in self.filters:
            found &= f.mask(setup, rows, outcome)
        return found

    def rows(self, setup: Setup, rows: Sequence[int] | None = None) -> np.ndarray:
        """The cohort's rows among ``rows`` (default: the test rows, on which every cohort metric is computed).

        Parameters
        ----------
        setup : Setup
            The data, model and reference.
        rows : sequence of int, optional
            Row positions.

        Returns
        -------
        numpy.ndarray
            The cohort's row positions.
        """
        rows = np.asarray(setup.test_rows if rows is None else rows, dtype=int)
        return rows[self.mask(setup, rows)]

    def text(self, setup: Setup) -> str:
        """The cohort's filters in words, joined by "and" ("every row" without one).

        Parameters
        ----------
        setup
            As for :meth:`Filter.text`.

        Returns
        -------
        str
            The words.
        """
        return " and ".join(f.text(setup) for f in self.filters) or "every row"


def fitting(cohorts: Sequence[Cohort], dataset) -> tuple[Cohort, ...]:
    """The cohorts whose filters can be read on ``dataset`` (a session keeps cohorts made on other data too)."""
    found = []
    for cohort in cohorts:
        try:
            found.append(cohort.check(dataset))
        except IntakeError:
            continue
    return tuple(found)


@dataclass(frozen=True, eq=False)
class Outcome(ValueEquality):
    """The model on some rows: score, predicted and true class (0/1), and whether it is wrong (module docstring)."""

    rows: np.ndarray
    score: np.ndarray
    predicted: np.ndarray
    true: np.ndarray
    wrong: np.ndarray


def model_outcome(setup: Setup, rows: Sequence[int]) -> Outcome:
    """Scores, classes and errors of ``rows`` (for a regression: the error cut-off read on the test rows)."""
    rows = np.asarray(rows, dtype=int)
    data, model = setup.dataset, setup.model
    score = model.score(data.features.iloc[rows]) if len(rows) else np.zeros(0)
    predicted = model.labels_of(score).astype(int)
    if data.task == "classification":
        true = data.y[rows]
        return Outcome(rows, score, predicted, true, (predicted != true).astype(int))
    y = data.y
    residual = np.abs(y[rows] - score)
    cut = np.quantile(np.abs(y[setup.test_rows] - model.score(data.features.iloc[setup.test_rows])), ERROR_QUANTILE)
    return Outcome(rows, score, predicted, model.labels_of(y[rows]).astype(int), (residual > cut).astype(int))


def error_words(setup: Setup) -> str:
    """What "wrong" means for this setup's model (the module docstring), for pages and reports."""
    if setup.dataset.task == "classification":
        return "misclassified (predicted class ≠ true class)"
    return (f"an error above the {ERROR_QUANTILE:.0%} quantile of the test rows' absolute errors "
            "(the largest fifth)")
