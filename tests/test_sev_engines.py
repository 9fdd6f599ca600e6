"""The additive engine against the BFS (logistic regression on groups, stumps, ties), the exact engines at a width the
BFS cannot reach (against the BFS run to the exact value's depth), ties at the decision threshold, the budget, the
dispatch (auto / bfs / exact and the notes), and the validation of the plain data a model hands over."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
import xgboost
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from threadpoolctl import threadpool_limits

from explain_core.errors import IntakeError, Unreadable
from explain_core.intake.data import make_dataset
from explain_core.intake.encoding import make_encoder
from explain_core.intake.models import wrap_model
from explain_core.reference import Reference, make_reference
from explain_core.setup import Parameters
from explain_core.sev import (BFSSearch, SEVParameters, SEVRequest, SEVResult, explain_sev, sev_batch,
                              sev_results)
from explain_core.sev.engine import SEVExplanation
from explain_core.sev.exact_sev import ExactSearch, exact_engine, exact_sev_batch
from explain_core.sev.readers import read_inputs, read_structure
from explain_core.sev.trees import ensemble_from_plain
from explain_core.views.readings import engine_sentence


@pytest.fixture(autouse=True)
def one_thread():
    with threadpool_limits(1):
        yield


def frame_data(rng, n=200, p=8, categorical=False, tied=False):
    X = rng.normal(size=(n, p)).round(1)
    if tied:  # several groups with the same effect: many minimal explanations, all ties
        X[:, 1:4] = X[:, [0]] + rng.normal(size=(n, 3)) * 1e-3
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    signal = X @ rng.normal(size=p)
    if categorical:
        frame["colour"] = rng.choice(["red", "green", "blue"], size=n)
        signal = signal + 2 * (frame["colour"] == "red")
    frame["y"] = (signal + rng.normal(size=n) * 0.3 > 0).astype(int)
    return make_dataset(frame, "y")


def parity(model, data, queries, reference, restricted=()):
    """The exact engines' results beside the BFS's full enumeration, for SEV⁻, SEV⁺ and SEV®."""
    layout = data.layout
    engine = exact_engine(model, layout)
    out = []
    for kind, held in (("minus", ()), ("plus", ()), ("minus", restricted)):
        exact = exact_sev_batch(engine, queries, reference, ExactSearch(kind=kind, restricted=held))
        bfs = sev_batch(model, layout, queries, reference, BFSSearch(kind=kind, restricted=held, max_depth=layout.size))
        for a, b in zip(exact, bfs):
            assert (a.value, a.status, set(a.explanations)) == (b.value, b.status, set(b.explanations)), kind
        out += exact
    return out


@pytest.mark.parametrize("seed", range(12))
def test_additive_engine_equals_the_bfs_on_logistic_regression_and_stumps(seed):
    rng = np.random.default_rng(seed)
    data = frame_data(rng, categorical=seed % 2 == 0, tied=seed % 3 == 0)
    est = [LogisticRegression(C=1.0), GradientBoostingClassifier(n_estimators=30, max_depth=1, random_state=seed),
           Ridge()][seed % 3]
    y = data.y.astype(float) if isinstance(est, Ridge) else data.y
    pipe = Pipeline([("encode", make_encoder(data)), ("model", est)]).fit(data.features, y)
    dataset = make_dataset(data.features.assign(y=y), "y", task="regression") if isinstance(est, Ridge) else data
    model = wrap_model(pipe, dataset)
    rows = rng.choice(len(data.features), size=5, replace=False)
    queries, reference = data.features.iloc[rows[:4]], make_reference(dataset)
    results = parity(model, dataset, queries, reference, restricted=("x0",))
    assert {r.engine for r in results} == {"additive"}


@pytest.mark.parametrize("kind", ["scaler", "xgboost"])
def test_a_scaled_pipeline_and_a_wrapped_xgboost_are_scored_as_arrays_with_the_models_own_scores(kind):
    """A Pipeline whose first step is a bare scaler, and an XGBClassifier fitted on the data's frame, are split
    (encoder + final step: vertices mixed as arrays, no data frame per call); every vertex's score equals the whole
    model's score of the mixed raw row, and the exact engine still agrees with the BFS."""
    from sklearn.preprocessing import StandardScaler

    from explain_core.intake.encoding import encoded_model
    from explain_core.vertices import VertexScorer, mix

    rng = np.random.default_rng(3)
    data = frame_data(rng, p=6)
    est = Pipeline([("scale", StandardScaler()), ("model", LogisticRegression())]) if kind == "scaler" else \
        xgboost.XGBClassifier(n_estimators=20, max_depth=1, n_jobs=1, random_state=0)
    model = wrap_model(est.fit(data.features, data.y), data)
    assert encoded_model(model, data.layout.groups) is not None
    queries, reference = data.features.iloc[:3], make_reference(data)
    masks = rng.random((40, data.layout.size)) < 0.5
    scores = VertexScorer(model, data.layout, queries, reference).scores(np.arange(3), masks)
    raw = model.score(mix(data.layout, queries, reference, masks)).reshape(3, len(masks))
    np.testing.assert_allclose(scores, raw, rtol=1e-6, atol=1e-9)
    parity(model, data, queries, reference, restricted=("x0",))


