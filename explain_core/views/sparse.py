"""Figures of a model before and after sparse-explanation training (SEV paper §5.2, Figs. 2-4), from the numbers
of :mod:`explain_core.sparse.compare`: SEV distributions, a Sankey of each test row's SEV before → after, feature
prevalence before / after, and the loss terms per epoch. Data in, plotly Figure out; pure functions.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from ..sev.summaries import sev_counts
from ..vocabulary import html_text
from .style import BAR_COLOURS, TEMPLATE

LINK_COLOUR = "rgba(76, 120, 168, 0.25)"


def _order(state: str) -> tuple:
    return (0, int(state), "") if state.isdigit() else (1, 0, state)


def sev_sankey(transitions: pd.DataFrame, *, label: str = "SEV⁺") -> go.Figure:
    """Each row's SEV before (left) → after (right), one band per (before, after) pair, width = rows (Fig. 2b).

    Labels stay apart: each names one value and its rows ("SEV⁺ 2 · 31 rows"), the sides are titled once
    ("before" / "after"), nodes are spaced and the height grows with the values of the longer side."""
    left = sorted(set(transitions["before"]), key=_order)
    right = sorted(set(transitions["after"]), key=_order)
    before, after = transitions["before"].value_counts(), transitions["after"].value_counts()

    def name(state: str, rows: int) -> str:
        count = f"{rows:,} row{'s' if rows != 1 else ''}"
        return f"{label} {state} · {count}" if state.isdigit() else f"{state} · {count}"
    names = [name(s, int(before[s])) for s in left] + [name(s, int(after[s])) for s in right]
    flows = transitions.groupby(["before", "after"], sort=False).size().reset_index(name="rows")
    fig = go.Figure(go.Sankey(
        arrangement="snap",
        node=dict(label=[html_text(n) for n in names], pad=28, thickness=18, color=BAR_COLOURS["counts"],
                  hovertemplate="%{label}<extra></extra>"),
        link=dict(source=[left.index(b) for b in flows["before"]],
                  target=[len(left) + right.index(a) for a in flows["after"]], value=flows["rows"].tolist(),
                  color=LINK_COLOUR, hovertemplate="%{source.label} → %{target.label}: %{value} rows<extra></extra>"),
        meta={"role": "sankey"}))
    for x, side, anchor in ((0, "before", "left"), (1, "after", "right")):
        fig.add_annotation(x=x, y=1.0, xref="paper", yref="paper", yanchor="bottom", xanchor=anchor, text=side,
                           showarrow=False, font=dict(size=14))
    fig.update_layout(template=TEMPLATE, title=f"Each test row's {label} before → after ({len(transitions)} rows)",
                      height=max(420, 140 + 56 * max(len(left), len(right))), font=dict(size=13),
                      margin=dict(t=90, l=20, r=20, b=20))
    return fig


def sev_distributions(values: dict[str, Sequence[int | None]], *, label: str = "SEV⁺") -> go.Figure:
    """Grouped bars: the share of rows at each SEV value, one colour per model (``{"before": [...], ...}``)."""
    fig = go.Figure()
    colours = {"before": BAR_COLOURS["evaluated"], "after": BAR_COLOURS["counts"]}
    order = [str(v) for v in sev_counts([v for vals in values.values() for v in vals])["sev"]]  # one axis for all
    for side, vals in values.items():
        counts = sev_counts(vals)
        fig.add_trace(go.Bar(x=[str(v) for v in counts["sev"]], y=counts["share"], name=side,
                             customdata=counts["count"], marker_color=colours.get(side),
                             hovertemplate=f"{side}: {label} = %{{x}}, %{{y:.1%}} (%{{customdata}} rows)"
                                           "<extra></extra>"))
    fig.update_layout(template=TEMPLATE, barmode="group", title=f"{label} distribution before and after",
                      xaxis=dict(title=label, type="category", categoryorder="array", categoryarray=order),
                      yaxis=dict(title="share of rows", tickformat=".0%"))
    return fig


def prevalence_figure(prevalence: pd.DataFrame, *, label: str = "SEV⁺") -> go.Figure:
    """Horizontal grouped bars: share of explained rows whose explanations use each feature, before and after."""
    shown = prevalence.sort_values("after", kind="stable")
    fig = go.Figure()
    for side, colour in (("before", BAR_COLOURS["evaluated"]), ("after", BAR_COLOURS["prevalence"])):
        fig.add_trace(go.Bar(x=shown[side], y=shown["group"].map(html_text), orientation="h", name=side,
                             marker_color=colour, hovertemplate=f"{side}: %{{y}} in %{{x:.1%}}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, barmode="group", title=f"Features in minimal {label} explanations",
                      xaxis=dict(title="share of explained rows", tickformat=".0%", range=[0, 1]),
                      yaxis=dict(title=None, type="category"), height=max(300, 60 + 36 * len(shown)))
    return fig


def history_figure(history: Sequence[dict]) -> go.Figure:
    """The loss terms per epoch (BCE, ℓ_SEV, ℓ_Pos_base and their weighted total); the warm-up shaded."""
    frame = pd.DataFrame(list(history))
    fig = go.Figure()
    for term, name in (("total", "total (eq. 9)"), ("bce", "BCE"), ("sev", "ℓ_SEV"), ("pos_base", "ℓ_Pos_base")):
        fig.add_trace(go.Scatter(x=frame["epoch"], y=frame[term], mode="lines", name=name))
    warm = frame.loc[frame["phase"] == "warm-up", "epoch"]
    if len(warm):
        fig.add_vrect(x0=0.5, x1=warm.max() + 0.5, fillcolor="rgba(186, 176, 172, 0.2)", line_width=0,
                      annotation_text="warm-up (BCE only)", annotation_position="top left")
    fig.update_layout(template=TEMPLATE, title="Loss terms per epoch (mean over the epoch's batches)",
                      xaxis=dict(title="epoch"), yaxis=dict(title="loss"))
    return fig
