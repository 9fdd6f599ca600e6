"""A ReLU network read for the exact SEV engine, as validated arrays (:class:`Network`): what
:func:`~.network_readers.read_network` returns, checked before use (in the sandboxed case it comes from a hostile
process)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_LAYERS = 16
MAX_WIDTH = 4_096  # units per layer


@dataclass(frozen=True)
class Network:
    """raw = the last layer of ``weights`` / ``biases`` (ReLU between layers; each weight (inputs, outputs)) +
    ``base``."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    base: float = 0.0

    @property
    def n_features(self) -> int:
        return int(self.weights[0].shape[0])

    def raw(self, X: np.ndarray) -> np.ndarray:
        h = np.asarray(X, dtype=np.float64)
        for w, b in zip(self.weights[:-1], self.biases[:-1]):
            h = np.maximum(h @ w + b, 0.0)
        return (h @ self.weights[-1] + self.biases[-1])[:, 0] + self.base

    def scale(self) -> float:
        """The weights' magnitude (every |weight| and |bias| summed): the float error of the model's arithmetic is a
        small multiple of it (sets the tolerance band, :meth:`~.trees.ReadModel.tolerance`)."""
        return abs(self.base) + float(sum(np.abs(w).sum() + np.abs(b).sum()
                                          for w, b in zip(self.weights, self.biases)))


def network_from_plain(data: dict) -> Network:
    """The network of :func:`~.network_readers.read_network`, checked (it may come from a hostile process): layers
    that chain, finite numbers, within the limits; ValueError says what is wrong."""
    weights, biases = data.get("weights"), data.get("biases")
    if not (isinstance(weights, list) and isinstance(biases, list) and 0 < len(weights) == len(biases) <= MAX_LAYERS):
        raise ValueError("its layers are malformed")
    width = data.get("n_features")
    for w, b in zip(weights, biases):
        if not (isinstance(w, np.ndarray) and isinstance(b, np.ndarray) and w.ndim == 2 and b.ndim == 1
                and w.dtype.kind == "f" and b.dtype.kind == "f" and w.shape[0] == width and w.shape[1] == len(b)
                and 0 < w.shape[1] <= MAX_WIDTH and np.isfinite(w).all() and np.isfinite(b).all()):
            raise ValueError("its layers do not chain, or hold numbers that are not finite")
        width = w.shape[1]
    if width != 1:
        raise ValueError("its last layer is not one output unit")
    return Network(tuple(w.astype(np.float64) for w in weights), tuple(b.astype(np.float64) for b in biases))


@dataclass(frozen=True)
class ReluProblem:
    """One search: the network, each input's group, its inputs at the start and at the other end, each group's
    options (2: it moves, 1: it stays), and the target: raw output above (``need_high``) or below
    ``raw_threshold``, ± ``tol``."""

    network: Network
    feature_group: np.ndarray
    start: np.ndarray
    other: np.ndarray
    options: np.ndarray
    need_high: bool
    raw_threshold: float
    tol: float

    @property
    def movable(self) -> np.ndarray:
        return np.flatnonzero(self.options == 2)

    def inputs(self, choices: np.ndarray) -> np.ndarray:
        """The network's inputs at each vertex (rows of ``choices``: 1 = the group moved)."""
        moved = (np.asarray(choices).reshape(-1, len(self.options)) == 1) & (self.options == 2)
        return np.where(moved[:, self.feature_group], self.other, self.start)

    def vertex_raw(self, choices: np.ndarray) -> np.ndarray:
        return self.network.raw(self.inputs(choices))

    def push(self, raw: np.ndarray) -> np.ndarray:
        """How far each raw output is towards the target side."""
        return raw if self.need_high else -raw
