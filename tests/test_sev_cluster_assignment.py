"""SEV^©'s assignment rules (issue 28): ``sparsest`` explains each row against the valid typical case it reaches by
changing the fewest features (of those, the one whose explanation lands most credibly, then the nearest by the
mixed distance); ``nearest`` against the nearest one.

Checked against a brute force that enumerates every subset of feature groups for every valid typical case and
scores the moved rows with the model; the one search over every typical case against each searched alone, and its
model calls (one per layer); row by row ``sparsest ≤ nearest`` on the same typical cases; every explanation
re-scored by the model flips; the rule used is on the result and in its JSON; the page's parameters round-trip
through a saved analysis."""
from __future__ import annotations

import io
import itertools

import numpy as np
import pandas as pd
import pytest

from explain_core.analysis import demo_setup, predicted_rows, reference_fits
from explain_core.references import (ASSIGNMENTS, DEFAULT_ASSIGNMENT, ClusterSEV, ReferenceFits, compare_kinds,
                                     explain_kind, fit_references)
from explain_core.references.prototypes import fewest, sparsest
from explain_core.references.search import SearchOptions, search, search_each
from explain_core.saved.recipe import AnalysisState, DataRecipe, ModelRecipe
from explain_core.setup import Parameters, ReferenceParameters


RULE_WORDS = {"sparsest": "sparsest of 8 typical cases", "nearest": "nearest typical case, the paper's rule"}


@pytest.fixture(scope="module")
def compas():
    return demo_setup("compas", "gbdt")


def queries_of(setup, n):
    return setup.dataset.features.iloc[predicted_rows(setup)[:n]]


def brute_force(setup, row: pd.Series, reference: dict, density, scales) -> tuple[int | None, float | None]:
    """By trying every subset of groups: the fewest groups whose move to ``reference``'s values flips the model's
    label, and the credibility of the closest such move (smallest ℓ∞, then ℓ1, in population SDs; the first in
    layout order on a tie)."""
    groups = setup.dataset.groups
    label = int(setup.model.label(row.to_frame().T.infer_objects())[0])
    for size in range(1, len(groups) + 1):
        subsets = list(itertools.combinations(groups, size))
        points = [{**row.to_dict(), **{c: reference[c] for g in subset for c in g.columns}} for subset in subsets]
        frame = pd.DataFrame(points, columns=setup.dataset.columns).infer_objects()
        flips = np.flatnonzero(setup.model.label(frame) != label)
        if len(flips):
            steps = [[abs(float(row[g.name]) - float(reference[g.name])) / scales[g.name] for g in subsets[j]
                      if g.kind == "numeric" and not g.is_block] for j in flips]
            closest = min(range(len(flips)), key=lambda j: (max(steps[j], default=0.0), sum(steps[j])))
            return size, float(density.percentile(frame.iloc[[flips[closest]]])[0])
    return None, None


def test_sparsest_is_the_minimum_over_typical_cases_by_brute_force(compas):
    """Value = min over the valid typical cases of the brute-force SEV; the typical case used is, of those attaining
    it, the one whose closest explanation lands most credibly, then the nearest (mixed distance); the explanation,
    re-scored by the model, flips."""
    s = compas
    depth = len(s.dataset.groups)
    fits = ReferenceFits(s, seed=0, assignment="sparsest")
    q = queries_of(s, 12)
    results = explain_kind(s, q, "cluster", fits, max_depth=depth)
    protos, density = fits[1].prototypes, fits[1].density
    valid, distance = protos.distances(q)
    assert len(valid) >= 2  # a real choice between typical cases
    for i, result in enumerate(results):
        per_case = [brute_force(s, q.iloc[i], protos.prototypes[k].reference.values, density, protos.space.scales)
                    for k in valid]
        sizes = np.array([np.inf if v is None else v for v, _ in per_case])
        assert (result.value if result.value is not None else np.inf) == sizes.min(), i
        attaining = np.flatnonzero(sizes == sizes.min())
        cred = np.array([-np.inf if per_case[j][1] is None else per_case[j][1] for j in attaining])
        most = attaining[cred == cred.max()]
        chosen = most[np.argmin(distance[i, most])]
        assert result.prototype == protos.prototypes[valid[chosen]].number, i
        assert result.assigned_distance == pytest.approx(distance[i, chosen])
        assert result.reference.values == protos.prototypes[valid[chosen]].reference.values
        assert result.assignment == "sparsest" and result.assignment_rule == ASSIGNMENTS["sparsest"]
        if result.value is not None:
            assert result.first.credibility == pytest.approx(cred.max())
            moved = {**q.iloc[i].to_dict(), **result.first.values}
            flipped = s.model.label(pd.DataFrame([moved], columns=s.dataset.columns).infer_objects())[0]
            assert flipped != result.explained_class and result.first.l0 == result.value


