"""A team's server in Chromium (issue 56): sign-in through a real OpenID Connect provider (``oidc-provider-mock`` on a
local port), then the same flow on SQLite and on PostgreSQL — A signs in, uploads a table and a model, saves; A's
list is there from another browser (on PostgreSQL: on a second replica, which restores the analysis); B, signed in
in another context, sees none of A's analyses and is refused A's session token, while A's share link opens a copy
for B; B signs out and A's or B's links then open nothing but the sign-in."""
from __future__ import annotations

import contextlib
import re
import secrets
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

import held_server
from conftest import RERUN_TIMEOUT_MS, missing
from test_browser import LIVE, no_error, upload_csv
from test_browser_session import loans  # noqa: F401 — the uploaded table and model (a module fixture)

COOKIE_SECRET = secrets.token_urlsafe(32)  # one for the replicas: a browser signed in on one is on the other


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


@contextlib.contextmanager
def signed_in_server(tmp_path, provider: str, env: dict, name: str):
    """``streamlit run app.py`` with sign-in on: its own port (the provider sends the browser back to it)."""
    port = held_server.free_port()
    secrets_file = tmp_path / f"{name}-secrets.toml"
    secrets_file.write_text(f'[auth]\nredirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
                            f'cookie_secret = "{COOKIE_SECRET}"\nclient_id = "explorer"\nclient_secret = "s3cret"\n'
                            f'server_metadata_url = "{provider}"\n')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(held_server, "free_port", lambda: port)
        patch.setattr(held_server, "SERVER_START_TIMEOUT", 180)  # two replicas start in turn on a loaded machine
        with held_server.serve(tmp_path / f"{name}.log", env, "--secrets.files", str(secrets_file)) as server:
            yield str(server)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def servers(request, provider, explain_cache_dir, tmp_path_factory):
    """One server on SQLite; two replicas on one PostgreSQL database."""
    tmp = tmp_path_factory.mktemp(f"team-{request.param}")
    env = {"EXPLAIN_CACHE_DIR": str(explain_cache_dir), "EXPLAIN_STATE_DIR": str(tmp / "state")}
    if request.param == "postgresql":
        from store_backends import emptied

        env["EXPLAIN_STATE_URL"] = emptied(request.getfixturevalue("postgres_url"))
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(signed_in_server(tmp, provider, env, "one"))
        second = (stack.enter_context(signed_in_server(tmp, provider, env, "two"))
                  if request.param == "postgresql" else first)
        yield first, second


def sign_in(page, wait_for_app, url: str, who: str) -> None:
    page.goto(url)
    page.get_by_text("Sign in to work with the explorer").wait_for()
    page.locator(".st-key-account_sign_in button").click()
    page.locator('input[name="sub"]').fill(who)
    page.get_by_role("button", name="Authorize").click()
    page.locator(".st-key-account").get_by_text(f"{who}@example.org").wait_for(timeout=RERUN_TIMEOUT_MS)
    wait_for_app(page)


def upload_and_save(page, wait_for_app, frame, model_path, name: str) -> str:
    """Upload the table and model, use them, save under ``name``; the share link shown."""
    upload_csv(page, wait_for_app, "loans.csv", frame.to_csv(index=False).encode())
    page.locator(f".st-key-dm_build{LIVE} button").first.click()
    wait_for_app(page)
    page.locator(f".st-key-dm_model_source{LIVE}").get_by_text("Upload a model file").click()
    wait_for_app(page)
    page.locator('.st-key-dm_model_file input[type="file"]').set_input_files(files=[str(model_path)])
    wait_for_app(page)
    for key in ("dm_load_model", "dm_use"):
        page.locator(f".st-key-{key}{LIVE} button").first.click()
        wait_for_app(page)
    page.get_by_role("button", name="Save this analysis").click()
    page.locator(".st-key-saved_name input").fill(name)
    page.get_by_test_id("stForm").get_by_role("button", name="Save", exact=True).click()
    link = page.locator('[data-testid="stCode"]').filter(has_text="share=").first
    link.wait_for(timeout=RERUN_TIMEOUT_MS)
    no_error(page)
    return dict(parse_qsl(urlsplit(link.inner_text().strip()).query))["share"]


def home_list(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def test_sign_in_own_analyses_share_and_sign_out(browser, servers, wait_for_app, loans):  # noqa: F811
    first, second = servers
    frame, model_path, _ = loans
    alice, alice_elsewhere, bob = (browser.new_context() for _ in range(3))
    try:
        page = alice.new_page()
        sign_in(page, wait_for_app, first, "alice")
        share = upload_and_save(page, wait_for_app, frame, model_path, "alice's loans")
        token = dict(parse_qsl(urlsplit(page.url).query))["session"]

        other = alice_elsewhere.new_page()  # Alice in another browser (on PostgreSQL: the other replica)
        sign_in(other, wait_for_app, second, "alice")
        other.get_by_text("alice's loans").wait_for(timeout=RERUN_TIMEOUT_MS)
        other.locator("[class*='st-key-saved_open_'] button").first.click()
        other.locator('[data-testid="stSidebar"]').get_by_text(re.compile("^loans")).first.wait_for()

        theirs = bob.new_page()
        sign_in(theirs, wait_for_app, second, "bob")
        assert "alice's loans" not in home_list(theirs)
        theirs.goto(f"{second}/?{urlencode({'session': token})}")  # Alice's token: refused
        theirs.get_by_text("A fresh session started on the demo").wait_for(timeout=RERUN_TIMEOUT_MS)
        assert "not on this server" in home_list(theirs)
        theirs.goto(f"{second}/?{urlencode({'share': share})}")  # her share link: Bob's own copy
        theirs.get_by_text("You opened the shared analysis").wait_for(timeout=RERUN_TIMEOUT_MS)
        theirs.locator('[data-testid="stSidebar"]').get_by_text(re.compile("^loans")).first.wait_for()
        bobs = dict(parse_qsl(urlsplit(theirs.url).query)).get("session")

        theirs.locator(".st-key-account_sign_out button").click()
        theirs.wait_for_url(re.compile("end_session"), timeout=RERUN_TIMEOUT_MS)  # the provider's session ends too
        theirs.get_by_role("button", name="End session").click()
        theirs.get_by_text("Sign in to work with the explorer").wait_for(timeout=RERUN_TIMEOUT_MS)  # back, out
        for link in (f"{second}/?{urlencode({'session': bobs})}", f"{first}/?{urlencode({'session': token})}"):
            theirs.goto(link)
            theirs.get_by_text("Sign in to work with the explorer").wait_for(timeout=RERUN_TIMEOUT_MS)
            assert "loans" not in home_list(theirs)
    finally:
        for context in (alice, alice_elsewhere, bob):
            context.close()
