"""The PDF's page primitives: A4 with fpdf2 and an embedded DejaVu Sans (σ, τ, ≥, –, SEV⁻ all render), the
:class:`Writer`'s layout helpers the sections write with, and the report's :class:`Images`, drawn in a background
thread while the text is laid out.
"""
from __future__ import annotations

import io
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from .build import RowReport
from .figures import figure_png, figure_size

SECTION_MIN_SPACE_MM = 110  # a section starts on a new page when less than this is left
FONT = "DejaVu"


@lru_cache(maxsize=1)
def font_files() -> dict[str, Path]:
    """DejaVu Sans (regular, bold, oblique) from matplotlib's data folder, for Unicode text in the PDF.

    Returns
    -------
    dict of str to pathlib.Path
        Style (``""``, ``"B"``, ``"I"``) → its font file.

    Raises
    ------
    RuntimeError
        When a font file is missing.
    """
    import matplotlib

    folder = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    files = {"": folder / "DejaVuSans.ttf", "B": folder / "DejaVuSans-Bold.ttf", "I": folder / "DejaVuSans-Oblique.ttf"}
    missing = [str(p) for p in files.values() if not p.exists()]
    if missing:
        raise RuntimeError(f"DejaVu Sans not found at {', '.join(missing)}; the report embeds it for Unicode text")
    return files


def _document(footer: str, title: str, subject: str):
    from fpdf import FPDF

    class Document(FPDF):
        def footer(self) -> None:  # noqa: D401 — fpdf2 hook
            self.set_y(-11)
            self.set_font(FONT, size=7)
            self.set_text_color(120, 120, 120)
            self.cell(0, 4, f"{footer} · page {self.page_no()} of {{nb}}", align="C")
            self.set_text_color(0, 0, 0)

    pdf = Document(orientation="P", unit="mm", format="A4")
    pdf.set_margins(15, 14, 15)
    pdf.set_auto_page_break(True, margin=16)
    for style, path in font_files().items():
        pdf.add_font(FONT, style, str(path))
    pdf.set_title(title)
    pdf.set_subject(subject)
    pdf.set_creator("explain_core report")
    pdf.set_author("explain_core")
    pdf.set_lang("en")
    return pdf


def needs_shaping(*texts: str) -> bool:
    """Whether any text has a combining mark (the hat of F̂), which only harfbuzz's text shaping places."""
    return any(unicodedata.combining(c) for text in texts for c in text)


class Writer:
    """Small layout helpers over an fpdf2 document. Text is shaped (harfbuzz) only where it has a combining mark:
    shaping measures every line break through harfbuzz, most of the PDF's time, for the same glyphs elsewhere."""

    def __init__(self, pdf):
        self.pdf = pdf

    def shape(self, *texts: str) -> None:
        """Text shaping on for what comes next exactly when ``texts`` need it (:func:`needs_shaping`)."""
        self.pdf.set_text_shaping(needs_shaping(*texts))

    def h1(self, text: str) -> None:
        self.shape(text)
        self.pdf.set_font(FONT, "B", 15)
        self.pdf.multi_cell(0, 7, text, new_x="LMARGIN", new_y="NEXT")
        self.pdf.ln(1.5)

    def h2(self, text: str) -> None:
        if self.pdf.get_y() > self.pdf.page_break_trigger - 30:
            self.pdf.add_page()
        self.pdf.ln(2)
        self.shape(text)
        self.pdf.set_font(FONT, "B", 11)
        self.pdf.multi_cell(0, 5.5, text, new_x="LMARGIN", new_y="NEXT")
        self.pdf.ln(1)

    def text(self, text: str, size: float = 9, style: str = "", colour=(0, 0, 0), gap: float = 1.5) -> None:
        self.shape(text)
        self.pdf.set_font(FONT, style, size)
        self.pdf.set_text_color(*colour)
        self.pdf.multi_cell(0, size * 0.48, text, new_x="LMARGIN", new_y="NEXT", align="L")
        self.pdf.set_text_color(0, 0, 0)
        self.pdf.ln(gap)

    def term(self, name: str, text: str, size: float = 8.5, gap: float = 1.0) -> None:
        """A definition: the term in bold, its text on the same line (one paragraph, no line of its own)."""
        self.shape(name, text)
        self.pdf.set_font(FONT, "", size)
        self.pdf.multi_cell(0, size * 0.48, f"**{name}**: {text}", new_x="LMARGIN", new_y="NEXT", align="L",
                            markdown=True)
        self.pdf.ln(gap)

    def note(self, text: str) -> None:
        self.text(text, size=7.5, colour=(90, 90, 90))

    def table(self, header: Sequence[str], rows: Sequence[Sequence[object]], widths: Sequence[float] | None = None,
              align: Sequence[str] | None = None, size: float = 8) -> None:
        from fpdf.fonts import FontFace

        pdf = self.pdf
        header, rows = [str(c) for c in header], [[str(c) for c in cells] for cells in rows]
        self.shape(*header, *(c for cells in rows for c in cells))  # the cells are laid out when the table ends
        pdf.set_font(FONT, "", size)
        n = len(header)
        widths = tuple(widths) if widths is not None else (1,) * n
        align = tuple(align) if align is not None else ("LEFT",) * n
        with pdf.table(col_widths=widths, text_align=align, line_height=size * 0.5, width=pdf.epw,
                       first_row_as_headings=True, borders_layout="HORIZONTAL_LINES", padding=(0.6, 1.2),
                       headings_style=FontFace(emphasis="BOLD", fill_color=(232, 237, 246)),
                       repeat_headings=1) as table:
            for cells in [header, *rows]:
                row = table.row()
                for cell in cells:
                    row.cell(cell)
        pdf.ln(2)

    def section(self) -> None:
        """A new section: on a new page unless most of the current one is still free."""
        if self.pdf.page_break_trigger - self.pdf.get_y() < SECTION_MIN_SPACE_MM:
            self.pdf.add_page()
        else:
            self.pdf.ln(6)

    def image(self, png: bytes, size: tuple[int, int], caption: str | None = None) -> None:
        pdf = self.pdf
        width = pdf.epw
        height = width * size[1] / size[0]
        if pdf.get_y() + height + (8 if caption else 0) > pdf.page_break_trigger:
            pdf.add_page()
        y = pdf.get_y()
        pdf.image(io.BytesIO(png), x=pdf.l_margin, y=y, w=width, h=height)
        pdf.set_y(y + height + 1)
        if caption:
            self.note(caption)


class Images:
    """The report's figures as PNGs, drawn in a background thread while the text is laid out (kaleido works in
    its own browser process, so the two overlap; matplotlib's object API is safe off the main thread);
    ``draw`` waits for the figure it places."""

    def __init__(self, report: RowReport, renderer: str, used: list | None):
        from concurrent.futures import ThreadPoolExecutor

        self.report, self.used = report, used
        self.sizes = {name: figure_size(fig) for name, fig in report.figures.items()}
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="report-figures")
        self.futures = {name: self.pool.submit(figure_png, fig, renderer, width=self.sizes[name][0],
                                               height=self.sizes[name][1])
                        for name, fig in report.figures.items()}

    def draw(self, w: Writer, name: str, caption: str | None = None) -> None:
        if name not in self.futures:
            return
        png, used = self.futures[name].result()
        if self.used is not None:
            self.used.append(used)
        w.image(png, self.sizes[name], caption)

    def close(self) -> None:
        for future in self.futures.values():
            future.cancel()
        self.pool.shutdown(wait=True)
