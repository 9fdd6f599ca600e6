"""PDF reports of one decision: every method on one row, written for a reader who never opened the app.

:func:`build_row_report` gathers the results (the same :mod:`explain_core.analysis` calls as the app's pages,
or the app's own cached results passed in) with their figures and headline numbers in a :class:`RowReport`;
:func:`write_pdf` lays it out on A4 with fpdf2 and an embedded DejaVu Sans (σ, τ, ≥, –, SEV⁻ all render).
Every headline number is written as text, so it can be read (and checked) without the images.

Figures are the plotly figures of :mod:`explain_core.plots`. :func:`figure_png` draws them with plotly's static
export (kaleido, which needs a Chrome/Chromium; one server per process, guarded by a lock) or, where no browser
is available, re-plots them with matplotlib **from the plotly figure's own trace data** (:func:`matplotlib_png`),
so both renderers draw the same numbers and the report's text does not depend on which one ran.

No Streamlit here: the app's Report page and ``python -m explain_core report`` both call this module.
"""
from __future__ import annotations

import importlib.util

import io
import logging
import math
import os
import re
import shutil
import textwrap
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .analysis import (Agreement, Baselines, LensReport, LinearReport, Parameters, Setup, agreement, lens_max_size,
                       lens_report, row_baselines, row_lens_contexts, row_linear, row_sev, score_of)
from .data import IntakeError, format_value
from .plots import HYPERCUBE_FIGURE_MAX_GROUPS, agreement_figure, hypercube_figure, lattice_figure, pn_curve_figure, \
    weights_figure
from .sev import GroupLayout, Hypercube, SEVExplanation, hypercube

log = logging.getLogger(__name__)

SECTIONS = ("sev", "lens", "linear", "agreement", "appendix")
SECTION_TITLES = {"sev": "SEV", "lens": "LENS", "linear": "Linear", "agreement": "Agreement", "appendix": "Appendix"}
RENDERERS = ("auto", "plotly", "matplotlib")
UNCHANGED = "—"
METHOD_LABELS = {"iht": "IHT", "exact": "exact (MIP)", "lime": "LIME (k−1 + intercept)", "shap": "SHAP (dense)",
                 "shap_k": "SHAP (top k−1 + bias)", "l1_relax": "ℓ1 relaxation"}  # as the Linear page names them
INDEX_COLUMNS = ("row", "prediction", "score", "sev_minus", "sev_plus", "sev_restricted", "lens_smallest_factor",
                 "lens_ps", "linear_support", "pdf")

# Figures in the PDF: plotly pixels (before ``scale``), placed at the text width.
FIGURE_WIDTH_PX = 900
FIGURE_HEIGHT_PX = (320, 620)  # the figure's own height, clipped to this range
FIGURE_SCALE = 2
SECTION_MIN_SPACE_MM = 110
SEV_COLUMNS_PER_TABLE = 5  # explanations per table when features are rows (wide data)
SEV_MAX_EXPLANATIONS = 20  # minimal explanations listed per SEV kind  # a section starts on a new page when less than this is left
KALEIDO_TIMEOUT_S = 60

PAPERS = {
    "sev": "Sun, Y., Chen, Z., Orlandi, V., Wang, T. and Rudin, C. (2024). Sparse and Faithful Explanations "
           "Without Sparse Models. Proceedings of AISTATS 2024 (“Sparse Explanation Value”, SEV).",
    "lens": "Watson, D. S., Gultchin, L., Taly, A. and Floridi, L. (2021). Local Explanations via Necessity and "
            "Sufficiency: Unifying Theory and Practice. Conference on Uncertainty in Artificial Intelligence "
            "(UAI 2021); arXiv:2103.14651.",
    "ple": "Koriche, F., Lagniez, J.-M. and Tran, C. (2026). Probabilistic Linear Explanations. arXiv:2609.19077 "
           "(extended version of the UAI 2025 paper).",
    "lime": "Ribeiro, M. T., Singh, S. and Guestrin, C. (2016). “Why Should I Trust You?”: Explaining the "
            "Predictions of Any Classifier. KDD 2016.",
    "shap": "Lundberg, S. M. and Lee, S.-I. (2017). A Unified Approach to Interpreting Model Predictions. "
            "NeurIPS 2017.",
}


# ---------------------------------------------------------------------------------------------------
# Formatting (one place, so the PDF, the preview, the index CSV and the tests agree)

def fmt_weight(w: float) -> str:
    """A linear weight: 4 decimals, never "-0.0000"."""
    text = f"{float(w):.4f}"
    return "0.0000" if text == "-0.0000" else text


def fmt_ps(ps: float) -> str:
    return f"{float(ps):.3f}"


