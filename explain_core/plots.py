"""Figures of every method: data in, plotly Figure out. Pure functions, no I/O, no Streamlit.

Every figure is built with the explicit template :data:`TEMPLATE` (never the global default), so the same
objects can be shown in the app and written into a PDF report. The numbers behind the dataset-wide charts
come from :func:`sev_counts`, :func:`prevalence_table` and :func:`lattice_counts` (pandas DataFrames).

Traces carry ``meta={"role": ...}`` (``edges``, ``paths``, ``vertices``, ``evaluated``, ``flipped``, ``counts``,
``prevalence``, ``curve``, ``weights``, ``agreement``, ``flips``, ``attribution``) so callers and tests can find
them without relying on their order.
"""
from __future__ import annotations

import textwrap
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .errors import IntakeError, check_choice
from .sev import Hypercube, SEVExplanation, SEVResult
from .vocabulary import METHOD_LABELS, format_number, html_text

GRID = "#EBF0F8"
# Our own small template (plotly_white's look): explicit, so figures do not depend on the global default or on
# Streamlit's theme, and ~15× cheaper to apply than the full built-in template (it carries no per-trace defaults).
TEMPLATE = go.layout.Template(layout=dict(
    paper_bgcolor="white", plot_bgcolor="white", font=dict(color="#2a3f5f"), hovermode="closest",
    colorway=["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880"],
    xaxis=dict(gridcolor=GRID, linecolor=GRID, zerolinecolor=GRID, ticks="", automargin=True),
    yaxis=dict(gridcolor=GRID, linecolor=GRID, zerolinecolor=GRID, ticks="", automargin=True)))
HYPERCUBE_FIGURE_MAX_GROUPS = 8
LABEL_COLOURS = {0: "#4C78A8", 1: "#E45756"}  # predicted label 0 / 1
EDGE_COLOUR = "rgba(160, 160, 160, 0.35)"
PATH_COLOUR = "#F58518"
BAR_COLOURS = {"evaluated": "#BAB0AC", "flipped": "#E45756", "counts": "#4C78A8", "prevalence": "#54A24B"}
NOT_EXPLAINED = "not explained"
# One colour per method in every chart (weights, sweeps, attributions, flip numbers): looked up by the method's
# key or its label (``METHOD_LABELS``), so "iht" and "IHT" draw alike; SEV's values share SEV's colour.
METHOD_COLOURS = {"iht": "#4C78A8", "exact": "#F58518", "lime": "#54A24B", "shap": "#B279A2", "shap_k": "#FF9DA6",
                  "l1_relax": "#9D755D", "sev": "#E45756", "lens": "#72B7B2"}
_METHOD_ALIASES = {**{label: key for key, label in METHOD_LABELS.items()}, "LIME": "lime", "LIME-C": "lime",
                   "SHAP": "shap", "SHAP-C": "shap", "SEV⁻": "sev", "SEV⁺": "sev", "SEV®": "sev", "SEV": "sev",
                   "LENS": "lens"}
METHOD_DASH = {"exact": "dash"}  # the exact fit often equals IHT: dashed, so the line below shows through
_WHICH = ("minus", "plus", "restricted")


def method_key(name) -> str:
    """The method a trace name or column stands for (``"IHT"`` → ``"iht"``); the name itself when unknown."""
    return _METHOD_ALIASES.get(str(name), str(name))


def method_colour(name, fallback: int = 0) -> str:
    """:data:`METHOD_COLOURS` of a method key or label; an unknown method takes the template's ``fallback``-th
    colour."""
    way = TEMPLATE.layout.colorway
    return METHOD_COLOURS.get(method_key(name), way[fallback % len(way)])


def titled(text: str, width: int = 56) -> dict:
    """A chart title wrapped at word boundaries every ~``width`` characters (plotly never wraps, and a half-width
    chart cuts a long title off), pushing the plot down rather than overlapping the legend or the plot."""
    lines = textwrap.wrap(str(text), width, break_long_words=False) or [""]
    return dict(text="<br>".join(lines), automargin=True, yref="container", y=1, yanchor="top", x=0, xanchor="left",
                xref="container", pad=dict(t=22, l=8, b=10))


LEGEND_BELOW = dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left")


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


def _pick(explanation: SEVExplanation, which: str) -> SEVResult:
    check_choice(which, _WHICH, "SEV result")
    result = getattr(explanation, which)
    if result is None:
        raise IntakeError("No SEV® here: pass restricted features to explain_sev.")
    return result


