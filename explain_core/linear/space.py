"""The Boolean hypercube {−1,+1}^d of linear explanations (PLE paper §1, §6.1) and its σ-neighbourhood.

Coordinate 0 is the constant bias literal (always +1). A :class:`LiteralSpace` holds one query x,
the literal names and the black box f: {−1,+1}^d → [−1,+1] evaluated in batches. Two modes:

* **Boolean-model mode** (§6.1, the paper's tables): every attribute becomes indicator literals and a demo MLP is
  trained on that encoding (:mod:`~explain_core.linear.boolean`), so every z is a valid model input.
* **Any-model mode** (what users bring, :func:`~.groups.group_space`): one literal per feature group, "keeps
  the row's value". z_j = −1 replaces the group's value by the reference value (``replace="reference"``,
  then the hypercube *is* the SEV hypercube) or by a seeded draw from training rows whose value lies in
  a different quantile bin (``replace="draw"``).

Targets (§6.1): a classifier gives f = +1 where it predicts the query's own class and −1 elsewhere;
a regressor's output is rescaled to [−1,+1] with the training target's range and clipped.
:class:`TargetScale` maps both ways for display.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from ..vertices import DEFAULT_CHUNK_ROWS
from .corners import CornerMemo
from .problem import GramProblem

K_BINS = 4  # §6.1: K = 4 quantile bins / at most K one-hot values / K−1 most frequent categories + "other"
BIAS = "bias (always true)"


@dataclass(frozen=True)
class TargetScale:
    """f ∈ [−1,+1] ↔ model output (§6.1).

    Classification: f = +1 is ``classes[0]`` (the query's predicted class), −1 is ``classes[1]``.
    Regression: f = 2(ŷ − low)/(high − low) − 1, clipped; ``to_model`` inverts it.

    Parameters
    ----------
    task : str
        ``"classification"`` or ``"regression"``.
    low, high : float
        A regression's range.
    classes : tuple
        A classification's two classes.
    """

    task: str
    low: float = -1.0
    high: float = 1.0
    classes: tuple = ()

    def to_f(self, output: np.ndarray) -> np.ndarray:
        """Regression output → f (rescaled and clipped).

        Parameters
        ----------
        output : numpy.ndarray
            Model outputs.

        Returns
        -------
        numpy.ndarray
            f values.
        """
        return np.clip(2 * (np.asarray(output, dtype=float) - self.low) / (self.high - self.low) - 1, -1.0, 1.0)

    def to_model(self, f: np.ndarray) -> np.ndarray:
        """f → model units (regression) — the inverse of :meth:`to_f` inside [−1,+1].

        Parameters
        ----------
        f : numpy.ndarray
            f values.

        Returns
        -------
        numpy.ndarray
            Model outputs.
        """
        return self.low + (np.asarray(f, dtype=float) + 1) * (self.high - self.low) / 2

    @property
    def unit(self) -> float:
        """Model units per unit of f: a weight w_j moves the prediction by ``unit·w_j`` (1 for classes)."""
        return (self.high - self.low) / 2 if self.task == "regression" else 1.0

    @property
    def offset(self) -> float:
        """The model output at f = 0 (0 for classes): ŷ = offset + unit·f."""
        return (self.high + self.low) / 2 if self.task == "regression" else 0.0


@dataclass(frozen=True, eq=False)
class LiteralSpace:
    """One query on the Boolean hypercube: literal names (0 = bias), x ∈ {−1,+1}^d and the batched f.

    ``f(Z, seed)`` maps an (n, d) ±1 matrix to n values in [−1,+1]; ``deterministic`` is False only
    when f draws replacement values (then ``seed`` matters).

    Parameters
    ----------
    names : tuple of str
        The literals.
    x : numpy.ndarray
        The query.
    f : callable
        The batched f.
    target : TargetScale
        f's scale.
    mode : str
        How literals are replaced.
    deterministic : bool
        Whether f ignores ``seed``.
    chunk_rows : int
        Rows per model call.
    memo : CornerMemo
        Scored corners, kept.
    groups : tuple of str
        Each non-bias literal's feature group.
    """

    names: tuple[str, ...]
    x: np.ndarray
    f: Callable[[np.ndarray, int], np.ndarray]
    target: TargetScale
    mode: str
    deterministic: bool = True
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    memo: CornerMemo = field(default_factory=CornerMemo, compare=False, repr=False)  # f by corner (deterministic)
    groups: tuple[str, ...] = ()  # the feature group of each non-bias literal (a group space)

    @property
    def d(self) -> int:
        return len(self.names)

    def evaluate(self, Z: np.ndarray, seed: int = 0) -> np.ndarray:
        """f on every row of Z, in chunks of ``chunk_rows`` rows (one model call per chunk); a deterministic f once
        per distinct corner over all calls on this space (:class:`~explain_core.linear.corners.CornerMemo`).

        Parameters
        ----------
        Z : numpy.ndarray
            (n, d) ±1 rows.
        seed : int
            The draws' seed (a non-deterministic f).

        Returns
        -------
        numpy.ndarray
            f of each row, in [−1, +1].
        """
        Z = np.asarray(Z)
        if len(Z) == 0:
            return np.zeros(0)
        if not self.deterministic:
            return self._scored(Z, seed)
        return self.memo.evaluate(Z, lambda rows: self._scored(rows, seed))

    def _scored(self, Z: np.ndarray, seed: int) -> np.ndarray:
        parts = [self.f(Z[i:i + self.chunk_rows], seed + i) for i in range(0, len(Z), self.chunk_rows)]
        return np.concatenate(parts).astype(float)

    @property
    def fx(self) -> float:
        return float(self.evaluate(self.x[None, :])[0])


def keep_probability(sigma: float) -> float:
    """P[z_j = x_j] = 1/(1 + e^{−σ}) under the Mallows neighbourhood D_{x,σ} (eq. 7)."""
    return 1.0 / (1.0 + np.exp(-sigma))


def sample_neighbourhood(x: np.ndarray, sigma: float, m: int, seed: int) -> np.ndarray:
    """m exact samples of D_{x,σ} (eq. 7): each literal keeps x_j with prob. 1/(1+e^{−σ}); bias stays +1.

    Parameters
    ----------
    x : numpy.ndarray
        The query (bias first).
    sigma : float
        σ.
    m, seed : int
        Samples, and their seed.

    Returns
    -------
    numpy.ndarray
        (m, d) ±1 samples.
    """
    if x[0] != 1:
        raise ValueError("coordinate 0 must be the bias literal (+1)")
    rng = np.random.default_rng(seed)
    keep = rng.random((m, len(x))) < keep_probability(sigma)
    Z = np.where(keep, x, -x).astype(np.int8)
    Z[:, 0] = 1
    return Z


# ---------------------------------------------------------------------------------------------------
# Samples of the neighbourhood

@dataclass(frozen=True, eq=False)
class Sample:
    """m labelled samples {(z_i, f(z_i))} of D_{x,σ} (one batched, chunked evaluation of f).

    Parameters
    ----------
    Z : numpy.ndarray
        (m, d) ±1 samples.
    y : numpy.ndarray
        f of each.
    x : numpy.ndarray
        The query.
    fx, sigma : float
        f(x), and σ.
    seed : int
        The draw's seed.
    """

    Z: np.ndarray
    y: np.ndarray
    x: np.ndarray
    fx: float
    sigma: float
    seed: int

    @property
    def m(self) -> int:
        return len(self.y)

    @cached_property
    def gram(self) -> GramProblem:
        return GramProblem.from_sample(self.Z, self.y, self.x, self.fx)

    def fidelity(self, w: np.ndarray) -> float:
        """Fidelity error (1/4m)‖Zw − y‖² on this sample (eq. 8; out-of-sample F on a fresh one).

        Parameters
        ----------
        w
            As for :meth:`~explain_core.linear.problem.GramProblem.objective` (the same F̂(w), read off the samples).

        Returns
        -------
        float
            The fidelity error.
        """
        r = self.Z @ np.asarray(w, dtype=float) - self.y
        return float(r @ r) / (4 * self.m)


def draw_sample(space: LiteralSpace, sigma: float, m: int, seed: int) -> Sample:
    """m samples of D_{x,σ} labelled by f (seeded).

    Parameters
    ----------
    space : LiteralSpace
        The query and f.
    sigma : float
        σ.
    m, seed : int
        Samples, and their seed.

    Returns
    -------
    Sample
        The labelled samples.
    """
    Z = sample_neighbourhood(space.x, sigma, m, seed)
    return Sample(Z, space.evaluate(Z, seed), space.x.astype(float), space.fx, sigma, seed)
