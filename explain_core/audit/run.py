"""The dataset-wide runner: a table too big for memory explained partition by partition on a Dask cluster.

The rows are read by ``dask.dataframe`` (a Parquet file or folder: one partition per row group; a CSV: blocks of
``blocksize`` bytes), one partition per task, on the workers. The setup (model, reference, the sample it was
built from) is sent to each worker once (:mod:`.cluster`), never with a task. Each finished partition comes
back to this process as the bytes of its Parquet file (encoded on the worker) and is written as
``parts/part-NNNNN.parquet`` (atomically), so a rerun into the same folder
computes only the partitions that are missing, after checking every file already there against the manifest
(:mod:`.ledger`). Under :data:`SINGLE_PROCESS_BYTES` of input no cluster is started: the same partition function
runs here, in order. The input is checked against the operator's row, column and cell limits before it is read
(Parquet: from the files' footers; CSV: its header, then the row count before anything is explained).
"""
from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..errors import IntakeError
from ..intake.formats import PARQUET_SUFFIXES
from ..intake.tables import check_source_shape
from ..limits import limits
from ..setup import Parameters, Setup
from .cluster import Executor
from .ledger import MANIFEST, part_entry, part_path, read_manifest, write_json, written_parts
from .rows import AuditOptions, Cluster, encoded_partition
from .summary import summarize

SINGLE_PROCESS_BYTES = 8 * 2**20  # input files below this are audited here, without a cluster
"""Inputs below this many bytes are audited in this process, without a cluster."""
CSV_BLOCKSIZE = "16MB"


@dataclass(frozen=True)
class AuditRun:
    """What one call did: the folder, the partitions computed now and those found already written, the summary.

    Parameters
    ----------
    folder : pathlib.Path
        The audit's folder.
    computed, skipped : tuple of int
        Partitions computed now, and found written.
    summary : dict
        The summary.
    executor : str
        Where it ran.
    """

    folder: Path
    computed: tuple[int, ...]
    skipped: tuple[int, ...]
    summary: dict
    executor: str


def read_rows(data: str | Path, columns=None, *, blocksize: str = CSV_BLOCKSIZE) -> dd.DataFrame:
    """The ``columns`` (default all) of a Parquet file, a folder of Parquet parts, or a CSV file, as a lazy frame.

    Parameters
    ----------
    data : str or pathlib.Path
        A Parquet file, a folder of Parquet parts, or a CSV.
    columns : sequence of str, optional
        The columns.
    blocksize : str
        A CSV partition's size.

    Returns
    -------
    dask.dataframe.DataFrame
        The lazy frame.

    Raises
    ------
    IntakeError
        When the input is not a regular file or folder of the right kind, is over the row, column or cell limits,
        or lacks a column.
    """
    path = Path(data)
    parquet = check_source_shape(path, PARQUET_SUFFIXES, limits())
    with dask.config.set({"dataframe.convert-string": False}):  # text as pandas reads it (missing = NaN, not pd.NA)
        frame = dd.read_parquet(str(path), split_row_groups=True) if parquet else \
            dd.read_csv(str(path), blocksize=blocksize)
    if columns is None:
        return frame
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise IntakeError(f"{path.name} lacks the model's feature column(s) {', '.join(missing)}; "
                          "audit a table with the columns the model was built on.")
    return frame[list(columns)]


def first_rows(data: str | Path, n: int, *, blocksize: str = CSV_BLOCKSIZE) -> pd.DataFrame:
    """The first ``n`` rows of ``data`` (all columns), reading only the partitions they are in.

    Parameters
    ----------
    data : str or pathlib.Path
        A Parquet file, a folder of Parquet parts, or a CSV.
    n : int
        Rows.
    blocksize : str
        A CSV partition's size.

    Returns
    -------
    pandas.DataFrame
        The rows.

    Raises
    ------
    IntakeError
        As :func:`read_rows`.
    """
    parts, rows = [], 0
    for part in read_rows(data, blocksize=blocksize).to_delayed():
        parts.append(part.compute(scheduler="synchronous"))
        rows += len(parts[-1])
        if rows >= n:
            break
    return pd.concat(parts, ignore_index=True).iloc[:n]


def _fingerprint(path: Path) -> list:
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return [[str(f.relative_to(path) if path.is_dir() else f.name), f.stat().st_size, f.stat().st_mtime_ns]
            for f in files]


def _input_bytes(path: Path) -> int:
    return sum(size for _, size, _ in _fingerprint(path))


