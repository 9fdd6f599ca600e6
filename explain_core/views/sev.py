"""Figures of SEV: the hypercube of one query (p ≤ 8), the search by depth, the shortest flipping paths, and the
dataset-wide SEV histogram and feature prevalence. Data in, plotly Figure out; pure functions.

Traces carry ``meta={"role": ...}`` (``edges``, ``paths``, ``vertices``, ``evaluated``, ``flipped``, ``counts``,
``prevalence``) so callers and tests can find them without relying on their order.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..errors import IntakeError
from ..sev.engine import Hypercube, SEVExplanation, SEVResult
from ..sev.summaries import lattice_counts, prevalence_table, sev_counts
from ..vocabulary import format_number, format_significant, html_text
from .style import BAR_COLOURS, EDGE_COLOUR, LABEL_COLOURS, LEGEND_BELOW, PATH_COLOUR, TEMPLATE, titled

HYPERCUBE_FIGURE_MAX_GROUPS = 8


# --- hypercube (p ≤ 8) ---------------------------------------------------------------------------------------

def _codes(masks: np.ndarray) -> np.ndarray:
    """Vertex code of each mask row: bit g set where group g keeps the query's value."""
    return (masks.astype(np.int64) << np.arange(masks.shape[1])).sum(axis=1)


def _layout_positions(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x = groups moved to the reference; y = rank within that layer (by the moved groups' indices), centred."""
    moved = ~masks
    depth = moved.sum(axis=1)
    keys = [tuple(np.flatnonzero(row)) for row in moved]
    y = np.zeros(len(masks))
    for d in np.unique(depth):
        rows = np.flatnonzero(depth == d)
        order = sorted(rows, key=lambda r: keys[r])
        y[order] = np.arange(len(order)) - (len(order) - 1) / 2
    return depth.astype(float), y


def _segments(pairs, x, y):
    xs, ys = [], []
    for a, b in pairs:
        xs += [x[a], x[b], None]
        ys += [y[a], y[b], None]
    return xs, ys


def hypercube_edges(p: int) -> set[tuple[int, int]]:
    """Every hypercube edge as a (smaller code, larger code) pair: p·2^(p−1) of them."""
    return {(v, v | (1 << g)) for v in range(2 ** p) for g in range(p) if not v >> g & 1}


def path_edges(result: SEVResult, names: Sequence[str]) -> set[tuple[int, int]]:
    """Edges (as code pairs) along every ordering of every minimal explanation of ``result``.

    SEV⁻/SEV® start at the query (all bits 1) and clear one explanation group at a time; SEV⁺ starts at the
    reference (all bits 0) and sets them.
    """
    names = list(names)
    p = len(names)
    start = 2 ** p - 1 if result.kind == "minus" else 0
    edges = set()
    for order in result.paths():
        v = start
        for group in order:
            w = v ^ (1 << names.index(group))
            edges.add((min(v, w), max(v, w)))
            v = w
    return edges


def hypercube_figure(cube: Hypercube, explanation: SEVExplanation | None = None, *, which: str = "minus",
                     class_names: Sequence[str] = ("0", "1"), height: int | None = None) -> go.Figure:
    """The SEV hypercube of one query (p ≤ 8 groups) as a layered graph.

    Vertices are placed by depth from the query (x = number of groups at the reference) and spread
    deterministically within each layer; edges join vertices that differ in one group. Vertices are coloured
    by predicted label (``class_names[label]`` in the legend); the query (all groups at their own values) and
    the reference (all groups at the reference) are drawn bigger and labelled. With ``explanation``, the
    shortest paths of its ``which`` result (``minus``, ``plus`` or ``restricted``) are highlighted — every
    ordering of every minimal explanation — and the hover text lists each group's value.

    Parameters
    ----------
    cube : Hypercube
        The scored hypercube.
    explanation : SEVExplanation, optional
        The row's SEV, to highlight.
    which : str
        ``"minus"``, ``"plus"`` or ``"restricted"``.
    class_names : sequence of str
        The classes' names.
    height : int, optional
        The figure's height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        The layered graph.
    """
    names = list(cube.names)
    masks = np.asarray(cube.masks, dtype=bool)
    p = len(names)
    codes, row_of = _vertex_codes(masks, p)
    x, y = _layout_positions(masks)
    labels = np.asarray(cube.labels).astype(int)
    scores = np.asarray(cube.scores, dtype=float)

    result = explanation.result(which) if explanation is not None else None
    values = None
    if explanation is not None:
        if tuple(explanation.layout.names) != tuple(names):
            raise ValueError("the explanation's feature groups differ from the hypercube's")
        table = explanation.table("minus")
        values = (table.loc["Query"].to_dict(), table.loc["Reference"].to_dict())

    fig = go.Figure()
    ex, ey = _segments([(row_of[a], row_of[b]) for a, b in sorted(hypercube_edges(p))], x, y)
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line=dict(color=EDGE_COLOUR, width=1),
                             hoverinfo="skip", name="edges", showlegend=False, meta={"role": "edges"}))
    if result is not None:
        highlighted = sorted(path_edges(result, names))
        px_, py_ = _segments([(row_of[a], row_of[b]) for a, b in highlighted], x, y)
        fig.add_trace(go.Scatter(x=px_, y=py_, mode="lines", line=dict(color=PATH_COLOUR, width=4),
                                 hoverinfo="skip", name=f"shortest paths ({result.label})",
                                 meta={"role": "paths", "edges": [list(e) for e in highlighted]}))

    query_row, reference_row = row_of[2 ** p - 1], row_of[0]
    role = {reference_row: "reference", query_row: "query"}  # p = 0: one vertex, the query
    hover = [_vertex_hover(masks[r], names, scores[r], class_names[labels[r]], values, role.get(r))
             for r in range(2 ** p)]
    for label in (0, 1):
        rows = np.flatnonzero(labels == label)
        fig.add_trace(go.Scatter(
            x=x[rows], y=y[rows], mode="markers+text", text=[role.get(r, "") for r in rows], textposition="top center",
            marker=dict(color=LABEL_COLOURS[label], size=[18 if r in role else 10 for r in rows],
                        line=dict(color="white", width=1)),
            hovertext=[hover[r] for r in rows], hoverinfo="text", customdata=codes[rows],
            name=f"predicted {html_text(class_names[label])}", meta={"role": "vertices", "label": label}))

    title = "SEV hypercube" if result is None else f"SEV hypercube — {result.message}"
    fig.update_layout(template=TEMPLATE, title=titled(title),
                      height=height or min(1000, max(360, 60 * int(np.abs(y).max() + 2))),
                      xaxis=dict(title="groups moved to the reference", dtick=1, range=[-0.5, p + 0.5],
                                 zeroline=False),
                      yaxis=dict(visible=False), legend=LEGEND_BELOW, margin=dict(b=90), hovermode="closest")
    return fig


