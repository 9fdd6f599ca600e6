"""Certified optimum of the empirical problem (P4)/(MIP) of the PLE paper, in Gram form.

    minimise F̂(w) = (1/4m)‖Zw − y‖² = ¼(wᵀGw − 2cᵀw + yy)      (eq. 8; G = ZᵀZ/m, c = Zᵀy/m, yy = yᵀy/m)
    subject to x·w = f(x) (anchoring), ‖w‖₀ ≤ k (the bias counts), w ∈ [−1,+1]^d (the box of (MIP)).

Paths, in the order :func:`exact_fit` uses them after an incumbent (IHT + polish, an upper bound):

1. **search over supports** — each support is a tiny closed-form solve (equality-constrained least
   squares, extended one column at a time by block inversion). Without pruning this is the exhaustive
   enumeration; with the separable perspective bound (below) it is a branch-and-bound that drops every
   subtree whose lower bound already exceeds the incumbent. A support whose box-free solution leaves
   the box is re-solved exactly with the box (primal-dual active set, KKT-certified).
2. **MIQP in SCIP** (OR-Tools MathOpt): big-M = 1 from the box, perspective terms w_j² ≤ θ_j s_j on
   D = diag(0, δ, …, δ) and the rest Q = G − D factored as Σ u_i² with u = Lᵀw. On timeout the
   incumbent comes back with SCIP's bound and gap.

The ℓ1 relaxation (the paper's MIPrelax, ‖w‖₁ ≤ k) is an optional lower bound.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from datetime import timedelta
from math import comb

import numpy as np

from ..errors import check_choice

BOX_TOL = 1e-9
DEGENERATE = 1e-10  # a column whose residual variance η is below this (relative) adds nothing to its support
ENUMERATION_LIMIT = 100_000  # exhaustive enumeration up to this many supports (branch-and-bound beyond)
PAIR_CHUNK = 200_000  # (node, column) pairs extended per batch
METHODS = ("auto", "enumeration", "branch_and_bound", "miqp")


@dataclass(frozen=True, eq=False)
class GramProblem:
    """(P4) in Gram form (eq. 8): F̂(w) = ¼(wᵀGw − 2cᵀw + yy), anchored x·w = fx; m samples."""

    G: np.ndarray
    c: np.ndarray
    yy: float
    x: np.ndarray
    fx: float
    m: int

    @classmethod
    def from_sample(cls, Z: np.ndarray, y: np.ndarray, x: np.ndarray, fx: float) -> "GramProblem":
        Z = np.asarray(Z, dtype=float)
        y = np.asarray(y, dtype=float)
        m = len(y)
        return cls(Z.T @ Z / m, Z.T @ y / m, float(y @ y / m), np.asarray(x, dtype=float), float(fx), m)

    @property
    def d(self) -> int:
        return len(self.c)

    def objective(self, w: np.ndarray) -> float:
        """F̂(w) (eq. 8)."""
        return float(w @ self.G @ w - 2 * self.c @ w + self.yy) / 4

    def start(self) -> np.ndarray:
        """w₀ = f(x)e₁: the trivial anchored explanation (Alg. 1), feasible for (MIP)."""
        w = np.zeros(self.d)
        w[0] = self.fx
        return w


@dataclass(frozen=True)
class ExactFit:
    """The result of :func:`exact_fit`.

    ``status`` is ``optimal`` (certified: ``lower_bound`` = ``objective`` up to solver tolerance) or
    ``time_limit`` (the best solution found, with a valid ``lower_bound`` and the relative ``gap``).
    ``objective`` is F̂ of the returned ``w`` after polishing its support exactly; ``nodes`` counts
    supports evaluated (search) or SCIP's branch-and-bound nodes; ``incumbent_objective`` is F̂ of
    the starting incumbent.
    """

    w: np.ndarray
    objective: float
    support: tuple[int, ...]
    status: str
    method: str
    lower_bound: float
    gap: float
    seconds: float
    nodes: int
    incumbent_objective: float

    @property
    def certified(self) -> bool:
        return self.status == "optimal"


# ---------------------------------------------------------------------------------------------------
# One support: closed form, and the box

def closed_form(problem: GramProblem, supports: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box-free anchored least squares on each support (rows of ``supports``, (N, s)).

    min φ(w) = wᵀGw − 2cᵀw + yy s.t. x·w = fx on support S: w = u − λv with u = G_S⁻¹c_S,
    v = G_S⁻¹x_S, λ = (x_S·u − fx)/(x_S·v). Returns (N, s) weights and φ = 4F̂ per support.
    """
    S = np.asarray(supports)
    GS = problem.G[S[:, :, None], S[:, None, :]]
    rhs = np.stack([problem.c[S], problem.x[S]], axis=-1)
    try:
        uv = np.linalg.solve(GS, rhs)
    except np.linalg.LinAlgError:  # a rank-deficient support: the minimum-norm solution
        uv = np.linalg.pinv(GS) @ rhs
    u, v = uv[..., 0], uv[..., 1]
    a = problem.x[S]
    av = np.einsum("ns,ns->n", a, v)
    lam = np.where(av > 0, (np.einsum("ns,ns->n", a, u) - problem.fx) / np.where(av > 0, av, 1), 0.0)
    W = u - lam[:, None] * v
    return W, _phi(problem, S, W)