def wide_model(p=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3000, p))
    w = np.zeros(p)
    w[:12] = rng.uniform(0.4, 1.0, size=12)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(p)])
    frame["y"] = (X @ w + 0.5 * X[:, 12] * X[:, 13] > 0).astype(int)
    data = make_dataset(frame, "y")
    est = xgboost.XGBClassifier(n_estimators=60, max_depth=4, learning_rate=0.2, n_jobs=1, random_state=seed)
    return data, wrap_model(est.fit(data.features, data.y), data)


def test_wide_xgboost_is_certified_where_the_bfs_stops_and_agrees_with_it_at_that_depth():
    data, model = wide_model()
    reference = make_reference(data)
    rows = np.argsort(-model.score(data.features))[::40][:8]  # positives from the most to the less confident
    queries = data.features.iloc[rows]
    exact = sev_results(model, data.layout, queries, reference,
                        SEVRequest(kind="minus"))  # auto: BFS layers, then exact
    assert {r.engine for r in exact} <= {"bfs", "cp-sat", "tree layers"}
    assert all(r.certified and r.complete for r in exact)
    assert {"bfs", "cp-sat"} <= {r.engine for r in exact}
    assert [r.value for r in exact] == [r.value for r in sev_results(model, data.layout, queries, reference,
                                                                     options=SEVParameters(sev_method="exact"))]
    for i, result in enumerate(exact):  # the BFS run to the exact value's depth finds the same sets
        depth = min(result.value, 4)
        bfs = sev_batch(model, data.layout, queries.iloc[[i]], reference, BFSSearch(max_depth=depth))[0]
        if result.value <= 4:
            assert (bfs.value, set(bfs.explanations)) == (result.value, set(result.explanations))
        else:  # beyond what a BFS of this depth searched: it cannot answer, the exact engine can
            assert bfs.status == "beyond_depth"
        if result.value > 1:
            assert sev_batch(model, data.layout, queries.iloc[[i]], reference,
                             BFSSearch(max_depth=min(result.value - 1, 4)))[0].status == "beyond_depth"
    assert any(r.value > 4 for r in exact) and any(1 < r.value <= 4 for r in exact)
    from explain_core.views.sev import path_scores
    for i, result in enumerate(exact):  # the paths figure reads the score of every vertex along each shortest path
        if result.engine == "cp-sat":
            start = float(model.score(queries.iloc[[i]])[0])
            scores = path_scores(result, data.layout.names, result.explanations[0], start)
            assert np.isfinite(scores).all() and len(scores) == result.value + 1
            assert model.labels_of(scores[-1:])[0] != result.explained_class


def test_the_budget_is_deterministic_work_and_a_spent_budget_says_so():
    data, model = wide_model(p=40, seed=1)
    reference = make_reference(data)
    row = data.features.iloc[np.flatnonzero(model.label(data.features) == 1)[:1]]
    engine = exact_engine(model, data.layout)
    full = exact_sev_batch(engine, row, reference, ExactSearch(shallow=0))[0]
    cut = [exact_sev_batch(engine, row, reference, ExactSearch(shallow=0, budget=1e-4))[0] for _ in range(2)]
    assert cut[0].status == "limit" and not cut[0].certified and cut[0].bound <= full.value
    assert dataclasses.replace(cut[0], vertex_masks=None, vertex_scores=None) == \
        dataclasses.replace(cut[1], vertex_masks=None, vertex_scores=None)
    assert cut[0].shown in (f"{cut[0].bound}–{cut[0].value}", f"≥ {cut[0].bound}") and \
        "budget ran out" in cut[0].message
    words = engine_sentence(cut[0], "the 'Exact solver budget' control")  # the bracket names what narrows it
    assert f"at least {cut[0].bound}" in words and "(raise the 'Exact solver budget' control to certify it)." in words
    assert "minimal explanation" not in words  # a bracket's flip is not proven minimal
    assert ("The flip it found is listed" in words) == bool(cut[0].explanations)
    again = exact_sev_batch(engine, row, reference, ExactSearch(shallow=0))[0]
    assert (again.value, again.explanations) == (full.value, full.explanations)


