"""The matplotlib re-plot of a plotly figure, from the figure's own trace data (Scatter, Bar, Heatmap with the
layout's titles, axes, categories and legend): the PDF's figures where no browser can run plotly's export.
Uses matplotlib's object API (no pyplot), so it is safe off the main thread.
"""
from __future__ import annotations

import io
import re
import textwrap

import numpy as np
import plotly.graph_objects as go
from ..errors import RenderError

FIGURE_WIDTH_PX = 900  # plotly pixels (before ``scale``), placed at the text width
"""A figure's width in plotly pixels, placed at the PDF's text width."""
FIGURE_SCALE = 1.5  # 1350 px across the 180 mm text width: about 190 dpi
"""The PNG's scale over :data:`FIGURE_WIDTH_PX` (about 190 dpi on the page)."""


_PLOTLY_COLORWAY = ("#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880",
                    "#FF97FF", "#FECB52")
_TEXT_COLOUR = "#2a3f5f"
_GRID_COLOUR = "#EBF0F8"


def _colour(value, default=None):
    """A plotly colour (hex, ``rgb()``/``rgba()``, a named colour) as a matplotlib RGBA tuple."""
    from matplotlib.colors import to_rgba

    if value is None:
        return default
    text = str(value).strip()
    match = re.fullmatch(r"rgba?\(([^)]*)\)", text.replace(" ", ""))
    if match:
        parts = [float(p) for p in match.group(1).split(",")]
        alpha = parts[3] if len(parts) > 3 else 1.0
        return (parts[0] / 255, parts[1] / 255, parts[2] / 255, alpha)
    try:
        return to_rgba(text)
    except ValueError:
        return default


def _colorway(fig: go.Figure) -> list:
    way = fig.layout.colorway
    if not way and fig.layout.template is not None and fig.layout.template.layout is not None:
        way = fig.layout.template.layout.colorway
    return list(way or _PLOTLY_COLORWAY)


def _numbers(values) -> np.ndarray:
    """Trace coordinates as floats, None (plotly's segment break) as NaN."""
    return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


def _is_numeric(values) -> bool:
    for v in values:
        if v is None:
            continue
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            return False
    return True


def _axis_categories(fig: go.Figure, axis: str) -> list | None:
    """Category labels of the x or y axis in order of first appearance, or None for a numeric axis."""
    spec = fig.layout[f"{axis}axis"]
    values = []
    for trace in fig.data:
        data = trace[axis] if axis in trace else None
        if data is not None:
            values.extend(list(data))
    if spec.type != "category" and _is_numeric(values):
        return None
    seen: dict = {}
    for v in values:
        if v is not None:
            seen.setdefault(v, None)
    return list(seen)


def _positions(values, categories: list | None) -> np.ndarray:
    if categories is None:
        return _numbers(values)
    index = {c: i for i, c in enumerate(categories)}
    return np.array([np.nan if v is None else float(index[v]) for v in values], dtype=float)


def _array(value, n: int) -> list:
    if value is None:
        return [None] * n
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    return [value] * n


def matplotlib_png(fig: go.Figure, width: int, height: int, scale: float = FIGURE_SCALE) -> bytes:
    """:func:`matplotlib_figure` (which documents the arguments) as PNG bytes."""
    mfig = matplotlib_figure(fig, width, height, scale)
    buffer = io.BytesIO()
    mfig.savefig(buffer, format="png", dpi=100 * scale, facecolor="white")
    return buffer.getvalue()


