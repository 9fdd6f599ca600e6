"""Headless tests of the LENS and Linear pages (AppTest through app.py) against explain_core computed here."""
from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Block

from conftest import visible
from explain_core import analysis
from explain_core.analysis import Parameters
from explain_core.lens import shap_curve
from explain_core.views.linear import folded_weights

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 90
LABELS = {"iht": "IHT", "exact": "exact (MIP)", "lime": "LIME (k−1 + intercept)", "shap": "SHAP (dense)",
          "shap_k": "SHAP (top k−1 + bias)"}


@pytest.fixture(scope="module")
def setup(explain_cache_dir):
    """The default demo (COMPAS + gradient boosting), built here independently of the app."""
    return analysis.demo_setup()


# --- helpers -------------------------------------------------------------------------------------------------

def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def widget(at: AppTest, key: str):
    for kind in ("number_input", "slider", "radio", "selectbox", "text_input"):
        for w in getattr(at, kind):
            if w.key == key:
                return w
    raise KeyError(key)


def submit(at: AppTest, button: str, **widgets) -> AppTest:
    """Set form widgets by key (number inputs, sliders, radios, selectboxes, text inputs), then submit."""
    for key, value in widgets.items():
        widget(at, key).set_value(value)
    at.button(key=button).click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def block(at: AppTest, key: str) -> Block:
    """The container made with ``st.container(key=key)``."""
    def walk(node):
        if isinstance(node, Block):
            if str(getattr(node.proto, "id", "")).endswith(f"-{key}"):
                return node
            for child in node.children.values():
                found = walk(child)
                if found is not None:
                    return found
        return None
    found = walk(at.main)
    assert found is not None, f"no container {key!r}"
    return found


def decode(data) -> np.ndarray:
    """A plotly JSON array: a list, or a typed array {dtype, bdata[, shape]} (plotly ≥ 6)."""
    if isinstance(data, dict) and "bdata" in data:
        array = np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
        shape = data.get("shape")
        return array.reshape([int(n) for n in str(shape).split(",")]) if shape else array
    return np.asarray(data)


def chart(container: Block, i: int = 0) -> dict:
    return json.loads(container.get("plotly_chart")[i].proto.spec)


def lens_expected(setup, row, *, references=100, max_size=None, seed=0, direction="r2i", tau=0.9, alpha=None):
    query = setup.query(row)
    contexts = analysis.row_lens_contexts(setup, query, Parameters(lens_references=references,
                                                                   lens_max_size=max_size, seed=seed))
    return contexts[direction], analysis.lens_report(contexts[direction], Parameters(tau=tau, alpha=alpha))


def assert_factor_table(at: AppTest, result, exact=True):
    container = block(at, "lens_factors")
    assert len(container.dataframe) == 1
    shown = container.dataframe[0].value
    want = result.table()
    assert len(want) > 0
    assert shown["factor"].tolist() == want["factor"].tolist()
    assert shown["size"].tolist() == want["size"].tolist()
    assert np.allclose(shown["PS"].astype(float), want["PS"].astype(float))
    assert shown["hits / samples"].tolist() == [f"{h} / {n}" for h, n in zip(want["hits"], want["samples"])]
    assert np.allclose(shown["cost"].astype(float), want["cost"].astype(float))
    assert [None if pd.isna(r) else int(r) for r in shown["cheapest reference"]] == \
        [None if r is None else int(r) for r in want["reference"]]
    if exact:
        assert "p-value" not in shown.columns
    else:
        assert np.allclose(shown["p-value"].astype(float), want["p_value"].astype(float))
    metrics = {m.label: m.value for m in block(at, "lens_summary").metric}
    assert metrics["τ-minimal factors"] == str(len(result.factors))
    assert metrics["Cumulative PN"] == f"{result.cumulative_pn:.3f}"


# --- LENS ----------------------------------------------------------------------------------------------------

