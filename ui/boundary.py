"""The app's error boundary: what a page or a widget callback says about an error. Streamlit runs a callback before
the page, outside app.py's error boundary, so every callback runs through :func:`guarded` and its error is shown
at the top of the page (:func:`show_callback_failure`); an ExplainError says what is wrong in its own words, anything
else gets a short reference to the server log (:func:`failure_message`).
"""
from __future__ import annotations

import functools
import logging
import uuid

import streamlit as st

from explain_core import ExplainError
from explain_core.vocabulary import plain
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
