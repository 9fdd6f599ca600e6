"""Datasets: a typed :class:`Dataset` with its target, task, feature kinds and feature groups, checked and built by
:func:`make_dataset`.

The feature groups and their layout are :mod:`explain_core.intake.layout`; reading files is
:mod:`explain_core.intake.tables`; the bundled demos are :mod:`explain_core.intake.demos`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from ..errors import IntakeError, check_choice
from ..vocabulary import count_noun
from .layout import KINDS, FeatureGroup, GroupLayout, TableChoices

TASKS = ("classification", "regression")


@dataclass
class Dataset:
    """A feature table with its target, task, positive class, feature kinds and feature groups.

    Built by :func:`make_dataset` or :func:`load_demo`, which check what they are given.

    Parameters
    ----------
    name : str
        The dataset's name (a bundled demo's, or ``"upload"``).
    features : pandas.DataFrame
        The feature columns, one row per case.
    target : pandas.Series
        The target, aligned with ``features``.
    task : str
        ``"classification"`` or ``"regression"``.
    positive_class : object, optional
        The class explained as positive (classification only).
    groups : tuple of FeatureGroup
        The feature groups, each column in exactly one.
    card : dict
        The data card (descriptions, kinds, advice) of a bundled dataset; empty for an upload.
    holdout : numpy.ndarray, optional
        Sorted positions of the rows marked as not used to train the model.
    """

    name: str
    features: pd.DataFrame
    target: pd.Series
    task: str
    positive_class: object = None
    groups: tuple[FeatureGroup, ...] = ()
    card: dict = field(default_factory=dict)
    holdout: np.ndarray | None = field(default=None, repr=False)  # rows marked as not used in training (sorted)

    @cached_property
    def layout(self) -> GroupLayout:
        return GroupLayout(tuple(self.groups), self)

    def __getstate__(self) -> dict:
        """Pickled without the cached layout: a copy rebuilds its own, pointing at itself (a pickled layout drops
        its dataset, :meth:`GroupLayout.__reduce__`)."""
        return {k: v for k, v in self.__dict__.items() if k != "layout"}

    @property
    def group_names(self) -> list[str]:
        return list(self.layout.names)

    @property
    def columns(self) -> list[str]:
        return list(self.features.columns)

    def group(self, name: str) -> FeatureGroup:
        """The feature group named ``name`` (a one-hot block by its name).

        Parameters
        ----------
        name : str
            The group's name.

        Returns
        -------
        FeatureGroup
            The group.

        Raises
        ------
        IntakeError
            When no group has that name (the message lists them).
        """
        for g in self.groups:
            if g.name == name:
                return g
        raise IntakeError(f"Unknown feature group {name!r}; known groups: {', '.join(self.group_names)}.")

    def kind_of(self, column: str) -> str:
        """The kind of the group that holds ``column``.

        Parameters
        ----------
        column : str
            A feature column.

        Returns
        -------
        str
            ``"numeric"``, ``"categorical"`` or ``"binary"``.
        """
        return next(g.kind for g in self.groups if column in g.columns)

    @property
    def y(self) -> np.ndarray:
        """Binary 0/1 target (1 = positive class) for classification, float target for regression."""
        if self.task == "classification":
            return (self.target == self.positive_class).to_numpy().astype(int)
        return self.target.to_numpy(dtype=float)

    @cached_property
    def content_hash(self) -> str:
        """A hash of the feature values and the target (what a model trained on this data depends on)."""
        digest = hashlib.sha1(pd.util.hash_pandas_object(self.features, index=False).to_numpy().tobytes())
        digest.update(np.ascontiguousarray(self.y).tobytes())
        return digest.hexdigest()[:10]

    @cached_property
    def key(self) -> str:
        """The content and the configuration (name, task, positive class, groups and kinds): models depend on all."""
        text = json.dumps([self.content_hash, self.name, self.task, str(self.positive_class),
                           [(g.name, list(map(str, g.columns)), g.kind) for g in self.groups],
                           None if self.holdout is None else hashlib.sha1(self.holdout.tobytes()).hexdigest()])
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    def split(self, seed: int = 0, test_size: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
        """Row indices of an 80/20 (default) train/test split, stratified on the class for classification; the
        rows marked as held out (``holdout``) are the test rows when the analyst marked them.

        Parameters
        ----------
        seed : int
            The split's seed.
        test_size : float
            The test share.

        Returns
        -------
        tuple of numpy.ndarray
            The sorted train and test row positions.
        """
        idx = np.arange(len(self.features))
        if self.holdout is not None:
            return np.setdiff1d(idx, self.holdout), np.asarray(self.holdout)
        strata = self.y if self.task == "classification" else None
        check_trainable(self, test_size)
        train, test = train_test_split(idx, test_size=test_size, random_state=seed, stratify=strata)
        return np.sort(train), np.sort(test)

    def class_value(self, label: int):
        """The target value of label 1 (the positive class) or 0 (the other class, or "not <positive>").

        Parameters
        ----------
        label : int
            1 or 0.

        Returns
        -------
        object
            The class's target value, or ``"not <positive>"`` for several other classes.
        """
        if label == 1:
            return self.positive_class
        others = [c for c in pd.unique(self.target) if c != self.positive_class]
        return others[0] if len(others) == 1 else f"not {self.positive_class}"

    def class_name(self, label: int, short: bool = False) -> str:
        """Label 1 / 0 in words: the data card's label of that class ("did not recidivate within two years") when
        the card describes it, else ``<target> = <value>``; ``short``: the card's label without its note in
        brackets ("recidivated" for "recidivated (new arrest within two years)").

        Parameters
        ----------
        label : int
            1 or 0.
        short : bool
            Leave out the card's note.

        Returns
        -------
        str
            The class in words.
        """
        value = self.class_value(label)
        key = "positive_class" if label == 1 else "negative_class"
        words = self.card.get(f"{key}_label") if self.task == "classification" else None
        if words and key in self.card and str(self.card[key]) == str(value):
            return words.split(" (")[0] if short else words
        return f"{self.target.name} = {value}"

    @property
    def restricted_suggestion(self) -> list[str]:
        """Protected/sensitive groups suggested by the dataset card (empty without a card)."""
        return [n for n in self.card.get("restricted_features", []) if n in self.group_names]

    @property
    def sev_paper_restricted(self) -> list[str]:
        """The groups the SEV paper holds fixed on this dataset (§5.5, App. F), when the card records them."""
        return [n for n in self.card.get("sev_paper_restricted_features", []) if n in self.group_names]


MIN_SPLIT_ROWS = 10  # a train/test split needs a few rows of each class on each side


def check_trainable(dataset: Dataset, test_size: float = 0.2) -> None:
    """A split (and a model) needs enough rows, and for classification a few rows of each class."""
    n = len(dataset.features)
    if n < MIN_SPLIT_ROWS:
        raise IntakeError(f"{dataset.name} has {n} rows; a train/test split needs at least {MIN_SPLIT_ROWS} — "
                          "upload more rows.")
    if dataset.task == "classification":
        counts = np.bincount(dataset.y, minlength=2)
        least = int(counts.min())
        if least < 2 or least * test_size < 1:
            label = int(counts.argmin())
            raise IntakeError(f"Only {count_noun(least, 'row')} of class {dataset.class_value(label)!s} in "
                              f"{dataset.name}; "
                              f"a stratified split needs at least {int(np.ceil(1 / test_size))} of each class — "
                              "upload more rows of that class, or pick another target.")


def infer_kind(column: pd.Series) -> str:
    """numeric / binary / categorical from the values: two distinct values → binary, numbers → numeric."""
    values = column.dropna()
    if values.nunique() <= 2:
        return "binary"
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return "numeric"
    return "categorical"


def infer_task(target: pd.Series) -> str:
    """The default task for a target: classification for two values or text, else regression."""
    values = target.dropna()
    if values.nunique() <= 2 or not pd.api.types.is_numeric_dtype(values):
        return "classification"
    return "regression"


def make_dataset(frame: pd.DataFrame, target: str, *, task: str | None = None, positive_class=None,
                 name: str = "upload", card: dict | None = None, choices: TableChoices | None = None) -> Dataset:
    """Validate a table and build a :class:`Dataset`.

    ``choices`` shapes the table (:class:`~explain_core.intake.layout.TableChoices`): its ``kinds`` override
    inferred kinds per column; its ``onehot_groups`` declare already one-hot encoded columns as one group each
    (``{"purpose": ["purpose_car", "purpose_tv"]}``); its ``drop`` leaves columns out; its ``holdout`` marks the
    positions of the rows the model was not trained on (:mod:`~explain_core.intake.holdout`). A classification
    target with more than two classes needs ``positive_class`` (explained against all the others).

    Parameters
    ----------
    frame : pandas.DataFrame
        The table, target column included.
    target : str
        The target column's name.
    task : str, optional
        ``"classification"`` or ``"regression"``; inferred from the target when omitted.
    positive_class : object, optional
        The class explained as positive (classification).
    name : str
        The dataset's name.
    card : dict, optional
        A data card to keep with the dataset.
    choices : TableChoices, optional
        Kinds, one-hot blocks, dropped columns and held-out rows; the defaults (None) change nothing.

    Returns
    -------
    Dataset
        The checked, typed dataset.

    Raises
    ------
    IntakeError
        When the target is missing, constant or has missing values, a column name repeats, a kind or one-hot
        block does not fit its columns, or the classes need a ``positive_class``; the message says how to fix it.
    """
    choices = TableChoices() if choices is None else choices
    check_unique(frame.columns, "The table")
    if target not in frame.columns:
        raise IntakeError(f"Target column {target!r} is not in the file; choose one of: "
                          f"{', '.join(map(str, frame.columns))}.")
    frame = frame.drop(columns=[c for c in choices.drop if c in frame.columns and c != target])
    _check_columns(frame, target)
    y = frame[target]
    if y.isna().any():
        raise IntakeError(f"Target {target!r} has {int(y.isna().sum())} missing values; drop those rows or pick "
                          "another target.")
    if y.nunique() < 2:
        raise IntakeError(f"Target {target!r} is constant: every row has {show(y.iloc[:1])}, a single class/value; "
                          "a model needs at least two outcomes — pick another target.")
    task = check_choice(task or infer_task(y), TASKS, "task")
    if task == "regression":
        _check_regression_target(y, target)
    positive_class = _check_classes(y, target, positive_class) if task == "classification" else None
    features = frame.drop(columns=[target]).reset_index(drop=True)
    groups = build_groups(features, choices.kinds or {}, choices.onehot_groups or {})
    return Dataset(name=name, features=features, target=y.reset_index(drop=True),
                   task=task, positive_class=positive_class, groups=groups, card=card or {},
                   holdout=None if choices.holdout is None else np.unique(np.asarray(choices.holdout, dtype=int)))


def _check_regression_target(y: pd.Series, target: str) -> None:
    if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        raise IntakeError(f"Target {target!r} holds text ({show(y.iloc[:2])}, …), so it cannot be a regression "
                          "target; choose classification, or a numeric target.")
    values = y.to_numpy(dtype=float)
    if not np.isfinite(values).all():
        raise IntakeError(f"Target {target!r} has {int((~np.isfinite(values)).sum())} infinite values; "
                          "drop those rows or replace them by finite numbers.")
    if np.abs(values).max() > 1e15:
        raise IntakeError(f"Target {target!r} reaches {np.abs(values).max():.3g}: values this large overflow "
                          "the metrics and the explanations' scales — rescale it (e.g. to thousands) first.")


def check_unique(names, where: str) -> None:
    """Duplicate column names are refused (checked in one pass)."""
    seen, dupes = set(), set()
    for n in map(str, names):
        (dupes if n in seen else seen).add(n)
    if dupes:
        listed = sorted(dupes)
        more = f" and {len(listed) - 10} more" if len(listed) > 10 else ""
        raise IntakeError(f"{where} has duplicate column names: {', '.join(listed[:10])}{more}; "
                          "give every column a unique name.")


def _check_columns(frame: pd.DataFrame, target: str) -> None:
    empty = [str(c) for c in frame.columns if c != target and frame[c].isna().all()]
    if empty:
        raise IntakeError(f"Columns with no values at all (all NaN/empty): {', '.join(empty)}; "
                          "drop them or fill them in.")
    if frame.shape[1] < 2:
        raise IntakeError("The file has only the target column; it needs at least one feature column.")
    numbers = frame.drop(columns=[target]).select_dtypes("number")
    counts = np.isinf(numbers.to_numpy(dtype=float, na_value=np.nan)).sum(axis=0) if numbers.shape[1] else []
    infinite = {str(c): int(n) for c, n in zip(numbers.columns, counts) if n}
    if infinite:
        listed = ", ".join(f"{c} ({n})" for c, n in list(infinite.items())[:10])
        raise IntakeError(f"Columns with infinite values: {listed}; replace them by finite numbers, or leave the "
                          "cells empty to mark them missing.")


def show(values) -> str:
    """Values for a message, as Python literals without numpy's wrappers: ``'bad', 'good'`` or ``0, 1``."""
    return ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in values)


