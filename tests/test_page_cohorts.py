"""The Cohorts & fairness page: headless (AppTest) — a cohort built with the widgets selects the rows pandas selects,
the comparison and the fairness differences are explain_core's, a leaf becomes a cohort, the cohorts survive a
reload and reach the PDF — and one real-browser run (fixtures and helpers of conftest.py and test_browser.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explain_core.analysis import Parameters, demo_setup
from explain_core.inspection.filters import MISCLASSIFIED, Cohort, Filter
from explain_core.inspection.errors import error_tree, leaf_cohort
from explain_core.inspection.fairness import SEV_BUDGET, fairness_report
from explain_core.report import RowResults, build_row_report
from explain_core.report.cohorts import REPORT_KEY
from explain_core.views.cohorts import fairness_text
from test_browser import LIVE, charts_drawn, no_error, open_page, shot

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 120
YOUNG = Cohort("young", (Filter("age", "<", 25.0),))


@pytest.fixture(scope="module")
def demo(explain_cache_dir):
    return demo_setup()


def cohorts_page(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    at.switch_page("app_pages/cohorts.py").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return at


def keep_young(at) -> None:
    at.selectbox(key="ch_feature").select("age").run()
    at.selectbox(key="ch_op").select("<").run()
    at.number_input(key="ch_value_age_lt").set_value(25).run()
    at.button(key="ch_add").click().run()
    at.text_input(key="ch_name").input("young").run()
    at.button(key="ch_keep").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])


@pytest.mark.slow
def test_a_cohort_built_on_the_page_is_compared_kept_and_reported(demo):
    at = cohorts_page()
    keep_young(at)
    assert at.session_state["cohorts"] == (YOUNG,)
    at.text_input(key="ch_text").input("sex = Female").run()  # typed, then Enter
    assert at.session_state["ch_draft"] == (Filter("sex", "=", "Female"),) and at.session_state["ch_text"] == ""
    at.text_input(key="ch_text").input("misclassified").run()
    at.button(key="ch_drop_0").click().run()  # the × of the first filter
    assert at.session_state["ch_draft"] == (Filter(MISCLASSIFIED, "=", 1),)
    at.button(key="ch_clear").click().run()
    assert at.session_state["ch_draft"] == ()
    at.toggle(key="ch_compare").set_value(True).run()
    table = at.dataframe[0].value  # the comparison, then the error tree's leaves
    frame = demo.dataset.features.iloc[demo.test_rows]
    assert list(table["cohort"]) == ["all test rows", "young"]
    assert list(table["test rows"]) == [len(demo.test_rows), int((frame.age < 25).sum())]
    at.toggle(key="ch_fair").set_value(True).run()
    want = fairness_report(demo, Parameters().sev, None, (YOUNG,), sev_budget=SEV_BUDGET)
    shown = at.dataframe[1].value  # the comparison, the differences, the leaves
    np.testing.assert_allclose(shown["equalised odds difference"], want.differences()["equalised odds difference"])
    tree = error_tree(demo)
    top = tree.leaves[0]
    at.button(key=f"ch_leaf_{top.node}").click().run()
    made = at.session_state["cohorts"][-1]
    assert np.array_equal(made.rows(demo), leaf_cohort(tree, top.node).rows(demo))
    key, part = at.session_state[REPORT_KEY]
    assert key == demo.key and part.comparison is not None and part.errors == tree
    assert [x.split for x in part.fairness.splits] == ["sex", "age", "young", made.name]  # recomputed with the leaf
    report = build_row_report(RowResults(demo, int(demo.test_rows[0]), Parameters(), supply={"cohorts": part}), ["sev"])
    assert report.contents()[-1][0] == "2. Cohorts and fairness" and "fairness" in report.figures
    at.switch_page("app_pages/report.py").run()
    assert not at.exception and not at.error


@pytest.mark.slow
def test_kept_cohorts_come_back_after_a_reload(demo):
    at = cohorts_page()
    keep_young(at)
    token = at.query_params.get("session")
    token = token[0] if isinstance(token, list) else token
    assert token
    again = cohorts_page(session=token)
    assert again.session_state["cohorts"] == (YOUNG,)
    assert "young" in "\n".join(m.value for m in again.markdown)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["german_credit", "california_housing"])
def test_the_page_works_on_a_wide_demo_and_a_regression(name):
    at = cohorts_page()
    at.switch_page("app_pages/home.py").run()
    at.selectbox(key="home_demo").select(name).run()
    at.button(key="home_load").click().run()
    at.switch_page("app_pages/cohorts.py").run()
    setup = at.session_state["setup"]
    assert setup.dataset.name == name
    at.checkbox(key="ch_shap").uncheck().run()  # the regression's SHAP is the permutation explainer's: minutes
    at.toggle(key="ch_compare").set_value(True).run()
    at.toggle(key="ch_fair").set_value(True).run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    tree = error_tree(setup)
    assert list(at.dataframe[-1].value["rows"]) == [leaf.size for leaf in tree.leaves]
    if setup.dataset.task == "regression":  # no protected feature on its card, no cohort: said in words
        assert any("No protected feature" in c.value for c in at.caption)


def test_the_page_in_a_browser(browser, streamlit_server, demo, page, wait_for_app, full_page_screenshot):
    """Build a cohort with the widgets, compare it, and make a cohort of the error tree's worst leaf (at 1280×800)."""
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(streamlit_server)
    wait_for_app(page)
    open_page(page, wait_for_app, "Cohorts & fairness")
    page.get_by_role("heading", name="Cohorts & fairness").wait_for()
    charts_drawn(page, "ch_tree_chart")
    page.locator(f".st-key-ch_feature{LIVE} [data-testid='stSelectbox']").click()
    page.get_by_role("option", name="age", exact=True).click()
    wait_for_app(page)
    page.locator(f".st-key-ch_op{LIVE} [data-testid='stSelectbox']").click()
    page.get_by_role("option", name="<", exact=True).click()
    wait_for_app(page)
    value = page.locator(f".st-key-ch_value_age_lt{LIVE} input")
    value.fill("25")
    value.press("Enter")
    wait_for_app(page)
    page.locator(f".st-key-ch_add{LIVE} button").click()
    wait_for_app(page)
    page.locator(f".st-key-ch_name{LIVE} input").fill("young")
    page.locator(f".st-key-ch_keep{LIVE} button").click()
    wait_for_app(page)
    rows = int((demo.dataset.features.iloc[demo.test_rows].age < 25).sum())
    page.get_by_text(f"{rows:,} test rows", exact=False).first.wait_for()
    page.locator(f".st-key-ch_compare{LIVE} label").click()
    wait_for_app(page)
    charts_drawn(page, "ch_comparison_charts", 2)
    top = error_tree(demo).leaves[0]
    page.locator(f".st-key-ch_leaf_{top.node}{LIVE} button").first.click()
    wait_for_app(page)
    page.get_by_text(f"error leaf {top.node}", exact=False).first.wait_for()
    no_error(page)
    shot(full_page_screenshot, page, "cohorts")


