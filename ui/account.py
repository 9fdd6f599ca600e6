"""Sign-in (optional, off by default): Streamlit's own ``st.login`` / ``st.user`` with the operator's OpenID Connect
provider, on when ``.streamlit/secrets.toml`` has an ``[auth]`` section (docs/team-server.md).

When on, a visitor signs in before any page is drawn (:func:`gate`); every analysis then belongs to its user
(:func:`user`: the provider's issuer and subject), the sidebar says who is signed in and offers Sign out
(:func:`panel`), and the store keys a user's share links with the sign-in's cookie secret (:func:`secret`). When
off, every function here says so and nothing else changes.
"""
from __future__ import annotations

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


def gate() -> None:
    """With sign-in on and nobody signed in: say why, offer Sign in, and stop the run."""
    if not enabled() or st.user.is_logged_in:
        return
    st.title("Explanation explorer")
    st.markdown("**Sign in to work with the explorer.** On this server every analysis belongs to its analyst: "
                "yours are listed on Home from any browser, and nobody else can open them unless you share a link.")
    if st.query_params.get("share"):
        st.info("You opened a shared analysis: sign in, then open its link again to get your own copy.",
                icon=":material/share:")
    if st.button("Sign in", key="account_sign_in", type="primary", icon=":material/login:"):
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
