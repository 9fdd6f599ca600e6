"""Results as JSON and tables as CSV: what the app's download buttons and the report's index write.

JSON: :func:`to_json` is a result's own :meth:`~explain_core.results.Explanation.to_json` with the context it was
computed on (the row, the setup, the parameters) beside it: the one format, which ``type(result).from_json`` reads
back (:mod:`explain_core.results`). CSV: :func:`to_csv` is the one writer of every CSV download and of the command
line's index, and neutralises cells that a spreadsheet would run as a formula (OWASP's CSV-injection advice).
"""
from __future__ import annotations

import pandas as pd

from .results import Explanation, named_index, to_jsonable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

__all__ = ["FORMULA_STARTS", "neutralise", "safe_table", "to_csv", "to_json", "to_jsonable"]


def to_json(result: Explanation, **context) -> str:
    """A result as a download: ``result.to_json(**context)`` (e.g. ``row=``, ``setup=``, ``parameters=``), strict JSON
    that ``type(result).from_json`` decodes."""
    if not isinstance(result, Explanation):
        raise TypeError(f"a download is a method's result (an Explanation), not a {type(result).__name__}")
    return result.to_json(**context)


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
