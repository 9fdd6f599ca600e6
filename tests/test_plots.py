"""SEV figures: the drawn hypercube/lattice/histogram/prevalence against hand-computed expectations."""
from __future__ import annotations

import itertools
from math import comb

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest

from explain_core.intake.data import make_dataset
from explain_core.intake.layout import GroupLayout
from explain_core.intake.models import ModelAdapter
from explain_core.reference import Reference
from explain_core.sev import Hypercube, SEVResult, hypercube, sev
from explain_core.sev.summaries import NOT_EXPLAINED, lattice_counts, prevalence_table, sev_counts
from explain_core.views.sev import feature_prevalence, hypercube_figure, lattice_figure, sev_histogram
from explain_core.views.style import LABEL_COLOURS, TEMPLATE
from tests.test_sev import FIG1_COLUMNS, FIG1_QUERY, FIG1_REFERENCE, adapter, figure1_explanation, figure1_model


def fig1_cube():
    frame = pd.DataFrame([FIG1_QUERY, FIG1_REFERENCE])
    frame["risk"] = ["High", "Low"]
    data = make_dataset(frame, "risk", positive_class="High")
    return hypercube(figure1_model(), GroupLayout.of(data), frame[FIG1_COLUMNS].iloc[[0]],
                     Reference(FIG1_REFERENCE, "fig1"))


def traces(fig, role):
    return [t for t in fig.data if (t.meta or {}).get("role") == role]


def segments(trace):
    """The drawn line segments of a lines trace (points separated by None) as pairs of (x, y) points."""
    xs, ys = list(trace.x), list(trace.y)
    out = []
    for i in range(0, len(xs), 3):
        assert xs[i + 2] is None and ys[i + 2] is None
        out.append(frozenset({(xs[i], ys[i]), (xs[i + 1], ys[i + 1])}))
    return out


def vertex_at(fig, names):
    """(x, y) of each drawn vertex → the set of groups it has at the reference (decoded from its mask code)."""
    out = {}
    for t in traces(fig, "vertices"):
        for x, y, code in zip(t.x, t.y, t.customdata):
            out[(x, y)] = frozenset(n for g, n in enumerate(names) if not int(code) >> g & 1)
    return out


def expected_path_edges(explanations, names, kind):
    """Independently: walk every ordering of every explanation over sets of groups at the reference."""
    edges = set()
    for groups in explanations:
        for order in itertools.permutations(groups):
            at_ref = frozenset() if kind == "minus" else frozenset(names)
            for g in order:
                nxt = at_ref | {g} if kind == "minus" else at_ref - {g}
                edges.add(frozenset({at_ref, nxt}))
                at_ref = nxt
    return edges


def drawn_path_edges(fig, names):
    where = vertex_at(fig, names)
    (paths,) = traces(fig, "paths")
    return [frozenset(where[pt] for pt in seg) for seg in segments(paths)]


def test_figure1_hypercube_vertices_edges_colours_and_hover():
    cube, ex = fig1_cube(), figure1_explanation()
    names = list(cube.names)
    fig = hypercube_figure(cube, ex)
    assert fig.layout.template == TEMPLATE
    vertices = traces(fig, "vertices")
    assert sum(len(t.x) for t in vertices) == 8
    where = vertex_at(fig, names)
    assert len(where) == 8 and set(where.values()) == {frozenset(s) for k in range(4)
                                                       for s in itertools.combinations(names, k)}
    for (x, _), at_ref in where.items():
        assert x == len(at_ref)  # x = depth from the query
    (edges,) = traces(fig, "edges")
    drawn = [frozenset(where[pt] for pt in seg) for seg in segments(edges)]
    assert len(drawn) == len(set(drawn)) == 3 * 2 ** 2
    assert all(len(a ^ b) == 1 for a, b in drawn)
    # colours: high risk (label 1) iff the loan stays > $10k, or renting with high school both stay
    for t in vertices:
        assert t.marker.color == LABEL_COLOURS[t.meta["label"]]
        for (x, y), hover in zip(zip(t.x, t.y), t.hovertext):
            at_ref = where[(x, y)]
            high = "Loan" not in at_ref or not ({"Housing", "Education"} & at_ref)
            assert t.meta["label"] == int(high)
            score = 1 / (1 + np.exp(-2.0)) if high else 1 / (1 + np.exp(2.0))
            assert f"score = {score:.4g}" in hover
            assert ("At the reference: " + (", ".join(n for n in names if n in at_ref) or "none")) in hover
            assert ("Housing = Mortgage" if "Housing" in at_ref else "Housing = Rent") in hover
    texts = {txt: where[(x, y)] for t in vertices for x, y, txt in zip(t.x, t.y, t.text) if txt}
    assert texts == {"query": frozenset(), "reference": frozenset(names)}
    sizes = {where[(x, y)]: s for t in vertices for x, y, s in zip(t.x, t.y, t.marker.size)}
    ends = {frozenset(), frozenset(names)}
    assert min(sizes[v] for v in ends) > max(s for v, s in sizes.items() if v not in ends)


