"""Figures and plain-word readings of the cohort views: cohorts side by side
(:class:`~explain_core.inspection.cohorts.CohortComparison`), fairness group metrics with the differences
(:class:`~explain_core.inspection.fairness.FairnessReport`) and the error tree's leaves
(:class:`~explain_core.inspection.errors.ErrorTree`). Pure: result → plotly figure or a sentence."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..inspection.cohorts import CohortComparison
from ..inspection.errors import ErrorTree
from ..inspection.fairness import FairnessReport
from ..vocabulary import html_text, join_words
from .style import LEGEND_BELOW, TEMPLATE, text_on, titled

FAIRNESS_METRICS = ("selection rate", "TPR", "FPR", "accuracy")
# Error rate 0 → 1, light reds under dark text then dark reds under white: every label ≥ 4.5:1 (no mid red of ~4:1)
ERROR_SCALE = [[0.0, "#fff5f0"], [0.5, "#fb6a4a"], [0.5, "#cb181d"], [1.0, "#67000d"]]


def comparison_figure(result: CohortComparison) -> go.Figure:
    """Per cohort: error rate, accuracy and AUC as grouped bars."""
    table = result.table()
    fig = go.Figure()
    for metric in ("error rate", "accuracy", "AUC"):
        values = table[metric].astype(float)
        if values.notna().any():
            fig.add_trace(go.Bar(x=table["cohort"].map(html_text), y=values, name=metric, meta={"role": metric},
                                 hovertemplate="%{x}: %{y:.3f}<extra>" + metric + "</extra>"))
    fig.update_layout(template=TEMPLATE, barmode="group", legend=LEGEND_BELOW,
                      title=titled("How the model does on each cohort (test rows)"),
                      yaxis=dict(title="share / AUC", range=[0, 1]), xaxis=dict(type="category"))
    return fig


def sev_box_figure(result: CohortComparison) -> go.Figure:
    """The SEV⁻ (SEV®) and SEV⁺ values of each cohort's sample as box plots (explained rows only)."""
    fig = go.Figure()
    label = result.stats[0].sev_label if result.stats else "SEV⁻"
    for part, name in (("sev_minus", label), ("sev_plus", "SEV⁺")):
        xs, ys = [], []
        for s in result.stats:
            values = [v for v in getattr(s, part) if v is not None]
            xs += [html_text(s.name)] * len(values)
            ys += values
        fig.add_trace(go.Box(x=xs, y=ys, name=name, boxmean=True, meta={"role": part}))
    fig.update_layout(template=TEMPLATE, boxmode="group", legend=LEGEND_BELOW,
                      title=titled(f"SEV of each cohort's sample (at most {result.budget} rows each, seed "
                                   f"{result.seed})"), yaxis=dict(title="features to change", dtick=1),
                      xaxis=dict(type="category"))
    return fig


def feature_figure(result: CohortComparison, part: str = "shap") -> go.Figure:
    """Feature × cohort bars: mean |SHAP| (``part="shap"``) or the share of explained rows whose minimal explanation
    uses the feature (``"prevalence"``)."""
    table = result.feature_table(part)
    order = table.mean(axis=1).sort_values(ascending=True).index
    fig = go.Figure([go.Bar(y=[html_text(g) for g in order], x=table.loc[order, name], orientation="h",
                            name=html_text(name), meta={"role": part}) for name in table.columns])
    words = "mean |SHAP value|" if part == "shap" else "share of explained rows using it"
    fig.update_layout(template=TEMPLATE, barmode="group", legend=LEGEND_BELOW,
                      title=titled(("Mean |SHAP| by cohort" if part == "shap" else "SEV prevalence by cohort")),
                      xaxis=dict(title=words, tickformat=".0%" if part != "shap" else None),
                      yaxis=dict(type="category"), height=max(320, 120 + 22 * len(order) * max(1, len(table.columns))))
    return fig


def fairness_figure(report: FairnessReport, split: str) -> go.Figure:
    """One split's groups: selection rate, TPR, FPR and accuracy as grouped bars, the differences in the title."""
    s = next(x for x in report.splits if x.split == split)
    fig = go.Figure([go.Bar(x=s.groups["group"].map(html_text), y=s.groups[m], name=m, meta={"role": m},
                            customdata=s.groups["count"],
                            hovertemplate="%{x}: %{y:.3f} (%{customdata} rows)<extra>" + m + "</extra>")
                     for m in FAIRNESS_METRICS])
    fig.update_layout(template=TEMPLATE, barmode="group", legend=LEGEND_BELOW,
                      title=titled(f"{split}: demographic-parity difference {s.parity_difference:.2f}, "
                                   f"equalised-odds difference {s.odds_difference:.2f}"),
                      yaxis=dict(title="rate", range=[0, 1]), xaxis=dict(type="category", title=html_text(split)))
    return fig


