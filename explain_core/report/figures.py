"""Figures as PNG for the PDF: plotly's static export (kaleido, which needs a Chrome/Chromium; one server per
process, guarded by a lock) or, where no browser is available, the matplotlib re-plot of the same trace data
(:mod:`.replot`), so both renderers draw the same numbers.

kaleido's private server thread (``kaleido._sync_server.GlobalKaleidoServer``) is read to notice a browser
that never started; ``tests/test_dependencies.py`` fails loudly when that internal changes.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import threading
import time
from functools import lru_cache

import plotly.graph_objects as go

from ..errors import check_choice
from .replot import FIGURE_SCALE, FIGURE_WIDTH_PX, RenderError, matplotlib_png

log = logging.getLogger(__name__)

RENDERERS = ("auto", "plotly", "matplotlib")
FIGURE_HEIGHT_PX = (320, 620)  # the figure's own height, clipped to this range
KALEIDO_TIMEOUT_S = 60


_KALEIDO_LOCK = threading.Lock()
_KALEIDO = {"started": False, "broken": None}


def find_chromium() -> str | None:
    """The Chrome/Chromium kaleido would use (``BROWSER_PATH`` first), or None."""
    override = os.environ.get("BROWSER_PATH")
    if override:
        return override if os.access(override, os.X_OK) else None
    try:
        from choreographer.browsers.chromium import Chromium
        found = Chromium.find_browser(skip_local=False)
        if found:
            return str(found)
    except Exception:  # noqa: BLE001 — any failure here means "not found"
        pass
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@lru_cache(maxsize=1)
def _kaleido_installed() -> bool:
    return importlib.util.find_spec("kaleido") is not None


def plotly_export_available() -> bool:
    """kaleido is installed, a Chromium exists, and the export has not failed in this process."""
    return _kaleido_installed() and _KALEIDO["broken"] is None and find_chromium() is not None


def resolve_renderer(renderer: str = "auto") -> str:
    """``plotly`` or ``matplotlib``: what ``renderer`` means here (``auto`` = plotly when it is available)."""
    check_choice(renderer, RENDERERS, "image renderer")
    if renderer == "auto":
        return "plotly" if plotly_export_available() else "matplotlib"
    return renderer


def figure_size(fig: go.Figure, width: int = FIGURE_WIDTH_PX) -> tuple[int, int]:
    """(width, height) in px of a figure in the PDF: the figure's own height, clipped to a page-friendly range."""
    low, high = FIGURE_HEIGHT_PX
    height = fig.layout.height or 450
    return int(width), int(min(high, max(low, height)))


def figure_png(fig: go.Figure, renderer: str = "auto", *, width: int | None = None, height: int | None = None,
               scale: float = FIGURE_SCALE) -> tuple[bytes, str]:
    """The figure as PNG bytes, and the renderer that drew it (``plotly`` or ``matplotlib``).

    ``auto`` uses plotly's static export when kaleido and a Chromium are available and falls back to the
    matplotlib re-plot if the export fails; ``plotly`` raises :class:`RenderError` instead of falling back.
    """
    size = figure_size(fig)
    width, height = width or size[0], height or size[1]
    chosen = resolve_renderer(renderer)
    if chosen == "plotly":
        try:
            return kaleido_png(fig, width, height, scale), "plotly"
        except RenderError as exc:
            if renderer == "plotly":
                raise
            log.warning("%s; drawing the figures with matplotlib instead", exc)
    return matplotlib_png(fig, width, height, scale), "matplotlib"


def kaleido_png(fig: go.Figure, width: int, height: int, scale: float = FIGURE_SCALE) -> bytes:
    """Plotly's static export through one kaleido server per process (started on first use; the server is not
    thread-safe, so calls are serialised by a lock). A call that does not answer within ``KALEIDO_TIMEOUT_S``
    marks the export broken for this process."""
    if not _kaleido_installed():
        raise RenderError("plotly static export needs the kaleido package (pip install kaleido)")
    if find_chromium() is None:
        raise RenderError("plotly static export needs Chrome or Chromium (e.g. apt-get install chromium)")
    import kaleido

    with _KALEIDO_LOCK:
        if _KALEIDO["broken"]:
            raise RenderError(f"plotly static export failed earlier in this process: {_KALEIDO['broken']}")
        if not _KALEIDO["started"]:
            kaleido.start_sync_server(mathjax=False, silence_warnings=True)
            _KALEIDO["started"] = True
        out: dict = {}

        def call() -> None:
            try:
                out["png"] = kaleido.calc_fig_sync(fig, opts={"format": "png", "width": int(width),
                                                              "height": int(height), "scale": scale})
            except BaseException as exc:  # noqa: BLE001 — handed to the caller below
                out["error"] = exc

        worker = threading.Thread(target=call, name="kaleido-export", daemon=True)
        worker.start()
        server = _kaleido_server_thread()
        deadline = time.monotonic() + KALEIDO_TIMEOUT_S
        while worker.is_alive() and time.monotonic() < deadline:
            worker.join(0.05)
            if worker.is_alive() and server is not None and not server.is_alive():  # the browser never came up
                _KALEIDO["broken"] = "the kaleido server stopped (could the browser start?)"
                raise RenderError(f"plotly static export failed: {_KALEIDO['broken']}")
        if worker.is_alive():
            _KALEIDO["broken"] = f"no answer within {KALEIDO_TIMEOUT_S} s"
            raise RenderError(f"plotly static export gave no answer within {KALEIDO_TIMEOUT_S} s")
        if "error" in out:
            raise RenderError(f"plotly static export failed: {out['error']}") from out["error"]
        png = out.get("png")
        if not isinstance(png, (bytes, bytearray)) or not bytes(png).startswith(b"\x89PNG"):
            raise RenderError("plotly static export returned no PNG")
        return bytes(png)


def _kaleido_server_thread() -> threading.Thread | None:
    """The thread of kaleido's sync server (it dies when the browser cannot start), where kaleido exposes it."""
    try:
        from kaleido._sync_server import GlobalKaleidoServer
        return getattr(GlobalKaleidoServer(), "_thread", None)
    except Exception:  # noqa: BLE001 — a kaleido without this internal: rely on the timeout
        return None