def test_lens_page_default_matches_explain_core(setup):
    at = open_page("app_pages/lens.py")
    row = at.session_state["row"]
    context, report = lens_expected(setup, row)
    assert_factor_table(at, report.factors)

    curve = chart(block(at, "lens_curve"))["data"][0]
    assert np.allclose(decode(curve["x"]), report.pn_curve["tau"])
    assert np.allclose(decode(curve["y"]), report.pn_curve["cumulative_pn"], equal_nan=True)

    shap = analysis.row_baselines(setup, setup.query(row), Parameters()).shap
    expected = shap_curve(context, shap)
    traces = {t["meta"]["column"]: t for t in chart(block(at, "lens_ps_by_size"))["data"]}
    assert np.allclose(decode(traces["lens_ps"]["y"]), expected["lens_ps"])
    assert np.allclose(decode(traces["attribution_ps"]["y"]), expected["attribution_ps"])
    assert list(decode(traces["attribution_ps"]["customdata"])) == \
        [", ".join(f) for f in expected["attribution_factor"]]

    # the answer comes first, in words, above the folded settings and every number
    best = min(report.factors.factors, key=lambda f: (len(f.groups), -f.ps))
    reading = visible(block(at, "lens_answer").markdown[0].value)
    names = " and ".join(best.groups) if len(best.groups) < 3 else None
    assert reading.startswith(f"**Setting {names or ''}") and " to this row's values is enough for the " in reading
    assert f"{best.ps:.0%} of the {best.samples} reference rows" in reading
    assert setup.dataset.class_name(context.input_class) in reading  # the data card's words for the class
    order = [type(c).__name__ if not str(getattr(c.proto, "id", "")).endswith("-lens_answer") else "answer"
             for c in at.main.children.values()]
    assert order.index("answer") < order.index("Expander")
    caption = visible(block(at, "lens_answer").caption[0].value)
    assert f"searched {len(context.masks):,} of {2 ** len(setup.dataset.groups):,} candidate factors" in caption
    metrics = {m.label: m.value for m in block(at, "lens_summary").metric}
    assert metrics["Factors searched"] == f"{len(context.masks):,}"  # the total is in its help: never cut off

    recourse = block(at, "lens_recourse").dataframe[0].value
    finite = sorted((f for f in report.recourse.factors if np.isfinite(f.cost)), key=lambda f: f.cost)
    assert recourse["factor"].tolist() == [", ".join(f.groups) for f in finite]
    assert np.allclose(recourse["cost"], [f.cost for f in finite])
    assert recourse["reference"].tolist() == [int(f.reference) for f in finite]
    assert list(recourse["cost"]) == sorted(recourse["cost"])


def test_lens_form_changes_tau_and_the_table_follows(setup):
    at = open_page("app_pages/lens.py")
    row = at.session_state["row"]
    before = block(at, "lens_factors").dataframe[0].value
    submit(at, "lens_submit", lens_tau=0.1, lens_references=40)
    params = at.session_state["params"]
    assert (params.tau, params.lens_references) == (0.1, 40)
    _, report = lens_expected(setup, row, references=40, tau=0.1)
    assert_factor_table(at, report.factors)
    assert not block(at, "lens_factors").dataframe[0].value.equals(before)

    # binomial test mode at level α: p-values appear and the accepted factors follow the test
    submit(at, "lens_submit", lens_mode="test", lens_alpha=0.05, lens_tau=0.5)
    _, report = lens_expected(setup, row, references=40, tau=0.5, alpha=0.05)
    assert at.session_state["params"].alpha == 0.05
    assert_factor_table(at, report.factors, exact=False)


