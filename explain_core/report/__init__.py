"""PDF reports of one decision: every method on one row, written for a reader who never opened the app.

:func:`build_row_report` reads a row's results from a lazy :class:`RowResults` bundle (the app's own cached results,
or the registered methods' computes on first access) with their figures and :class:`Headline` numbers into a
:class:`RowReport`;
:func:`write_pdf` lays it out on A4 (:mod:`.pdf`, :mod:`.sections`); figures are plotly's static export or the
matplotlib re-plot of the same data (:mod:`.figures`, :mod:`.replot`); :func:`batch_reports` writes one PDF per
row and an index (:mod:`.batch`); :func:`write_audit_pdf` reports a dataset-wide audit (:mod:`.audit`). No
Streamlit here: the app's Report page and ``python -m explain_core report`` both call this package.
"""
from ..errors import RenderError
from .audit import write_audit_pdf
from .batch import BatchOptions, batch_reports, write_index
from .build import (INDEX_COLUMNS, Headline, RowReport, build_row_report, check_sections, linear_support_method,
                    report_sections, section_title)
from .bundle import RowResults
from .figures import RENDERERS, figure_png, figure_size, find_chromium, plotly_export_available, \
    resolve_renderer
from .pdf import write_pdf
from .replot import FIGURE_SCALE, FIGURE_WIDTH_PX, matplotlib_figure
from .writer import font_files

__all__ = ["FIGURE_SCALE", "FIGURE_WIDTH_PX", "INDEX_COLUMNS", "RENDERERS", "BatchOptions", "Headline", "RenderError",
           "RowReport", "RowResults", "batch_reports", "build_row_report", "check_sections", "figure_png",
           "figure_size", "find_chromium", "font_files", "linear_support_method", "matplotlib_figure",
           "plotly_export_available", "report_sections", "resolve_renderer", "section_title",
           "write_audit_pdf", "write_index", "write_pdf"]
