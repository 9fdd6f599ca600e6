"""The look every figure shares: the explicit plotly template :data:`TEMPLATE` (never the global default, so the
same objects can be shown in the app and written into a PDF report), the colours of labels, bars and methods,
wrapped titles and the legend below the plot."""
from __future__ import annotations

import re
import textwrap

import plotly.graph_objects as go

from ..vocabulary import METHOD_LABELS

GRID = "#EBF0F8"
TEXT = "#1f2328"  # text on white or light marks (the light theme's text colour): 15.8:1 on white
# Our own small template (plotly_white's look): explicit, so figures do not depend on the global default or on
# Streamlit's theme, and ~15× cheaper to apply than the full built-in template (it carries no per-trace defaults).
TEMPLATE = go.layout.Template(layout=dict(
    paper_bgcolor="white", plot_bgcolor="white", font=dict(color=TEXT), hovermode="closest",
    colorway=["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880"],
    xaxis=dict(gridcolor=GRID, linecolor=GRID, zerolinecolor=GRID, ticks="", automargin=True),
    yaxis=dict(gridcolor=GRID, linecolor=GRID, zerolinecolor=GRID, ticks="", automargin=True)))
LABEL_COLOURS = {0: "#4C78A8", 1: "#E45756"}  # predicted label 0 / 1
EDGE_COLOUR = "rgba(160, 160, 160, 0.35)"
PATH_COLOUR = "#F58518"
BAR_COLOURS = {"evaluated": "#BAB0AC", "flipped": "#E45756", "counts": "#4C78A8", "prevalence": "#54A24B"}
# One colour per method in every chart (weights, sweeps, attributions, flip numbers): looked up by the method's
# key or its label (``METHOD_LABELS``), so "iht" and "IHT" draw alike; SEV's values share SEV's colour.
METHOD_COLOURS = {"iht": "#4C78A8", "exact": "#F58518", "lime": "#54A24B", "shap": "#B279A2", "shap_k": "#FF9DA6",
                  "l1_relax": "#9D755D", "sev": "#E45756", "lens": "#72B7B2", "maple": "#8B6FB0"}
_METHOD_ALIASES = {**{label: key for key, label in METHOD_LABELS.items()}, "LIME": "lime", "LIME-C": "lime",
                   "SHAP": "shap", "SHAP-C": "shap", "SEV⁻": "sev", "SEV⁺": "sev", "SEV®": "sev", "SEV": "sev",
                   "LENS": "lens"}
METHOD_DASH = {"exact": "dash"}  # the exact fit often equals IHT: dashed, so the line below shows through


def method_key(name) -> str:
    """The method a trace name or column stands for (``"IHT"`` → ``"iht"``); the name itself when unknown."""
    return _METHOD_ALIASES.get(str(name), str(name))


def method_colour(name, fallback: int = 0) -> str:
    """:data:`METHOD_COLOURS` of a method key or label; an unknown method takes the template's ``fallback``-th
    colour."""
    way = TEMPLATE.layout.colorway
    return METHOD_COLOURS.get(method_key(name), way[fallback % len(way)])


def titled(text: str, width: int = 44) -> dict:
    """A chart title wrapped at word boundaries every ~``width`` characters (plotly never wraps, and a half-width
    chart cuts a long title off: at 56 a SEV chart's title ran past its column at 1280×800), pushing the plot down
    rather than overlapping the legend or the plot."""
    lines = textwrap.wrap(str(text), width, break_long_words=False) or [""]
    return dict(text="<br>".join(lines), automargin=True, yref="container", y=1, yanchor="top", x=0, xanchor="left",
                xref="container", pad=dict(t=22, l=8, b=10))


def chart_name(figure: go.Figure) -> str:
    """A chart's accessible name: its title as one line of plain text (the line breaks of :func:`titled` and any
    markup dropped), for ``st.plotly_chart(alt=...)`` where no text alternative is drawn under the chart.

    Parameters
    ----------
    figure : plotly.graph_objects.Figure
        A figure with a title.

    Returns
    -------
    str
        The title's words; empty for a figure without a title.
    """
    text = figure.layout.title.text or ""
    return " ".join(re.sub(r"<[^>]*>", " ", text).split())


LEGEND_BELOW = dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left")



def luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance of a ``#rrggbb`` colour."""
    rgb = [int(colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio of two ``#rrggbb`` colours (1 to 21; text needs ≥ 4.5, AA)."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def text_on(colour: str) -> str:
    """The text colour for a label drawn on a mark of ``colour``: white or :data:`TEXT`, whichever contrasts more."""
    return max(("#ffffff", TEXT), key=lambda text: contrast(text, colour))