def fmt_metric(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return f"{float(v):.4f}"


def fmt_p(p) -> str:
    return "—" if p is None else f"{float(p):.3g}"


def factor_text(groups: Sequence[str]) -> str:
    return ", ".join(groups) or "∅ (no feature)"


def outcome_text(setup: Setup, label: int) -> str:
    """A class in words, with the dataset card's description where there is one."""
    name = setup.class_names[int(label)]
    card = setup.dataset.card or {}
    note = card.get("positive_class_label" if label == 1 else "negative_class_label")
    if setup.dataset.task != "classification":
        return f"{setup.dataset.target.name} {name} ({setup.model.threshold:.4g})"
    return f"{name} ({note})" if note else name


def _join(words: Sequence[str]) -> str:
    """a / a and b / a, b and c."""
    words = list(words)
    if not words:
        return ""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def group_values(setup: Setup, values: dict) -> dict[str, object]:
    """One value per feature group (a one-hot block's active column)."""
    return {g: setup.dataset.group_value(g, values) for g in setup.dataset.group_names}


def sev_reading(setup: Setup, ex: SEVExplanation) -> str:
    """One plain-language sentence for the row's SEV⁻ (SEV® when features are restricted)."""
    result = ex.restricted if ex.restricted is not None else ex.minus
    ref = group_values(setup, ex.reference.values)
    other = outcome_text(setup, 1 - result.explained_class)
    held = (f" (with {_join(result.restricted)} held at this row's values)" if result.restricted else "")
    if result.status == "explained":
        firsts = [e for e in result.explanations if e]
        if result.value == 1:
            names = [e[0] for e in firsts]
            text = (f"Changing {names[0]} to the reference value ({format_value(ref[names[0]])}) alone flips the "
                    f"prediction to {other}{held}")
            extra = [f"{n} alone (to {format_value(ref[n])})" for n in names[1:3]]
            if extra:
                text += "; so does changing " + " or ".join(extra)
            if len(names) > 3:
                text += f", and {len(names) - 3} other single feature{'s' if len(names) > 4 else ''}"
            return text + "."
        first = firsts[0]
        text = (f"Changing {_join(first)} together to their reference values "
                f"({', '.join(format_value(ref[g]) for g in first)}) flips the prediction to {other}{held}; "
                "no single feature does")
        if len(firsts) > 1:
            n = len(firsts) - 1
            text += (f", and {n} other set of {result.value} features also does" if n == 1 else
                     f", and {n} other sets of {result.value} features also do")
        return text + "."
    if result.reference_class == result.explained_class:
        same = outcome_text(setup, result.explained_class)
        return (f"The reference itself is predicted {same}, so moving features to it cannot flip the prediction; "
                "use a reference built from the other class.")
    if result.status == "beyond_depth":
        return (f"No set of up to {result.max_depth} feature{'s' if result.max_depth > 1 else ''} moved to the "
                f"reference values flips the prediction{held} (larger sets were not searched).")
    return f"Even moving every feature{held} to the reference values does not flip the prediction."


# ---------------------------------------------------------------------------------------------------
# The report's content

@dataclass
class RowReport:
    """Everything one row's report shows: the results, the figures (plotly, one data object per chart), the
    headline numbers and the plain-language SEV reading. ``row`` is the dataset position (None for a row
    that is not in the data); ``edited`` marks a row changed in the app's what-if editor."""

    setup: Setup
    query: pd.DataFrame
    row: int | None
    params: Parameters
    sections: tuple[str, ...]
    created: datetime
    score: float
    label: int
    edited: bool = False
    sev: SEVExplanation | None = None
    baselines: Baselines | None = None
    lens: LensReport | None = None
    linear: LinearReport | None = None
    agreement: Agreement | None = None
    figures: dict[str, go.Figure] = field(default_factory=dict)
    headline: dict = field(default_factory=dict)
    reading: str = ""

    @property
    def title(self) -> str:
        where = f"row {self.row}" if self.row is not None else "a custom row"
        return f"Why did the model predict {self.setup.class_names[self.label]} for {where}?"

    @property
    def file_name(self) -> str:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(self.setup.dataset.name))
        return f"{name}_row{self.row if self.row is not None else 'custom'}{'_edited' if self.edited else ''}.pdf"

    @property
    def sev_shown(self) -> str:
        """Which SEV result the reading and the figure use: SEV® when features are restricted, else SEV⁻."""
        return "restricted" if self.sev is not None and self.sev.restricted is not None else "minus"

    def contents(self) -> list[tuple[str, list[str]]]:
        """The report's parts in order, each with what it holds (for a preview), numbered as in the PDF."""
        kinds = "SEV⁻ / SEV⁺" + (" / SEV®" if self.sev is not None and self.sev.restricted is not None else "")
        described = {
            "sev": ("SEV", [f"{kinds} with their minimal explanations (the paper's tables)", "the plain-language reading",
                            "the hypercube" if self._cube_drawn else "the search by depth (lattice view)"]),
            "lens": ("LENS", ["τ-minimal factors with PS and p-values", "the cheapest (cost-order) factors",
                              "cumulative PN against τ"]),
            "linear": ("Linear", ["weights of IHT / exact / LIME / SHAP side by side",
                                  "fidelity, relevance, anchoring gap, optimality status", "weights chart"]),
            "agreement": ("Agreement", ["feature × method matrix", "how each method's set was read"]),
        }
        parts = [("Summary", ["title, date, dataset, model and its test metrics",
                              "the row's values and prediction, the reference, restricted features",
                              "headline numbers", "every parameter and seed"])]
        numbered = [described[s] for s in SECTIONS if s in described and s in self.sections]
        parts += [(f"{i}. {title}", items) for i, (title, items) in enumerate(numbered, 1)]
        if "appendix" in self.sections:
            parts.append(("Appendix", ["definitions", "papers cited"]))
        return parts

    @property
    def _cube_drawn(self) -> bool:
        return len(self.setup.dataset.groups) <= HYPERCUBE_FIGURE_MAX_GROUPS

    def index_row(self, pdf: str = "") -> dict:
        """The headline numbers as one row of the batch index (see :data:`INDEX_COLUMNS`)."""
        h = self.headline
        return {"row": self.row, "prediction": h.get("prediction", ""), "score": round(self.score, 6),
                "sev_minus": h.get("sev_minus", ""), "sev_plus": h.get("sev_plus", ""),
                "sev_restricted": h.get("sev_restricted", ""), "lens_smallest_factor": h.get("lens_smallest_factor", ""),
                "lens_ps": h.get("lens_ps", ""), "linear_support": "; ".join(h.get("linear_support", ()) or ()),
                "pdf": pdf}


def needed_results(sections: Iterable[str]) -> set[str]:
    """Which results a set of sections needs (``sev``, ``lens``, ``linear``, ``baselines``)."""
    sections = set(check_sections(sections))
    need = {s for s in ("sev", "lens", "linear") if s in sections}
    if "agreement" in sections:
        need |= {"sev", "lens", "linear", "baselines"}
    return need


def check_sections(sections: Iterable[str]) -> tuple[str, ...]:
    sections = tuple(sections)
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise IntakeError(f"Unknown report sections {', '.join(map(str, unknown))}; choose from {', '.join(SECTIONS)}.")
    return tuple(s for s in SECTIONS if s in sections)


def build_row_report(setup: Setup, row: int | pd.DataFrame, params: Parameters | None = None,
                     sections: Iterable[str] = SECTIONS, *, row_position: int | None = None, edited: bool = False,
                     sev: SEVExplanation | None = None, baselines: Baselines | None = None,
                     lens: LensReport | None = None, linear: LinearReport | None = None,
                     cube: Hypercube | None = None) -> RowReport:
    """Gather one row's results for a report.

    ``row`` is a dataset position or a one-row frame of feature values (then ``row_position`` names its
    position, if any). Results already computed (the app's cached ones) are passed in and used as they are;
    the others are computed here with the same :mod:`explain_core.analysis` calls the app makes.
    """
    params = params or Parameters()
    sections = check_sections(sections)
    if isinstance(row, pd.DataFrame):
        query, position = row.iloc[:1], row_position
    else:
        query, position = setup.query(int(row)), int(row)
    need = needed_results(sections)
    score = score_of(setup, query)
    label = int(setup.model.labels_of(np.array([score]))[0])
    sev = sev if sev is not None or "sev" not in need else row_sev(setup, query, params)
    if "lens" in need and lens is None:
        contexts = row_lens_contexts(setup, query, params)
        lens = lens_report(contexts[params.lens_direction], params)
    linear = linear if linear is not None or "linear" not in need else row_linear(setup, query, params)
    baselines = baselines if baselines is not None or "baselines" not in need else row_baselines(setup, query, params)
    report = RowReport(setup, query, position, params, sections, datetime.now().astimezone(), score, label, edited,
                       sev if "sev" in need else None, baselines, lens if "lens" in need else None,
                       linear if "linear" in need else None)
    if "agreement" in sections:
        report.agreement = agreement(setup.dataset.group_names, sev=report.sev, lens=lens.factors, linear=linear,
                                     baselines=baselines)
    report.figures = _figures(report, cube)
    report.headline = _headline(report)
    report.reading = sev_reading(setup, report.sev) if report.sev is not None else ""
    return report


def _figures(report: RowReport, cube: Hypercube | None) -> dict[str, go.Figure]:
    s, figs = report.setup, {}
    if report.sev is not None and "sev" in report.sections:
        which = report.sev_shown
        if report._cube_drawn:
            cube = cube or hypercube(s.model, GroupLayout.of(s.dataset), report.query, s.reference_of_label(report.label))
            figs["sev"] = hypercube_figure(cube, report.sev, which=which, class_names=s.class_names)
        else:
            figs["sev"] = lattice_figure(getattr(report.sev, which), threshold=s.model.threshold)
    if report.lens is not None and "lens" in report.sections:
        figs["lens"] = pn_curve_figure(report.lens.pn_curve, direction=report.lens.direction)
    if report.linear is not None and "linear" in report.sections:
        figs["linear"] = weights_figure(_weights(report.linear))
    if report.agreement is not None:
        figs["agreement"] = agreement_figure(report.agreement.matrix())
    return figs


