"""The causal LENS context (issue 15 §2): with no edges it is R2I / I2R exactly; on a hand-built SCM whose PS is
known in closed form the estimate converges; graphs are checked."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from explain_core.errors import IntakeError
from explain_core.lens import lens_contexts
from explain_core.lens.causal import CausalGraph, causal_contexts, differences, fit_scm, german_graph
from test_lens import dataset_of, model_of, random_case


@pytest.mark.parametrize("seed", range(25))
def test_empty_graph_equals_the_independent_contexts_exactly(seed):
    rng = np.random.default_rng(8000 + seed)
    model, data, frame, groups, mad = random_case(rng)
    size = int(rng.integers(0, len(groups) + 1))
    plain = lens_contexts(model, data, frame.iloc[[0]], frame.iloc[1:], max_size=size, mad=mad)
    causal = causal_contexts(model, data, frame.iloc[[0]], frame.iloc[1:], fit_scm(data, CausalGraph()),
                             max_size=size, mad=mad, seed=seed)
    for d in plain:
        np.testing.assert_array_equal(causal[d].labels, plain[d].labels)
        np.testing.assert_array_equal(causal[d].masks, plain[d].masks)
        np.testing.assert_array_equal(causal[d].costs, plain[d].costs)
        ours, theirs = causal[d].minimal_factors(0.5), plain[d].minimal_factors(0.5)
        assert ours.factors == theirs.factors
        assert ours.cumulative_pn == pytest.approx(theirs.cumulative_pn, nan_ok=True)


def gaussian_scm(n, seed):
    """a ~ N(0, 1); b = 2a + N(0, 1); c = 'hi' with probability sigmoid(2a). Input (a, b, c) = (2, 4, 'hi')."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    frame = pd.DataFrame({"a": np.r_[2.0, a], "b": np.r_[4.0, 2 * a + rng.normal(size=n)],
                          "c": np.r_[["hi"], np.where(rng.random(n) < 1 / (1 + np.exp(-2 * a)), "hi", "lo")]})
    data = dataset_of(frame, kinds={"a": "numeric", "b": "numeric", "c": "categorical"})
    return data, frame, fit_scm(data, CausalGraph((("a", "b"), ("a", "c"))))


def test_ps_converges_to_its_closed_form_on_a_hand_built_scm():
    data, frame, scm = gaussian_scm(20_000, seed=0)
    query, refs = frame.iloc[[0]], frame.iloc[1:]
    by_b = model_of(lambda f: (f["b"].to_numpy(float) > 3).astype(float), ["a", "b", "c"])
    causal = causal_contexts(by_b, data, query, refs, scm)
    plain = lens_contexts(by_b, data, query, refs)
    a = causal["r2i"].index(["a"])
    # R2I do(a = 2) on reference r: b = 4 + u_r (abduction), so PS = P(u > −1) = Φ(1); independent: P(b > 3)
    assert causal["r2i"].ps[a] == pytest.approx(norm.cdf(1), abs=0.015)
    assert plain["r2i"].ps[a] == pytest.approx(1 - norm.cdf(3 / np.sqrt(5)), abs=0.015)
    # I2R do(a = a_r) on the input (its noise u = 0): b = 2 a_r, the outcome flips to 0 when a_r ≤ 1.5
    assert causal["i2r"].ps[a] == pytest.approx(norm.cdf(1.5), abs=0.015)
    by_c = model_of(lambda f: (f["c"] == "hi").to_numpy(float), ["a", "b", "c"])
    causal = causal_contexts(by_c, data, query, refs, scm, directions=["r2i"], seed=1)
    # R2I do(a = 2): c is drawn again from P(hi | a = 2) = sigmoid(4) wherever a changed (every reference)
    assert causal["r2i"].ps[a] == pytest.approx(1 / (1 + np.exp(-4)), abs=0.01)
    again = causal_contexts(by_c, data, query, refs, scm, directions=["r2i"], seed=1)
    np.testing.assert_array_equal(again["r2i"].labels, causal["r2i"].labels)  # seeded


def test_differences_list_where_the_causal_answer_differs():
    data, frame, scm = gaussian_scm(2_000, seed=1)
    by_b = model_of(lambda f: (f["b"].to_numpy(float) > 3).astype(float), ["a", "b", "c"])
    plain = lens_contexts(by_b, data, frame.iloc[[0]], frame.iloc[1:], directions=["r2i"])["r2i"]
    causal = causal_contexts(by_b, data, frame.iloc[[0]], frame.iloc[1:], scm, directions=["r2i"])["r2i"]
    table = differences(plain, causal, 0.8)
    where = dict(zip(table["factor"], table["minimal in"]))
    assert where["a"] == "causal" and where["b"] == "both"  # only the causal context carries a's effect on b
    assert table.loc[table["factor"] == "a", "PS causal"].item() > 0.8 > table.loc[table["factor"] == "a",
                                                                                  "PS independent"].item()


def test_graphs_are_checked():
    with pytest.raises(IntakeError, match="cycle"):
        CausalGraph((("a", "b"), ("b", "a"))).order(["a", "b"])
    with pytest.raises(IntakeError, match="lacks: z"):
        CausalGraph((("a", "z"),)).order(["a", "b"])
    with pytest.raises(IntakeError, match="Line 2"):
        CausalGraph.parse("a -> b\na b")
    assert CausalGraph.parse("# comment\na -> b\n\nb->c").edges == (("a", "b"), ("b", "c"))


def test_the_papers_german_graph_fits_the_bundled_data():
    from explain_core import load_demo

    data = load_demo("german_credit")
    graph = german_graph()
    scm = fit_scm(data, graph)
    assert graph.layers(data.group_names)["purpose"] == 3
    assert {scm.equations[n].kind for n in ("credit_amount", "duration_months")} == {"additive"}
    assert {scm.equations[n].kind for n in ("job", "purpose", "housing")} == {"classifier"}
    assert "age" not in scm.equations  # roots have no equation
