"""The analysis layer: setups, parameters, per-row runs and the feature × method agreement, checked against
the methods called directly."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from explain_core import IntakeError, SEVParameters, explain_sev, make_reference, sev_batch
from explain_core.analysis import (Parameters, agreement, dataset_sev, demo_setup, flip_numbers, lens_report,
                                   predicted_rows, row_baselines, row_lens_contexts, row_linear, row_sev)
from explain_core.intake.layout import GroupLayout


@pytest.fixture(scope="module")
def demo(explain_cache_dir):
    return demo_setup()


@pytest.fixture(scope="module")
def row(demo) -> int:
    return int(predicted_rows(demo)[0])


def test_setup_key_tracks_content_not_restricted(demo):
    assert demo.key == demo_setup().key
    assert demo.with_restricted(["sex"]).key == demo.key
    moved = dict(demo.reference.values, age=99)
    assert demo.with_reference(replace(demo.reference, values=moved)).key != demo.key
    assert demo_setup("compas", "l2_lr").key != demo.key
    with pytest.raises(IntakeError, match="not in the data"):
        demo.query(len(demo.dataset.features))
    with pytest.raises(IntakeError):
        demo.with_restricted(["no such feature"])


@pytest.mark.parametrize("bad", [dict(k=0), dict(m=5), dict(sigma=-1), dict(lens_direction="x"),
                                 dict(linear_method="lasso"), dict(max_depth=0)])
def test_parameters_are_validated(bad):
    with pytest.raises(IntakeError):
        Parameters(**bad)


def test_predicted_rows_are_test_rows_with_that_label(demo):
    rows = predicted_rows(demo)
    assert set(rows) <= set(demo.test_rows)
    labels = demo.model.label(demo.dataset.features.iloc[demo.test_rows])
    assert list(rows) == list(demo.test_rows[labels == 1])
    assert len(predicted_rows(demo, label=0)) + len(rows) == len(demo.test_rows)


def test_dataset_sev_equals_one_row_at_a_time(demo):
    rows = predicted_rows(demo)[:40]
    held = demo.with_restricted(["age"])
    wide = dataset_sev(held, rows, Parameters(max_depth=4))
    for r, result in zip(rows, wide.results):
        one = explain_sev(demo.model, demo.dataset, demo.query(int(r)), demo.reference, restricted=("age",),
                          options=SEVParameters(max_depth=4)).restricted
        assert (result.value, result.explanations, result.status) == (one.value, one.explanations, one.status)
    plus = dataset_sev(held, rows, Parameters(), kind="plus")
    assert plus.values == [explain_sev(demo.model, demo.dataset, demo.query(int(r)), demo.reference).plus.value
                           for r in rows]


def test_flip_numbers_are_the_baselines_flip_paths(demo):
    rows = predicted_rows(demo)[:4]
    p = Parameters(lime_samples=1000)
    table = flip_numbers(demo.with_restricted(["age"]), rows, p)  # SEV⁻ column ignores restricted features
    for r in rows:
        b = row_baselines(demo, demo.query(int(r)), p)
        minus = sev_batch(demo.model, GroupLayout.of(demo.dataset), demo.query(int(r)), demo.reference)[0].value
        assert list(table.loc[int(r)]) == [minus, b.lime_flip.count, b.shap_flip.count]
        assert table.loc[int(r), "LIME-C"] >= minus and table.loc[int(r), "SHAP-C"] >= minus


def test_agreement_reads_each_method_as_documented(demo, row):
    q, p = demo.query(row), Parameters(m=2000, lens_references=50)
    held = demo.with_restricted(["sex"])
    ex = row_sev(held, q, p)
    lens = lens_report(row_lens_contexts(demo, q, p)["r2i"], p)
    lin = row_linear(demo, q, p)
    base = row_baselines(demo, q, p)
    a = agreement(demo.dataset.group_names, sev=ex, lens=lens.factors, linear=lin, baselines=base, top=2)
    m = a.matrix()
    assert list(m.index) == demo.dataset.group_names
    for label, result in (("SEV⁻", ex.minus), ("SEV⁺", ex.plus), ("SEV®", ex.restricted)):
        assert set(m.index[m[label]]) == {g for e in result.explanations for g in e}
    smallest = min(len(f.groups) for f in lens.factors.factors)
    assert set(m.index[m["LENS R2I"]]) == {g for f in lens.factors.factors if len(f.groups) == smallest
                                           for g in f.groups}
    for method, column in (("iht", "Linear IHT"), ("exact", "Linear exact")):
        w = lin.weights()[method].to_numpy()
        assert set(m.index[m[column]]) == {lin.groups[j - 1] for j in np.flatnonzero(w) if j > 0}
        assert m[column].sum() <= p.k - 1
    for att in (base.lime, base.shap):
        top = np.argsort(-np.abs(att.values), kind="stable")[:2]
        assert set(m.index[m[att.method]]) == {att.groups[i] for i in top if att.values[i] != 0}
    assert (a.counts() == m.sum(axis=1)).all()


def test_linear_report_weights_are_the_comparison(demo, row):
    lin = row_linear(demo, demo.query(row), Parameters(k=3, m=2000, linear_method="exact"))
    w = lin.weights()
    assert list(w.columns) == ["exact", "lime", "shap", "shap_k"]
    assert list(w.index) == list(lin.names) and lin.names[0].startswith("bias")
    for r in lin.comparison.results:
        assert np.array_equal(w[r.method].to_numpy(), r.w)
    assert (w["exact"] != 0).sum() <= 3
    exact = next(r for r in lin.comparison.results if r.method == "exact")
    assert exact.status == "optimal" and exact.gap == pytest.approx(0, abs=1e-9)  # d = 8: enumeration certifies
    assert all((r.status, r.gap) == ("", None) for r in lin.comparison.results if r.method != "exact")
    assert lin.comparison.table().at["exact", "status"] == "optimal"


def test_rows_predicted_negative_are_explained_against_the_other_class(demo):
    negative = int(predicted_rows(demo, label=0)[0])
    q = demo.query(negative)
    mirror = make_reference(demo.dataset, demo.train_rows, explain_class=0)
    assert demo.reference_for(q).values == mirror.values and demo.reference_for(q) is demo.reference_for(q)
    assert demo.reference_for(demo.query(int(predicted_rows(demo)[0]))) is demo.reference
    ex = row_sev(demo, q, Parameters())
    want = explain_sev(demo.model, demo.dataset, q, mirror)
    assert (ex.minus.value, ex.minus.explanations) == (want.minus.value, want.minus.explanations)
    assert ex.minus.explainable and ex.minus.explained_class == 0
    assert float(demo.model.score(mirror.as_frame(demo.dataset.columns))[0]) > demo.model.threshold
    both = dataset_sev(demo, [negative, int(predicted_rows(demo)[0])], Parameters())
    assert both.values[0] == ex.minus.value
    everyone = make_reference(demo.dataset, demo.train_rows, population="all")
    assert demo.with_reference(everyone).reference_for(q) is everyone  # a reference over all rows serves every row


def test_one_linear_pipeline_for_the_app_the_pdf_and_the_api(demo, row):
    """row_linear (the app's Linear page, the PDF) is explain_linear on the row's group space; its w, scores and
    certificate are its comparison's; compare() on the same space and seed gives the same fits."""
    from explain_core.analysis import linear_space
    from explain_core.linear import FittingOptions, LinearExplanation, compare, explain_linear

    q = demo.query(row)
    for method in ("both", "iht", "exact"):
        p = Parameters(k=3, m=600, linear_method=method)
        lin = row_linear(demo, q, p)
        at_reference = {g.name for g in demo.dataset.groups
                        if all(q[c].iloc[0] == demo.reference_for(q).values[c] for c in g.columns)}
        assert isinstance(lin, LinearExplanation) and at_reference
        assert lin.groups == tuple(g for g in demo.dataset.group_names if g not in at_reference)
        fitted = FittingOptions(methods=[r.method for r in lin.comparison.results])
        api = explain_linear(linear_space(demo, q), 3, 1.0, 600, seed=0, solver=lin.solver, options=fitted)
        comp = compare(linear_space(demo, q), 3, 1.0, 600, seed=0, options=fitted)
        for other in (api.comparison, comp):
            assert [r.method for r in other.results] == [r.method for r in lin.comparison.results]
            for a, b in zip(lin.comparison.results, other.results):
                assert np.array_equal(a.w, b.w) and a.scores.fidelity == b.scores.fidelity
        assert lin.solver == ("iht" if method == "iht" else "exact")
        chosen = lin.comparison.result(lin.solver)
        assert np.array_equal(lin.w, chosen.w) and lin.scores is chosen.scores
        assert (lin.exact is not None) == (method != "iht") and lin.iht is not None
        if lin.exact is not None:
            assert np.array_equal(lin.w, lin.exact.w) and lin.exact.certified
        assert lin.table()["contribution"].sum() == pytest.approx(lin.fx)
        assert lin.support_groups(lin.solver) == tuple(g for g, s in zip(lin.groups, lin.w[1:]) if s)
    with pytest.raises(IntakeError, match="solver 'exact' must be among the methods"):
        explain_linear(linear_space(demo, q), 3, m=200, options=FittingOptions(methods=("iht", "lime")))
    with pytest.raises(IntakeError, match="No .l1_relax. fit here"):
        row_linear(demo, q, Parameters(k=3, m=200, linear_method="iht")).comparison.result("l1_relax")
