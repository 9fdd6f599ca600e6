"""Counterfactuals side by side: DiCE's points flip the prediction, honour the restricted features and are
reproducible with the seed; every method's ℓ0 / ℓ∞ / ℓ1 against a hand computation; the comparison round-trips
through JSON."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from explain_core.analysis import Parameters, budget_depth, demo_setup, predicted_rows, row_counterfactuals
from explain_core.counterfactuals import (CounterfactualComparison, CounterfactualParameters, compare_counterfactuals,
                                         dice_points)
from explain_core.references import fit_references


@pytest.fixture(scope="module")
def german():
    return demo_setup("german_credit", "l2_lr").with_restricted(["age", "personal_status_sex"])


@pytest.fixture(scope="module")
def row(german):
    return german.query(int(predicted_rows(german)[0]))


@pytest.fixture(scope="module")
def comparison(german, row):
    return compare_counterfactuals(german, row, dice=CounterfactualParameters(seed=0))


def test_every_point_flips_and_keeps_the_restricted_features(german, row, comparison):
    assert [m.method for m in comparison.methods] == ["SEV¹", "SEV^F", "SEV^© (sparsest of 8 typical cases)",
                                                         "DiCE (random)"]
    dice = comparison.methods[-1]
    assert dice.points, dice.note
    for method in comparison.methods:
        for p in method.points:
            point = row.copy()
            for column, value in p.values.items():
                point[column] = value
            assert german.model.label(point.infer_objects())[0] == 0, method.method
            assert not set(p.groups) & set(german.restricted)
            assert all(row.iloc[0][c] == point.iloc[0][c] for c in ("age", "personal_status_sex"))


def test_metrics_by_hand(german, row, comparison):
    """ℓ0 counts the groups that differ; ℓ∞ / ℓ1 the numeric changes in SDs of the training rows of the other class."""
    negatives = german.dataset.features.iloc[german.train_rows[german.dataset.y[german.train_rows] == 0]]
    q = row.iloc[0]
    for method in comparison.methods:
        for p in method.points:
            steps = [abs(float(v) - float(q[c])) / negatives[c].std(ddof=0) for c, v in p.values.items()
                     if german.dataset.group(c).kind == "numeric"]
            changed = [c for c, v in p.values.items() if v != q[c]]
            assert p.l0 == len(changed) == len(p.groups)
            assert p.linf == pytest.approx(max(steps, default=0.0)) and p.l1 == pytest.approx(sum(steps))
            assert 0 <= p.credibility <= 1


def test_dice_is_reproducible_with_its_seed(german, row):
    fitted = fit_references(german, 1)
    one = dice_points(german, row, fitted, seed=3)
    two = dice_points(german, row, fitted, seed=3)
    assert [p.values for p in one.points] == [p.values for p in two.points] and one.points
    genetic = dice_points(german, row, fitted, method="genetic", count=1, seed=3)
    again = dice_points(german, row, fitted, method="genetic", count=1, seed=3)
    assert [p.values for p in genetic.points] == [p.values for p in again.points]


def test_comparison_round_trips_through_json(comparison):
    again = CounterfactualComparison.from_json(comparison.to_json())
    assert again == comparison and again.to_json() == comparison.to_json()
    summary = comparison.summary()
    assert list(summary.columns) == ["points", "ℓ0", "ℓ∞ (SD)", "ℓ1 (SD)", "credibility", "seconds", "note"]
    assert np.isfinite(summary.loc["DiCE (random)", "ℓ∞ (SD)"])


def test_a_row_with_a_missing_value_gets_a_note_not_dices_advice(german, row):
    """DiCE refuses a query with a missing value and advised to "impute the missing values and try again", which
    the app cannot do; the note says what is missing."""
    fitted = fit_references(german, 1)
    gap = row.copy()
    gap[["duration_months", "purpose"]] = [np.nan, None]
    found = dice_points(german, gap, fitted, seed=0)
    assert found.points == () and found.note == ("DiCE cannot start from a row with a missing value "
                                                 "(duration_months and purpose missing here)")


def _sets_up_to(movable: int, depth: int) -> int:
    return sum(1 for d in range(1, depth + 1) for _ in itertools.combinations(range(movable), d))


@pytest.mark.parametrize("budget", [5, 18, 171, 172, 1_000, 200_000])
def test_the_budget_depth_is_the_deepest_whose_sets_fit_the_budget(german, budget):
    """Against every set of the 18 movable groups counted one by one: the depth is the largest whose sets of up to
    that many features fit the budget (never below 1, never above the maximum depth), and it names the next
    layer's count."""
    depth, words = budget_depth(german, Parameters(sev_budget_rows=budget))
    fits = [d for d in range(1, Parameters().max_depth + 1) if _sets_up_to(18, d) <= budget]
    assert depth == max([1, *fits])
    if depth < Parameters().max_depth:
        assert f"the {_sets_up_to(18, depth + 1) - _sets_up_to(18, depth):,} sets of {depth + 1}" in words
        assert f"budget of {budget:,} model rows" in words
    else:
        assert words == ""


def test_counterfactuals_stop_at_the_budget_and_say_so():
    """A search the budget stops at depth 1 gives the points of a depth-1 search, and the kind it leaves open says
    why in its note; where the budget does not bind, nothing changes."""
    compas = demo_setup("compas", "l2_lr")
    row = compas.query(int(predicted_rows(compas)[1]))
    capped = row_counterfactuals(compas, row, Parameters(sev_budget_rows=10))
    plain = compare_counterfactuals(compas, row, max_depth=1, dice=CounterfactualParameters(seed=0))
    assert [[p.values for p in m.points] for m in capped.methods[:-1]] == \
        [[p.values for p in m.points] for m in plain.methods[:-1]]
    left_open = [m for m in capped.methods[:-1] if not m.points]
    assert left_open, "row 1's SEV¹ needs 2 features"
    for m in left_open:
        assert m.note == ("no explanation of up to 1 feature: the 21 sets of 2 would pass the SEV search budget of "
                          "10 model rows per search — raise it to search deeper")
    assert budget_depth(compas, Parameters()) == (Parameters().max_depth, "")