def run_audit(setup: Setup, data: str | Path, out: str | Path, params: Parameters | None = None, *,
              options: AuditOptions | None = None, cluster: Cluster | None = None, blocksize: str = CSV_BLOCKSIZE,
              on_partition: Callable[[int], None] | None = None) -> AuditRun:
    """Explain every row of ``data`` (or every row predicted one class: ``options.rows``) into ``out``.

    ``cluster.scheduler``: None = no cluster under :data:`SINGLE_PROCESS_BYTES` of input (unless ``workers`` is
    given), else a LocalCluster of ``cluster.workers`` processes (default: one per core); ``"single"`` /
    ``"local"`` force either; any other value is the address of a running scheduler. ``cluster.client`` uses an
    existing :class:`distributed.Client`. A rerun into ``out`` with the same data, setup and parameters skips the
    partitions already written; other ones are refused. ``on_partition(i)`` is called after partition ``i`` is
    written; ``cluster.progress`` shows Dask's bar (a counter in one process).

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    data : str or pathlib.Path
        The rows to explain.
    out : str or pathlib.Path
        The audit's folder.
    params : Parameters, optional
        Every parameter.
    options : AuditOptions, optional
        What to compute.
    cluster : Cluster, optional
        Where the partitions run (default: as said above).
    blocksize : str
        A CSV partition's size.
    on_partition : callable, optional
        Called with each partition's number once written.

    Returns
    -------
    AuditRun
        What the call did.

    Raises
    ------
    IntakeError
        When the input is unusable or over a limit, or ``out`` holds files this audit did not write or that changed.
    """
    params, options, cluster = params or Parameters(), options or AuditOptions(), cluster or Cluster()
    frame = read_rows(data, setup.dataset.layout.columns, blocksize=blocksize)
    out = Path(out)
    manifest = {"data": _fingerprint(Path(data)), "setup": setup.key, "model": setup.model.name,
                "dataset": setup.dataset.name, "reference": setup.reference.description,
                "restricted": list(setup.restricted),
                "params": params.as_dict(), "options": _recorded(options), "blocksize": blocksize,
                "partitions": frame.npartitions, "groups": list(setup.dataset.group_names)}
    recorded = _check_manifest(out, manifest)
    lengths = None if recorded is None else recorded["lengths"]
    parts = frame.to_delayed()
    scheduler = cluster.scheduler
    if cluster.client is None and scheduler is None:
        small = cluster.workers is None and _input_bytes(Path(data)) < SINGLE_PROCESS_BYTES
        scheduler = "single" if small else "local"
    with Executor(cluster.client, scheduler, cluster.workers) as run:
        if lengths is None:
            counted = frame[[frame.columns[0]]].to_delayed()  # one column is read to count the rows
            lengths = [int(n) for n in run.compute([dask.delayed(len)(p) for p in counted])]
            _check_rows(Path(data), sum(lengths), len(frame.columns))
            recorded = {**manifest, "lengths": lengths, "parts": {}}
            write_json(out / MANIFEST, recorded)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int).tolist()
        done = set(written_parts(out, recorded, checksums=True))
        todo = [i for i in range(len(parts)) if i not in done]
        items = {i: (parts[i], offsets[i], params, options) for i in todo}
        for i, (data, rows) in run.stream(setup, encoded_partition, items, cluster.progress, unit="partitions"):
            recorded["parts"][str(i)] = _write_part(out, i, data, offsets[i], rows)
            write_json(out / MANIFEST, recorded)
            if on_partition is not None:
                on_partition(i)
        executor = run.name
    summary = summarize(out)
    return AuditRun(out, tuple(todo), tuple(sorted(done)), summary, executor)


def _recorded(options: AuditOptions) -> dict:
    """The options as the manifest records them (no other method: as before methods could be added)."""
    recorded = asdict(options)
    if not recorded["methods"]:
        del recorded["methods"]
    return recorded


def _check_manifest(out: Path, manifest: dict) -> dict | None:
    """The manifest of an earlier run of the same audit (None for a new folder)."""
    if out.exists() and not out.is_dir():
        raise IntakeError(f"{out} is a file; pass a folder for the audit (created if missing).")
    if not (out / MANIFEST).exists():
        if out.exists() and any(out.iterdir()):
            raise IntakeError(f"{out} is not empty and holds no audit; pass a new or empty output folder.")
        return None
    recorded = read_manifest(out)
    differ = [k for k in manifest if json.dumps(recorded.get(k)) != json.dumps(manifest[k])]
    if differ:
        raise IntakeError(f"{out} holds an audit of other inputs ({', '.join(differ)} differ); pass a new output "
                          "folder, or delete this one to start again.")
    return recorded


def _check_rows(data: Path, rows: int, columns: int) -> None:
    """The row and cell limits, once a CSV's rows are counted (before anything is explained)."""
    caps = limits()
    if rows > caps.rows or rows * columns > caps.cells:
        raise IntakeError(f"{data.name} has {rows:,} rows of {columns} columns, over this server's limits "
                          f"({caps.rows:,} rows, {caps.cells:,} cells); the operator sets them with EXPLAIN_MAX_ROWS "
                          "and EXPLAIN_MAX_CELLS.")


def _write_part(out: Path, i: int, data: bytes, start: int, rows: int) -> dict:
    """Partition ``i``'s Parquet file (``data``, encoded where it was computed) written, and its manifest entry."""
    path = part_path(out, i)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # a partition file is whole or absent, even when a run is interrupted
    return part_entry(path, start, rows)
