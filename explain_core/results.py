"""Results as JSON: :func:`to_jsonable` for any result, and the :class:`Explanation` mixin that gives each method's
result ``meta`` (method, parameters, package version) and a JSON round trip (``to_json`` / ``from_json``), as
alibi's explanations do. Models are never serialised: a result holds numbers, names and row values only.

The one JSON format (every download of the app, the command line, the API)::

    {"meta": {"type": "SEVExplanation", "method": …, "parameters": {…}, "explain_core": "…"},
     "row": 42, "setup": {…}, "parameters": {…},      # optional context: what the result was computed on
     "result": {…}}                                   # the result's fields, NaN/±inf as "NaN"/"Infinity"

``type(result).from_json(text)`` (or :func:`load_result`, which reads ``meta.type``) rebuilds the result;
:func:`json_context` returns the context keys. JSON written before the context existed (``"data"`` in place of
``"result"``) decodes too.
"""
from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ._version import __version__

NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
RESERVED_KEYS = ("meta", "result", "data")  # the format's own keys: no context key may take them


def to_jsonable(obj: Any, *, exact: bool = False) -> Any:
    """Plain JSON types for ``obj``: dataclasses by field, arrays as lists, frames as lists of records.

    NaN and ±inf become ``null`` (strict JSON for any reader), or with ``exact`` the strings ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"`` (strict JSON that :meth:`Explanation.from_json` reads back exactly).
    An object with a ``__json__()`` method is written as what that returns.
    """
    if isinstance(obj, (str, bool)) or obj is None:
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        if math.isfinite(obj):
            return float(obj)
        return ("NaN" if math.isnan(obj) else "Infinity" if obj > 0 else "-Infinity") if exact else None
    if isinstance(obj, np.bool_):
        return bool(obj)
    if hasattr(obj, "__json__"):
        return to_jsonable(obj.__json__(), exact=exact)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name), exact=exact) for f in dataclasses.fields(obj) if f.repr}
    if isinstance(obj, pd.DataFrame):
        if exact and named_index(obj) and obj.index.nlevels == 1:  # the index kept apart, to be rebuilt
            return {"index": to_jsonable(list(obj.index), exact=True), "index_name": to_jsonable(obj.index.name),
                    "records": to_jsonable(obj.reset_index(drop=True), exact=True)}
        frame = obj.reset_index() if named_index(obj) else obj
        records = frame.to_dict(orient="records")
        return [{str(k): to_jsonable(v, exact=exact) for k, v in row.items()} for row in records]
    if isinstance(obj, pd.Series):
        return {str(k): to_jsonable(v, exact=exact) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v, exact=exact) for v in obj.tolist()]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v, exact=exact) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v, exact=exact) for v in obj]
    if obj is pd.NA or obj is pd.NaT:
        return None
    return str(obj)


