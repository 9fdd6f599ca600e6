"""Search over supports for the certified optimum of (MIP): exhaustive enumeration and branch-and-bound.

Supports grow one literal at a time in a fixed order (a depth-first tree of combinations, batched); each
node keeps G_P⁻¹ and a few scalars so a child costs O(|P|²) (block inversion, Schur complement η). A
leaf's box-free value filters it; the survivors are solved exactly with the box. Branch-and-bound drops
a subtree when a lower bound on every support below it exceeds the incumbent (:mod:`.bounds`); each
node also narrows the columns its completions may use.
The search stops at its deadline (or when asked to) with a valid lower bound from what it left open.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.sparse import csr_matrix

from .bounds import NodeCurvature, SeparableBound, coordinate_minima, separable_bound
from .problem import GramProblem, Outcome, box_solve_many, closed_form

DEGENERATE = 1e-10  # a column whose residual variance η is below this (relative) adds nothing to Zw
PAIR_CHUNK = 4096  # (node, column) pairs extended per batch (small enough to stay in cache and on time)
LEAF_CHUNK = 4096  # leaves solved with the box per batch


@dataclass
class _Search:
    """Mutable state of one search: the problem in search order, the best solution, counters."""

    problem: GramProblem
    order: np.ndarray
    s: int
    best_w: np.ndarray
    best_phi: float
    bound: SeparableBound | None
    deadline: float
    stop: Callable[[], bool] | None
    leaves: int = 0
    open_phi: float = np.inf  # lower bound on φ over what was left unexplored (deadline)
    complete: bool = True

    def __post_init__(self):
        o = self.order
        self.G, self.c, self.a = self.problem.G[np.ix_(o, o)], self.problem.c[o], self.problem.x[o]
        self.n = len(o)
        if self.bound is not None:
            self.h = self.bound.h[o]
            self.cum = np.concatenate([[0.0], np.cumsum(self.h)])
            self.curvature = NodeCurvature(self.problem, o, self.s)

    def threshold(self) -> float:
        return self.best_phi + 1e-12 * max(1.0, abs(self.best_phi))

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline or (self.stop is not None and self.stop())

    def leave_open(self, phi_bound: float) -> None:
        self.complete = False
        self.open_phi = min(self.open_phi, phi_bound)


def search_supports(problem: GramProblem, k: int, incumbent: np.ndarray, *, prune: bool,
                    deadline: float = np.inf, stop: Callable[[], bool] | None = None) -> Outcome:
    """Best support of size min(k, d) by depth-first extension (PAIR_CHUNK (node, column) pairs a batch).

    ``prune=False`` evaluates every support (exhaustive enumeration); ``prune=True`` orders the
    literals by their separable bound h_j (centred at the incumbent) and drops every subtree whose
    bound exceeds the incumbent. Stops at ``deadline`` or when ``stop()`` says so; the lower bound is then
    the smallest bound over the subtrees left open (0 for the enumeration, which has none).
    """
    s = min(k, problem.d)
    bound = separable_bound(problem, incumbent, 2 * s) if prune else None
    order = np.argsort(bound.h, kind="stable") if prune else np.arange(problem.d)
    state = _Search(problem, order, s, incumbent.copy(), 4 * problem.objective(incumbent), bound, deadline, stop)
    root_bound = -np.inf if bound is None else bound.K + state.cum[s]
    _expand(state, _Nodes(np.zeros((1, 0), dtype=np.intp), np.zeros((1, 0, 0)), np.zeros((1, 0)), np.zeros((1, 0)),
                          np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1), np.array([root_bound]), None))
    value = problem.objective(state.best_w)
    lower = value if state.complete else max(0.0, min(value, state.open_phi / 4))
    return Outcome(state.best_w, value, lower, state.leaves, state.complete)


@dataclass
class _Nodes:
    """A batch of tree nodes: prefix P (positions), M = G_PP⁻¹, Mc, Ma, cᵀMc, aᵀMc, aᵀMa, Σ_P h (root
    bound), a lower bound on every support below each node, and which columns may extend it (None: all
    positions after its last)."""

    idx: np.ndarray
    M: np.ndarray
    Mc: np.ndarray
    Ma: np.ndarray
    cc: np.ndarray
    ac: np.ndarray
    aa: np.ndarray
    hs: np.ndarray
    bound: np.ndarray
    allowed: np.ndarray | None

    def take(self, keep) -> "_Nodes":
        return _Nodes(*(None if v is None else v[keep] for v in vars(self).values()))


def _expand(st: _Search, nodes: _Nodes) -> None:
    """Children of a batch of nodes, PAIR_CHUNK (node, column) pairs at a time, depth first."""
    ell = nodes.idx.shape[1]
    r = st.s - ell - 1  # literals still to add below a child
    last = nodes.idx[:, -1] if ell else np.full(len(nodes.idx), -1)
    top = np.full(len(last), st.n - r)  # a child at position q needs r positions after it
    if st.bound is not None:  # root bound K + Σh(P) + h_q + h_{q+1} + … + h_{q+r} is nondecreasing in q
        reach = st.cum[r + 1:st.n + 1] - st.cum[:st.n - r]
        top = np.minimum(top, np.searchsorted(reach, st.threshold() - st.bound.K - nodes.hs, side="left"))
    if nodes.allowed is None:
        counts = np.maximum(top - last - 1, 0)
        parent = np.repeat(np.arange(len(last)), counts)
        starts = np.cumsum(counts) - counts
        q = last[parent] + 1 + np.arange(len(parent)) - starts[parent]
    else:
        parent, q = np.nonzero(nodes.allowed & (np.arange(st.n)[None, :] < top[:, None]))
    for lo in range(0, len(parent), PAIR_CHUNK):
        if st.out_of_time():
            rest = parent[lo:]
            st.leave_open(-np.inf if st.bound is None else float(np.min(np.maximum(
                nodes.bound[rest], st.bound.K + nodes.hs[rest] + reach[q[lo:]]))))
            return
        _children(st, nodes, parent[lo:lo + PAIR_CHUNK], q[lo:lo + PAIR_CHUNK])


def _children(st: _Search, nodes: _Nodes, parent: np.ndarray, q: np.ndarray) -> None:
    """Extend each parent by column q: block inversion of G_{P∪q} (Schur complement η).

    A column in the span of P (η ≈ 0) adds nothing to Zw; if it is not also in the span for the
    anchoring (â ≠ 0) it frees the anchoring (aᵀMa = ∞: the anchoring costs nothing below it).
    """
    P = nodes.idx[parent]
    g = st.G[P, q[:, None]]  # (T, ℓ): G[P, q]
    t = np.einsum("tij,tj->ti", nodes.M[parent], g)
    diag = st.G[q, q]
    eta = diag - np.einsum("ti,ti->t", g, t)
    chat = st.c[q] - np.einsum("ti,ti->t", g, nodes.Mc[parent])
    ahat = st.a[q] - np.einsum("ti,ti->t", g, nodes.Ma[parent])
    degenerate = ~(eta > DEGENERATE * np.maximum(diag, 1e-300))
    frees = degenerate & (np.abs(ahat) > 1e-9)
    inv = np.where(degenerate, 0.0, 1 / np.where(degenerate, 1.0, eta))
    cc = nodes.cc[parent] + chat * chat * inv
    ac = nodes.ac[parent] + ahat * chat * inv
    aa = np.where(frees, np.inf, nodes.aa[parent] + ahat * ahat * inv)
    P2 = np.column_stack([P, q])
    if st.s == P2.shape[1]:
        st.leaves += len(q)
        _leaves(st, P2, _anchored_phi(st, cc, ac, aa))
        return
    Mc = np.column_stack([nodes.Mc[parent] - t * (chat * inv)[:, None], chat * inv])
    Ma = np.column_stack([nodes.Ma[parent] - t * (ahat * inv)[:, None], ahat * inv])
    Ma[~np.isfinite(aa)] = 0.0
    hs = nodes.hs[parent] + (st.h[q] if st.bound is not None else 0.0)
    bound, allowed = np.full(len(q), -np.inf), None
    if st.bound is not None:
        candidates = np.arange(st.n)[None, :] > q[:, None]
        if nodes.allowed is not None:  # every column of a viable completion was allowed for the parent
            candidates &= nodes.allowed[parent]
        bound, allowed = _prefix_bound(st, P2, Mc, Ma, cc, ac, aa, candidates)
        keep = bound < st.threshold()
        P2, Mc, Ma, cc, ac, aa, hs, bound, allowed, parent, t, inv = (
            a[keep] for a in (P2, Mc, Ma, cc, ac, aa, hs, bound, allowed, parent, t, inv))
    ell = P.shape[1]
    M = np.zeros((len(parent), ell + 1, ell + 1))
    M[:, :ell, :ell] = nodes.M[parent] + np.einsum("ti,tj->tij", t, t) * inv[:, None, None]
    M[:, :ell, ell] = M[:, ell, :ell] = -t * inv[:, None]
    M[:, ell, ell] = inv
    _expand(st, _Nodes(P2, M, Mc, Ma, cc, ac, aa, hs, bound, allowed))


def _anchored_phi(st: _Search, cc, ac, aa) -> np.ndarray:
    """Box-free anchored optimum φ = yy − cᵀMc + (aᵀMc − fx)²/aᵀMa (0 penalty when the anchoring is free;
    +inf when no column can carry it)."""
    fx = st.problem.fx
    with np.errstate(divide="ignore", invalid="ignore"):
        penalty = np.where(np.isinf(aa), 0.0, (ac - fx) ** 2 / aa)
    penalty = np.where(aa == 0, np.where(abs(fx) < 1e-12, 0.0, np.inf), penalty)
    return st.problem.yy - cc + penalty


def _prefix_bound(st: _Search, P, Mc, Ma, cc, ac, aa, candidates) -> tuple[np.ndarray, np.ndarray]:
    """Lower bound on every completion of each prefix P by r more literals among its ``candidates`` (T, n),
    and the columns that may extend it.

    The separable bound (:mod:`.bounds`) centred at p = the box-free anchored optimum of P (ρ its
    multiplier λ, so g_P = 0 and the P terms vanish): φ(P ∪ T) ≥ φ(P) + Σ_{j∈T} h_j(p). The h_j come
    from the curvature valid at every node of this size (:meth:`.NodeCurvature.screen`). The r smallest
    h_j bound the node; a completion containing column j is bounded by
    φ(P) + h_j + (the r − 1 smallest others), so only such j below the incumbent stay allowed.
    """
    T, ell = P.shape
    r = st.s - ell
    cols = np.flatnonzero(candidates.any(axis=0))
    allowed = np.zeros((T, st.n), dtype=bool)
    if len(cols) < r:
        return np.full(T, np.inf), allowed
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(np.isinf(aa) | (aa == 0), 0.0, (ac - st.problem.fx) / aa)
    phi = _anchored_phi(st, cc, ac, aa)
    p = Mc - lam[:, None] * Ma
    sparse_p = csr_matrix((p.ravel(), P.ravel(), np.arange(0, T * ell + 1, ell)), shape=(T, st.n))
    g = np.asarray(sparse_p @ st.G[:, cols]) - st.c[cols] + lam[:, None] * st.a[cols]
    inside = candidates[:, cols]
    h = coordinate_minima(st.curvature.screen(ell, cols)[None, :], g)
    h[~inside] = np.inf
    smallest = np.sort(np.partition(h, r - 1, axis=1)[:, :r], axis=1)
    bound = phi + smallest.sum(axis=1)
    with np.errstate(invalid="ignore"):
        others = bound - smallest[:, -1]  # φ(P) + the r − 1 smallest
        allowed[:, cols] = h < (st.threshold() - others)[:, None]
    return bound, allowed


def _leaves(st: _Search, positions: np.ndarray, phi: np.ndarray) -> None:
    """Supports whose box-free value beats the incumbent: exact (box-aware) values, best kept, in batches
    of LEAF_CHUNK by increasing box-free value (a lower bound on the boxed one)."""
    slack = 1e-9 * max(1.0, abs(st.best_phi))  # the recursion's φ may differ from a direct solve by rounding
    hit = np.flatnonzero(phi < st.threshold() + slack)
    rank = hit[np.argsort(phi[hit])]
    for lo in range(0, len(rank), LEAF_CHUNK):
        chunk = rank[lo:lo + LEAF_CHUNK]
        chunk = chunk[phi[chunk] < st.threshold() + slack]
        if len(chunk) == 0:
            return
        if st.out_of_time():
            st.leave_open(float(phi[chunk].min()) - slack)
            return
        S = np.sort(st.order[positions[chunk]], axis=1)
        W, values = closed_form(st.problem, S)
        outside = (np.abs(W) > 1 + 1e-9).any(axis=1) & (values < st.threshold())
        if outside.any():
            W[outside], values[outside] = box_solve_many(st.problem, S[outside])
        best = int(np.argmin(values))
        if values[best] < st.best_phi:
            w = np.zeros(st.problem.d)
            w[S[best]] = np.clip(W[best], -1, 1)
            st.best_w, st.best_phi = w, 4 * st.problem.objective(w)
