"""The exact SEV engine of ReLU networks (a MIP in HiGHS after the first layers and a greedy incumbent) against the
BFS's full enumeration of the hypercube (max_depth = every group: an independent oracle that only calls the model):
the same values and the same sets of minimal explanations on small networks — random and trained weights, one and two
hidden layers, both classes, held groups, custom thresholds, a regressor — and the same answers from the network's
ONNX exports (skl2onnx, torch), in process and uploaded through the sandbox; graphs that are not ReLU networks fall
back to the BFS."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import Pipeline

from explain_core.intake.data import make_dataset
from explain_core.intake.encoding import make_encoder
from explain_core.intake.models import wrap_model
from explain_core.intake.onnx_model import OnnxModel
from explain_core.reference import Reference
from explain_core.sev import BFSSearch, SEVParameters, sev_batch, sev_results
from explain_core.sev.exact_sev import ExactSearch, exact_engine, exact_sev_batch, prepare
from explain_core.sev.relu import ReluProblem
from explain_core.sev.relu_mip import prove
from explain_core.errors import Unreadable


def network_data(rng, regression: bool, blocks: bool):
    """Numeric groups (some on a coarse grid), optionally a one-hot block and a categorical column; a target with
    an interaction."""
    n, p = 90, int(rng.integers(3, 8))
    X = rng.normal(size=(n, p)).round(int(rng.integers(0, 3)))
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    signal = X @ rng.normal(size=p) + X[:, 0] * X[:, -1]
    if blocks:
        frame["colour"] = rng.choice(["red", "green", "blue"], size=n)
        signal = signal + 1.5 * (frame["colour"] == "red")
    frame["y"] = signal + rng.normal(size=n) * 0.3 if regression else (signal > np.median(signal)).astype(int)
    return make_dataset(frame, "y", task="regression" if regression else "classification")


CASES = {  # seed: (hidden layers, random weights, regression, a one-hot block, a custom threshold)
    0: (1, False, False, True, False), 1: (2, True, False, False, True), 2: (1, True, False, False, False),
    3: (2, False, False, True, False), 4: (1, False, True, False, False), 5: (2, True, True, True, False),
    6: (1, False, False, False, True), 7: (2, False, False, False, False), 8: (1, True, False, True, True),
    9: (2, True, False, False, False),
}


def network_case(seed: int):
    """A small MLP of :data:`CASES` (trained, or its weights replaced by random ones), queries of both predicted
    classes, a reference (some groups equal to the query's: never moved) and at least one held group."""
    layers, random_weights, regression, blocks, custom = CASES[seed]
    rng = np.random.default_rng(seed)
    data = network_data(rng, regression, blocks)
    hidden = tuple(int(h) for h in rng.integers(3, 9, size=layers))
    kind = MLPRegressor if regression else MLPClassifier
    net = kind(hidden_layer_sizes=hidden, max_iter=300, random_state=seed)
    fitted = Pipeline([("encode", make_encoder(data)), ("net", net)]) if blocks else net
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted.fit(data.features, data.y)
    if random_weights:
        net.coefs_ = [rng.normal(size=w.shape) for w in net.coefs_]
        net.intercepts_ = [rng.normal(size=b.shape) * 0.5 for b in net.intercepts_]
    threshold = float(rng.choice([0.3, 0.6])) if custom else None
    model = wrap_model(fitted, data, threshold=threshold)
    labels = model.label(data.features)
    order = rng.permutation(len(data.features))
    ones, zeros = order[labels[order] == 1], order[labels[order] == 0]
    rows = np.concatenate([ones[:2], zeros[:1], order])[:4] if len(ones) and len(zeros) else order[:4]
    rows = list(dict.fromkeys(rows.tolist()))[:3] + [int(order[-1])]
    query, ref = data.features.iloc[rows[:3]].copy(), data.features.iloc[rows[3]].to_dict()
    for column, value in ref.items():  # the first query only: the other two keep their classes
        if rng.random() < 0.15:
            query.iloc[0, query.columns.get_loc(column)] = value
    restricted = tuple(n for n in data.group_names if rng.random() < 0.25) or (data.group_names[0],)
    return data, model, query.reset_index(drop=True), Reference(ref, "test"), restricted


def assert_same(exact, bfs, where: str):
    for a, b in zip(exact, bfs):
        assert (a.value, a.status, a.explained_class) == (b.value, b.status, b.explained_class), where
        assert set(a.explanations) == set(b.explanations), where
        assert a.certified and a.complete, where


def assert_flips(model, layout, queries, reference, results, kind: str):
    """Every listed explanation flips the model: its vertex, built from the raw rows, re-scored here."""
    for i, result in enumerate(results):
        for groups in result.explanations:
            start = queries.iloc[[i]] if kind != "plus" else reference.as_frame(list(layout.columns))
            other = reference.as_frame(list(layout.columns)) if kind != "plus" else queries.iloc[[i]]
            row = start.reset_index(drop=True).copy()
            for g in groups:
                for c in layout.groups[layout.names.index(g)].columns:
                    row[c] = other[c].to_numpy()
            want = 1 - result.explained_class if kind != "plus" else result.explained_class
            assert model.label(row)[0] == want, (groups, kind)


@pytest.mark.parametrize("seed", sorted(CASES))
def test_the_mip_equals_the_full_bfs_on_small_networks(seed):
    data, model, queries, reference, restricted = network_case(seed)
    layout = data.layout
    engine = exact_engine(model, layout)
    assert engine.read.family == "network"
    prepared = prepare(engine, queries, reference)
    mip_only = seed % 4 in (1, 2)  # no BFS layers first: the MIP answers from the first move
    for kind, held in (("minus", ()), ("plus", ()), ("minus", restricted)):
        bfs = sev_batch(model, layout, queries, reference, BFSSearch(kind=kind, restricted=held, max_depth=layout.size))
        exact = exact_sev_batch(engine, queries, reference,
                                ExactSearch(kind=kind, restricted=held, shallow=0 if mip_only else 2_000),
                                prepared=prepared)
        assert_same(exact, bfs, f"{seed} {kind} {held}")
        assert_flips(model, layout, queries, reference, exact, kind)
        if mip_only:
            assert {r.engine for r in exact} <= {"mip", "network layers"}
    if not CASES[seed][2]:  # a classifier: queries of both predicted classes
        assert {r.explained_class for r in exact} == {0, 1}


def test_the_plain_mip_and_the_tuned_one_agree_on_every_vertex_count():
    """The bench's anchors (every unit a binary, interval bounds, no incumbent; in SCIP and in HiGHS) and the tuned
    model give the same minimum on random two-layer networks, directly on the problem."""
    rng = np.random.default_rng(7)
    from explain_core.sev.network import Network
    for trial in range(12):
        p, h = 6, (5, 4)
        net = Network((rng.normal(size=(p, h[0])), rng.normal(size=(h[0], h[1])), rng.normal(size=(h[1], 1))),
                      (rng.normal(size=h[0]), rng.normal(size=h[1]), rng.normal(size=1)))
        start, other = rng.normal(size=p), rng.normal(size=p)
        problem = ReluProblem(net, np.arange(p), start, other, np.full(p, 2), bool(trial % 2), 0.0, 1e-9)
        choices = (np.arange(2 ** p)[:, None] >> np.arange(p)) & 1
        raw = problem.vertex_raw(choices)
        flips = raw >= 0 if problem.need_high else raw <= 0
        truth = int(choices[flips].sum(1).min()) if flips.any() else None

        def rescore(cs, problem=problem):
            r = problem.vertex_raw(np.array(cs))
            return r >= 0 if problem.need_high else r <= 0

        for plain, solver in ((True, "scip"), (True, "highs"), (False, "highs")):
            assert prove(problem, rescore, None, 0, 10.0, plain, solver).value == truth, (trial, plain, solver)


def skl2onnx_bytes(estimator, p: int) -> bytes:
    from skl2onnx import to_onnx
    return to_onnx(estimator, np.zeros((1, p), dtype=np.float32), options={"zipmap": False}).SerializeToString()


def torch_bytes(p: int, seed: int, sigmoid: bool = True) -> bytes:
    import torch

    torch.manual_seed(seed)
    layers = [torch.nn.Linear(p, 6), torch.nn.ReLU(), torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)]
    net = torch.nn.Sequential(*layers, *([torch.nn.Sigmoid()] if sigmoid else []))
    buffer = io.BytesIO()
    torch.onnx.export(net, torch.zeros(1, p), buffer, input_names=["x"], output_names=["p"],
                      dynamic_axes={"x": {0: "n"}, "p": {0: "n"}}, dynamo=False)
    return buffer.getvalue()