def _weights(linear: LinearReport) -> pd.DataFrame:
    """The weights table with the methods' display names as columns."""
    w = linear.weights()
    return w.rename(columns=lambda m: METHOD_LABELS.get(m, m))


def linear_support_method(linear: LinearReport) -> str:
    methods = [r.method for r in linear.comparison.results]
    return "exact" if "exact" in methods else "iht"


def smallest_factor(lens: LensReport):
    """The smallest τ-minimal factor (highest PS among equally small ones), or None."""
    factors = list(lens.factors.factors)
    if not factors:
        return None
    return min(factors, key=lambda f: (len(f.groups), -f.ps))


def _headline(report: RowReport) -> dict:
    s = report.setup
    h = {"row": report.row, "prediction": s.class_names[report.label], "score": report.score}
    if report.sev is not None:
        h["sev_minus"] = report.sev.minus.shown
        h["sev_plus"] = report.sev.plus.shown
        h["sev_restricted"] = report.sev.restricted.shown if report.sev.restricted is not None else ""
    if report.lens is not None:
        best = smallest_factor(report.lens)
        h["lens_smallest_factor"] = factor_text(best.groups) if best else f"none at τ = {report.params.tau:g}"
        h["lens_ps"] = fmt_ps(best.ps) if best else ""
    if report.linear is not None:
        h["linear_method"] = linear_support_method(report.linear)
        h["linear_support"] = report.linear.support_groups(h["linear_method"])
    if report.agreement is not None:
        counts = report.agreement.counts()
        if len(counts) and counts.max() > 0:
            top = counts[counts == counts.max()]
            h["most_named"] = (tuple(top.index), int(counts.max()), len(report.agreement.named))
    return h


# ---------------------------------------------------------------------------------------------------
# Figures as PNG: plotly static export (kaleido) or a matplotlib re-plot of the same trace data

class RenderError(RuntimeError):
    """A figure could not be drawn with the requested renderer."""


_KALEIDO_LOCK = threading.Lock()
_KALEIDO = {"started": False, "broken": None}


def find_chromium() -> str | None:
    """The Chrome/Chromium kaleido would use (``BROWSER_PATH`` first), or None."""
    override = os.environ.get("BROWSER_PATH")
    if override:
        return override if os.access(override, os.X_OK) else None
    try:
        from choreographer.browsers.chromium import Chromium
        found = Chromium.find_browser(skip_local=False)
        if found:
            return str(found)
    except Exception:  # noqa: BLE001 — any failure here means "not found"
        pass
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@lru_cache(maxsize=1)
def _kaleido_installed() -> bool:
    return importlib.util.find_spec("kaleido") is not None


def plotly_export_available() -> bool:
    """kaleido is installed, a Chromium exists, and the export has not failed in this process."""
    return _kaleido_installed() and _KALEIDO["broken"] is None and find_chromium() is not None


def resolve_renderer(renderer: str = "auto") -> str:
    """``plotly`` or ``matplotlib``: what ``renderer`` means here (``auto`` = plotly when it is available)."""
    if renderer not in RENDERERS:
        raise IntakeError(f"The image renderer must be one of {', '.join(RENDERERS)}, not {renderer!r}.")
    if renderer == "auto":
        return "plotly" if plotly_export_available() else "matplotlib"
    return renderer


def figure_size(fig: go.Figure, width: int = FIGURE_WIDTH_PX) -> tuple[int, int]:
    """(width, height) in px of a figure in the PDF: the figure's own height, clipped to a page-friendly range."""
    low, high = FIGURE_HEIGHT_PX
    height = fig.layout.height or 450
    return int(width), int(min(high, max(low, height)))


def figure_png(fig: go.Figure, renderer: str = "auto", *, width: int | None = None, height: int | None = None,
               scale: float = FIGURE_SCALE) -> tuple[bytes, str]:
    """The figure as PNG bytes, and the renderer that drew it (``plotly`` or ``matplotlib``).

    ``auto`` uses plotly's static export when kaleido and a Chromium are available and falls back to the
    matplotlib re-plot if the export fails; ``plotly`` raises :class:`RenderError` instead of falling back.
    """
    size = figure_size(fig)
    width, height = width or size[0], height or size[1]
    chosen = resolve_renderer(renderer)
    if chosen == "plotly":
        try:
            return kaleido_png(fig, width, height, scale), "plotly"
        except RenderError as exc:
            if renderer == "plotly":
                raise
            log.warning("%s; drawing the figures with matplotlib instead", exc)
    return matplotlib_png(fig, width, height, scale), "matplotlib"


def kaleido_png(fig: go.Figure, width: int, height: int, scale: float = FIGURE_SCALE) -> bytes:
    """Plotly's static export through one kaleido server per process (started on first use; the server is not
    thread-safe, so calls are serialised by a lock). A call that does not answer within ``KALEIDO_TIMEOUT_S``
    marks the export broken for this process."""
    if not _kaleido_installed():
        raise RenderError("plotly static export needs the kaleido package (pip install kaleido)")
    if find_chromium() is None:
        raise RenderError("plotly static export needs Chrome or Chromium (e.g. apt-get install chromium)")
    import kaleido

    with _KALEIDO_LOCK:
        if _KALEIDO["broken"]:
            raise RenderError(f"plotly static export failed earlier in this process: {_KALEIDO['broken']}")
        if not _KALEIDO["started"]:
            kaleido.start_sync_server(mathjax=False, silence_warnings=True)
            _KALEIDO["started"] = True
        out: dict = {}

        def call() -> None:
            try:
                out["png"] = kaleido.calc_fig_sync(fig, opts={"format": "png", "width": int(width),
                                                              "height": int(height), "scale": scale})
            except BaseException as exc:  # noqa: BLE001 — handed to the caller below
                out["error"] = exc

        worker = threading.Thread(target=call, name="kaleido-export", daemon=True)
        worker.start()
        server = _kaleido_server_thread()
        deadline = time.monotonic() + KALEIDO_TIMEOUT_S
        while worker.is_alive() and time.monotonic() < deadline:
            worker.join(0.05)
            if worker.is_alive() and server is not None and not server.is_alive():  # the browser never came up
                _KALEIDO["broken"] = "the kaleido server stopped (could the browser start?)"
                raise RenderError(f"plotly static export failed: {_KALEIDO['broken']}")
        if worker.is_alive():
            _KALEIDO["broken"] = f"no answer within {KALEIDO_TIMEOUT_S} s"
            raise RenderError(f"plotly static export gave no answer within {KALEIDO_TIMEOUT_S} s")
        if "error" in out:
            raise RenderError(f"plotly static export failed: {out['error']}") from out["error"]
        png = out.get("png")
        if not isinstance(png, (bytes, bytearray)) or not bytes(png).startswith(b"\x89PNG"):
            raise RenderError("plotly static export returned no PNG")
        return bytes(png)


def _kaleido_server_thread() -> threading.Thread | None:
    """The thread of kaleido's sync server (it dies when the browser cannot start), where kaleido exposes it."""
    try:
        from kaleido._sync_server import GlobalKaleidoServer
        return getattr(GlobalKaleidoServer(), "_thread", None)
    except Exception:  # noqa: BLE001 — a kaleido without this internal: rely on the timeout
        return None


# --- matplotlib re-plot of a plotly figure --------------------------------------------------------------------