def test_fairness_in_a_browser(browser, streamlit_server, demo, page, wait_for_app):
    """The group metrics switched on: the reading of fairness_report's own result (the data card's protected
    features, the page's SEV budget and seed) under its chart."""
    from playwright.sync_api import expect

    report = fairness_report(demo, Parameters().sev, tuple(demo.dataset.restricted_suggestion), (),
                             sev_budget=SEV_BUDGET, seed=Parameters().seed)
    page.goto(streamlit_server)
    wait_for_app(page)
    open_page(page, wait_for_app, "Cohorts & fairness")
    page.get_by_role("heading", name="Fairness across groups").wait_for()
    page.locator(f".st-key-ch_fair{LIVE} label").click()
    wait_for_app(page)
    charts_drawn(page, "ch_fairness")
    expect(page.get_by_text(fairness_text(report))).to_be_visible()
    no_error(page)


def test_the_page_opens_on_the_misclassified_beside_the_rest(demo):
    """Issue 55: with no cohort kept the page showed only a form; it now offers a first comparison, the rows the
    model gets wrong beside those it gets right, counted here from the model's own labels."""
    at = cohorts_page()
    assert "cohorts" not in at.session_state or not at.session_state["cohorts"]
    assert "No cohort kept yet" in at.info[0].value
    at.toggle(key="ch_compare").set_value(True).run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    rows = np.asarray(demo.test_rows)
    wrong = demo.model.label(demo.dataset.features.iloc[rows]) != np.asarray(demo.dataset.y)[rows]
    assert list(table["cohort"]) == ["all test rows", "misclassified", "correctly classified"]
    assert list(table["test rows"]) == [len(rows), int(wrong.sum()), int((~wrong).sum())]