def test_lens_no_factor_reaching_tau_shows_a_message(setup):
    at = open_page("app_pages/lens.py")
    row = at.session_state["row"]
    submit(at, "lens_submit", lens_direction="i2r", lens_max_size=1, lens_references=40)
    assert at.session_state["params"].lens_max_size == 1
    context, report = lens_expected(setup, row, references=40, max_size=1, direction="i2r")
    assert context.ps.max() < 0.9 and not report.factors.factors  # the premise: no single feature reaches τ
    container = block(at, "lens_factors")
    assert len(container.dataframe) == 0 and len(container.info) == 1
    answer = block(at, "lens_answer")  # the answer first, and what to change, named as on the form
    reading = visible(answer.markdown[0].value)
    assert reading.startswith("**No set of up to 1 feature is enough for the prediction")
    best = int(np.argmax(context.ps))
    assert f"the closest, {' and '.join(context.factor(best))}, is enough in {context.ps[best]:.0%}" in reading
    assert not answer.info and sum("No set of up to" in visible(m.value) for m in at.markdown) == 1  # said once
    advice = visible(answer.caption[-1].value)
    form = {w.label for kind in ("slider", "number_input", "radio") for w in getattr(at, kind)}
    for control in ("τ (sufficiency threshold)", "References", "Context"):
        assert f"**{control}**" in advice and control in form
    lower = np.floor(context.ps[best] * 100) / 100
    buttons = {b.label: b for b in answer.button}
    assert set(buttons) == {"Search factors of up to 2 features", f"Lower τ to {lower:g} (the best PS found)"}
    assert not block(at, "lens_recourse").dataframe and block(at, "lens_recourse").info
    buttons[f"Lower τ to {lower:g} (the best PS found)"].click().run()  # the next step, as a button: it works
    assert not at.exception and at.session_state["params"].tau == lower
    assert context.factor(best) in {f.groups for f in lens_expected(setup, row, references=40, max_size=1,
                                                                      direction="i2r", tau=lower)[1].factors.factors}
    assert block(at, "lens_factors").dataframe[0].value["factor"].tolist()
    at.switch_page("app_pages/lens.py").run()  # back to the premise for the checks below
    submit(at, "lens_submit", lens_tau=0.9)
    # the curve and the LENS-vs-SHAP chart still draw (PS of single features only)
    assert list(decode(chart(block(at, "lens_ps_by_size"))["data"][0]["x"])) == [1]


# --- Linear --------------------------------------------------------------------------------------------------

def linear_expected(setup, row, **params):
    return analysis.row_linear(setup, setup.query(row), Parameters(**params))


def assert_weights_chart(at: AppTest, report):
    spec = chart(block(at, "lin_weights"))
    weights = report.weights()
    kept = folded_weights(weights)
    kept = kept.loc[(kept.abs() > 1e-12).any(axis=1)]
    sparse = weights.drop(columns="shap")
    assert set(kept.index) - {i for i in kept.index if i.startswith("others")} == \
        set(sparse.index[(sparse.abs() > 1e-12).any(axis=1)])  # the literals some k-sparse explainer uses
    assert len(kept) <= len(sparse.columns) * report.comparison.k + 1
    assert [t["name"] for t in spec["data"]] == [LABELS[m] for m in weights.columns]
    for trace, method in zip(spec["data"], weights.columns):
        assert list(decode(trace["y"])) == list(kept.index)
        assert np.allclose(decode(trace["x"]), kept[method].to_numpy(), atol=1e-9), method


def test_linear_page_default_matches_explain_core(setup):
    at = open_page("app_pages/linear.py")
    row = at.session_state["row"]
    report = linear_expected(setup, row)
    assert_weights_chart(at, report)

    shown = block(at, "lin_metrics").dataframe[0].value  # one column per explainer: it fits the page
    table = report.comparison.table()
    assert list(shown.columns) == [LABELS[m] for m in table.index]
    for column, label in (("fidelity", "fidelity F (fresh sample)"), ("relevance", "relevance R"),
                          ("anchoring_gap", "|w·x − f(x)|"), ("bound", "(1+e^−σ)^k · F")):
        got = shown.loc[label].replace("—", "nan").astype(float)
        assert np.allclose(got, table[column].astype(float), atol=5e-5, equal_nan=True), column
    assert shown.loc["exact fit status", "exact (MIP)"] in ("optimal", "time_limit")
    summary = visible(block(at, "lin_weights").caption[0].value)  # the chart in words
    assert summary.startswith("Weights — IHT: ") and "SHAP (dense): " in summary

    metrics = {m.label: m.value for m in block(at, "lin_highlights").metric}
    exact = next(r for r in report.comparison.results if r.method == "exact")
    assert metrics["exact (MIP): fidelity F"] == f"{exact.scores.fidelity:.4f}"
    assert metrics["exact (MIP): relevance R"] == f"{exact.scores.relevance.value:.4f}"
    assert metrics["exact (MIP): certificate"] == ("optimal" if "optimal" in exact.detail else metrics[
        "exact (MIP): certificate"])
    text = " ".join(visible(m.value) for m in block(at, "lin_space").markdown)
    # the lead sentence names the features its rule weights, as the chart's bars of that rule do (issue 55: on
    # row 16 sex is at the reference, has no literal, and the sentence named it)
    [label] = re.findall(r"The best rule here \((.+?)\) uses", text)
    used = text.split(f"({label}) uses ", 1)[1].split(";", 1)[0]
    bars = next(t for t in chart(block(at, "lin_weights"))["data"] if t["name"] == label)
    drawn = {y.split(" = ")[0].removeprefix("keeps ") for y, x in zip(bars["y"], decode(bars["x"]))
             if abs(x) > 1e-12 and y.startswith("keeps ")}
    assert drawn and {g for g in setup.dataset.group_names if re.search(rf"\b{g}\b", used)} == drawn, text
    assert "z_j = −1 moves that feature to the reference" in text
    assert "f(z) = +1 when the model predicts this row's class" in text
    from explain_core.linear.guarantees import samples_needed
    d = len(report.names)  # the row's literals, bias included (a feature at the reference has none)
    assert f"over d = {d} literals" in text
    c = report.comparison
    assert f"m ≥ {samples_needed(c.k, d, c.sigma, 0.1, 0.05):,} for the exact fit" in text  # PLE Theorem 2