_PLOTLY_COLORWAY = ("#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880",
                    "#FF97FF", "#FECB52")
_TEXT_COLOUR = "#2a3f5f"
_GRID_COLOUR = "#EBF0F8"


def _colour(value, default=None):
    """A plotly colour (hex, ``rgb()``/``rgba()``, a named colour) as a matplotlib RGBA tuple."""
    from matplotlib.colors import to_rgba

    if value is None:
        return default
    text = str(value).strip()
    match = re.fullmatch(r"rgba?\(([^)]*)\)", text.replace(" ", ""))
    if match:
        parts = [float(p) for p in match.group(1).split(",")]
        alpha = parts[3] if len(parts) > 3 else 1.0
        return (parts[0] / 255, parts[1] / 255, parts[2] / 255, alpha)
    try:
        return to_rgba(text)
    except ValueError:
        return default


def _colorway(fig: go.Figure) -> list:
    way = fig.layout.colorway
    if not way and fig.layout.template is not None and fig.layout.template.layout is not None:
        way = fig.layout.template.layout.colorway
    return list(way or _PLOTLY_COLORWAY)


def _numbers(values) -> np.ndarray:
    """Trace coordinates as floats, None (plotly's segment break) as NaN."""
    return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


def _is_numeric(values) -> bool:
    for v in values:
        if v is None:
            continue
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            return False
    return True


def _axis_categories(fig: go.Figure, axis: str) -> list | None:
    """Category labels of the x or y axis in order of first appearance, or None for a numeric axis."""
    spec = fig.layout[f"{axis}axis"]
    values = []
    for trace in fig.data:
        data = trace[axis] if axis in trace else None
        if data is not None:
            values.extend(list(data))
    if spec.type != "category" and _is_numeric(values):
        return None
    seen: dict = {}
    for v in values:
        if v is not None:
            seen.setdefault(v, None)
    return list(seen)


def _positions(values, categories: list | None) -> np.ndarray:
    if categories is None:
        return _numbers(values)
    index = {c: i for i, c in enumerate(categories)}
    return np.array([np.nan if v is None else float(index[v]) for v in values], dtype=float)


def _array(value, n: int) -> list:
    if value is None:
        return [None] * n
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    return [value] * n


def matplotlib_png(fig: go.Figure, width: int, height: int, scale: float = FIGURE_SCALE) -> bytes:
    """The matplotlib re-plot of a plotly figure (:func:`matplotlib_figure`) as PNG bytes."""
    mfig = matplotlib_figure(fig, width, height, scale)
    buffer = io.BytesIO()
    mfig.savefig(buffer, format="png", dpi=100 * scale, facecolor="white")
    return buffer.getvalue()


def matplotlib_figure(fig: go.Figure, width: int = FIGURE_WIDTH_PX, height: int = 450, scale: float = FIGURE_SCALE):
    """Re-plot a plotly figure with matplotlib from its own trace data: Scatter (lines with None-separated
    segments, markers with per-point colours and sizes, text labels), Bar (horizontal or vertical, grouped)
    and Heatmap (with its text), with the layout's title, axis titles, ranges, categories and legend.
    Uses matplotlib's object API (no pyplot), so it is safe off the main thread. Returns the matplotlib Figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    mfig = Figure(figsize=(width / 100, height / 100), dpi=100 * scale)
    FigureCanvasAgg(mfig)
    ax = mfig.add_subplot()
    layout = fig.layout
    colours = _colorway(fig)
    xcats, ycats = _axis_categories(fig, "x"), _axis_categories(fig, "y")
    bars = [t for t in fig.data if t.type == "bar"]
    group = layout.barmode in (None, "group") and len(bars) > 1
    # plotly draws a legend for two or more named traces, or for a trace that asks for one
    named = [t for t in fig.data if t.showlegend is not False and t.name]
    legend = len(named) > 1 or any(t.showlegend is True for t in named)
    for i, trace in enumerate(fig.data):
        default = colours[i % len(colours)]
        label = trace.name if legend and trace in named else None
        if trace.type == "scatter":
            _mpl_scatter(ax, trace, xcats, ycats, default, label)
        elif trace.type == "bar":
            _mpl_bar(ax, trace, bars.index(trace), len(bars) if group else 1, xcats, ycats, default, label)
        elif trace.type == "heatmap":
            _mpl_heatmap(ax, trace, xcats, ycats)
        else:
            raise RenderError(f"the matplotlib re-plot does not draw {trace.type} traces")
    _mpl_axes(ax, layout, xcats, ycats, fig)
    above = False
    if legend and layout.showlegend is not False:
        spec = layout.legend
        horizontal = spec is not None and spec.orientation == "h"
        above = horizontal and spec.y is not None and spec.y > 1
        if above:
            box = ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.01), ncol=min(5, len(named)), frameon=False,
                            fontsize=8, borderaxespad=0)
        elif horizontal:
            box = ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=min(5, len(named)), frameon=False,
                            fontsize=8)
        else:
            box = ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
        for handle in box.legend_handles:  # one marker size in the legend, as plotly draws it
            if hasattr(handle, "set_sizes"):
                handle.set_sizes([30])
    title = layout.title.text if layout.title is not None else None
    if title:
        ax.set_title("\n".join(textwrap.wrap(re.sub(r"<[^>]+>", "", title), max(40, width // 8))),
                     loc="left", fontsize=11, color=_TEXT_COLOUR, pad=24 if above else 6)
    mfig.tight_layout()
    return mfig


def _mpl_scatter(ax, trace, xcats, ycats, default, label) -> None:
    x, y = _positions(trace.x, xcats), _positions(trace.y, ycats)
    mode = trace.mode or ("lines+markers" if len(x) < 20 else "lines")
    line = trace.line
    colour = _colour(line.color if line is not None else None, _colour(default))
    if "lines" in mode:
        width = (line.width if line is not None and line.width is not None else 2) * 0.75
        ax.plot(x, y, color=colour, linewidth=width, label=None if "markers" in mode else label, zorder=2)
    if "markers" in mode:
        marker = trace.marker
        n = len(x)
        sizes = np.array([6 if s is None else float(s) for s in _array(marker.size, n)]) * 0.75
        fills = [_colour(c, colour) for c in _array(marker.color, n)]
        fills = [_colour(default) if c is None else c for c in fills]
        edge = _colour(marker.line.color if marker.line is not None else None, None)
        ax.scatter(x, y, s=sizes ** 2, c=fills, edgecolors=edge if edge is not None else "none",
                   linewidths=0.75 if edge is not None else 0, label=label, zorder=3)
    if "text" in mode and trace.text is not None:
        texts = _array(trace.text, len(x))
        position = trace.textposition if isinstance(trace.textposition, str) else "middle center"
        dy = 7 if "top" in position else -7 if "bottom" in position else 0
        for xi, yi, t in zip(x, y, texts):
            if t and np.isfinite(xi) and np.isfinite(yi):
                ax.annotate(str(t), (xi, yi), xytext=(0, dy), textcoords="offset points", ha="center",
                            va="bottom" if dy > 0 else "top" if dy < 0 else "center", fontsize=8, color=_TEXT_COLOUR,
                            zorder=4)


def _mpl_bar(ax, trace, index, groups, xcats, ycats, default, label) -> None:
    horizontal = trace.orientation == "h"
    cats, values = (trace.y, trace.x) if horizontal else (trace.x, trace.y)
    pos = _positions(cats, ycats if horizontal else xcats)
    finite = np.sort(np.unique(pos[np.isfinite(pos)]))
    step = float(np.min(np.diff(finite))) if len(finite) > 1 else 1.0
    slot = 0.8 * step / groups
    offset = (index - (groups - 1) / 2) * slot
    colour = _colour(trace.marker.color if trace.marker is not None else None, _colour(default))
    vals = _numbers(values)
    if horizontal:
        ax.barh(pos + offset, vals, height=slot, color=colour, label=label, zorder=2)
    else:
        ax.bar(pos + offset, vals, width=slot, color=colour, label=label, zorder=2)


def _mpl_heatmap(ax, trace, xcats, ycats) -> None:
    from matplotlib.colors import LinearSegmentedColormap

    z = np.array([[np.nan if v is None else float(v) for v in row] for row in trace.z], dtype=float)
    scale = trace.colorscale
    if scale and not isinstance(scale, str):
        cmap = LinearSegmentedColormap.from_list("plotly", [(float(p), _colour(c)) for p, c in scale])
    else:
        cmap = "viridis"
    xs = np.arange(z.shape[1] + 1) - 0.5
    ys = np.arange(z.shape[0] + 1) - 0.5
    gap = max(trace.xgap or 0, trace.ygap or 0)
    ax.pcolormesh(xs, ys, z, cmap=cmap, vmin=trace.zmin, vmax=trace.zmax, edgecolors="white",
                  linewidth=gap * 0.75, zorder=1)
    if trace.text is not None:
        for i, row in enumerate(trace.text):
            for j, t in enumerate(row):
                if t:
                    ax.text(j, i, str(t), ha="center", va="center", fontsize=8, color=_TEXT_COLOUR, zorder=2)


def _mpl_axes(ax, layout, xcats, ycats, fig) -> None:
    from matplotlib.ticker import MultipleLocator, PercentFormatter

    heatmap = any(t.type == "heatmap" for t in fig.data)
    ax.set_facecolor("white")
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.tick_params(colors=_TEXT_COLOUR, labelsize=8, length=0)
    if not heatmap:
        ax.grid(True, color=_GRID_COLOUR, linewidth=0.8, zorder=0)
        ax.set_axisbelow(True)
    for name, cats in (("x", xcats), ("y", ycats)):
        spec = layout[f"{name}axis"]
        axis = ax.xaxis if name == "x" else ax.yaxis
        title = spec.title.text if spec.title is not None else None
        if title:
            (ax.set_xlabel if name == "x" else ax.set_ylabel)(title, color=_TEXT_COLOUR, fontsize=9)
        if cats is not None:
            (ax.set_xticks if name == "x" else ax.set_yticks)(range(len(cats)))
            labels = [str(c) for c in cats]
            rotate = name == "x" and sum(len(s) for s in labels) > 70
            (ax.set_xticklabels if name == "x" else ax.set_yticklabels)(
                labels, rotation=30 if rotate else 0, ha="left" if rotate and spec.side == "top" else
                "right" if rotate else "center" if name == "x" else "right")
            (ax.set_xlim if name == "x" else ax.set_ylim)(-0.5, len(cats) - 0.5)
        else:
            if spec.type == "log":
                (ax.set_xscale if name == "x" else ax.set_yscale)("log")
            if spec.range is not None:
                (ax.set_xlim if name == "x" else ax.set_ylim)(*spec.range)
            if spec.dtick is not None and spec.type != "log":
                try:
                    axis.set_major_locator(MultipleLocator(float(spec.dtick)))
                except (TypeError, ValueError):
                    pass
            if spec.tickformat and spec.tickformat.endswith("%"):
                axis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        if spec.autorange == "reversed":
            (ax.invert_xaxis if name == "x" else ax.invert_yaxis)()
        if spec.side == "top" and name == "x":
            ax.xaxis.tick_top()
            ax.xaxis.set_label_position("top")
        if spec.visible is False:
            axis.set_visible(False)
            if name == "y":
                ax.grid(False, axis="y")
            else:
                ax.grid(False, axis="x")


# ---------------------------------------------------------------------------------------------------
# The PDF

FONT = "DejaVu"


@lru_cache(maxsize=1)
def font_files() -> dict[str, Path]:
    """DejaVu Sans (regular, bold, oblique) from matplotlib's data folder, for Unicode text in the PDF."""
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


