"""Every use of Streamlit's private internals, in one place and behind a version check.

The app relies on three things Streamlit has no public API for: a run's widget callbacks run whole before a click that
follows can stop that run (:func:`keep_callbacks_whole`), a page switch asks for its rerun only while no click
waits (:func:`rerun_to_page`, with :func:`page_hash`), and a key the browser keeps through a sign-in's round trip
(:func:`browser_key`: the token inside Streamlit's XSRF cookie). They read or wrap private names
(``SafeSessionState``, the run context's ``pages_manager`` and ``script_requests`` with its ``_lock``, ``_state`` and
``_request_rerun_locked``, ``RerunData``) or formats (the XSRF cookie's name and its masked token), checked by
``tests/test_dependencies.py``; they were written for the Streamlit releases that
pyproject.toml's ``app`` extra allows (:data:`SUPPORTED`), and importing this module with another release fails with
the command that installs one of those.
"""
from __future__ import annotations

import binascii
import functools
import os
import re
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import RerunData, get_script_run_ctx

XSRF_COOKIE = "_streamlit_xsrf"  # Streamlit's XSRF cookie: "2|<mask, 4 bytes>|<token XOR mask>|<timestamp>" in hex
XSRF_FORM = re.compile(r"2\|([0-9a-f]{8})\|([0-9a-f]{32,128})\|[0-9]{1,12}")
SUPPORTED = ((1, 67), (1, 80))  # streamlit>=1.67,<1.80, as pyproject.toml's app extra


def check_version(version: str = st.__version__) -> None:
    """Raise an ImportError unless ``version`` (Streamlit's, by default) is in :data:`SUPPORTED`.

    Parameters
    ----------
    version : str
        A Streamlit version string such as ``"1.67.0"``.

    Raises
    ------
    ImportError
        The version is outside the range whose internals this module was written against.
    """
    found = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    (low, high) = SUPPORTED
    if not low <= found < high:
        raise ImportError(f"Streamlit {version} is not supported: the app reaches into internals written for "
                          f"{low[0]}.{low[1]} up to (not including) {high[0]}.{high[1]}. Install one of those: "
                          f"pip install 'streamlit>={low[0]}.{low[1]},<{high[0]}.{high[1]}'.")


check_version()


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


def page_hash(target: str) -> str:
    """The script hash of page ``target`` (a path from app.py's folder) in this run's navigation."""
    ctx = get_script_run_ctx()
    path = os.path.realpath(Path(ctx.main_script_path).parent / target)
    return next(h for h, p in ctx.pages_manager.get_pages().items() if p["script_path"] == path)


def rerun_to_page(page: str) -> None:
    """Ask for a rerun on the page whose script hash is ``page`` (the ``RerunData`` ``st.switch_page`` asks for),
    only while no other rerun waits, checked and asked under the session's request lock."""
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    ctx = get_script_run_ctx()
    switch = RerunData(query_string=ctx.query_string, page_script_hash=page,
                       cached_message_hashes=ctx.cached_message_hashes, context_info=ctx.context_info)
    requests = ctx.script_requests
    with requests._lock:
        if requests._state == ScriptRequestType.CONTINUE:  # no click waiting
            requests._request_rerun_locked(switch)


def xsrf_token(cookie: object) -> bytes | None:
    """The token inside a value of Streamlit's XSRF cookie (its masked form unmasked); None for anything else."""
    found = XSRF_FORM.fullmatch(cookie.strip('"') if isinstance(cookie, str) else "")
    if found is None:
        return None
    mask, masked = (binascii.a2b_hex(part) for part in found.groups())
    return bytes(byte ^ mask[i % 4] for i, byte in enumerate(masked))


def browser_key() -> bytes | None:
    """A key this browser carries through a sign-in's round trip (None when it has none): the token of Streamlit's
    XSRF cookie, which Streamlit sets on every browser when sign-in is on, keeps as its value is masked anew on each
    page load, and sends with the session (``st.context.cookies``). Only JavaScript of the app's own origin can read
    it; it is the browser's until its cookies are cleared."""
    return xsrf_token(st.context.cookies.get(XSRF_COOKIE))
