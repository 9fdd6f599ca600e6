"""A team's server in Chromium (issue 56): sign-in through a real OpenID Connect provider (``oidc-provider-mock`` on a
local port), with one server on SQLite and two replicas on one PostgreSQL database, all three started at once.

One flow covers both back ends. Alice signs in, uploads a table and a model and saves them on SQLite (the only upload
through the sandbox), then saves the demo at a row of her choosing on PostgreSQL. In another browser her lists are
there on both back ends, and the other replica restores her analysis at her row. Bob, signed in in a third context,
sees none of her analyses and is refused her session tokens on both back ends, while her share link gives him a copy;
he signs out and his and her links then open nothing but the sign-in. Signed out, he opens her share link again (a
malformed one is refused): it is held through his sign-in, and the provider's round trip lands him on his copy, once."""
from __future__ import annotations

import contextlib
import re
import secrets
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qsl, urlencode, urlsplit

import numpy as np
import pandas as pd
import pytest

import held_server
from conftest import RERUN_TIMEOUT_MS, missing
from test_browser import no_error, upload_table_and_model

COOKIE_SECRET = secrets.token_urlsafe(32)  # one for all servers, as a team sets its replicas up
ROW = 2  # the demo row Alice saves on PostgreSQL (not the demo's default row: checked)


@pytest.fixture(scope="module")
def provider():
    """A real OpenID Connect provider on a free local port; its discovery URL."""
    try:
        import oidc_provider_mock
    except ImportError:
        missing("oidc-provider-mock is not installed (the test extra)")
    users = [oidc_provider_mock.User(sub=who, claims={"email": f"{who}@example.org"}) for who in ("alice", "bob")]
    with oidc_provider_mock.run_server_in_thread(user_claims=users) as server:
        yield f"http://localhost:{server.server_port}/.well-known/openid-configuration"


@pytest.fixture(scope="module")
def upload(tmp_path_factory):
    """The smallest table and model a visitor uploads: 60 loans, a logistic regression saved with skops."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"income": rng.normal(50, 12, 60).round(1), "debt": rng.normal(20, 6, 60).round(1)})
    frame["approved"] = np.where(frame.income - 1.5 * frame.debt + rng.normal(0, 5, 60) > 20, "yes", "no")
    path = tmp_path_factory.mktemp("loans") / "loans.skops"
    path.write_bytes(sio.dumps(LogisticRegression().fit(frame[["income", "debt"]], frame["approved"])))
    return frame.to_csv(index=False).encode(), path


def signed_in_server(tmp_path, provider: str, env: dict, name: str):
    """``streamlit run app.py`` with sign-in on: its own port (the provider sends the browser back to it)."""
    port = held_server.free_port()
    secrets_file = tmp_path / f"{name}-secrets.toml"
    secrets_file.write_text(f'[auth]\nredirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
                            f'cookie_secret = "{COOKIE_SECRET}"\nclient_id = "explorer"\nclient_secret = "s3cret"\n'
                            f'server_metadata_url = "{provider}"\n')
    return held_server.serve(tmp_path / f"{name}.log", env, "--secrets.files", str(secrets_file), port=port)


@pytest.fixture(scope="module")
def servers(provider, explain_cache_dir, postgres_url, tmp_path_factory):
    """One server on SQLite and two replicas on one PostgreSQL database, started in parallel."""
    from store_backends import emptied

    tmp = tmp_path_factory.mktemp("team")
    env = {"EXPLAIN_CACHE_DIR": str(explain_cache_dir)}
    on_sqlite = {**env, "EXPLAIN_STATE_DIR": str(tmp / "sqlite")}
    on_postgres = {**env, "EXPLAIN_STATE_DIR": str(tmp / "pg"), "EXPLAIN_STATE_URL": emptied(postgres_url)}
    started = [signed_in_server(tmp, provider, on_sqlite, "sqlite"),
               signed_in_server(tmp, provider, on_postgres, "replica-one"),
               signed_in_server(tmp, provider, on_postgres, "replica-two")]
    with pytest.MonkeyPatch.context() as patch, contextlib.ExitStack() as stack:
        patch.setattr(held_server, "SERVER_START_TIMEOUT", 180)  # three start at once on a loaded machine
        with ThreadPoolExecutor(len(started)) as pool:
            futures = [pool.submit(stack.enter_context, server) for server in started]
        started = [future.result() for future in futures]
        print(f"[team flow] servers started in {[round(s.started_in, 1) for s in started]} s", file=sys.stderr)
        yield tuple(str(server) for server in started)


class Steps:
    """Seconds per step of the flow, printed (``pytest -s``) to see where the time goes."""

    def __init__(self):
        self.last = time.monotonic()

    def __call__(self, what: str) -> None:
        now = time.monotonic()
        print(f"[team flow] {now - self.last:6.1f} s  {what}", file=sys.stderr)
        self.last = now


def query(page) -> dict:
    return dict(parse_qsl(urlsplit(page.url).query))


def home_list(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def sign_in(page, wait_for_app, url: str, who: str) -> None:
    """Open ``url`` signed in as ``who``: through the provider's form unless this browser is signed in already."""
    page.goto(url)
    account = page.locator(".st-key-account").get_by_text(f"{who}@example.org")
    gate, form = page.get_by_text("Sign in to work with the explorer"), page.locator('input[name="sub"]')
    account.or_(gate).first.wait_for(timeout=RERUN_TIMEOUT_MS)
    if gate.is_visible():
        page.locator(".st-key-account_sign_in button").click()
        form.or_(account).first.wait_for(timeout=RERUN_TIMEOUT_MS)
        if form.is_visible():
            form.fill(who)
            page.get_by_role("button", name="Authorize").click()
        account.wait_for(timeout=RERUN_TIMEOUT_MS)
    wait_for_app(page)


