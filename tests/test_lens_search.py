"""LENS on wide data and in the sample mode: the layered search against brute force over all subsets, its budget
and memory bound, Holm's family-wise control and the power limit of n references (issue 15 §1, §3)."""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy.stats import binomtest

from explain_core.lens import DIRECTIONS, ContextOptions, LensContext, lens_contexts
from explain_core.lens.search import FactorSearch, search_factors
from explain_core.lens.stats import holm, power_limit, references_needed
from test_lens import brute_force, brute_holm, brute_minimal, random_case


def minimal_by_brute_force(model, frame, groups, mad, direction, tau, alpha=None, correction="holm"):
    hits, costs, subsets, _ = brute_force(model, frame, groups, mad, direction, len(groups))
    expected, _ = brute_minimal(hits, costs, subsets, tau, alpha, "subset", correction)
    return expected, hits.mean(axis=0), subsets


@pytest.mark.parametrize("seed", range(40))
def test_first_layer_with_a_sufficient_factor_equals_brute_force(seed):
    rng = np.random.default_rng(5000 + seed)
    model, data, frame, groups, mad = random_case(rng)
    for direction in ("r2i", "i2r"):
        tau = float(rng.choice([0.5, 0.8, 1.0]))
        expected, ps, subsets = minimal_by_brute_force(model, frame, groups, mad, direction, tau)
        found = search_factors(model, data, frame.iloc[[0]], frame.iloc[1:],
                               FactorSearch(direction=direction, tau=tau, budget_rows=None), mad=mad,
                               chunk_rows=int(rng.choice([3, 10_000])))
        if expected:
            smallest = min(map(len, expected))
            assert {frozenset(f.groups) for f in found.result.factors} == {s for s in expected if len(s) == smallest}
            assert found.stopped == "found" and found.searched_size == smallest
        else:
            assert found.result.factors == () and found.stopped == "complete" and found.searched_size == len(groups)
            assert "No sufficient factor up to size" in found.message
        # every factor up to the size searched was scored, with the brute-force PS
        scored = {frozenset(found.context.factor(j)): found.context.ps[j] for j in range(len(found.context.masks))}
        assert set(scored) == {s for s in subsets if len(s) <= found.searched_size}
        assert all(scored[s] == pytest.approx(ps[subsets.index(s)]) for s in scored)
        assert found.best_ps == max(scored.values())


@pytest.mark.parametrize("seed", range(30))
def test_search_to_the_end_with_pruning_equals_alg1(seed):
    rng = np.random.default_rng(6000 + seed)
    model, data, frame, groups, mad = random_case(rng)
    alpha = [None, 0.2][seed % 2]
    for direction, correction in itertools.product(("r2i", "i2r"), ("holm", "none")):
        tau = float(rng.choice([0.3, 0.6, 0.9]))
        expected, _, _ = minimal_by_brute_force(model, frame, groups, mad, direction, tau, alpha, correction)
        found = search_factors(model, data, frame.iloc[[0]], frame.iloc[1:],
                               FactorSearch(direction=direction, tau=tau, alpha=alpha, correction=correction,
                                            until="all", budget_rows=None), mad=mad)
        assert {frozenset(f.groups): (f.ps, f.hits) for f in found.result.factors} == \
            {s: (v[0], v[1]) for s, v in expected.items()}
        pruned = [frozenset(found.context.factor(j)) for j in range(len(found.context.masks))]
        assert not any(a < b for a in expected for b in pruned)  # no superset of a factor found was scored


def test_each_row_is_scored_once_and_lower_layers_are_reused():
    rng = np.random.default_rng(3)
    model, data, frame, groups, mad = random_case(rng, min_groups=4)
    refs = frame.iloc[np.r_[1:len(frame), 1:len(frame)]]  # every reference twice
    for direction in ("r2i", "i2r"):
        calls = []
        counted = dataclasses.replace(model)
        counted.score = lambda f: calls.append(len(f)) or model.score(f)  # noqa: B023 (used in this iteration)
        found = search_factors(counted, data, frame.iloc[[0]], refs,
                               FactorSearch(direction=direction, tau=1.0, until="all", budget_rows=None), mad=mad)
        query = frame.iloc[0]
        differ = [{name for name, cols, _ in groups if any(query[c] != ref[c] for c in cols)}
                  for _, ref in frame.iloc[1:].iterrows()]
        factors = [set(found.context.factor(j)) for j in range(len(found.context.masks))]
        needed = sum(c <= d for d in differ for c in factors if c or direction == "r2i")
        assert sum(calls) - 1 == found.rows_scored == needed  # (+1: the input's own label)


