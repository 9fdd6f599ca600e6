"""Many rows (the command line's batch mode): one PDF per row and ``index.csv`` with the headline numbers."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Sequence

import pandas as pd

from ..errors import ExplainError
from ..export import to_csv
from ..setup import Parameters, Setup
from .build import INDEX_COLUMNS, SECTIONS, build_row_report
from .pdf import write_pdf


def write_index(rows: Sequence[dict], path: str | Path) -> Path:
    """The batch index (one row per report, :data:`INDEX_COLUMNS` plus ``error``) as CSV."""
    frame = pd.DataFrame(list(rows))
    columns = list(INDEX_COLUMNS) + (["error"] if "error" in frame.columns else [])
    frame = frame.reindex(columns=columns)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(to_csv(frame))
    return path


def batch_reports(setup: Setup, rows: Sequence[int], params: Parameters, out: str | Path, *,
                  sections: Iterable[str] = SECTIONS, image_renderer: str = "auto",
                  progress: Callable[[int, int], None] | None = None) -> tuple[Path, list[dict]]:
    """One PDF per row in ``out`` and ``index.csv`` with the headline numbers; a row whose explanation fails
    is recorded in the index with its error and the others go on. Returns the index path and its rows."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    index: list[dict] = []
    try:
        for i, row in enumerate(rows):
            try:
                report = build_row_report(setup, int(row), params, sections)
                write_pdf(report, out / report.file_name, image_renderer=image_renderer)
                index.append(report.index_row(report.file_name))
            except ExplainError as exc:
                index.append({"row": int(row), "error": str(exc)})
            if progress is not None:
                progress(i + 1, len(rows))
    finally:
        path = write_index(index, out / "index.csv")
    return path, index