def save(page, name: str) -> str:
    """Save the analysis shown under ``name`` (the sidebar's form); its share token."""
    page.get_by_role("button", name="Save this analysis").click(timeout=RERUN_TIMEOUT_MS)
    page.locator(".st-key-saved_name input").fill(name)
    page.get_by_test_id("stForm").get_by_role("button", name="Save", exact=True).click()
    link = page.locator('[data-testid="stCode"]').filter(has_text="share=").first
    link.wait_for(timeout=RERUN_TIMEOUT_MS)
    no_error(page)
    return dict(parse_qsl(urlsplit(link.inner_text().strip()).query))["share"]


def alice_saves(page, wait_for_app, servers, upload, step) -> dict:
    """Alice's uploaded analysis on SQLite and her demo at ROW on PostgreSQL; their tokens and share links."""
    sqlite, replica, _ = servers
    sign_in(page, wait_for_app, sqlite, "alice")
    step("Alice signed in (SQLite)")
    upload_table_and_model(page, wait_for_app, "loans.csv", *upload)
    page.locator('[data-testid="stSidebar"]').get_by_text(re.compile("^loans")).first.wait_for()
    step("Alice uploaded a table and a model")
    saved = {"sqlite_share": save(page, "alice's loans"), "sqlite_token": query(page)["session"]}
    step("Alice saved on SQLite")
    sign_in(page, wait_for_app, replica, "alice")
    page.goto(f"{replica}/?row={ROW}")
    page.locator(".st-key-account").get_by_text("alice@example.org").wait_for(timeout=RERUN_TIMEOUT_MS)
    wait_for_app(page)
    saved["pg_share"] = save(page, "alice's demo")  # the demo is kept once saved: its token in the URL
    page.wait_for_url(re.compile("session="), timeout=RERUN_TIMEOUT_MS)
    saved["pg_token"] = query(page)["session"]
    step("Alice saved the demo on replica one")
    return saved


def alice_elsewhere(page, wait_for_app, servers, step) -> None:
    """Alice in another browser: her lists on both back ends; the other replica restores her analysis."""
    sqlite, _, replica = servers
    sign_in(page, wait_for_app, replica, "alice")
    page.get_by_text("alice's demo").wait_for(timeout=RERUN_TIMEOUT_MS)
    assert query(page)["row"] != str(ROW)  # a fresh session is elsewhere: the row below is the restored one
    page.locator("[class*='st-key-saved_open_'] button").first.click()
    page.wait_for_url(re.compile(rf"row={ROW}\b"), timeout=RERUN_TIMEOUT_MS)
    step("Alice elsewhere: listed and restored on replica two")
    sign_in(page, wait_for_app, sqlite, "alice")
    page.get_by_text("alice's loans").wait_for(timeout=RERUN_TIMEOUT_MS)
    assert "alice's demo" not in home_list(page)  # each back end lists its own
    step("Alice elsewhere: listed on SQLite")


