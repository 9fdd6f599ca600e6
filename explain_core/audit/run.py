"""The dataset-wide runner: a table too big for memory explained partition by partition on a Dask cluster.

The rows are read by ``dask.dataframe`` (a Parquet file or folder: one partition per row group; a CSV: blocks of
``blocksize`` bytes), one partition per task, on the workers. The setup (model, reference, the sample it was
built from) is sent to each worker once (:mod:`.cluster`), never with a task. Each finished partition comes
back to this process and is written as ``parts/part-NNNNN.parquet`` (atomically), so a rerun into the same folder
computes only the partitions that are missing. Under :data:`SINGLE_PROCESS_BYTES` of input no cluster is
started: the same partition function runs here, in order.
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
import pyarrow.parquet as pq

from ..errors import IntakeError
from ..setup import Parameters, Setup
from .cluster import Executor
from .rows import AuditOptions, explain_partition
from .summary import MANIFEST, PARTS, summarize

SINGLE_PROCESS_BYTES = 8 * 2**20  # input files below this are audited here, without a cluster
CSV_BLOCKSIZE = "16MB"
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")


@dataclass(frozen=True)
class AuditRun:
    """What one call did: the folder, the partitions computed now and those found already written, the summary."""

    folder: Path
    computed: tuple[int, ...]
    skipped: tuple[int, ...]
    summary: dict
    executor: str


def read_rows(data: str | Path, columns=None, *, blocksize: str = CSV_BLOCKSIZE) -> dd.DataFrame:
    """The ``columns`` (default all) of a Parquet file, a folder of Parquet parts, or a CSV file, as a lazy frame."""
    path = Path(data)
    if not path.exists():
        raise IntakeError(f"{data}: no such file or folder; pass a Parquet file, a folder of Parquet parts or a CSV.")
    parquet = path.is_dir() or path.suffix.lower() in PARQUET_SUFFIXES
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
    """The first ``n`` rows of ``data`` (all columns), reading only the partitions they are in."""
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
              options: AuditOptions | None = None, scheduler: str | None = None, workers: int | None = None,
              client=None, blocksize: str = CSV_BLOCKSIZE, progress: bool = False,
              on_partition: Callable[[int], None] | None = None) -> AuditRun:
    """Explain every row of ``data`` (or every row predicted one class: ``options.rows``) into ``out``.

    ``scheduler``: None = no cluster under :data:`SINGLE_PROCESS_BYTES` of input (unless ``workers`` is given),
    else a LocalCluster of ``workers`` processes (default: one per core); ``"single"`` / ``"local"`` force either;
    any other value is the address of a running scheduler. ``client`` uses an existing
    :class:`distributed.Client`. A rerun into ``out`` with the same data, setup and parameters skips the
    partitions already written; other ones are refused. ``on_partition(i)`` is called after partition ``i`` is
    written; ``progress`` shows Dask's bar (a counter in one process).
    """
    params, options = params or Parameters(), options or AuditOptions()
    frame = read_rows(data, setup.dataset.layout.columns, blocksize=blocksize)
    out = Path(out)
    manifest = {"data": _fingerprint(Path(data)), "setup": setup.key, "model": setup.model.name,
                "dataset": setup.dataset.name, "reference": setup.reference.description,
                "restricted": list(setup.restricted),
                "params": params.as_dict(), "options": asdict(options), "blocksize": blocksize,
                "partitions": frame.npartitions, "groups": list(setup.dataset.group_names)}
    lengths = _check_manifest(out, manifest)
    parts = frame.to_delayed()
    if client is None and scheduler is None:
        small = workers is None and _input_bytes(Path(data)) < SINGLE_PROCESS_BYTES
        scheduler = "single" if small else "local"
    with Executor(client, scheduler, workers) as run:
        if lengths is None:
            counted = frame[[frame.columns[0]]].to_delayed()  # one column is read to count the rows
            lengths = [int(n) for n in run.compute([dask.delayed(len)(p) for p in counted])]
            _write_json(out / MANIFEST, {**manifest, "lengths": lengths})
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int).tolist()
        done = {i for i in range(len(parts)) if _part_path(out, i).exists()}
        todo = [i for i in range(len(parts)) if i not in done]
        items = {i: (parts[i], offsets[i], params, options) for i in todo}
        for i, table in run.stream(setup, explain_partition, items, progress, unit="partitions"):
            _write_part(out, i, table)
            if on_partition is not None:
                on_partition(i)
        executor = run.name
    summary = summarize(out)
    return AuditRun(out, tuple(todo), tuple(sorted(done)), summary, executor)


def _check_manifest(out: Path, manifest: dict) -> list[int] | None:
    """The partition lengths recorded by an earlier run of the same audit (None for a new folder)."""
    path = out / MANIFEST
    if not path.exists():
        if out.exists() and any(out.iterdir()):
            raise IntakeError(f"{out} is not empty and holds no audit; pass a new or empty output folder.")
        return None
    recorded = json.loads(path.read_text())
    differ = [k for k in manifest if json.dumps(recorded.get(k)) != json.dumps(manifest[k])]
    if differ:
        raise IntakeError(f"{out} holds an audit of other inputs ({', '.join(differ)} differ); pass a new output "
                          "folder, or delete this one to start again.")
    return recorded["lengths"]


def _part_path(out: Path, i: int) -> Path:
    return out / PARTS / f"part-{i:05d}.parquet"


def _write_part(out: Path, i: int, table) -> None:
    path = _part_path(out, i)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    pq.write_table(table, tmp)
    os.replace(tmp, path)  # a partition file is whole or absent, even when a run is interrupted


def _write_json(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1))
    os.replace(tmp, path)