def matplotlib_figure(fig: go.Figure, width: int = FIGURE_WIDTH_PX, height: int = 450, scale: float = FIGURE_SCALE):
    """Re-plot a plotly figure with matplotlib from its own trace data: Scatter (lines with None-separated
    segments, markers with per-point colours and sizes, text labels), Bar (horizontal or vertical, grouped)
    and Heatmap (with its text), with the layout's title, axis titles, ranges, categories and legend.
    Uses matplotlib's object API (no pyplot), so it is safe off the main thread. Returns the matplotlib Figure.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        The figure.
    width, height : int
        Pixels.
    scale : float
        The resolution's scale.

    Returns
    -------
    matplotlib.figure.Figure
        The re-plot.

    Raises
    ------
    RenderError
        When the figure has a trace kind it does not draw.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    mfig = Figure(figsize=(width / 100, height / 100), dpi=100 * scale)
    FigureCanvasAgg(mfig)
    ax = mfig.add_subplot()
    layout = fig.layout
    colours = _colorway(fig)
    xcats, ycats = _axis_categories(fig, "x"), _axis_categories(fig, "y")
    bars = [t for t in fig.data if t.type == "bar"]
    group = layout.barmode in (None, "group") and len(bars) > 1
    # plotly draws a legend for two or more named traces, or for a trace that asks for one
    named = [t for t in fig.data if t.showlegend is not False and t.name]
    legend = len(named) > 1 or any(t.showlegend is True for t in named)
    for i, trace in enumerate(fig.data):
        default = colours[i % len(colours)]
        label = trace.name if legend and trace in named else None
        if trace.type == "scatter":
            _mpl_scatter(ax, trace, xcats, ycats, default, label)
        elif trace.type == "bar":
            _mpl_bar(ax, trace, bars.index(trace), len(bars) if group else 1, xcats, ycats, default, label)
        elif trace.type == "heatmap":
            _mpl_heatmap(ax, trace, xcats, ycats)
        else:
            raise RenderError(f"the matplotlib re-plot does not draw {trace.type} traces")
    _mpl_axes(ax, layout, xcats, ycats, fig)
    above = False
    if legend and layout.showlegend is not False:
        spec = layout.legend
        horizontal = spec is not None and spec.orientation == "h"
        above = horizontal and spec.y is not None and spec.y > 1
        if above:
            box = ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.01), ncol=min(5, len(named)), frameon=False,
                            fontsize=8, borderaxespad=0)
        elif horizontal:
            box = ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=min(5, len(named)), frameon=False,
                            fontsize=8)
        else:
            box = ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
        for handle in box.legend_handles:  # one marker size in the legend, as plotly draws it
            if hasattr(handle, "set_sizes"):
                handle.set_sizes([30])
    title = layout.title.text if layout.title is not None else None
    if title:
        plain_title = re.sub(r"<[^>]+>", "", re.sub(r"<br\s*/?>", " ", title))
        ax.set_title("\n".join(textwrap.wrap(plain_title, max(40, width // 8))),
                     loc="left", fontsize=11, color=_TEXT_COLOUR, pad=24 if above else 6)
    mfig.tight_layout()
    return mfig


def _mpl_scatter(ax, trace, xcats, ycats, default, label) -> None:
    x, y = _positions(trace.x, xcats), _positions(trace.y, ycats)
    mode = trace.mode or ("lines+markers" if len(x) < 20 else "lines")
    line = trace.line
    colour = _colour(line.color if line is not None else None, _colour(default))
    if "lines" in mode:
        width = (line.width if line is not None and line.width is not None else 2) * 0.75
        ax.plot(x, y, color=colour, linewidth=width, label=None if "markers" in mode else label, zorder=2)
    if "markers" in mode:
        marker = trace.marker
        n = len(x)
        sizes = np.array([6 if s is None else float(s) for s in _array(marker.size, n)]) * 0.75
        fills = [_colour(c, colour) for c in _array(marker.color, n)]
        fills = [_colour(default) if c is None else c for c in fills]
        edge = _colour(marker.line.color if marker.line is not None else None, None)
        ax.scatter(x, y, s=sizes ** 2, c=fills, edgecolors=edge if edge is not None else "none",
                   linewidths=0.75 if edge is not None else 0, label=label, zorder=3)
    if "text" in mode and trace.text is not None:
        texts = _array(trace.text, len(x))
        position = trace.textposition if isinstance(trace.textposition, str) else "middle center"
        dy = 7 if "top" in position else -7 if "bottom" in position else 0
        for xi, yi, t in zip(x, y, texts):
            if t and np.isfinite(xi) and np.isfinite(yi):
                ax.annotate(str(t), (xi, yi), xytext=(0, dy), textcoords="offset points", ha="center",
                            va="bottom" if dy > 0 else "top" if dy < 0 else "center", fontsize=8, color=_TEXT_COLOUR,
                            zorder=4)


def _mpl_bar(ax, trace, index, groups, xcats, ycats, default, label) -> None:
    horizontal = trace.orientation == "h"
    cats, values = (trace.y, trace.x) if horizontal else (trace.x, trace.y)
    pos = _positions(cats, ycats if horizontal else xcats)
    finite = np.sort(np.unique(pos[np.isfinite(pos)]))
    step = float(np.min(np.diff(finite))) if len(finite) > 1 else 1.0
    slot = 0.8 * step / groups
    offset = (index - (groups - 1) / 2) * slot
    colour = _colour(trace.marker.color if trace.marker is not None else None, _colour(default))
    vals = _numbers(values)
    if horizontal:
        ax.barh(pos + offset, vals, height=slot, color=colour, label=label, zorder=2)
    else:
        ax.bar(pos + offset, vals, width=slot, color=colour, label=label, zorder=2)


def _mpl_heatmap(ax, trace, xcats, ycats) -> None:
    from matplotlib.colors import LinearSegmentedColormap

    z = np.array([[np.nan if v is None else float(v) for v in row] for row in trace.z], dtype=float)
    scale = trace.colorscale
    if scale and not isinstance(scale, str):
        cmap = LinearSegmentedColormap.from_list("plotly", [(float(p), _colour(c)) for p, c in scale])
    else:
        cmap = "viridis"
    xs = np.arange(z.shape[1] + 1) - 0.5
    ys = np.arange(z.shape[0] + 1) - 0.5
    gap = max(trace.xgap or 0, trace.ygap or 0)
    ax.pcolormesh(xs, ys, z, cmap=cmap, vmin=trace.zmin, vmax=trace.zmax, edgecolors="white",
                  linewidth=gap * 0.75, zorder=1)
    if trace.text is not None:
        for i, row in enumerate(trace.text):
            for j, t in enumerate(row):
                if t:
                    ax.text(j, i, str(t), ha="center", va="center", fontsize=8, color=_TEXT_COLOUR, zorder=2)


def _mpl_axes(ax, layout, xcats, ycats, fig) -> None:
    from matplotlib.ticker import MultipleLocator, PercentFormatter

    heatmap = any(t.type == "heatmap" for t in fig.data)
    ax.set_facecolor("white")
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.tick_params(colors=_TEXT_COLOUR, labelsize=8, length=0)
    if not heatmap:
        ax.grid(True, color=_GRID_COLOUR, linewidth=0.8, zorder=0)
        ax.set_axisbelow(True)
    for name, cats in (("x", xcats), ("y", ycats)):
        spec = layout[f"{name}axis"]
        axis = ax.xaxis if name == "x" else ax.yaxis
        title = spec.title.text if spec.title is not None else None
        if title:
            (ax.set_xlabel if name == "x" else ax.set_ylabel)(title, color=_TEXT_COLOUR, fontsize=9)
        if cats is not None:
            (ax.set_xticks if name == "x" else ax.set_yticks)(range(len(cats)))
            labels = [str(c) for c in cats]
            rotate = name == "x" and sum(len(s) for s in labels) > 70
            (ax.set_xticklabels if name == "x" else ax.set_yticklabels)(
                labels, rotation=30 if rotate else 0, ha="left" if rotate and spec.side == "top" else
                "right" if rotate else "center" if name == "x" else "right")
            (ax.set_xlim if name == "x" else ax.set_ylim)(-0.5, len(cats) - 0.5)
        else:
            if spec.type == "log":
                (ax.set_xscale if name == "x" else ax.set_yscale)("log")
            if spec.range is not None:
                (ax.set_xlim if name == "x" else ax.set_ylim)(*spec.range)
            if spec.dtick is not None and spec.type != "log":
                try:
                    axis.set_major_locator(MultipleLocator(float(spec.dtick)))
                except (TypeError, ValueError):
                    pass
            if spec.tickformat and spec.tickformat.endswith("%"):
                axis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        if spec.autorange == "reversed":
            (ax.invert_xaxis if name == "x" else ax.invert_yaxis)()
        if spec.side == "top" and name == "x":
            ax.xaxis.tick_top()
            ax.xaxis.set_label_position("top")
        if spec.visible is False:
            axis.set_visible(False)
            if name == "y":
                ax.grid(False, axis="y")
            else:
                ax.grid(False, axis="x")