@pytest.mark.parametrize("which", ["minus", "plus"])
def test_figure1_highlighted_paths_are_exactly_the_minimal_explanations(which):
    cube, ex = fig1_cube(), figure1_explanation()
    names = list(cube.names)
    drawn = drawn_path_edges(hypercube_figure(cube, ex, which=which), names)
    result = getattr(ex, which)
    expected = expected_path_edges(result.explanations, names, result.kind)
    assert len(drawn) == len(set(drawn)) and set(drawn) == expected
    if which == "minus":  # {Housing, Loan} and {Loan, Education}, 2 orderings each: 4 paths over 7 distinct edges
        assert len(expected) == 7
    else:  # SEV⁺ = 1 via Loan: one edge from the reference
        assert expected == {frozenset({frozenset(names), frozenset({"Housing", "Education"})})}


def test_restricted_paths_and_no_explanation_draws_no_paths():
    frame = pd.DataFrame([FIG1_QUERY, FIG1_REFERENCE])
    frame["risk"] = ["High", "Low"]
    data = make_dataset(frame, "risk", positive_class="High")
    from explain_core.sev import explain_sev
    ex = explain_sev(figure1_model(), data, frame[FIG1_COLUMNS].iloc[[0]], Reference(FIG1_REFERENCE, "f"),
                     restricted=["Housing"])
    cube = fig1_cube()
    drawn = drawn_path_edges(hypercube_figure(cube, ex, which="restricted"), list(cube.names))
    assert set(drawn) == expected_path_edges((("Loan", "Education"),), list(cube.names), "minus")
    assert traces(hypercube_figure(cube), "paths") == []
    with pytest.raises(ValueError):
        hypercube_figure(cube, figure1_explanation(), which="restricted")


def random_cube(p, seed=0):
    columns = [f"x{j}" for j in range(p)]
    w = np.random.default_rng(seed).normal(size=p)
    model = adapter(lambda f: f[columns].to_numpy(float) @ w + 0.3, columns)
    query, reference = dict(zip(columns, np.ones(p))), dict(zip(columns, np.zeros(p)))
    frame = pd.DataFrame([query, reference])
    frame["y"] = [1, 0]
    layout = GroupLayout.of(make_dataset(frame, "y"))
    return model, layout, frame[columns].iloc[[0]], Reference(reference, "zero")


@pytest.mark.parametrize("p", [1, 4, 8])
def test_hypercube_counts_and_colours_for_larger_cubes(p):
    model, layout, query, ref = random_cube(p, seed=p)
    cube = hypercube(model, layout, query, ref)
    fig = hypercube_figure(cube)
    vertices = traces(fig, "vertices")
    assert sum(len(t.x) for t in vertices) == 2 ** p
    assert len(segments(traces(fig, "edges")[0])) == p * 2 ** (p - 1)
    assert len({(x, y) for t in vertices for x, y in zip(t.x, t.y)}) == 2 ** p  # no two vertices overlap
    code_of = (cube.masks.astype(int) << np.arange(p)).sum(axis=1)
    label_of = dict(zip(code_of.tolist(), cube.labels.tolist()))
    score_of = dict(zip(code_of.tolist(), cube.scores.tolist()))
    for t in vertices:
        for code, hover in zip(t.customdata, t.hovertext):
            assert label_of[int(code)] == t.meta["label"]
            assert f"score = {score_of[int(code)]:.4g}" in hover
    assert hypercube_figure(cube).to_json() == fig.to_json()  # deterministic


def test_more_than_eight_groups_raise():
    p = 9
    masks = ((np.arange(2 ** p)[:, None] >> np.arange(p)) & 1).astype(bool)
    cube = Hypercube(tuple(f"g{i}" for i in range(p)), masks, np.zeros(2 ** p), np.zeros(2 ** p, dtype=np.int8))
    with pytest.raises(ValueError, match="at most 8"):
        hypercube_figure(cube)
    assert lattice_counts(cube)["evaluated"].tolist() == [comb(p, d) for d in range(p + 1)]


def test_explicit_template_ignores_the_global_default():
    old = pio.templates.default
    pio.templates.default = "ggplot2"
    try:
        figs = [hypercube_figure(fig1_cube()), lattice_figure(fig1_cube()), sev_histogram([1, None]),
                feature_prevalence([], ["a"])]
    finally:
        pio.templates.default = old
    assert all(f.layout.template == TEMPLATE for f in figs)


def test_figure1_lattice_counts():
    ex, model = figure1_explanation(), figure1_model()
    # SEV⁻: depth 1 moves one group, none flips; depth 2: {H,L} and {L,E} flip, {H,E} does not
    assert lattice_counts(ex.minus, labels_of=model.labels_of).values.tolist() == [[1, 3, 0], [2, 3, 2]]
    # SEV⁺: the reference (depth 0) is low risk; moving Loan to the query's value flips
    assert lattice_counts(ex.plus, labels_of=model.labels_of).values.tolist() == [[0, 1, 0], [1, 3, 1]]
    assert lattice_counts(fig1_cube()).values.tolist() == [[0, 1, 0], [1, 3, 0], [2, 3, 2], [3, 1, 1]]
    fig = lattice_figure(ex.minus, labels_of=model.labels_of)
    assert list(traces(fig, "evaluated")[0].y) == [3, 3] and list(traces(fig, "flipped")[0].y) == [0, 2]
    with pytest.raises(ValueError, match="labels_of"):
        lattice_counts(ex.minus)


