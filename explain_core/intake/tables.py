"""Reading an uploaded table (CSV or Parquet) safely: clear messages for unusable files, and limits enforced
where the bytes are decoded — Parquet's row-group metadata is read before any data, a CSV is parsed in chunks
and stopped at the row limit — so a small file that expands to a huge table is refused cheaply.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import IntakeError, one_line
from ..limits import Limits, limits, over
from .data import check_unique

CSV_CHUNK_ROWS = 100_000
SEPARATORS = ",;\t|"
DECIMAL_COMMA = re.compile(r"^\s*[+-]?\d+,\d+\s*$")
MAX_NAME = 80  # characters of a file name kept for messages and dataset names


def safe_name(filename, default: str = "upload") -> str:
    """An upload's name for messages, dataset names and file names: no folders, printable, at most 80 characters."""
    name = Path(str(filename or "")).name.strip()
    name = "".join(ch for ch in name if ch.isprintable()) or default
    if len(name) <= MAX_NAME:
        return name
    suffix = Path(name).suffix[:10]
    return name[:MAX_NAME - len(suffix) - 1] + "…" + suffix


def read_table(source, *, filename: str | None = None, max_mb: float | None = None,
               caps: Limits | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet file (path, bytes or file-like) with clear errors for unusable files.

    ``max_mb`` is the file size limit (the app passes its own upload limit; default :func:`limits`'s
    ``upload_mb``); ``caps`` the row, column and cell limits (default :func:`limits`).

    Parameters
    ----------
    source : str, pathlib.Path, bytes or file-like
        The file to read.
    filename : str, optional
        The name used in messages and to tell CSV from Parquet (default: the path's name).
    max_mb : float, optional
        The file size limit in MB.
    caps : Limits, optional
        The row, column and cell limits.

    Returns
    -------
    pandas.DataFrame
        The table as read.

    Raises
    ------
    IntakeError
        When the file is over a limit, empty, has no data rows or cannot be parsed; the message says what to upload.
    """
    caps = caps or limits()
    is_path = isinstance(source, (str, Path))
    name = safe_name(filename or (Path(source).name if is_path else getattr(source, "name", "upload")))
    limit = caps.upload_mb if max_mb is None else max_mb
    raw = None if is_path else _read_bytes(source)
    size = Path(source).stat().st_size if is_path else len(raw)
    if size > limit * 2**20:  # checked before a file on disk is read
        raise IntakeError(f"{name} is {size / 2**20:.1f} MB, over the {limit:g} MB limit; upload a smaller "
                          "sample of rows. (The server's operator sets the limit: the app's upload limit, or "
                          "EXPLAIN_MAX_UPLOAD_MB for the library and the command line.)")
    raw = Path(source).read_bytes() if raw is None else raw
    if not raw.strip():
        raise IntakeError(f"{name} is empty; upload a CSV with a header row and at least one data row.")
    if str(name).lower().endswith((".parquet", ".pq")) or raw[:4] == b"PAR1":
        frame = _read_parquet(raw, name, caps)
    else:
        frame = _read_csv(raw, name, caps)
    if frame.empty or frame.shape[1] == 0:
        raise IntakeError(f"{name} has no data rows; upload a file with a header row and at least one data row.")
    return frame


def _read_bytes(source) -> bytes:
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)
    data = source.read()
    return data.encode() if isinstance(data, str) else data


def _check_shape(name: str, rows: int, columns: int, caps: Limits, so_far: bool = False) -> None:
    more = " (at least, counted so far)" if so_far else ""
    if columns > caps.columns:
        raise over(f"{name}'s number of columns", columns, caps.columns, "keep only the columns the model uses.")
    if rows > caps.rows:
        raise over(f"{name}'s number of rows{more}", rows, caps.rows, "upload a sample of the rows.")
    if rows * columns > caps.cells:
        raise over(f"{name}'s number of cells (rows × columns){more}", rows * columns, caps.cells,
                   "upload a sample of the rows or fewer columns.")


ROW_GROUP_BYTES = 2**30  # one Parquet row group, decoded, must fit in a worker's memory (a partition)


def check_source_shape(path: Path, parquet_suffixes: tuple[str, ...], caps: Limits) -> bool:
    """Check a table too large to read at once (an audit's input: a Parquet file, a folder of Parquet files, or a
    CSV) against the limits before any data is read — Parquet from its footers (rows, columns, cells, nested
    columns, a row group's decoded size), a CSV from its header — and that every file is a regular file. True for
    Parquet."""
    if not path.exists():
        raise IntakeError(f"{path}: no such file or folder; pass a Parquet file, a folder of Parquet parts or a CSV.")
    files = sorted(p for p in path.rglob("*") if not p.name.startswith(".")) if path.is_dir() else [path]
    odd = [p for p in files if p.is_symlink() or not (p.is_file() or p.is_dir())]
    if odd:
        raise IntakeError(f"{odd[0]} is not a regular file (a link or a device); pass a table's own files.")
    files = [p for p in files if p.is_file()]
    parquet = path.is_dir() or path.suffix.lower() in parquet_suffixes
    if not parquet:
        with open(path, "rb") as handle:
            header = handle.readline(1 << 20).decode("utf-8", "replace")
        _check_shape(path.name, 0, len(header_fields(header, ",", path.name)), caps)
        return False
    _check_parquet_footers(path, files, caps)
    return True


def _check_parquet_footers(path: Path, files: list[Path], caps: Limits) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows, schema = 0, None
    for file in files:
        try:
            meta = pq.ParquetFile(file)
        except Exception as exc:
            raise _unreadable_parquet(file.name, exc) from exc
        schema = schema or meta.schema_arrow
        rows += meta.metadata.num_rows
        groups = (meta.metadata.row_group(i).total_byte_size for i in range(meta.metadata.num_row_groups))
        largest = max(groups, default=0)
        if largest > ROW_GROUP_BYTES:
            raise over(f"A row group of {file.name}, decoded,", largest / 2**20, ROW_GROUP_BYTES / 2**20,
                       "write the table in smaller row groups.", " MB")
    if schema is None:
        raise IntakeError(f"{path} holds no Parquet files.")
    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if nested:
        raise IntakeError(f"{path.name} has nested columns (lists, structs or maps): {', '.join(map(str, nested[:10]))}"
                          "; flatten them into one value per cell, or drop them.")
    _check_shape(path.name, rows, len(schema.names), caps)


def _read_parquet(raw: bytes, name: str, caps: Limits) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(io.BytesIO(raw))
        schema = meta.schema_arrow
    except Exception as exc:
        raise _unreadable_parquet(name, exc) from exc
    _check_shape(name, meta.metadata.num_rows, len(schema.names), caps)  # from the footer: no data read yet
    check_unique(schema.names, name)
    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if nested:
        raise IntakeError(f"{name} has nested columns (lists, structs or maps): {', '.join(map(str, nested[:10]))}; "
                          "flatten them into one value per cell, or drop them, and upload again.")
    try:
        return meta.read().to_pandas()
    except Exception as exc:
        raise _unreadable_parquet(name, exc) from exc


def _unreadable_parquet(name: str, exc: BaseException) -> IntakeError:
    return IntakeError(f"{name} is not a readable Parquet file ({one_line(exc, 200)}); re-export it, or upload a CSV.")


def _read_csv(raw: bytes, name: str, caps: Limits) -> pd.DataFrame:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IntakeError(f"{name} is not UTF-8 text (byte {exc.start} cannot be decoded); "
                          "save it as 'CSV UTF-8' or upload Parquet.") from exc
    if "\x00" in text:
        raise IntakeError(f"{name} looks like a binary file, not a CSV; upload a CSV or Parquet file.")
    body = text.lstrip("\r\n")
    first_line = body.split("\n", 1)[0]
    sep = max(SEPARATORS, key=first_line.count)  # Excel in some locales writes ';' (and decimal commas)
    # pandas renames duplicate headers (a, a.1), so they are caught from the header line itself.
    header = header_fields(first_line, sep, name)
    head = body[:65_536]
    _check_shape(name, 0, len(header), caps)
    check_unique(header, name)
    decimal = "," if sep != "," and _writes_decimal_commas(head, sep) else "."
    frame = _parse_chunks(text, name, sep, decimal, len(header), caps)
    if not isinstance(frame.index, pd.RangeIndex):  # pandas makes extra leading fields the index
        raise IntakeError(f"{name} has rows with more fields than the header; check that every row has "
                          "as many fields as the header.")
    _check_decimal_commas(frame, name)
    return frame


def header_fields(line: str, sep: str, name: str) -> list[str]:
    """The column names of a CSV's header line; a header the CSV reader cannot take (a name longer than its field
    limit, 131,072 characters) is an IntakeError naming the limit."""
    try:
        return next((row for row in csv.reader(io.StringIO(line), delimiter=sep, skipinitialspace=True) if row), [])
    except csv.Error as exc:
        if "field limit" in str(exc):
            raise IntakeError(f"A column name in the header of {name} is longer than {csv.field_size_limit():,} "
                              "characters (the CSV reader's limit for one field); shorten the column names and "
                              "upload again.") from None
        raise IntakeError(f"The header of {name} cannot be read as CSV ({one_line(exc, 200)}); check its first "
                          "line.") from None


def _parse_chunks(text: str, name: str, sep: str, decimal: str, width: int, caps: Limits) -> pd.DataFrame:
    """The CSV in chunks of rows, stopped as soon as the row or cell limit is passed."""
    parts, rows = [], 0
    try:
        reader = pd.read_csv(io.StringIO(text), sep=sep, decimal=decimal, skipinitialspace=True,
                             chunksize=CSV_CHUNK_ROWS)
        for chunk in reader:
            rows += len(chunk)
            _check_shape(name, rows, width, caps, so_far=True)
            parts.append(chunk)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise IntakeError(f"{name} could not be parsed as CSV ({one_line(exc, 200)}); check that every row has "
                          "as many fields as the header.") from exc
    if not parts:
        return pd.DataFrame()
    frame = pd.concat(parts) if len(parts) > 1 else parts[0]
    return frame if isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 else _reindexed(frame)


def _reindexed(frame: pd.DataFrame) -> pd.DataFrame:
    """Chunks keep a running RangeIndex; concatenated they are renumbered (an index of leading fields is kept
    as it is, so the caller can report it)."""
    if pd.api.types.is_integer_dtype(frame.index) and (np.diff(frame.index.to_numpy()) == 1).all():
        return frame.reset_index(drop=True)
    return frame


def _writes_decimal_commas(head: str, sep: str) -> bool:
    """Does a ``;``/tab/``|``-separated file write numbers as ``5,5``?"""
    cells = [c for line in head.splitlines()[1:50] for c in line.split(sep)]
    return any(DECIMAL_COMMA.match(c.strip('"')) for c in cells)


def _check_decimal_commas(frame: pd.DataFrame, name: str) -> None:
    """Text columns that are really numbers written with decimal commas would be read as categories: refused."""
    for column in frame.columns:
        values = frame[column]
        if not (pd.api.types.is_string_dtype(values) or values.dtype == object):
            continue
        sample = values.dropna().astype(str).head(200)
        if len(sample) and sample.map(lambda v: bool(DECIMAL_COMMA.match(v))).all():
            raise IntakeError(f"Column {column!r} of {name} holds numbers written with decimal commas "
                              f"({sample.iloc[0]!r}); save the file with '.' as the decimal mark, or as a "
                              "';'-separated CSV, and upload again.")