def test_ties_at_the_threshold_are_decided_by_the_models_own_rule():
    """A 4-tree forest scores in steps of 1/4: vertices land exactly on 0.5 (default rule: predict, a tie goes to
    class 0) and on a custom threshold 0.25 (score ≥ t); a regression forest lands exactly on its threshold."""
    rng = np.random.default_rng(3)
    data = frame_data(rng, n=120, p=6)
    forest = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(data.features, data.y)
    rows = rng.choice(len(data.features), size=8, replace=False)
    queries, reference = data.features.iloc[rows[:7]], Reference(data.features.iloc[rows[7]].to_dict(), "row")
    for threshold in (None, 0.25, 0.75):
        model = wrap_model(forest, data, threshold=threshold)
        parity(model, data, queries, reference)
    y = data.features @ rng.normal(size=6)
    regression = make_dataset(data.features.assign(y=y), "y", task="regression")
    forest = RandomForestRegressor(n_estimators=2, max_depth=2, random_state=0).fit(regression.features, y)
    on_a_leaf = float(np.sort(forest.predict(regression.features))[60])
    parity(wrap_model(forest, regression, threshold=on_a_leaf), regression, queries, reference)


def test_auto_keeps_the_bfs_on_narrow_data_and_exact_can_be_asked_for():
    rng = np.random.default_rng(4)
    data = frame_data(rng, p=6)
    model = wrap_model(GradientBoostingClassifier(n_estimators=20, max_depth=2).fit(data.features, data.y), data)
    row, reference = data.features.iloc[[0]], make_reference(data)
    auto = explain_sev(model, data, row, reference, restricted=["x0"])
    exact = explain_sev(model, data, row, reference, restricted=["x0"], options=SEVParameters(sev_method="exact"))
    assert {auto.minus.engine, auto.plus.engine} == {"bfs"} and exact.minus.engine != "bfs"
    for which in ("minus", "plus", "restricted"):
        a, b = getattr(auto, which), getattr(exact, which)
        assert (a.value, a.status, set(a.explanations)) == (b.value, b.status, set(b.explanations))
    text = exact.to_json()
    assert SEVExplanation.from_json(text).to_json() == text
    back = SEVResult.from_json(exact.minus.to_json())
    assert (back.engine, back.certified, back.bound, back.complete) == (exact.minus.engine, True, exact.minus.value,
                                                                        True)



def test_restricted_features_that_are_not_the_datas_are_refused_by_every_engine():
    rng = np.random.default_rng(4)
    data = frame_data(rng, p=6)
    model = wrap_model(GradientBoostingClassifier(n_estimators=20, max_depth=2).fit(data.features, data.y), data)
    row, reference, layout = data.features.iloc[[0]], make_reference(data), data.layout
    unknown = "Unknown restricted features: X0, z; choose from x0, x1"
    for method in ("auto", "bfs", "exact"):
        with pytest.raises(IntakeError, match=unknown):
            explain_sev(model, data, row, reference, restricted=["X0", "x1", "z"],
                        options=SEVParameters(sev_method=method))
        with pytest.raises(IntakeError, match=unknown):
            sev_results(model, layout, row, reference, SEVRequest(restricted=["X0", "x1", "z"]),
                        options=SEVParameters(sev_method=method))
    with pytest.raises(IntakeError, match=unknown):
        sev_batch(model, layout, row, reference, BFSSearch(restricted=["X0", "x1", "z"]))
    with pytest.raises(IntakeError, match=unknown):
        exact_sev_batch(exact_engine(model, layout), row, reference, ExactSearch(restricted=["X0", "x1", "z"]))
    held = explain_sev(model, data, row, reference, restricted=["x1"],
                       options=SEVParameters(sev_method="exact")).restricted
    assert held.restricted == ("x1",) and all("x1" not in e for e in held.explanations)

