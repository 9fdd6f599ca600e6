"""Figures and plain-word readings of partial dependence, ICE and interactions (pure: result → plotly figure, or
result → sentences): a line with the ICE lines faint and the chosen row's highlighted, bars for a categorical
feature, a heatmap for a pair, and the matrix of interactions."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..inspection.dependence import PartialDependence
from ..inspection.interactions import SHAP_METHOD, Interactions
from ..vocabulary import format_number, format_value, html_text, join_words
from .style import BAR_COLOURS, LEGEND_BELOW, PATH_COLOUR, TEMPLATE, method_colour, titled

ICE_COLOUR = "rgba(120, 130, 150, 0.25)"
AVERAGE_COLOUR = "#4C78A8"
HEAT_SCALE = [[0, "#f7fbff"], [0.5, "#6baed6"], [1, "#08306b"]]


def feature_label(dataset, name: str) -> str:
    """A feature's name with the data card's description of it (``age — Age in years at COMPAS screening``)."""
    card = next((c for c in dataset.card.get("columns", []) if c.get("name") == name), {})
    return f"{name} — {card['description']}" if card.get("description") else name


def _labels(grid: np.ndarray) -> list[str]:
    return [html_text(format_value(v)) for v in grid]


def dependence_figure(pd_: PartialDependence) -> go.Figure:
    """One feature's PDP (a line, or bars for a categorical one) over its ICE lines, with the chosen row's ICE line
    and its own value highlighted; a pair's 2-D PDP as a heatmap."""
    if len(pd_.groups) == 2:
        return _surface_figure(pd_)
    group, numeric = pd_.groups[0], pd_.kinds[0] == "numeric"
    x = pd_.grids[0].astype(float) if numeric else _labels(pd_.grids[0])
    fig = go.Figure()
    if len(pd_.ice):  # every ICE line in one trace, separated by gaps
        xs = [v for _ in pd_.ice for v in [*x, None]]
        ys = [v for line in pd_.ice for v in [*line, None]]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines" if numeric else "markers", name=f"ICE of {len(pd_.ice)} rows",
                                 line=dict(color=ICE_COLOUR, width=1), marker=dict(color=ICE_COLOUR, size=5),
                                 hoverinfo="skip", meta={"role": "ice"}))
    average = dict(x=x, y=pd_.average, name=f"average over {len(pd_.rows)} rows (PDP)", meta={"role": "pdp"},
                   hovertemplate="%{x}: %{y:.3f}<extra>average</extra>")
    fig.add_trace(go.Scatter(**average, mode="lines", line=dict(color=AVERAGE_COLOUR, width=3)) if numeric
                  else go.Bar(**average, marker_color=BAR_COLOURS["counts"], opacity=0.75))
    fig.add_trace(go.Scatter(x=x, y=pd_.row_ice, mode="lines+markers" if numeric else "markers",
                             name=f"{pd_.row_name} (ICE)", line=dict(color=PATH_COLOUR, width=2.5),
                             marker=dict(color=PATH_COLOUR, size=8, symbol="diamond"), meta={"role": "row_ice"},
                             hovertemplate="%{x}: %{y:.3f}<extra>" + html_text(pd_.row_name) + "</extra>"))
    own = pd_.row_values[0]
    fig.add_trace(go.Scatter(x=[float(own) if numeric else html_text(format_value(own))], y=[pd_.row_score],
                             mode="markers", name=f"{pd_.row_name} as it is", meta={"role": "row_point"},
                             marker=dict(color=method_colour("sev"), size=13, symbol="star",
                                         line=dict(color="#1f2328", width=1))))
    fig.update_layout(template=TEMPLATE, height=460, legend=LEGEND_BELOW, margin=dict(b=110),
                      title=titled(f"How {group} moves {pd_.output}: partial dependence and ICE"),
                      xaxis=dict(title=html_text(group), type="linear" if numeric else "category"),
                      yaxis=dict(title=html_text(pd_.output)))
    return fig