def hypercube_figure(cube: Hypercube, explanation: SEVExplanation | None = None, *, which: str = "minus",
                     class_names: Sequence[str] = ("0", "1"), height: int | None = None) -> go.Figure:
    """The SEV hypercube of one query (p ≤ 8 groups) as a layered graph.

    Vertices are placed by depth from the query (x = number of groups at the reference) and spread
    deterministically within each layer; edges join vertices that differ in one group. Vertices are coloured
    by predicted label (``class_names[label]`` in the legend); the query (all groups at their own values) and
    the reference (all groups at the reference) are drawn bigger and labelled. With ``explanation``, the
    shortest paths of its ``which`` result (``minus``, ``plus`` or ``restricted``) are highlighted — every
    ordering of every minimal explanation — and the hover text lists each group's value.
    """
    names = list(cube.names)
    masks = np.asarray(cube.masks, dtype=bool)
    p = len(names)
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
    x, y = _layout_positions(masks)
    labels = np.asarray(cube.labels).astype(int)
    scores = np.asarray(cube.scores, dtype=float)

    result = _pick(explanation, which) if explanation is not None else None
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
    hover = [_vertex_hover(masks[r], names, scores[r], class_names[labels[r]], values,
                           "query" if r == query_row else "reference" if r == reference_row else None)
             for r in range(2 ** p)]
    for label in (0, 1):
        rows = np.flatnonzero(labels == label)
        size = [18 if r in (query_row, reference_row) else 10 for r in rows]
        text = ["query" if r == query_row else "reference" if r == reference_row else "" for r in rows]
        fig.add_trace(go.Scatter(
            x=x[rows], y=y[rows], mode="markers+text", text=text, textposition="top center",
            marker=dict(color=LABEL_COLOURS[label], size=size, line=dict(color="white", width=1)),
            hovertext=[hover[r] for r in rows], hoverinfo="text", customdata=codes[rows],
            name=f"predicted {html_text(class_names[label])}", meta={"role": "vertices", "label": label}))

    title = "SEV hypercube" if result is None else f"SEV hypercube — {result.message}"
    fig.update_layout(template=TEMPLATE, title=titled(title), height=height or min(1000, max(360, 60 * int(np.abs(y).max() + 2))),
                      xaxis=dict(title="groups moved to the reference", dtick=1, range=[-0.5, p + 0.5],
                                 zeroline=False),
                      yaxis=dict(visible=False), legend=LEGEND_BELOW, margin=dict(b=90), hovermode="closest")
    return fig


def _vertex_hover(mask, names, score, label_name, values, role) -> str:
    """A vertex's hover text (user names and values escaped: plotly reads HTML tags in it)."""
    moved = [html_text(n) for n, keep in zip(names, mask) if not keep]
    head = {"query": "<b>Query</b><br>", "reference": "<b>Reference</b><br>"}.get(role, "")
    lines = [head + "At the reference: " + (", ".join(moved) if moved else "none")]
    if values is not None:
        query, reference = values
        lines += [html_text(f"{n} = {query[n] if keep else reference[n]}") for n, keep in zip(names, mask)]
    lines.append(f"score = {score:.4g} (predicted {html_text(label_name)})")
    return "<br>".join(lines)


# --- lattice view (any p) ------------------------------------------------------------------------------------

