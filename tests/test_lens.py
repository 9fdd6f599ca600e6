"""LENS (Defs 2-4, Remark 1, Alg. 1, Thm 1) against hand-built models and brute-force enumeration."""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from explain_core.baselines import Attribution
from explain_core.intake.data import make_dataset
from explain_core.intake.layout import GroupLayout, TableChoices
from explain_core.intake.models import ModelAdapter
from explain_core.lens import ContextOptions, factor_masks, lens_contexts, opposite_references, shap_curve
from explain_core.reference import Reference
from explain_core.sev import sev


class ScoreModel:
    """A hand-built classifier: P(class 1) = fn(frame), a plain function of the raw columns."""

    classes_ = np.array([0, 1])

    def __init__(self, fn):
        self.fn = fn

    def predict_proba(self, frame):
        p = np.asarray(self.fn(frame), dtype=float)
        return np.column_stack([1 - p, p])


def model_of(fn, columns) -> ModelAdapter:
    return ModelAdapter(ScoreModel(fn), list(columns), "classification")


def dataset_of(frame: pd.DataFrame, kinds=None, onehot=None):
    return make_dataset(frame.assign(y=np.arange(len(frame)) % 2), "y",
                        choices=TableChoices(kinds=kinds, onehot_groups=onehot))


def factors(result) -> set[frozenset]:
    return {frozenset(f.groups) for f in result.factors}


# --- tiny Boolean models ---------------------------------------------------------------------------------

def boolean_context(fn, direction, n_refs=5):
    """x1, x2 ∈ {0, 1}; input (1, 1); references (0, 0) repeated."""
    frame = pd.DataFrame({"x1": [1] + [0] * n_refs, "x2": [1] + [0] * n_refs})
    model = model_of(lambda f: fn(f["x1"].to_numpy() == 1, f["x2"].to_numpy() == 1).astype(float), ["x1", "x2"])
    data = dataset_of(frame, kinds={"x1": "numeric", "x2": "numeric"})
    return lens_contexts(model, data, frame.iloc[[0]], frame.iloc[1:],
                         ContextOptions(directions=[direction]))[direction]


def test_and_needs_both_features_r2i_and_either_flips_it_i2r():
    r2i = boolean_context(np.logical_and, "r2i").minimal_factors(1.0)
    assert factors(r2i) == {frozenset({"x1", "x2"})}
    assert [(f.ps, f.hits, f.samples) for f in r2i.factors] == [(1.0, 5, 5)]
    i2r = boolean_context(np.logical_and, "i2r").minimal_factors(1.0)
    assert factors(i2r) == {frozenset({"x1"}), frozenset({"x2"})}


def test_or_is_sufficient_with_either_feature_r2i_and_needs_both_i2r():
    r2i = boolean_context(np.logical_or, "r2i").minimal_factors(1.0)
    assert factors(r2i) == {frozenset({"x1"}), frozenset({"x2"})}
    assert r2i.cumulative_pn == 1.0  # every path to y passes through x1 or x2
    assert factors(boolean_context(np.logical_or, "i2r").minimal_factors(1.0)) == {frozenset({"x1", "x2"})}


def test_cost_order_keeps_a_superset_with_a_cheaper_intervention():
    """I2R, f = 1 iff a ≥ 3 or (a ≥ 1 and b = 1): {a} alone needs a far reference, {a, b} a near one (§5.3)."""
    frame = pd.DataFrame({"a": [0, 5, 1], "b": [0, 0, 1]})
    model = model_of(lambda f: ((f["a"] >= 3) | ((f["a"] >= 1) & (f["b"] == 1))).to_numpy(float), ["a", "b"])
    data = dataset_of(frame, kinds={"a": "numeric", "b": "numeric"})
    ctx = lens_contexts(model, data, frame.iloc[[0]], frame.iloc[1:],
                        ContextOptions(directions=["i2r"], mad={"a": 1.0, "b": 1.0}))["i2r"]
    assert factors(ctx.minimal_factors(0.5)) == {frozenset({"a"})}
    by_cost = ctx.minimal_factors(0.5, order="cost")
    assert factors(by_cost) == {frozenset({"a"}), frozenset({"a", "b"})}
    assert {f.groups: (f.cost, f.reference) for f in by_cost.factors} == {("a",): (5.0, 1), ("a", "b"): (2.0, 2)}


# --- random small cases against brute-force enumeration (Thm 1) ------------------------------------------

