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