class _Writer:
    """Small layout helpers over an fpdf2 document."""

    def __init__(self, pdf):
        self.pdf = pdf

    def h1(self, text: str) -> None:
        self.pdf.set_font(FONT, "B", 15)
        self.pdf.multi_cell(0, 7, text, new_x="LMARGIN", new_y="NEXT")
        self.pdf.ln(1.5)

    def h2(self, text: str) -> None:
        if self.pdf.get_y() > self.pdf.page_break_trigger - 30:
            self.pdf.add_page()
        self.pdf.ln(2)
        self.pdf.set_font(FONT, "B", 11)
        self.pdf.multi_cell(0, 5.5, text, new_x="LMARGIN", new_y="NEXT")
        self.pdf.ln(1)

    def text(self, text: str, size: float = 9, style: str = "", colour=(0, 0, 0), gap: float = 1.5) -> None:
        self.pdf.set_font(FONT, style, size)
        self.pdf.set_text_color(*colour)
        self.pdf.multi_cell(0, size * 0.48, text, new_x="LMARGIN", new_y="NEXT", align="L")
        self.pdf.set_text_color(0, 0, 0)
        self.pdf.ln(gap)

    def note(self, text: str) -> None:
        self.text(text, size=7.5, colour=(90, 90, 90))

    def table(self, header: Sequence[str], rows: Sequence[Sequence[object]], widths: Sequence[float] | None = None,
              align: Sequence[str] | None = None, size: float = 8) -> None:
        from fpdf.fonts import FontFace

        pdf = self.pdf
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
                    row.cell(str(cell))
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


def write_pdf(report: RowReport, path: str | Path | None = None, *, image_renderer: str = "auto",
              renderers_used: list | None = None) -> bytes:
    """The report as an A4 PDF: returns its bytes, and writes them to ``path`` when given.

    ``image_renderer`` is ``auto`` (plotly's static export when kaleido and Chromium are available, else the
    matplotlib re-plot), ``plotly`` or ``matplotlib``; the text is the same with either. ``renderers_used``
    (a list) receives the renderer that drew each figure.
    """
    resolve_renderer(image_renderer)  # validates the name early
    s = report.setup
    where = f"row {report.row}" if report.row is not None else "custom row"
    pdf = _document(f"{s.dataset.name} · {where} · {s.model.name} · created {report.created:%Y-%m-%d %H:%M}",
                    report.title, f"Explanation report for {where} of {s.dataset.name}")
    w = _Writer(pdf)
    images = _Images(report, image_renderer, renderers_used)
    try:
        pdf.add_page()
        _summary(w, report)
        number = 0
        for section, draw in (("sev", _sev_section), ("lens", _lens_section), ("linear", _linear_section),
                              ("agreement", _agreement_section)):
            if section in report.sections and _has(report, section):
                number += 1
                w.section()
                draw(w, report, number, images)
        if "appendix" in report.sections:
            w.section()
            _appendix(w, report)
    finally:
        images.close()
    data = bytes(pdf.output())
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)
    return data


def _has(report: RowReport, section: str) -> bool:
    return getattr(report, section) is not None


