"""Results as JSON and tables as CSV: what the app's download buttons and the report's index write.

JSON: :func:`to_json` wraps any result (plus top-level keys such as the row and the setup) as strict JSON
(NaN and ±inf become ``null``); a method's own result also has ``to_json``/``from_json`` with its ``meta``.
CSV: :func:`to_csv` is the one writer of every CSV download and of the command line's index, and neutralises
cells that a spreadsheet would run as a formula (OWASP's CSV-injection advice).
"""
from __future__ import annotations

import json
from typing import Any

import pandas as pd

from .results import named_index, to_jsonable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

__all__ = ["FORMULA_STARTS", "neutralise", "safe_table", "to_csv", "to_json", "to_jsonable"]


def to_json(obj: Any, **extra) -> str:
    """``obj`` (plus ``extra`` top-level keys) as indented strict JSON text."""
    payload = to_jsonable(obj)
    if extra:
        payload = {**{k: to_jsonable(v) for k, v in extra.items()}, "result": payload}
    return json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False)


def neutralise(value):
    """A text cell that starts like a formula (``=``, ``+``, ``-``, ``@``, tab, CR) gets a leading ``'``, so a
    spreadsheet shows it as text instead of running it; numbers and other values are returned as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def safe_table(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with every text cell, column name and index label neutralised (numeric columns untouched)."""
    out = table.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]) or pd.api.types.is_bool_dtype(out[column]):
            out[column] = out[column].map(neutralise)
    out.columns = [neutralise(str(c)) for c in out.columns]
    out.index = out.index.map(neutralise)
    out.index.name = neutralise(out.index.name) if out.index.name is not None else None
    return out


def to_csv(table: pd.DataFrame) -> bytes:
    """A table as UTF-8 CSV bytes (index kept when it carries row names), safe to open in a spreadsheet; CRLF
    line ends (RFC 4180), so a cell holding a line break is quoted."""
    return safe_table(table).to_csv(index=named_index(table), lineterminator="\r\n").encode("utf-8")
