"""Reading a ReLU network's weights as plain data, for the exact SEV engine of networks (:mod:`.relu`).

Called inside :func:`.readers.read_structure` (so where the model lives: in its sandboxed worker for an upload). Two
kinds of network are read: scikit-learn's ``MLPClassifier`` / ``MLPRegressor`` with ``activation="relu"`` (a binary
classifier's logistic output, or a regressor's identity output), and ONNX graphs whose one 2-D input runs through a
chain of ``Gemm`` / ``MatMul`` + ``Add`` layers with ``Relu`` between them (skl2onnx's export of an MLP, a torch
``nn.Sequential`` of ``Linear`` and ``ReLU`` exported by ``torch.onnx.export``), ending in a ``Sigmoid`` (one
output), a two-column ``Softmax`` (read as the sigmoid of the columns' difference), or nothing (a regression). Any
other op on the way, another activation, a tensor used twice, is :class:`~.readers.Unsupported`: the caller falls
back to the engines that only call the model.
"""
from __future__ import annotations

import numpy as np

MAX_UNITS = 100_000  # weights per network read (the MIP grows with the hidden units)
PASSTHROUGH = ("Cast", "Identity", "Flatten")  # ops on the input that change no value the network sees


class NotNetwork(Exception):
    """Not a network this module reads (the message says why)."""


def is_network(final) -> bool:
    """Whether ``final`` is a model this module tries to read (a scikit-learn MLP or an ONNX graph)."""
    name, module = type(final).__name__, type(final).__module__
    return (module.startswith("sklearn") and name in ("MLPClassifier", "MLPRegressor")) or name == "OnnxModel"


def read_network(final) -> dict:
    """``weights`` (one (inputs, outputs) array per layer), ``biases``, the output ``link`` and ``n_features``;
    the raw output is the last layer's single unit (a binary softmax's two units folded into their difference)."""
    if type(final).__name__ == "OnnxModel":
        weights, biases, link = _onnx_layers(final.graph)
    else:
        if final.activation != "relu":
            raise NotNetwork(f"its hidden activation is {final.activation} (the exact engine reads ReLU networks)")
        if final.out_activation_ not in ("logistic", "identity") or final.n_outputs_ != 1:
            raise NotNetwork("its output is not one logistic or identity unit")
        weights = [np.asarray(w, dtype=np.float64) for w in final.coefs_]
        biases = [np.asarray(b, dtype=np.float64) for b in final.intercepts_]
        link = "sigmoid" if final.out_activation_ == "logistic" else "identity"
    if weights[-1].shape[1] == 2 and link == "softmax":  # softmax([a, b])[1] = sigmoid(b − a)
        weights[-1] = weights[-1][:, 1:] - weights[-1][:, :1]
        biases[-1] = biases[-1][1:] - biases[-1][:1]
        link = "sigmoid"
    if weights[-1].shape[1] != 1 or link == "softmax":
        raise NotNetwork("its last layer is not one output unit (a multiclass network)")
    if sum(w.size for w in weights) > MAX_UNITS:
        raise NotNetwork(f"it has more than {MAX_UNITS:,} weights")
    return {"kind": "network", "weights": weights, "biases": biases, "link": link,
            "n_features": int(weights[0].shape[0])}


def network_raw(body: dict, X: np.ndarray) -> np.ndarray:
    """The network's raw output (its last layer's unit, before the link) on the inputs ``X``, in float64."""
    h = np.asarray(X, dtype=np.float64)
    layers = list(zip(body["weights"], body["biases"]))
    for w, b in layers[:-1]:
        h = np.maximum(h @ w + b, 0.0)
    w, b = layers[-1]
    return (h @ w + b)[:, 0]


def _onnx_layers(graph) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    """The chain of affine layers and ReLUs from the graph's one input to the tensor its link reads."""
    from onnx import numpy_helper

    if len(graph.input) - len({i.name for i in graph.initializer} & {i.name for i in graph.input}) != 1:
        raise NotNetwork("its graph has more than one input")
    consts = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in graph.initializer}
    users: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    tensor = next(i.name for i in graph.input if i.name not in consts)
    weights, biases, pending, relu = [], [], False, False  # pending: a MatMul whose bias may still come

    for _ in range(4 * len(graph.node) + 1):
        nodes = users.get(tensor, [])
        if len(nodes) != 1:
            if tensor in outputs and not nodes and weights and not relu:
                return weights, biases, "identity"
            raise NotNetwork("a tensor of its layers is used more than once, or not at all")
        node = nodes[0]
        op = node.op_type
        if op in PASSTHROUGH and not weights:
            tensor = node.output[0]
            continue
        if op in PASSTHROUGH + ("Reshape",) and weights and not relu and node.output[0] in outputs \
                and not users.get(node.output[0]):  # a regression's output, reshaped
            return weights, biases, "identity"
        if op in ("Sigmoid", "Softmax") and weights and not relu:
            return weights, biases, "sigmoid" if op == "Sigmoid" else "softmax"
        if op == "Relu" and weights:
            pending = False
        elif op in ("MatMul", "Gemm") and not pending:
            w, b = _affine(node, tensor, consts)
            weights.append(w)
            biases.append(b)
            pending = op == "MatMul"
        elif op == "Add" and pending:
            other = [n for n in node.input if n != tensor]
            bias = consts.get(other[0]) if len(other) == 1 else None
            if bias is None or bias.size != weights[-1].shape[1]:
                raise NotNetwork("an Add of its layers is not a bias")
            biases[-1] = biases[-1] + bias.ravel()
            pending = False
        else:
            raise NotNetwork(f"its graph has a {op} node where a ReLU network has Gemm, MatMul, Add or Relu")
        relu = op == "Relu"
        tensor = node.output[0]
    raise NotNetwork("its graph does not end")


def _affine(node, tensor: str, consts: dict) -> tuple[np.ndarray, np.ndarray]:
    """A MatMul's or a Gemm's weights (inputs, outputs) and bias, for the input ``tensor``."""
    if node.input[0] != tensor or len(node.input) < 2 or node.input[1] not in consts:
        raise NotNetwork(f"a {node.op_type} of its layers does not multiply by constant weights")
    w = consts[node.input[1]]
    attrs = {a.name: a for a in node.attribute}
    if node.op_type == "Gemm":
        if attrs.get("transA") is not None and attrs["transA"].i:
            raise NotNetwork("a Gemm transposes its input")
        if attrs.get("transB") is not None and attrs["transB"].i:
            w = w.T
        alpha = attrs["alpha"].f if "alpha" in attrs else 1.0
        beta = attrs["beta"].f if "beta" in attrs else 1.0
        bias = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else np.zeros(w.shape[-1])
        if bias is None:
            raise NotNetwork("a Gemm's bias is not a constant")
        w, bias = alpha * w, beta * np.broadcast_to(bias.ravel(), (w.shape[-1],))
    else:
        bias = np.zeros(w.shape[-1])
    if w.ndim != 2:
        raise NotNetwork("a layer's weights are not a matrix")
    return np.asarray(w, dtype=np.float64), np.asarray(bias, dtype=np.float64)
