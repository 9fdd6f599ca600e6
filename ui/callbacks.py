"""Widget callbacks that hold when reruns overlap a click.

Streamlit runs a callback before the page, outside app.py's error boundary, and a click that follows at once can
stop a run (or a callback that draws anything) halfway. So: every callback runs through
:func:`~ui.boundary.guarded` (an error becomes a message at the top of the page); a widget's key and callback
arguments name what it was drawn for (:func:`drawn_for`), so a click a browser sent before it had drawn a newer setup
or row is not applied to it; slow work a callback asks for is a request the run applies (:func:`request_demo`), and
navigation after a callback happens in the run (:func:`go_to`), never by ``st.switch_page`` inside the callback
(which then loses the callback's session state). All this needs a session's runs one at a time, a click's rerun
folded into the run in progress (``runner.fastReruns`` off in ``.streamlit/config.toml``).
"""
from __future__ import annotations

from contextlib import contextmanager

import streamlit as st

from ui import shared, streamlit_runtime

KEPT_PARAMS = ("session",)  # query parameters a page switch keeps (the saved analysis's token, ui/saved.py)
def switch_page(target: str) -> None:
    """Switch to page ``target`` (a path from app.py's folder), keeping the session's token in the URL, unless a click
    reached the server during this run: the click wins.

    Streamlit folds a run's reruns into one that takes the newer request's page, and ``st.switch_page`` waits 10 ms
    between its last look at the session's requests and its own request, so a page link clicked in those 10 ms was
    lost to the switch. Here the switch's rerun (the ``RerunData`` ``st.switch_page`` asks for) is asked for only
    while no other is waiting, checked and asked under the session's request lock: a click that came first, at any
    moment, is the rerun that follows (:func:`~ui.streamlit_runtime.rerun_to_page`)."""
    page = streamlit_runtime.page_hash(target)
    st.query_params.from_dict({k: st.query_params[k] for k in KEPT_PARAMS if k in st.query_params})
    streamlit_runtime.rerun_to_page(page)
    st.empty()  # a yield point: the rerun asked for (the switch, or the click) starts here


def request_demo(name: str, kind: str) -> None:
    """From a callback: make a demo the session's setup (:func:`apply_requested_demo`, early in the run). A callback
    only notes it: loading may train the model behind a spinner, and any element a callback draws lets a click that
    follows at once stop the callback halfway; the request stays until a run has applied it."""
    st.session_state["requested_demo"] = (name, kind)


def apply_requested_demo() -> None:
    """The demo a callback asked for becomes the session's; the request stays while a click stops the run, and goes
    when loading fails (the message is shown once)."""
    requested = st.session_state.get("requested_demo")
    if requested:
        try:
            setup = shared.remembered_demo(*requested)
        except Exception:
            del st.session_state["requested_demo"]
            raise
        shared.use_setup(setup)
        st.session_state["row"] = shared.default_row(setup)
        del st.session_state["requested_demo"]


def go_to(target: str, leaving: str) -> None:
    """From a callback: switch to page ``target`` once the page titled ``leaving`` starts (:func:`follow_go_to`).
    (``st.switch_page`` inside a callback loses the callback's session state when another click follows at once.)"""
    st.session_state["go_to"] = (leaving, target)


def follow_go_to(title: str) -> None:
    """Switch to the page a callback asked for, if this run is on the page it was left from (a click on another page
    in between wins)."""
    leaving, target = st.session_state.pop("go_to", (None, None))
    if leaving == title:
        switch_page(target)


def drawn_for(setup_key: str, row: int | None = None) -> bool:
    """Whether the session still has the setup (and row) a widget was drawn for: a widget's change applies only
    then, so a click a browser sent before it had drawn a newer setup or row is not applied to it."""
    s = st.session_state.get("setup")
    return s is not None and s.key == setup_key and (row is None or st.session_state.get("row") == row)


def choose_row_from(key: str, setup_key: str, row: int) -> None:
    """A row switcher's callback: the row chosen in widget ``key``, drawn for ``setup_key`` at ``row``."""
    if drawn_for(setup_key, row):
        shared.choose_row(st.session_state.get(key))


REQUESTS = "requested_clicks"  # the session's commit-button clicks waiting to be applied: {button key: drawn for}


def request(key: str, drawn_for=None) -> None:
    """A commit button's ``on_click`` (``key``: its widget key; ``drawn_for``: what its page showed, e.g. the file's
    hash): the click is noted before the rerun, and the run applies it (:func:`requested`, then :func:`applied`).

    A button read in the page's body (``if st.button(...)``) is True only in its click's own run: a click on anything
    else that reaches the server before that run gets to the button (a run is slow under load, or loading a model)
    stops it at its next Streamlit call, and the next run has no trigger, so the click had no effect (issue 55).
    A callback runs whole (:func:`~ui.streamlit_runtime.keep_callbacks_whole`) and its note stays until applied."""
    st.session_state.setdefault(REQUESTS, {})[key] = drawn_for


def requested(key: str, drawn_for=None) -> bool:
    """Whether a click on button ``key``, drawn for ``drawn_for``, waits to be applied; a click drawn for something
    else (a file since replaced) is dropped. Apply it idempotently and call :func:`applied` last: a run stopped
    halfway leaves the note, and the next run applies it again."""
    waiting = st.session_state.get(REQUESTS, {})
    if key not in waiting:
        return False
    if waiting[key] != drawn_for:
        applied(key)
        return False
    return True


def applied(key: str) -> None:
    """The click on button ``key`` has been applied (or refused, its message shown): it is no longer waiting."""
    st.session_state.get(REQUESTS, {}).pop(key, None)


@contextmanager
def applying(key: str):
    """Apply the click on button ``key`` in the block: it is :func:`applied` when the block ends, or fails (the
    failure shown once, not retried on every run), but not when a newer click stops the run (Streamlit's
    ``RerunException`` is no ``Exception``): the next run applies it again."""
    try:
        yield
    except Exception:
        applied(key)
        raise
    applied(key)
