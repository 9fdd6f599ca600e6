"""The empirical problem (P4)/(MIP) of the PLE paper in Gram form, and its exact solution on one support.

    minimise F̂(w) = (1/4m)‖Zw − y‖² = ¼(wᵀGw − 2cᵀw + yy)      (eq. 8; G = ZᵀZ/m, c = Zᵀy/m, yy = yᵀy/m)
    subject to x·w = f(x) (anchoring), ‖w‖₀ ≤ k (the bias counts), w ∈ [−1,+1]^d (the box of (MIP)).

On a fixed support S the problem is a tiny convex QP: its KKT system (equality-constrained least
squares) without the box, and a primal-dual active set with the box — batched over many supports.
Singular G_S (tiny samples) is handled by minimum-norm KKT solutions: every KKT point of a convex QP is
a minimiser, so the values stay exact.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

BOX_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class GramProblem:
    """(P4) in Gram form (eq. 8): F̂(w) = ¼(wᵀGw − 2cᵀw + yy), anchored x·w = fx; m samples.

    Parameters
    ----------
    G : numpy.ndarray
        ZᵀZ / m.
    c : numpy.ndarray
        Zᵀy / m.
    yy : float
        yᵀy / m.
    x : numpy.ndarray
        The query.
    fx : float
        f(x).
    m : int
        Samples.
    """

    G: np.ndarray
    c: np.ndarray
    yy: float
    x: np.ndarray
    fx: float
    m: int

    @classmethod
    def from_sample(cls, Z: np.ndarray, y: np.ndarray, x: np.ndarray, fx: float) -> "GramProblem":
        """(P4) of the samples ``Z`` labelled ``y``, anchored at ``x``.

        Parameters
        ----------
        Z, y, x, fx
            As the fields of :class:`~explain_core.linear.space.Sample`: the (m, d) ±1 samples, f of each, the
            query and f(x).

        Returns
        -------
        GramProblem
            G = ZᵀZ/m, c = Zᵀy/m, yy = yᵀy/m.
        """
        Z = np.asarray(Z, dtype=float)
        y = np.asarray(y, dtype=float)
        m = len(y)
        return cls(Z.T @ Z / m, Z.T @ y / m, float(y @ y / m), np.asarray(x, dtype=float), float(fx), m)

    @property
    def d(self) -> int:
        return len(self.c)

    def objective(self, w: np.ndarray) -> float:
        """F̂(w) (eq. 8).

        Parameters
        ----------
        w : numpy.ndarray
            Weights.

        Returns
        -------
        float
            F̂(w).
        """
        return float(w @ self.G @ w - 2 * self.c @ w + self.yy) / 4

    @cached_property
    def covariance(self) -> np.ndarray:
        """G̃ = G − G₀G₀ᵀ/G₀₀ ⪰ 0 (the empirical covariance when column 0 is the bias): wᵀGw ≥ wᵀG̃w."""
        if self.G[0, 0] <= 0:
            return self.G.copy()
        return self.G - np.outer(self.G[:, 0], self.G[0, :]) / self.G[0, 0]

    @cached_property
    def min_curvature(self) -> float:
        """δ just below λ_min of G̃ without the bias: G − diag(0, δ, …, δ) ⪰ 0."""
        if self.d == 1:
            return 0.0
        return max(0.0, float(np.linalg.eigvalsh(self.covariance[1:, 1:])[0]) * (1 - 1e-6))

    def start(self) -> np.ndarray:
        """w₀ = f(x)e₁: the trivial anchored explanation (Alg. 1), feasible for (MIP).

        Returns
        -------
        numpy.ndarray
            w₀.
        """
        w = np.zeros(self.d)
        w[0] = self.fx
        return w


@dataclass(frozen=True, eq=False)
class Outcome:
    """What one exact path found: the best w, F̂(w), a valid lower bound on the optimum, its work (supports
    evaluated or solver nodes), and whether it proved optimality (then ``lower_bound`` = ``objective``)."""

    w: np.ndarray
    objective: float
    lower_bound: float
    work: int
    complete: bool


def support_of(w: np.ndarray, tol: float = 1e-12) -> tuple[int, ...]:
    """The support of ``w``: the literals whose weight is not zero.

    Parameters
    ----------
    w : numpy.ndarray
        Weights.
    tol : float
        Weights of at most this magnitude count as zero.

    Returns
    -------
    tuple of int
        The indices, in order.
    """
    return tuple(int(j) for j in np.flatnonzero(np.abs(w) > tol))


def phi(problem: GramProblem, S: np.ndarray, W: np.ndarray) -> np.ndarray:
    """φ = 4F̂ of each row of W (weights on the support in the same row of S)."""
    GS = problem.G[S[:, :, None], S[:, None, :]]
    return np.einsum("ns,nst,nt->n", W, GS, W) - 2 * np.einsum("ns,ns->n", problem.c[S], W) + problem.yy


def kkt_solve(GS: np.ndarray, cS: np.ndarray, aS: np.ndarray, fx: float, patterns: np.ndarray):
    """Solve each active set's equality-constrained problem; arrays batched over their first axis.

    KKT rows: free j: 2(G_S w)_j + μ a_j = 2c_j; fixed j (pattern ±1): w_j = ±1; last row a·w = fx. When
    every coordinate is fixed the multiplier is undetermined (minimum-norm). Returns (w, μ, solved):
    ``solved`` is False where the system has no solution (the fixed coordinates break the anchoring).
    """
    n, s = patterns.shape
    free = patterns == 0
    K = np.zeros((n, s + 1, s + 1))
    K[:, :s, :s] = np.where(free[:, :, None], 2 * GS, np.eye(s)[None])
    K[:, :s, s] = np.where(free, aS, 0.0)
    K[:, s, :s] = aS
    rhs = np.concatenate([np.where(free, 2 * cS, patterns), np.full((n, 1), fx)], axis=1)
    try:
        sol = np.linalg.solve(K, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:  # rank-deficient G_S or all coordinates fixed: minimum-norm solutions
        sol = np.einsum("nij,nj->ni", np.linalg.pinv(K), rhs)
    scale = 1 + np.abs(rhs).max(axis=1)
    solved = np.abs(np.einsum("nij,nj->ni", K, sol) - rhs).max(axis=1) < 1e-8 * scale
    return sol[:, :s], sol[:, s], solved


def gathered(problem: GramProblem, S: np.ndarray):
    """(G_S, c_S, x_S) for each row of S (N, s)."""
    return problem.G[S[:, :, None], S[:, None, :]], problem.c[S], problem.x[S]


def closed_form(problem: GramProblem, supports: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box-free anchored least squares on each support (rows of ``supports``, (N, s)): (weights, φ = 4F̂)."""
    S = np.asarray(supports)
    GS, cS, aS = gathered(problem, S)
    W, _, _ = kkt_solve(GS, cS, aS, problem.fx, np.zeros(S.shape))
    return W, phi(problem, S, W)