class _Images:
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

    def draw(self, w: _Writer, name: str, caption: str | None = None) -> None:
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


def _summary(w: _Writer, r: RowReport) -> None:
    s, h = r.setup, r.headline
    data, model = s.dataset, s.model
    card = data.card or {}
    w.h1(r.title)
    w.note(f"Explanation report · created {r.created:%Y-%m-%d %H:%M %Z}".rstrip() + f" · dataset {data.name} · "
           f"model {model.name}")
    where = f"row {r.row}" if r.row is not None else "a custom row"
    edited = " (values edited in the what-if editor)" if r.edited else ""
    w.text(f"For {where}{edited} of the {data.name} data the model predicts {outcome_text(s, r.label)}: "
           f"{s.score_text(r.score, digits=3)} (decision threshold {model.threshold:.4g}).", size=10)
    if r.reading:
        w.text(r.reading, size=10, style="B")

    w.h2("Headline numbers")
    rows = [["Prediction", f"{h['prediction']} ({s.score_text(r.score, digits=3)})", "the model's output for this row"]]
    if r.sev is not None:
        rows.append(["SEV⁻", h["sev_minus"], "fewest features that, set to the reference, flip the prediction"])
        rows.append(["SEV⁺", h["sev_plus"], "fewest features that, moved from the reference to this row's values, "
                                            "give this prediction"])
        if r.sev.restricted is not None:
            rows.append(["SEV®", h["sev_restricted"], f"SEV⁻ with {', '.join(s.restricted)} held fixed"])
    if r.lens is not None:
        ps = f" (PS = {h['lens_ps']})" if h.get("lens_ps") else ""
        rows.append(["Smallest LENS factor", h["lens_smallest_factor"] + ps,
                     f"τ-minimal sufficient factor, {r.lens.direction.upper()}, τ = {r.params.tau:g}"])
    if r.linear is not None:
        method = h["linear_method"]
        rows.append([f"Linear support ({method})", ", ".join(h["linear_support"]) or "bias only",
                     f"features with a non-zero weight, k = {r.params.k}"])
    if "most_named" in h:
        names, count, total = h["most_named"]
        rows.append(["Named by most methods", ", ".join(names), f"{count} of {total} methods"])
    w.table(["Quantity", "Value", "Meaning"], rows, widths=(38, 62, 80))

    w.h2("Data and model")
    metrics = s.metrics or {}
    if data.task == "classification":
        perf = (f"test accuracy {metrics.get('test_accuracy', float('nan')):.3f}, test AUC "
                f"{metrics.get('test_auc', float('nan')):.3f} (train {metrics.get('train_accuracy', float('nan')):.3f}"
                f" / {metrics.get('train_auc', float('nan')):.3f})")
    else:
        perf = (f"test R² {metrics.get('test_r2', float('nan')):.3f}, test RMSE {metrics.get('test_rmse', float('nan')):.4g}"
                f" (train R² {metrics.get('train_r2', float('nan')):.3f})")
    positive = (f"; positive class {data.positive_class}" + (f" = {card['positive_class_label']}"
                                                             if card.get("positive_class_label") else "")
                if data.task == "classification" else "")
    split = "test" if r.row is not None and r.row in set(np.asarray(s.test_rows).tolist()) else \
        "training" if r.row is not None else "not in the data"
    info = [
        ["Dataset", f"{data.name}" + (f" — {card['title']}" if card.get("title") else "")],
        ["Size", f"{len(data.features):,} rows, {len(data.groups)} features ({len(data.columns)} columns); "
                 f"target {data.target.name} ({data.task}{positive})"],
        ["Model", f"{model.name}; {s.source}; key {s.model_key}"],
        ["Performance", f"{perf}; {len(s.train_rows):,} training / {len(s.test_rows):,} test rows"],
        ["Score", f"{s.score_text(r.score, digits=3)}; label 1 when the score is above {model.threshold:.4g}"],
        ["Reference", s.reference_of_label(r.label).description],
        ["Restricted features", ", ".join(s.restricted) or "none"],
        ["Row", f"{where}{edited} ({split} row)"],
    ]
    w.table(["", ""], info, widths=(32, 148))

    w.h2("The row and the reference")
    query = group_values(s, r.query.iloc[0].to_dict())
    ref = group_values(s, s.reference_of_label(r.label).values)
    rows = [[g.name, g.kind, format_value(query[g.name]), format_value(ref[g.name]),
             "yes" if g.name in s.restricted else ""] for g in data.groups]
    w.table(["Feature", "Kind", "This row", "Reference", "Restricted"], rows, widths=(60, 22, 38, 38, 22))

    w.h2("Parameters (enough to reproduce every number)")
    p = r.params
    lens_size = lens_max_size(s, p)
    rows = [
        ["SEV maximum depth", p.max_depth, "SEV⁻/SEV⁺/SEV® breadth-first search depth"],
        ["LENS context", p.lens_direction.upper(), "R2I: reference → input; I2R: input → reference"],
        ["LENS references", p.lens_references, "training rows predicted the opposite class, drawn with the seed"],
        ["LENS τ", f"{p.tau:g}", "sufficiency threshold: PS ≥ τ"],
        ["LENS α", "none (exact mode: PS ≥ τ)" if p.alpha is None else f"{p.alpha:g}",
         "one-sided binomial test of H0: PS < τ"],
        ["LENS maximum factor size", f"{lens_size}" + (" (all subsets)" if p.lens_max_size is None else ""),
         "factors of at most this many features"],
        ["Linear σ", f"{p.sigma:g}", "concentration of the neighbourhood D_{x,σ}"],
        ["Linear k", p.k, "sparsity budget ‖w‖₀ ≤ k (bias included)"],
        ["Linear m", p.m, "samples of D_{x,σ} the explainers are fitted on"],
        ["Linear methods", p.linear_method, "IHT, the exact MIP fit or both, beside LIME and SHAP"],
        ["Exact fit time limit", f"{p.time_limit:g} s", "after it the MIP reports its gap instead of optimal"],
        ["LIME samples", p.lime_samples, "LIME tabular perturbations (agreement section)"],
        ["SHAP background", p.shap_background, "background rows for SHAP (agreement section)"],
        ["Seed", p.seed, "every random draw: LENS references, samples, LIME, SHAP"],
    ]
    w.table(["Parameter", "Value", "Meaning"], rows, widths=(44, 42, 94))
    w.note("Software: " + _versions())


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version
    import platform

    parts = [f"Python {platform.python_version()}"]
    for package in ("numpy", "pandas", "scikit-learn", "scipy", "shap", "lime", "ortools", "torch"):
        try:
            parts.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            continue
    return ", ".join(parts) + "."


def _breakable(name: str) -> str:
    """A column heading that may wrap after underscores (a zero-width space follows each)."""
    return str(name).replace("_", "_\u200b")


