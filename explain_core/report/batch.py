"""Many rows (the command line's batch mode): one PDF per row and ``index.csv`` with the headline numbers; with
``json``, each row's results too, in the app's JSON download format."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Sequence

import pandas as pd

from ..errors import ExplainError
from ..export import to_csv
from ..setup import Parameters, Setup
from .build import INDEX_COLUMNS, SECTIONS, build_row_report
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


def batch_reports(setup: Setup, rows: Sequence[int], params: Parameters, out: str | Path, *,
                  sections: Iterable[str] = SECTIONS, image_renderer: str = "auto",
                  progress: Callable[[int, int], None] | None = None, scheduler: str | None = None,
                  workers: int | None = None, client=None, json: bool = False) -> tuple[Path, list[dict]]:
    """One PDF per row in ``out`` and ``index.csv`` with the headline numbers; a row whose explanation fails
    is recorded in the index with its error and the others go on. Returns the index path and its rows. With
    ``json``, each row's results (:meth:`~explain_core.report.build.RowReport.json_files`) are written beside its PDF.

    ``scheduler`` / ``workers`` / ``client`` fan the rows out over a Dask cluster as audits do
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
    sections : iterable of str
        The sections.
    image_renderer : str
        ``"auto"``, ``"plotly"`` or ``"matplotlib"``.
    progress : callable, optional
        ``progress(done, total)``.
    scheduler : str, optional
        ``"local"`` or a Dask scheduler's address.
    workers : int, optional
        Local workers.
    client : distributed.Client, optional
        A Dask client.
    json : bool
        Write each row's results as JSON too.

    Returns
    -------
    tuple of (pathlib.Path, list of dict)
        The index's path, and its rows (a row that failed, an unknown section included, with its error).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    found: dict[int, dict] = {}
    sections = tuple(sections)
    pairs = report_interactions(setup, params.seed) if "dependence" in sections else None  # one for every row
    items = {i: (int(row), params, sections, image_renderer, json, pairs) for i, row in enumerate(rows)}
    try:
        for i, (name, pdf, entry, files) in _reports(setup, items, scheduler, workers, client):
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


def _reports(setup: Setup, items: dict, scheduler: str | None, workers: int | None, client):
    if client is None and scheduler in (None, "single"):
        yield from ((i, row_report(setup, *args)) for i, args in items.items())
        return
    from ..audit.cluster import Executor
    with Executor(client, scheduler, workers) as run:
        yield from run.stream(setup, row_report, items, unit="reports")


def row_report(setup: Setup, row: int, params: Parameters, sections: tuple[str, ...], image_renderer: str,
               json: bool = False, interactions=None):
    """(file name, PDF bytes, index row, JSON files) of one row's report (the JSON files only with ``json``;
    ``interactions``: the setup's, computed once for the batch);
    (None, None, the row and its error, {}) when it fails."""
    try:
        report = build_row_report(setup, row, params, sections, interactions=interactions)
        pdf = write_pdf(report, image_renderer=image_renderer)
        return report.file_name, pdf, report.index_row(report.file_name), report.json_files() if json else {}
    except ExplainError as exc:
        return None, None, {"row": row, "error": str(exc)}, {}
