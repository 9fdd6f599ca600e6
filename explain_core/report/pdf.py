"""The PDF: :func:`write_pdf` lays out a :class:`~.build.RowReport` on the pages of :mod:`.writer` (the sections
are :mod:`.sections` and :mod:`.model_sections`), with its figures drawn in a background thread.
"""
from __future__ import annotations

from pathlib import Path

from .build import RowReport
from .figures import resolve_renderer
from .model_sections import cohorts_section, dependence_section, method_section
from .sections import (agreement_section, appendix, counterfactual_section, lens_section, linear_section, sev_section,
                       summary)
from .writer import Images, Writer, _document


def write_pdf(report: RowReport, path: str | Path | None = None, *, image_renderer: str = "auto",
              renderers_used: list | None = None) -> bytes:
    """The report as an A4 PDF: returns its bytes, and writes them to ``path`` when given.

    ``image_renderer`` is ``auto`` (plotly's static export when kaleido and Chromium are available, else the
    matplotlib re-plot), ``plotly`` or ``matplotlib``; the text is the same with either. ``renderers_used``
    (a list) receives the renderer that drew each figure.

    Parameters
    ----------
    report : RowReport
        The row's report.
    path : str or pathlib.Path, optional
        Where to write it.
    image_renderer : str
        ``"auto"``, ``"plotly"`` or ``"matplotlib"``.
    renderers_used : list, optional
        Receives each figure's renderer.

    Returns
    -------
    bytes
        The PDF.

    Raises
    ------
    IntakeError
        When ``image_renderer`` is unknown.
    """
    resolve_renderer(image_renderer)  # validates the name early
    s = report.setup
    where = f"row {report.row}" if report.row is not None else "custom row"
    pdf = _document(f"{s.dataset.name} · {where} · {s.model.name} · created {report.created:%Y-%m-%d %H:%M}",
                    report.title, f"Explanation report for {where} of {s.dataset.name}")
    w = Writer(pdf)
    images = Images(report, image_renderer, renderers_used)
    try:
        pdf.add_page()
        summary(w, report)
        number = 0
        for section in report.sections:
            if section != "appendix" and _has(report, section):
                number += 1
                w.section()
                _draw(w, report, section, number, images)
        if report.cohorts is not None:
            w.section()
            cohorts_section(w, report, number + 1, images)
        if "appendix" in report.sections:
            w.section()
            appendix(w, report)
    finally:
        images.close()
    data = bytes(pdf.output())
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)
    return data


LAYOUTS = {"sev": sev_section, "lens": lens_section, "linear": linear_section, "agreement": agreement_section,
           "counterfactuals": counterfactual_section, "dependence": dependence_section}
"""The sections with a layout of their own; any other registered method's is :func:`~.model_sections.method_section`."""


def _draw(w: Writer, report: RowReport, section: str, number: int, images: Images) -> None:
    if section in LAYOUTS:
        LAYOUTS[section](w, report, number, images)
    else:
        method_section(w, report, section, number, images)


def _has(report: RowReport, section: str) -> bool:
    return (report.dependence if section == "dependence" else report.result(section)) is not None
