"""PDF reports of one decision: every method on one row, written for a reader who never opened the app.

:func:`build_row_report` gathers the results (the same :mod:`explain_core.analysis` calls as the app's pages, or
the app's own cached results passed in) with their figures and :class:`Headline` numbers in a :class:`RowReport`;
:func:`write_pdf` lays it out on A4 (:mod:`.pdf`, :mod:`.sections`); figures are plotly's static export or the
matplotlib re-plot of the same data (:mod:`.figures`, :mod:`.replot`); :func:`batch_reports` writes one PDF per
row and an index (:mod:`.batch`); :func:`write_audit_pdf` reports a dataset-wide audit (:mod:`.audit`). No
Streamlit here: the app's Report page and ``python -m explain_core report`` both call this package.
"""
from ..errors import RenderError
from .audit import write_audit_pdf
from .batch import batch_reports, write_index
from .build import (INDEX_COLUMNS, SECTION_TITLES, SECTIONS, Headline, RowReport, build_row_report, check_sections,
                    linear_support_method, needed_results, smallest_factor)
from .figures import RENDERERS, figure_png, figure_size, find_chromium, kaleido_png, plotly_export_available, \
    resolve_renderer
from .pdf import write_pdf
from .replot import FIGURE_SCALE, FIGURE_WIDTH_PX, matplotlib_figure, matplotlib_png
from .writer import font_files

__all__ = ["FIGURE_SCALE", "FIGURE_WIDTH_PX", "INDEX_COLUMNS", "RENDERERS", "SECTIONS", "SECTION_TITLES", "Headline",
           "RenderError", "RowReport", "batch_reports", "build_row_report", "check_sections", "figure_png",
           "figure_size", "find_chromium", "font_files", "kaleido_png", "linear_support_method",
           "matplotlib_figure", "matplotlib_png", "needed_results", "plotly_export_available", "resolve_renderer",
           "smallest_factor", "write_audit_pdf", "write_index", "write_pdf"]
