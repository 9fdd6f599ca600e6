"""Figures of the baselines and the agreement between methods: LIME/SHAP attributions, the SHAP waterfall,
the flip numbers of every method and which features each method names. Traces carry
``meta={"role": ...}``."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..sev.summaries import sev_counts
from ..vocabulary import format_number, format_significant, html_text
from .style import EDGE_COLOUR, LABEL_COLOURS, LEGEND_BELOW, PATH_COLOUR, TEMPLATE, TEXT, method_colour, titled


def attribution_figure(groups: Sequence[str], values: dict[str, Sequence[float]], *,
                       units: dict[str, str] | None = None, title: str = "LIME and SHAP attributions") -> go.Figure:
    """Per-group attributions, one facet per method (``values``: method → values; ``units``: method → what its
    values measure, e.g. probability or log-odds): methods in different units never share an axis."""
    units = units or {}
    methods = list(values)
    fig = make_subplots(rows=max(1, len(methods)), cols=1, vertical_spacing=0.16)  # one facet per method, stacked
    for i, method in enumerate(methods, 1):
        fig.add_trace(go.Bar(x=list(values[method]), y=[html_text(g) for g in groups], orientation="h", name=method,
                             meta={"role": "attribution", "units": units.get(method)}, showlegend=False,
                             marker_color=method_colour(method, i - 1),
                             hovertemplate="%{y}: %{x:.4f}<extra>" + method + "</extra>"), row=i, col=1)
        axis_title = f"{method} attribution ({units[method]})" if method in units else f"{method} attribution"
        fig.update_xaxes(title=axis_title, zeroline=True, zerolinecolor="#9aa5b8", row=i, col=1)
    fig.update_yaxes(type="category", autorange="reversed", automargin=True)
    fig.update_layout(template=TEMPLATE, title=titled(title, 40),
                      height=max(300, 80 + len(methods) * (70 + 22 * len(groups))))
    return fig


def waterfall_figure(groups: Sequence[str], values: Sequence[float], base_value: float, *, output: str = "",
                     top: int = 10, title: str = "SHAP waterfall for this row") -> go.Figure:
    """SHAP's waterfall: from the expected output ``base_value`` (E[f(X)]), each group's value added in order of
    |value| (the ``top`` largest; the rest summed as one bar), ending at the row's output f(x) = base + Σ values."""
    values = np.asarray(values, dtype=float)
    order = np.argsort(-np.abs(values), kind="stable")
    shown, rest = order[:top], order[top:]
    labels = [html_text(groups[i]) for i in shown] + ([f"{len(rest)} other features"] if len(rest) else [])
    steps = [float(values[i]) for i in shown] + ([float(values[rest].sum())] if len(rest) else [])
    total = float(base_value + values.sum())
    unit = f" ({output})" if output else ""
    fig = go.Figure(go.Waterfall(
        orientation="h", base=float(base_value), y=labels + ["f(x): this row"], x=steps + [0.0],
        measure=["relative"] * len(steps) + ["total"], meta={"role": "waterfall", "base": float(base_value),
                                                            "total": total},
        text=[format_number(v) if abs(v) >= 5e-4 else ("+" if v > 0 else "") + format_significant(v, 2)
              for v in steps] + [format_number(total)],
        textposition="outside", cliponaxis=False, connector=dict(line=dict(color=EDGE_COLOUR)),
        increasing=dict(marker_color=LABEL_COLOURS[1]), decreasing=dict(marker_color=LABEL_COLOURS[0]),
        totals=dict(marker_color=method_colour("shap")),
        hovertemplate="%{y}: %{x:+.4f}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, title=titled(f"{title}: from E[f(X)] = {format_number(base_value)} to "
                                                      f"f(x) = {format_number(total)}{unit}"),
                      yaxis=dict(type="category", autorange="reversed", automargin=True),
                      xaxis=dict(title=f"model output{unit}"), height=max(300, 100 + 30 * len(labels)),
                      showlegend=False)
    return fig


def flip_figure(table: pd.DataFrame) -> go.Figure:
    """Counts of LIME-C / SHAP-C flip numbers beside SEV⁻ per value (SEV §5), from a table with one column
    per method and one row per query (None / NaN = never flips)."""
    fig = go.Figure()
    every = sev_counts([None if pd.isna(v) else int(v) for v in table.to_numpy().ravel()])["sev"]
    for i, method in enumerate(table.columns):
        counts = sev_counts([None if pd.isna(v) else int(v) for v in table[method]])
        fig.add_trace(go.Bar(x=[str(v) for v in counts["sev"]], y=counts["count"], name=str(method),
                             meta={"role": "flips"}, marker_color=method_colour(method, i),
                             hovertemplate="%{x} features<br>%{y} queries<extra>" + str(method) + "</extra>"))
    fig.update_layout(template=TEMPLATE,
                      title=titled(f"Features moved until the prediction flips ({len(table)} queries)"),
                      legend=LEGEND_BELOW, margin=dict(b=90),
                      barmode="group", xaxis=dict(title="features moved to the reference", type="category",
                                                  categoryorder="array", categoryarray=[str(v) for v in every]),
                      yaxis=dict(title="queries"))
    return fig


def agreement_figure(matrix: pd.DataFrame) -> go.Figure:
    """Feature × method heatmap: 1 where the method names the feature (from ``Agreement.matrix()``)."""
    z = matrix.astype(int).to_numpy()
    fig = go.Figure(go.Heatmap(z=z, x=list(matrix.columns), y=[html_text(g) for g in matrix.index], zmin=0, zmax=1,
                               showscale=False,
                               colorscale=[[0, "#F2F2F2"], [1, PATH_COLOUR]], xgap=2, ygap=2,
                               text=np.where(z == 1, "named", ""), texttemplate="%{text}", textfont=dict(color=TEXT),
                               hovertemplate="%{y} · %{x}: %{text}<extra></extra>", meta={"role": "agreement"}))
    fig.update_layout(template=TEMPLATE, title=titled("Which features each method names"),
                      xaxis=dict(side="top", type="category"),
                      yaxis=dict(autorange="reversed", type="category", automargin=True),
                      height=max(300, 80 + 30 * len(matrix)))
    return fig
