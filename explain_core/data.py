"""Datasets: reading CSV/Parquet into a typed :class:`Dataset`, feature kinds and groups, bundled demos.

A *feature group* is the unit every explanation moves: a numeric or binary column, a categorical
column (one group however a model encodes it), or a declared set of one-hot columns.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
KINDS = ("numeric", "binary", "categorical")
TASKS = ("classification", "regression")
DEFAULT_MAX_UPLOAD_MB = 200


class IntakeError(ValueError):
    """A dataset, model or setting that cannot be used; the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class FeatureGroup:
    """Columns that move together in an explanation (one column, or a declared one-hot block)."""

    name: str
    columns: tuple[str, ...]
    kind: str


@dataclass
class Dataset:
    """A feature table with its target, task, positive class, feature kinds and feature groups."""

    name: str
    features: pd.DataFrame
    target: pd.Series
    task: str
    positive_class: object = None
    groups: tuple[FeatureGroup, ...] = ()
    card: dict = field(default_factory=dict)

    @property
    def group_names(self) -> list[str]:
        return [g.name for g in self.groups]

    @property
    def columns(self) -> list[str]:
        return list(self.features.columns)

    def group(self, name: str) -> FeatureGroup:
        for g in self.groups:
            if g.name == name:
                return g
        raise IntakeError(f"Unknown feature group {name!r}; known groups: {', '.join(self.group_names)}.")

    def kind_of(self, column: str) -> str:
        return next(g.kind for g in self.groups if column in g.columns)

    @property
    def y(self) -> np.ndarray:
        """Binary 0/1 target (1 = positive class) for classification, float target for regression."""
        if self.task == "classification":
            return (self.target == self.positive_class).to_numpy().astype(int)
        return self.target.to_numpy(dtype=float)

    def split(self, seed: int = 0, test_size: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
        """Row indices of an 80/20 (default) train/test split, stratified on the class for classification."""
        idx = np.arange(len(self.features))
        strata = self.y if self.task == "classification" else None
        train, test = train_test_split(idx, test_size=test_size, random_state=seed, stratify=strata)
        return np.sort(train), np.sort(test)

    def group_value(self, group: str, values: Mapping):
        """A group's value in ``values`` (column → value): the column's value, or a one-hot block's active column."""
        columns = self.group(group).columns
        if len(columns) == 1:
            return values[columns[0]]
        active = [c for c in columns if values[c] == 1]
        return active[0] if active else "none"

    def class_value(self, label: int):
        """The target value of label 1 (the positive class) or 0 (the other class, or "not <positive>")."""
        if label == 1:
            return self.positive_class
        others = [c for c in pd.unique(self.target) if c != self.positive_class]
        return others[0] if len(others) == 1 else f"not {self.positive_class}"

    def class_name(self, label: int) -> str:
        """Label 1 / 0 in words: ``<target> = <value>``."""
        return f"{self.target.name} = {self.class_value(label)}"

    @property
    def restricted_suggestion(self) -> list[str]:
        """Protected/sensitive groups suggested by the dataset card (empty without a card)."""
        return [n for n in self.card.get("restricted_features", []) if n in self.group_names]


def read_table(source, *, filename: str | None = None, max_mb: float | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet file (path, bytes or file-like) with clear errors for unusable files."""
    is_path = isinstance(source, (str, Path))
    name = filename or (Path(source).name if is_path else getattr(source, "name", "upload"))
    limit = max_upload_mb() if max_mb is None else max_mb
    raw = None if is_path else _read_bytes(source)
    size = Path(source).stat().st_size if is_path else len(raw)
    if size > limit * 2**20:  # checked before a file on disk is read
        raise IntakeError(f"{name} is {size / 2**20:.1f} MB, over the {limit:g} MB limit; "
                          "upload a smaller sample of rows or raise server.maxUploadSize in .streamlit/config.toml.")
    raw = Path(source).read_bytes() if raw is None else raw
    if not raw.strip():
        raise IntakeError(f"{name} is empty; upload a CSV with a header row and at least one data row.")
    if str(name).lower().endswith((".parquet", ".pq")) or raw[:4] == b"PAR1":
        frame = _read_parquet(raw, name)
    else:
        frame = _read_csv(raw, name)
    if frame.empty or frame.shape[1] == 0:
        raise IntakeError(f"{name} has no data rows; upload a file with a header row and at least one data row.")
    return frame


def _read_bytes(source) -> bytes:
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)
    data = source.read()
    return data.encode() if isinstance(data, str) else data


def _check_unique(names, where: str) -> None:
    names = [str(n) for n in names]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise IntakeError(f"{where} has duplicate column names: {', '.join(dupes)}; give every column a unique name.")


def _read_parquet(raw: bytes, name: str) -> pd.DataFrame:
    import pyarrow.parquet as pq

    try:
        _check_unique(pq.ParquetFile(io.BytesIO(raw)).schema_arrow.names, name)
        return pd.read_parquet(io.BytesIO(raw))
    except IntakeError:
        raise
    except Exception as exc:
        raise IntakeError(f"{name} is not a readable Parquet file ({exc}); re-export it, or upload a CSV.") from exc


def _read_csv(raw: bytes, name: str) -> pd.DataFrame:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IntakeError(f"{name} is not UTF-8 text (byte {exc.start} cannot be decoded); "
                          "save it as 'CSV UTF-8' or upload Parquet.") from exc
    if "\x00" in text:
        raise IntakeError(f"{name} looks like a binary file, not a CSV; upload a CSV or Parquet file.")
    first_line = text.lstrip("\r\n").split("\n", 1)[0]
    sep = max(",;\t|", key=first_line.count)  # Excel in some locales writes ';'
    # pandas renames duplicate headers (a, a.1), so they are caught from the header line itself.
    header = next((row for row in csv.reader(io.StringIO(text), delimiter=sep, skipinitialspace=True) if row), [])
    _check_unique(header, name)
    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise IntakeError(f"{name} could not be parsed as CSV ({str(exc).strip()}); check that every row has "
                          "as many fields as the header.") from exc
    if not isinstance(frame.index, pd.RangeIndex):  # pandas makes extra leading fields the index
        raise IntakeError(f"{name} has rows with more fields than the header; check that every row has "
                          "as many fields as the header.")
    return frame


def max_upload_mb() -> float:
    """The upload limit: env EXPLAIN_MAX_UPLOAD_MB, else server.maxUploadSize of .streamlit/config.toml."""
    if "EXPLAIN_MAX_UPLOAD_MB" in os.environ:
        return float(os.environ["EXPLAIN_MAX_UPLOAD_MB"])
    config = DATA_DIR.parent / ".streamlit" / "config.toml"
    if config.exists():
        import tomllib

        return float(tomllib.loads(config.read_text()).get("server", {}).get("maxUploadSize", DEFAULT_MAX_UPLOAD_MB))
    return DEFAULT_MAX_UPLOAD_MB


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
                 kinds: Mapping[str, str] | None = None, onehot_groups: Mapping[str, Sequence[str]] | None = None,
                 drop: Sequence[str] = (), name: str = "upload", card: dict | None = None) -> Dataset:
    """Validate a table and build a :class:`Dataset`.

    ``kinds`` overrides inferred kinds per column; ``onehot_groups`` declares already one-hot encoded
    columns as one group each (``{"purpose": ["purpose_car", "purpose_tv"]}``). A classification
    target with more than two classes needs ``positive_class`` (explained against all the others).
    """
    _check_unique(frame.columns, "The table")
    if target not in frame.columns:
        raise IntakeError(f"Target column {target!r} is not in the file; choose one of: {', '.join(map(str, frame.columns))}.")
    frame = frame.drop(columns=[c for c in drop if c in frame.columns and c != target])
    _check_columns(frame, target)
    y = frame[target]
    if y.isna().any():
        raise IntakeError(f"Target {target!r} has {int(y.isna().sum())} missing values; drop those rows or pick another target.")
    if y.nunique() < 2:
        raise IntakeError(f"Target {target!r} is constant: every row has {show(y.iloc[:1])}, a single class/value; "
                          "a model needs at least two outcomes — pick another target.")
    task = task or infer_task(y)
    if task not in TASKS:
        raise IntakeError(f"Task must be one of {TASKS}, not {task!r}.")
    if task == "regression" and not pd.api.types.is_numeric_dtype(y):
        raise IntakeError(f"Target {target!r} holds text ({show(y.iloc[:2])}, …), so it cannot be a regression "
                          "target; choose classification, or a numeric target.")
    positive_class = _check_classes(y, target, positive_class) if task == "classification" else None
    features = frame.drop(columns=[target]).reset_index(drop=True)
    groups = build_groups(features, kinds or {}, onehot_groups or {})
    return Dataset(name=name, features=features, target=y.reset_index(drop=True),
                   task=task, positive_class=positive_class, groups=groups, card=card or {})


def _check_columns(frame: pd.DataFrame, target: str) -> None:
    empty = [str(c) for c in frame.columns if c != target and frame[c].isna().all()]
    if empty:
        raise IntakeError(f"Columns with no values at all (all NaN/empty): {', '.join(empty)}; "
                          "drop them or fill them in.")
    if frame.shape[1] < 2:
        raise IntakeError("The file has only the target column; it needs at least one feature column.")


def show(values) -> str:
    """Values for a message, as Python literals without numpy's wrappers: ``'bad', 'good'`` or ``0, 1``."""
    return ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in values)


def format_value(value) -> str:
    """A feature value for a table or sentence: numbers to 2 decimals (whole numbers without), text as is,
    missing as "missing"."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "missing"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return str(int(value)) if float(value).is_integer() else f"{float(value):.2f}"
    return str(value)


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
        raise IntakeError(f"Unknown columns in kinds/groups: {', '.join(map(str, bad))}; use names from the file's header.")
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
            raise IntakeError(f"Group {g!r} is not one-hot: each of {', '.join(cols)} must be 0/1 with at most one 1 per row.")
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
    if kind not in KINDS:
        raise IntakeError(f"Unknown feature kind {kind!r} for {column.name!r}; use one of {KINDS}.")
    if kind == "numeric" and not pd.api.types.is_numeric_dtype(column):
        raise IntakeError(f"Column {column.name!r} holds text, so it cannot be numeric; mark it categorical.")
    if kind == "binary" and column.nunique() > 2:
        raise IntakeError(f"Column {column.name!r} has {column.nunique()} distinct values, so it cannot be binary; "
                          "mark it categorical.")


def demo_cards() -> dict[str, dict]:
    """The bundled datasets' cards (``data/datasets.json``) by name."""
    return {card["name"]: card for card in json.loads((DATA_DIR / "datasets.json").read_text())}


def demo_names() -> list[str]:
    return list(demo_cards())


DEMO_DROPS = {"adult": ("final_weight",)}  # census sampling weight, not a property of the person (card advice)


def load_demo(name: str) -> Dataset:
    """Load a bundled dataset by name (``compas``, ``adult``, ``german_credit``, ``california_housing``…)."""
    cards = demo_cards()
    if name not in cards:
        raise IntakeError(f"No bundled dataset {name!r}; choose one of: {', '.join(cards)}.")
    card = cards[name]
    frame = pd.read_csv(DATA_DIR / card["file"])
    drop = DEMO_DROPS.get(name, ())
    kinds = {c["name"]: c["kind"] for c in card["columns"] if c["role"] == "feature" and c["name"] not in drop}
    return make_dataset(frame, card["target"], task=card["task"], positive_class=card.get("positive_class"),
                        kinds=kinds, drop=drop, name=name, card=card)