def _sev_table(w: _Writer, r: RowReport, which: str) -> None:
    """The paper's table (Fig. 1c/1d): Query, one line per minimal explanation (moved features only), Reference.

    Up to 8 features: features are columns, as in the paper. Wider data: features are rows, only those some listed
    explanation moves (every value is in the summary's row/reference table), a few explanations per table.
    At most ``SEV_MAX_EXPLANATIONS`` explanations are listed; the count of the others is given.
    """
    ex = r.sev
    result = getattr(ex, which)
    table = ex.table(which, unchanged=UNCHANGED)
    direction = ("features moved from this row to the reference" if result.kind == "minus"
                 else "features moved from the reference to this row's values")
    w.text(f"{result.label} explanations ({direction}; {UNCHANGED} = unchanged): {result.message}.", size=8.5,
           style="B", gap=0.8)
    cells = table.map(format_value)
    ends = [cells.index[0], cells.index[-1]]
    middle = list(cells.index[1:-1])
    listed = middle[:SEV_MAX_EXPLANATIONS]
    if len(table.columns) <= 8:
        first = 24
        rest = (w.pdf.epw - first) / len(table.columns)
        rows = [[label] + list(cells.loc[label]) for label in [ends[0], *listed, ends[1]]]
        w.table(["", *(_breakable(c) for c in cells.columns)], rows, widths=(first,) + (rest,) * len(table.columns),
                align=("LEFT",) + ("CENTER",) * len(table.columns), size=7)
    else:
        chunks = [listed[i:i + SEV_COLUMNS_PER_TABLE] for i in range(0, len(listed), SEV_COLUMNS_PER_TABLE)] or [[]]
        for chunk in chunks:
            moved = [g for g in cells.columns if any(cells.at[e, g] != UNCHANGED for e in chunk)]
            shown = cells.loc[[ends[0], *chunk, ends[1]], moved or list(cells.columns)].T
            first = 50
            rest = (w.pdf.epw - first) / len(shown.columns)
            rows = [[g] + list(shown.loc[g]) for g in shown.index]
            heads = [str(c).replace("Explanation ", "Expl. ") for c in shown.columns]
            w.table(["Feature", *heads], rows, widths=(first,) + (rest,) * len(shown.columns),
                    align=("LEFT",) + ("CENTER",) * len(shown.columns), size=7)
        w.note(f"Only the features these explanations move are shown; all {len(cells.columns)} values of the row and "
               "the reference are in the summary.")
    if len(middle) > len(listed):
        w.note(f"{len(middle) - len(listed)} more minimal explanations of the same size are not listed "
               f"({len(middle)} in all; the app's SEV page and its JSON export list every one).")


def _sev_section(w: _Writer, r: RowReport, number: int, images: _Images) -> None:
    ex = r.sev
    w.h1(f"{number}. SEV — sparse explanation values")
    w.text(r.reading, size=10, style="B")
    kinds = ["minus", "plus"] + (["restricted"] if ex.restricted is not None else [])
    rows = [[getattr(ex, k).label, getattr(ex, k).shown, len([e for e in getattr(ex, k).explanations if e]),
             getattr(ex, k).message] for k in kinds]
    w.table(["", "Value", "Minimal explanations", "Outcome"], rows, widths=(16, 18, 32, 114),
            align=("LEFT", "CENTER", "CENTER", "LEFT"))
    w.note(f"The reference is the {r.setup.reference_of_label(r.label).description}. SEV⁻ counts features moved from this row to "
           f"the reference until the prediction flips; SEV⁺ counts features moved from the reference to this row's "
           f"values until the prediction is this row's; search depth {ex.minus.max_depth}.")
    for k in kinds:
        _sev_table(w, r, k)
    shown = getattr(ex, r.sev_shown)
    if r._cube_drawn:
        caption = (f"The SEV hypercube: each dot mixes this row and the reference (x = features at the reference), "
                   f"coloured by predicted class; orange edges are the shortest flipping paths of {shown.label}.")
    else:
        caption = (f"With {len(r.setup.dataset.groups)} features the hypercube is summarised by depth: vertices "
                   f"the {shown.label} search evaluated and how many flip the prediction.")
    images.draw(w, "sev", caption)


def _lens_section(w: _Writer, r: RowReport, number: int, images: _Images) -> None:
    lens, s, p = r.lens, r.setup, r.params
    result = lens.factors
    names = s.class_names
    w.h1(f"{number}. LENS — necessity and sufficiency")
    if lens.direction == "r2i":
        context = (f"Context R2I (reference → input): each of the references gets a factor's features set to this "
                   f"row's values; PS is the share that then gets this row's prediction {names[result.outcome]}.")
    else:
        context = (f"Context I2R (input → reference): this row gets a factor's features set to each reference's "
                   f"values; PS is the share of references for which the prediction becomes {names[result.outcome]}.")
    mode = "exact mode: PS ≥ τ" if result.alpha is None else f"binomial test at α = {result.alpha:g} (H0: PS < τ)"
    w.text(context, size=9)
    w.text(f"References: {p.lens_references} training rows predicted the opposite class (seed {p.seed}); factors of "
           f"up to {lens.max_size} features; τ = {result.tau:g}, {mode}. {len(result.factors)} τ-minimal factor"
           f"{'s' if len(result.factors) != 1 else ''}; cumulative PN of their upward closure = "
           f"{fmt_ps(result.cumulative_pn)}.", size=9)
    best = smallest_factor(lens)
    if best is not None:
        if lens.direction == "r2i":
            reading = (f"Setting {_join(best.groups) if best.groups else 'no feature'} to this row's values gives "
                       f"{best.ps:.0%} of the references the prediction {names[result.outcome]} (PS = {fmt_ps(best.ps)}).")
        else:
            reading = (f"Giving this row a reference's {_join(best.groups) if best.groups else 'nothing'} changes the "
                       f"prediction to {names[result.outcome]} for {best.ps:.0%} of the references "
                       f"(PS = {fmt_ps(best.ps)}).")
        w.text(reading, size=9.5, style="B")
    else:
        w.text(f"No factor of up to {lens.max_size} features reaches PS ≥ τ = {result.tau:g}.", size=9.5, style="B")
    limit = 30
    rows = [[factor_text(f.groups), len(f.groups), fmt_ps(f.ps), f"{f.hits}/{f.samples}", fmt_p(f.p_value),
             "∞" if not math.isfinite(f.cost) else f"{f.cost:.2f}"] for f in result.factors[:limit]]
    if rows:
        w.table(["τ-minimal factor", "Size", "PS", "Hits / samples", "p-value", "Cost"], rows,
                widths=(86, 12, 16, 26, 20, 20), align=("LEFT", "CENTER", "RIGHT", "RIGHT", "RIGHT", "RIGHT"))
    if len(result.factors) > limit:
        w.note(f"The first {limit} of {len(result.factors)} factors are listed (by size).")
    recourse = sorted(lens.recourse.factors, key=lambda f: f.cost)[:5]
    if recourse:
        w.text("Cheapest factors (cost order, §5.3: L1 distance scaled by MAD, 1 per changed categorical feature):",
               size=8.5, style="B", gap=0.8)
        rows = [[factor_text(f.groups), fmt_ps(f.ps), "∞" if not math.isfinite(f.cost) else f"{f.cost:.2f}",
                 "—" if f.reference is None else str(f.reference)] for f in recourse]
        w.table(["Factor", "PS", "Cost", "Cheapest reference (row)"], rows, widths=(96, 20, 20, 44),
                align=("LEFT", "RIGHT", "RIGHT", "RIGHT"))
    taus = lens.pn_curve["tau"]
    images.draw(w, "lens", f"Cumulative probability of necessity of the τ-minimal factors for τ = "
                           f"{taus.min():g}–{taus.max():g} (the same sweep as the LENS page).")


