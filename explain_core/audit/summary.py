"""An audit folder: its partition files, the summary over all of them, and reading both back.

The summary is computed by reading the partition files one at a time (only the columns it needs), so it costs
one pass and little memory at any size: per SEV kind, the rows per value
(:func:`~explain_core.sev.summaries.sev_counts`'s table), the statuses, the unexplainable share and the feature
prevalence (:func:`~explain_core.sev.summaries.prevalence_table`'s; None for a values-only audit, whose searches
stopped at the first flip: ``explanations`` says which); with LENS, the factor sizes and groups; with flips, LIME-C /
SHAP-C beside SEV⁻.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ..sev.summaries import NOT_EXPLAINED
from .ledger import MANIFEST, part_path, read_manifest, written_parts

SUMMARY = "summary.json"
AUDIT_DIR_ENV = "EXPLAIN_AUDIT_DIR"
FLIP_COLUMNS = ("sev_minus", "lime_c", "shap_c")  # "never": rows where it is not found
LABELS = {"minus": "SEV⁻", "plus": "SEV⁺", "restricted": "SEV®"}
VALUES_ONLY = ("No feature prevalence: this audit computed values only (each SEV search stopped at its first flipping "
               "vertex, so its explanations column holds that one).")


def _written(folder: str | Path) -> tuple[Path, dict, list[int]]:
    """The audit folder, its manifest and the partitions written in it (without checking their sums)."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    return folder, manifest, written_parts(folder, manifest, checksums=False)


def summarize(folder: str | Path) -> dict:
    """The summary of every partition the manifest lists in ``folder`` (also saved as ``summary.json``).

    Parameters
    ----------
    folder : str or pathlib.Path
        The audit's folder.

    Returns
    -------
    dict
        The SEV distributions, feature prevalence, unexplainable share and row counts.

    Raises
    ------
    IntakeError
        When the folder holds no audit, or a damaged one.
    """
    folder, manifest, parts = _written(folder)
    files = [part_path(folder, i) for i in parts]
    kinds = ["minus", "plus"] + (["restricted"] if manifest["restricted"] else [])
    explanations = manifest["options"].get("explanations", "all")
    tally = {k: {"values": Counter(), "status": Counter(), "used": Counter()} for k in kinds}
    lens, flips, rows, seconds = Counter(), Counter(), 0, 0.0
    for file in files:
        names = pq.read_schema(file).names
        table = pq.read_table(file, columns=[n for n in names if n.startswith(("sev_", "factor", "lime_c", "shap_c",
                                                                                   "seconds"))])
        rows += table.num_rows
        seconds += float(pc.sum(table["seconds"]).as_py() or 0.0)
        for kind in kinds:
            t = tally[kind]
            t["values"].update(_value_counts(table[f"sev_{kind}"]))
            t["status"].update(_value_counts(table[f"sev_{kind}_status"]))
            if explanations == "all":
                t["used"].update(_rows_per_group(table[f"sev_{kind}_explanations"]))
        if "factor" in names:
            lens.update(f"size {len(f)}" if f is not None else "none" for f in table["factor"].to_pylist())
            lens.update(f"group {g}" for f in table["factor"].to_pylist() if f for g in f)
        if "lime_c" in names:
            for c in FLIP_COLUMNS:
                flips[(c, "sum")] += float(pc.sum(table[c]).as_py() or 0)
                flips[(c, "rows")] += table.num_rows - table[c].null_count
    summary = {"rows": rows, "partitions": len(files), "of_partitions": manifest["partitions"],
               "seconds": seconds, "groups": manifest["groups"], "restricted": manifest["restricted"],
               "explanations": explanations,
               "kinds": {k: _kind_summary(k, tally[k], rows, manifest["groups"], explanations == "all")
                         for k in kinds}}
    if lens:
        summary["lens"] = dict(lens)
    if flips:
        summary["flips"] = {c: {"mean": flips[(c, "sum")] / flips[(c, "rows")] if flips[(c, "rows")] else None,
                                "never": rows - flips[(c, "rows")]} for c in FLIP_COLUMNS}
    (folder / SUMMARY).write_text(json.dumps(summary, indent=1))
    return summary


def _value_counts(column: pa.ChunkedArray) -> dict:
    """Rows per value of ``column`` (nulls not counted), counted by Arrow."""
    counted = pc.value_counts(column)
    return {v: n for v, n in zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist())
            if v is not None}


def _rows_per_group(column: pa.ChunkedArray) -> Counter:
    """For each group, the rows whose minimal explanations use it (list<list<str>>: each group once per row), from
    a row × group table of the group names' dictionary codes."""
    used = Counter()
    for chunk in column.chunks:
        inner = pc.list_flatten(chunk)
        names = pc.dictionary_encode(pc.list_flatten(inner))
        if len(names) == 0:
            continue
        rows = pc.list_parent_indices(chunk).to_numpy()[pc.list_parent_indices(inner).to_numpy()]
        levels = names.dictionary.to_pylist()
        seen = np.zeros((len(chunk), len(levels)), dtype=bool)
        seen[rows, names.indices.to_numpy()] = True
        used.update({level: int(n) for level, n in zip(levels, seen.sum(axis=0)) if n})
    return used