def _surface_figure(pd_: PartialDependence) -> go.Figure:
    (a, b), (ga, gb) = pd_.groups, pd_.grids
    xa = ga.astype(float) if pd_.kinds[0] == "numeric" else _labels(ga)
    xb = gb.astype(float) if pd_.kinds[1] == "numeric" else _labels(gb)
    fig = go.Figure(go.Heatmap(z=pd_.average.T, x=xa, y=xb, colorscale=HEAT_SCALE, meta={"role": "pdp2d"},
                               colorbar=dict(title=html_text(pd_.output)),
                               hovertemplate=f"{html_text(a)} %{{x}}<br>{html_text(b)} %{{y}}<br>"
                                             "average %{z:.3f}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, height=440,
                      title=titled(f"Average {pd_.output} as {a} and {b} vary together (2-D partial dependence, "
                                   f"{len(pd_.rows)} rows)"),
                      xaxis=dict(title=html_text(a), type="linear" if pd_.kinds[0] == "numeric" else "category"),
                      yaxis=dict(title=html_text(b), type="linear" if pd_.kinds[1] == "numeric" else "category"))
    return fig


def interaction_figure(result: Interactions) -> go.Figure:
    """The groups × groups matrix of interactions as a heatmap; the diagonal (SHAP's main effects, which would
    outshine every pair) is left blank."""
    names = [html_text(g) for g in result.groups]
    pairs = result.matrix.copy()
    np.fill_diagonal(pairs, np.nan)
    fig = go.Figure(go.Heatmap(z=pairs, x=names, y=names, colorscale=HEAT_SCALE, meta={"role": "interactions"},
                               colorbar=dict(title=html_text(result.measure)), hoverongaps=False,
                               hovertemplate="%{y} × %{x}: %{z:.4f}<extra></extra>"))
    what = (f"{result.measure} ({result.output})" if result.method == SHAP_METHOD
            else f"{result.method} of Friedman's H")
    fig.update_layout(template=TEMPLATE, height=max(380, 140 + 26 * len(names)),
                      title=titled(f"Interactions between features: {what}, {len(result.rows)} test rows"),
                      xaxis=dict(type="category", tickangle=-40), yaxis=dict(type="category", autorange="reversed"))
    return fig


# --- readings --------------------------------------------------------------------------------------------------

def dependence_text(pd_: PartialDependence) -> str:
    """The figure's message in words, leading with the answer."""
    if len(pd_.groups) == 2:
        return _surface_text(pd_)
    group, grid, avg = pd_.groups[0], pd_.grids[0], pd_.average
    rows = f"averaged over {len(pd_.rows)} test rows"
    own = f"{pd_.row_name} ({group} {format_value(pd_.row_values[0])}, {pd_.output} {format_number(pd_.row_score)})"
    if pd_.kinds[0] == "numeric":
        verb = "raises" if avg[-1] > avg[0] else "lowers" if avg[-1] < avg[0] else "leaves"
        high, low = int(np.argmax(avg)), int(np.argmin(avg))
        return (f"Raising {group} from {format_value(grid[0])} to {format_value(grid[-1])} {verb} the average "
                f"{pd_.output} from {format_number(avg[0])} to {format_number(avg[-1])} ({rows}; highest "
                f"{format_number(avg[high])} at {format_value(grid[high])}, lowest {format_number(avg[low])} at "
                f"{format_value(grid[low])}). Over the same values {own} goes from "
                f"{format_number(pd_.row_ice[0])} to {format_number(pd_.row_ice[-1])}.")
    order = np.argsort(-avg, kind="stable")
    return (f"The average {pd_.output} is highest for {group} = {format_value(grid[order[0]])} "
            f"({format_number(avg[order[0]])}) and lowest for {format_value(grid[order[-1]])} "
            f"({format_number(avg[order[-1]])}), {rows}; {own} would score "
            f"{format_number(pd_.row_ice[order[0]])} and {format_number(pd_.row_ice[order[-1]])} there.")


def _surface_text(pd_: PartialDependence) -> str:
    (a, b), (ga, gb), avg = pd_.groups, pd_.grids, pd_.average
    high, low = np.unravel_index(np.argmax(avg), avg.shape), np.unravel_index(np.argmin(avg), avg.shape)
    return (f"Averaged over {len(pd_.rows)} test rows, {pd_.output} is highest ({format_number(avg[high])}) at "
            f"{a} = {format_value(ga[high[0]])} and {b} = {format_value(gb[high[1]])}, and lowest "
            f"({format_number(avg[low])}) at {a} = {format_value(ga[low[0]])} and {b} = {format_value(gb[low[1]])}.")


def interaction_text(result: Interactions, top: int = 3) -> str:
    """The strongest pairs in words."""
    pairs = result.pairs().head(top)
    named = join_words([f"{f} × {w} ({format_number(v)})" for f, w, v in pairs.itertuples(index=False)])
    if result.method == SHAP_METHOD:
        return (f"The strongest interactions by mean |SHAP interaction value| ({result.output}, {len(result.rows)} "
                f"test rows) are {named}.")
    return (f"The strongest interactions by the H-statistic estimate ({len(result.rows)} test rows; 0 = none, 1 = the "
            f"pair's joint effect is all interaction) are {named}.")
