"""The model as encoder + estimator: the dataset's default encoding, and the model split where each encoded column's
feature group can be traced (:mod:`explain_core.intake.tracing`), so hypercube vertices can be mixed as encoded
arrays (see :class:`~explain_core.vertices.VertexScorer`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from ..cache import Memo, memo_field
from ..errors import ModelCallError
from .data import Dataset
from .layout import FeatureGroup
from .inputs import unwrap
from .models import ModelAdapter, model_columns, transformed
from .sandbox.model import SandboxedModel
from .tracing import encoded_column_groups

ROW_CACHE_CELLS = 20_000_000  # a dataset's encoded rows are kept (once per model) up to this many values (160 MB)
ENCODE_CHUNK_ROWS = 32_768


@dataclass(frozen=True)
class EncodedModel:
    """A model split into a column-wise ``encoder`` and the ``estimator`` fed its output.

    ``column_group[j]`` is the feature group behind encoded column j. Because every step works column
    by column, mixing encoded rows group by group equals encoding the mixed raw rows. The encoding of a
    dataset's rows (``rows``, the latest dataset) and of a reference (``references``) are computed once and kept:
    explaining a row of the data then calls no preprocessing at all.
    """

    encoder: Any
    estimator: Any
    column_group: np.ndarray
    rows: Memo = memo_field("a dataset's encoded rows", max_entries=1)
    references: Memo = memo_field("encoded references", max_entries=64)

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        """``encoder.transform(frame)`` as a float array (in chunks of rows)."""
        parts = []
        for start in range(0, max(len(frame), 1), ENCODE_CHUNK_ROWS):
            X = transformed(self.encoder, frame.iloc[start:start + ENCODE_CHUNK_ROWS])
            parts.append(np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def encode_rows(self, frame: pd.DataFrame, source: pd.DataFrame | None, columns: list[str]) -> np.ndarray:
        """:meth:`encode` of ``frame[columns]``, read off the encoding of every row of ``source`` (computed once)
        when the rows of ``frame`` are rows of ``source`` (same index and values); otherwise encoded afresh."""
        if frame.columns.tolist() != columns:  # (a list off the index at once: iterating a text index costs 4×)
            frame = model_columns(frame, columns)
        plain_index = source is not None and _plain(source.index)
        if not plain_index or len(source) * len(self.column_group) > ROW_CACHE_CELLS:
            return self.encode(frame)
        # keyed by the frame itself (the value holds it, so its id is not reused while kept)
        kept = self.rows.get((id(source), tuple(columns)), lambda: (
            source, source[columns].to_numpy(dtype=object), self.encode(source[columns])))
        positions = rows_of(frame, kept[1]) if kept[0] is source else None
        return self.encode(frame) if positions is None else kept[2][positions]

    def encode_reference(self, values: dict, columns) -> np.ndarray:
        """The encoded reference point (kept by its values)."""
        key = (tuple(columns), tuple((c, repr(values[c])) for c in columns))
        return self.references.get(key, lambda: self.encode(pd.DataFrame({c: [values[c]] for c in columns}))[0])


def rows_of(frame: pd.DataFrame, source: np.ndarray) -> np.ndarray | None:
    """Positions in ``source`` (a dataset's rows as an object array, its index 0…n−1) of the rows of ``frame``
    when each is the row its index names, value for value (missing equals missing); None otherwise (an edited or
    foreign row)."""
    index = frame.index
    if not pd.api.types.is_integer_dtype(index) or len(index) == 0:
        return None
    positions = index.to_numpy()
    if positions.min() < 0 or positions.max() >= len(source):
        return None
    mine, theirs = object_rows(frame), source[positions]
    same = mine == theirs
    if not same.all():  # missing equals missing: checked on the unequal cells only (isna of them all costs more)
        bad = ~same
        same[bad] = pd.isna(mine[bad]) & pd.isna(theirs[bad])
    return positions if same.all() else None


def _plain(index: pd.Index) -> bool:
    """Whether ``index`` is 0, 1, …, n−1 (a RangeIndex is read off its bounds)."""
    if isinstance(index, pd.RangeIndex):
        return index.start == 0 and (index.step == 1 or len(index) <= 1)
    return index.equals(pd.RangeIndex(len(index)))


def object_rows(frame: pd.DataFrame) -> np.ndarray:
    """``frame.to_numpy(dtype=object)``: the same values, read column by column off the frame's own arrays (one
    row's values one at a time: a text column held by Arrow converts a whole array at the cost of several values).
    pandas' one-row ``iloc[0]`` costs 1.5× as much, its ``to_numpy`` on Arrow text 3×."""
    arrays = list(frame._iter_column_arrays())  # pandas' own reader of its columns (pandas ≥ 1.3), read only
    out = np.empty((len(frame), len(arrays)), dtype=object)
    one = len(out) == 1
    for j, values in enumerate(arrays):
        if one:
            out[0, j] = values[0]
        else:
            out[:, j] = np.asarray(values, dtype=object)
    return out


def encoded_model(model: ModelAdapter, groups: Sequence[FeatureGroup]) -> EncodedModel | None:
    """Split ``model`` into encoder + estimator over ``groups``; None unless the encoding is column-wise."""
    key = tuple(groups)
    return model.splits.get(key, lambda: _split(model, key))


def _split(model: ModelAdapter, groups: Sequence[FeatureGroup]) -> EncodedModel | None:
    layers, core = unwrap(model.estimator)
    if model.takes == "encoded":
        encoder, estimator = model.encoder, model.estimator
    elif isinstance(core, SandboxedModel):
        return _sandboxed_split(model, layers, core, groups)
    elif getattr(core, "reads_floats", False) is True or _xgboost_on_numbers(core, model.columns):
        return _float_split(model, layers, core, True, groups)
    elif isinstance(model.estimator, Pipeline) and len(model.estimator.steps) == 2:
        encoder, estimator = model.estimator[0], model.estimator[-1]
    else:
        return None
    if getattr(estimator, "feature_names_in_", None) is not None:
        return None
    column_group = encoded_column_groups(encoder, groups)
    return None if column_group is None else EncodedModel(encoder, estimator, column_group)


def _xgboost_on_numbers(estimator, columns) -> bool:
    """An XGBoost scikit-learn model (``XGBClassifier``…) fitted on these columns, in this order, all numbers (no
    categorical feature type): it scores a float matrix by position as it scores the frame (XGBoost checks no
    names on an array), so it is fed arrays, as its own booster is when uploaded."""
    if not type(estimator).__module__.startswith("xgboost.") or not hasattr(estimator, "get_booster"):
        return False
    names = getattr(estimator, "feature_names_in_", None)
    try:
        types = estimator.get_booster().feature_types or []
    except Exception:  # noqa: BLE001 — not fitted, or not a booster we know: the frame path stays
        return False
    return names is not None and [str(n) for n in names] == [str(c) for c in columns] and "c" not in types


def _sandboxed_split(model: ModelAdapter, layers: tuple, core: SandboxedModel,
                     groups: Sequence[FeatureGroup]) -> EncodedModel | None:
    """An uploaded model split where it lives: a Pipeline's column-wise encoder traced in its worker, or a model
    that reads one float matrix by position (:func:`_float_split`) — either way vertices cross to the worker
    compact."""
    if not layers:
        column_group = core.encoded_split(groups)
        if column_group is not None:
            return EncodedModel(core.stage("encoder"), core.stage("final"), column_group)
    return _float_split(model, layers, core.stage("model"), core.info["reads_floats"], groups)


def _float_split(model: ModelAdapter, layers: tuple, estimator, reads_floats: bool,
                 groups: Sequence[FeatureGroup]) -> EncodedModel | None:
    """A model that reads one float matrix by position (a native XGBoost / LightGBM booster, renamed or not, in
    its worker or in process; or unnamed inputs fed in order) split as the raw columns as floats + ``estimator``."""
    kinds = [kind for kind, _ in layers]
    if kinds != ["ordered"] and not (reads_floats and set(kinds) <= {"renamed"}):
        return None
    group_of = {c: i for i, g in enumerate(groups) for c in g.columns}
    if not set(model.columns) <= set(group_of):
        return None
    return EncodedModel(FloatColumns(tuple(model.columns)), estimator,
                        np.array([group_of[c] for c in model.columns]))


@dataclass(frozen=True)
class FloatColumns:
    """The raw ``columns`` as one float matrix, in order: what a model that reads floats by position is fed."""

    columns: tuple[str, ...]

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        try:
            return frame[list(self.columns)].to_numpy(dtype=float)
        except (TypeError, ValueError):
            text = [c for c in self.columns if not pd.api.types.is_numeric_dtype(frame[c])]
            raise ModelCallError(f"The model reads numbers only, but {', '.join(map(str, text[:5]))} hold text; "
                                 "encode them as numbers, as the model was trained.") from None


def make_encoder(dataset: Dataset) -> ColumnTransformer:
    """The demo models' encoding (SEV paper App. A). Numeric: impute median + standardise; binary/categorical:
    impute mode + one-hot (one dummy for binary)."""
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