def _kind_summary(kind: str, t: dict, rows: int, groups: list[str], every_explanation: bool) -> dict:
    explained = t["status"].get("explained", 0)
    values = sorted(t["values"])
    return {"label": LABELS[kind], "explained": explained, "status": dict(t["status"]),
            "unexplainable_share": t["status"].get("unexplainable", 0) / rows if rows else 0.0,
            "mean": sum(v * n for v, n in t["values"].items()) / explained if explained else None,
            "counts": {str(v): t["values"][v] for v in range(values[0], values[-1] + 1)} if values else {},
            "not_explained": rows - explained,
            "prevalence": {g: t["used"].get(g, 0) for g in groups} if every_explanation else None}


@dataclass(frozen=True)
class Audit:
    """An audit folder read back: its settings, its summary, and its rows (read on demand, never all at once
    unless asked).

    Parameters
    ----------
    folder : pathlib.Path
        The audit's folder.
    manifest : dict
        Its manifest (``audit.json``).
    summary : dict
        Its summary (``summary.json``).
    """

    folder: Path
    manifest: dict
    summary: dict

    @property
    def complete(self) -> bool:
        return self.summary["partitions"] == self.summary["of_partitions"]

    @property
    def kinds(self) -> list[str]:
        return list(self.summary["kinds"])

    def counts(self, kind: str = "minus") -> pd.DataFrame:
        """Rows per SEV value, as :func:`~explain_core.sev.summaries.sev_counts` lays it out (``sev``, ``count``,
        ``share``).

        Parameters
        ----------
        kind : str
            ``"minus"``, ``"plus"`` or ``"restricted"``.

        Returns
        -------
        pandas.DataFrame
            The counts.
        """
        k = self.summary["kinds"][kind]
        total = self.summary["rows"]
        levels = [int(v) for v in k["counts"]] + [NOT_EXPLAINED]
        counts = list(k["counts"].values()) + [k["not_explained"]]
        return pd.DataFrame({"sev": levels, "count": counts, "share": [c / total if total else 0.0 for c in counts]})

    def prevalence(self, kind: str = "minus") -> pd.DataFrame | None:
        """Per group, explained rows whose minimal explanations use it, as :func:`~explain_core.views.
        prevalence_table` lays it out (``attrs``: ``explained``, ``queries``, ``label``); None for a values-only
        audit (``AuditOptions.explanations="first"``).

        Parameters
        ----------
        kind : str
            As for :meth:`counts`.

        Returns
        -------
        pandas.DataFrame or None
            The prevalence table.
        """
        k = self.summary["kinds"][kind]
        if k["prevalence"] is None:
            return None
        table = pd.DataFrame({"group": list(k["prevalence"]), "count": list(k["prevalence"].values())})
        table["share"] = table["count"] / k["explained"] if k["explained"] else 0.0
        table.attrs.update(explained=k["explained"], queries=self.summary["rows"], label=LABELS[kind])
        return table

    @cached_property
    def _dataset(self) -> ds.Dataset:
        files = [str(part_path(self.folder, i)) for i in written_parts(self.folder, self.manifest, checksums=False)]
        return ds.dataset(files, format="parquet")

    def rows(self, columns: list[str] | None = None, *, limit: int | None = None, where=None) -> pd.DataFrame:
        """Audit rows (all columns, or ``columns``), at most ``limit`` of them, optionally filtered by a pyarrow
        expression ``where`` (e.g. ``pc.field("sev_minus") >= 3``), in row order within each partition.

        Parameters
        ----------
        columns : list of str, optional
            The columns.
        limit : int, optional
            The most rows.
        where : pyarrow.compute.Expression, optional
            A filter.

        Returns
        -------
        pandas.DataFrame
            The rows.
        """
        scanner = self._dataset.scanner(columns=columns, filter=where)
        table = scanner.head(limit) if limit is not None else scanner.to_table()
        return table.to_pandas()


def audit_folders(root: str | Path | None = None) -> list[Path]:
    """The audits the server's operator offers (folders holding an audit under ``root``, default the environment
    variable ``EXPLAIN_AUDIT_DIR``; none when it is unset), newest first.

    Parameters
    ----------
    root : str or pathlib.Path, optional
        The folder to look in.

    Returns
    -------
    list of pathlib.Path
        The audit folders.
    """
    root = root or os.environ.get(AUDIT_DIR_ENV)
    if not root or not Path(root).is_dir():
        return []
    found = [p.parent for p in Path(root).glob(f"*/{MANIFEST}")] + ([Path(root)] if (Path(root) / MANIFEST).is_file()
                                                                   else [])
    return sorted(found, key=lambda p: (p / MANIFEST).stat().st_mtime, reverse=True)


def read_audit(folder: str | Path) -> Audit:
    """The audit in ``folder`` (written by :func:`~explain_core.audit.run_audit`); its summary is recomputed when
    partitions were written after it (an interrupted run).

    Parameters
    ----------
    folder
        As for :func:`summarize`.

    Returns
    -------
    Audit
        The audit.

    Raises
    ------
    IntakeError
        As for :func:`summarize`.
    """
    folder, manifest, parts = _written(folder)
    files = len(parts)
    try:
        summary = json.loads((folder / SUMMARY).read_text()) if (folder / SUMMARY).is_file() else None
    except (ValueError, UnicodeDecodeError):
        summary = None
    if not isinstance(summary, dict) or summary.get("partitions") != files:
        summary = summarize(folder)
    return Audit(folder, manifest, summary)