def lattice_counts(source: Hypercube | SEVResult, *, threshold: float | None = None,
                   kind: str = "minus") -> pd.DataFrame:
    """Per searched depth: vertices evaluated and how many flip (columns ``depth``, ``evaluated``, ``flipped``).

    ``source`` is an :class:`SEVResult` computed with scores kept (its ``vertex_masks``/``vertex_scores``) —
    then ``threshold`` (the model's, ``ModelAdapter.threshold``) is required: a vertex's label is
    ``score > threshold``, and it flips when that label differs from ``result.explained_class`` (SEV⁻/SEV®)
    or equals it (SEV⁺). Depth counts groups moved from the search's start (the query for SEV⁻/SEV®, the
    reference for SEV⁺); the depths listed are those the search reached. Or ``source`` is a
    :class:`Hypercube` (every vertex; its labels are used, ``threshold`` is ignored) with ``kind`` ``minus``
    or ``plus`` choosing the start and the flip rule.
    """
    if isinstance(source, Hypercube):
        check_choice(kind, ("minus", "plus"), "SEV kind")
        masks, labels = np.asarray(source.masks, dtype=bool), np.asarray(source.labels).astype(int)
        query_label = int(labels[np.flatnonzero(masks.all(axis=1))[0]])
        depths = range(0, masks.shape[1] + 1)
        explained_class = query_label
    elif isinstance(source, SEVResult):
        if source.vertex_masks is None or source.vertex_scores is None:
            raise ValueError("this SEV result kept no vertex scores (computed with keep_scores=False)")
        if threshold is None:
            raise ValueError("threshold (the model's) is needed to label an SEVResult's vertices")
        kind, explained_class = source.kind, source.explained_class
        masks = np.asarray(source.vertex_masks, dtype=bool)
        labels = (np.asarray(source.vertex_scores, dtype=float) > threshold).astype(int)
        last = source.value if source.value is not None else source.max_depth
        depths = range(0 if kind == "plus" else 1, last + 1)
    else:
        raise TypeError(f"expected a Hypercube or an SEVResult, not {type(source).__name__}")
    depth = (~masks).sum(axis=1) if kind == "minus" else masks.sum(axis=1)
    flips = labels != explained_class if kind == "minus" else labels == explained_class
    return pd.DataFrame({"depth": list(depths),
                         "evaluated": [int((depth == d).sum()) for d in depths],
                         "flipped": [int((flips & (depth == d)).sum()) for d in depths]})


def lattice_figure(source: Hypercube | SEVResult, *, threshold: float | None = None, kind: str = "minus",
                   log_y: bool = False) -> go.Figure:
    """Bars per depth: vertices evaluated and vertices that flip (see :func:`lattice_counts` for the arguments)."""
    counts = lattice_counts(source, threshold=threshold, kind=kind)
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
    while left:
        def step(g):
            m = mask.copy()
            m[list(names).index(g)] = result.kind != "minus"
            return m, score_of.get(m.tobytes(), np.nan)
        options = [(g, *step(g)) for g in left]
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
                                 hovertemplate="after %{x} moves: score %{y:.4g}<extra>%{fullData.name}</extra>"))
    fig.add_hline(y=threshold, line=dict(color=LABEL_COLOURS[1], dash="dot"),
                  annotation_text=f"threshold {threshold:.4g}", annotation_position="bottom right")
    more = f" — {len(shown)} of {len(result.explanations)} shown" if len(result.explanations) > len(shown) else ""
    start = "reference" if result.kind == "plus" else "row"
    fig.update_layout(template=TEMPLATE, title=titled(f"Shortest flipping paths from the {start} ({result.label}){more}"),
                      xaxis=dict(title="features moved", dtick=1), yaxis=dict(title="model score"),
                      legend=LEGEND_BELOW, margin=dict(b=110), height=420 + 18 * len(shown))
    return fig


# --- dataset-wide --------------------------------------------------------------------------------------------

def sev_counts(values: Sequence[int | None]) -> pd.DataFrame:
    """Queries per SEV value: columns ``sev`` (each integer from the smallest to the largest seen, then
    ``"not explained"`` for None), ``count`` and ``share`` (of all queries; 0 when there are none)."""
    ints = [int(v) for v in values if v is not None]
    missing = sum(v is None for v in values)
    levels: list = list(range(min(ints), max(ints) + 1)) if ints else []
    counts = [ints.count(v) for v in levels] + [missing]
    total = len(ints) + missing
    return pd.DataFrame({"sev": levels + [NOT_EXPLAINED], "count": counts,
                         "share": [c / total if total else 0.0 for c in counts]})


def sev_histogram(values: Sequence[int | None] | pd.DataFrame, *, label: str = "SEV⁻") -> go.Figure:
    """Bar chart of :func:`sev_counts`: how many queries have each SEV value, and how many are not explained.
    ``values`` may be such a table already (an audit's, :meth:`~explain_core.audit.Audit.counts`)."""
    counts = values if isinstance(values, pd.DataFrame) else sev_counts(values)
    fig = go.Figure(go.Bar(x=[str(v) for v in counts["sev"]], y=counts["count"],
                           customdata=counts["share"], name=label, marker_color=BAR_COLOURS["counts"],
                           hovertemplate=f"{label} = %{{x}}<br>%{{y}} queries (%{{customdata:.1%}})<extra></extra>",
                           meta={"role": "counts"}))
    fig.update_layout(template=TEMPLATE, title=titled(f"{label} over {int(counts['count'].sum()):,} queries"),
                      xaxis=dict(title=label, type="category"), yaxis=dict(title="queries"))
    return fig