def random_case(rng, min_groups: int = 1):
    """A random model on 1-5 groups (at least ``min_groups``: cases are drawn until one has them), an input and
    1-10 references, mostly predicted opposite to the input (as LENS samples them)."""
    case = _random_case(rng)
    while len(case[3]) < min_groups:
        case = _random_case(rng)
    return case


def _random_case(rng):
    p = int(rng.integers(1, 6))
    kinds = rng.choice(["numeric", "numeric", "categorical", "onehot"], size=p)
    groups, onehot, kind_map = [], {}, {}
    for j, kind in enumerate(kinds):
        name = f"g{j}"
        cols = (f"{name}_a", f"{name}_b", f"{name}_c") if kind == "onehot" else (name,)
        if kind == "onehot":
            onehot[name] = list(cols)
        else:
            kind_map[name] = kind
        groups.append((name, cols, kind))
    columns = [c for _, cols, _ in groups for c in cols]
    weights, bias = rng.normal(size=len(columns)), rng.normal()
    pair = rng.normal(size=(len(columns), len(columns))) / len(columns)
    codes = {"red": -1.0, "green": 0.5, "blue": 1.5}

    def fn(frame):
        x = np.column_stack([frame[c].to_numpy(float) if pd.api.types.is_numeric_dtype(frame[c]) else
                             frame[c].map(codes).to_numpy(float) for c in columns]) * weights
        s = np.tanh(x).sum(axis=1) + np.einsum("ni,ij,nj->n", np.tanh(x), pair, np.tanh(x)) + bias
        return 1 / (1 + np.exp(-3 * s))

    def draw():
        row = {}
        for name, cols, kind in groups:
            if kind == "onehot":
                hot = rng.integers(3)
                row.update({c: int(i == hot) for i, c in enumerate(cols)})
            elif kind == "numeric":
                row[name] = int(rng.integers(0, 5))
            else:
                row[name] = str(rng.choice(["red", "green", "blue"]))
        return row

    model = model_of(fn, columns)
    candidates = pd.DataFrame([draw() for _ in range(41)], columns=columns)
    labels = model.label(candidates)
    opposite = candidates.iloc[1:][labels[1:] != labels[0]]
    pool = opposite if len(opposite) and rng.random() < 0.85 else candidates.iloc[1:]
    n = min(len(pool), int(rng.integers(1, 11)))
    frame = pd.concat([candidates.iloc[[0]], pool.iloc[:n]], ignore_index=True)
    data = dataset_of(frame, kinds=kind_map, onehot=onehot)
    mad = {name: float(rng.choice([0.5, 1.0, 2.0])) for name, _, kind in groups if kind == "numeric"}
    return model, data, frame, groups, mad


def brute_force(model, frame, groups, mad, direction, max_size):
    """Enumerate (reference, subset) rows one by one: hits (n, m), costs (n, m), subsets, outcome."""
    query, refs = frame.iloc[0].to_dict(), [r.to_dict() for _, r in frame.iloc[1:].iterrows()]
    subsets = [frozenset(s) for k in range(max_size + 1) for s in itertools.combinations(range(len(groups)), k)]
    rows, costs = [], []
    for ref in refs:
        for s in subsets:
            row, cost = {}, 0.0
            for gi, (name, cols, kind) in enumerate(groups):
                take_input = (gi in s) == (direction == "r2i")
                row.update({c: (query if take_input else ref)[c] for c in cols})
                if gi in s and any(query[c] != ref[c] for c in cols):
                    cost += abs(query[name] - ref[name]) / mad[name] if kind == "numeric" else 1.0
            rows.append(row)
            costs.append(cost)
    y = int(model.label(frame.iloc[[0]])[0])
    outcome = y if direction == "r2i" else 1 - y
    labels = model.label(pd.DataFrame(rows, columns=frame.columns)).reshape(len(refs), len(subsets))
    names = [g[0] for g in groups]
    return labels == outcome, np.array(costs).reshape(len(refs), len(subsets)), \
        [frozenset(names[g] for g in s) for s in subsets], outcome


def brute_holm(p_values, alpha, family):
    """Holm (1979) as written: reject the i-th smallest while every p_(k), k ≤ i, is ≤ α / (family − k + 1)."""
    order = sorted(range(len(p_values)), key=lambda j: (p_values[j], j))
    rejected = set()
    for k, j in enumerate(order, start=1):
        if p_values[j] > alpha / (family - k + 1):
            break
        rejected.add(j)
    return rejected


