"""A Stop button beside every long run (every run that shows a progress bar), and what a stopped run leaves.

A click reruns the page: Streamlit hands the click to the run in progress, which stops at its next Streamlit call
(the progress bar's next step; ``runner.fastReruns`` is off), so nothing of the stopped computation is kept (a cached
function that raises caches nothing). The click's callback also turns off what started the run (a toggle, a request
kept in the session), so the next run does not start it again; a run that a page starts by itself (a row's LENS
factors) is remembered as stopped, and the page says so, with a button that runs it again (:func:`stopped_notice`).

Not a page (the leading underscore).
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager

import pandas as pd
import streamlit as st

from explain_core import ExplainError
from explain_core.vocabulary import plain
from ui import boundary

STOPPED, FINISHED, NOTICE = "stopped_runs", "finished_runs", "stop_notice"  # session keys
KEEP_FINISHED = 256  # run keys remembered as finished per session (no Stop button flashes over their cache hits)


class RunStopped(ExplainError):
    """A run the analyst stopped, met again before they asked for it to run again."""

    def __init__(self, what: str, key: str):
        super().__init__(f"Stopped: {what}.")
        self.what, self.key = what, key


def run_key(*identity) -> str:
    """A short key for one run: a hash of what its result depends on (setup key, rows or the row's values,
    parameters), tables by their values (a frame's ``repr`` elides wide frames)."""
    parts = [x.to_json(orient="split") if isinstance(x, (pd.DataFrame, pd.Series)) else repr(x) for x in identity]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


@contextmanager
def stoppable(what: str, key: str | None, *, turn_off: dict | None = None, forget: tuple[str, ...] = (),
              page_started: bool = False):
    """Draw a Stop button while the block runs (removed when it ends).

    ``what`` names the run for the analyst ("SEV of 500 rows"). ``key`` (:func:`run_key`) names a cached run: one
    that finished in this session is drawn without the button (its cache hit would only flash it); None for a run
    that is not cached. A click sets the session values ``turn_off`` (a toggle to False) and drops the ``forget``
    keys, so the rerun does not start the run again; with ``page_started`` (a run the page starts by itself) the run
    is remembered as stopped instead, and entering this block for it again raises :class:`RunStopped`."""
    if key is not None and key in st.session_state.get(STOPPED, {}):
        raise RunStopped(what, key)
    finished = st.session_state.setdefault(FINISHED, {})
    if key in finished:  # never None: only cached runs are kept below
        yield
        return

    slot = st.empty()
    slot.button("Stop", key=f"stop_{key or run_key(what)}", icon=":material/stop_circle:",
                on_click=boundary.guarded(stop), args=(what, key, turn_off or {}, forget, page_started),
                help="Stops this run at its next step; nothing of it is kept.")
    try:
        yield
    finally:
        slot.empty()
    if key is not None:
        finished[key] = True
        for old in list(finished)[:-KEEP_FINISHED]:
            del finished[old]


def stop(what: str, key: str | None, turn_off: dict, forget: tuple[str, ...], page_started: bool) -> None:
    """The Stop button's callback (before the rerun that stops the run): turn off what started it, or remember it."""
    st.session_state.update(turn_off)
    for name in forget:
        st.session_state.pop(name, None)
    if page_started and key is not None:
        st.session_state.setdefault(STOPPED, {})[key] = what
    st.session_state[NOTICE] = what


def resume(key: str) -> None:
    """The "Run it again" button's callback: forget that the run was stopped."""
    st.session_state.get(STOPPED, {}).pop(key, None)


def show_stop_notice() -> None:
    """Once, on the run after a Stop: say what was stopped."""
    what = st.session_state.pop(NOTICE, None)
    if what:
        st.toast(f"Stopped: {plain(what)}. Nothing of it was kept.", icon=":material/stop_circle:")


def stopped_notice(exc: RunStopped) -> None:
    """Where a page meets a run the analyst stopped: say so, and offer to run it again."""
    st.info(f"Stopped: {plain(exc.what)}, before it finished; nothing of it was kept. Change the row or the "
            "settings, or run it again.", icon=":material/stop_circle:")
    st.button("Run it again", key=f"resume_{exc.key}", icon=":material/play_arrow:",
              on_click=boundary.guarded(resume), args=(exc.key,))
