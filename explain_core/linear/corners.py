"""f on the corners of the hypercube {−1,+1}^d, each corner scored once: a deterministic literal space's f depends on
the corner z only, and the fit, hold-out and relevance samples, LIME's perturbations and KernelSHAP's coalitions
repeat corners (with 13 features there are only 2^13), so one model call per distinct corner is enough."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

MEMO_CORNERS = 1_000_000  # corners kept per space (about 100 MB at most)
WHOLE_CUBE_LITERALS = 14  # up to 2^14 corners (besides the bias): all of them scored at the first call, in one call


@dataclass(eq=False)
class CornerMemo:
    """f by corner (its ±1 row packed into bytes), filled as corners are asked for."""

    values: dict = field(default_factory=dict)

    def evaluate(self, Z: np.ndarray, score: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """f on every row of Z: known corners looked up, the others scored by ``score`` (rows → values) once each;
        a small cube (at most ``WHOLE_CUBE_LITERALS`` literals besides the bias) scored whole at the first call."""
        d = Z.shape[1]
        if not self.values and d - 1 <= WHOLE_CUBE_LITERALS:
            corners = np.array(np.meshgrid(*[[-1, 1]] * (d - 1), indexing="ij"), dtype=np.int8)
            self._lookup(np.column_stack([np.ones(2 ** (d - 1), dtype=np.int8), corners.reshape(d - 1, -1).T]),
                         score)
        return self._lookup(Z, score)

    def _lookup(self, Z: np.ndarray, score) -> np.ndarray:
        packed = np.ascontiguousarray(np.packbits(Z > 0, axis=1))
        keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        names = [k.tobytes() for k in unique]
        values = np.array([self.values.get(k, np.nan) for k in names], dtype=float)
        todo = np.flatnonzero(np.isnan(values))
        if len(todo):
            values[todo] = score(Z[first[todo]])
            if len(self.values) + len(todo) <= MEMO_CORNERS:
                self.values.update(zip((names[i] for i in todo), values[todo].tolist()))
        return values[inverse.ravel()]
