"""Figures as PNG for the PDF: plotly's static export (kaleido, which needs a Chrome/Chromium; one browser per
process, guarded by a lock) or, where no browser is available, the matplotlib re-plot of the same trace data
(:mod:`.replot`), so both renderers draw the same numbers.

kaleido's private ``Kaleido._return_kaleido_tab`` is replaced (no page reload after each figure, see
:class:`KaleidoBrowser`); ``tests/test_dependencies.py`` fails loudly when that internal changes.
"""
from __future__ import annotations

import asyncio
import atexit
import importlib.util
import logging
import os
import shutil
import threading
from functools import lru_cache

import plotly.graph_objects as go

from ..errors import RenderError, check_choice
from .replot import FIGURE_SCALE, FIGURE_WIDTH_PX, matplotlib_png

log = logging.getLogger(__name__)

RENDERERS = ("auto", "plotly", "matplotlib")
"""The image renderers: ``auto``, plotly's static export, or the matplotlib re-plot."""
FIGURE_HEIGHT_PX = (320, 620)  # the figure's own height, clipped to this range
KALEIDO_TIMEOUT_S = 60
KALEIDO_IDLE_S = 30.0  # the browser (about 1 GB with its renderers) closes after this long without a figure


_KALEIDO_LOCK = threading.Lock()
_KALEIDO: dict = {"browser": None, "broken": None, "timer": None}


def find_chromium() -> str | None:
    """The Chrome/Chromium kaleido would use (``BROWSER_PATH`` first), or None.

    Returns
    -------
    str or None
        The browser's path.
    """
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
    """kaleido is installed, a Chromium exists, and the export has not failed in this process.

    Returns
    -------
    bool
        Whether :func:`kaleido_png` can be tried.
    """
    return _kaleido_installed() and _KALEIDO["broken"] is None and find_chromium() is not None


def resolve_renderer(renderer: str = "auto") -> str:
    """``plotly`` or ``matplotlib``: what ``renderer`` means here (``auto`` = plotly when it is available).

    Parameters
    ----------
    renderer : str
        ``"auto"``, ``"plotly"`` or ``"matplotlib"``.

    Returns
    -------
    str
        ``"plotly"`` or ``"matplotlib"``.

    Raises
    ------
    IntakeError
        When ``renderer`` is unknown.
    """
    check_choice(renderer, RENDERERS, "image renderer")
    if renderer == "auto":
        return "plotly" if plotly_export_available() else "matplotlib"
    return renderer


def figure_size(fig: go.Figure, width: int = FIGURE_WIDTH_PX) -> tuple[int, int]:
    """(width, height) in px of a figure in the PDF: the figure's own height, clipped to a page-friendly range.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        The figure.
    width : int
        The width in px.

    Returns
    -------
    tuple of int
        (width, height).
    """
    low, high = FIGURE_HEIGHT_PX
    height = fig.layout.height or 450
    return int(width), int(min(high, max(low, height)))