def brute_minimal(hits, costs, subsets, tau, alpha, order, correction="holm"):
    """τ-minimal factors straight from Def. 4, and the cumulative PN of their upward closure."""
    n = len(hits)
    count = hits.sum(axis=0)
    if alpha is None:
        sufficient = [j for j in range(len(subsets)) if count[j] / n >= tau]
    else:
        p_values = [binomtest(int(count[j]), n, tau, alternative="greater").pvalue for j in range(len(subsets))]
        sufficient = sorted(brute_holm(p_values, alpha, len(subsets)) if correction == "holm" else
                            [j for j in range(len(subsets)) if p_values[j] <= alpha])
    cheapest = [min((c for c, h in zip(costs[:, j], hits[:, j]) if h), default=np.inf) for j in range(len(subsets))]

    def precedes(a, b):
        return subsets[a] <= subsets[b] and (order == "subset" or cheapest[a] <= cheapest[b])

    minimal = [j for j in sufficient if not any(precedes(i, j) for i in sufficient if i != j)]
    closure = [j for j in range(len(subsets)) if any(precedes(i, j) for i in minimal)]
    pn = count[closure].sum() / count.sum() if count.sum() else np.nan
    return {subsets[j]: (count[j] / n, int(count[j]), cheapest[j]) for j in minimal}, pn


@pytest.mark.parametrize("seed", range(120))
def test_minimal_factors_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    model, data, frame, groups, mad = random_case(rng)
    p = len(groups)
    max_size = int(rng.integers(0, p + 1))
    contexts = lens_contexts(model, data, frame.iloc[[0]], frame.iloc[1:],
                             ContextOptions(max_size=max_size, mad=mad, chunk_rows=int(rng.choice([7, 100_000]))))
    for direction, ctx in contexts.items():
        hits, costs, subsets, outcome = brute_force(model, frame, groups, mad, direction, max_size)
        assert ctx.outcome == outcome
        assert [frozenset(ctx.factor(j)) for j in range(len(ctx.masks))] == subsets
        np.testing.assert_array_equal(ctx.labels == outcome, hits)
        np.testing.assert_array_equal(ctx.costs, costs)
        for tau in {*np.round(ctx.ps, 12), float(rng.random()), 1.0}:
            for alpha, order, correction in itertools.product([None, 0.1], ["subset", "cost"], ["holm", "none"]):
                expected, pn = brute_minimal(hits, costs, subsets, tau, alpha, order, correction)
                result = ctx.minimal_factors(tau, alpha=alpha, order=order, correction=correction)
                assert {frozenset(f.groups): (f.ps, f.hits, f.cost) for f in result.factors} == expected
                assert len(result.factors) == len(expected)
                assert result.cumulative_pn == pytest.approx(pn, nan_ok=True)
                if order == "subset":  # minimality: no returned factor contains another
                    found = factors(result)
                    assert not any(a < b for a in found for b in found)


@pytest.mark.parametrize("seed", range(20))
def test_remark1_measures_are_the_confusion_matrix_of_c_against_f(seed):
    rng = np.random.default_rng(1000 + seed)
    model, data, frame, groups, mad = random_case(rng)
    ctx = lens_contexts(model, data, frame.iloc[[0]], frame.iloc[1:], ContextOptions(mad=mad))["r2i"]
    hits, _, subsets, _ = brute_force(model, frame, groups, mad, "r2i", len(groups))
    chosen = [j for j in range(len(subsets)) if rng.random() < 0.4] or [0]
    c = np.isin(np.arange(len(subsets)), chosen)[None, :].repeat(len(hits), axis=0)
    tp, fp, fn, tn = (c & hits).sum(), (c & ~hits).sum(), (~c & hits).sum(), (~c & ~hits).sum()
    m = ctx.measures([subsets[j] for j in chosen])
    assert (m.tp, m.fp, m.fn, m.tn) == (tp, fp, fn, tn)
    for value, num, den in ((m.ps, tp, tp + fp), (m.pn, tp, tp + fn), (m.ps_not, tn, tn + fn), (m.pn_not, tn, tn + fp)):
        assert value == pytest.approx(num / den if den else np.nan, nan_ok=True)


