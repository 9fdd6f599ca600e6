"""Lower bounds for the search over supports (:mod:`.search`): separable bounds of φ = 4F̂ around a point.

Around any p, φ(w) = φ(p) + 2(Gp − c + ρx)ᵀ(w − p) + (w − p)ᵀG(w − p) for anchored w; the quadratic term is
bounded below coordinate by coordinate, ΔᵀGΔ ≥ ΔᵀG̃Δ ≥ Σ D_jΔ_j² (G̃ the covariance part of G), and each
coordinate is then minimised over the box. D is sparsity-aware: only supports of at most k literals
matter, and Gershgorin's bound over k-sparse Δ is far above λ_min(G̃) when d is large.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .problem import GramProblem


def curvature(problem: GramProblem, size: int) -> np.ndarray:
    """D = diag(D_j), D₀ = 0, with ΔᵀGΔ ≥ Σ D_j Δ_j² for every Δ with at most ``size`` non-bias entries.

    Two valid choices, the larger (in sum) is taken: uniform δ = λ_min of G̃ without the bias (valid for
    every Δ), and the sparse Gershgorin bound D_j = G̃_jj − (sum of the ``size`` − 1 largest |G̃_jl|, l ≠ j)
    (valid for Δ with ≤ ``size`` non-bias entries: 2|G̃_jl Δ_jΔ_l| ≤ |G̃_jl|(Δ_j² + Δ_l²)).
    """
    D = np.zeros(problem.d)
    if problem.d == 1:
        return D
    cov = problem.covariance[1:, 1:]
    delta = problem.min_curvature
    off = np.abs(cov)
    np.fill_diagonal(off, 0.0)
    r = max(0, min(size - 1, problem.d - 2))
    sparse = (np.diag(cov) - _cumulative_largest(off, r)[:, r]) * (1 - 1e-9)
    D[1:] = sparse if sparse.min() >= 0 and sparse.sum() > delta * (problem.d - 1) else delta
    return D


@dataclass(frozen=True)
class SeparableBound:
    """φ(w) ≥ K + Σ_{j∈S} h_j for every anchored w in the box with support S, |S ∪ supp p| ≤ ``size``.

    Centred at an anchored p with multiplier ρ: φ(w) = φ(p) + 2(Gp − c + ρx)ᵀ(w − p) + (w − p)ᵀG(w − p),
    the last term ≥ Σ D_j(w_j − p_j)² (:func:`curvature`); each coordinate is then minimised over the box:
    h_j = min_{t∈[−1,1]} D_j t² + 2g_j t with g = Gp − Dp − c + ρx, K = yy − pᵀ(G − D)p − 2ρ·fx.
    Tight at p when ρ is p's anchoring multiplier.
    """

    K: float
    h: np.ndarray


def separable_bound(problem: GramProblem, p: np.ndarray, size: int) -> SeparableBound:
    G, c, x = problem.G, problem.c, problem.x
    D = curvature(problem, size)
    grad = G @ p - c
    free = (np.abs(p) > 1e-12) & (np.abs(p) < 1 - 1e-9)  # ρ: p's anchoring multiplier, from its free coordinates
    rho = -float(grad[free] @ x[free]) / max(int(free.sum()), 1)
    g = grad - D * p + rho * x
    K = float(problem.yy - p @ G @ p + p @ (D * p) - 2 * rho * problem.fx)
    return SeparableBound(K, coordinate_minima(D, g))


def coordinate_minima(D: np.ndarray, g: np.ndarray) -> np.ndarray:
    """min_{t∈[−1,1]} D t² + 2g t, elementwise (≤ 0): −g²/D where |g| < D, else D − 2|g| (in place on
    temporaries: this runs on every node of a search)."""
    a = np.abs(g)
    outside = a >= D
    h = a * a
    with np.errstate(divide="ignore", invalid="ignore"):  # D = 0 (no curvature) is outside for every g
        h /= -D
    a *= -2
    a += D
    np.copyto(h, a, where=outside)
    return h


class NodeCurvature:
    """Per-row Gershgorin curvatures for the nodes of a search in ``order`` (positions), at prefix size ℓ.

    At a node with prefix P (|P| = ℓ) and r = s − ℓ literals T still to add, minimising (w − p)ᵀG̃(w − p)
    over the P coordinates leaves Δ_TᵀS_TΔ_T, S the Schur complement of G̃ given P. With
    ε_j = G̃_jP G̃_PP⁻¹ G̃_Pj ≤ ε̄_j = ‖G̃_Pj‖²/λ_min(G̃_PP): S_jj = G̃_jj − ε_j and, by Cauchy–Schwarz,
    |S_jl| ≤ |G̃_jl| + √(ε̄_j ε̄_l); Gershgorin's row bound over T is then
    D_j = G̃_jj − ε̄_j − (the r − 1 largest |G̃_jl|) − (r − 1)√ε̄_j·max_l √ε̄_l.
    :meth:`screen` gives it for every P of size ℓ at once (ε̄_j from the ℓ largest G̃_lj²: computing
    each node's own ε̄ cost more than the nodes it saved). Where this falls below the uniform D (λ_min;
    small or tiny samples), the uniform D serves instead.
    """

    def __init__(self, problem: GramProblem, order: np.ndarray, s: int):
        cov = problem.covariance[np.ix_(order, order)]
        n = len(order)
        self.uniform = curvature(problem, s)[order]
        self.diag, self.squares = np.diag(cov).copy(), cov * cov
        off = np.abs(cov)
        np.fill_diagonal(off, 0.0)
        width = min(s, n - 1) if n > 1 else 0
        self.tops = _cumulative_largest(off, width)
        squares_off = self.squares.copy()
        np.fill_diagonal(squares_off, 0.0)
        explained = _cumulative_largest(squares_off, width)  # Σ of the ℓ largest G̃_lj² (column j = row j)
        rows = order != 0
        delta = problem.min_curvature
        self.lam_min = [max(delta, float((self.diag - self.tops[:, max(ell - 1, 0)])[rows].min(initial=np.inf)))
                        for ell in range(s + 1)]
        self.s = s
        self.screens = []
        for ell in range(s + 1):
            r = s - ell
            if self.lam_min[ell] <= 0:  # G̃_PP may be singular (tiny samples): no Schur bound
                self.screens.append(self.uniform)
                continue
            eps = explained[:, min(ell, width)] / self.lam_min[ell]
            worst = float(np.sqrt(eps.max(initial=0.0)))
            screen = self.diag - eps - self.tops[:, max(r - 1, 0)] - max(r - 1, 0) * np.sqrt(eps) * worst
            ok = bool(np.isfinite(screen).all() and screen.sum() >= self.uniform.sum())
            self.screens.append(screen if ok else self.uniform)

    def screen(self, ell: int) -> np.ndarray:
        return self.screens[ell]


def _cumulative_largest(values: np.ndarray, width: int) -> np.ndarray:
    """(n, width + 1): column t holds the sum of the t largest entries of each row."""
    if width == 0:
        return np.zeros((len(values), 1))
    largest = -np.sort(np.partition(-values, width - 1, axis=1)[:, :width], axis=1)
    return np.concatenate([np.zeros((len(values), 1)), np.cumsum(largest, axis=1)], axis=1)
