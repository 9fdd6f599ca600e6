"""The sample sizes of the PLE paper's guarantees, as guidance (Theorems 2 and 3).

Theorem 2: with m ≥ (B + 1)⁴ / (4ε²) · (16 ln(2d) + ln(2/δ)) samples, with probability 1 − δ every anchored
k-sparse w with ‖w‖₁ ≤ B has R(w) ≤ (1 + e^−σ)^k (F̂(w) + ε); the exact fit's box gives B = k. Theorem 3 (IHT)
needs the same with ln(4/δ) and the radius B = k + 4√(k/α), α = (17/18) sech²(σ/2) (Assumption 1), besides
Lemma 5's condition, whose absolute constants the paper leaves unstated (so it is not computed here).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import check_choice

SOLVERS = ("exact", "iht")
"""The solvers whose guarantees are read: the certified ``exact`` fit (its box), or ``iht``'s iterates."""


def radius(k: int, sigma: float, solver: str) -> float:
    """B: k for the exact fit (its box), k + 4√(k/α) for IHT's iterates (Lemma 8(ii))."""
    check_choice(solver, SOLVERS, "solver")
    if solver == "exact":
        return float(k)
    alpha = 17 / 18 / math.cosh(sigma / 2) ** 2
    return k + 4 * math.sqrt(k / alpha)


def _log_term(d: int, delta: float, solver: str) -> float:
    return 16 * math.log(2 * d) + math.log((2 if solver == "exact" else 4) / delta)


def samples_needed(k: int, d: int, sigma: float, epsilon: float, delta: float, solver: str = "exact") -> int:
    """The smallest m the theorem asks for fidelity within ``epsilon`` with probability 1 − ``delta``."""
    b = radius(k, sigma, solver)
    return math.ceil((b + 1) ** 4 / (4 * epsilon ** 2) * _log_term(d, delta, solver))


def tolerance_at(m: int, k: int, d: int, sigma: float, delta: float, solver: str = "exact") -> float:
    """The ε the theorem guarantees with ``m`` samples (vacuous above 1: the theorem asks ε ≤ 1)."""
    b = radius(k, sigma, solver)
    return (b + 1) ** 2 * math.sqrt(_log_term(d, delta, solver) / (4 * m))


@dataclass(frozen=True)
class SampleGuidance:
    """What Theorems 2–3 say about one fit: ε at its m, and m for a target ε, per solver."""

    m: int
    k: int
    d: int
    sigma: float
    delta: float
    epsilon: float

    def tolerance(self, solver: str) -> float:
        return tolerance_at(self.m, self.k, self.d, self.sigma, self.delta, solver)

    def needed(self, solver: str) -> int:
        return samples_needed(self.k, self.d, self.sigma, self.epsilon, self.delta, solver)

    def factor(self) -> float:
        """(1 + e^−σ)^k of Lemma 4, between relevance and fidelity."""
        return (1 + math.exp(-self.sigma)) ** self.k
