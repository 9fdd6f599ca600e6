"""Explanations in words (explain_core.sev.readings), numbers by magnitude, one colour per method, LIME/SHAP
facets and the SHAP waterfall — checked against brute force on the COMPAS demo and against shap itself."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from explain_core.analysis import Parameters, demo_setup, predicted_rows, row_baselines, row_sev
from explain_core.vertices import mix
from explain_core.sev.readings import explanation_lines, line_sentence, summary_sentence
from explain_core.views.compare import attribution_figure, flip_figure, waterfall_figure
from explain_core.views.linear import sweep_figure, weights_figure
from explain_core.views.readings import counterfactual_reading
from explain_core.views.style import METHOD_COLOURS
from explain_core.vocabulary import METHOD_LABELS, count_noun, format_number, format_value


@pytest.fixture(scope="module")
def demo(explain_cache_dir):
    return demo_setup()


@pytest.fixture(scope="module")
def explained(demo):
    rows = [int(r) for r in predicted_rows(demo)[:12]]
    return [(r, row_sev(demo, demo.query(r), Parameters())) for r in rows]


@pytest.mark.parametrize("value, text", [(0.0, "0"), (-0.0, "0"), (-1e-12, "0"), (-0.001, "-0.001"),
                                         (36.654, "36.65"), (1.98, "1.98"), (0.01234, "0.0123"), (5.0, "5"),
                                         (12345.6, "12346"), (999.996, "1000"), (-0.004, "-0.004"), (0.5, "0.5")])
def test_numbers_are_formatted_by_magnitude_never_minus_zero(value, text):
    assert format_number(value) == text
    assert format_value(np.float64(value)) == text


def test_counts_read_in_the_right_number():
    """"1 feature", "2 features" (the pages and the PDF said "changes 1 feature(s)" and "1 τ-minimal factors")."""
    assert [count_noun(n, "feature") for n in (0, 1, 2, 1.0, 1200)] == ["0 features", "1 feature", "2 features",
                                                                         "1 feature", "1,200 features"]
    assert count_noun(1, "row", "rows") == "1 row" and count_noun(3, "analysis", "analyses") == "3 analyses"
    summary = pd.DataFrame({"points": [1, 1], "ℓ0": [1.0, 1.0], "ℓ∞ (SD)": [0.5, 0.7], "credibility": [0.4, 0.3],
                            "note": ["", ""]}, index=["SEV¹", "DiCE (random)"])
    text = counterfactual_reading(summary)
    assert "SEV¹ changes 1 feature," in text and "DiCE's 1 counterfactual changes" in text and "(s)" not in text


def brute_force_minimal(demo, ex, kind):
    """Every set of groups of minimal size whose move flips (SEV⁻) or reaches the row's class (SEV⁺), with the
    score there: the whole hypercube scored by the model."""
    layout, names = demo.dataset.layout, list(demo.dataset.layout.names)
    masks = np.array(list(itertools.product([False, True], repeat=len(names))))
    scores = demo.model.score(mix(layout, ex.query.to_frame().T[demo.dataset.columns], ex.reference, masks))
    labels = demo.model.labels_of(scores)
    moved = ~masks if kind == "minus" else masks
    hit = labels != ex.explained_class if kind == "minus" else labels == ex.explained_class
    size = moved.sum(axis=1)
    best = size[hit].min()
    return {tuple(n for n, m in zip(names, row) if m): s for row, s in zip(moved[hit & (size == best)],
                                                                          scores[hit & (size == best)])}


def test_lines_are_every_minimal_explanation_with_its_moves_and_score(demo, explained):
    checked = 0
    for _, ex in explained:
        for kind in ("minus", "plus"):
            result = getattr(ex, kind)
            if not result.explainable or result.value == 0:
                continue
            lines = explanation_lines(ex, kind, demo.model.threshold)
            truth = brute_force_minimal(demo, ex, kind)
            assert {line.groups for line in lines} == set(truth)
            row, ref = ex.layout.values(ex.query.to_dict()), ex.layout.values(ex.reference.values)
            before, after = (row, ref) if kind == "minus" else (ref, row)
            for line in lines:
                assert np.isclose(line.score, truth[line.groups])
                assert [(m.before, m.after) for m in line.moves] == [(format_value(before[g]), format_value(after[g]))
                                                                     for g in line.groups]
            # strongest flip first: furthest beyond the threshold on the side reached
            side = -1 if kind == "minus" else 1
            margins = [side * (line.score - demo.model.threshold) for line in lines]
            assert margins == sorted(margins, reverse=True)
            checked += 1
    assert checked >= 10


def test_sentence_names_only_the_moved_features(demo, explained):
    _, ex = explained[0]
    lines = explanation_lines(ex, "minus", demo.model.threshold)
    sentence = line_sentence(lines[0], ex.minus, demo.class_names, demo.score_text)
    assert sentence.startswith(lines[0].changes)  # only the moved groups, each once with its arrow
    assert sentence.count("→") == len(lines[0].groups) < len(demo.dataset.group_names)
    assert "flips the prediction to" in sentence
    assert str(len(lines)) in summary_sentence(ex.minus, lines) or len(lines) == 1


def test_plus_table_lists_explanations_in_order(demo, explained):
    ex = next(ex for _, ex in explained if len(ex.plus.explanations) > 1)
    index = list(ex.table("plus").index)
    assert index[0] == "Reference" and index[-1] == "Query"
    assert index[1:-1] == [f"Explanation {i}" for i in range(1, len(index) - 1)]


def test_one_colour_per_method_in_every_chart():
    weights = pd.DataFrame({"iht": [0.5, 0.2], "exact": [0.5, 0.1], "shap": [0.4, 0.0]}, index=["bias", "keeps a"])
    by_weights = {t.name: t.marker.color for t in weights_figure(weights.rename(columns=METHOD_LABELS)).data}
    summary = pd.DataFrame({"method": ["IHT", "exact (MIP)"], "k": [2, 2], "mean": [0.1, 0.1]})
    by_sweep = {t.name: t.line.color for t in sweep_figure(summary, "k").data}
    assert by_weights["IHT"] == by_sweep["IHT"] == METHOD_COLOURS["iht"]
    assert by_weights["exact (MIP)"] == by_sweep["exact (MIP)"] == METHOD_COLOURS["exact"]
    assert len(set(by_weights.values())) == 3
    flips = flip_figure(pd.DataFrame({"SEV⁻": [1, 2], "LIME-C": [2, 3], "SHAP-C": [1, 4]}))
    assert {t.name: t.marker.color for t in flips.data} == {"SEV⁻": METHOD_COLOURS["sev"], "LIME-C": METHOD_COLOURS[
        "lime"], "SHAP-C": METHOD_COLOURS["shap"]}


def test_lime_and_shap_facets_state_units_and_the_waterfall_adds_up_to_shap(demo, explained):
    row, _ = explained[0]
    base = row_baselines(demo, demo.query(row), Parameters())
    fig = attribution_figure(demo.dataset.group_names, {"LIME": base.lime.values, "SHAP": base.shap.values},
                             units={"LIME": base.lime.output, "SHAP": base.shap.output})
    bars = [t for t in fig.data if t.meta["role"] == "attribution"]
    assert [t.xaxis for t in bars] == ["x", "x2"]  # two facets, two axes
    assert fig.layout.xaxis.title.text == f"LIME attribution ({base.lime.output})"
    assert fig.layout.xaxis2.title.text == f"SHAP attribution ({base.shap.output})"
    water = waterfall_figure(demo.dataset.group_names, base.shap.values, base.shap.base_value,
                             output=base.shap.output, top=4)
    trace = water.data[0]
    assert np.isclose(trace.meta["total"], base.shap.base_value + base.shap.values.sum())
    assert np.isclose(sum(trace.x[:-1]), base.shap.values.sum())  # the "other features" bar sums the rest
    assert trace.measure[-1] == "total" and len(trace.y) == 4 + 1 + 1
    # TreeExplainer on log-odds: base + Σφ is the model's own log-odds of the row
    score = float(demo.model.score(demo.query(row))[0])
    assert np.isclose(trace.meta["total"], np.log(score / (1 - score)), atol=1e-6)


def test_lemma4_bound_and_caption_follow_each_w(demo, explained):
    """The old caption said dense SHAP is never covered while its w was anchored with 3 weights; coverage is
    now read off each w, the table's bound is blank where the lemma does not apply, and the caption agrees."""
    from explain_core.analysis import row_linear
    from explain_core.views.readings import lemma4_sentence

    row, _ = explained[0]
    comparison = row_linear(demo, demo.query(row), Parameters(m=1000, linear_method="iht", k=4)).comparison
    table, coverage = comparison.table(), comparison.bound_coverage()
    for r in comparison.results:
        anchored = r.scores.anchoring_gap <= 1e-9
        sparse = np.count_nonzero(np.abs(r.w) > 1e-12) <= comparison.k
        assert (coverage[r.method] == "covered") == (anchored and sparse)
        assert np.isnan(table.loc[r.method, "bound"]) == (coverage[r.method] != "covered")
    sentence = lemma4_sentence(coverage, comparison.k, comparison.sigma)
    for method in coverage:
        assert METHOD_LABELS[method] in sentence
    assert "not computed" not in sentence