def test_a_model_the_exact_engine_cannot_read_falls_back_with_a_note_or_refuses():
    rng = np.random.default_rng(5)
    data = frame_data(rng, p=14)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp = MLPClassifier(hidden_layer_sizes=(8,), activation="tanh", max_iter=50, random_state=0).fit(
            data.features, data.y)  # a ReLU network is read (tests/test_sev_relu.py); a tanh one is not
    model = wrap_model(mlp, data)
    row, reference = data.features.iloc[[0]], make_reference(data)
    ex = explain_sev(model, data, row, reference, options=SEVParameters(max_depth=2))
    assert ex.minus.engine == "bfs" and "tanh" in ex.minus.note
    with pytest.raises(IntakeError, match="exact SEV engine cannot be used"):
        explain_sev(model, data, row, reference, options=SEVParameters(sev_method="exact"))
    with pytest.raises(IntakeError, match="SEV method"):
        Parameters(sev_method="fastest")


class Lying:
    """An adapter's introspect as a hostile (or broken) worker could answer it: ``change`` rewrites the answer to
    ``function`` (or raises)."""

    def __init__(self, model, change, function=read_structure):
        self.model, self.change, self.function = model, change, function

    def __call__(self, function, *args):
        data = function(self.model.estimator, *args)
        return self.change(data) if function is self.function else data


def crash(data):
    raise RuntimeError("the worker died")


@pytest.mark.parametrize("change, function, why", [
    (crash, read_structure, "reading its structure failed"),
    (lambda d: {**d, "threshold": d["threshold"].astype(str)}, read_structure, "not numeric"),
    (lambda d: "not a dict", read_structure, "could not be read"),
    (crash, read_inputs, "reading its inputs failed"),
    (lambda d: {**d, "inputs": d["inputs"].astype(object)}, read_inputs, "malformed"),
    (lambda d: {**d, "raw": d["raw"][:1]}, read_inputs, "malformed"),
])
def test_a_broken_or_hostile_worker_leaves_the_answer_to_the_bfs(change, function, why):
    data, model = wide_model(p=16, seed=2)
    bent = dataclasses.replace(model)  # its own, empty memos
    bent.introspect = Lying(model, change, function)
    rows = data.features.iloc[np.argsort(-model.score(data.features))[:2]]
    results = sev_results(bent, data.layout, rows, make_reference(data), options=SEVParameters(max_depth=1))
    assert {r.engine for r in results} == {"bfs"} and all(why in r.note for r in results), results[0].note


def test_plain_data_that_does_not_reproduce_the_model_is_refused_and_the_bfs_answers():
    data, model = wide_model(p=16, seed=2)
    bent = dataclasses.replace(model)  # its own, empty memos
    object.__setattr__(bent, "introspect", Lying(model, lambda d: {**d, "value": d["value"] * 1.01}))
    rows = data.features.iloc[np.argsort(-model.score(data.features))[:3]]  # beyond one move: the exact engine
    reference = make_reference(data)
    results = sev_results(bent, data.layout, rows, reference, options=SEVParameters(max_depth=1))
    assert {r.engine for r in results} == {"bfs"} and all("do not reproduce" in r.note for r in results)
    exact = sev_results(model, data.layout, rows, reference, options=SEVParameters(sev_method="exact"))
    assert [r.status for r in results] != ["beyond_depth"] * 3  # bracketed (issue 52): never "> 1"
    assert all(r.lower <= e.value <= r.upper for r, e in zip(results, exact))
    assert [r.value for r in sev_results(model, data.layout, rows, reference, options=SEVParameters(max_depth=1))] == \
        [r.value for r in exact]
    with pytest.raises(IntakeError, match="cannot be used on these rows"):
        sev_results(bent, data.layout, rows, reference, options=SEVParameters(sev_method="exact"))


def good_trees():
    return {"sizes": np.array([3, 1]), "feature": np.array([0, -1, -1, -1]), "threshold": np.array([0.5, 0, 0, 0]),
            "left": np.array([1, -1, -1, -1]), "right": np.array([2, -1, -1, -1]),
            "missing_left": np.zeros(4, bool), "missing_kind": np.zeros(4, np.int8),
            "value": np.array([0.0, -1.0, 1.0, 0.25]), "rule": "le32", "n_features": 1}


