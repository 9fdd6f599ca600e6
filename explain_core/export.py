"""Results as JSON and tables as CSV: what the app's download buttons and the report's index write.

:func:`to_jsonable` turns any result of this package (dataclasses holding numpy arrays, pandas objects,
nested tuples) into plain JSON types; NaN and ±inf become ``null`` so the output is strict JSON.
"""
from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np
import pandas as pd

from .analysis import Setup


def to_jsonable(obj: Any) -> Any:
    """Plain JSON types for ``obj``: dataclasses by field, arrays as lists, frames as lists of records."""
    if isinstance(obj, (str, bool)) or obj is None:
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, Setup):
        return setup_summary(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, pd.DataFrame):
        frame = obj.reset_index() if _named_index(obj) else obj
        return [{str(k): to_jsonable(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]
    if isinstance(obj, pd.Series):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if obj is pd.NA or obj is pd.NaT:
        return None
    return str(obj)


def _named_index(frame: pd.DataFrame) -> bool:
    """Keep an index that carries information (names such as "Query"/"Explanation 1" or a named index)."""
    return frame.index.name is not None or not isinstance(frame.index, pd.RangeIndex)


def to_json(obj: Any, **extra) -> str:
    """``obj`` (plus ``extra`` top-level keys) as indented strict JSON text."""
    payload = to_jsonable(obj)
    if extra:
        payload = {**{k: to_jsonable(v) for k, v in extra.items()}, "result": payload}
    return json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False)


def to_csv(table: pd.DataFrame) -> bytes:
    """A table as UTF-8 CSV bytes (index kept when it carries row names)."""
    return table.to_csv(index=_named_index(table)).encode("utf-8")


def setup_summary(setup: Setup) -> dict:
    """What a reader needs to know about the setup: data, model, metrics, reference, restricted groups."""
    data = setup.dataset
    return {"dataset": data.name, "rows": len(data.features), "features": len(data.groups),
            "target": str(data.target.name), "task": data.task, "positive_class": to_jsonable(data.positive_class),
            "model": setup.model.name, "model_source": setup.source, "model_key": setup.model_key,
            "metrics": to_jsonable(setup.metrics), "reference": setup.reference.description,
            "reference_values": to_jsonable(setup.reference.values), "restricted": list(setup.restricted),
            "train_rows": len(setup.train_rows), "test_rows": len(setup.test_rows)}