def test_lattice_labels_a_regression_vertex_at_the_threshold_positive():
    """prediction = x0 + x1 + x2, threshold 2: the query (3) is positive; one group moved to the reference (0)
    predicts exactly 2, still positive (≥), so the three two-group moves are the first flips."""
    columns = ["x0", "x1", "x2"]

    class SumRegressor:
        def predict(self, frame):
            return frame[columns].to_numpy(float).sum(axis=1)

    model = ModelAdapter(SumRegressor(), columns, "regression", score_kind="predict", threshold=2.0)
    frame = pd.DataFrame([dict.fromkeys(columns, 1.0), dict.fromkeys(columns, 0.0)])
    frame["y"] = [1, 0]
    layout = GroupLayout.of(make_dataset(frame, "y"))
    query, ref = frame[columns].iloc[[0]], Reference(dict.fromkeys(columns, 0.0), "zero")
    result = sev(model, layout, query, ref, kind="minus", max_depth=3)
    assert result.value == 2
    assert lattice_counts(result, labels_of=model.labels_of).values.tolist() == [[1, 3, 0], [2, 3, 3]]
    full = lattice_counts(hypercube(model, layout, query, ref)).set_index("depth")
    assert full.loc[1:2, "flipped"].tolist() == [0, 3]


def test_lattice_of_a_wide_search_matches_the_full_cube():
    p = 10
    model, layout, query, ref = random_cube(p, seed=3)
    result = sev(model, layout, query, ref, kind="minus", max_depth=3)
    counts = lattice_counts(result, labels_of=model.labels_of)
    last = result.value if result.value is not None else 3
    assert counts["depth"].tolist() == list(range(1, last + 1))
    assert counts["evaluated"].tolist() == [comb(p, d) for d in range(1, last + 1)]
    cube = hypercube(model, layout, query, ref)
    full = lattice_counts(cube).set_index("depth")
    assert counts["flipped"].tolist() == full.loc[1:last, "flipped"].tolist()
    assert counts["flipped"].iloc[-1] == (len(result.explanations) if result.explainable else 0)


def test_sev_counts_and_histogram():
    table = sev_counts([1, 3, None, 1, None])
    assert table["sev"].tolist() == [1, 2, 3, NOT_EXPLAINED]
    assert table["count"].tolist() == [2, 0, 1, 2]
    assert table["share"].tolist() == pytest.approx([0.4, 0.0, 0.2, 0.4])
    assert sev_counts([]).values.tolist() == [[NOT_EXPLAINED, 0, 0.0]]
    assert sev_counts([0, 0, 2])["count"].tolist() == [2, 0, 1, 0]
    (bars,) = traces(sev_histogram([1, 3, None, 1, None], label="SEV⁺"), "counts")
    assert list(bars.x) == ["1", "2", "3", NOT_EXPLAINED] and list(bars.y) == [2, 0, 1, 2]


def result(explanations, status="explained", kind="minus"):
    value = len(explanations[0]) if status == "explained" else None
    return SEVResult(kind, value, tuple(explanations), status, 1, 6)


def test_prevalence_table_and_figure():
    results = [result([("A", "B"), ("B", "C")]), result([("A",)]), result([], "unexplainable"),
               result([()], kind="plus"), result([], "beyond_depth"), result([("A", "C"), ("A", "B")])]
    table = prevalence_table(results, ["A", "B", "C", "D"])
    assert table["group"].tolist() == ["A", "B", "C", "D"]
    assert table["count"].tolist() == [3, 2, 2, 0]  # A counted once for the last query
    assert table["share"].tolist() == pytest.approx([3 / 4, 2 / 4, 2 / 4, 0])
    assert table.attrs == {"explained": 4, "queries": 6}
    (bars,) = traces(feature_prevalence(results, ["A", "B", "C", "D"]), "prevalence")
    assert dict(zip(bars.y, bars.x)) == dict(zip(table["group"], table["share"]))
    assert list(bars.y)[-1] == "A"  # most frequent on top
    with pytest.raises(ValueError, match="not in group_names"):
        prevalence_table(results, ["A", "B"])
    assert prevalence_table([], ["A"])["share"].tolist() == [0.0]


def test_before_after_distributions_share_one_ordered_axis():
    """Values seen by only one model still sit in numeric order, with "not explained" last."""
    from explain_core.views.sparse import sev_distributions

    fig = sev_distributions({"before": [1, 2, None, 1], "after": [1, 4, 1]})
    assert list(fig.layout.xaxis.categoryarray) == ["1", "2", "3", "4", NOT_EXPLAINED]
    assert [list(t.x) for t in fig.data] == [["1", "2", NOT_EXPLAINED], ["1", "2", "3", "4", NOT_EXPLAINED]]
    assert list(sev_distributions({"before": [None]}).layout.xaxis.categoryarray) == [NOT_EXPLAINED]