# --- link to SEV: the single SEV reference point as the context ------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_sev_is_the_smallest_tau_one_factor_for_a_single_reference(seed):
    rng = np.random.default_rng(2000 + seed)
    model, data, frame, groups, mad = random_case(rng)
    p, layout = len(groups), GroupLayout.of(data)
    reference = Reference(frame.iloc[1].to_dict(), "test")
    query = frame.iloc[[0]]
    contexts = lens_contexts(model, data, query, reference.as_frame(data.columns), ContextOptions(max_size=p, mad=mad))
    for kind, direction in (("minus", "i2r"), ("plus", "r2i")):
        engine = sev(model, layout, query, reference, kind=kind, max_depth=p)
        found = contexts[direction].minimal_factors(1.0).factors
        if engine.value is None:
            assert found == ()
            continue
        smallest = min(len(f.groups) for f in found)
        assert smallest == engine.value
        smallest_factors = {frozenset(f.groups) for f in found if len(f.groups) == smallest}
        assert smallest_factors == {frozenset(e) for e in engine.explanations}


# --- sample mode (Alg. 1 with the binomial test; Thm 2) --------------------------------------------------

def gaussian_population(n, seed):
    """f = 1 iff a + b + c > 1.5; input (1, 1, 1); references N(0, 1): PS({a, b}) ≈ 0.69, PS({a}) ≈ 0.36."""
    rng = np.random.default_rng(seed)
    cols = ["a", "b", "c"]
    frame = pd.DataFrame(np.vstack([np.ones((1, 3)), rng.normal(size=(n, 3))]), columns=cols)
    model = model_of(lambda f: (f[cols].to_numpy(float).sum(axis=1) > 1.5).astype(float), cols)
    data = dataset_of(frame, kinds={c: "numeric" for c in cols})
    return lens_contexts(model, data, frame.iloc[[0]], frame.iloc[1:], ContextOptions(directions=["r2i"]))["r2i"]


def subsample(ctx, rows):
    return dataclasses.replace(ctx, labels=ctx.labels[rows], distances=ctx.distances[rows],
                               reference_ids=ctx.reference_ids[rows])


def test_sample_mode_converges_to_exact_mode():
    population = gaussian_population(20_000, seed=0)
    assert np.all(np.abs(population.ps - 0.6) > 0.05)  # no factor sits on the threshold
    exact = factors(population.minimal_factors(0.6))
    assert exact == {frozenset(s) for s in ({"a", "b"}, {"a", "c"}, {"b", "c"})}
    rng = np.random.default_rng(1)
    wrong = {}
    for n in (10, 3000):
        draws = [factors(subsample(population, rng.choice(20_000, n, replace=False)).minimal_factors(0.6, alpha=0.05))
                 for _ in range(20)]
        wrong[n] = sum(d != exact for d in draws)
    assert wrong[10] >= 10 and wrong[3000] == 0


def test_alpha_bounds_false_positives_on_a_null():
    """I2R on one group with true PS = 0.79 < τ = 0.8: accepting {g} is a type I error."""
    values = np.r_[[-1.0], np.linspace(0.0, 1.0, 10_001)[:10_000]]  # f = 1 on exactly 79% of the references
    frame = pd.DataFrame({"g": values})
    model = model_of(lambda f: ((f["g"] >= 0) & (f["g"] < 0.79)).to_numpy(float), ["g"])
    data = dataset_of(frame, kinds={"g": "numeric"})
    population = lens_contexts(model, data, frame.iloc[[0]], frame.iloc[1:], ContextOptions(directions=["i2r"]))["i2r"]
    assert population.ps[1] == 0.79
    rng = np.random.default_rng(5)
    trials = [subsample(population, rng.choice(10_000, 100)) for _ in range(1000)]
    rate = {alpha: np.mean([len(t.minimal_factors(0.8, alpha=alpha, correction="none").factors) > 0 for t in trials])
            for alpha in (None, 0.05, 0.25)}
    assert rate[0.05] <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 1000)
    assert rate[0.05] < rate[0.25] <= 0.25 + 3 * np.sqrt(0.25 * 0.75 / 1000)
    assert rate[None] > 0.3  # exact mode on a sample has no such guarantee


# --- cumulative PN (App. B) -------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(15))
def test_cumulative_pn_is_non_increasing_in_tau(seed):
    rng = np.random.default_rng(3000 + seed)
    model, data, frame, groups, mad = random_case(rng)
    for ctx in lens_contexts(model, data, frame.iloc[[0]], frame.iloc[1:], ContextOptions(mad=mad)).values():
        for alpha, order in itertools.product([None, 0.2], ["subset", "cost"]):
            curve = ctx.pn_curve(np.linspace(0.0, 1.0, 21), alpha=alpha, order=order)["cumulative_pn"].to_numpy()
            if not np.isnan(curve).all():
                assert np.all(np.diff(curve) <= 1e-12)
                assert alpha is not None or curve[0] == 1.0  # τ = 0: the empty factor covers every path