def typical_case_sets(fits):
    """The valid typical cases of class 1 and their candidates (as the sparsest rule searches them)."""
    valid = fits[1].prototypes.valid
    return valid, [fits[1].candidates(p) for p in valid]


@pytest.mark.parametrize("gate", [None, 0.3])
@pytest.mark.parametrize("restricted,depth", [((), 6), (("prior_offense_count",), 2)])
def test_one_search_over_every_typical_case_is_each_searched_alone(compas, gate, restricted, depth):
    """The typical cases searched together (:func:`search_each`) give, per typical case, what searching against it
    alone gives: values, flips, scores, credibility, the depth searched (per typical case); the sparsest rule's
    result is the least of them (credible first with a gate) against a typical case that attains it."""
    s = compas.with_restricted(restricted)
    fits = ReferenceFits(s, seed=0, assignment="sparsest")
    valid, sets = typical_case_sets(fits)
    q = queries_of(s, 30)
    options = {"restricted": restricted, "max_depth": depth, "density": fits[1].density, "threshold": gate,
               "classes": np.ones(len(q), int)}
    together = search_each(s.model, s.dataset.layout, q, sets, fits[1].space, SearchOptions(**options))
    alone = [search(s.model, s.dataset.layout, q, c, fits[1].space, **options) for c in sets]
    assert together == alone
    if not restricted:
        assert len({found[0].max_depth for found in alone}) > 1  # the typical cases' searches end at other depths
    key = [[(gate is not None and not f.credible, np.inf if f.value is None else f.value) for f in found]
           for found in alone]
    for i, result in enumerate(explain_kind(s, q, "cluster", fits, max_depth=depth, credible=gate)):
        chosen = [p.number for p in valid].index(result.prototype)
        assert key[chosen][i] == min(k[i] for k in key), i
        assert (result.value, result.credible) == (alone[chosen][i].value, alone[chosen][i].credible)


@pytest.mark.parametrize("gate", [None, 0.3])
def test_the_sparsest_rule_makes_one_model_call_per_layer(compas, monkeypatch, gate):
    """One row against the 8 typical cases: one model call for its label, then at most one per layer of the one
    search (as many layers as the typical case searched deepest alone needs; none for a layer with no new vertex),
    not one per typical case and layer."""
    s = compas
    fits = ReferenceFits(s, seed=0, assignment="sparsest")
    valid, sets = typical_case_sets(fits)
    assert len(valid) == 8
    calls = []
    scores_of = s.model.scores_of
    monkeypatch.setattr(s.model, "scores_of", lambda estimator, X: calls.append(len(X)) or scores_of(estimator, X))
    for i in range(5):
        q = queries_of(s, 5).iloc[[i]]
        layers = max(search(s.model, s.dataset.layout, q, c, fits[1].space, density=fits[1].density,
                            threshold=gate, classes=[1])[0].max_depth for c in sets)
        calls.clear()
        explain_kind(s, q, "cluster", fits, credible=gate)
        assert 1 < len(calls) <= 1 + layers, (i, calls)


@pytest.mark.parametrize("name,kind,shorter", [("compas", "gbdt", True), ("german_credit", "l2_lr", False)])
def test_sparsest_is_never_above_nearest_on_the_same_typical_cases(name, kind, shorter):
    """Every test row the model predicts positive: the same 4 typical cases, the sparsest rule ≤ the nearest
    (strictly on some COMPAS rows; German's few rows are all 1 either way); the nearest rule takes the nearest
    valid one."""
    s = demo_setup(name, kind)
    q = s.dataset.features.iloc[predicted_rows(s)]
    near = ReferenceFits(s, seed=0, clusters=4, assignment="nearest")
    sparse = ReferenceFits(s, seed=0, clusters=4, assignment="sparsest")
    a, b = (explain_kind(s, q, "cluster", fits) for fits in (near, sparse))
    assert [p.row for p in near[1].prototypes.prototypes] == [p.row for p in sparse[1].prototypes.prototypes]
    inf = len(s.dataset.groups) + 1
    assert all((y.value or inf) <= (x.value or inf) for x, y in zip(a, b))
    assert (sum((y.value or inf) < (x.value or inf) for x, y in zip(a, b)) > 0) == shorter
    assigned, _ = near[1].prototypes.assign(q)
    assert [r.prototype for r in a] == [near[1].prototypes.prototypes[k].number for k in assigned]
    assert {r.assignment for r in a} == {"nearest"} and {r.assignment for r in b} == {"sparsest"}


