"""Real-browser test of the decision threshold (issue 30): on The model page a threshold typed into the control
shows its metrics and chart; "Apply to every page" makes it the session's, and the sidebar and the SEV page's row
banner name it."""
from __future__ import annotations

import re

from explain_core.analysis import demo_setup
from explain_core.inspection.threshold import threshold_sweep
from conftest import RERUN_TIMEOUT_MS
from test_browser import LIVE, no_error, open_page


def test_a_threshold_applied_on_the_model_page_is_the_one_every_page_uses(browser, streamlit_server, page,
                                                                          wait_for_app, explain_cache_dir):
    from playwright.sync_api import expect  # imported here: without playwright the browser fixture says so

    expected = threshold_sweep(demo_setup(), also=(0.3,)).at(0.3)
    page.goto(streamlit_server)
    wait_for_app(page)
    open_page(page, wait_for_app, "The model")
    control = page.locator(f'[class*="st-key-mt_threshold_"]{LIVE} input')
    control.fill("0.3")
    control.press("Enter")
    wait_for_app(page)
    metrics = page.locator(f".st-key-mt_metrics{LIVE}")
    expect(metrics).to_contain_text(f"{expected['accuracy']:.3f}", timeout=RERUN_TIMEOUT_MS)
    expect(metrics).to_contain_text(f"{expected['recall (TPR)']:.3f}", timeout=RERUN_TIMEOUT_MS)
    page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for(state="visible")
    page.get_by_role("button", name="Apply to every page").click()
    wait_for_app(page)
    sidebar = page.locator('[data-testid="stSidebar"] [data-testid="stCaptionContainer"]').first
    expect(sidebar).to_contain_text("label: score ≥ 0.3 (custom threshold)", timeout=RERUN_TIMEOUT_MS)
    no_error(page)
    open_page(page, wait_for_app, "SEV")
    banner = page.locator('[data-testid="stAlertContentInfo"]').first
    expect(banner).to_contain_text(re.compile(r"predicted .+ at the threshold 0\.3"), timeout=RERUN_TIMEOUT_MS)
    no_error(page)
