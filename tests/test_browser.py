"""Real-browser tests: Chromium (Playwright) against a live `streamlit run app.py`.

Screenshots of every page go to ``test-artifacts/`` (env ``APP_SCREENSHOT_DIR`` overrides). The time from
page load to the first full SEV explanation, and for a cached re-selection of a row, are printed.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from explain_core import explain_sev
from explain_core.analysis import Parameters, demo_setup, lens_report, predicted_rows, row_lens_contexts, row_linear

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("APP_SCREENSHOT_DIR") or ROOT / "test-artifacts")
LIVE = ':not([data-stale="true"])'


@pytest.fixture(scope="module")
def demo(explain_cache_dir):
    """The default demo setup, computed here independently of the app (trains/caches the model first)."""
    return demo_setup()


def expected_sev(demo, row: int) -> tuple[str, str]:
    ex = explain_sev(demo.model, demo.dataset, demo.query(row), demo.reference)
    return str(ex.minus.value), str(ex.plus.value)


def metric(page, which: str) -> str:
    return page.locator(f'.st-key-sev_{which}{LIVE} [data-testid="stMetricValue"]').inner_text()


def charts_drawn(page, container: str, count: int = 1) -> None:
    """Wait until ``count`` plotly charts inside the keyed container have drawn their SVG."""
    svgs = page.locator(f".st-key-{container}{LIVE} [data-testid='stPlotlyChart'] .main-svg")
    for i in range(count):
        svgs.nth(i).wait_for(state="visible")


def no_error(page) -> None:
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0, \
        page.locator('[data-testid="stAlertContentError"]').all_inner_texts()


def open_page(page, wait_for_app, title: str, tries: int = 3) -> None:
    """Click the sidebar link ``title`` until the URL is that page's: a click that lands while the previous page
    starts another rerun (the URL following the row, a setup just switched) can be lost."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    link = page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title, exact=True)
    target = urlparse(link.get_attribute("href")).path
    for attempt in range(tries):
        link.click()
        try:
            page.wait_for_url(lambda url: urlparse(url).path == target, timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise
            wait_for_app(page)
    wait_for_app(page)


def upload_csv(page, wait_for_app, name: str, content: bytes) -> None:
    """On Data & model, choose the upload source and upload ``content`` as the CSV file ``name``."""
    open_page(page, wait_for_app, "Data & model")
    page.locator(f'.st-key-dm_data_source{LIVE}').get_by_text("Upload a CSV or Parquet file").click()
    wait_for_app(page)
    page.locator('.st-key-dm_upload input[type="file"]').set_input_files(
        files=[{"name": name, "mimeType": "text/csv", "buffer": content}])
    # the upload travels over HTTP before its rerun starts: under load the app can look idle in between, so wait
    # for the page's answer to this file (its "not used yet" notice, or an error naming it)
    page.wait_for_function(
        """(name) => (document.querySelector('[data-testid="stMain"]')?.innerText || '').includes('not used yet')
                     || [...document.querySelectorAll('[data-testid="stAlertContentError"]')]
                          .some(e => e.innerText.includes(name))""", arg=name)
    wait_for_app(page)


def choose_model_file(page, wait_for_app, path) -> None:
    """On Data & model, choose the model-upload source and set the file at ``path`` (not loaded yet)."""
    page.locator(f'.st-key-dm_model_source{LIVE}').get_by_text("Upload a model file").click()
    wait_for_app(page)
    page.locator('.st-key-dm_model_file input[type="file"]').set_input_files(files=[str(path)])
    wait_for_app(page)


def upload_table_and_model(page, wait_for_app, name: str, content: bytes, model_path) -> None:
    """On Data & model, upload the CSV ``content`` as ``name``, use its table, load the model file at
    ``model_path`` and use the setup."""
    upload_csv(page, wait_for_app, name, content)
    page.locator(f".st-key-dm_build{LIVE} button").first.click()
    wait_for_app(page)
    choose_model_file(page, wait_for_app, model_path)
    for key in ("dm_load_model", "dm_use"):
        page.locator(f".st-key-{key}{LIVE} button").first.click()
        wait_for_app(page)


def choose_sidebar_row(page, wait_for_app, row: int, values: tuple[str, str]) -> float:
    """Pick ``row`` in the sidebar's row switcher; seconds until the SEV page shows its banner and ``values``."""
    select = page.locator(f'.st-key-sidebar_row{LIVE} [data-testid="stSelectbox"]')
    select.click()
    option = page.get_by_role("option").filter(has_text=f"row {row} ·").first
    option.wait_for()
    start = time.perf_counter()
    option.click()
    page.wait_for_function(
        """([row, minus, plus]) => {
             const value = k => document.querySelector(
               `.st-key-sev_${k}:not([data-stale="true"]) [data-testid="stMetricValue"]`);
             const banner = [...document.querySelectorAll('[data-testid="stAlert"]')]
               .some(e => e.innerText.includes(`Row ${row}`));
             return banner && value("minus")?.innerText === minus && value("plus")?.innerText === plus;
           }""", arg=[row, *values], polling="raf")
    seconds = time.perf_counter() - start
    wait_for_app(page)
    return seconds


def sidebar_session(page) -> tuple[str, str]:
    """The sidebar's setup caption and chosen row."""
    sidebar = page.locator('[data-testid="stSidebar"]')
    return (sidebar.locator('[data-testid="stCaptionContainer"]').first.inner_text(),
            sidebar.locator(f'.st-key-sidebar_row{LIVE}').get_by_role("combobox").input_value())


def first_explanation_in_a_new_session(browser, url: str, row: int, values: tuple[str, str]) -> float:
    """Seconds from opening ``/sev?row=<row>`` in a fresh browser context until its SEV values and hypercube show."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        start = time.perf_counter()
        page.goto(f"{url}/sev?row={row}")
        page.wait_for_function(
            """([minus, plus]) => {
                 const value = k => document.querySelector(
                   `.st-key-sev_${k}:not([data-stale="true"]) [data-testid="stMetricValue"]`);
                 return value("minus")?.innerText === minus && value("plus")?.innerText === plus;
               }""", arg=list(values), polling="raf", timeout=60_000)
        page.locator(f".st-key-sev_cube{LIVE} [data-testid='stPlotlyChart'] .main-svg").first.wait_for()
        return time.perf_counter() - start
    finally:
        context.close()


def shot(full_page_screenshot, page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert full_page_screenshot(page, ARTIFACTS / f"{name}.png").stat().st_size > 10_000
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_explain_a_row_with_every_method(browser, streamlit_server, demo, page, wait_for_app,
                                         full_page_screenshot, capsys):
    flagged = [int(r) for r in predicted_rows(demo)]

    start = time.perf_counter()
    page.goto(f"{streamlit_server}/sev")
    page.locator(f'.st-key-sev_minus{LIVE} [data-testid="stMetricValue"]').wait_for()
    charts_drawn(page, "sev_cube")
    cold = time.perf_counter() - start
    wait_for_app(page)
    no_error(page)
    server_log = streamlit_server.log.read_text()  # the start-up ran inside Streamlit's runtime, quietly
    assert "ScriptRunContext" not in server_log and "No runtime found" not in server_log, server_log
    assert (metric(page, "minus"), metric(page, "plus")) == expected_sev(demo, flagged[0])
    charts_drawn(page, "sev_wide", 2)
    shot(full_page_screenshot, page, "sev")

    other = next(r for r in flagged[1:60] if expected_sev(demo, r) != expected_sev(demo, flagged[0]))
    fresh = choose_sidebar_row(page, wait_for_app, other, expected_sev(demo, other))
    assert (metric(page, "minus"), metric(page, "plus")) == expected_sev(demo, other)
    cached = choose_sidebar_row(page, wait_for_app, flagged[0], expected_sev(demo, flagged[0]))
    assert (metric(page, "minus"), metric(page, "plus")) == expected_sev(demo, flagged[0])
    new_session = first_explanation_in_a_new_session(browser, streamlit_server, flagged[7],
                                                     expected_sev(demo, flagged[7]))
    with capsys.disabled():  # printed in every run, also in CI's quiet mode
        print(f"\nbrowser timings (page load → first full SEV explanation, target ≤ 3 s cold): "
              f"first request to a fresh server {cold:.2f} s "
              f"(the server started in {streamlit_server.started_in:.2f} s, "
              f"its imports and the default demo's model loaded then); "
              f"new session on the running server, row never explained (?row={flagged[7]}) {new_session:.2f} s; "
              f"new row from the sidebar {fresh:.2f} s; cached re-selection {cached:.2f} s (target ≤ 0.3 s)")

    q, p = demo.query(flagged[0]), Parameters()
    open_page(page, wait_for_app, "LENS")
    charts_drawn(page, "lens_curve")
    charts_drawn(page, "lens_ps_by_size")
    no_error(page)
    lens = lens_report(row_lens_contexts(demo, q, p)["r2i"], p).factors
    summary = page.locator(f".st-key-lens_summary{LIVE}").inner_text()
    assert f"{lens.cumulative_pn:.3f}" in summary and str(len(lens.factors)) in summary
    shot(full_page_screenshot, page, "lens")

    open_page(page, wait_for_app, "Linear")
    charts_drawn(page, "lin_weights")
    no_error(page)
    exact = next(r for r in row_linear(demo, q, p).comparison.results if r.method == "exact")
    assert f"{exact.scores.fidelity:.4f}" in page.locator(f".st-key-lin_highlights{LIVE}").inner_text()
    shot(full_page_screenshot, page, "linear")

    open_page(page, wait_for_app, "Compare")
    charts_drawn(page, "cmp_agreement")
    no_error(page)
    assert page.locator(f".st-key-cmp_sev{LIVE}").get_by_text("SEV⁻ = ").count() >= 1
    shot(full_page_screenshot, page, "compare")


def test_pick_a_demo_and_a_row(browser, streamlit_server, page, wait_for_app, full_page_screenshot):
    other = demo_setup("compas", "l2_lr")
    row = int(predicted_rows(other)[5])
    page.goto(streamlit_server)
    wait_for_app(page)
    page.locator(f'.st-key-home_kind{LIVE} [data-testid="stSelectbox"]').click()
    page.get_by_role("option", name="L2 logistic regression", exact=True).click()
    wait_for_app(page)
    page.locator(f".st-key-home_load{LIVE} button").click()
    wait_for_app(page)
    page.get_by_role("heading", name="Pick a row").wait_for()
    number = page.locator(f".st-key-pick_number{LIVE} input")
    number.fill(str(row))
    number.press("Enter")
    wait_for_app(page)
    page.get_by_text(f"Row {row} is chosen", exact=False).wait_for()
    no_error(page)
    open_page(page, wait_for_app, "SEV")
    assert (metric(page, "minus"), metric(page, "plus")) == expected_sev(other, row)
    assert "L2 logistic regression" in page.locator('[data-testid="stAlert"]').first.inner_text()
    shot(full_page_screenshot, page, "sev-l2-lr")


def test_malformed_upload_shows_an_error_and_keeps_the_session(browser, streamlit_server, demo, page, wait_for_app,
                                                              full_page_screenshot):
    page.goto(streamlit_server)
    wait_for_app(page)
    session = sidebar_session(page)
    upload_csv(page, wait_for_app, "broken.csv", b'a,b\n1,"unterminated\n2,3\n')
    error = page.locator('[data-testid="stAlertContentError"]')
    error.first.wait_for()
    assert "broken.csv" in error.first.inner_text()
    assert "Traceback" not in page.content()
    shot(full_page_screenshot, page, "data-model-error")
    open_page(page, wait_for_app, "Home")
    assert sidebar_session(page) == session


def test_a_new_target_column_shows_its_own_task_and_classes(browser, streamlit_server, page, wait_for_app):
    """The task is inferred again for each target: the browser kept showing (and sending back) 'regression' for a
    text target chosen after a numeric one, and 'Use this data' then refused the target."""
    page.goto(streamlit_server)
    wait_for_app(page)
    rows = "".join(f"{i % 7},{'yes' if i % 3 else 'no'},{i}\n" for i in range(40))
    upload_csv(page, wait_for_app, "ids.csv", ("size,approved,applicant_id\n" + rows).encode())

    def shown(key: str) -> str:
        return page.locator(f'.st-key-{key}{LIVE} [role="combobox"]').first.input_value()

    assert (shown("dm_target"), shown("dm_task")) == ("applicant_id", "regression")
    page.locator(f'.st-key-dm_target{LIVE} [role="combobox"]').first.click()
    page.get_by_role("option", name="approved", exact=True).click()
    wait_for_app(page)
    page.wait_for_function("() => [...document.querySelectorAll('.st-key-dm_task [role=combobox]')]"
                           ".some(e => e.value === 'classification')", timeout=10_000)
    assert shown("dm_positive") == "yes"
    page.locator(".st-key-dm_build button").first.click()
    wait_for_app(page)
    no_error(page)


def test_report_download_is_a_valid_pdf(browser, streamlit_server, demo, page, wait_for_app, full_page_screenshot):
    from pypdf import PdfReader

    page.goto(f"{streamlit_server}/report")
    wait_for_app(page)
    no_error(page)
    button = page.locator(f'.st-key-report_download{LIVE} [data-testid="stDownloadButton"] button').first
    button.wait_for()
    with page.expect_download(timeout=120_000) as download:
        button.click()
    path = download.value.path()
    data = Path(path).read_bytes()
    assert data.startswith(b"%PDF")
    text = "\n".join(p.extract_text() for p in PdfReader(path).pages)
    row = int(predicted_rows(demo)[0])
    minus, plus = expected_sev(demo, row)
    assert f"for row {row}?" in text and "SEV" in text
    assert f"SEV⁻ = {minus} (" in text and f"SEV⁺ = {plus} (" in text
    shot(full_page_screenshot, page, "report")



@pytest.fixture
def listener():
    """A local HTTP server that records every request it gets (an attacker's image URL points here)."""
    import http.server
    import threading

    hits: list[str] = []

    class Record(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 — http.server's hook
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Record)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], hits
    server.shutdown()


def test_markdown_and_html_in_uploaded_names_are_shown_literally(browser, streamlit_server, page, wait_for_app,
                                                                 listener, full_page_screenshot):
    """A dataset whose column names and values are markdown images, bold text and HTML: uploaded, trained on and
    explained on every page, the viewer's browser never requests the attacker's URL and shows the names as text."""
    from hostile import markdown_table

    port, hits = listener
    table = markdown_table(port)
    image_name = table.columns[0]
    page.goto(streamlit_server)
    wait_for_app(page)
    upload_csv(page, wait_for_app, "names.csv", table.to_csv(index=False).encode())
    for key in ("dm_build", "dm_train", "dm_use"):  # use this data, train the default model, use this setup
        page.locator(f'.st-key-{key}{LIVE} button').first.click()
        wait_for_app(page)
    no_error(page)
    for title in ("SEV", "LENS", "Linear", "Compare", "Pick a row", "Report"):
        open_page(page, wait_for_app, title)
        no_error(page)
        page.wait_for_timeout(300)  # let images (if any were rendered) start loading
    open_page(page, wait_for_app, "Compare")
    charts_drawn(page, "cmp_agreement")
    shown = page.locator('[data-testid="stMain"]').inner_text()
    assert "**bold**" in shown and image_name in shown  # the names themselves, not their rendering
    assert page.locator('[data-testid="stMain"] img').count() == 0
    shot(full_page_screenshot, page, "markdown-names")
    assert hits == [], f"the browser requested {hits}"


def test_upload_an_xgboost_and_an_onnx_model_and_compare(browser, streamlit_server, page, wait_for_app, tmp_path,
                                                        full_page_screenshot):
    """California housing (a bundled demo): an XGBoost booster's own .json file, then a single-tensor ONNX
    regressor whose inputs are confirmed to be the dataset's columns in order; each explained on Compare."""
    import xgboost
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.linear_model import Ridge

    from explain_core import load_demo

    data = load_demo("california_housing")
    X, y = data.features, data.y
    booster = xgboost.XGBRegressor(n_estimators=20, max_depth=3).fit(X, y).get_booster()
    booster.save_model(str(tmp_path / "xgb.json"))
    ridge = Ridge().fit(X.to_numpy(), y)
    onnx = convert_sklearn(ridge, initial_types=[("input", FloatTensorType([None, X.shape[1]]))]).SerializeToString()
    (tmp_path / "ridge.onnx").write_bytes(onnx)

    page.goto(streamlit_server)
    wait_for_app(page)
    open_page(page, wait_for_app, "Data & model")
    page.locator(f'.st-key-dm_demo{LIVE} [data-testid="stSelectbox"]').click()
    page.get_by_role("option", name="California housing", exact=True).click()
    wait_for_app(page)
    page.locator(f'.st-key-dm_demo_load{LIVE} button').first.click()
    wait_for_app(page)
    # the upload below is checked against the demo's columns: it waits until the page works on the demo (on a busy
    # machine the run that applies the click can trail it; the click race itself is issue 55's)
    page.get_by_text("Dataset california_housing:").first.wait_for(timeout=60_000)
    for name, confirm in (("xgb.json", False), ("ridge.onnx", True)):
        choose_model_file(page, wait_for_app, tmp_path / name)
        if confirm:
            page.locator(f'.st-key-dm_by_order{LIVE} label').click()
            wait_for_app(page)
        page.locator(f'.st-key-dm_load_model{LIVE} button').first.click()
        wait_for_app(page)
        no_error(page)
        # "Use this setup" applies what its page showed (a stale click keeps the old setup, by design): it is
        # clicked once the page names the loaded model, which on a busy machine can trail the run
        page.get_by_text(re.compile(rf"replaces the session's setup with california_housing with .*{re.escape(name)}")
                         ).wait_for()
        page.locator(f'.st-key-dm_use{LIVE} button').first.click()
        wait_for_app(page)
        no_error(page)
        open_page(page, wait_for_app, "Compare")
        charts_drawn(page, "cmp_agreement")
        no_error(page)
        assert name in page.locator('[data-testid="stAlert"]').first.inner_text()  # the banner names the model
        shot(full_page_screenshot, page, f"compare-{name.replace('.', '-')}")
        open_page(page, wait_for_app, "Data & model")


def test_a_model_file_that_crashes_its_parser_leaves_the_server_and_other_sessions_working(
        browser, streamlit_server, demo, page, wait_for_app, tmp_path):
    """A LightGBM file with one edited number makes LightGBM's parser abort its process: in the sandboxed worker,
    that is a message on the page; the server still answers, this session and a new one still explain rows."""
    import urllib.request

    from hostile import lightgbm_text

    (tmp_path / "model.txt").write_bytes(lightgbm_text("num_leaves"))
    page.goto(streamlit_server)
    wait_for_app(page)
    open_page(page, wait_for_app, "Data & model")
    choose_model_file(page, wait_for_app, tmp_path / "model.txt")
    page.locator(f'.st-key-dm_load_model{LIVE} button').first.click()
    wait_for_app(page)
    alert = page.locator('[data-testid="stAlertContentError"]').first.inner_text()
    assert "LightGBM file is damaged" in alert and "SIGABRT" in alert, alert
    with urllib.request.urlopen(f"{streamlit_server}/_stcore/health", timeout=10) as answer:
        assert answer.read().strip() == b"ok"
    other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    other.goto(f"{streamlit_server}/sev?row=0")
    wait_for_app(other)
    ex = explain_sev(demo.model, demo.dataset, demo.query(0), demo.reference_for(demo.query(0)))
    assert (metric(other, "minus"), metric(other, "plus")) == (ex.minus.shown, ex.plus.shown)
    no_error(other)
    other.context.close()
    open_page(page, wait_for_app, "SEV")  # the session that uploaded the file goes on with its setup
    assert metric(page, "minus") and metric(page, "plus")
    no_error(page)