def _linear_section(w: _Writer, r: RowReport, number: int, images: _Images) -> None:
    lin = r.linear
    comp = lin.comparison
    w.h1(f"{number}. Anchored k-sparse linear explanations")
    w.text(f"Each literal reads “keeps <feature> = <value>”: z_j = +1 keeps this row's value, z_j = −1 moves the "
           f"feature to the reference (the SEV hypercube). The model's output on the [−1, +1] scale is f(x) = "
           f"{lin.fx:.4f}; an anchored explanation satisfies w·x = f(x). k = {comp.k}, σ = {comp.sigma:g}, "
           f"m = {comp.m}, seed {comp.seed}; all methods are fitted on the same sample.", size=9)
    weights = lin.weights()
    methods = list(weights.columns)
    rows = [[literal] + [fmt_weight(weights.at[literal, m]) for m in methods] for literal in weights.index]
    first = 62
    rest = (w.pdf.epw - first) / len(methods)
    w.table(["Literal", *[METHOD_LABELS.get(m, m) for m in methods]], rows,
            widths=(first,) + (rest,) * len(methods), align=("LEFT",) + ("RIGHT",) * len(methods), size=7.5)
    table = comp.table()
    rows = []
    for m in table.index:
        t = table.loc[m]
        rel = fmt_metric(t["relevance"]) + ("" if t["relevance_method"] in ("exact",) else f" ({t['relevance_method']})")
        rows.append([METHOD_LABELS.get(m, m), fmt_metric(t["fidelity"]), fmt_metric(t["empirical_fidelity"]), rel,
                     fmt_metric(t["anchoring_gap"]), int(t["support_size"]), fmt_metric(t["bound"]),
                     str(t["detail"]) or "—"])
    w.table(["Method", "Fidelity F", "F̂ (fit)", "Relevance R", "Anchoring gap", "‖w‖₀", "Bound", "Status"], rows,
            widths=(24, 18, 18, 28, 20, 12, 18, 42),
            align=("LEFT", "RIGHT", "RIGHT", "RIGHT", "RIGHT", "CENTER", "RIGHT", "LEFT"), size=7.5)
    w.note("F: fidelity error on a fresh sample; F̂: on the fitting sample; R: relevance error E[¼(f(z) − f(x))² | "
           "w·z = w·x]; anchoring gap |w·x − f(x)|; bound (1 + e^{−σ})^k·F (PLE Lemma 4); status: the exact fit's "
           "solver status (optimal = certified) or IHT's iterations.")
    images.draw(w, "linear", "The weights of each explainer (literals every method leaves at 0 are not drawn).")


def _agreement_section(w: _Writer, r: RowReport, number: int, images: _Images) -> None:
    ag = r.agreement
    w.h1(f"{number}. Agreement across methods")
    matrix = ag.matrix()
    counts = ag.counts()
    methods = list(matrix.columns)
    rows = [[g] + ["✓" if matrix.at[g, m] else "" for m in methods] + [int(counts[g])] for g in matrix.index]
    first = 48
    rest = (w.pdf.epw - first - 14) / max(1, len(methods))
    w.table(["Feature", *methods, "Total"], rows, widths=(first,) + (rest,) * len(methods) + (14,),
            align=("LEFT",) + ("CENTER",) * (len(methods) + 1), size=7.5)
    w.text("How each method's set is read:", size=8.5, style="B", gap=0.5)
    for method, rule in ag.rules.items():
        w.text(f"• {method}: {rule}", size=8, gap=0.3)
    images.draw(w, "agreement")


def _appendix(w: _Writer, r: RowReport) -> None:
    w.h1("Appendix — definitions and sources")
    entries = [
        ("SEV hypercube (SEV Def. 1)", "Vertices are the 2^p mixes of this row and the reference, one feature at a "
         "time; edges join mixes that differ in one feature. Each vertex is scored by the model."),
        ("SEV⁻ (SEV Def. 3)", "The fewest features that, moved from the row to the reference, flip the prediction "
         "(shortest path from the row to a vertex of the other class); each such set is a minimal explanation."),
        ("SEV⁺ (SEV Def. 2)", "The fewest features that, moved from the reference to the row's values, give the "
         "row's prediction (shortest path from the reference to a vertex of the row's class)."),
        ("SEV® (SEV Def. 4)", "SEV⁻ with the restricted features held at the row's values; “none” when no "
         "movable set flips the prediction."),
        ("Reference", "Mean of numeric / mode of categorical features over the training rows of the opposite "
         "class (SEV §4), unless set otherwise in the setup above."),
        ("Probability of sufficiency PS (LENS Def. 2)", "PS(c, y) = P(f(z) = y | c(z) = 1): among samples of the "
         "context where factor c is applied, the share predicted y."),
        ("Probability of necessity PN (LENS Def. 3)", "PN(C, y) = P(c(z) = 1 for some c ∈ C | f(z) = y): the share "
         "of samples reaching y that are interventions on a factor of C."),
        ("τ-minimal factor (LENS Def. 4)", "A factor with PS ≥ τ (or, in sample mode, whose binomial test rejects "
         "PS < τ at level α) none of whose sub-factors qualify; Alg. 1 finds them all."),
        ("Contexts R2I / I2R (LENS §5)", "R2I sets a factor's features of each reference to the row's values "
         "(sufficiency for the row's class); I2R sets the row's features to each reference's values."),
        ("Anchored k-sparse linear explanation (PLE §3)", "A weight vector w over the literals with w·x = f(x) "
         "(anchoring) and ‖w‖₀ ≤ k; z ∈ {−1, +1}^d, literal 0 is the bias."),
        ("Neighbourhood D_{x,σ} (PLE §1, §4)", "P(z) ∝ exp(−σ/2·‖z − x‖₁): σ = 0 is uniform on the cube, larger σ "
         "keeps samples closer to the row."),
        ("Fidelity error F (PLE Def. 6)", "F(w) = E_{z∼D}[¼(w·z − f(z))²]; F̂ is its average over the m fitting "
         "samples, minimised by IHT (approximately) and the exact MIP fit (with a certificate)."),
        ("Relevance error R (PLE §1)", "R(w) = E[¼(f(z) − f(x))² | w·z = w·x]: how often samples that the "
         "explanation cannot tell from the row get another output; bounded by (1 + e^{−σ})^k·F (Lemma 4)."),
        ("LIME and SHAP", "LIME fits a weighted sparse linear surrogate on perturbations; KernelSHAP estimates "
         "Shapley values. Both are shown for comparison; neither is anchored or sparse by construction."),
        ("Agreement", "For each method, the features it names for this row (rules in section “Agreement”); the "
         "matrix shows where the methods concur."),
    ]
    for name, text in entries:
        w.text(name, size=8.5, style="B", gap=0.2)
        w.text(text, size=8.5, gap=1.2)
    w.h2("Papers")
    for key in ("sev", "lens", "ple", "lime", "shap"):
        w.text(PAPERS[key], size=8, gap=1)


# ---------------------------------------------------------------------------------------------------
# Many rows (the command line's batch mode)

def write_index(rows: Sequence[dict], path: str | Path) -> Path:
    """The batch index (one row per report, :data:`INDEX_COLUMNS` plus ``error``) as CSV."""
    frame = pd.DataFrame(list(rows))
    columns = list(INDEX_COLUMNS) + (["error"] if "error" in frame.columns else [])
    frame = frame.reindex(columns=columns)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
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
            except IntakeError as exc:
                index.append({"row": int(row), "error": str(exc)})
            if progress is not None:
                progress(i + 1, len(rows))
    finally:
        path = write_index(index, out / "index.csv")
    return path, index
