"""The causal LENS context (issue 15 §2, issue 29): with no edges it is R2I / I2R exactly; on a hand-built SCM whose
PS is known in closed form the estimate converges, for both noise models; which nodes an intervention reaches, by
brute force over every factor; every column kind as a node; graphs are checked; the German presets."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from explain_core.errors import IntakeError
from explain_core.lens import ContextOptions, lens_contexts
from explain_core.lens.causal import (GERMAN_PARENTS, CausalGraph, ScmSettings, causal_contexts, differences,
                                      fit_scm, german_graph, german_layered_graph, intervene)
from test_lens import dataset_of, model_of, random_case


@pytest.mark.parametrize("seed", range(25))
def test_empty_graph_equals_the_independent_contexts_exactly(seed):
    rng = np.random.default_rng(8000 + seed)
    model, data, frame, groups, mad = random_case(rng)
    size = int(rng.integers(0, len(groups) + 1))
    plain = lens_contexts(model, data, frame.iloc[[0]], frame.iloc[1:], ContextOptions(max_size=size, mad=mad))
    causal = causal_contexts(model, data, frame.iloc[[0]], frame.iloc[1:], fit_scm(data, CausalGraph()),
                             ContextOptions(max_size=size, mad=mad), seed=seed)
    for d in plain:
        np.testing.assert_array_equal(causal[d].labels, plain[d].labels)
        np.testing.assert_array_equal(causal[d].masks, plain[d].masks)
        np.testing.assert_array_equal(causal[d].costs, plain[d].costs)
        ours, theirs = causal[d].minimal_factors(0.5), plain[d].minimal_factors(0.5)
        assert ours.factors == theirs.factors
        assert ours.cumulative_pn == pytest.approx(theirs.cumulative_pn, nan_ok=True)


def gaussian_scm(n, seed, noise="gaussian"):
    """a ~ N(0, 1); b = 2a + N(0, 1); c = 'hi' with probability sigmoid(2a). Input (a, b, c) = (2, 4, 'hi')."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    frame = pd.DataFrame({"a": np.r_[2.0, a], "b": np.r_[4.0, 2 * a + rng.normal(size=n)],
                          "c": np.r_[["hi"], np.where(rng.random(n) < 1 / (1 + np.exp(-2 * a)), "hi", "lo")]})
    data = dataset_of(frame, kinds={"a": "numeric", "b": "numeric", "c": "categorical"})
    return data, frame, fit_scm(data, CausalGraph((("a", "b"), ("a", "c"))), settings=ScmSettings(noise=noise))


@pytest.mark.parametrize("noise", ["abduction", "gaussian"])
def test_ps_converges_to_its_closed_form_on_a_hand_built_scm(noise):
    data, frame, scm = gaussian_scm(20_000, seed=0, noise=noise)
    query, refs = frame.iloc[[0]], frame.iloc[1:]
    by_b = model_of(lambda f: (f["b"].to_numpy(float) > 3).astype(float), ["a", "b", "c"])
    causal = causal_contexts(by_b, data, query, refs, scm)
    plain = lens_contexts(by_b, data, query, refs)
    a = causal["r2i"].index(["a"])
    # R2I do(a = 2) on reference r: b = 4 + u with u the reference's own noise or a fresh N(0, 1): PS = Φ(1);
    # independent: P(b > 3)
    assert causal["r2i"].ps[a] == pytest.approx(norm.cdf(1), abs=0.015)
    assert plain["r2i"].ps[a] == pytest.approx(1 - norm.cdf(3 / np.sqrt(5)), abs=0.015)
    # I2R do(a = a_r) on the input: abduction keeps its noise u = 0, b = 2 a_r, flipping when a_r ≤ 1.5;
    # a fresh noise gives b = 2 a_r + N(0, 1) ~ N(0, 5), flipping when b ≤ 3
    flips = norm.cdf(1.5) if noise == "abduction" else norm.cdf(3 / np.sqrt(5))
    assert causal["i2r"].ps[a] == pytest.approx(flips, abs=0.015)
    by_c = model_of(lambda f: (f["c"] == "hi").to_numpy(float), ["a", "b", "c"])
    causal = causal_contexts(by_c, data, query, refs, scm, ContextOptions(directions=["r2i"]), seed=1)
    # R2I do(a = 2): c is drawn again from P(hi | a = 2) = sigmoid(4) wherever a changed (every reference)
    assert causal["r2i"].ps[a] == pytest.approx(1 / (1 + np.exp(-4)), abs=0.01)
    again = causal_contexts(by_c, data, query, refs, scm, ContextOptions(directions=["r2i"]), seed=1)
    np.testing.assert_array_equal(again["r2i"].labels, causal["r2i"].labels)  # seeded


