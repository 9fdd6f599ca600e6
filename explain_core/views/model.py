"""The standard views of a model on its test rows — ROC and precision-recall curves, the confusion matrix at the
model's threshold, calibration, class balance — as pure plotly figures of a
:class:`~explain_core.inspection.performance.ModelPerformance`; a regression shows predicted against true values
instead of calibration.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..inspection.performance import CALIBRATION_BINS, ModelPerformance
from ..vocabulary import format_number, html_text
from .style import LABEL_COLOURS, LEGEND_BELOW, TEMPLATE, TEXT, method_colour, titled

UNIT = [-0.03, 1.03]  # a [0, 1] axis with room at the origin, so its two "0" labels do not collide
NARROW = 34  # title characters per line in a third-width chart
CONFUSION_SCALE = [[0, "#F4F6F8"], [1, "#9CC0E4"]]  # light cells: dark text reads on every one


def roc_figure(perf: ModelPerformance) -> go.Figure:
    """ROC curve of the test rows with the model's operating point (its threshold) marked."""
    fig = go.Figure()
    if perf.roc is not None:
        fig.add_trace(go.Scatter(x=perf.roc["fpr"], y=perf.roc["tpr"], mode="lines", name=f"AUC {perf.auc:.3f}",
                                 line=dict(color=method_colour("model", 0)), meta={"role": "roc"},
                                 hovertemplate="FPR %{x:.3f}<br>TPR %{y:.3f}<extra></extra>"))
        (tn, fp), (fn, tp) = perf.confusion.to_numpy()
        fig.add_trace(go.Scatter(x=[fp / max(1, fp + tn)], y=[tp / max(1, tp + fn)], mode="markers",
                                 name="at the threshold", marker=dict(size=11, color=LABEL_COLOURS[1]),
                                 meta={"role": "operating_point"}))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#BAB0AC", dash="dot"),
                             name="chance", hoverinfo="skip"))
    auc = f" (AUC {perf.auc:.3f})" if perf.auc is not None else " (one class only in the test rows)"
    fig.update_layout(template=TEMPLATE, title=titled(f"ROC curve on the test rows{auc}"),
                      xaxis=dict(title="false positive rate", range=UNIT),
                      yaxis=dict(title="true positive rate", range=UNIT), legend=LEGEND_BELOW, margin=dict(b=90))
    return fig


def pr_figure(perf: ModelPerformance) -> go.Figure:
    """Precision against recall on the test rows, with the positive share as the chance line."""
    fig = go.Figure()
    if perf.pr is not None:
        fig.add_trace(go.Scatter(x=perf.pr["recall"], y=perf.pr["precision"], mode="lines", line_shape="hv",
                                 name=f"AP {perf.average_precision:.3f}", line=dict(color=method_colour("model", 0)),
                                 meta={"role": "pr"}))
        base = float(perf.y.mean())
        fig.add_trace(go.Scatter(x=[0, 1], y=[base, base], mode="lines", line=dict(color="#BAB0AC", dash="dot"),
                                 name=f"chance ({base:.2f})", hoverinfo="skip"))
    ap = f" (average precision {perf.average_precision:.3f})" if perf.average_precision is not None else ""
    fig.update_layout(template=TEMPLATE, title=titled(f"Precision and recall{ap}"),
                      xaxis=dict(title="recall", range=UNIT), yaxis=dict(title="precision", range=UNIT),
                      legend=LEGEND_BELOW, margin=dict(b=90))
    return fig


def confusion_figure(perf: ModelPerformance) -> go.Figure:
    """The confusion matrix of the test rows at the model's threshold (:func:`confusion_matrix_figure`)."""
    return confusion_matrix_figure(perf.confusion, perf.class_names, perf.threshold)


def confusion_matrix_figure(confusion: pd.DataFrame, class_names, threshold: float) -> go.Figure:
    """A confusion matrix (true × predicted counts) at ``threshold``, counts and row shares in the cells; class
    names wrapped on the axes, dark text on light cells (≥ 4.5:1 on every cell)."""
    counts = confusion.to_numpy()
    share = counts / np.maximum(1, counts.sum(axis=1, keepdims=True))
    names = ["<br>".join(textwrap.wrap(html_text(n), 16)) for n in class_names]
    fig = go.Figure(go.Heatmap(z=share, x=names, y=names, zmin=0, zmax=1, showscale=False, xgap=3, ygap=3,
                               colorscale=CONFUSION_SCALE, meta={"role": "confusion"},
                               text=[[f"{c:,}<br>({s:.0%})" for c, s in zip(row, srow)]
                                     for row, srow in zip(counts, share)], texttemplate="%{text}",
                               textfont=dict(color=TEXT, size=15),
                               hovertemplate="true %{y}<br>predicted %{x}<br>%{text}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, height=400,
                      title=titled(f"Confusion matrix at the threshold {format_number(threshold)} "
                                   f"({counts.sum():,} test rows)"),
                      xaxis=dict(title="predicted", type="category", side="bottom"),
                      yaxis=dict(title="true", type="category", autorange="reversed", automargin=True))
    return fig


def calibration_figure(perf: ModelPerformance) -> go.Figure:
    """Observed positive share against the mean predicted probability per bin (a regression: predicted against
    true values, with the threshold drawn on both axes)."""
    fig = go.Figure()
    if perf.values is not None:
        v = perf.values
        fig.add_trace(go.Scattergl(x=v["true"], y=v["predicted"], mode="markers", name="test rows",
                                   marker=dict(size=5, color=method_colour("model", 0), opacity=0.5),
                                   meta={"role": "values"}))
        low, high = float(v.min().min()), float(v.max().max())
        fig.add_trace(go.Scatter(x=[low, high], y=[low, high], mode="lines", name="predicted = true",
                                 line=dict(color="#BAB0AC", dash="dot"), hoverinfo="skip"))
        fig.update_layout(title=titled("Predicted against true values (test rows)", NARROW),
                          xaxis=dict(title="true"), yaxis=dict(title="predicted"))
    elif perf.calibration is not None:
        c = perf.calibration
        fig.add_trace(go.Scatter(x=c["predicted"], y=c["observed"], mode="lines+markers", name="model",
                                 line=dict(color=method_colour("model", 0)), meta={"role": "calibration"}))
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfectly calibrated",
                                 line=dict(color="#BAB0AC", dash="dot"), hoverinfo="skip"))
        fig.update_layout(title=titled(f"Calibration ({CALIBRATION_BINS} bins of predicted probability)", NARROW),
                          xaxis=dict(title="mean predicted probability", range=UNIT),
                          yaxis=dict(title="observed share positive", range=UNIT))
    else:
        fig.update_layout(title=titled("Calibration: the model's score is not a probability", NARROW))
    fig.update_layout(template=TEMPLATE, legend=LEGEND_BELOW, margin=dict(b=90))
    return fig


def balance_figure(perf: ModelPerformance) -> go.Figure:
    """Rows of each class (a regression: each side of the threshold) in the training and test rows."""
    fig = go.Figure()
    for label, name in enumerate(perf.class_names):
        fig.add_trace(go.Bar(x=list(perf.balance.columns), y=perf.balance.iloc[label].tolist(), name=html_text(name),
                             marker_color=LABEL_COLOURS[label], meta={"role": "balance", "label": label},
                             text=perf.balance.iloc[label].tolist(), textposition="outside", cliponaxis=False))
    fig.update_layout(template=TEMPLATE, title=titled("Class balance", NARROW), barmode="group",
                      yaxis=dict(title="rows"), legend=LEGEND_BELOW, margin=dict(b=90))
    return fig
