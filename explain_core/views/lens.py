"""Figures of LENS: the cumulative PN curve, the causal graph, and PS by factor size beside the top-k
attribution. Traces carry ``meta={"role": ...}``."""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from ..vocabulary import html_text
from .style import BAR_COLOURS, LABEL_COLOURS, LEGEND_BELOW, PATH_COLOUR, TEMPLATE, titled


def pn_curve_figure(curve: pd.DataFrame, *, direction: str = "r2i") -> go.Figure:
    """Cumulative PN of the τ-minimal factors against τ (LENS App. B, Fig. 6) from ``LensContext.pn_curve``."""
    fig = go.Figure(go.Scatter(x=curve["tau"], y=curve["cumulative_pn"], mode="lines+markers", name="cumulative PN",
                               customdata=curve["factors"], line=dict(color=BAR_COLOURS["counts"]),
                               hovertemplate="τ = %{x:.2f}<br>PN = %{y:.3f}<br>%{customdata} factors<extra></extra>",
                               meta={"role": "curve"}))
    fig.update_layout(template=TEMPLATE,
                      title=titled(f"Cumulative PN of the τ-minimal factors ({direction.upper()})"),
                      xaxis=dict(title="τ", range=[-0.03, 1.03]),
                      yaxis=dict(title="cumulative PN", range=[-0.03, 1.03]))
    return fig


def dag_figure(edges: Sequence[tuple[str, str]], depth: dict[str, int], *, highlight: Sequence[str] = ()) -> go.Figure:
    """A causal graph over feature groups (LENS Fig. 5): nodes by depth (roots on top), arrows parent → child;
    ``highlight`` marks groups (e.g. those of the causal τ-minimal factors). Only groups on an edge are drawn."""
    nodes = sorted({n for e in edges for n in e}, key=lambda n: (depth[n], n))
    rows: dict[int, list[str]] = {}
    for n in nodes:
        rows.setdefault(depth[n], []).append(n)
    at = {n: (i - (len(row) - 1) / 2, -d) for d, row in rows.items() for i, n in enumerate(row)}
    fig = go.Figure(go.Scatter(
        x=[at[n][0] for n in nodes], y=[at[n][1] for n in nodes], mode="markers+text", text=nodes,
        textposition="top center", hovertext=nodes, hoverinfo="text", meta={"role": "nodes"},
        marker=dict(size=16, color=[PATH_COLOUR if n in set(highlight) else LABEL_COLOURS[0] for n in nodes])))
    for a, b in edges:
        fig.add_annotation(x=at[b][0], y=at[b][1], ax=at[a][0], ay=at[a][1], xref="x", yref="y", axref="x", ayref="y",
                           showarrow=True, arrowhead=3, arrowsize=1.2, arrowcolor="#888", standoff=9, startstandoff=9)
    hidden = dict(visible=False, range=[min(x for x, _ in at.values()) - 1, max(x for x, _ in at.values()) + 1]
                  if at else None)
    fig.update_layout(template=TEMPLATE, title="Causal graph (interventions propagate along the arrows)",
                      xaxis=hidden, yaxis=dict(visible=False), showlegend=False, height=140 + 90 * len(rows))
    return fig


def ps_by_size_figure(curve: pd.DataFrame, *, attribution: str = "SHAP") -> go.Figure:
    """Best PS of any factor of k groups beside PS of the top-k groups by |attribution| (LENS §5.1, Fig. 2),
    from :func:`~explain_core.lens.shap_curve`."""
    fig = go.Figure()
    for column, name, colour in (("lens_ps", "LENS (best factor of k groups)", LABEL_COLOURS[1]),
                                 ("attribution_ps", f"top-k {attribution}", LABEL_COLOURS[0])):
        factor = column.replace("_ps", "_factor")
        groups = ([html_text(g if isinstance(g, str) else ", ".join(map(str, g))) for g in curve[factor]]
                  if factor in curve else None)
        fig.add_trace(go.Scatter(x=curve["size"], y=curve[column], mode="lines+markers", name=name,
                                 line=dict(color=colour), meta={"role": "curve", "column": column},
                                 customdata=groups,
                                 hovertemplate="k = %{x}<br>PS = %{y:.3f}" + ("<br>%{customdata}" if groups else "")
                                 + "<extra>" + name + "</extra>"))
    fig.update_layout(template=TEMPLATE, title=titled("Probability of sufficiency by factor size"),
                      legend=LEGEND_BELOW, margin=dict(b=90),
                      xaxis=dict(title="k (groups in the factor)", dtick=1), yaxis=dict(title="PS", range=[0, 1.02]))
    return fig