def cell_colours(rates) -> list[str]:
    """The :data:`ERROR_SCALE` colour of each error rate (0 to 1) as ``#rrggbb`` (interpolated in RGB as plotly
    does), for the text drawn on it."""
    def rgb(colour: str) -> np.ndarray:
        return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)

    out = []
    for rate in np.clip(np.asarray(rates, dtype=float), 0, 1):
        low, high = (ERROR_SCALE[0], ERROR_SCALE[1]) if rate < 0.5 else (ERROR_SCALE[2], ERROR_SCALE[3])
        t = (rate - low[0]) / (high[0] - low[0])
        mixed = rgb(low[1]) + t * (rgb(high[1]) - rgb(low[1]))
        out.append("#" + "".join(f"{round(v):02x}" for v in mixed))
    return out


def error_tree_figure(tree: ErrorTree) -> go.Figure:
    """The leaves as a treemap: area = rows, colour = error rate; the rule in the hover and the label."""
    labels = [f"leaf {leaf.node}: {leaf.error_rate:.0%} wrong" for leaf in tree.leaves]
    fig = go.Figure(go.Treemap(
        labels=labels, parents=[""] * len(labels), values=[leaf.size for leaf in tree.leaves],
        customdata=np.array([[html_text(leaf.rule), leaf.errors, leaf.error_share] for leaf in tree.leaves],
                            dtype=object).reshape(-1, 3),
        marker=dict(colors=[leaf.error_rate for leaf in tree.leaves], colorscale=ERROR_SCALE, cmin=0, cmax=1,
                    showscale=True, colorbar=dict(title="error rate", tickformat=".0%")),
        textfont=dict(color=[text_on(c) for c in cell_colours([leaf.error_rate for leaf in tree.leaves])]),
        meta={"role": "error tree"},
        hovertemplate="%{customdata[0]}<br>%{value} rows, %{customdata[1]} errors "
                      "(%{customdata[2]:.0%} of all)<extra></extra>"))
    fig.update_layout(template=TEMPLATE, margin=dict(t=70, l=8, r=8, b=8),
                      title=titled(f"Where the model is wrong: {tree.error_rate:.0%} of {tree.rows:,} test rows "
                                   "overall"))
    return fig


# --- readings ------------------------------------------------------------------------------------------------

def comparison_text(result: CohortComparison) -> str:
    """The cohort the model does worst on, against the others."""
    shown = [s for s in result.stats if s.error_rate is not None]
    if not shown:
        return "No cohort has test rows, so there is nothing to compare."
    worst = max(shown, key=lambda s: s.error_rate)
    others = join_words([f"{s.error_rate:.0%} on {s.name}" for s in shown if s is not worst])
    return (f"The model is wrong on {worst.error_rate:.0%} of the {worst.size:,} test rows of {worst.name} "
            f"({worst.text})" + (f", against {others}." if others else "."))


def sev_text(result: CohortComparison) -> str:
    parts = []
    for s in result.stats:
        minus = [v for v in s.sev_minus if v is not None]
        if minus:
            parts.append(f"{np.mean(minus):.1f} on {s.name}")
    if not parts:
        return "No cohort's sample has an explained row."
    return f"Features to change to flip a prediction ({result.stats[0].sev_label}, mean): {join_words(parts)}."


def fairness_text(report: FairnessReport) -> str:
    """The split with the largest equalised-odds difference, and the SEV share."""
    if not report.splits:
        return "No protected feature or cohort to compare groups across."
    top = max(report.splits, key=lambda s: s.odds_difference)
    rates = top.groups.set_index("group")["selection rate"]
    text = (f"The largest gap is across {top.split}: the equalised-odds difference is {top.odds_difference:.2f} and "
            f"the model selects {rates.max():.0%} of {rates.idxmax()} against {rates.min():.0%} of {rates.idxmin()}.")
    if report.sev_any is not None:
        text += (f" Of {report.sev_rows} sampled test rows, {report.sev_any:.0%} have an unrestricted SEV⁻ explanation "
                 f"using {join_words(list(report.protected))} ({report.sev_all:.0%} only such explanations).")
    return text


def error_tree_text(tree: ErrorTree) -> str:
    """The leaf with the highest error rate, against the overall rate."""
    if not tree.leaves or tree.errors == 0:
        return f"The model is wrong on none of the {tree.rows:,} test rows."
    top = tree.leaves[0]
    return (f"The model is wrong on {top.error_rate:.0%} of the {top.size:,} rows with {top.rule}, against "
            f"{tree.error_rate:.0%} overall; they hold {top.error_share:.0%} of all its errors.")