def test_linear_form_changes_k_sigma_and_the_sweep(setup):
    at = open_page("app_pages/linear.py")
    row = at.session_state["row"]
    before = chart(block(at, "lin_weights"))
    submit(at, "lin_submit", lin_k=3, lin_sigma=0.5, lin_m=2000, lin_method="iht")
    p = at.session_state["params"]
    assert (p.k, p.sigma, p.m, p.linear_method) == (3, 0.5, 2000, "iht")
    report = linear_expected(setup, row, k=3, sigma=0.5, m=2000, linear_method="iht")
    assert_weights_chart(at, report)
    assert chart(block(at, "lin_weights"))["data"] != before["data"]
    labels = [m.label for m in block(at, "lin_highlights").metric]
    assert "IHT: fidelity F" in labels and not any(label.startswith("exact") for label in labels)
    iht = next(r for r in report.comparison.results if r.method == "iht")
    assert int((np.abs(iht.w) > 1e-12).sum()) <= 3

    submit(at, "lin_sweep_run", lin_sweep_parameter="k", lin_sweep_values="1, 2")
    expected = analysis.linear_sweep(setup, setup.query(row), p, "k", [1, 2]).summary("relevance")
    traces = {t["name"]: t for t in chart(block(at, "lin_sweep"))["data"]}
    assert set(traces) == {LABELS[m] for m in expected["method"]}
    for method, part in expected.groupby("method"):
        trace = traces[LABELS[method]]
        assert list(decode(trace["x"])) == [1, 2]
        assert np.allclose(decode(trace["y"]), part.sort_values("k")["mean"])

    # a sweep stays until the parameters change; then the page asks for a new one instead of recomputing
    at.run()
    assert block(at, "lin_sweep").get("plotly_chart")
    submit(at, "lin_submit", lin_k=4)
    assert not block(at, "lin_sweep").get("plotly_chart") and block(at, "lin_sweep").info


def test_sweep_values_are_checked():
    at = open_page("app_pages/linear.py")
    at.text_input(key="lin_sweep_values").input("1, two")
    at.button(key="lin_sweep_run").click().run()
    assert not at.exception
    assert any("numbers separated by commas" in visible(e.value) for e in at.error)
    assert "lin_sweep_request" not in at.session_state


