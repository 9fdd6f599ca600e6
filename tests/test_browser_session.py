"""Real-browser tests of the session (issue 26): a click on another page right after a new setup never breaks the
app and always shows the new setup; a reload (F5) of an uploaded analysis brings that analysis back, not the demo;
a commit button ("Use this data", "Load model") clicked right before another control still counts (issue 55)."""
from __future__ import annotations

import re
import tomllib
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

from explain_core import explain_sev
from explain_core.analysis import make_setup, predicted_rows
from explain_core.intake.data import make_dataset
from explain_core.setup import model_from_upload
from conftest import RERUN_TIMEOUT_MS
from test_browser import LIVE, ROOT, metric, no_error, open_page, upload_csv, upload_table_and_model

DELAYS = (0.0, 0.3, 1.0, 2.0, 4.0)  # seconds between the click that changes the setup and a click on a page


def nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title, exact=True).click()


def sidebar_caption(page) -> str:
    return page.locator('[data-testid="stSidebar"] [data-testid="stCaptionContainer"]').first.inner_text()


def shows_setup(page, caption: str) -> None:
    """The sidebar comes to name the setup ``caption`` starts with (a dropped click never does). Streamlit reports
    the script idle for a moment between a stopped run and the page switch's run, so a read right after
    ``wait_for_app`` can still see the page before the switch: the caption is waited for, not read once. A failure
    says what the page showed instead (its URL, the sidebar, any message), so an intermittent one can be read."""
    from playwright.sync_api import expect  # imported here: without playwright the browser fixture says so

    sidebar = page.locator('[data-testid="stSidebar"] [data-testid="stCaptionContainer"]').first
    try:
        expect(sidebar).to_have_text(re.compile("^" + re.escape(caption)), timeout=RERUN_TIMEOUT_MS)
    except AssertionError as failure:
        alerts = page.locator('[data-testid="stAlert"], [data-testid="stException"]').all_inner_texts()
        raise AssertionError(f"expected the sidebar to name {caption!r}; the page at {page.url} shows "
                             f"{sidebar.inner_text()!r} and the messages {alerts}") from failure


def app_intact(page) -> None:
    """No uncaught exception (Streamlit's "This app has encountered an error"), no error box, a drawn sidebar: one
    row switcher. Streamlit marks only elements stale, not their containers, so a run that starts right after the
    idle moment ``wait_for_app`` saw (a page switch's) can show the previous run's switcher beside the new one for an
    instant: the count is of live switchers and is waited for (a crashed run's empty sidebar never gets one)."""
    from playwright.sync_api import expect

    assert page.locator('[data-testid="stException"]').count() == 0
    assert "has encountered an error" not in page.content()
    no_error(page)
    switchers = page.locator(f'.st-key-sidebar_row [data-testid="stElementContainer"]{LIVE} '
                             '[data-testid="stSelectbox"]')
    expect(switchers).to_have_count(1, timeout=RERUN_TIMEOUT_MS)


def choose(page, key: str, option: str, wait_for_app) -> None:
    """Choose ``option`` in the selectbox ``key`` and wait until it shows it; a choice it does not show is made
    once more (as a person who sees the old value would), so a later check reads the click it is about."""
    from playwright.sync_api import expect

    box = page.locator(f'.st-key-{key}{LIVE} [data-testid="stSelectbox"]')
    for attempt in range(2):
        box.click()
        page.get_by_role("option", name=option, exact=True).click()
        wait_for_app(page)
        try:
            expect(box.get_by_role("combobox")).to_have_value(option, timeout=5_000 if attempt == 0 else
                                                             RERUN_TIMEOUT_MS)
            return
        except AssertionError:
            if attempt:
                raise


def on_page(page, wait_for_app, title: str) -> None:
    """Open page ``title`` unless it is the one shown (a click that lands with the previous page's own switch is
    lost to it: the setup is what counts here)."""
    link = page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title, exact=True)
    if urlsplit(link.get_attribute("href")).path != urlsplit(page.url).path:
        open_page(page, wait_for_app, title)


def test_a_page_clicked_right_after_a_new_setup_shows_it(browser, streamlit_server, page, wait_for_app):
    """Issue 26: a click on a page 0, 0.3, 1, 2 and 4 s after "Load demo" (Home) and after "Use this setup" (Data &
    model) crashed the app (the sidebar's row switcher got the previous setup's label) or dropped the new setup."""
    page.goto(streamlit_server)
    wait_for_app(page)
    datasets = [("German credit", "german_credit"), ("COMPAS recidivism", "compas")]
    for i, delay in enumerate(DELAYS):
        on_page(page, wait_for_app, "Home")  # the session's dataset with an L2 model, then Data & model
        shown = sidebar_caption(page).split(" · ")[0]
        choose(page, "home_kind", "L2 logistic regression", wait_for_app)
        page.locator(f".st-key-home_load{LIVE} button").click()
        page.wait_for_timeout(int(delay * 1000))
        nav(page, "Data & model")
        shows_setup(page, f"{shown} · L2 logistic regression on {shown}")
        wait_for_app(page)
        app_intact(page)
        on_page(page, wait_for_app, "Data & model")  # another dataset with its gradient boosting, then Home
        label, name = datasets[i % 2]
        choose(page, "dm_demo", label, wait_for_app)
        page.locator(f".st-key-dm_demo_load{LIVE} button").first.click()
        wait_for_app(page)
        # "Use this setup" applies what its page showed (a stale click keeps the old setup, by design), so the
        # test clicks it once the page shows the loaded demo: on a busy machine the redraw can trail the run
        page.get_by_text(re.compile(rf"replaces the session's setup with {re.escape(name)} with")).wait_for()
        page.locator(f".st-key-dm_use{LIVE} button").first.click()
        page.wait_for_timeout(int(delay * 1000))
        nav(page, "Home")
        shows_setup(page, f"{name} · Gradient boosting on {name}")
        wait_for_app(page)
        app_intact(page)


