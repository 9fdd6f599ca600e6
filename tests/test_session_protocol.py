"""Clicks that overlap a run, sent at the protocol level to a served app (issue 26): a browser's timing cannot place
a click at an exact point of the server's run, a :class:`held_server.Visitor` can. Each check: no error shown, the
session ends on the page clicked, and that page shows the setup "Load demo" asked for."""
from __future__ import annotations

import pytest

from conftest import visible
from held_server import Visitor, visit

DEMOS = [("German credit", "german_credit"), ("COMPAS recidivism", "compas")]  # each pair loads the other


@pytest.fixture
def visitor(streamlit_server):
    """A session on the served app, its first run (Home) drawn."""
    with visit(streamlit_server) as visitor:
        visitor.rerun()
        visitor.settle()
        yield visitor


def load_demo(visitor: Visitor, i: int) -> str:
    """From Home, choose the ``i``-th demo with an L2 model and click "Load demo" (not waiting); its name."""
    if visitor.shown_page() != "Home":
        visitor.rerun(page="Home")
        visitor.settle()
    label, name = DEMOS[i % 2]
    visitor.choose("home_demo", label)
    visitor.choose("home_kind", "L2 logistic regression")
    visitor.rerun(trigger="home_load")
    return name


def shows(visitor: Visitor, page: str, name: str) -> None:
    """The session's runs are over on ``page``, which shows the demo ``name`` with its L2 model, and no error."""
    visitor.settle()
    if visitor.shown_page() != page:  # a loaded server may take longer than QUIET to start the click's run
        visitor.settle(quiet=3.0)
    caption = next(visible(t).replace("**", "") for t in visitor.texts() if " · " in t)
    assert not visitor.errors, visitor.errors
    assert (visitor.shown_page(), caption.split("  \n")[0]) == (page, f"{name} · L2 logistic regression on {name}")


@pytest.mark.slow
def test_a_page_clicked_as_load_demo_runs_shows_the_new_setup(paused_server):
    """A page link clicked once "Load demo"'s run has begun, before its callbacks: both clicks count. Streamlit
    looks for a newer click as a run begins its callbacks and, finding one, stops the run and drops the button's
    trigger (fastReruns or not): the demo was never loaded. Its callbacks run whole
    (ui/streamlit_runtime.keep_callbacks_whole), so the demo is loaded and the page clicked is shown."""
    with visit(paused_server) as visitor:
        visitor.rerun()
        visitor.settle()
        for i in range(2):
            name = load_demo(visitor, i)
            visitor.read_until(lambda msg: msg.WhichOneof("type") == "new_session")  # its run has begun
            visitor.rerun(page="Data & model")
            shows(visitor, "Data & model", name)


def is_switch(msg) -> bool:
    """The run's page switch setting the URL's query (the row is not kept across it)."""
    return msg.WhichOneof("type") == "page_info_changed" and "row=" not in msg.page_info_changed.query_string


def test_a_page_clicked_as_load_demo_switches_pages_wins(visitor):
    """A page link clicked while "Load demo"'s run switches to Pick a row: the visitor lands on the page clicked
    (``st.switch_page`` waited 10 ms before asking for its rerun, which then replaced the click's page)."""
    for i in range(2):
        name = load_demo(visitor, i)
        visitor.read_until(is_switch)
        visitor.rerun(page="Data & model")
        shows(visitor, "Data & model", name)
