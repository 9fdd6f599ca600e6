"""Figures of the anchored k-sparse linear explanations: each explainer's weights and the metric sweeps.
Traces carry ``meta={"role": ...}``."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..linear.guarantees import SampleGuidance
from ..vocabulary import html_text
from .style import LEGEND_BELOW, METHOD_DASH, TEMPLATE, method_colour, method_key, titled


def folded_weights(weights: pd.DataFrame, dense: Sequence[str] = ("shap",)) -> pd.DataFrame:
    """The literals worth a bar: those a sparse method (every column but ``dense``) gives a weight, in the table's
    order, then one ``others`` line per dense method's remaining weights, summed (so each column keeps its total:
    w·x at this row, where every literal is +1). Without any sparse weight, the ``dense`` methods' largest
    ``len(sparse columns) or 5`` literals."""
    sparse = [c for c in weights.columns if c not in dense]
    kept = (weights[sparse].abs() > 1e-12).any(axis=1) if sparse else pd.Series(False, index=weights.index)
    if not kept.any():
        top = weights.abs().max(axis=1).sort_values(ascending=False, kind="stable").head(5).index
        kept = weights.index.isin(top)
    shown, rest = weights.loc[kept], weights.loc[~np.asarray(kept)]
    if len(rest) and (rest[[c for c in weights.columns if c in dense]].abs() > 1e-12).any().any():
        others = rest.sum().where(weights.columns.isin(dense), 0.0)
        label = f"others ({len(rest)} literal{'s' if len(rest) != 1 else ''}, summed)"
        shown = pd.concat([shown, others.to_frame(label).T])
    return shown


def weights_figure(weights: pd.DataFrame, *, title: str = "Weights of each explainer") -> go.Figure:
    """Grouped horizontal bars: one bar per (literal, method) from a literal × method table of weights.

    Literals every method leaves at 0 (or NaN) are dropped; the rest keep the table's order, top to bottom, and
    within each literal the methods keep the columns' order, top to bottom (as in the legend above the bars).
    Literal names are category labels in full, in a readable size; the height grows with the bars.
    """
    shown = weights.loc[(weights.abs() > 1e-12).any(axis=1)]
    fig = go.Figure()
    for method in shown.columns:
        fig.add_trace(go.Bar(x=shown[method], y=[html_text(name) for name in shown.index], orientation="h",
                             name=str(method), meta={"role": "weights"},
                             marker_color=method_colour(method, list(shown.columns).index(method)),
                             hovertemplate="%{y}<br>w = %{x:.4f}<extra>" + str(method) + "</extra>"))
    bars = len(shown) * max(1, len(shown.columns))
    fig.update_layout(template=TEMPLATE, title=titled(title), barmode="group", xaxis=dict(title="weight w_j"),
                      yaxis=dict(title=None, type="category", autorange="reversed", automargin=True,
                                 tickfont=dict(size=13)),
                      height=max(320, 140 + 12 * bars + 16 * len(shown)),
                      legend=LEGEND_BELOW, margin=dict(b=100))
    return fig


def sweep_figure(summary: pd.DataFrame, parameter: str, *, metric: str = "relevance") -> go.Figure:
    """Mean ``metric`` per method against ``parameter`` (PLE Figs. 4-6) from ``Sweep.summary(metric)``.

    One line per method, its points in increasing ``parameter`` order, with ±1 standard deviation bars where
    a point averages several instances; ``m`` (sample sizes spanning decades) is drawn on a log axis.
    """
    fig = go.Figure()
    for i, (method, part) in enumerate(summary.groupby("method", sort=False)):
        part = part.sort_values(parameter, kind="stable")
        spread = part["std"].fillna(0.0) if "std" in part else None
        several = spread is not None and "count" in part and bool((part["count"] > 1).any())
        fig.add_trace(go.Scatter(x=part[parameter], y=part["mean"], mode="lines+markers", name=str(method),
                                 meta={"role": "curve"},
                                 line=dict(color=method_colour(method, i), dash=METHOD_DASH.get(method_key(method))),
                                 error_y=dict(type="data", array=spread, visible=True) if several else None,
                                 hovertemplate=f"{parameter} = %{{x}}<br>{metric} = %{{y:.4f}}<extra>{method}</extra>"))
    fig.update_layout(template=TEMPLATE, title=titled(f"{metric.replace('_', ' ')} against {parameter}"),
                      legend=LEGEND_BELOW,
                      margin=dict(b=90),
                      xaxis=dict(title=parameter, type="log" if parameter == "m" else "linear"),
                      yaxis=dict(title=metric.replace("_", " "), rangemode="tozero"))
    return fig


def sample_guidance_text(guidance: SampleGuidance) -> str:
    """Theorems 2–3 of the PLE paper read for this fit: the ε its m guarantees, the m a target ε needs."""
    exact = guidance.tolerance("exact")
    verdict = "vacuous, since the theorem needs ε ≤ 1" if exact > 1 else "with the exact fit"
    return (f"**How many samples?** With m = {guidance.m:,} samples over d = {guidance.d} literals and k = "
            f"{guidance.k}, Theorem 2 guarantees with probability {1 - guidance.delta:.0%} that relevance ≤ "
            f"{guidance.factor():.2f} × (fidelity + ε) for ε = {exact:.2g} ({verdict}). ε = {guidance.epsilon:g} "
            f"needs m ≥ {guidance.needed('exact'):,} for the exact fit and m ≥ {guidance.needed('iht'):,} for IHT "
            f"(Theorem 3, besides its Lemma 5 condition, whose constants the paper leaves open). These are "
            "worst-case bounds: in the paper's experiments the relevance error stops improving by m = 1,000–5,000 "
            "(§6, Fig. 6).")
