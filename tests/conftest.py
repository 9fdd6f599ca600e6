"""Shared fixtures: one model cache for the whole session, a live Streamlit server, a Chromium page, and the
rule for missing tools.

Every test trains or loads the demo models in one session-wide temporary cache (``EXPLAIN_CACHE_DIR``), so
each is trained once per run and the user's own cache is never touched; saved analyses go to a temporary
``EXPLAIN_STATE_DIR`` likewise. Browser tests need Debian's Chromium
at /usr/bin/chromium (env ``CHROMIUM_PATH`` overrides; never ``playwright install``). A missing tool skips
its tests locally but *fails* them when env ``CI`` is set (:func:`missing`), so a green CI run means they ran.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from held_server import ROOT as ROOT  # the tests import it from here
from held_server import serve

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
RERUN_TIMEOUT_MS = 60_000
pytest_plugins = ["store_backends"]  # the saved analyses on SQLite and on a PostgreSQL server (tests/store_backends.py)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def visible(markdown: str) -> str:
    """What a reader sees of markdown source that escapes punctuation (``explain_core.vocabulary.plain``):
    the text without its backslash escapes."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def drawn(widgets, name: str):
    """The AppTest widget ``name`` among ``widgets`` (e.g. ``at.sidebar.selectbox``): the app keys its row and class
    switchers by what they were drawn for (``<name>_<setup key>[_<row>]``), so a stale click cannot apply to a newer
    setup."""
    [found] = [w for w in widgets if w.key and w.key.startswith(f"{name}_")]
    return found


def missing(message: str):
    """A tool a test needs is not installed: fail in CI (a green run means everything ran), skip elsewhere."""
    if in_ci():
        pytest.fail(message)
    pytest.skip(message)


def _fresh_folder(tmp_path_factory, variable: str, name: str, shared: bool = False):
    """A fresh folder named by ``variable`` in os.environ for the whole session, the old value restored after.
    ``shared``: one folder for all of a run's workers (pytest -n), beside their own temporary folders."""
    if shared and os.environ.get("PYTEST_XDIST_WORKER"):
        path = tmp_path_factory.getbasetemp().parent / name
        path.mkdir(exist_ok=True)
    else:
        path = tmp_path_factory.mktemp(name)
    old = os.environ.get(variable)
    os.environ[variable] = str(path)
    yield path
    if old is None:
        os.environ.pop(variable, None)
    else:
        os.environ[variable] = old


@pytest.fixture(scope="session", autouse=True)
def explain_cache_dir(tmp_path_factory):
    """One fresh EXPLAIN_CACHE_DIR for the whole run, shared by its workers: each demo model is trained once (the
    cache writes a file whole, by renaming, so a worker reads a model whole or trains it itself)."""
    yield from _fresh_folder(tmp_path_factory, "EXPLAIN_CACHE_DIR", "explain-cache", shared=True)


@pytest.fixture(scope="session", autouse=True)
def explain_state_dir(tmp_path_factory):
    """One fresh EXPLAIN_STATE_DIR (the saved analyses) for the whole session, so no test writes the user's own."""
    yield from _fresh_folder(tmp_path_factory, "EXPLAIN_STATE_DIR", "explain-state")


@pytest.fixture(scope="session")
def streamlit_server(explain_cache_dir, explain_state_dir, tmp_path_factory):
    """``streamlit run app.py`` on a free local port; yields its :class:`held_server.Server` and stops it at
    teardown."""
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    env = {"EXPLAIN_CACHE_DIR": str(explain_cache_dir), "EXPLAIN_STATE_DIR": str(explain_state_dir)}
    with serve(log, env) as server:
        yield server


@pytest.fixture(scope="session")
def paused_server(explain_cache_dir, explain_state_dir, tmp_path_factory):
    """The app served with each run paused as it begins, before its look for a newer click and its callbacks
    (``paused_runs.py``): a click sent right after another then reaches the server while the first one's run has
    begun, every time (a loaded machine's timing, made certain)."""
    log = tmp_path_factory.mktemp("paused") / "server.log"
    env = {"EXPLAIN_CACHE_DIR": str(explain_cache_dir), "EXPLAIN_STATE_DIR": str(explain_state_dir)}
    with serve(log, env, launcher=(str(Path(__file__).with_name("paused_runs.py")),)) as server:
        yield server


@pytest.fixture(scope="session")
def browser():
    """Headless Debian Chromium through Playwright (fails in CI when missing, skips elsewhere)."""
    if not CHROMIUM.exists():
        missing(f"{CHROMIUM} not found; install Debian's chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        missing(f"playwright is not installed: {exc}")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(RERUN_TIMEOUT_MS)
    yield page
    context.close()


def _wait_for_app(page, timeout_ms: int = RERUN_TIMEOUT_MS) -> None:
    """Wait until Streamlit is connected, the script is idle and no stale element or skeleton remains."""
    page.wait_for_timeout(250)
    page.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]'
                           '[data-test-script-state="notRunning"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stSkeleton"], [data-testid="stStatusWidget"],'
                 + ' [data-testid="stElementContainer"][data-stale="true"]')""", timeout=timeout_ms)


@pytest.fixture
def wait_for_app():
    """A function ``wait(page)`` that blocks until the current rerun has finished rendering."""
    return _wait_for_app


@pytest.fixture
def full_page_screenshot():
    """A function ``shot(page, path)``: grows the viewport to the app's scroll height, then screenshots."""
    def shot(page, path) -> Path:
        height = page.evaluate("() => (document.querySelector('[data-testid=\"stMain\"]') "
                               "|| document.body).scrollHeight")
        width = page.viewport_size["width"] if page.viewport_size else 1400
        page.set_viewport_size({"width": width, "height": max(int(height), 600)})
        page.wait_for_timeout(300)
        page.screenshot(path=str(path), full_page=True)
        return Path(path)
    return shot


def _decode(value):
    """Plotly 6+ packs numeric arrays in JSON as {"dtype", "bdata" (base64), "shape"}: unpack to lists."""
    import base64

    import numpy as np

    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        return array.reshape([int(n) for n in str(shape).split(",")] if shape else -1).tolist()
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


@pytest.fixture
def chart_specs():
    """A function ``specs(at)``: the AppTest page's plotly charts as JSON dicts with arrays unpacked."""
    import json

    def specs(at) -> list[dict]:
        return [_decode(json.loads(c.proto.spec)) for c in at.get("plotly_chart")]
    return specs


@pytest.fixture(scope="session")
def german_lens_case():
    """German credit with the L2 LR demo model, its first test row and 30 seeded references predicted the other
    way: (dataset, model, query, references), for the LENS tests on real data."""
    from explain_core import load_demo, train_model
    from explain_core.lens import opposite_references

    data = load_demo("german_credit")
    trained = train_model(data, "l2_lr")
    model, query = trained.model, data.features.iloc[[trained.test_rows[0]]]
    return data, model, query, opposite_references(model, data, query, trained.train_rows, n=30, seed=0)


def bands_frame(rows: int, seed: int):
    """A three-class table (income, debt → band: low / mid / high by income − debt), the multiclass tests' data."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"income": rng.normal(50, 10, rows).round(1), "debt": rng.normal(20, 5, rows).round(1)})
    margin = frame.income - frame.debt
    frame["band"] = np.where(margin > 35, "high", np.where(margin > 25, "mid", "low"))
    return frame