def test_credible_sparsest_prefers_typical_cases_that_pass_the_gate(compas):
    """With the credible search a typical case whose explanation passes beats one with only the fallback: where the
    nearest one passes, so does the sparsest rule's choice, and no typical case that passes is sparser."""
    s = compas
    q = queries_of(s, 60)
    near = explain_kind(s, q, "cluster", ReferenceFits(s, clusters=4, assignment="nearest"), credible=0.3)
    sparse = explain_kind(s, q, "cluster", ReferenceFits(s, clusters=4, assignment="sparsest"), credible=0.3)
    for x, y in zip(near, sparse):
        if x.credible:
            assert y.credible and y.value <= x.value


def test_sparsest_picks_by_gate_then_size_then_credibility_then_distance():
    """The choice by hand: NaN (nothing flips) ranks last; a passing case beats a failing one; ties by the higher
    credibility, then the smaller distance; :func:`fewest` marks the ties the credibility is needed for."""
    values = np.array([[2, 1, 1, np.nan], [np.nan, np.nan, 3, 3], [1, 1, 2, 2]])
    distance = np.array([[0, 5, 4, 1], [1, 1, 2, 1], [3, 3, 0, 0]])
    assert sparsest(values, distance).tolist() == [2, 3, 0]
    passed = np.array([[1, 1, 0, 1], [1, 1, 1, 1], [0, 0, 1, 1]], bool)
    assert sparsest(values, distance, passed).tolist() == [1, 3, 2]
    credibility = np.array([[0.9, 0.2, 0.1, np.nan], [0.5, 0.5, 0.3, 0.2], [0.1, 0.4, 0.9, 0.9]])
    assert sparsest(values, distance, None, credibility).tolist() == [1, 2, 1]
    assert fewest(values).tolist() == [[False, True, True, False], [False, False, True, True],
                                       [True, True, False, False]]
    assert fewest(values, passed).tolist() == [[False, True, False, False], [False, False, True, True],
                                               [False, False, True, True]]
    assert sparsest(np.zeros((0, 3)), np.zeros((0, 3))).tolist() == []


def test_the_rule_sets_the_number_of_typical_cases_and_is_recorded(compas):
    """K unset: 8 typical cases for the sparsest rule, the silhouette's number for the nearest; the rule in words
    on the prototype set, the result and the kinds table; results round-trip through JSON."""
    s = compas
    sparse = fit_references(s, 1, assignment="sparsest").prototypes
    near = fit_references(s, 1, assignment="nearest").prototypes
    assert len(sparse.prototypes) == 8 and sparse.assignment == ASSIGNMENTS["sparsest"]
    assert "medoid silhouette" in near.rule and near.assignment == ASSIGNMENTS["nearest"]
    with pytest.raises(Exception, match="assignment"):
        fit_references(s, 1, assignment="closest")
    fits = ReferenceFits(s, assignment="sparsest")
    table = compare_kinds(s, predicted_rows(s)[:10], fits, kinds=("cluster",))
    assert table.assignment == "sparsest" and table.meta["parameters"]["assignment"] == "sparsest"
    label = "SEV^© (sparsest of 8 typical cases)"
    assert list(table.results) == list(table.table.index) == [label]
    result = table.results[label][0]
    assert result.method == label and result.cases == len(sparse.prototypes)
    again = ClusterSEV.from_json(result.to_json())
    assert again.assignment == "sparsest" and again.prototype == result.prototype and again.method == label
    assert ReferenceParameters().cluster_assignment == DEFAULT_ASSIGNMENT == Parameters().cluster_assignment


def test_the_assignment_goes_through_the_parameters_and_a_saved_analysis(compas):
    s = compas
    for rule in ASSIGNMENTS:
        params = Parameters(reference_kind="cluster", cluster_assignment=rule)
        fits = reference_fits(s, params)
        assert fits[1].assignment == rule
        assert explain_kind(s, queries_of(s, 3), "cluster", fits)[0].assignment == rule
    state = AnalysisState.of(s, DataRecipe(demo="compas"), ModelRecipe(origin="demo", kind="gbdt", seed=0),
                             parameters=Parameters(cluster_assignment="nearest"), row=0)
    assert AnalysisState.from_json(state.to_json()).parameters.cluster_assignment == "nearest"


