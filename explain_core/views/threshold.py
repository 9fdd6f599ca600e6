"""Figures of the decision threshold (:class:`~explain_core.inspection.threshold.ThresholdSweep`): the metrics
against the threshold with the model's current and the chosen ones marked, and the confusion matrix at the chosen
one (:func:`~explain_core.views.model.confusion_matrix_figure`)."""
from __future__ import annotations

import plotly.graph_objects as go

from ..inspection.threshold import METRICS, ThresholdSweep
from ..vocabulary import format_number
from .model import UNIT, confusion_matrix_figure
from .style import LEGEND_BELOW, TEMPLATE, TEXT, titled

METRIC_COLOURS = dict(zip(METRICS, ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#B279A2", "#9D755D")))


def sweep_figure(sweep: ThresholdSweep, chosen: float | None = None) -> go.Figure:
    """Each metric against the threshold on the test rows; the model's threshold a solid line, ``chosen`` (when it
    differs) a dashed one."""
    table = sweep.table()
    fig = go.Figure()
    for name in METRICS:
        fig.add_trace(go.Scatter(x=table.index, y=table[name], mode="lines", name=name, meta={"role": name},
                                 line=dict(color=METRIC_COLOURS[name], shape="hv"),
                                 hovertemplate=f"threshold %{{x:.4g}}<br>{name} %{{y:.3f}}<extra></extra>"))
    fig.add_vline(x=sweep.current, line=dict(color=TEXT, width=2),
                  annotation=dict(text=f"in use: {format_number(sweep.current)}", font=dict(color=TEXT)))
    if chosen is not None and chosen != sweep.current:
        fig.add_vline(x=chosen, line=dict(color=TEXT, width=2, dash="dash"), annotation_position="bottom right",
                      annotation=dict(text=f"chosen: {format_number(chosen)}", font=dict(color=TEXT)))
    fig.update_layout(template=TEMPLATE, height=420, legend=LEGEND_BELOW, margin=dict(b=90),
                      title=titled(f"Metrics on {sweep.rows:,} test rows at each threshold of the {sweep.score_label}"),
                      xaxis=dict(title=f"threshold ({sweep.score_label})"), yaxis=dict(title="share", range=UNIT))
    return fig


def sweep_confusion_figure(sweep: ThresholdSweep, threshold: float) -> go.Figure:
    """The confusion matrix of the test rows at the grid threshold nearest to ``threshold``."""
    return confusion_matrix_figure(sweep.confusion(threshold), sweep.class_names,
                                   float(sweep.thresholds[sweep.index_of(threshold)]))


def sweep_text(sweep: ThresholdSweep, chosen: float) -> str:
    """The chosen threshold in words, against the one in use: what share is flagged and how many of each class the
    model then gets right."""
    now, then = sweep.at(sweep.current), sweep.at(chosen)
    negative, positive = sweep.class_names
    words = (f"At the threshold {format_number(chosen)} the model predicts {positive} for {then['selection rate']:.0%} "
             f"of the {sweep.rows:,} test rows, finds {then['recall (TPR)']:.0%} of the rows truly {positive} and "
             f"wrongly flags {then['FPR']:.0%} of those truly {negative}; accuracy {then['accuracy']:.1%}")
    if chosen == sweep.current:
        return words + " (the threshold in use)."
    return words + (f", against {now['accuracy']:.1%}, {now['recall (TPR)']:.0%} found and {now['FPR']:.0%} wrongly "
                    f"flagged at the threshold in use ({format_number(sweep.current)}).")