def test_paths_follow_the_model_to_the_flip(demo, explained):
    """The large-p path view: each point is the model's score at that vertex, the last one flips."""
    from explain_core.views.sev import path_scores, paths_figure

    names = list(demo.dataset.layout.names)
    checked = 0
    for _, ex in explained:
        for kind in ("minus", "plus"):
            result = getattr(ex, kind)
            if not result.explainable or not result.value or result.value < 2:
                continue
            start = (ex.score if kind == "minus"
                     else float(demo.model.score(ex.reference.as_frame(demo.dataset.columns))[0]))
            for groups in result.explanations[:3]:
                scores = path_scores(result, names, groups, start)
                assert len(scores) == len(groups) + 1 and scores[0] == pytest.approx(start)
                flipped = demo.model.labels_of(np.array(scores))
                reached = 1 - ex.explained_class if kind == "minus" else ex.explained_class
                assert flipped[-1] == reached and (flipped[:-1] != reached).all()  # minimal: no earlier flip
                mask = np.isin(names, list(groups))
                last = mix(demo.dataset.layout, ex.query.to_frame().T[demo.dataset.columns], ex.reference,
                           (~mask if kind == "minus" else mask)[None, :])
                assert scores[-1] == pytest.approx(float(demo.model.score(last)[0]))
            fig = paths_figure(result, names, start, demo.model.threshold, top=2)
            paths = [t for t in fig.data if t.meta and t.meta["role"] == "paths"]
            assert len(paths) == min(2, len(result.explanations))
            checked += 1
    assert checked >= 2