def test_the_sev_page_offers_the_rule_and_shows_the_one_used(explain_cache_dir):
    """The SEV page's typical cases: the assignment is a setting; the caption under the cards names the rule the
    result used, and the page's SEV^© is the library's for that rule."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from explain_core.analysis import row_reference_sev

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120).run()
    at.switch_page("app_pages/sev.py").run()
    at.radio(key="ref_kind").set_value("cluster").run()
    setup = at.session_state["setup"]
    query = setup.query(at.session_state["row"])
    for rule in ("sparsest", "nearest"):
        at.radio(key="ref_assignment").set_value(rule).run()
        assert not at.exception and not at.error, at.exception
        params = at.session_state["params"]
        assert params.cluster_assignment == rule
        want = row_reference_sev(setup, query, params, reference_fits(setup, params))
        assert want.assignment == rule
        captions = " ".join(c.value for c in at.caption)
        assert ASSIGNMENTS[rule].split(" (")[0] in captions.replace("\\", "")
        metric = next(m for m in at.metric if m.label == f"{want.method} (features changed)")
        assert metric.value == want.shown and RULE_WORDS[rule] in metric.label


def test_each_label_names_the_rule_that_answered(compas):
    """SEV^©'s label says which rule gave each row its typical case, on the result (``.method``), in the kinds
    table and in the PDF's counterfactuals section, for each rule; a credible search says so after it."""
    from pypdf import PdfReader

    from explain_core import report as rep
    from explain_core.references import kind_label

    s, rows = compas, predicted_rows(compas)[:4]
    for rule, words in RULE_WORDS.items():
        params = Parameters(cluster_assignment=rule, dice_count=1)
        table = compare_kinds(s, rows, reference_fits(s, params), kinds=("cluster",), credible=0.1)
        found = table.results[f"SEV^© ({words})"]
        assert {r.assignment for r in found} == {rule} and {r.method for r in found} == {f"SEV^© ({words})"}
        assert list(table.table.index) == [f"SEV^© ({words})", f"SEV^© ({words}) (credible)"]
        report = rep.build_row_report(rep.RowResults(s, int(rows[0]), params), ("counterfactuals",))
        method = next(m.method for m in report.counterfactuals.methods if m.method.startswith("SEV^©"))
        assert method == f"SEV^© ({words})"
        pdf = rep.write_pdf(report, image_renderer="matplotlib")
        text = " ".join(" ".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages).split())
        assert words in text and RULE_WORDS[next(r for r in RULE_WORDS if r != rule)] not in text
    assert kind_label("cluster", 0.1, "sparsest", 5) == "SEV^© (sparsest of 5 typical cases) (credible)"
    assert kind_label("cluster") == "SEV^©" and kind_label("flexible", 0.1) == "SEV^F (credible)"


def test_vertices_as_raw_rows_are_the_rows_built_one_by_one(compas):
    """The search's vertices as the model's raw input (numbers kept numeric, issue 52's Report on wide data) are the
    rows built one at a time: the query's values, each moved group's columns at its candidate's; same dtypes."""
    from explain_core.references.search import _Mixer, layer_moves

    layout = compas.dataset.layout
    fits = ReferenceFits(compas, seed=0, assignment="sparsest")
    _, sets = typical_case_sets(fits)
    q = queries_of(compas, 4)
    mixer = _Mixer(compas.model, layout, q, sets, fits[1].space)
    ids = layer_moves(range(layout.size), sets[0].sizes, mixer.offsets, 2)[0][::7]
    qi = np.arange(len(ids)) % len(mixer.query_of)
    rows = []
    for r in range(len(ids)):
        row = q.iloc[mixer.query_of[qi[r]]].to_dict()
        for slot in ids[r]:
            group = layout.groups[mixer.group_of[slot]]
            row.update({c: mixer.values[c][mixer.first[qi[r]] + slot] for c in group.columns})
        rows.append(row)
    want = pd.DataFrame(rows, columns=list(layout.columns)).infer_objects()
    got = mixer.raw(qi, ids)
    kinds = {mixer.native[c][1].dtype.kind for c in layout.columns}
    assert "O" in kinds and "i" in kinds  # both paths taken: text as objects, counts as integers
    pd.testing.assert_frame_equal(got, want)