def chain_case(propagate):
    """a → b → c and d → e, numeric, every value distinct between the two units."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.normal(size=(300, 5)), columns=list("abcde"))
    data = dataset_of(frame, kinds=dict.fromkeys("abcde", "numeric"))
    graph = CausalGraph((("a", "b"), ("b", "c"), ("d", "e")))
    return data, frame, fit_scm(data, graph, settings=ScmSettings(propagate=propagate))


@pytest.mark.parametrize("propagate", ["descendants", "later"])
def test_an_intervention_reaches_what_its_rule_says_on_every_factor(propagate):
    data, frame, scm = chain_case(propagate)
    assert scm.order == ("a", "b", "c", "d", "e")  # first mention in the edges breaks ties
    masks = np.array([[(m >> j) & 1 for j in range(5)] for m in range(32)], dtype=bool)
    base = frame.iloc[np.zeros(32, dtype=int)].reset_index(drop=True)
    source = frame.iloc[np.ones(32, dtype=int)].reset_index(drop=True)
    out = intervene(scm, data.layout, base, source, masks, np.random.default_rng(0))
    ancestors = {"a": "", "b": "a", "c": "ab", "d": "", "e": "d"}
    for m, mask in enumerate(masks):
        hit = {v for v, on in zip("abcde", mask) if on}
        for j, v in enumerate("abcde"):
            if v in hit:
                expected = source.at[m, v]
            else:
                causes = "abcde"[:j] if propagate == "later" else ancestors[v]
                reached = v in scm.equations and bool(hit & set(causes))
                expected = None if reached else base.at[m, v]
            if expected is None:
                assert out.at[m, v] != base.at[m, v]  # drawn again (a continuous draw never repeats)
            else:
                assert out.at[m, v] == expected


def coded(kind_of_column: str, values: np.ndarray):
    """The same labels 0 < 1 < 2 … coded as integers, booleans, text or a pandas category."""
    if kind_of_column == "int":
        return pd.Series(values, dtype="int64")
    if kind_of_column == "bool":
        return pd.Series(values.astype(bool))
    text = pd.Series(np.array(["lo", "mid", "top"])[values])
    return text.astype("category") if kind_of_column == "category" else text


KIND_CASES = ([(kind, dtype, 2) for kind in ("binary", "categorical") for dtype in ("int", "bool", "text", "category")]
              + [("categorical", dtype, 3) for dtype in ("int", "text", "category")])


@pytest.mark.parametrize("kind, dtype, levels", KIND_CASES)
def test_every_column_kind_is_a_node_and_gives_the_text_codes_answer(kind, dtype, levels):
    rng = np.random.default_rng(11)
    n = 400
    a = rng.normal(size=n)
    mid = ((a > 0).astype(int) + (rng.random(n) < 0.3)) % levels  # a → mid
    low = (mid + (rng.random(n) < 0.4)) % levels                   # mid → low (a child of a coded parent)
    answers = {}
    for form in (dtype, "text"):
        frame = pd.DataFrame({"a": a, "mid": coded(form, mid), "low": coded(form, low)})
        data = dataset_of(frame, kinds={"a": "numeric", "mid": kind, "low": kind})
        scm = fit_scm(data, CausalGraph((("a", "mid"), ("mid", "low"))))
        model = model_of(lambda f: (~pd.Series(f["low"]).astype(str).isin(["0", "False", "lo"])).to_numpy(float),
                         ["a", "mid", "low"])  # positive above the lowest level
        contexts = causal_contexts(model, data, frame.iloc[[0]], frame.iloc[1:], scm, seed=5)
        rows = intervene(scm, data.layout, frame.iloc[1:], frame.iloc[[0] * (n - 1)],
                         np.tile([True, False, False], (n - 1, 1)), np.random.default_rng(0))
        assert rows.dtypes.equals(frame.dtypes)  # every column keeps its kind
        assert set(rows["low"]) <= set(frame["low"]) and set(rows["mid"]) <= set(frame["mid"])
        answers[form] = contexts
    for d in ("r2i", "i2r"):  # the codes are the text labels in the same order: the same draws, the same labels
        np.testing.assert_array_equal(answers[dtype][d].labels, answers["text"][d].labels)
        assert np.isfinite(answers[dtype][d].ps).all()


def test_differences_list_where_the_causal_answer_differs():
    data, frame, scm = gaussian_scm(2_000, seed=1)
    by_b = model_of(lambda f: (f["b"].to_numpy(float) > 3).astype(float), ["a", "b", "c"])
    plain = lens_contexts(by_b, data, frame.iloc[[0]], frame.iloc[1:], ContextOptions(directions=["r2i"]))["r2i"]
    causal = causal_contexts(by_b, data, frame.iloc[[0]], frame.iloc[1:], scm,
                             ContextOptions(directions=["r2i"]))["r2i"]
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


@pytest.mark.parametrize("classifier", ["logistic", "forest"])
def test_the_german_presets_fit_the_bundled_data(classifier):
    from explain_core import load_demo

    data = load_demo("german_credit")
    authors, layered = german_graph(), german_layered_graph()
    assert len(authors.edges) == len(layered.edges) == 18
    assert len(set(authors.edges) & set(layered.edges)) == 9
    assert set(authors.edges) == {(p, child) for child, parents in GERMAN_PARENTS.items() for p in parents}
    assert {("job", "savings_account"), ("savings_account", "housing"), ("age", "purpose")} <= set(authors.edges)
    scm = fit_scm(data, authors, settings=ScmSettings(classifier=classifier))
    assert authors.layers(data.group_names)["purpose"] == 6  # age → job → savings → housing → credit → duration
    assert layered.layers(data.group_names)["purpose"] == 3
    assert {scm.equations[n].kind for n in ("credit_amount", "duration_months")} == {"additive"}
    assert {scm.equations[n].kind for n in ("job", "purpose", "housing")} == {"classifier"}
    assert "age" not in scm.equations  # roots have no equation
    assert scm.order[:9] == ("age", "personal_status_sex", "job", "savings_account", "housing",  # the authors' order
                             "checking_account_status", "credit_amount", "duration_months", "purpose")


def test_settings_are_checked():
    with pytest.raises(IntakeError, match="propagation"):
        ScmSettings(propagate="everything")
