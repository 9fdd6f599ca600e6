"""Every long run has a Stop button (ui/stops.py): what a click leaves on each page (AppTest), and, in a browser,
that a click stops a run in progress.

AppTest draws a page to its end, and a finished run removes its Stop button; here the button's slot keeps it (the
module's ``st`` is wrapped in the test), so the real button, with its real callback, is clicked after the run and
the page's next run is read: the run is not started again (its toggle off, its request dropped) and a toast names
it; a run the page starts by itself (LENS) is shown as stopped until "Run it again"."""
from __future__ import annotations

import re
import time
import types
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from conftest import RERUN_TIMEOUT_MS, visible
from ui import stops
from test_browser import LIVE, no_error, open_page as open_browser_page

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 90


class SlotsThatKeep:
    """``streamlit`` for ui/stops.py, whose placeholders keep the Stop button after the run."""

    def __getattr__(self, name):
        return getattr(st, name)

    @staticmethod
    def empty():
        slot = st.empty()
        return types.SimpleNamespace(button=slot.button, empty=lambda: None)


@pytest.fixture
def kept(monkeypatch):
    monkeypatch.setattr(stops, "st", SlotsThatKeep())


def fine(at: AppTest) -> AppTest:
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    return at


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    return fine(at.switch_page(page).run())


def click_the_stop(at: AppTest) -> str:
    """Click the page's one Stop button (a run finished before in the session draws none); the toast's words."""
    [button] = [b for b in at.button if b.key and b.key.startswith("stop_")]
    fine(button.click().run())
    [toast] = [visible(t.value) for t in at.toast]
    return toast


def stopped(what: str) -> str:
    return f"Stopped: {what}. Nothing of it was kept."


def test_the_sev_pages_dataset_views_and_flip_numbers_stop(explain_cache_dir, kept):
    at = open_page("app_pages/sev.py")
    toggle = f"sev_wide_on_{at.session_state['setup'].key}"
    assert at.toggle(key=toggle).value  # on by default on COMPAS's 7 features
    assert click_the_stop(at).startswith("Stopped: SEV of ")
    assert at.toggle(key=toggle).value is False
    assert any("turn the view on" in c.value for c in at.caption)

    toggle = f"ref_wide_{at.session_state['setup'].key}"  # the kinds of reference over the flagged rows
    fine(at.toggle(key=toggle).set_value(True).run())
    assert click_the_stop(at).startswith("Stopped: every kind of reference on ")
    assert at.toggle(key=toggle).value is False

    at.slider(key="sev_flip_n").set_value(5)
    fine(next(b for b in at.button if b.label == "Compute flip numbers").click().run())
    assert [m.label for m in at.metric if m.label.startswith("mean ")]  # drawn: the run finished here
    assert click_the_stop(at) == stopped("LIME-C and SHAP-C of 5 rows")
    assert "sev_flip_done" not in at.session_state
    assert not [m.label for m in at.metric if m.label.startswith("mean ")]


@pytest.mark.parametrize("page, toggle, what", [
    ("app_pages/cohorts.py", "ch_compare", "the comparison of the cohorts."),
    ("app_pages/cohorts.py", "ch_fair", "the group metrics."),
    ("app_pages/model_view.py", "mv_global", "SHAP of 200 rows and SEV of "),
])
def test_a_toggled_run_turns_its_toggle_off_when_stopped(explain_cache_dir, kept, page, toggle, what):
    at = open_page(page)
    fine(at.toggle(key=toggle).set_value(True).run())
    assert click_the_stop(at).startswith(f"Stopped: {what}")
    assert at.toggle(key=toggle).value is False


def test_the_linear_sweep_stops(explain_cache_dir, kept):
    at = open_page("app_pages/linear.py")
    at.text_input(key="lin_sweep_values").input("1, 2")
    fine(at.button(key="lin_sweep_run").click().run())
    assert click_the_stop(at) == stopped("the sweep of k (sparsity)")
    assert "lin_sweep_request" not in at.session_state


def test_a_stopped_lens_run_is_shown_as_stopped_until_run_again(explain_cache_dir, kept):
    at = open_page("app_pages/lens.py")
    answer = [visible(m.value) for m in at.markdown if m.value.startswith("**")]
    assert answer
    assert click_the_stop(at) == stopped("the LENS factors of this row")
    notice = "Stopped: the LENS factors of this row, before it finished"
    assert any(visible(i.value).startswith(notice) for i in at.info)
    assert not [m for m in at.markdown if visible(m.value) in answer]
    fine(at.switch_page("app_pages/compare.py").run())  # Compare reads the same run: stopped there too
    assert any(visible(i.value).startswith(notice) for i in at.info)
    assert [s.label for s in at.status] == ["Stopped at LENS"]
    fine(at.switch_page("app_pages/lens.py").run())
    [resume] = [b for b in at.button if b.key and b.key.startswith("resume_")]
    fine(resume.click().run())
    assert [visible(m.value) for m in at.markdown if m.value.startswith("**")] == answer
    assert not any(visible(i.value).startswith(notice) for i in at.info)


def test_stop_ends_a_training_run_in_progress_in_a_browser(browser, streamlit_server, page, wait_for_app,
                                                           explain_cache_dir):
    """Sparser model, 500 epochs with the SEV term: Stop, clicked while the progress bar runs, ends the run at its
    next step; nothing is kept and the page is ready for the next try."""
    from playwright.sync_api import expect

    page.goto(streamlit_server)
    wait_for_app(page)
    open_browser_page(page, wait_for_app, "Sparser model")
    page.locator(f".st-key-sparse_epochs{LIVE} input").fill("500")
    page.get_by_role("button", name="Train", exact=True).click()
    bar = page.locator('[data-testid="stProgress"]')
    expect(bar).to_contain_text(re.compile(r"epoch \d+ of \d+"), timeout=RERUN_TIMEOUT_MS)
    epoch, epochs = map(int, re.search(r"epoch (\d+) of (\d+)", bar.inner_text()).groups())
    page.locator(f'[class*="st-key-stop_"]{LIVE}').get_by_role("button", name="Stop").click()
    clicked = time.monotonic()
    expect(page.get_by_text("Stopped: training")).to_be_visible(timeout=RERUN_TIMEOUT_MS)
    wait_for_app(page)
    print(f"\nstopped at epoch {epoch} of {epochs}; the app was idle {time.monotonic() - clicked:.1f} s after the "
          "click")
    assert epoch < epochs
    assert page.locator(".st-key-sparse_table").count() == 0 and bar.count() == 0
    expect(page.get_by_text("Choose a base model and an objective, then train")).to_be_visible()
    no_error(page)