def test_a_click_waits_for_the_run_in_progress():
    """Issue 26: the server hands a click's rerun to the run in progress (``runner.fastReruns`` off), which folds the
    clicks together. With fast reruns, a "Load demo" click whose run had not yet started when a page link's click
    reached the server was dropped (its callback never ran); a run that had started went on beside the next."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["fastReruns"] is False


@pytest.fixture(scope="module")
def loans(tmp_path_factory):
    """A small loans table and a logistic regression for it, saved with skops: what a visitor uploads."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"income": rng.normal(50, 12, 400).round(1), "debt": rng.normal(20, 6, 400).round(1),
                          "tenure": rng.integers(0, 25, 400)})
    frame["approved"] = np.where(frame.income - 1.5 * frame.debt + rng.normal(0, 5, 400) > 20, "yes", "no")
    model = LogisticRegression(max_iter=2000).fit(frame[["income", "debt", "tenure"]], frame["approved"])
    path = tmp_path_factory.mktemp("loans") / "loans.skops"
    path.write_bytes(sio.dumps(model))
    dataset = make_dataset(frame, "approved", positive_class="yes", name="loans")
    return frame, path, make_setup(dataset, model_from_upload(dataset, path.read_bytes(), "loans.skops"))


def test_a_reload_brings_the_uploaded_analysis_back(browser, streamlit_server, page, wait_for_app, loans):
    frame, model_path, setup = loans
    page.goto(streamlit_server)
    wait_for_app(page)
    upload_table_and_model(page, wait_for_app, "loans.csv", frame.to_csv(index=False).encode(), model_path)
    no_error(page)
    row = int(predicted_rows(setup)[3])
    open_page(page, wait_for_app, "SEV")
    url = urlsplit(page.url)
    page.goto(urlunsplit(url._replace(query=urlencode({**dict(parse_qsl(url.query)), "row": row}))))  # F5 on ?row=
    wait_for_app(page)
    page.locator(f'.st-key-sev_minus{LIVE} [data-testid="stMetricValue"]').wait_for()
    app_intact(page)
    assert "session=" in page.url and f"row={row}" in page.url
    banner = page.locator('[data-testid="stAlert"]').first.inner_text()
    assert f"Row {row}" in banner and "loans" in banner and "loans.skops" in banner, banner
    ex = explain_sev(setup.model, setup.dataset, setup.query(row), setup.reference_for(setup.query(row)))
    assert (metric(page, "minus"), metric(page, "plus")) == (ex.minus.shown, ex.plus.shown)
    page.reload()  # and once more, plainly
    wait_for_app(page)
    page.locator(f'.st-key-sev_minus{LIVE} [data-testid="stMetricValue"]').wait_for()
    assert "loans" in sidebar_caption(page)
    assert f"Row {row}" in page.locator('[data-testid="stAlert"]').first.inner_text()


def test_a_commit_click_followed_at_once_by_another_counts(browser, paused_server, wait_for_app, loans):
    """Issue 55: under load a "Load model" click had no effect, and after a CSV upload the page stayed on the
    previous data (a second click worked). Both buttons were read in the page's body: True only in their click's own
    run, which a click on another control, reaching the server before that run got to the button, stopped, and the
    next run had no trigger. On a server whose runs pause as they begin (every click then lands in that stretch),
    "Use this data" followed at once by the model source, and "Load model" followed at once by a checkbox: each
    button's work is done (its click is a callback's note, applied by the run)."""
    from playwright.sync_api import expect

    frame, model_path, _ = loans
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(RERUN_TIMEOUT_MS)
    try:
        page.goto(paused_server)
        wait_for_app(page)
        upload_csv(page, wait_for_app, "loans.csv", frame.to_csv(index=False).encode())
        page.locator(f".st-key-dm_build{LIVE} button").first.click()
        page.locator(f".st-key-dm_model_source{LIVE}").get_by_text("Upload a model file").click()
        wait_for_app(page)
        expect(page.get_by_text("Dataset loans:")).to_be_visible(timeout=20_000)
        page.locator('.st-key-dm_model_file input[type="file"]').set_input_files(files=[str(model_path)])
        page.locator(f".st-key-dm_load_model{LIVE} button").first.wait_for()
        wait_for_app(page)
        page.locator(f".st-key-dm_load_model{LIVE} button").first.click()
        page.locator(f".st-key-dm_unseen{LIVE} label").first.click()
        wait_for_app(page)
        model = page.locator(f".st-key-dm_below [data-testid=stAlert]{LIVE}").filter(has_text="Model:")
        expect(model).to_have_count(1, timeout=20_000)
        expect(page.locator(f".st-key-dm_unseen{LIVE} input")).to_be_checked()
        no_error(page)
    finally:
        context.close()
