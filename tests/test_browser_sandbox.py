"""Issue 51 in a browser: an app served in trusted mode, a pickle whose unpickling sends SIGKILL to the server by
every signal call Linux has: the page says the model could not be loaded, the server still answers, and another
visitor's session explains rows as before."""
from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from held_server import serve
from hostile import killer_pickle
from test_browser import LIVE, choose_model_file, metric, no_error, open_page

from explain_core import explain_sev
from explain_core.analysis import demo_setup

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def trusted_server(explain_cache_dir, explain_state_dir, tmp_path_factory):
    log = tmp_path_factory.mktemp("streamlit-trusted") / "server.log"
    env = {"EXPLAIN_CACHE_DIR": str(explain_cache_dir), "EXPLAIN_STATE_DIR": str(explain_state_dir),
           "EXPLAIN_TRUSTED_MODELS": "1"}
    with serve(log, env) as server:
        yield server


def _server_pid(url: str) -> int:
    """The pid of the served app: the process started with this URL's port."""
    port = url.rsplit(":", 1)[1].encode()
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(command) and port in command:
            return int(entry.name)
    raise AssertionError(f"no process serves {url}")


def test_a_model_that_kills_the_server_is_refused_and_other_sessions_go_on(
        browser, trusted_server, page, wait_for_app, tmp_path):
    pid = _server_pid(trusted_server)
    (tmp_path / "killer.pkl").write_bytes(killer_pickle(pid))
    other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    other.goto(f"{trusted_server}/sev?row=0")
    wait_for_app(other)
    page.goto(trusted_server)
    wait_for_app(page)
    open_page(page, wait_for_app, "Data & model")
    choose_model_file(page, wait_for_app, tmp_path / "killer.pkl")
    page.locator(f'.st-key-dm_load_model{LIVE} button').first.click()
    wait_for_app(page)
    alert = page.locator('[data-testid="stAlertContentError"]').first.inner_text()
    assert "killer.pkl could not be unpickled" in alert and '"server kill": "refused' in alert, alert
    assert "sent" not in alert.split("PROBE", 1)[1], alert
    with urllib.request.urlopen(f"{trusted_server}/_stcore/health", timeout=10) as answer:
        assert answer.read().strip() == b"ok"
    assert Path(f"/proc/{pid}").exists()
    demo = demo_setup("compas", "gbdt")
    ex = explain_sev(demo.model, demo.dataset, demo.query(0), demo.reference_for(demo.query(0)))
    open_page(other, wait_for_app, "Data & model")  # the other visitor's session, never reloaded, runs on
    open_page(other, wait_for_app, "SEV")
    assert (metric(other, "minus"), metric(other, "plus")) == (ex.minus.shown, ex.plus.shown)
    no_error(other)
    other.context.close()