def figure_png(fig: go.Figure, renderer: str = "auto", *, width: int | None = None, height: int | None = None,
               scale: float = FIGURE_SCALE) -> tuple[bytes, str]:
    """The figure as PNG bytes, and the renderer that drew it (``plotly`` or ``matplotlib``).

    ``auto`` uses plotly's static export when kaleido and a Chromium are available and falls back to the
    matplotlib re-plot if the export fails; ``plotly`` raises :class:`RenderError` instead of falling back.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        The figure.
    renderer : str
        ``"auto"``, ``"plotly"`` or ``"matplotlib"``.
    width, height : int, optional
        Pixels (default :func:`figure_size`).
    scale : float
        The resolution's scale.

    Returns
    -------
    tuple of (bytes, str)
        The PNG, and the renderer.

    Raises
    ------
    RenderError
        When ``renderer="plotly"`` and the export fails.
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
    """Plotly's static export (:func:`figure_png` with ``renderer="plotly"``, which documents the arguments) through
    one kaleido browser per process (started on first use; calls are serialised by a lock). A browser that cannot
    start, or a call that does not answer within ``KALEIDO_TIMEOUT_S``, marks the export broken for this process
    (:class:`RenderError`, as when kaleido or a browser is missing)."""
    if not _kaleido_installed():
        raise RenderError("plotly static export needs the kaleido package (pip install kaleido)")
    if find_chromium() is None:
        raise RenderError("plotly static export needs Chrome or Chromium (e.g. apt-get install chromium)")
    with _KALEIDO_LOCK:
        if _KALEIDO["broken"]:
            raise RenderError(f"plotly static export failed earlier in this process: {_KALEIDO['broken']}")
        try:
            browser = _KALEIDO["browser"] = _KALEIDO["browser"] or KaleidoBrowser()
        except Exception as exc:  # noqa: BLE001 — kaleido and choreographer raise many kinds here
            _KALEIDO["broken"] = f"the browser did not start ({exc})"
            raise RenderError(f"plotly static export failed: {_KALEIDO['broken']}") from exc
        opts = {"format": "png", "width": int(width), "height": int(height), "scale": scale}
        try:
            png = browser.call(browser.kaleido.calc_fig(fig, opts=opts))
        except TimeoutError as exc:
            _KALEIDO["broken"] = f"no answer within {KALEIDO_TIMEOUT_S} s"
            raise RenderError(f"plotly static export gave no answer within {KALEIDO_TIMEOUT_S} s") from exc
        except Exception as exc:  # noqa: BLE001 — handed to the caller as a RenderError
            raise RenderError(f"plotly static export failed: {exc}") from exc
        finally:
            _close_when_idle()
    if not isinstance(png, (bytes, bytearray)) or not bytes(png).startswith(b"\x89PNG"):
        raise RenderError("plotly static export returned no PNG")
    return bytes(png)


def _close_when_idle() -> None:
    """(Re)start the idle timer (the caller holds the lock): the browser closes ``KALEIDO_IDLE_S`` seconds after its
    last figure, so a report's figures and the next report's share one browser, and a server that made a PDF does
    not keep Chromium's processes afterwards."""
    if _KALEIDO["timer"] is not None:
        _KALEIDO["timer"].cancel()
    timer = _KALEIDO["timer"] = threading.Timer(KALEIDO_IDLE_S, close_browser)
    timer.daemon = True
    timer.start()


def close_browser() -> None:
    """Close the export's browser now, if one is open (the next figure starts a new one)."""
    with _KALEIDO_LOCK:
        browser, _KALEIDO["browser"] = _KALEIDO["browser"], None
        if _KALEIDO["timer"] is not None:
            _KALEIDO["timer"].cancel()
            _KALEIDO["timer"] = None
        if browser is not None:
            try:
                browser.close()
            except Exception as exc:  # noqa: BLE001 — a browser that will not close cleanly is gone for us anyway
                log.warning("the plotly export's browser did not close cleanly: %s", exc)


class KaleidoBrowser:
    """kaleido's Chromium with one tab, driven from its own asyncio loop in a daemon thread; closed when idle
    (:func:`close_browser`) or at exit.

    Its tab is handed back without the page reload kaleido does after every figure (re-reading the 4.7 MB
    plotly.js, about 3/4 of each export's time): ``Plotly.toImage`` draws into an off-screen div that it purges
    and removes, so the next PNG is byte for byte what a fresh page draws (tests/test_report.py compares them).
    """

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="kaleido", daemon=True).start()
        try:
            self.kaleido = self.call(_open_kaleido())
        except BaseException:
            self.loop.call_soon_threadsafe(self.loop.stop)
            raise
        atexit.register(self.close)

    def call(self, coroutine, timeout: float = KALEIDO_TIMEOUT_S):
        """Run ``coroutine`` on the browser's loop and return its result; TimeoutError after ``timeout`` s."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def close(self) -> None:
        """Close Chromium and stop the loop (once: the idle timer and the exit hook may both ask)."""
        if not self.loop.is_running():
            return
        atexit.unregister(self.close)
        try:
            self.call(self.kaleido.close(), timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)


async def _open_kaleido():
    import kaleido

    class Kaleido(kaleido.Kaleido):
        async def _return_kaleido_tab(self, tab) -> None:  # kaleido's own reloads the page first (see above)
            await self.tabs_ready.put(tab)

    browser = Kaleido(n=1, timeout=KALEIDO_TIMEOUT_S, mathjax=False)
    await browser.open()
    return browser
