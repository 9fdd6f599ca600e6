"""The model seen over many rows: the SHAP values of a seeded sample of test rows
(:class:`~explain_core.inspection.global_shap.GlobalShap`) drawn as mean |SHAP| per feature, a beeswarm and a
dependence plot — beside the dataset-wide SEV prevalence drawn by :func:`~explain_core.views.sev.feature_prevalence`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..inspection.global_shap import GlobalShap
from ..vocabulary import html_text
from .style import LABEL_COLOURS, TEMPLATE, method_colour, titled

BEESWARM_JITTER = 0.32


def importance_figure(shap: GlobalShap) -> go.Figure:
    """Mean |SHAP| per feature, largest on top."""
    imp = shap.importance()
    fig = go.Figure(go.Bar(x=imp.to_numpy(), y=[html_text(g) for g in imp.index], orientation="h",
                           marker_color=method_colour("shap"), meta={"role": "importance"},
                           hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, title=titled(f"Mean |SHAP| over {len(shap.rows)} test rows ({shap.output})"),
                      xaxis=dict(title=f"mean |SHAP value| ({shap.output})"),
                      yaxis=dict(type="category", autorange="reversed", automargin=True),
                      height=max(300, 100 + 26 * len(imp)))
    return fig


def beeswarm_figure(shap: GlobalShap, features: pd.DataFrame, *, top: int = 12) -> go.Figure:
    """SHAP's beeswarm: one dot per row and feature (the ``top`` by mean |SHAP|), x = its SHAP value, coloured by
    the feature's value (low → high within the feature; categories in order of appearance). ``features``:
    :func:`group_values` of the same rows."""
    imp = shap.importance().head(top)
    fig = go.Figure()
    jitter = np.random.default_rng(0).uniform(-BEESWARM_JITTER, BEESWARM_JITTER, len(shap.rows))
    for rank, group in enumerate(imp.index):
        j = shap.groups.index(group)
        raw = features[group]
        codes = pd.to_numeric(raw, errors="coerce")
        if codes.isna().all():
            codes = pd.Series(pd.factorize(raw)[0], dtype=float)
        span = float(codes.max() - codes.min()) or 1.0
        fig.add_trace(go.Scattergl(
            x=shap.values[:, j], y=rank + jitter, mode="markers", name=html_text(group), showlegend=False,
            marker=dict(size=5, color=((codes - codes.min()) / span).to_numpy(), cmin=0, cmax=1,
                        colorscale=[[0, LABEL_COLOURS[0]], [1, LABEL_COLOURS[1]]], showscale=rank == 0,
                        colorbar=dict(title="feature value", tickvals=[0, 1], ticktext=["low", "high"], len=0.6)),
            text=[html_text(v) for v in raw], meta={"role": "beeswarm", "group": group},
            hovertemplate=html_text(group) + " = %{text}<br>SHAP %{x:.4f}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, title=titled(f"SHAP values of {len(shap.rows)} test rows, by feature"),
                      xaxis=dict(title=f"SHAP value ({shap.output})", zeroline=True, zerolinecolor="#9aa5b8"),
                      yaxis=dict(tickvals=list(range(len(imp))), ticktext=[html_text(g) for g in imp.index],
                                 autorange="reversed", automargin=True), height=max(320, 110 + 34 * len(imp)))
    return fig


def dependence_figure(shap: GlobalShap, features: pd.DataFrame, group: str) -> go.Figure:
    """SHAP's dependence plot: the feature's value against its SHAP value, one dot per row."""
    j = shap.groups.index(group)
    fig = go.Figure(go.Scattergl(x=features[group].astype(object).map(html_text) if features[group].dtype == object
                                 else features[group], y=shap.values[:, j], mode="markers",
                                 marker=dict(size=6, color=method_colour("shap"), opacity=0.6),
                                 meta={"role": "dependence", "group": group},
                                 hovertemplate="%{x}<br>SHAP %{y:.4f}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, title=titled(f"How {group} moves the output (SHAP dependence)"),
                      xaxis=dict(title=html_text(group)), yaxis=dict(title=f"SHAP value ({shap.output})",
                                                                     zeroline=True, zerolinecolor="#9aa5b8"))
    return fig