def rows_needed(frame, groups, direction: str, size: int) -> int:
    """Brute force: the model rows layer ``size`` needs — pairs (distinct reference r, factor c of ``size`` groups)
    whose every group differs between r and the input (any other pair is a lower factor's row), the input itself
    (I2R's empty factor) excepted."""
    query, refs = frame.iloc[0], frame.iloc[1:].drop_duplicates()
    count = 0
    for _, ref in refs.iterrows():
        differ = [name for name, cols, _ in groups if any(query[c] != ref[c] for c in cols)]
        count += math.comb(len(differ), size)
    return 0 if direction == "i2r" and size == 0 else count


def test_the_budget_counts_model_rows_and_stops_with_an_honest_answer():
    rng = np.random.default_rng(9)
    model, data, frame, groups, mad = random_case(rng)
    while len(groups) < 4 or min(map(len, minimal_by_brute_force(model, frame, groups, mad, "r2i", 1.0)[0])) < 2:
        model, data, frame, groups, mad = random_case(rng)
    through = np.cumsum([rows_needed(frame, groups, "r2i", s) for s in range(3)])  # rows of sizes 0, 1, 2
    assert through[2] > through[1]  # the premise: layer 2 needs rows
    for budget, reached in ((through[1], 1), (through[2] - 1, 1), (through[2], 2)):
        found = search_factors(model, data, frame.iloc[[0]], frame.iloc[1:],
                               FactorSearch(tau=1.0, budget_rows=int(budget)), mad=mad, chunk_rows=1)
        assert found.rows_scored == through[reached] <= budget
        if reached == 1:
            assert found.stopped == "budget" and found.searched_size == 1
            assert found.next_rows == through[2] - through[1]
            assert f"{found.next_rows:,} more model rows" in found.message
            assert "No sufficient factor up to size 1" in found.message
        else:
            assert found.searched_size >= 2
        sizes = {len(found.context.factor(j)) for j in range(len(found.context.masks))}
        assert sizes == set(range(found.searched_size + 1))
        assert found.candidates == 2 ** len(groups)
        assert f"searched {found.searched:,} of {2 ** len(groups):,} candidate factors" in found.message
    n = len(frame) - 1
    capped = search_factors(model, data, frame.iloc[[0]], frame.iloc[1:],
                            FactorSearch(tau=1.0, budget_rows=None, max_samples=n * (1 + len(groups))), mad=mad)
    assert capped.stopped == "memory" and capped.searched_size == 1


def test_the_same_inputs_give_the_same_factors_on_a_slow_machine(german_lens_case):
    """The budget is work, not time: a model slowed down 20 ms per call (a busy server) gives the very factors,
    sizes and rows of the full-speed run, budget cut included."""
    import time

    data, model, query, refs = german_lens_case
    fast = search_factors(model, data, query, refs, FactorSearch(tau=0.9, budget_rows=None))
    budget = fast.rows_scored - 1  # the last layer no longer fits: the search stops one size earlier
    calls = []
    slowed = dataclasses.replace(model)
    slowed.score = lambda frame: calls.append(1) or time.sleep(0.02) or model.score(frame)
    slowed.scores_of = lambda estimator, X: calls.append(1) or time.sleep(0.02) or model.scores_of(estimator, X)
    runs = [search_factors(m, data, query, refs, FactorSearch(tau=0.9, budget_rows=budget)) for m in (model, slowed)]
    assert len(calls) > 1  # the slow model did the scoring
    for run in runs:
        assert run.stopped == "budget" and run.searched_size == fast.searched_size - 1
    a, b = runs
    assert [f.groups for f in a.result.factors] == [f.groups for f in b.result.factors]
    assert (a.best, a.best_ps, a.rows_scored, a.next_rows) == (b.best, b.best_ps, b.rows_scored, b.next_rows)
    np.testing.assert_array_equal(a.context.labels, b.context.labels)
    assert a.to_json() == b.to_json()


def test_encoded_rows_give_the_labels_of_raw_rows(german_lens_case):
    """A Pipeline with column-wise encoding is scored on mixed encoded rows: the same labels as raw rows."""
    data, model, query, refs = german_lens_case
    raw = lens_contexts(model, data, query, refs, ContextOptions(max_size=2))
    for direction in DIRECTIONS:
        found = search_factors(model, data, query, refs,
                               FactorSearch(direction=direction, tau=1.0, max_size=2, budget_rows=None))
        ctx = found.context
        assert found.rows_scored > 0 and len(ctx.masks) > 1
        columns = [raw[direction].index(ctx.factor(j)) for j in range(len(ctx.masks))]
        np.testing.assert_array_equal(ctx.labels, raw[direction].labels[:, columns])


# --- the sample mode: Holm, the boundary, the power limit --------------------------------------------------------

