"""MAPLE (the PLE paper's dense baseline, Table 2): the supervised neighbourhood against a brute-force count of
shared leaves, the weighted ridge against scikit-learn's Ridge, the coefficients of an exactly linear model
recovered, and MAPLE beside LIME in :func:`compare` with the same metrics."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import Ridge

from explain_core.linear import maple as maple_module
from explain_core.linear.compare import FittingOptions, compare
from explain_core.linear.maple import maple, maple_fit, neighbourhood_weights, root_scores, weighted_ridge
from explain_core.linear.space import draw_sample


@pytest.mark.parametrize("seed", range(5))
def test_neighbourhood_weights_equal_a_brute_force_leaf_count(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    forest = RandomForestRegressor(n_estimators=4, min_samples_leaf=3, random_state=seed).fit(X, X @ [1, -2, 0.5])
    train_leaves, queries = forest.apply(X), rng.normal(size=(6, 3))
    leaves = forest.apply(queries)
    brute = np.zeros((len(queries), len(X)))
    for q in range(len(queries)):
        for t in range(4):
            mates = [i for i in range(len(X)) if train_leaves[i, t] == leaves[q, t]]
            for i in mates:
                brute[q, i] += 1 / len(mates) / 4
    np.testing.assert_allclose(neighbourhood_weights(train_leaves, leaves), brute)
    np.testing.assert_allclose(brute.sum(axis=1), 1.0)  # each tree's leaf shares one unit of weight


def test_root_scores_sum_the_root_impurity_of_the_trees_splitting_there():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 4))
    forest = RandomForestRegressor(n_estimators=12, max_features=0.5, random_state=0).fit(X, X[:, 0] + 0.3 * X[:, 2])
    want = np.zeros(4)
    for tree in forest.estimators_:
        want[tree.tree_.feature[0]] += tree.tree_.impurity[0]
    np.testing.assert_allclose(root_scores(forest, 4), want)


@pytest.mark.parametrize("seed", range(5))
def test_weighted_ridge_equals_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    X, y, w = rng.normal(size=(50, 4)), rng.normal(size=50), rng.random(50) * (rng.random(50) > 0.3)
    intercept, beta = weighted_ridge(X, y, w, alpha=0.3)
    theirs = Ridge(alpha=0.3).fit(X, y, sample_weight=w)
    assert intercept == pytest.approx(theirs.intercept_)
    np.testing.assert_allclose(beta, theirs.coef_, atol=1e-10)


def test_validation_rmse_equals_one_ridge_per_feature_count():
    rng = np.random.default_rng(4)
    X, X_val = rng.normal(size=(300, 4)), rng.normal(size=(20, 4))
    f = lambda A: np.sin(A[:, 0]) + A[:, 1] * A[:, 2]  # noqa: E731
    forest = RandomForestRegressor(n_estimators=10, min_samples_leaf=10, random_state=0).fit(X, f(X))
    order = np.array([2, 0, 3, 1])
    ours = maple_module._validation_rmse(X, f(X), forest.apply(X), order, X_val, f(X_val), forest.apply(X_val), 10)
    weights = neighbourhood_weights(forest.apply(X), forest.apply(X_val)) * 10
    for r in range(1, 5):
        keep = order[:r]
        fits = [weighted_ridge(X[:, keep], f(X), weights[v]) for v in range(len(X_val))]
        pred = np.array([b + X_val[v, keep] @ beta for v, (b, beta) in enumerate(fits)])
        assert ours[r - 1] == pytest.approx(np.sqrt(np.mean((pred - f(X_val)) ** 2)))


def test_maple_recovers_an_exactly_linear_model():
    rng = np.random.default_rng(0)
    X, X_val = rng.normal(size=(1500, 3)), rng.normal(size=(500, 3))
    truth = np.array([1.5, -2.0, 0.7])
    intercept, coef, rmse = maple(X, 0.4 + X @ truth, X_val, 0.4 + X_val @ truth, np.array([0.2, -0.5, 1.0]))
    np.testing.assert_allclose(coef, truth, atol=1e-3)
    assert intercept == pytest.approx(0.4, abs=1e-3) and rmse < 1e-3


def test_maple_beside_lime_in_the_boolean_space(monkeypatch):
    """Its w scored like every other method on the shared sample (fewer trees to keep the test quick)."""
    from test_linear import function_space

    monkeypatch.setattr(maple_module, "N_ESTIMATORS", 40)
    v = np.array([0.1, 0.5, -0.4, 0.3, 0.0, 0.2, -0.1, 0.25])
    space = function_space(lambda Z: np.tanh(Z @ v + 0.3 * Z[:, 1] * Z[:, 2]), 8)
    comp = compare(space, 3, 1.0, 600, seed=2, options=FittingOptions(methods=("iht", "lime", "maple")))
    row, w = comp.table().loc["maple"], comp.result("maple").w
    assert row.support_size == np.count_nonzero(np.abs(w) > 1e-12) and row.max_abs_weight == np.abs(w).max()
    assert row.anchoring_gap == pytest.approx(abs(w @ space.x - comp.fx))
    assert row.empirical_fidelity == pytest.approx(draw_sample(space, 1.0, 600, 2).fidelity(w))
    again, detail = maple_fit(draw_sample(space, 1.0, 600, 2), seed=2)
    np.testing.assert_allclose(again, w)  # seeded, and fitted on compare's sample
    assert detail.endswith(")") and "literals kept" in detail
