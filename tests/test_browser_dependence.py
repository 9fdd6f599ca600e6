"""Real-browser check of the model page's partial dependence and interactions section (issue 30): opt in, read the
PDP's words against the library's own result, then pick a pair and see its 2-D partial dependence. Helpers and
fixtures are test_browser.py's and conftest.py's."""
from __future__ import annotations

from explain_core.analysis import Parameters, demo_setup, predicted_rows
from explain_core.inspection import partial_dependence
from explain_core.views.dependence import dependence_text, feature_label
from test_browser import LIVE, charts_drawn, no_error, open_page, shot
from test_browser_reading import no_clipped_text


def test_model_page_shows_partial_dependence_and_interactions(browser, streamlit_server, page, wait_for_app,
                                                              full_page_screenshot):
    demo = demo_setup()
    row, seed = int(predicted_rows(demo)[0]), Parameters().seed
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(streamlit_server)
    wait_for_app(page)
    open_page(page, wait_for_app, "The model")
    page.locator(f".st-key-mv_pdp_toggle{LIVE} label").click()
    wait_for_app(page)
    charts_drawn(page, "mv_pdp_views", 2)
    no_error(page)
    first = demo.dataset.group_names[0]
    words = dependence_text(partial_dependence(demo, [first], row=row, rows=500, ice_rows=100, seed=seed))
    section = page.locator(f".st-key-mv_pdp_views{LIVE}")
    assert words in section.inner_text()
    assert "strongest interactions by mean |SHAP interaction value|" in section.inner_text()
    no_clipped_text(page)  # at 1280 × 800: no chart title or legend clipped or over another
    page.locator(f'.st-key-mv_pdp_pair{LIVE} [data-testid="stSelectbox"]').click()
    page.get_by_role("option", name=feature_label(demo.dataset, "age"), exact=True).click()
    wait_for_app(page)
    charts_drawn(page, "mv_pdp_views", 2)
    pair = dependence_text(partial_dependence(demo, [first, "age"], row=row, rows=500, seed=seed))
    assert pair in page.locator(f".st-key-mv_pdp_views{LIVE}").inner_text()
    assert page.locator(f".st-key-mv_pdp_views{LIVE} .heatmaplayer").count() >= 1
    no_error(page)
    shot(full_page_screenshot, page, "model-dependence")
