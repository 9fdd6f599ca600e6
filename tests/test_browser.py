"""Real-browser test of app.py: Chromium (Playwright) against a live `streamlit run app.py`."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from explain_core import demo_model, explain_sev, load_demo, make_reference

SCREENSHOT_ENV = "APP_SCREENSHOT_DIR"  # set to keep the screenshot somewhere to look at


def metric_value(page, which: str) -> str:
    return page.locator(f'.st-key-sev_{which}:not([data-stale="true"]) [data-testid="stMetricValue"]').inner_text()


def table(page, which: str):
    return page.locator(f'.st-key-sev_{which}:not([data-stale="true"]) [data-testid="stDataFrame"]')


@pytest.fixture(scope="module")
def expected_values(explain_cache_dir):
    """SEV⁻ and SEV⁺ of a row as the app should show them, computed here with explain_core."""
    data = load_demo("compas")
    trained = demo_model(data, "gbdt")
    reference = make_reference(data, trained.train_rows)

    def values(row: int) -> tuple[str, str]:
        ex = explain_sev(trained.model, data, data.features.iloc[[row]], reference)
        return str(ex.minus.value), str(ex.plus.value)
    return values


def test_pick_row_in_browser(browser, streamlit_server, expected_values, page, wait_for_app,
                             full_page_screenshot, tmp_path):
    page.goto(streamlit_server)
    wait_for_app(page)
    assert page.get_by_role("heading", name="Explanation explorer").is_visible()
    assert page.locator(".st-key-sev_minus").get_by_text("SEV⁻", exact=True).is_visible()
    minus_table = table(page, "minus")
    minus_table.locator("canvas").first.wait_for(state="visible")
    assert table(page, "plus").is_visible()
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0

    select = page.locator('.st-key-row:not([data-stale="true"]) [data-testid="stSelectbox"]')
    first_label = select.get_by_role("combobox").input_value()
    first_row = int(first_label.split()[1])
    assert (metric_value(page, "minus"), metric_value(page, "plus")) == expected_values(first_row)
    before = minus_table.screenshot()

    select.click()
    options = page.get_by_role("option")
    options.first.wait_for()
    label = next(t.strip() for t in options.all_inner_texts()[1:] if t.strip() != first_label)
    page.get_by_role("option", name=label, exact=True).click()
    wait_for_app(page)

    row = int(label.split()[1])
    assert select.get_by_role("combobox").input_value() == label
    assert page.get_by_text(f"row {row}, P(recid)", exact=False).is_visible()
    assert (metric_value(page, "minus"), metric_value(page, "plus")) == expected_values(row)
    table(page, "minus").locator("canvas").first.wait_for(state="visible")
    assert table(page, "minus").screenshot() != before, "the SEV⁻ table did not change with the row"
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0

    out = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path) / "app-full-page.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    shot = full_page_screenshot(page, out)
    assert shot.stat().st_size > 10_000
