"""Cold start: loading the demo setup (skops cache file, the model, SEV of a row) never imports torch, and
skops' list of trusted scikit-learn types is the one its plain import builds."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT

PROBE = """
import json, sys
from explain_core.analysis import Parameters, demo_setup, predicted_rows, row_sev
setup = demo_setup()
row_sev(setup, setup.query(int(predicted_rows(setup)[0])), Parameters())
torch_loaded = "torch" in sys.modules
from skops.io._trusted_types import SKLEARN_ESTIMATOR_TYPE_NAMES as listed
from skops.io._utils import get_type_name
from sklearn.utils import all_estimators  # the plain walk (imports torch now: after the check above)
plain = [get_type_name(c) for _, c in all_estimators() if get_type_name(c).startswith("sklearn.")]
print(json.dumps({"torch": torch_loaded, "same": listed == plain, "types": len(listed)}))
"""


def test_demo_setup_and_sev_do_not_import_torch(explain_cache_dir):
    from explain_core.analysis import demo_setup

    demo_setup()  # trained into the session's cache first, so the probe only loads it
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=dict(os.environ), capture_output=True,
                         text=True, timeout=300, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"torch": False, "same": True, "types": result["types"]} and result["types"] > 100


HOME_MARK = "-- Home, through AppTest --"
START = f"HOME_MARK = {HOME_MARK!r}\n" + """import asyncio, json, sys
import streamlit as st
from pathlib import Path
import app
from ui import references, shared
from ui.start import LAZY_MODULES
from explain_core.analysis import Parameters
from streamlit.testing.v1 import AppTest

calls, fitted = [], []
load = shared.demo_setup
shared.demo_setup = lambda *args: calls.append(list(args)) or load(*args)
explain = references.row_reference_sev
references.row_reference_sev = lambda *args: fitted.append(1) or explain(*args)


async def start():
    async with app.warm_start(app.app):
        pass

asyncio.run(start())
warmed = len(fitted)
s = shared.demo(*shared.DEFAULT_DEMO)  # a visitor's first request: served from the shared cache
references.row_result(s, s.key, s.query(int(shared.flagged_rows(s)[0])), Parameters().references, s.restricted)
started = sorted(m for m in LAZY_MODULES if m in sys.modules)
print(HOME_MARK, file=sys.stderr, flush=True)  # AppTest's own run warns of a missing ScriptRunContext
home = AppTest.from_file(app.__file__, default_timeout=120).run()  # a visitor's first page: Home, in this process
print(json.dumps({"app": isinstance(app.app, st.App), "calls": calls,
                  "v1": (Path(app.__file__).parent / "pages").exists(),
                  "references": [warmed, len(fitted)],
                  "plots": "explain_core.views.sev" in sys.modules,
                  "home": [not home.exception, home.title[0].value if home.title else None],
                  "lazy": [started, sorted(m for m in LAZY_MODULES if m in sys.modules)]}))
"""


def test_the_server_start_loads_the_default_demo_once(explain_cache_dir):
    """``streamlit run app.py`` finds ``app`` (an ``st.App``); its start-up imports the figures, loads the default
    demo and explains its first flagged row toward real cases into the shared caches (a visitor's requests then hit
    them: the explanation is computed once), with Streamlit's v1 multipage mode off (no ``pages/`` folder), without
    "missing ScriptRunContext" warnings (the live server's log is checked by tests/test_browser.py). Neither the
    start-up nor a first visit to Home imports the heavy explainers' libraries (``ui.start.LAZY_MODULES``: shap with
    numba and llvmlite, lime, OR-Tools' MathOpt, torch; issue 55: shap alone held ~109 MB of an idle server)."""
    from explain_core.analysis import DEFAULT_DEMO, demo_setup

    demo_setup()  # trained into the session's cache first, so the probe only loads it
    out = subprocess.run([sys.executable, "-c", START], cwd=ROOT, env=dict(os.environ), capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "app": True, "calls": [list(DEFAULT_DEMO)], "v1": False, "references": [1, 1], "plots": True,
        "home": [True, "Explanation explorer"], "lazy": [[], []]}
    started = out.stderr.split(HOME_MARK)[0]
    assert "ScriptRunContext" not in started, started