def test_lens_page_on_wide_data_searches_and_compares_the_causal_context(explain_cache_dir):
    """German credit (20 features): the layered search by default, then the causal context of the paper's graph."""
    from explain_core.lens.causal import ScmSettings, differences, german_graph, german_layered_graph

    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.session_state["params"] = Parameters(lens_references=30, tau=0.6, lime_samples=500)
    at.selectbox(key="home_demo").select("german_credit").run()
    at.selectbox(key="home_kind").select("gbdt").run()
    at.button(key="home_load").click().run()
    at.switch_page("app_pages/lens.py").run()
    assert not at.exception, at.exception
    setup, row, p = at.session_state["setup"], at.session_state["row"], at.session_state["params"]
    report = analysis.row_lens(setup, setup.query(row), p)
    assert report.note and (report.note in [i.value for i in block(at, "lens_summary").info]) == \
        bool(report.factors.factors)  # with no factor, the answer says so once
    found = analysis.row_lens_search(setup, setup.query(row), p)
    assert found.candidates == 2 ** 20 and found.budget_rows == p.lens_budget_rows
    assert f"searched {found.searched:,} of {2 ** 20:,} candidate factors" in \
        visible(block(at, "lens_answer").caption[0].value)
    if report.factors.factors:
        assert_factor_table(at, report.factors)
    at.button(key="lens_causal_submit").click().run()
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    query, base = setup.query(row), Parameters(lens_references=30, seed=p.seed)
    want = differences(analysis.row_lens_contexts(setup, query, base)["r2i"],
                       analysis.row_lens_causal(setup, query, base, german_graph())["r2i"], p.tau)
    shown = block(at, "lens_causal").dataframe[0].value
    assert len(want) > 0 and shown["factor"].tolist() == want["factor"].tolist()
    assert shown["minimal in"].tolist() == want["minimal in"].tolist()
    assert np.allclose(shown["PS causal"].astype(float), want["PS causal"].astype(float))
    nodes = chart(block(at, "lens_causal"))["data"][0]
    assert sorted(nodes["text"]) == sorted({n for e in german_graph().edges for n in e})
    factor = at.selectbox(key="lens_causation_factor").value  # Pearl's PN, PS, PNS of the first τ-minimal factor
    pearl = analysis.row_causation(setup, query, base, german_graph(), ScmSettings(), tuple(factor.split(", ")))
    assert factor in want["factor"].tolist()
    shown = block(at, "lens_causal").dataframe[1].value
    assert np.allclose(shown["SCM"].astype(float), pearl.table()["SCM"].astype(float), equal_nan=True)
    assert np.allclose(shown["lower bound"].astype(float), pearl.table()["lower bound"], equal_nan=True)
    assert any("necessity (PN)" in visible(m.value) for m in block(at, "lens_causal").markdown)
    at.radio(key="lens_graph_preset").set_value("Fig. 5 by layers").run()  # the named alternative, sampled as
    at.selectbox(key="lens_scm_propagate").select("later")                  # the authors' code does, in the form
    at.button(key="lens_causal_submit").click().run()
    assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
    want = differences(analysis.row_lens_contexts(setup, query, base)["r2i"],
                       analysis.row_lens_causal(setup, query, base, german_layered_graph(),
                                                ScmSettings(propagate="later"))["r2i"], p.tau)
    shown = block(at, "lens_causal").dataframe[0].value
    assert shown["factor"].tolist() == want["factor"].tolist()
    assert np.allclose(shown["PS causal"].astype(float), want["PS causal"].astype(float))
    assert any("every later feature (the authors' code)" in visible(c.value) for c in block(at, "lens_causal").caption)


def test_a_long_lens_search_waits_for_its_button(explain_cache_dir, monkeypatch):
    """Wide data (German credit, 20 features): a search planned over the page's row bound shows its work on a button
    ("Find factors — about N model rows") and starts only on a click; it scores no more than the plan said."""
    from ui import lens_runs

    monkeypatch.setattr(lens_runs, "AUTO_ROWS", 10)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.session_state["params"] = Parameters(lens_references=30, tau=0.6, lime_samples=500)
    at.selectbox(key="home_demo").select("german_credit").run()
    at.selectbox(key="home_kind").select("gbdt").run()
    at.button(key="home_load").click().run()
    at.switch_page("app_pages/lens.py").run()
    assert not at.exception, at.exception
    setup, row, p = at.session_state["setup"], at.session_state["row"], at.session_state["params"]
    plan = analysis.row_lens_plan(setup, setup.query(row), p)
    button = at.button(key="lens_find")
    assert button.label == f"Find factors — about {plan.rows:,} model rows" and plan.rows > 10
    assert not [c for c in at.main.children.values() if str(getattr(c.proto, "id", "")).endswith("-lens_summary")]
    button.click().run()
    assert not at.exception and block(at, "lens_summary").metric
    assert analysis.row_lens_search(setup, setup.query(row), p).rows_scored <= plan.rows