def test_flip_chart_orders_values_and_not_explained_last():
    fig = flip_figure(pd.DataFrame({"SEV⁻": [1, 2, 2], "LIME-C": [2, 3, None], "SHAP-C": [1, 4, 2]}))
    assert list(fig.layout.xaxis.categoryarray) == ["1", "2", "3", "4", "not explained"]


def test_regression_reference_is_from_the_other_side_and_the_report_says_above_below(explain_cache_dir):
    from explain_core.report import RowResults, build_row_report

    setup = demo_setup("student_performance_math", "gbdt")
    t = setup.model.threshold
    for row in [int(r) for r in setup.test_rows[:8]]:
        ex = row_sev(setup, setup.query(row), Parameters())
        side = ex.explained_class  # 1: predicted at or above the threshold
        assert f"{'<' if side == 1 else '≥'} {t:.4g}" in ex.reference.description  # rows of the other side
        reference_side = int(setup.model.score(ex.reference.as_frame(setup.dataset.columns))[0] >= t)
        assert (ex.plus.value == 0) == (reference_side == side)
    report = build_row_report(RowResults(setup, int(setup.test_rows[0]),
                                         Parameters(m=500, lens_references=20, lime_samples=300)), ("sev",))
    side = "at or above" if report.label == 1 else "below"
    assert report.title.startswith(f"Why is the predicted {setup.dataset.target.name} {side} the threshold")