def _phi(problem: GramProblem, S: np.ndarray, W: np.ndarray) -> np.ndarray:
    GS = problem.G[S[:, :, None], S[:, None, :]]
    return np.einsum("ns,nst,nt->n", W, GS, W) - 2 * np.einsum("ns,ns->n", problem.c[S], W) + problem.yy


def _kkt(GS, cS, aS, fx: float, patterns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Solve each active set's equality-constrained problem (every pattern has ≥ 1 free coordinate).

    KKT rows: free j: 2(G_S w)_j + μ a_j = 2c_j; fixed j: w_j = ±1; last row a·w = fx.
    Returns (w, μ, solved) per pattern.
    """
    s = len(cS)
    free = patterns == 0
    K = np.zeros((len(patterns), s + 1, s + 1))
    K[:, :s, :s] = np.where(free[:, :, None], 2 * GS[None], np.eye(s)[None])
    K[:, :s, s] = np.where(free, aS, 0.0)
    K[:, s, :s] = aS
    rhs = np.concatenate([np.where(free, 2 * cS, patterns), np.full((len(K), 1), fx)], axis=1)
    try:
        sol = np.linalg.solve(K, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:  # rank-deficient G_S: minimum-norm solutions
        sol = np.einsum("nij,nj->ni", np.linalg.pinv(K), rhs)
    solved = np.abs(np.einsum("nij,nj->ni", K, sol) - rhs).max(axis=1) < 1e-8
    return sol[:, :s], sol[:, s], solved


def box_solve(problem: GramProblem, support: np.ndarray) -> tuple[np.ndarray, float]:
    """Exact anchored least squares on one support with the box |w_j| ≤ 1 (convex QP).

    Primal-dual active set: fix the coordinates that leave the box, free those whose bound
    multiplier has the wrong sign, until the KKT conditions hold (a certificate of optimality). If it
    cycles, every active set is enumerated (each coordinate free, at +1 or at −1): the optimum is the
    best box-feasible minimiser of its own active set's problem (3^|S| tiny solves).
    """
    S = np.asarray(support)
    GS, cS, aS = problem.G[np.ix_(S, S)], problem.c[S], problem.x[S]
    pattern, seen = np.zeros(len(S)), set()
    while (pattern == 0).any() and pattern.tobytes() not in seen:
        seen.add(pattern.tobytes())
        w, mu, solved = (v[0] for v in _kkt(GS, cS, aS, problem.fx, pattern[None]))
        if not solved:
            break
        nu = np.where(pattern != 0, -(2 * (GS @ w - cS) + mu * aS), 0.0)
        outside = (pattern == 0) & (np.abs(w) > 1 + BOX_TOL)
        wrong = (pattern != 0) & (nu * pattern < -1e-10 * (1 + np.abs(nu).max()))
        if not outside.any() and not wrong.any():
            w = np.clip(w, -1, 1)
            return w, float(_phi(problem, S[None], w[None])[0])
        pattern = np.where(outside, np.sign(w), np.where(wrong, 0.0, pattern))
    return _box_enumerate(problem, S, GS, cS, aS)


def _box_enumerate(problem: GramProblem, S, GS, cS, aS) -> tuple[np.ndarray, float]:
    patterns = np.array(list(itertools.product((0, 1, -1), repeat=len(S))), dtype=float)
    some = (patterns == 0).any(axis=1)
    W, _, solved = _kkt(GS, cS, aS, problem.fx, patterns[some])
    vertices = patterns[~some][np.abs(patterns[~some] @ aS - problem.fx) < 1e-12]  # all coordinates at ±1
    W = np.concatenate([W[solved], vertices])
    W = W[(np.abs(W) <= 1 + BOX_TOL).all(axis=1)]
    if len(W) == 0:
        raise ValueError("no anchored point in the box on this support")
    W = np.clip(W, -1, 1)
    phi = _phi(problem, np.broadcast_to(S, (len(W), len(S))), W)
    best = int(np.argmin(phi))
    return W[best], float(phi[best])


def solve_support(problem: GramProblem, support) -> tuple[np.ndarray, float]:
    """Polish: the exact (MIP) optimum on one support (closed form, box re-solve if it binds); (w, F̂)."""
    S = np.asarray(sorted(support), dtype=np.intp)
    if len(S) == 0:
        return np.zeros(problem.d), problem.objective(np.zeros(problem.d))
    W, phi = closed_form(problem, S[None, :])
    wS, value = W[0], float(phi[0])
    if np.abs(wS).max() > 1 + BOX_TOL:
        wS, value = box_solve(problem, S)
    w = np.zeros(problem.d)
    w[S] = wS
    return w, problem.objective(w)


def support_of(w: np.ndarray, tol: float = 1e-12) -> tuple[int, ...]:
    return tuple(int(j) for j in np.flatnonzero(np.abs(w) > tol))


# ---------------------------------------------------------------------------------------------------
# Search over supports: enumeration and branch-and-bound

@dataclass(frozen=True)
class _Bound:
    """Separable lower bound φ(w) ≥ K + Σ_{j∈S} h_j for every anchored w in the box with support S.

    With G = Q + D, D = diag(0, δ, …, δ) ⪯ G (δ ≤ λ_min of the Schur complement of G w.r.t. the bias),
    wᵀQw ≥ 2pᵀQw − pᵀQp for any p, and ρ(x·w − fx) = 0 added: φ(w) ≥ yy − pᵀQp − 2ρ·fx
    + Σ_j (D_jj w_j² + 2 g_j w_j), g = Qp − c + ρx; each term is minimised over w_j ∈ [−1,1].
    Tight at p (the incumbent) when ρ is its anchoring multiplier.
    """

    K: float
    h: np.ndarray
    D: np.ndarray


def diagonal_part(problem: GramProblem, margin: float = 1e-6) -> np.ndarray:
    """D = diag(0, δ, …, δ) with G − D ⪰ 0: δ = (1 − margin)·λ_min of the Schur complement of G w.r.t.
    the bias (the empirical covariance of z; the bias has no variance, so it stays out of D)."""
    G = problem.G
    cov = G[1:, 1:] - np.outer(G[1:, 0], G[0, 1:]) / G[0, 0]
    D = np.full(problem.d, max(0.0, float(np.linalg.eigvalsh(cov)[0]) * (1 - margin)))
    D[0] = 0.0
    return D


def _separable_bound(problem: GramProblem, p: np.ndarray) -> _Bound:
    G, c, x = problem.G, problem.c, problem.x
    D = diagonal_part(problem)
    Q = G - np.diag(D)
    grad = G @ p - c
    free = (np.abs(p) > 1e-12) & (np.abs(p) < 1 - 1e-9)  # ρ: p's anchoring multiplier, from its free coordinates
    rho = -float(grad[free] @ x[free]) / max(int(free.sum()), 1)
    g = Q @ p - c + rho * x
    t = np.where(D > 0, np.clip(-g / np.where(D > 0, D, 1), -1, 1), -np.sign(g))
    h = D * t * t + 2 * g * t
    return _Bound(float(problem.yy - p @ Q @ p - 2 * rho * problem.fx), np.minimum(h, 0.0), D)


@dataclass
class _Search:
    """Mutable state of one search: the problem in search order, the best solution, counters."""

    problem: GramProblem
    order: np.ndarray
    s: int
    best_w: np.ndarray
    best_phi: float
    h: np.ndarray | None
    D: np.ndarray | None
    K: float
    deadline: float
    leaves: int = 0
    complete: bool = True

    def __post_init__(self):
        o = self.order
        self.G, self.c, self.a = self.problem.G[np.ix_(o, o)], self.problem.c[o], self.problem.x[o]
        self.n = len(o)
        if self.h is not None:
            self.cum = np.concatenate([[0.0], np.cumsum(self.h)])

    def threshold(self) -> float:
        return self.best_phi + 1e-12 * max(1.0, abs(self.best_phi))


def search_supports(problem: GramProblem, k: int, incumbent: np.ndarray, *, prune: bool,
                    deadline: float = np.inf) -> tuple[np.ndarray, float, int, bool]:
    """Best support of size min(k, d) by depth-first extension (PAIR_CHUNK (node, column) pairs a batch).

    ``prune=False`` evaluates every support (exhaustive enumeration); ``prune=True`` orders the
    literals by their separable bound h_j and drops every subtree whose bound exceeds the incumbent.
    Returns (w, F̂, supports evaluated, complete) — ``complete`` is False if ``deadline`` struck.
    """
    s = min(k, problem.d)
    phi0 = 4 * problem.objective(incumbent)
    bound = _separable_bound(problem, incumbent) if prune else None
    order = np.argsort(bound.h, kind="stable") if prune else np.arange(problem.d)
    state = _Search(problem, order, s, incumbent.copy(), phi0, None if bound is None else bound.h[order],
                    None if bound is None else bound.D[order], 0.0 if bound is None else bound.K, deadline)
    root = (np.zeros((1, 0), dtype=np.intp), np.zeros((1, 0, 0)), np.zeros((1, 0)), np.zeros((1, 0)),
            np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1))
    _expand(state, root)
    return state.best_w, problem.objective(state.best_w), state.leaves, state.complete


def _expand(st: _Search, nodes) -> None:
    """Children of a batch of nodes (prefix P, M = G_PP⁻¹, M c_P, M a_P, cᵀMc, aᵀMc, aᵀMa, Σh)."""
    idx, M, Mc, Ma, cc, ac, aa, hs = nodes
    ell = idx.shape[1]
    r = st.s - ell - 1  # literals still to add below a child
    last = idx[:, -1] if ell else np.full(len(idx), -1)
    top = np.full(len(idx), st.n - r)  # a child at position q needs r positions after it
    if st.h is not None:  # separable bound K + Σh(P) + h_q + h_{q+1} + … + h_{q+r} is nondecreasing in q
        reach = st.cum[r + 1:st.n + 1] - st.cum[:st.n - r]
        top = np.minimum(top, np.searchsorted(reach, st.threshold() - st.K - hs, side="left"))
    counts = np.maximum(top - last - 1, 0)
    parent = np.repeat(np.arange(len(idx)), counts)
    starts = np.cumsum(counts) - counts
    q = last[parent] + 1 + np.arange(len(parent)) - starts[parent]
    for lo in range(0, len(parent), PAIR_CHUNK):
        if time.monotonic() > st.deadline:
            st.complete = False
            return
        _children(st, nodes, parent[lo:lo + PAIR_CHUNK], q[lo:lo + PAIR_CHUNK])


def _children(st: _Search, nodes, parent: np.ndarray, q: np.ndarray) -> None:
    """Extend each parent by column q: block inversion of G_{P∪q} (Schur complement η)."""
    idx, M, Mc, Ma, cc, ac, aa, hs = nodes
    P = idx[parent]
    g = st.G[P, q[:, None]]  # (T, ℓ): G[P, q]
    t = np.einsum("tij,tj->ti", M[parent], g)
    diag = st.G[q, q]
    eta = diag - np.einsum("ti,ti->t", g, t)
    chat = st.c[q] - np.einsum("ti,ti->t", g, Mc[parent])
    ahat = st.a[q] - np.einsum("ti,ti->t", g, Ma[parent])
    eta = np.where(eta > DEGENERATE * diag, eta, np.inf)  # collinear column: contributes nothing
    cc2 = cc[parent] + chat * chat / eta
    ac2 = ac[parent] + ahat * chat / eta
    aa2 = aa[parent] + ahat * ahat / eta
    if st.s - idx.shape[1] - 1 == 0:
        st.leaves += len(q)
        phi = st.problem.yy - cc2 + (ac2 - st.problem.fx) ** 2 / aa2  # aa2 ≥ 1/G_qq > 0
        _leaves(st, np.column_stack([P, q]), phi)
        return
    inv = np.where(np.isfinite(eta), 1 / eta, 0.0)
    Mc2 = np.column_stack([Mc[parent] - t * (chat * inv)[:, None], chat * inv])
    Ma2 = np.column_stack([Ma[parent] - t * (ahat * inv)[:, None], ahat * inv])
    P2 = np.column_stack([P, q])
    if st.h is not None:
        keep = _prefix_bound(st, P2, Mc2, Ma2, cc2, ac2, aa2) < st.threshold()
        P2, Mc2, Ma2, cc2, ac2, aa2, parent, q, t, inv = (
            a[keep] for a in (P2, Mc2, Ma2, cc2, ac2, aa2, parent, q, t, inv))
    ell = P.shape[1]
    M2 = np.zeros((len(q), ell + 1, ell + 1))
    M2[:, :ell, :ell] = M[parent] + np.einsum("ti,tj->tij", t, t) * inv[:, None, None]
    M2[:, :ell, ell] = M2[:, ell, :ell] = -t * inv[:, None]
    M2[:, ell, ell] = inv
    hs2 = hs[parent] + (st.h[q] if st.h is not None else 0.0)
    _expand(st, (P2, M2, Mc2, Ma2, cc2, ac2, aa2, hs2))


def _prefix_bound(st: _Search, P, Mc, Ma, cc, ac, aa) -> np.ndarray:
    """Lower bound on every completion of each prefix P by r more literals after its last one.

    The separable bound of :class:`_Bound` centred at p = the anchored optimum of P itself (with ρ its
    multiplier λ): φ(P ∪ T) ≥ φ(P) + Σ_{j∈T} h_j(p), and the r smallest h_j are taken.
    """
    r = st.s - P.shape[1]
    lam = (ac - st.problem.fx) / aa
    phi = st.problem.yy - cc + (ac - st.problem.fx) ** 2 / aa
    p = Mc - lam[:, None] * Ma
    g = np.einsum("ti,tin->tn", p, st.G[P]) - st.c + lam[:, None] * st.a
    step = np.where(st.D > 0, np.clip(-g / np.where(st.D > 0, st.D, 1), -1, 1), -np.sign(g))
    h = np.minimum(st.D * step * step + 2 * g * step, 0.0)
    h[np.arange(st.n)[None, :] <= P[:, -1:]] = np.inf
    return phi + np.partition(h, r - 1, axis=1)[:, :r].sum(axis=1)


def _leaves(st: _Search, positions: np.ndarray, phi: np.ndarray) -> None:
    """Supports whose box-free value beats the incumbent: exact (box-aware) values, best kept."""
    hit = np.flatnonzero(phi < st.threshold())
    if len(hit) == 0:
        return
    S = np.sort(st.order[positions[hit]], axis=1)
    W, exact = closed_form(st.problem, S)
    inside = (np.abs(W) <= 1 + BOX_TOL).all(axis=1)
    for i in np.argsort(exact):
        if exact[i] >= st.threshold():
            break
        if inside[i]:
            wS, value = W[i], exact[i]
        else:
            wS, value = box_solve(st.problem, S[i])
        if value < st.best_phi:
            w = np.zeros(st.problem.d)
            w[S[i]] = np.clip(wS, -1, 1)
            st.best_w, st.best_phi = w, 4 * st.problem.objective(w)


# ---------------------------------------------------------------------------------------------------
# MIQP in SCIP (OR-Tools MathOpt)

def _factor(Q: np.ndarray) -> np.ndarray:
    """L with Q = LLᵀ (eigenvectors scaled by √λ; numerically null directions dropped)."""
    vals, vecs = np.linalg.eigh((Q + Q.T) / 2)
    keep = vals > 1e-12 * max(vals.max(), 1e-300)
    return vecs[:, keep] * np.sqrt(vals[keep])


def solve_miqp(problem: GramProblem, k: int, incumbent: np.ndarray, *, time_limit: float = 10.0,
               formulation: str = "perspective", threads: int = 1) -> ExactFit:
    """(MIP) in SCIP via MathOpt, warm-started from ``incumbent``.

    ``perspective`` (default): G = Q + D with D = diag(0, δ, …, δ), δ just below λ_min of the Schur
    complement of G w.r.t. the bias; θ_j ≥ w_j²/s_j (w_j² ≤ θ_j s_j) carries D, and Q = LLᵀ enters as
    Σu_i² with linear rows u = Lᵀw. ``dense``: the plain big-M model with wᵀGw as one quadratic
    objective (the baseline that does not converge on realistic sizes).
    """
    check_choice(formulation, ("perspective", "dense"), "MIQP formulation")
    from ortools.math_opt.python import mathopt

    t0 = time.monotonic()
    d = problem.d
    model = mathopt.Model(name="ple")
    w = [model.add_variable(lb=-1, ub=1, name=f"w{j}") for j in range(d)]
    s = [model.add_binary_variable(name=f"s{j}") for j in range(d)]
    for j in range(d):
        model.add_linear_constraint(w[j] <= s[j])
        model.add_linear_constraint(-w[j] <= s[j])
    model.add_linear_constraint(sum(s) <= k)
    model.add_linear_constraint(sum(float(problem.x[j]) * w[j] for j in range(d)) == problem.fx)
    linear = sum(-2 * float(problem.c[j]) * w[j] for j in range(d)) + problem.yy
    hint = {**{w[j]: float(incumbent[j]) for j in range(d)},
            **{s[j]: float(abs(incumbent[j]) > 1e-12) for j in range(d)}}
    if formulation == "dense":
        quad = sum(float(problem.G[i, j]) * w[i] * w[j] for i in range(d) for j in range(d) if problem.G[i, j] != 0)
        model.minimize((quad + linear) / 4)
    elif formulation == "perspective":
        D = diagonal_part(problem)
        delta = float(D[1]) if d > 1 else 0.0
        L = _factor(problem.G - np.diag(D))
        u = [model.add_variable(lb=-np.inf, ub=np.inf, name=f"u{i}") for i in range(L.shape[1])]
        for i in range(L.shape[1]):
            model.add_linear_constraint(u[i] == sum(float(L[j, i]) * w[j] for j in range(d) if L[j, i] != 0))
        theta = {j: model.add_variable(lb=0, ub=1, name=f"theta{j}") for j in range(1, d) if delta > 0}
        for j, th in theta.items():
            model.add_quadratic_constraint(w[j] * w[j] <= th * s[j])
        model.minimize((sum(ui * ui for ui in u) + sum(delta * th for th in theta.values()) + linear) / 4)
        uval = L.T @ incumbent
        hint.update({u[i]: float(uval[i]) for i in range(len(u))})
        hint.update({th: float(incumbent[j] ** 2) for j, th in theta.items()})
    params = mathopt.SolveParameters(time_limit=timedelta(seconds=max(time_limit, 0.01)), threads=threads,
                                     relative_gap_tolerance=1e-9, absolute_gap_tolerance=1e-12)
    hints = mathopt.ModelSolveParameters(solution_hints=[mathopt.SolutionHint(variable_values=hint)])
    result = mathopt.solve(model, mathopt.SolverType.GSCIP, params=params, model_params=hints)
    best, best_value = incumbent, problem.objective(incumbent)
    if result.has_primal_feasible_solution():
        chosen = [j for j in range(d) if result.variable_values(s[j]) > 0.5]
        polished, value = solve_support(problem, chosen)
        if value < best_value:
            best, best_value = polished, value
    optimal = result.termination.reason == mathopt.TerminationReason.OPTIMAL
    dual = float(result.termination.objective_bounds.dual_bound)
    lower = min(best_value, dual) if np.isfinite(dual) else 0.0
    return ExactFit(best, best_value, support_of(best), "optimal" if optimal else "time_limit",
                    f"miqp-{formulation}", lower, _gap(best_value, lower), time.monotonic() - t0,
                    int(result.solve_stats.node_count), problem.objective(incumbent))


def _gap(upper: float, lower: float) -> float:
    return max(0.0, upper - lower) / max(abs(upper), 1e-12)


# ---------------------------------------------------------------------------------------------------
# The exact fit

def exact_fit(problem: GramProblem, k: int, incumbent: np.ndarray | None = None, *, method: str = "auto",
              time_limit: float = 10.0, enumeration_limit: int = ENUMERATION_LIMIT) -> ExactFit:
    """Certified optimum of (MIP): incumbent → support search → MIQP (module docstring).

    ``auto``: exhaustive enumeration when C(d, k) ≤ ``enumeration_limit``, else branch-and-bound for
    half the time limit, then SCIP's MIQP for the rest (warm-started from the best support found).
    ``incumbent`` defaults to w₀ = f(x)e₁; it must be anchored, k-sparse and in the box.
    """
    check_choice(method, METHODS, "exact-fit method")
    t0 = time.monotonic()
    start = problem.start() if incumbent is None else np.asarray(incumbent, dtype=float)
    if (np.abs(start) > 1 + BOX_TOL).any() or abs(start @ problem.x - problem.fx) > 1e-9 or len(support_of(start)) > k:
        raise ValueError("the incumbent must be anchored, k-sparse and inside the box")
    start_value = problem.objective(start)
    if method == "auto":
        method = "enumeration" if comb(problem.d, min(k, problem.d)) <= enumeration_limit else "branch_and_bound"
    if method == "miqp":
        return solve_miqp(problem, k, start, time_limit=time_limit)
    share = time_limit if method == "enumeration" else time_limit / 2
    w, value, leaves, complete = search_supports(problem, k, start, prune=method == "branch_and_bound",
                                                 deadline=t0 + share)
    if complete:
        return ExactFit(w, value, support_of(w), "optimal", method, value, 0.0, time.monotonic() - t0,
                        leaves, start_value)
    fit = solve_miqp(problem, k, w, time_limit=max(time_limit - (time.monotonic() - t0), 0.01))
    return ExactFit(fit.w, fit.objective, fit.support, fit.status, f"{method}+{fit.method}", fit.lower_bound,
                    fit.gap, time.monotonic() - t0, leaves + fit.nodes, start_value)


# ---------------------------------------------------------------------------------------------------
# ℓ1 relaxation (MIPrelax)

@dataclass(frozen=True)
class Relaxation:
    """MIPrelax: min F̂ s.t. anchoring, box and ‖w‖₁ ≤ k; ``lower_bound`` ≤ the optimum of (MIP)."""

    w: np.ndarray
    lower_bound: float
    support_size: int
    status: str
    seconds: float


def l1_relaxation(problem: GramProblem, k: int, *, time_limit: float = 10.0) -> Relaxation:
    """The convex relaxation ‖w‖₀ ≤ k → ‖w‖₁ ≤ k (§6.1 MIPrelax), solved by SCIP; its dual bound is returned."""
    from ortools.math_opt.python import mathopt

    t0 = time.monotonic()
    d = problem.d
    model = mathopt.Model(name="ple-l1")
    w = [model.add_variable(lb=-1, ub=1) for _ in range(d)]
    a = [model.add_variable(lb=0, ub=1) for _ in range(d)]
    for j in range(d):
        model.add_linear_constraint(w[j] <= a[j])
        model.add_linear_constraint(-w[j] <= a[j])
    model.add_linear_constraint(sum(a) <= k)
    model.add_linear_constraint(sum(float(problem.x[j]) * w[j] for j in range(d)) == problem.fx)
    L = _factor(problem.G)
    u = [model.add_variable(lb=-np.inf, ub=np.inf) for _ in range(L.shape[1])]
    for i in range(L.shape[1]):
        model.add_linear_constraint(u[i] == sum(float(L[j, i]) * w[j] for j in range(d)))
    model.minimize((sum(ui * ui for ui in u) + sum(-2 * float(problem.c[j]) * w[j] for j in range(d))
                    + problem.yy) / 4)
    params = mathopt.SolveParameters(time_limit=timedelta(seconds=time_limit), relative_gap_tolerance=1e-7)
    result = mathopt.solve(model, mathopt.SolverType.GSCIP, params=params)
    sol = np.array([result.variable_values(v) for v in w]) if result.has_primal_feasible_solution() else np.zeros(d)
    optimal = result.termination.reason == mathopt.TerminationReason.OPTIMAL
    return Relaxation(sol, float(result.termination.objective_bounds.dual_bound), int((np.abs(sol) > 1e-6).sum()),
                      "optimal" if optimal else "time_limit", time.monotonic() - t0)
