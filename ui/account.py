"""Sign-in (optional, off by default): Streamlit's own ``st.login`` / ``st.user`` with the operator's OpenID Connect
provider, on when ``.streamlit/secrets.toml`` has an ``[auth]`` section (docs/team-server.md).

When on, a visitor signs in before any page is drawn (:func:`gate`: a share link they opened is held through the
sign-in by ``ui/saved.py``); every analysis then belongs to its user
(:func:`user`: the provider's issuer and subject), the sidebar says who is signed in and offers Sign out
(:func:`panel`), and the store keys a user's share links with the sign-in's cookie secret (:func:`secret`). When
off, every function here says so and nothing else changes.
"""
from __future__ import annotations

from typing import Callable

import streamlit as st

from explain_core.vocabulary import plain


def enabled() -> bool:
    """Whether the operator turned sign-in on (an ``[auth]`` section in the secrets)."""
    try:
        return "auth" in st.secrets
    except (FileNotFoundError, OSError, ValueError):  # no secrets file, or one Streamlit cannot read
        return False


def user() -> str | None:
    """The signed-in user's identity (``issuer|subject``); None when sign-in is off."""
    if not enabled() or not st.user.is_logged_in:
        return None
    return f"{st.user.get('iss', '')}|{st.user.get('sub', '')}"


def secret() -> bytes | None:
    """The key of signed-in users' share links: the sign-in's cookie secret (None when sign-in is off)."""
    return str(st.secrets["auth"]["cookie_secret"]).encode() if enabled() else None


def signed_out() -> bool:
    """Whether sign-in is on and nobody is signed in (the run stops at :func:`gate`)."""
    return enabled() and not st.user.is_logged_in


def gate(note: tuple[str, str] | None = None, before_sign_in: Callable[[], None] | None = None) -> None:
    """With sign-in on and nobody signed in: say why, and ``note`` (``("info" or "warning", text)``: what becomes of
    a share link the visitor opened), offer Sign in (calling ``before_sign_in`` first), and stop the run."""
    if not signed_out():
        return
    st.title("Explanation explorer")
    st.markdown("**Sign in to work with the explorer.** On this server every analysis belongs to its analyst: "
                "yours are listed on Home from any browser, and nobody else can open them unless you share a link.")
    if note is not None:
        (st.warning if note[0] == "warning" else st.info)(note[1], icon=":material/share:")
    if st.button("Sign in", key="account_sign_in", type="primary", icon=":material/login:"):
        if before_sign_in is not None:
            before_sign_in()
        st.login()
    st.stop()


def panel() -> None:
    """The sidebar's line on who is signed in, with Sign out (nothing when sign-in is off)."""
    if user() is None:
        return
    who = st.user.get("email") or st.user.get("name") or st.user.get("sub")
    with st.sidebar, st.container(key="account"):
        st.caption(f"Signed in as **{plain(str(who))}**")
        if st.button("Sign out", key="account_sign_out", icon=":material/logout:"):
            st.logout()
