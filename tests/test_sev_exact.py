"""The exact SEV engines (CP-SAT on the model's trees, sorting for additive models) against the BFS's full
enumeration of the hypercube (the BFS with max_depth = every group: an independent, model-call oracle): the same
values and the same sets of minimal explanations on random small ensembles of every family read, with one-hot groups,
restricted groups, custom thresholds, regressions and float32 boundary values planted at the split thresholds."""
from __future__ import annotations

import warnings

import catboost
import lightgbm
import numpy as np
import pandas as pd
import pytest
import xgboost
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

from explain_core.intake.data import make_dataset
from explain_core.intake.encoding import make_encoder
from explain_core.intake.layout import TableChoices
from explain_core.intake.models import wrap_model
from explain_core.reference import Reference
from explain_core.sev import BFSSearch, sev_batch
from explain_core.sev.exact_sev import ExactSearch, exact_engine, exact_sev_batch, prepare
from explain_core.sev.readers import read_structure


@pytest.fixture(autouse=True)
def one_thread():
    """HistGradientBoosting's OpenMP threads cost ~1 s per fit on a busy 2-core machine; one thread costs ms."""
    with threadpool_limits(1):
        yield


FAMILIES = ("gbdt", "rf", "et", "hgb", "xgb", "lgbm", "gbdt_reg", "xgb_reg", "rf_reg", "tree", "cat", "cat_reg")


def estimator(family: str, rng):
    trees, depth = int(rng.integers(2, 9)), int(rng.integers(1, 4))
    seed = int(rng.integers(1000))
    return {
        "gbdt": lambda: GradientBoostingClassifier(n_estimators=trees, max_depth=depth, random_state=seed),
        "rf": lambda: RandomForestClassifier(n_estimators=trees, max_depth=depth + 1, random_state=seed),
        "et": lambda: ExtraTreesClassifier(n_estimators=trees, max_depth=depth + 1, random_state=seed),
        "hgb": lambda: HistGradientBoostingClassifier(max_iter=trees, max_depth=depth + 1, random_state=seed),
        "xgb": lambda: xgboost.XGBClassifier(n_estimators=trees, max_depth=depth, n_jobs=1, random_state=seed),
        "lgbm": lambda: lightgbm.LGBMClassifier(n_estimators=trees, num_leaves=2 ** depth, min_child_samples=3,
                                                n_jobs=1, verbose=-1, random_state=seed),
        "gbdt_reg": lambda: TransformedTargetRegressor(GradientBoostingRegressor(n_estimators=trees, max_depth=depth,
                                                                                 random_state=seed),
                                                       transformer=StandardScaler()),
        "xgb_reg": lambda: xgboost.XGBRegressor(n_estimators=trees, max_depth=depth, n_jobs=1, random_state=seed),
        "rf_reg": lambda: RandomForestRegressor(n_estimators=trees, max_depth=depth + 1, random_state=seed),
        "tree": lambda: DecisionTreeClassifier(max_depth=depth + 2, random_state=seed),
        "cat": lambda: catboost.CatBoostClassifier(iterations=trees, depth=depth, thread_count=1, verbose=0,
                                                   random_seed=seed, allow_writing_files=False),
        "cat_reg": lambda: catboost.CatBoostRegressor(iterations=trees, depth=depth, thread_count=1, verbose=0,
                                                      random_seed=seed, allow_writing_files=False),
    }[family]()


def random_data(rng, regression: bool, with_blocks: bool):
    """Numeric groups (some on a coarse grid, so ties and thresholds repeat), optionally a declared one-hot block and
    a categorical column; a target with an interaction."""
    n, p = 80, int(rng.integers(2, 7))
    X = rng.normal(size=(n, p)).round(int(rng.integers(0, 3)))
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    signal = X @ rng.normal(size=p) + X[:, 0] * X[:, -1]
    onehot = {}
    if with_blocks:
        pick = rng.integers(0, 3, size=n)
        for k, name in enumerate(("blk_a", "blk_b", "blk_c")):
            frame[name] = (pick == k).astype(int)
        onehot = {"blk": ["blk_a", "blk_b", "blk_c"]}
        frame["colour"] = rng.choice(["red", "green", "blue"], size=n)
        signal = signal + (pick - 1) + (frame["colour"] == "red")
    frame["y"] = signal + rng.normal(size=n) * 0.3 if regression else (signal > np.median(signal)).astype(int)
    return make_dataset(frame, "y", task="regression" if regression else "classification",
                        choices=TableChoices(onehot_groups=onehot))


def thresholds(model) -> dict[int, np.ndarray]:
    """The split thresholds of a raw-column model per input (read as the server would)."""
    data = read_structure(model.estimator, [str(c) for c in model.columns])
    inner = data["feature"] >= 0
    return {int(f): data["threshold"][inner][data["feature"][inner] == f] for f in np.unique(data["feature"][inner])}


