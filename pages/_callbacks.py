"""Widget callbacks that hold when reruns overlap a click.

Streamlit runs a callback before the page, outside app.py's error boundary, and a click that follows at once can
stop a run (or a callback that draws anything) halfway. So: every callback runs through :func:`guarded` (an error
becomes a message at the top of the page); a widget's key and callback arguments name what it was drawn for
(:func:`drawn_for`), so a click a browser sent before it had drawn a newer setup or row is not applied to it;
slow work a callback asks for is a request the run applies (:func:`request_demo`), and navigation after a callback
happens in the run (:func:`go_to`), never by ``st.switch_page`` inside the callback (which then loses the callback's
session state). All this needs a session's runs one at a time, a click's rerun folded into the run in progress
(``runner.fastReruns`` off in ``.streamlit/config.toml``).
"""
from __future__ import annotations

import functools
import logging
import os
import uuid
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import RerunData, get_script_run_ctx

from explain_core import ExplainError
from explain_core.views.vocabulary import plain
from pages import _shared as shared

KEPT_PARAMS = ("session",)  # query parameters a page switch keeps (the saved analysis's token, pages/_saved.py)
log = logging.getLogger("explain_explorer")


def failure_message(exc: BaseException, where: str) -> str:
    """What the page says about an error: an ExplainError's own message (what is wrong, how to fix it); anything
    else a short reference (the full trace goes to the server log)."""
    if isinstance(exc, ExplainError):
        return plain(exc)
    ref = uuid.uuid4().hex[:8]
    log.error("%s failed (reference %s)", where, ref, exc_info=exc)
    return (f"Something went wrong while drawing this page. Your data and choices are kept; try another setting or "
            f"page. If it happens again, report reference **{ref}**.")


def guarded(callback):
    """A widget callback that cannot break the app: Streamlit runs callbacks before the page, outside app.py's
    error boundary, so an error is kept and shown at the top of the page (:func:`show_callback_failure`)."""
    @functools.wraps(callback)
    def run(*args, **kwargs):
        try:
            callback(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 — the callbacks' error boundary
            st.session_state["callback_failure"] = failure_message(exc, f"callback {callback.__name__}")
    return run


def show_callback_failure() -> None:
    failure = st.session_state.pop("callback_failure", None)
    if failure:
        st.error(failure, icon=":material/error:")


def keep_callbacks_whole() -> None:
    """Widget callbacks run whole before a click that follows can stop their run (Streamlit's private
    ``SafeSessionState.on_script_will_rerun``, wrapped once per process).

    Streamlit looks for a newer click as a run begins its callbacks (and at each ``st.session_state`` access in
    them); a click found there stops the run before its callbacks, and a button's trigger is not carried to the
    next run (Streamlit's ``exec_code``: "possible … if fast reruns is off, but this is very rare"): "Load demo"
    and a page link clicked at once loaded nothing (``tests/test_session_protocol.py``). Wrapped, the look waits
    until the callbacks are done; the run then stops at its next Streamlit call with their effects kept."""
    from streamlit.runtime.state.safe_session_state import SafeSessionState

    original = SafeSessionState.on_script_will_rerun
    if getattr(original, "kept_whole", False):
        return

    @functools.wraps(original)
    def whole(self, *args, **kwargs):
        look = self._yield_callback
        object.__setattr__(self, "_yield_callback", lambda: None)  # its __setattr__ writes the session's state
        try:
            return original(self, *args, **kwargs)
        finally:
            object.__setattr__(self, "_yield_callback", look)

    whole.kept_whole = True
    SafeSessionState.on_script_will_rerun = whole


def switch_page(target: str) -> None:
    """Switch to page ``target`` (a path from app.py's folder), keeping the session's token in the URL, unless a click
    reached the server during this run: the click wins.

    Streamlit folds a run's reruns into one that takes the newer request's page, and ``st.switch_page`` waits 10 ms
    between its last look at the session's requests and its own request, so a page link clicked in those 10 ms was
    lost to the switch. Here the switch's rerun (the ``RerunData`` ``st.switch_page`` asks for) is asked for only
    while no other is waiting, checked and asked under the session's request lock: a click that came first, at any
    moment, is the rerun that follows."""
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    ctx = get_script_run_ctx()
    path = os.path.realpath(Path(ctx.main_script_path).parent / target)
    page = next(h for h, p in ctx.pages_manager.get_pages().items() if p["script_path"] == path)
    st.query_params.from_dict({k: st.query_params[k] for k in KEPT_PARAMS if k in st.query_params})
    switch = RerunData(query_string=ctx.query_string, page_script_hash=page,
                       cached_message_hashes=ctx.cached_message_hashes, context_info=ctx.context_info)
    requests = ctx.script_requests
    with requests._lock:
        if requests._state == ScriptRequestType.CONTINUE:  # no click waiting
            requests._request_rerun_locked(switch)
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
