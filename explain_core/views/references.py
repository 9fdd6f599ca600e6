"""Figures of SEV against other kinds of reference and of counterfactuals side by side ("Improving Decision
Sparsity"): where each method's points land (distance against credibility) and the kinds compared over many
rows (the paper's tables as bars). Pure: results → plotly figures; traces carry ``meta={"role": ...}``."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..vocabulary import html_text
from .style import LEGEND_BELOW, TEMPLATE, titled

KIND_COLOURS = {"SEV¹": "#E45756", "SEV^F": "#F58518", "SEV^©": "#4C78A8", "DiCE": "#54A24B"}
KIND_COLUMNS = (("mean SEV", "mean SEV (features changed)"), ("median ℓ∞", "median ℓ∞ (SD)"),
                ("mean credibility", "mean credibility"))


def kind_colour(label: str, fallback: int = 0) -> str:
    for key, colour in KIND_COLOURS.items():
        if str(label).startswith(key):
            return colour
    way = TEMPLATE.layout.colorway
    return way[fallback % len(way)]


def points_figure(points: Mapping[str, Sequence], *, title: str = "Where each explanation lands") -> go.Figure:
    """One marker per explanation / counterfactual (``points``: method → its :class:`Destination` s): x = ℓ∞ in
    standard deviations, y = credibility, the marker's number = features changed (ℓ0)."""
    fig = go.Figure()
    for i, (method, found) in enumerate(points.items()):
        found = [d for d in found if d.credibility is not None]
        if not found:
            continue
        fig.add_trace(go.Scatter(
            x=[d.linf for d in found], y=[d.credibility for d in found], mode="markers+text", name=html_text(method),
            text=[str(d.l0) for d in found], textposition="top center", meta={"role": "points", "method": method},
            marker={"size": [10 + 4 * d.l0 for d in found], "color": kind_colour(method, i), "opacity": 0.8,
                    "symbol": "diamond" if str(method).startswith("DiCE") else "circle"},
            customdata=[html_text(", ".join(d.groups)) for d in found],
            hovertemplate="%{customdata}<br>ℓ∞ %{x:.2f} SD, credibility %{y:.0%}<extra>" + html_text(method)
                          + "</extra>"))
    fig.update_layout(template=TEMPLATE, title=titled(title), legend=LEGEND_BELOW, height=420,
                      xaxis={"title": "largest numeric change ℓ∞ (standard deviations)", "rangemode": "tozero"},
                      yaxis={"title": "credibility (percentile of real cases)", "range": [-0.05, 1.1],
                             "tickformat": ".0%"})
    return fig


def kinds_figure(table: pd.DataFrame, *, title: str = "The kinds of reference over the same rows") -> go.Figure:
    """The paper's table as bars, one panel per column of :data:`KIND_COLUMNS`, one bar per kind (``table``:
    :class:`~explain_core.references.KindsTable`'s, indexed by kind)."""
    fig = make_subplots(rows=1, cols=len(KIND_COLUMNS), subplot_titles=[name for _, name in KIND_COLUMNS],
                        horizontal_spacing=0.09)
    kinds = [str(k) for k in table.index]
    for col, (column, name) in enumerate(KIND_COLUMNS, 1):
        fig.add_trace(go.Bar(x=[html_text(k) for k in kinds], y=table[column].tolist(), showlegend=False,
                             marker_color=[kind_colour(k, i) for i, k in enumerate(kinds)],
                             meta={"role": "kinds", "column": column},
                             hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>"), row=1, col=col)
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(tickformat=".0%", range=[0, 1], row=1, col=3)
    fig.update_layout(template=TEMPLATE, title=titled(title, 80), height=380)
    return fig