@pytest.mark.parametrize("corrupt, why", [
    (lambda d: {**d, "left": np.array([0, -1, -1, -1])}, "children"),           # a node its own child: a cycle
    (lambda d: {**d, "right": np.array([5, -1, -1, -1])}, "children"),          # a child outside its tree
    (lambda d: {**d, "right": np.array([1, -1, -1, -1])}, "tree"),              # two edges to one node
    (lambda d: {**d, "threshold": np.array([np.nan, 0, 0, 0])}, "threshold"),
    (lambda d: {**d, "value": np.array([0, np.inf, 0, 0])}, "leaf value"),
    (lambda d: {**d, "feature": np.array([3, -1, -1, -1])}, "input"),
    (lambda d: {**d, "feature": np.array(["0", "-1", "-1", "-1"])}, "numeric"),
    (lambda d: {**d, "sizes": np.array([4])}, "form a tree"),                 # a node without a parent
    (lambda d: {**d, "sizes": np.array([3, 10 ** 9])}, "trees of"),
    (lambda d: {**d, "rule": "eval"}, "rule"),
    (lambda d: {**d, "value": [0, 1, 2, 3]}, "malformed"),
])
def test_hostile_trees_are_refused(corrupt, why):
    assert ensemble_from_plain(good_trees()).n_trees == 2
    with pytest.raises(Unreadable, match=why):
        ensemble_from_plain(corrupt(good_trees()))


def test_a_tree_deeper_than_the_limit_is_refused():
    depth = 70  # a chain: each split's left child a leaf, its right child the next split
    n = 2 * depth + 1
    feature = np.full(n, -1)
    left, right = np.full(n, -1), np.full(n, -1)
    for d in range(depth):
        node = 2 * d
        feature[node], left[node], right[node] = 0, node + 1, node + 2
    chain = {**good_trees(), "sizes": np.array([n]), "feature": feature, "threshold": np.zeros(n),
             "left": left, "right": right, "missing_left": np.zeros(n, bool), "missing_kind": np.zeros(n, np.int8),
             "value": np.zeros(n)}
    with pytest.raises(Unreadable, match="deeper"):
        ensemble_from_plain(chain)


def test_the_command_line_chooses_the_engine():
    from explain_core.cli.common import load_params
    from explain_core.cli.main import build_parser

    args = build_parser().parse_args(["report", "--data", "compas", "--model", "gbdt", "--rows", "1", "--out", "x",
                                      "--sev-method", "exact", "--sev-budget", "2.5"])
    assert load_params(args).sev == dataclasses.replace(Parameters().sev, sev_method="exact", sev_budget=2.5)


def plain(value) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool, np.ndarray))


def test_what_a_model_hands_over_is_plain_data_only():
    data, model = wide_model(p=14, seed=3)
    structure = model.introspect(read_structure, list(model.columns))
    inputs = model.introspect(read_inputs, data.features.iloc[:3], list(model.columns))
    assert structure["supported"] and plain(structure) and plain(inputs)
    assert inputs["inputs"].shape == (3, 14) and inputs["raw"].shape == (3,)
    for activation, read in (("tanh", False), ("relu", True)):
        net = MLPClassifier(max_iter=5, activation=activation).fit(data.features.iloc[:50], data.y[:50])
        answer = wrap_model(net, data).introspect(read_structure, list(data.features.columns))
        assert answer["supported"] is read and plain(answer)


@pytest.mark.parametrize("fmt", ["xgboost", "skops"])
def test_an_uploaded_model_is_solved_from_its_workers_plain_data_and_rescored_there(fmt, tmp_path):
    """Issue 27 × 25: an uploaded model lives in its sandboxed worker; the worker hands over its trees as plain
    data, the solver runs here, each explanation is re-scored through the worker: the same certified values and
    explanations as the very same model in this process."""
    import skops.io as sio

    from explain_core.setup import UploadChoices, model_from_upload

    data, local = wide_model(p=16, seed=3)
    if fmt == "xgboost":
        path = tmp_path / "model.json"
        local.estimator.get_booster().save_model(str(path))
        blob, name = path.read_bytes(), "model.json"
    else:
        est = GradientBoostingClassifier(n_estimators=30, max_depth=3, random_state=0).fit(data.features, data.y)
        local, blob, name = wrap_model(est, data), sio.dumps(est), "model.skops"
    uploaded = model_from_upload(data, blob, name, UploadChoices(positive_class=1)).model
    assert "Sandboxed" in type(uploaded.estimator).__name__
    reference = make_reference(data)
    rows = data.features.iloc[np.argsort(-local.score(data.features))[::60][:4]]
    there = sev_results(uploaded, data.layout, rows, reference, SEVRequest(kind="minus"),
                        options=SEVParameters(sev_method="exact"))
    here = sev_results(local, data.layout, rows, reference, SEVRequest(kind="minus"),
                       options=SEVParameters(sev_method="exact"))
    assert all(r.engine in ("cp-sat", "tree layers") and r.certified for r in there)
    assert [(r.value, set(r.explanations)) for r in there] == [(r.value, set(r.explanations)) for r in here]