def box_solve_many(problem: GramProblem, supports: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact anchored least squares with the box |w_j| ≤ 1 on each support (rows of (N, s)): (W, φ).

    Primal-dual active set, all supports at once: fix the coordinates that leave the box, free those
    whose bound multiplier has the wrong sign, until the KKT conditions hold (a certificate of
    optimality). A support that has not converged after 3s + 8 rounds, or whose active set fixes every
    coordinate, is solved by enumerating its active sets. φ is +inf where no anchored point lies in the box.
    """
    S = np.asarray(supports)
    N, s = S.shape
    GS, cS, aS = gathered(problem, S)
    W, values = np.zeros((N, s)), np.full(N, np.inf)
    pattern = np.zeros((N, s))
    converged = np.zeros(N, dtype=bool)
    active = np.arange(N)
    for _ in range(3 * s + 8):
        w, mu, solved = kkt_solve(GS[active], cS[active], aS[active], problem.fx, pattern[active])
        p = pattern[active]
        grad = 2 * (np.einsum("nij,nj->ni", GS[active], w) - cS[active]) + mu[:, None] * aS[active]
        nu = np.where(p != 0, -grad, 0.0)
        outside = (p == 0) & (np.abs(w) > 1 + BOX_TOL)
        wrong = (p != 0) & (nu * p < -1e-10 * (1 + np.abs(nu).max(axis=1, keepdims=True)))
        done = solved & ~outside.any(axis=1) & ~wrong.any(axis=1) & (p == 0).any(axis=1)
        W[active[done]] = np.clip(w[done], -1, 1)
        converged[active[done]] = True
        nxt = np.where(outside, np.sign(w), np.where(wrong, 0.0, p))
        pattern[active] = nxt
        keep = ~done & solved & (nxt == 0).any(axis=1)
        active = active[keep]
        if len(active) == 0:
            break
    values[converged] = phi(problem, S[converged], W[converged])
    for i in np.flatnonzero(~converged):
        try:
            W[i], values[i] = _box_enumerate(problem, S[i], GS[i], cS[i], aS[i])
        except ValueError:
            values[i] = np.inf
    return W, values


def box_solve(problem: GramProblem, support: np.ndarray) -> tuple[np.ndarray, float]:
    """:func:`box_solve_many` for one support; raises ValueError if no anchored point lies in the box."""
    W, values = box_solve_many(problem, np.asarray(support)[None, :])
    if not np.isfinite(values[0]):
        raise ValueError("no anchored point in the box on this support")
    return W[0], float(values[0])


def _box_enumerate(problem: GramProblem, S, GS, cS, aS) -> tuple[np.ndarray, float]:
    """Every active set (each coordinate free, at +1 or at −1): the best box-feasible minimiser of its own
    equality-constrained problem is the box optimum (3^|S| tiny solves)."""
    patterns = np.array(list(itertools.product((0, 1, -1), repeat=len(S))), dtype=float)
    some = (patterns == 0).any(axis=1)
    n = int(some.sum())
    W, _, solved = kkt_solve(np.broadcast_to(GS, (n,) + GS.shape), np.broadcast_to(cS, (n, len(S))),
                             np.broadcast_to(aS, (n, len(S))), problem.fx, patterns[some])
    vertices = patterns[~some][np.abs(patterns[~some] @ aS - problem.fx) < 1e-12]  # all coordinates at ±1
    W = np.concatenate([W[solved], vertices])
    W = W[(np.abs(W) <= 1 + BOX_TOL).all(axis=1)]
    if len(W) == 0:
        raise ValueError("no anchored point in the box on this support")
    W = np.clip(W, -1, 1)
    values = phi(problem, np.broadcast_to(S, (len(W), len(S))), W)
    best = int(np.argmin(values))
    return W[best], float(values[best])


def solve_support(problem: GramProblem, support) -> tuple[np.ndarray, float]:
    """Polish: the exact (MIP) optimum on one support (closed form, box re-solve if it binds); (w, F̂)."""
    S = np.asarray(sorted(support), dtype=np.intp)
    if len(S) == 0:
        return np.zeros(problem.d), problem.objective(np.zeros(problem.d))
    W, values = closed_form(problem, S[None, :])
    wS = W[0]
    if np.abs(wS).max() > 1 + BOX_TOL:
        wS, _ = box_solve(problem, S)
    w = np.zeros(problem.d)
    w[S] = wS
    return w, problem.objective(w)