def _vertex_codes(masks: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Each mask row's vertex code and, per code, its row; an error unless the rows are the 2^p vertices (p ≤ 8)."""
    if p > HYPERCUBE_FIGURE_MAX_GROUPS:
        raise IntakeError(f"The hypercube is drawn for at most {HYPERCUBE_FIGURE_MAX_GROUPS} groups, not {p}; "
                          "use lattice_figure.")
    if masks.shape != (2 ** p, p):
        raise ValueError(f"expected {2 ** p} vertex masks over {p} groups, got shape {masks.shape}")
    codes = _codes(masks)
    if len(set(codes.tolist())) != 2 ** p:
        raise ValueError("the hypercube's masks are not the 2^p distinct vertices")
    row_of = np.empty(2 ** p, dtype=np.intp)
    row_of[codes] = np.arange(2 ** p)
    return codes, row_of


def _vertex_hover(mask, names, score, label_name, values, role) -> str:
    """A vertex's hover text (user names and values escaped: plotly reads HTML tags in it)."""
    moved = [html_text(n) for n, keep in zip(names, mask) if not keep]
    head = {"query": "<b>Query</b><br>", "reference": "<b>Reference</b><br>"}.get(role, "")
    lines = [head + "At the reference: " + (", ".join(moved) if moved else "none")]
    if values is not None:
        query, reference = values
        lines += [html_text(f"{n} = {query[n] if keep else reference[n]}") for n, keep in zip(names, mask)]
    lines.append(f"score = {format_significant(score)} (predicted {html_text(label_name)})")
    return "<br>".join(lines)


# --- lattice view (any p) ------------------------------------------------------------------------------------

def lattice_figure(source: Hypercube | SEVResult, *, labels_of: Callable[[np.ndarray], np.ndarray] | None = None,
                   kind: str = "minus", log_y: bool = False) -> go.Figure:
    """Bars per depth: vertices evaluated and vertices that flip (see :func:`lattice_counts` for the arguments).

    Parameters
    ----------
    source : Hypercube or SEVResult
        What was searched.
    labels_of : callable, optional
        The model's labelling rule.
    kind : str
        ``"minus"`` or ``"plus"``.
    log_y : bool
        A logarithmic count axis.

    Returns
    -------
    plotly.graph_objects.Figure
        The bars.
    """
    counts = lattice_counts(source, labels_of=labels_of, kind=kind)
    start = "reference" if (source.kind if isinstance(source, SEVResult) else kind) == "plus" else "query"
    fig = go.Figure([
        go.Bar(x=counts["depth"], y=counts["evaluated"], name="vertices evaluated",
               marker_color=BAR_COLOURS["evaluated"], meta={"role": "evaluated"}),
        go.Bar(x=counts["depth"], y=counts["flipped"], name="vertices that flip",
               marker_color=BAR_COLOURS["flipped"], meta={"role": "flipped"},
               text=[str(v) if v else "" for v in counts["flipped"]], textposition="outside", cliponaxis=False),
    ])
    title = "SEV search by depth" + (f" — {source.message}" if isinstance(source, SEVResult) else "")
    fig.update_layout(template=TEMPLATE, title=titled(title), barmode="group", legend=LEGEND_BELOW,
                      margin=dict(b=90), xaxis=dict(title=f"groups moved from the {start}", dtick=1),
                      yaxis=dict(title="vertices", type="log" if log_y else "linear"))
    return fig


def path_scores(result: SEVResult, names: Sequence[str], groups: Sequence[str], start_score: float) -> list[float]:
    """The model's score along one shortest path of ``result``: from its start (the query for SEV⁻/SEV®, scored
    ``start_score``; the reference for SEV⁺), moving ``groups`` one at a time — each step the group whose vertex
    the search scored closest to the flip (the explanation's most direct ordering)."""
    if result.vertex_masks is None or result.vertex_scores is None:
        raise ValueError("this SEV result kept no vertex scores (computed with keep_scores=False)")
    score_of = {m.tobytes(): float(v) for m, v in zip(np.asarray(result.vertex_masks, dtype=bool),
                                                      result.vertex_scores)}
    towards_one = (result.kind == "minus") == (result.explained_class == 0)  # the flip raises the score
    mask = np.ones(len(names), dtype=bool) if result.kind == "minus" else np.zeros(len(names), dtype=bool)
    scores, left = [float(start_score)], list(groups)

    def step(mask: np.ndarray, g: str):
        m = mask.copy()
        m[list(names).index(g)] = result.kind != "minus"
        return m, score_of.get(m.tobytes(), np.nan)

    while left:
        options = [(g, *step(mask, g)) for g in left]
        g, mask, score = max(options, key=lambda o: -np.inf if np.isnan(o[2]) else (o[2] if towards_one else -o[2]))
        scores.append(score)
        left.remove(g)
    return scores


def paths_figure(result: SEVResult, names: Sequence[str], start_score: float, threshold: float, *,
                 top: int = 8) -> go.Figure:
    """Shortest flipping paths for any number of groups: the score after each move of every minimal explanation
    (the first ``top``), from the search's start to the flipping vertex, against the model's threshold."""
    fig = go.Figure()
    shown = [e for e in result.explanations if e][:top]
    for i, groups in enumerate(shown):
        scores = path_scores(result, names, groups, start_score)
        fig.add_trace(go.Scatter(x=list(range(len(scores))), y=scores, mode="lines+markers",
                                 name=html_text(", ".join(groups)), meta={"role": "paths", "groups": list(groups)},
                                 line=dict(color=TEMPLATE.layout.colorway[i % len(TEMPLATE.layout.colorway)]),
                                 marker=dict(size=[7] * (len(scores) - 1) + [13]),
                                 hovertemplate="after %{x} moves: score %{y:.4~r}<extra>%{fullData.name}</extra>"))
    fig.add_hline(y=threshold, line=dict(color=LABEL_COLOURS[1], dash="dot"),
                  annotation_text=f"threshold {format_number(threshold)}", annotation_position="bottom right")
    more = f" — {len(shown)} of {len(result.explanations)} shown" if len(result.explanations) > len(shown) else ""
    start = "reference" if result.kind == "plus" else "row"
    fig.update_layout(template=TEMPLATE,
                      title=titled(f"Shortest flipping paths from the {start} ({result.label}){more}"),
                      xaxis=dict(title="features moved", dtick=1), yaxis=dict(title="model score"),
                      legend=LEGEND_BELOW, margin=dict(b=110), height=420 + 18 * len(shown))
    return fig


# --- dataset-wide --------------------------------------------------------------------------------------------

def sev_histogram(values: Sequence[int | None] | pd.DataFrame, *, label: str = "SEV⁻") -> go.Figure:
    """Bar chart of :func:`sev_counts`: how many queries have each SEV value, and how many are not explained.
    ``values`` may be such a table already (an audit's, :meth:`~explain_core.audit.Audit.counts`).

    Parameters
    ----------
    values : sequence of int or None, or pandas.DataFrame
        The SEV values, or their :func:`sev_counts` table.
    label : str
        The SEV's name on the axis.

    Returns
    -------
    plotly.graph_objects.Figure
        The bars.
    """
    counts = values if isinstance(values, pd.DataFrame) else sev_counts(values)
    fig = go.Figure(go.Bar(x=[str(v) for v in counts["sev"]], y=counts["count"],
                           customdata=counts["share"], name=label, marker_color=BAR_COLOURS["counts"],
                           hovertemplate=f"{label} = %{{x}}<br>%{{y}} queries (%{{customdata:.1%}})<extra></extra>",
                           meta={"role": "counts"}))
    fig.update_layout(template=TEMPLATE, title=titled(f"{label} over {int(counts['count'].sum()):,} queries"),
                      xaxis=dict(title=label, type="category"), yaxis=dict(title="queries"))
    return fig


def feature_prevalence(results: Sequence[SEVResult] | pd.DataFrame, group_names: Sequence[str]) -> go.Figure:
    """Horizontal bars of :func:`prevalence_table`: share of explained queries whose minimal explanations
    include each group (most frequent on top). ``results`` may be such a table already, with ``attrs["label"]``
    (an audit's, :meth:`~explain_core.audit.Audit.prevalence`).

    Parameters
    ----------
    results : sequence of SEVResult or pandas.DataFrame
        Many queries' results, or their prevalence table.
    group_names : sequence of str
        The feature groups.

    Returns
    -------
    plotly.graph_objects.Figure
        The bars.
    """
    if isinstance(results, pd.DataFrame):
        table, label = results, results.attrs["label"]
    else:
        table = prevalence_table(results, group_names)
        labels = sorted({r.label for r in results})
        label = labels[0] if len(labels) == 1 else "SEV"
    shown = table.sort_values("share", ascending=True, kind="stable")
    fig = go.Figure(go.Bar(x=shown["share"], y=shown["group"].map(html_text), orientation="h",
                           customdata=shown["count"],
                           marker_color=BAR_COLOURS["prevalence"], name=label,
                           hovertemplate="%{y}: %{x:.1%} (%{customdata} queries)<extra></extra>",
                           meta={"role": "prevalence"}))
    fig.update_layout(template=TEMPLATE,
                      title=titled(f"Groups in minimal {label} explanations "
                                   f"({table.attrs['explained']:,} of {table.attrs['queries']:,} queries explained)"),
                      xaxis=dict(title="share of explained queries", tickformat=".0%", range=[0, 1]),
                      yaxis=dict(title=None, type="category"), height=max(300, 40 + 28 * len(table)))
    return fig
