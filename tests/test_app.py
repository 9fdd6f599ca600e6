"""Headless page tests of app.py (streamlit.testing.v1.AppTest) against explain_core computed independently."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import explain_core
from explain_core import IntakeError, demo_model, explain_sev, load_demo, make_reference

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 60
KIND_LABELS = {"minus": "SEV⁻", "plus": "SEV⁺", "restricted": "SEV®"}


@pytest.fixture(autouse=True)
def _isolated_cache(explain_cache_dir):
    """Every app run here trains/loads the demo model in the session's temporary cache."""


@pytest.fixture(scope="module")
def demo(explain_cache_dir):
    """The demo dataset, model and reference, loaded here independently of the app."""
    data = load_demo("compas")
    trained = demo_model(data, "gbdt")
    return data, trained, make_reference(data, trained.train_rows)


@pytest.fixture(scope="module")
def positive_rows(demo) -> list[int]:
    data, trained, _ = demo
    rows = trained.test_rows
    return [int(r) for r in rows[trained.model.label(data.features.iloc[rows]) == 1]]


def expected(demo, row, restricted=(), depth=6):
    data, trained, reference = demo
    return explain_sev(trained.model, data, data.features.iloc[[row]], reference,
                       restricted=tuple(restricted), max_depth=depth)


def run_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    return at


def sev_metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric if m.label in KIND_LABELS.values()}


def shown(result) -> str:
    if result.status == "explained":
        return str(result.value)
    return f"> {result.max_depth}" if result.status == "beyond_depth" else "none"


def assert_table_matches(displayed, table):
    """The displayed table has ex.table()'s rows and columns, with numbers rounded to 2 decimals."""
    assert list(displayed.index) == list(table.index)
    assert list(displayed.columns) == list(table.columns)
    for label in table.index:
        for column in table.columns:
            want, got = table.at[label, column], displayed.at[label, column]
            assert isinstance(got, str), (label, column, got)
            if isinstance(want, str):
                assert got == want, (label, column)
            else:
                assert math.isclose(float(got), round(float(want), 2), abs_tol=1e-9), (label, column, got, want)


def assert_shows(at, ex):
    kinds = ["minus", "plus"] + (["restricted"] if ex.restricted is not None else [])
    assert sev_metrics(at) == {KIND_LABELS[k]: shown(getattr(ex, k)) for k in kinds}
    captions = at.caption.values
    for k in kinds:
        assert getattr(ex, k).message in captions
    assert len(at.dataframe) == len(kinds)
    for frame, k in zip(at.dataframe, kinds):
        assert_table_matches(frame.value, ex.table(k))


def test_app_opens_on_compas_with_model_metrics(demo, positive_rows):
    at = run_app()
    assert not at.error
    assert at.title[0].value == "Explanation explorer"
    _, trained, _ = demo
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Test accuracy"] == f"{trained.metrics['test_accuracy']:.3f}"
    assert metrics["Test AUC"] == f"{trained.metrics['test_auc']:.3f}"
    select = at.selectbox(key="row")
    assert [int(o.split()[1]) for o in select.options] == positive_rows
    assert select.options[0].startswith(f"row {positive_rows[0]} · P(recid)=0.")
    assert at.multiselect(key="restricted").value == []
    assert at.slider(key="depth").value == 6
    assert any("—" in c and "reference" in c.lower() for c in at.caption.values)


def test_sev_values_and_tables_match_explain_core(demo, positive_rows):
    at = run_app()
    row = at.selectbox(key="row").value
    assert row == positive_rows[0]
    assert "SEV®" not in sev_metrics(at)
    assert_shows(at, expected(demo, row))


def test_choosing_another_row_updates(demo, positive_rows):
    at = run_app()
    first = expected(demo, positive_rows[0])
    values = {r: expected(demo, r) for r in positive_rows[1:40]}
    other = next(r for r, e in values.items() if (e.minus.value, e.plus.value) != (first.minus.value, first.plus.value))
    at.selectbox(key="row").select(other).run()
    assert not at.exception
    assert at.selectbox(key="row").value == other
    assert_shows(at, expected(demo, other))
    assert sev_metrics(at) != {"SEV⁻": shown(first.minus), "SEV⁺": shown(first.plus)}


def test_restricted_features_show_sev_r(demo, positive_rows):
    at = run_app()
    at.multiselect(key="restricted").set_value(["sex", "age"]).run()
    assert not at.exception
    ex = expected(demo, positive_rows[0], restricted=("sex", "age"))
    assert "SEV®" in sev_metrics(at)
    assert_shows(at, ex)
    table = at.dataframe[2].value
    assert (table.loc[[i for i in table.index if i.startswith("Explanation")], ["sex", "age"]] == "—").all().all()


def test_max_depth_limits_the_search(demo, positive_rows):
    at = run_app()
    at.slider(key="depth").set_value(1).run()
    assert not at.exception
    ex = expected(demo, positive_rows[0], depth=1)
    assert_shows(at, ex)


def test_intake_error_is_shown_without_traceback(monkeypatch):
    def refuse(*args, **kwargs):
        raise IntakeError("Cannot explain this row: test refusal.")

    monkeypatch.setattr(explain_core, "explain_sev", refuse)
    import streamlit as st

    st.cache_data.clear()
    try:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    finally:
        st.cache_data.clear()
    assert not at.exception
    assert [e.value for e in at.error] == ["Cannot explain this row: test refusal."]
    assert not sev_metrics(at)
