"""SEVᵀ (Improving Decision Sparsity §4) against brute force: for every depth-≤ 4 tree of a grid, the fewest features
changed (to observed values) to reach the other class over the whole grid of observed values, the cheapest leaf over
all leaves read straight off scikit-learn's ``tree_`` (distinct features, then violated conditions), and the point
reported lands in a leaf of the other class; for ensembles, the grid brute force."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import xgboost
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

from explain_core.errors import Unreadable
from explain_core.intake.data import make_dataset
from explain_core.intake.encoding import make_encoder
from explain_core.intake.layout import TableChoices
from explain_core.intake.models import wrap_model
from explain_core.sev.tree_sev import TreeSEVResult, tree_sev

COLUMNS = ["a", "b", "c"]


@pytest.fixture(autouse=True)
def one_thread():
    with threadpool_limits(1):
        yield


def grid_data(seed: int, n: int = 70):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n, 3)).astype(float)
    noise = rng.random(n) < 0.1
    frame = pd.DataFrame(X, columns=COLUMNS).assign(y=((X @ rng.normal(size=3) > 0) ^ noise).astype(int))
    return make_dataset(frame, "y", choices=TableChoices(kinds=dict.fromkeys(COLUMNS, "numeric")))


def grid_minimum(model, data, query: pd.DataFrame, held=()) -> int | None:
    """Brute force over every mix of observed values (the ``held`` columns at the query's): the fewest features
    differing from the query among the points the model predicts in the other class."""
    values = [query[c].to_numpy() if c in held else np.unique(data.features[c]) for c in COLUMNS]
    grid = pd.DataFrame(list(itertools.product(*values)), columns=COLUMNS)
    other = model.label(grid) != model.label(query)[0]
    differ = (grid.to_numpy() != query[COLUMNS].to_numpy()).sum(axis=1)[other]
    return int(differ.min()) if len(differ) else None


def cheapest_leaf(tree, data, query: pd.DataFrame, c: int) -> tuple[int, int] | None:
    """Over all leaves of the other class: (distinct features to change, violated conditions), the smallest, reading
    each leaf's path off ``tree_`` and keeping the leaves some observed value of each feature can reach."""
    t = tree.tree_
    parent = {int(child): (node, side) for node in range(t.node_count)
              for side, child in (("left", t.children_left[node]), ("right", t.children_right[node])) if child >= 0}
    x = query[COLUMNS].to_numpy(float)[0]
    best = None
    for leaf in np.flatnonzero(t.children_left < 0):
        if int(np.argmax(t.value[leaf, 0])) == c:
            continue
        low, high, violated, node = np.full(3, -np.inf), np.full(3, np.inf), 0, int(leaf)
        while node in parent:
            node, side = parent[node]
            f, thr = t.feature[node], t.threshold[node]
            if side == "left":
                high[f] = min(high[f], thr)
                violated += not np.float32(x[f]) <= thr
            else:
                low[f] = max(low[f], thr)
                violated += not np.float32(x[f]) > thr
        observed = [np.unique(data.features[col]).astype(np.float32) for col in COLUMNS]
        if not all(((v > low[f]) & (v <= high[f])).any() for f, v in enumerate(observed)):
            continue
        moved = sum(not (low[f] < np.float32(x[f]) <= high[f]) for f in range(3))
        best = min(best or (moved, violated), (moved, violated))
    return best


@pytest.mark.parametrize("depth, criterion, seed",
                         list(itertools.product((1, 2, 3, 4), ("gini", "entropy"), range(4))))
def test_single_tree_sev_t_is_the_cheapest_reachable_leaf_and_lands_in_it(depth, criterion, seed):
    data = grid_data(seed)
    tree = DecisionTreeClassifier(max_depth=depth, criterion=criterion, random_state=seed).fit(data.features, data.y)
    model = wrap_model(tree, data)
    for row in range(0, len(data.features), 14):
        query = data.features.iloc[[row]]
        c = int(model.label(query)[0])
        result = tree_sev(model, data, query)
        assert result.value == grid_minimum(model, data, query)
        leaf = cheapest_leaf(tree, data, query, c)
        assert (None if leaf is None else leaf[0]) == result.value
        if result.value is None:
            assert result.status == "unexplainable" and not result.moved
            continue
        assert result.engine == "negative paths" and result.conditions == leaf[1] and result.confirmed
        point = query.copy()
        for column, value in result.point.items():
            point[column] = value
            assert value in set(data.features[column])  # an observed value
        assert sorted(result.point) == sorted(result.moved)
        reached = tree.apply(point[COLUMNS])[0]
        assert int(np.argmax(tree.tree_.value[reached, 0])) != c  # the point lands in a leaf of the other class
        assert np.isclose(model.score(point)[0], result.score)


@pytest.mark.parametrize("seed", range(8))
def test_ensemble_sev_t_equals_the_grid_brute_force(seed):
    data = grid_data(seed + 10, n=90)
    est = (GradientBoostingClassifier(n_estimators=6, max_depth=2, random_state=seed) if seed % 2 else
           xgboost.XGBClassifier(n_estimators=5, max_depth=2, n_jobs=1, random_state=seed))
    model = wrap_model(est.fit(data.features, data.y), data)
    for row in range(0, len(data.features), 18):
        query = data.features.iloc[[row]]
        result = tree_sev(model, data, query)
        assert result.value == grid_minimum(model, data, query)
        assert result.engine == ("one move" if result.value == 1 else "cp-sat")  # one move: scored, no solver
        if result.value is not None:
            point = query.copy()
            for column, value in result.point.items():
                point[column] = value
            assert model.label(point)[0] != model.label(query)[0] and result.confirmed and result.certified


@pytest.mark.parametrize("seed, held", [(0, ("a",)), (1, ("b",)), (2, ("a", "c")), (3, ("c",))])
def test_restricted_features_keep_the_row_value_as_brute_force_does(seed, held):
    """SEV®'s restricted features: SEVᵀ never moves them, and equals the grid brute force with them held."""
    data = grid_data(seed + 20, n=90)
    trees = (DecisionTreeClassifier(max_depth=3, random_state=seed),
             GradientBoostingClassifier(n_estimators=6, max_depth=2, random_state=seed))
    for est in trees:
        model = wrap_model(est.fit(data.features, data.y), data)
        for row in range(0, len(data.features), 15):
            query = data.features.iloc[[row]]
            result = tree_sev(model, data, query, restricted=held)
            assert result.value == grid_minimum(model, data, query, held), (type(est).__name__, row)
            assert not set(result.moved) & set(held)


def test_a_categorical_group_changes_to_an_observed_category_through_the_pipeline():
    rng = np.random.default_rng(0)
    n = 120
    frame = pd.DataFrame({"x": rng.integers(0, 5, n).astype(float), "colour": rng.choice(["red", "green", "blue"], n)})
    frame["y"] = ((frame["x"] > 2) & (frame["colour"] != "red")).astype(int)
    data = make_dataset(frame, "y")
    pipe = Pipeline([("encode", make_encoder(data)), ("model", GradientBoostingClassifier(n_estimators=10,
                                                                                          max_depth=2))])
    model = wrap_model(pipe.fit(data.features, data.y), data)
    query = data.features[(data.features["x"] > 2) & (data.features["colour"] == "blue")].iloc[[0]]
    result = tree_sev(model, data, query)
    assert result.value == 1 and result.confirmed
    assert result.point in ({"colour": "red"}, {"x": 2.0}, {"x": 1.0}, {"x": 0.0})
    assert TreeSEVResult.from_json(result.to_json()) == result


def test_sev_t_needs_a_tree_model():
    data = grid_data(0)
    mlp = wrap_model(MLPClassifier(max_iter=20).fit(data.features, data.y), data)
    with pytest.raises(Unreadable):
        tree_sev(mlp, data, data.features.iloc[[0]])
