"""Many rows (the command line's batch mode): one PDF per row and ``index.csv`` with the headline numbers; with
``json``, each row's results too, in the app's JSON download format."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from ..audit.rows import Cluster
from ..errors import ExplainError
from ..export import to_csv
from ..setup import Parameters, Setup
from .build import INDEX_COLUMNS, build_row_report, report_sections
from .bundle import RowResults
from .dependence import report_interactions
from .pdf import write_pdf


def write_index(rows: Sequence[dict], path: str | Path) -> Path:
    """The batch index (one row per report, :data:`INDEX_COLUMNS` plus ``error``) as CSV.

    Parameters
    ----------
    rows : sequence of dict
        One row per report.
    path : str or pathlib.Path
        The CSV file.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    frame = pd.DataFrame(list(rows))
    columns = list(INDEX_COLUMNS) + (["error"] if "error" in frame.columns else [])
    frame = frame.reindex(columns=columns)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(to_csv(frame))
    return path


@dataclass(frozen=True)
class BatchOptions:
    """What each report of a batch holds and how it is written.

    Parameters
    ----------
    sections : tuple of str, optional
        The sections (default: all, :func:`~.build.report_sections`).
    image_renderer : str
        ``"auto"``, ``"plotly"`` or ``"matplotlib"``.
    json : bool
        Write each row's results as JSON too.
    """

    sections: tuple[str, ...] | None = None
    image_renderer: str = "auto"
    json: bool = False


def batch_reports(setup: Setup, rows: Sequence[int], params: Parameters, out: str | Path, *,
                  options: BatchOptions | None = None, progress: Callable[[int, int], None] | None = None,
                  cluster: Cluster | None = None) -> tuple[Path, list[dict]]:
    """One PDF per row in ``out`` and ``index.csv`` with the headline numbers; a row whose explanation fails
    is recorded in the index with its error and the others go on. Returns the index path and its rows. With
    ``options.json``, each row's results (:meth:`~explain_core.report.build.RowReport.json_files`) are written
    beside its PDF.

    ``cluster`` fans the rows out over a Dask cluster as audits do
    (:class:`~explain_core.audit.cluster.Executor`: the setup sent to each worker once, one task per row, the PDF's
    bytes written here); by default every report is built in this process.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    rows : sequence of int
        Dataset positions.
    params : Parameters
        Every parameter.
    out : str or pathlib.Path
        The folder.
    options : BatchOptions, optional
        The sections, the figures' renderer and the JSON files.
    progress : callable, optional
        ``progress(done, total)``.
    cluster : Cluster, optional
        Where the reports are built (default: this process).

    Returns
    -------
    tuple of (pathlib.Path, list of dict)
        The index's path, and its rows (a row that failed, an unknown section included, with its error).
    """
    out, options = Path(out), options or BatchOptions()
    out.mkdir(parents=True, exist_ok=True)
    found: dict[int, dict] = {}
    sections = report_sections() if options.sections is None else tuple(options.sections)
    options = replace(options, sections=sections)
    pairs = report_interactions(setup, params.seed) if "dependence" in sections else None  # one for every row
    items = {i: (int(row), params, options, pairs) for i, row in enumerate(rows)}
    try:
        for i, (name, pdf, entry, files) in _reports(setup, items, cluster or Cluster()):
            if pdf is not None:
                (out / name).write_bytes(pdf)
            for file, text in files.items():
                (out / file).write_text(text, encoding="utf-8")
            found[i] = entry
            if progress is not None:
                progress(len(found), len(rows))
    finally:
        index = [found[i] for i in sorted(found)]
        path = write_index(index, out / "index.csv")
    return path, index


def _reports(setup: Setup, items: dict, cluster: Cluster):
    if cluster.client is None and cluster.scheduler in (None, "single"):
        yield from ((i, row_report(setup, *args)) for i, args in items.items())
        return
    from ..audit.cluster import Executor
    with Executor(cluster.client, cluster.scheduler, cluster.workers) as run:
        yield from run.stream(setup, row_report, items, unit="reports")


def row_report(setup: Setup, row: int, params: Parameters, options: BatchOptions, interactions=None):
    """(file name, PDF bytes, index row, JSON files) of one row's report (the JSON files only with
    ``options.json``; ``interactions``: the setup's, computed once for the batch);
    (None, None, the row and its error, {}) when it fails."""
    try:
        results = RowResults(setup, row, params, supply={} if interactions is None else {"interactions": interactions})
        report = build_row_report(results, options.sections)
        pdf = write_pdf(report, image_renderer=options.image_renderer)
        return report.file_name, pdf, report.index_row(report.file_name), report.json_files() if options.json else {}
    except ExplainError as exc:
        return None, None, {"row": row, "error": str(exc)}, {}