# --- batching, references and data plumbing --------------------------------------------------------------

def test_each_distinct_row_is_scored_once_in_one_call_with_progress():
    rng = np.random.default_rng(7)
    model, data, frame, groups, mad = random_case(rng, min_groups=4)
    refs = frame.iloc[np.r_[1:len(frame), 1:len(frame)]]  # every reference twice
    calls = []
    counted = dataclasses.replace(model)
    counted.score = lambda f: calls.append(len(f)) or model.score(f)
    seen = []
    one = lens_contexts(counted, data, frame.iloc[[0]], refs, ContextOptions(mad=mad),
                        progress=lambda f, msg: seen.append(f))
    samples = 2 * len(refs) * 2 ** len(groups)
    assert len(calls) == 2 and calls[-1] == 1  # one batch, then the input's own label
    assert calls[0] <= samples // 4  # repeated references, and R2I = I2R vertices, are scored once
    assert seen == sorted(seen) and seen[-1] == 1.0
    calls.clear()
    chunked = lens_contexts(counted, data, frame.iloc[[0]], refs, ContextOptions(mad=mad, chunk_rows=5))
    assert max(calls) <= 5 and len(calls) > 2
    for d in one:
        np.testing.assert_array_equal(one[d].labels, chunked[d].labels)


def test_opposite_references_are_seeded_and_predicted_opposite():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300)})
    model = model_of(lambda f: (f["a"] + f["b"] > 0).to_numpy(float), ["a", "b"])
    data = dataset_of(frame, kinds={"a": "numeric", "b": "numeric"})
    query = frame.iloc[[int(np.argmax(frame["a"] + frame["b"]))]]
    rows = np.arange(200)
    picked = opposite_references(model, data, query, rows, n=50, seed=3)
    assert len(picked) == 50 and set(picked.index) <= set(rows) and (model.label(picked) == 0).all()
    assert picked.index.equals(opposite_references(model, data, query, rows, n=50, seed=3).index)
    assert not picked.index.equals(opposite_references(model, data, query, rows, n=50, seed=4).index)
    everyone = opposite_references(model, data, query, rows, n=None)
    assert len(everyone) == int((model.label(frame.iloc[rows]) == 0).sum())


def test_real_dataset_rows_match_hand_built_interventions(german_lens_case):
    data, model, query, refs = german_lens_case
    contexts = lens_contexts(model, data, query, refs, ContextOptions(max_size=2))
    assert factor_masks(len(data.groups), 2).shape == contexts["r2i"].masks.shape == (1 + 20 + 190, 20)
    rng = np.random.default_rng(0)
    for direction, ctx in contexts.items():
        for r, j in zip(rng.integers(len(refs), size=15), rng.integers(len(ctx.masks), size=15)):
            moved = set(ctx.factor(j))
            source = {True: query.iloc[0], False: refs.iloc[r]}
            row = {c: source[(g.name in moved) == (direction == "r2i")][c] for g in data.groups for c in g.columns}
            assert ctx.labels[r, j] == model.label(pd.DataFrame([row]).astype(data.features.dtypes))[0]


def test_shap_curve_compares_best_subsets_with_top_attributions():
    rng = np.random.default_rng(11)
    model, data, frame, groups, mad = random_case(rng, min_groups=4)
    ctx = lens_contexts(model, data, frame.iloc[[0]], frame.iloc[1:], ContextOptions(mad=mad))["r2i"]
    hits, _, subsets, _ = brute_force(model, frame, groups, mad, "r2i", len(groups))
    names = tuple(data.group_names)
    attribution = Attribution("SHAP", names, rng.normal(size=len(names)), 0.0, "probability", "test")
    curve = shap_curve(ctx, attribution)
    ps = dict(zip(subsets, hits.mean(axis=0)))
    assert list(curve["size"]) == list(range(1, len(names) + 1))
    for _, row in curve.iterrows():
        top = frozenset(attribution.order[:row["size"]])
        assert row["attribution_ps"] == ps[top]
        assert row["lens_ps"] == max(v for s, v in ps.items() if len(s) == row["size"])
        assert ps[frozenset(row["lens_factor"])] == row["lens_ps"]