def same_value(a: Any, b: Any) -> bool:
    """Value equality of results and their parts: dataclasses of one type field by field (fields with
    ``compare=False``, such as memos, left out), arrays by shape and element, frames and series by labels and
    values, NaN equal to NaN; never the ambiguous truth value of an array."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(same_value(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a) if f.compare)
    if isinstance(a, (pd.DataFrame, pd.Series)) or isinstance(b, (pd.DataFrame, pd.Series)):
        return (type(a) is type(b) and a.shape == b.shape and list(a.index) == list(b.index)
                and (isinstance(a, pd.Series) or list(a.columns) == list(b.columns))
                and same_value(a.to_numpy(), b.to_numpy()))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
            return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f" or b.dtype.kind == "f"))
        return all(same_value(x, y) for x, y in zip(a.ravel().tolist(), b.ravel().tolist()))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, (float, np.floating)) and isinstance(b, (float, np.floating)) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


class ValueEquality:
    """One equality for the result types (and their parts) that hold arrays or frames: by value, with
    :func:`same_value` — two results are equal when every field is, so a result read back from its JSON equals
    it. Such a result is unhashable (it holds arrays). A dataclass using it is declared with ``eq=False``, so that
    the dataclass does not generate its own ``__eq__`` (which would compare arrays with ``==`` and raise)."""

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return same_value(self, other)

    __hash__ = None


def named_index(frame: pd.DataFrame) -> bool:
    """Keep an index that carries information (names such as "Query"/"Explanation 1" or a named index)."""
    return frame.index.name is not None or not isinstance(frame.index, pd.RangeIndex)


class Explanation(ValueEquality):
    """Mixin for a method's result dataclass (declared ``eq=False``): ``meta``, a lossless JSON round trip and
    equality by value (:class:`ValueEquality`).

    A subclass names its method (a class attribute, property or field ``method``) and the attributes that are
    its parameters (``meta_parameters``, or an overridden :meth:`parameters`); ``to_json`` writes
    ``{"meta": …, "data": …}`` and ``from_json`` rebuilds the object from its fields' type annotations.
    """

    meta_parameters: ClassVar[tuple[str, ...]] = ()
    types: ClassVar[dict[str, type]] = {}  # every result type by name (meta.type), filled as classes are defined

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Explanation.types[cls.__name__] = cls

    def parameters(self) -> dict:
        """The parameters the result was computed with (``meta_parameters`` by default)."""
        return {name: getattr(self, name) for name in self.meta_parameters}

    @property
    def meta(self) -> dict:
        return {"type": type(self).__name__, "method": getattr(self, "method", "") or type(self).__name__,
                "parameters": to_jsonable(self.parameters()), "explain_core": __version__}

    def to_json(self, indent: int | None = 2, **context) -> str:
        """Strict JSON of the result with its ``meta``; ``context`` (e.g. ``row``, ``setup``, ``parameters``: what it
        was computed on) is written beside it as plain JSON and ignored by :meth:`from_json`."""
        taken = [k for k in context if k in RESERVED_KEYS]
        if taken:
            raise ValueError(f"context keys {taken} are the format's own; name them otherwise")
        payload = {"meta": self.meta, **{k: to_jsonable(v) for k, v in context.items()},
                   "result": to_jsonable(self, exact=True)}
        return json.dumps(payload, indent=indent, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_json(cls, text: str):
        payload = _payload(text)
        kind = payload.get("meta", {}).get("type")
        if kind != cls.__name__:
            from .errors import IntakeError
            raise IntakeError(f"This JSON holds a {kind or 'result of unknown type'}, not a {cls.__name__}.")
        return decode(cls, payload["result"] if "result" in payload else payload["data"])


def _payload(text: str) -> dict:
    payload = json.loads(text)
    if not isinstance(payload, dict) or not isinstance(payload.get("meta"), dict):
        from .errors import IntakeError
        raise IntakeError("This JSON is not a saved explanation: it has no \"meta\" with the result's type.")
    return payload


def load_result(text: str) -> Explanation:
    """The result a JSON text holds, as the type its ``meta.type`` names (a type of an imported module)."""
    kind = _payload(text)["meta"].get("type")
    if kind not in Explanation.types:
        from .errors import IntakeError
        raise IntakeError(f"This JSON holds a {kind or 'result of unknown type'}, which this version does not know "
                          "(or whose module is not imported).")
    return Explanation.types[kind].from_json(text)


def json_context(text: str) -> dict:
    """The context a result's JSON was written with (``row``, ``setup``, ``parameters``, …)."""
    return {k: v for k, v in _payload(text).items() if k not in RESERVED_KEYS}


def decode(kind, value):
    """Rebuild a value of annotated type ``kind`` from :func:`to_jsonable` output (``exact`` mode)."""
    if isinstance(value, str) and value in NON_FINITE and kind in (float, typing.Any, object):
        return NON_FINITE[value]
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        options = [a for a in args if a is not type(None)]
        return decode(options[0], value) if len(options) == 1 else value
    if value is None:
        return math.nan if kind is float else None
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: decode(hints[f.name], value[f.name]) for f in dataclasses.fields(kind)
                       if f.init and f.name in value})
    if kind is tuple:
        return tuple(value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v) for v in value)
        return tuple(decode(a, v) for a, v in zip(args, value)) if args else tuple(value)
    if origin in (list, dict):
        if origin is list:
            return [decode(args[0] if args else Any, v) for v in value]
        return {k: decode(args[1] if args else Any, v) for k, v in value.items()}
    if kind is np.ndarray:
        return _array(value)
    if kind is pd.DataFrame:
        return _frame(value)
    if kind is pd.Series:
        values = {k: NON_FINITE.get(v, v) if isinstance(v, str) else v for k, v in value.items()}
        return pd.Series(values, dtype=object).infer_objects()
    if kind is float:
        return NON_FINITE[value] if isinstance(value, str) else float(value)
    if kind in (int, str, bool):
        return kind(value)
    return value


def _frame(value) -> pd.DataFrame:
    """Records back to a frame, "NaN"/"Infinity" strings as floats; a frame written with its index (a dict of
    ``index``, ``index_name`` and ``records``) gets that index back."""
    if isinstance(value, dict):
        frame = _frame(value["records"])
        frame.index = pd.Index([NON_FINITE.get(v, v) if isinstance(v, str) else v for v in value["index"]],
                               name=value["index_name"])
        return frame
    return pd.DataFrame.from_records([{k: NON_FINITE.get(v, v) if isinstance(v, str) else v for k, v in row.items()}
                                      for row in value]).infer_objects()


def _array(value) -> np.ndarray:
    """A list (of lists) back to an array; "NaN"/"Infinity" strings and nulls become floats."""
    def number(v):
        if isinstance(v, list):
            return [number(x) for x in v]
        return NON_FINITE.get(v, v) if isinstance(v, str) else (math.nan if v is None else v)
    flat = np.asarray(number(value))
    return flat.astype(float) if flat.dtype == object and _all_numbers(flat) else flat


def _all_numbers(array: np.ndarray) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in array.ravel())