def plant(values: dict, model, rng) -> dict:
    """Values set exactly at a split threshold, or one float32 / float64 step either side of it."""
    values = dict(values)
    for f, ts in thresholds(model).items():
        column = model.columns[f]
        if rng.random() < 0.5:
            t = float(rng.choice(ts))
            step = rng.choice(["at", "f32 up", "f32 down", "f64 up", "f64 down"])
            values[column] = {"at": t, "f32 up": float(np.nextafter(np.float32(t), np.float32(np.inf))),
                              "f32 down": float(np.nextafter(np.float32(t), np.float32(-np.inf))),
                              "f64 up": np.nextafter(t, np.inf), "f64 down": np.nextafter(t, -np.inf)}[step]
    return values


def random_case(seed: int):
    rng = np.random.default_rng(seed)
    family = FAMILIES[seed % len(FAMILIES)]
    regression = family.endswith("_reg")
    piped = rng.random() < 0.5
    data = random_data(rng, regression, with_blocks=piped)
    est = estimator(family, rng)
    fitted = Pipeline([("encode", make_encoder(data)), ("model", est)]) if piped else est
    y = data.y if regression else data.y.astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted.fit(data.features, y)
    threshold = None
    if not regression and rng.random() < 0.3:
        threshold = float(rng.choice([0.3, 0.45, 0.6]))
    model = wrap_model(fitted, data, threshold=threshold)
    rows = rng.choice(len(data.features), size=3, replace=False)
    query, ref = data.features.iloc[rows[:2]].copy(), data.features.iloc[rows[2]].to_dict()
    if not piped:  # plant boundary values on raw inputs (thresholds are in the raw columns' units)
        for i in range(len(query)):
            query.iloc[i] = pd.Series(plant(query.iloc[i].to_dict(), model, rng))
        ref = plant(ref, model, rng)
    for column, value in ref.items():  # some groups equal at the query and the reference: never moved
        if rng.random() < 0.15:
            query[column] = value
    names = data.group_names
    restricted = tuple(n for n in names if rng.random() < 0.25)
    return data, model, query.reset_index(drop=True), Reference(ref, "test"), restricted


def assert_same(exact, bfs, where: str):
    for a, b in zip(exact, bfs):
        assert (a.value, a.status) == (b.value, b.status), where
        assert set(a.explanations) == set(b.explanations), where
        assert a.certified and a.complete and a.explained_class == b.explained_class, where


@pytest.mark.parametrize("seed", range(300))
def test_exact_equals_the_full_bfs_on_random_ensembles(seed):
    data, model, queries, reference, restricted = random_case(seed)
    layout = data.layout
    engine = exact_engine(model, layout)
    prepared = prepare(engine, queries, reference)
    for kind, held in (("minus", ()), ("plus", ()), ("minus", restricted)):
        bfs = sev_batch(model, layout, queries, reference, BFSSearch(kind=kind, restricted=held, max_depth=layout.size))
        exact = exact_sev_batch(engine, queries, reference,
                                ExactSearch(kind=kind, restricted=held, shallow=0 if seed % 2 else 2_000),
                                prepared=prepared)
        assert_same(exact, bfs, f"{seed} {kind} {held}")
        for result in exact:  # every explanation is the model's own: re-scored, and the score kept
            for groups in result.explanations:
                moved = np.isin(layout.names, groups)
                mask = ~moved if kind == "minus" else moved
                assert (result.vertex_masks == mask).all(axis=1).any()


def nan_case(seed: int):
    """Models trained with missing values, and missing values in the query and the reference."""
    rng = np.random.default_rng(seed)
    family = ("xgb", "lgbm", "hgb", "tree", "cat", "rf")[seed % 6]
    data = random_data(rng, False, with_blocks=False)
    features = data.features.mask(rng.random(data.features.shape) < 0.2)
    data = make_dataset(features.assign(y=data.y), "y")
    est = estimator(family, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(data.features, data.y)
    model = wrap_model(est, data)
    rows = rng.choice(len(features), size=4, replace=False)
    return data, model, features.iloc[rows[:3]].reset_index(drop=True), Reference(features.iloc[rows[3]].to_dict(), "t")


@pytest.mark.parametrize("seed", range(24))
def test_missing_values_go_where_the_library_sends_them(seed):
    data, model, queries, reference = nan_case(seed)
    engine = exact_engine(model, data.layout)
    for kind in ("minus", "plus"):
        bfs = sev_batch(model, data.layout, queries, reference, BFSSearch(kind=kind, max_depth=data.layout.size))
        exact = exact_sev_batch(engine, queries, reference, ExactSearch(kind=kind, shallow=0))
        assert_same(exact, bfs, f"{seed} {kind}")