def prevalence_table(results: Sequence[SEVResult], group_names: Sequence[str]) -> pd.DataFrame:
    """Per group (in ``group_names`` order): ``count`` of explained queries with a minimal explanation that
    uses it (once per query) and ``share`` of the explained queries. ``attrs`` holds ``explained``/``queries``."""
    names = list(group_names)
    explained = [r for r in results if r.explainable]
    used: dict[str, int] = dict.fromkeys(names, 0)
    for r in explained:
        groups = {g for e in r.explanations for g in e}
        unknown = groups - set(names)
        if unknown:
            raise ValueError(f"explanations use groups not in group_names: {sorted(unknown)}")
        for g in groups:
            used[g] += 1
    table = pd.DataFrame({"group": names, "count": [used[g] for g in names],
                          "share": [used[g] / len(explained) if explained else 0.0 for g in names]})
    table.attrs.update(explained=len(explained), queries=len(results))
    return table


def feature_prevalence(results: Sequence[SEVResult] | pd.DataFrame, group_names: Sequence[str]) -> go.Figure:
    """Horizontal bars of :func:`prevalence_table`: share of explained queries whose minimal explanations
    include each group (most frequent on top). ``results`` may be such a table already, with ``attrs["label"]``
    (an audit's, :meth:`~explain_core.audit.Audit.prevalence`)."""
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


# --- LENS ----------------------------------------------------------------------------------------------------

def pn_curve_figure(curve: pd.DataFrame, *, direction: str = "r2i") -> go.Figure:
    """Cumulative PN of the τ-minimal factors against τ (LENS App. B, Fig. 6) from ``LensContext.pn_curve``."""
    fig = go.Figure(go.Scatter(x=curve["tau"], y=curve["cumulative_pn"], mode="lines+markers", name="cumulative PN",
                               customdata=curve["factors"], line=dict(color=BAR_COLOURS["counts"]),
                               hovertemplate="τ = %{x:.2f}<br>PN = %{y:.3f}<br>%{customdata} factors<extra></extra>",
                               meta={"role": "curve"}))
    fig.update_layout(template=TEMPLATE, title=titled(f"Cumulative PN of the τ-minimal factors ({direction.upper()})"),
                      xaxis=dict(title="τ", range=[-0.03, 1.03]), yaxis=dict(title="cumulative PN", range=[-0.03, 1.03]))
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
    fig.update_layout(template=TEMPLATE, title=titled("Probability of sufficiency by factor size"), legend=LEGEND_BELOW, margin=dict(b=90),
                      xaxis=dict(title="k (groups in the factor)", dtick=1), yaxis=dict(title="PS", range=[0, 1.02]))
    return fig


# --- linear explanations -------------------------------------------------------------------------------------

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
    fig.update_layout(template=TEMPLATE, title=titled(f"{metric.replace('_', ' ')} against {parameter}"), legend=LEGEND_BELOW,
                      margin=dict(b=90),
                      xaxis=dict(title=parameter, type="log" if parameter == "m" else "linear"),
                      yaxis=dict(title=metric.replace("_", " "), rangemode="tozero"))
    return fig


# --- baselines and agreement ---------------------------------------------------------------------------------

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
        fig.update_xaxes(title=f"{method} attribution ({units[method]})" if method in units else f"{method} attribution",
                         zeroline=True, zerolinecolor="#9aa5b8", row=i, col=1)
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
        text=[format_number(v) if abs(v) >= 5e-4 else f"{v:+.1e}" for v in steps] + [format_number(total)],
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
    fig.update_layout(template=TEMPLATE, title=titled(f"Features moved until the prediction flips ({len(table)} queries)"),
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
                               text=np.where(z == 1, "named", ""), texttemplate="%{text}",
                               hovertemplate="%{y} · %{x}: %{text}<extra></extra>", meta={"role": "agreement"}))
    fig.update_layout(template=TEMPLATE, title=titled("Which features each method names"),
                      xaxis=dict(side="top", type="category"),
                      yaxis=dict(autorange="reversed", type="category", automargin=True),
                      height=max(300, 80 + 30 * len(matrix)))
    return fig