def plain_case(seed: int):
    rng = np.random.default_rng(seed)
    p = 6
    X = rng.normal(size=(100, p)).round(1)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame["y"] = (X @ rng.normal(size=p) + X[:, 0] * X[:, 1] > 0).astype(int)
    data = make_dataset(frame, "y")
    net = MLPClassifier(hidden_layer_sizes=(8,), max_iter=400, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net.fit(X, data.y)  # on the matrix: its ONNX export takes the columns in order
    queries = data.features.iloc[:4].reset_index(drop=True)
    return data, net, queries, Reference(data.features.iloc[60].to_dict(), "test")


def values(model, data, queries, reference, kind="minus"):
    engine = exact_engine(model, data.layout)
    return [(r.value, r.explanations, r.certified) for r in
            exact_sev_batch(engine, queries, reference, ExactSearch(kind=kind, shallow=0))]


def test_the_skl2onnx_export_of_an_mlp_gives_the_sklearn_answers():
    data, net, queries, reference = plain_case(3)
    sk = wrap_model(net, data, by_order=True)
    onnx = wrap_model(OnnxModel(skl2onnx_bytes(net, 6)), data, by_order=True)
    assert exact_engine(onnx, data.layout).read.family == "network"
    for kind in ("minus", "plus"):
        assert values(onnx, data, queries, reference, kind) == values(sk, data, queries, reference, kind)
        bfs = sev_batch(onnx, data.layout, queries, reference, BFSSearch(kind=kind, max_depth=data.layout.size))
        exact = exact_sev_batch(exact_engine(onnx, data.layout), queries, reference, ExactSearch(kind=kind, shallow=0))
        assert_same(exact, bfs, kind)


@pytest.mark.parametrize("seed", range(3))
def test_a_torch_export_equals_the_full_bfs(seed):
    data, _, queries, reference = plain_case(seed)
    model = wrap_model(OnnxModel(torch_bytes(6, seed)), data, by_order=True)
    engine = exact_engine(model, data.layout)
    assert len(engine.read.structure.weights) == 3
    threshold = float(np.median(model.score(data.features)))  # a threshold the random net crosses
    model = wrap_model(OnnxModel(torch_bytes(6, seed)), data, by_order=True, threshold=threshold)
    engine = exact_engine(model, data.layout)
    for kind in ("minus", "plus"):
        bfs = sev_batch(model, data.layout, queries, reference, BFSSearch(kind=kind, max_depth=data.layout.size))
        exact = exact_sev_batch(engine, queries, reference, ExactSearch(kind=kind, shallow=0))
        assert_same(exact, bfs, f"{seed} {kind}")
        assert_flips(model, data.layout, queries, reference, exact, kind)


@pytest.mark.slow
def test_an_uploaded_onnx_network_is_read_in_the_sandbox():
    from explain_core.intake.loading import load_model_bytes
    from explain_core.intake.sandbox.model import SandboxedModel

    data, net, queries, reference = plain_case(5)
    uploaded = load_model_bytes(skl2onnx_bytes(net, 6), "mlp.onnx")
    assert isinstance(uploaded, SandboxedModel)
    model = wrap_model(uploaded, data, by_order=True)
    assert exact_engine(model, data.layout).read.family == "network"
    sk = wrap_model(net, data, by_order=True)
    assert values(model, data, queries, reference) == values(sk, data, queries, reference)


def hostile_graphs() -> dict[str, bytes]:
    """ONNX graphs that are not ReLU networks: a Tanh hidden layer, a skip connection (an input used twice), a
    ReLU right before the sigmoid."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.normal(size=(6, 4)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.normal(size=(4, 1)).astype(np.float32), "w2")
    ws = numpy_helper.from_array(rng.normal(size=(6, 1)).astype(np.float32), "ws")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6])
    out = helper.make_tensor_value_info("p", TensorProto.FLOAT, ["n", 1])

    def graph(nodes, inits):
        model = helper.make_model(helper.make_graph(nodes, "g", [x], [out], inits),
                                  opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        return model.SerializeToString()

    mm = helper.make_node
    return {
        "tanh": graph([mm("MatMul", ["x", "w1"], ["h"]), mm("Tanh", ["h"], ["a"]), mm("MatMul", ["a", "w2"], ["o"]),
                       mm("Sigmoid", ["o"], ["p"])], [w1, w2]),
        "skip": graph([mm("MatMul", ["x", "w1"], ["h"]), mm("Relu", ["h"], ["a"]), mm("MatMul", ["a", "w2"], ["o"]),
                       mm("MatMul", ["x", "ws"], ["s"]), mm("Add", ["o", "s"], ["t"]), mm("Sigmoid", ["t"], ["p"])],
                      [w1, w2, ws]),
        "relu last": graph([mm("MatMul", ["x", "w1"], ["h"]), mm("Relu", ["h"], ["a"]),
                            mm("MatMul", ["a", "w2"], ["o"]), mm("Relu", ["o"], ["r"]), mm("Sigmoid", ["r"], ["p"])],
                           [w1, w2]),
    }


@pytest.mark.parametrize("name", ["tanh", "skip", "relu last"])
def test_a_graph_that_is_not_a_relu_network_falls_back_to_the_bfs(name):
    data, _, queries, reference = plain_case(1)
    model = wrap_model(OnnxModel(hostile_graphs()[name]), data, by_order=True)
    with pytest.raises(Unreadable):
        exact_engine(model, data.layout)
    results = sev_results(model, data.layout, queries, reference, options=SEVParameters(sev_method="auto"))
    bfs = sev_batch(model, data.layout, queries, reference, BFSSearch(max_depth=data.layout.size))
    assert [r.engine for r in results] == ["bfs"] * len(queries)
    assert [r.value for r in results] == [r.value for r in bfs]


def test_malformed_weights_from_a_worker_are_refused():
    from explain_core.sev.network import network_from_plain

    good = {"weights": [np.ones((3, 2)), np.ones((2, 1))], "biases": [np.zeros(2), np.zeros(1)], "n_features": 3}
    assert network_from_plain(good).n_features == 3
    for bad in ({**good, "weights": [np.ones((3, 2)), np.ones((3, 1))]},
                {**good, "biases": [np.array([np.nan, 0.0]), np.zeros(1)]},
                {**good, "weights": [np.ones((3, 2)), np.ones((2, 2))], "biases": [np.zeros(2), np.zeros(2)]},
                {**good, "weights": "not a list"}):
        with pytest.raises(ValueError):
            network_from_plain(bad)
