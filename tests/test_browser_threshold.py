"""Real-browser tests of the decision threshold and of a second model (issue 30): on The model page a threshold
typed into the control shows its metrics and chart; "Apply to every page" makes it the session's, and the sidebar and
the SEV page's row banner name it. A demo kind chosen as the second model shows both models' metrics and how often
they disagree, as :func:`~explain_core.inspection.two_models.compare_models` computes them."""
from __future__ import annotations

import re

from explain_core.analysis import demo_setup
from explain_core.inspection.threshold import threshold_sweep
from explain_core.inspection.two_models import compare_models
from explain_core.intake.demo_models import DEMO_KINDS
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


def test_a_demo_kind_as_second_model_shows_both_models_and_their_disagreements(browser, streamlit_server, page,
                                                                               wait_for_app, explain_cache_dir):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    first = demo_setup()
    compared = compare_models(first, demo_setup(first.dataset.name, "l2_lr"))
    page.goto(streamlit_server)
    wait_for_app(page)
    open_page(page, wait_for_app, "The model")
    page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for(state="visible")  # the layout settled
    box = page.locator(f'.st-key-second_kind{LIVE} [data-testid="stSelectbox"]').get_by_role("combobox")
    option = page.get_by_role("option", name=DEMO_KINDS["l2_lr"], exact=True)
    for _ in range(3):  # the list closes when the page scrolls under it (a chart still drawing)
        box.scroll_into_view_if_needed()
        box.click()  # in a form: no rerun until it is submitted
        try:
            option.click(timeout=5_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    expect(box).to_have_value(DEMO_KINDS["l2_lr"])
    page.get_by_role("button", name="Use as the second model").click()
    wait_for_app(page)
    said = f"They predict differently on {len(compared.disagree):,} of the {len(compared.rows):,} test rows"
    expect(page.get_by_text(said)).to_be_visible(timeout=RERUN_TIMEOUT_MS)
    expect(page.get_by_text(f"model 2: {compared.names[1]}")).to_be_visible()
    cells = page.locator(f'.st-key-second_metrics{LIVE} [role="gridcell"]')  # the grid's accessible table
    expect(cells.first).to_be_attached()
    shown = cells.all_text_contents()  # a line per metric: its name, model 1's value, model 2's (unformatted)
    for name in ("test_accuracy", "test_auc"):
        at = shown.index(name)
        assert [float(v) for v in shown[at + 1:at + 3]] == [m[name] for m in compared.metrics], shown
    no_error(page)