@pytest.mark.parametrize("seed", range(30))
def test_holm_equals_its_definition(seed):
    rng = np.random.default_rng(seed)
    p = rng.choice([rng.random(12), np.round(rng.random(12), 1)])  # ties too
    family = 12 + int(rng.integers(0, 5))
    assert set(np.flatnonzero(holm(p, 0.2, family))) == brute_holm(list(p), 0.2, family)


def null_context(rng, n, factors, ps):
    """Every non-empty factor of ``factors`` groups reaches y independently with probability ``ps`` < τ."""
    p = int(math.log2(factors + 1))
    masks = np.array([[b >> g & 1 for g in range(p)] for b in range(2 ** p)], dtype=bool)
    masks = masks[np.argsort(masks.sum(axis=1), kind="stable")]
    labels = (rng.random((n, len(masks))) < ps).astype(np.int8)
    labels[:, 0] = 0
    return LensContext("r2i", tuple(f"g{g}" for g in range(p)), masks, 1, 1, labels, np.zeros((n, p)), np.arange(n))


def test_holm_keeps_the_per_input_false_acceptance_at_alpha():
    """15 null factors per input (true PS 0.899 < τ = 0.9), 100 references, α = 0.05: testing each factor at α
    accepts some null factor for far more than 5% of inputs; Holm for at most 5% (3 s.e. of slack)."""
    rng = np.random.default_rng(0)
    inputs = [null_context(rng, 100, 15, 0.899) for _ in range(1500)]
    rate = {c: np.mean([len(ctx.minimal_factors(0.9, alpha=0.05, correction=c).factors) > 0 for ctx in inputs])
            for c in ("none", "holm")}
    slack = 3 * math.sqrt(0.05 * 0.95 / len(inputs))
    assert rate["none"] > 0.05 + slack
    assert rate["holm"] <= 0.05 + slack


def test_too_few_references_are_said_with_the_number_needed():
    assert power_limit(0.97, 0.05, 100, "none") is None  # 0.97^100 = 0.048 ≤ 0.05
    text = power_limit(0.975, 0.05, 100, "none")
    need = references_needed(0.975, 0.05)
    assert need == 119 and f"at least {need} references" in text and "τ ≤ 0.9705" in text
    assert 0.975 ** need <= 0.05 < 0.975 ** (need - 1)
    assert binomtest(need, need, 0.975, alternative="greater").pvalue <= 0.05  # n references on every hit pass
    assert power_limit(0.9, 0.05, 100, "holm", family=2 ** 20) is not None  # 0.9^100 = 2.7e-5 > 0.05 / 2^20
    assert power_limit(0.9, 0.05, references_needed(0.9, 0.05 / 2 ** 20), "holm", family=2 ** 20) is None
    assert "τ = 1 can never" in power_limit(1.0, 0.05, 10_000, "none")
    # the result carries it: a context of 100 references where every factor reaches y
    ctx = null_context(np.random.default_rng(1), 100, 3, 1.0)
    result = ctx.minimal_factors(0.975, alpha=0.05, correction="none")
    assert result.factors == () and "119 references" in result.limit


def test_the_boundary_ps_equal_to_tau_is_accepted_with_chance_about_alpha():
    """H0: PS < τ; at PS = τ exactly (H1's boundary) the test has no power beyond its level."""
    rng = np.random.default_rng(2)
    inputs = [null_context(rng, 200, 1, 0.8) for _ in range(1500)]
    rate = np.mean([len(ctx.minimal_factors(0.8, alpha=0.1, correction="none").factors) > 0 for ctx in inputs])
    assert rate <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / len(inputs))


@pytest.mark.parametrize("seed", range(20))
def test_the_plan_counts_the_rows_a_search_scores_before_any_model_call(seed):
    """:func:`plan_search` (what a page shows on its button) is the most the search scores: exactly its rows when no
    layer holds a sufficient factor, never fewer than it scores; the same stop (budget, memory, complete)."""
    from explain_core.lens.search import plan_search

    rng = np.random.default_rng(7000 + seed)
    model, data, frame, groups, mad = random_case(rng)
    for direction in ("r2i", "i2r"):
        tau = float(rng.choice([0.6, 1.0]))
        budget = None if rng.random() < 0.3 else int(rng.integers(1, 4 * len(frame) * len(groups)))
        samples = None if rng.random() < 0.5 else int((len(frame) - 1) * rng.integers(1, 2 ** len(groups)))
        options = FactorSearch(direction=direction, tau=tau, budget_rows=budget, max_samples=samples)
        found = search_factors(model, data, frame.iloc[[0]], frame.iloc[1:], options, mad=mad)
        plan = plan_search(data, frame.iloc[[0]], frame.iloc[1:], options)
        assert plan.rows >= found.rows_scored and plan.size >= found.searched_size
        if found.stopped != "found":
            assert (plan.rows, plan.size, plan.stop) == (found.rows_scored, found.searched_size, found.stopped)