def find_value(value, options):
    """The option equal to ``value``, also when one is text and the other not (``"1"`` finds ``1``); else None."""
    return next((o for o in options if o == value or str(o) == str(value)), None)


def _check_classes(y: pd.Series, target: str, positive_class):
    classes = sorted(pd.unique(y), key=str)
    if positive_class is None:
        if len(classes) > 2:
            raise IntakeError(f"Target {target!r} has {len(classes)} classes; explanations here are binary — "
                              "choose a positive class to explain against the rest, or pick a two-class target.")
        return classes[-1]
    match = find_value(positive_class, classes)
    if match is None:
        raise IntakeError(f"Positive class {show([positive_class])} does not occur in {target!r}; "
                          f"choose one of: {show(classes)}.")
    return match


def build_groups(features: pd.DataFrame, kinds: Mapping[str, str],
                 onehot_groups: Mapping[str, Sequence[str]]) -> tuple[FeatureGroup, ...]:
    """One group per column, except declared one-hot blocks; kinds inferred unless overridden."""
    declared = [c for cols in onehot_groups.values() for c in cols]
    bad = [k for k in list(kinds) + declared if k not in features.columns]
    if bad:
        raise IntakeError(f"Unknown columns in kinds/groups: {', '.join(map(str, bad))}; use names from the file's "
                          "header.")
    twice = sorted({str(c) for c in declared if declared.count(c) > 1})
    if twice:
        raise IntakeError(f"Columns declared in more than one group: {', '.join(twice)}; put each in one group.")
    clash = [g for g in onehot_groups if g in features.columns and g not in onehot_groups[g]]
    if clash:
        raise IntakeError(f"Group names {', '.join(clash)} are also column names; rename the groups.")
    for col, kind in kinds.items():
        _check_kind(features[col], kind)
    for g, cols in onehot_groups.items():
        values = features[list(cols)]
        if not values.isin([0, 1]).all().all() or (values.sum(axis=1) > 1).any():
            raise IntakeError(f"Group {g!r} is not one-hot: each of {', '.join(cols)} must be 0/1 with at most one 1 "
                              "per row.")
    in_block = {c: g for g, cols in onehot_groups.items() for c in cols}
    groups, seen = [], set()
    for col in features.columns:
        if col not in in_block:
            groups.append(FeatureGroup(str(col), (col,), kinds.get(col) or infer_kind(features[col])))
        elif in_block[col] not in seen:
            g = in_block[col]
            groups.append(FeatureGroup(g, tuple(onehot_groups[g]), "categorical"))
            seen.add(g)
    return tuple(groups)


def _check_kind(column: pd.Series, kind: str) -> None:
    check_choice(kind, KINDS, f"feature kind for {column.name!r}")
    if kind == "numeric" and not pd.api.types.is_numeric_dtype(column):
        raise IntakeError(f"Column {column.name!r} holds text, so it cannot be numeric; mark it categorical.")
    if kind == "binary" and column.nunique() > 2:
        raise IntakeError(f"Column {column.name!r} has {column.nunique()} distinct values, so it cannot be binary; "
                          "mark it categorical.")