def bob_is_kept_out(page, wait_for_app, servers, saved, step) -> None:
    """Bob: none of Alice's analyses, her tokens refused, her share link his copy; signed out, links open nothing."""
    sqlite, _, replica = servers
    for server, token in ((sqlite, saved["sqlite_token"]), (replica, saved["pg_token"])):
        sign_in(page, wait_for_app, server, "bob")  # each server its own sign-in cookie
        assert "alice's" not in home_list(page)
        page.goto(f"{server}/?{urlencode({'session': token})}")  # Alice's token: refused
        page.get_by_text("A fresh session started on the demo").wait_for(timeout=RERUN_TIMEOUT_MS)
        assert "not on this server" in home_list(page) and "alice's" not in home_list(page)
    step("Bob: Alice's lists and tokens out of reach on both back ends")
    page.goto(f"{replica}/?{urlencode({'share': saved['pg_share']})}")  # her share link: Bob's own copy
    page.get_by_text("You opened the shared analysis").wait_for(timeout=RERUN_TIMEOUT_MS)
    page.wait_for_url(re.compile(rf"row={ROW}\b.*session=|session=.*row={ROW}\b"), timeout=RERUN_TIMEOUT_MS)
    bobs = query(page)["session"]
    assert bobs != saved["pg_token"]
    step("Bob: a copy from Alice's share link")
    page.locator(".st-key-account_sign_out button").click()
    page.wait_for_url(re.compile("end_session"), timeout=RERUN_TIMEOUT_MS)  # the provider's session ends too
    page.get_by_role("button", name="End session").click()
    page.get_by_text("Sign in to work with the explorer").wait_for(timeout=RERUN_TIMEOUT_MS)  # back, out
    for token in (bobs, saved["pg_token"]):
        page.goto(f"{replica}/?{urlencode({'session': token})}")
        page.get_by_text("Sign in to work with the explorer").wait_for(timeout=RERUN_TIMEOUT_MS)
        assert "loans" not in home_list(page) and "compas" not in home_list(page)
    step("Bob signed out: links open only the sign-in")
    share_through_sign_in(page, wait_for_app, replica, saved["pg_share"], (bobs, saved["pg_token"]))
    step("Bob: a share link opened signed out, his copy after the sign-in")


def share_through_sign_in(page, wait_for_app, server: str, share: str, others) -> None:
    """Signed out, a share link is held through the sign-in: the provider's round trip (which returns to the first
    page, without the link) lands on the user's own copy, once; a malformed link is refused on the sign-in page."""
    page.goto(f"{server}/?{urlencode({'share': '../../x?next=https://evil.example'})}")
    page.get_by_text("incomplete or mistyped").wait_for(timeout=RERUN_TIMEOUT_MS)
    page.goto(f"{server}/?{urlencode({'share': share})}")
    page.get_by_text("your own copy of it opens").wait_for(timeout=RERUN_TIMEOUT_MS)
    page.locator(".st-key-account_sign_in button").click()
    form = page.locator('input[name="sub"]')
    form.wait_for(timeout=RERUN_TIMEOUT_MS)
    form.fill("bob")
    page.get_by_role("button", name="Authorize").click()
    page.get_by_text("You opened the shared analysis").wait_for(timeout=RERUN_TIMEOUT_MS)
    page.wait_for_url(re.compile(rf"row={ROW}\b.*session=|session=.*row={ROW}\b"), timeout=RERUN_TIMEOUT_MS)
    assert "share" not in query(page) and query(page)["session"] not in others  # a new copy, his
    page.goto(server)  # the held link was used once
    page.locator(".st-key-account").get_by_text("bob@example.org").wait_for(timeout=RERUN_TIMEOUT_MS)
    wait_for_app(page)
    assert "You opened the shared analysis" not in home_list(page)


def test_sign_in_own_analyses_share_and_sign_out(browser, servers, wait_for_app, upload):
    step = Steps()
    contexts = [browser.new_context() for _ in range(3)]  # Alice, Alice in another browser, Bob
    try:
        saved = alice_saves(contexts[0].new_page(), wait_for_app, servers, upload, step)
        alice_elsewhere(contexts[1].new_page(), wait_for_app, servers, step)
        bob_is_kept_out(contexts[2].new_page(), wait_for_app, servers, saved, step)
    finally:
        for context in contexts:
            context.close()
