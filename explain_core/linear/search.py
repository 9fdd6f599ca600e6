"""Search over supports for the certified optimum of (MIP): exhaustive enumeration and branch-and-bound.

Supports grow one literal at a time in a fixed order (a depth-first tree of combinations, batched); each
node keeps G_P⁻¹ and a few scalars so a child costs O(|P|²) (block inversion, Schur complement η). A
leaf's box-free value filters it; the survivors are solved exactly with the box. Branch-and-bound drops
a subtree when a lower bound on every support below it exceeds the incumbent (:mod:`.bounds`); each
node also narrows the columns each child's completions may use (:func:`completion_limit`), and a node two
literals short of a leaf extends only by the pairs below the incumbent (:func:`pair_partners`).
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
        self.Gca = np.vstack([self.G, self.c, self.a])  # rows of the gradient Gp − c + λa as one product
        self.n = len(o)
        if self.bound is not None:  # root h, nondecreasing along the order (column 0 first: its h lowered to fit)
            self.h = self.bound.h[o]
            self.h[0] = min(self.h[:2])
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
    bound exceeds the incumbent. Column 0 (the bias) comes first: the separable bound gives it no
    curvature (D₀ = 0, :func:`.bounds.curvature`), so its h is the loosest; first in the order it is in
    the prefix of every node below it, where its term vanishes, and a candidate of no other node.
    Stops at ``deadline`` or when ``stop()`` says so; the lower bound is then the smallest bound over the
    subtrees left open (0 for the enumeration, which has none).
    """
    s = min(k, problem.d)
    bound = separable_bound(problem, incumbent, 2 * s) if prune else None
    order = np.arange(problem.d)
    if prune:
        order = np.argsort(bound.h, kind="stable")
        order = np.concatenate([[0], order[order != 0]])
    state = _Search(problem, order, s, incumbent.copy(), 4 * problem.objective(incumbent), bound, deadline, stop)
    root_bound = -np.inf if bound is None else bound.K + state.cum[s]
    _expand(state, _Nodes(np.zeros((1, 0), dtype=np.intp), np.zeros((1, 0, 0)), np.zeros((1, 0)), np.zeros((1, 0)),
                          np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1), np.array([root_bound]), None, None))
    value = problem.objective(state.best_w)
    lower = value if state.complete else max(0.0, min(value, state.open_phi / 4))
    return Outcome(state.best_w, value, lower, state.leaves, state.complete)


@dataclass
class _Nodes:
    """A batch of tree nodes: prefix P (positions), M = G_PP⁻¹, Mc, Ma, cᵀMc, aᵀMc, aᵀMa, Σ_P h (root
    bound), a lower bound on every support below each node and, once bounded (None at the root), each
    column's h_j below it (+inf where no completion may use it) and the r smallest h_j, sorted."""

    idx: np.ndarray
    M: np.ndarray
    Mc: np.ndarray
    Ma: np.ndarray
    cc: np.ndarray
    ac: np.ndarray
    aa: np.ndarray
    hs: np.ndarray
    bound: np.ndarray
    h: np.ndarray | None
    smallest: np.ndarray | None

    def slack(self, st: "_Search") -> np.ndarray:
        """How far below the incumbent φ(P) is: the room left for the h_j of a completion."""
        return st.threshold() - _anchored_phi(st, self.cc, self.ac, self.aa)


def _expand(st: _Search, nodes: _Nodes) -> None:
    """Children of a batch of nodes, PAIR_CHUNK (node, column) pairs at a time, depth first.

    Once bounded, a node's child P ∪ q is built only if φ(P) + h_q + (the r − 1 smallest h) is below the
    incumbent (the smallest may include h_q itself: a weaker, still valid test)."""
    ell = nodes.idx.shape[1]
    r = st.s - ell - 1  # literals still to add below a child
    last = nodes.idx[:, -1] if ell else np.full(len(nodes.idx), -1)
    top = np.full(len(last), st.n - r)  # a child at position q needs r positions after it
    if st.bound is not None:  # root bound K + Σh(P) + h_q + h_{q+1} + … + h_{q+r} is nondecreasing in q
        reach = st.cum[r + 1:st.n + 1] - st.cum[:st.n - r]
        top = np.minimum(top, np.searchsorted(reach, st.threshold() - st.bound.K - nodes.hs, side="left"))
    if nodes.h is None:
        counts = np.maximum(top - last - 1, 0)
        parent = np.repeat(np.arange(len(last)), counts)
        starts = np.cumsum(counts) - counts
        q = last[parent] + 1 + np.arange(len(parent)) - starts[parent]
    else:
        room = nodes.slack(st) - nodes.smallest[:, :r].sum(axis=1)
        parent, q = np.nonzero((nodes.h < room[:, None]) & (np.arange(st.n)[None, :] < top[:, None]))
    for lo in range(0, len(parent), PAIR_CHUNK):
        if st.out_of_time():
            rest = parent[lo:]
            st.leave_open(-np.inf if st.bound is None else float(np.min(np.maximum(
                nodes.bound[rest], st.bound.K + nodes.hs[rest] + reach[q[lo:]]))))
            return
        _children(st, nodes, parent[lo:lo + PAIR_CHUNK], q[lo:lo + PAIR_CHUNK])


def _children(st: _Search, nodes: _Nodes, parent: np.ndarray, q: np.ndarray, candidates=None) -> None:
    """Extend each parent by column q: block inversion of G_{P∪q} (Schur complement η). ``candidates``
    (T, n): the columns each child's completions may use (default: :func:`_candidates`). Children two
    literals short of a leaf are extended by :func:`_pair_children`.

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
    bound, h, smallest = np.full(len(q), -np.inf), None, None
    if st.bound is not None:
        if candidates is None:
            candidates = _candidates(st, nodes, parent, q)
        bound, h, smallest = _prefix_bound(st, P2, Mc, Ma, cc, ac, aa, candidates)
        keep = bound < st.threshold()
        P2, Mc, Ma, cc, ac, aa, hs, bound, h, smallest, parent, t, inv = (
            a[keep] for a in (P2, Mc, Ma, cc, ac, aa, hs, bound, h, smallest, parent, t, inv))
    ell = P.shape[1]
    M = np.zeros((len(parent), ell + 1, ell + 1))
    M[:, :ell, :ell] = nodes.M[parent] + np.einsum("ti,tj->tij", t, t) * inv[:, None, None]
    M[:, :ell, ell] = M[:, ell, :ell] = -t * inv[:, None]
    M[:, ell, ell] = inv
    children = _Nodes(P2, M, Mc, Ma, cc, ac, aa, hs, bound, h, smallest)
    if h is not None and st.s - P2.shape[1] == 2:
        _pair_children(st, children, h)
    else:
        _expand(st, children)


def _candidates(st: _Search, nodes: _Nodes, parent: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(T, n): the columns after q that a completion of P ∪ q may use (below a bounded parent: those
    under :func:`completion_limit`)."""
    later = np.arange(st.n)[None, :] > q[:, None]
    if nodes.h is None:
        return later
    h = nodes.h[parent]
    limit = completion_limit(nodes.smallest[parent], h[np.arange(len(q)), q], nodes.slack(st)[parent])
    return later & (h < limit[:, None])


def completion_limit(smallest: np.ndarray, hq: np.ndarray, slack: np.ndarray) -> np.ndarray:
    """Below a node with r literals to add, its r smallest h (``smallest``, (T, r) sorted) and ``slack``:
    the r − 1 columns T' that complete the child P ∪ q have h_q + Σ_{T'} h < slack, so each j ∈ T' has
    h_j < slack − h_q − (the r − 2 smallest h other than h_q): that limit, per row."""
    r = smallest.shape[1]
    others = smallest[:, :r - 2].sum(axis=1)
    if r > 2:  # h_q among the r − 2 smallest: the next one takes its place
        others = np.where(hq <= smallest[:, r - 3], others - hq + smallest[:, r - 2], others)
    return slack - hq - others


def _pair_children(st: _Search, nodes: _Nodes, h: np.ndarray) -> None:
    """Children of nodes two literals short of a leaf, built from the pairs their leaves need.

    A leaf P ∪ {i, j} is bounded by φ(P) + h_i + h_j (:func:`_prefix_bound`), so only the pairs with
    h_i + h_j below the slack remain, and the smaller h of such a pair has 2h < slack. One child P ∪ i for
    each such i, its candidates i's partners (:func:`pair_partners`), covers every remaining leaf once —
    instead of a child for every allowed column, each free to pair with any later one.
    """
    slack = nodes.slack(st)
    parent, i = np.nonzero(2 * h < slack[:, None])
    for lo in range(0, len(parent), PAIR_CHUNK):
        if st.out_of_time():
            st.leave_open(float(nodes.bound[parent[lo:]].min()))
            return
        chunk = slice(lo, lo + PAIR_CHUNK)
        _children(st, nodes, parent[chunk], i[chunk], pair_partners(h[parent[chunk]], i[chunk], slack[parent[chunk]]))


def pair_partners(h: np.ndarray, i: np.ndarray, slack: np.ndarray) -> np.ndarray:
    """(T, n) mask of the columns j that pair with column i[t] of row t of ``h`` below ``slack[t]``
    (h_i + h_j < slack), each unordered pair under one member only: the one with 2h < slack (the smaller
    h; a pair below the slack has at least one), the lower index when both have it."""
    small = 2 * h < slack[:, None]
    later = np.arange(h.shape[1])[None, :] > i[:, None]
    return (h[np.arange(len(i)), i][:, None] + h < slack[:, None]) & (~small | later)


def _anchored_phi(st: _Search, cc, ac, aa) -> np.ndarray:
    """Box-free anchored optimum φ = yy − cᵀMc + (aᵀMc − fx)²/aᵀMa (0 penalty when the anchoring is free;
    +inf when no column can carry it)."""
    fx = st.problem.fx
    with np.errstate(divide="ignore", invalid="ignore"):
        penalty = np.where(np.isinf(aa), 0.0, (ac - fx) ** 2 / aa)
    penalty = np.where(aa == 0, np.where(abs(fx) < 1e-12, 0.0, np.inf), penalty)
    return st.problem.yy - cc + penalty


def _prefix_bound(st: _Search, P, Mc, Ma, cc, ac, aa, candidates):
    """Lower bound on every completion of each prefix P by r more literals among its ``candidates`` (T, n),
    each column's h_j (T, n; +inf off the candidates) and the r smallest h_j, sorted (T, r).

    The separable bound (:mod:`.bounds`) centred at p = the box-free anchored optimum of P (ρ its
    multiplier λ, so g_P = 0 and the P terms vanish): φ(P ∪ T) ≥ φ(P) + Σ_{j∈T} h_j(p). The h_j come
    from the curvature valid at every node of this size (:meth:`.NodeCurvature.screen`). The r smallest
    h_j bound the node.
    """
    T, ell = P.shape
    r = st.s - ell
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(np.isinf(aa) | (aa == 0), 0.0, (ac - st.problem.fx) / aa)
    p = Mc - lam[:, None] * Ma
    entries = np.column_stack([p, np.full(T, -1.0), lam])  # g = Gp − c + λa: (p, −1, λ) times (G; c; a)
    at = np.column_stack([P, np.full((T, 2), st.n) + np.arange(2)])
    width = ell + 2
    g = csr_matrix((entries.ravel(), at.ravel(), np.arange(0, T * width + 1, width)), shape=(T, st.n + 2)) @ st.Gca
    D = st.curvature.screen(ell)
    excluded = np.logical_not(candidates)
    phi = _anchored_phi(st, cc, ac, aa)
    h = box_free_minima(D, g)  # ≤ the box minima: rows it prunes need no more
    np.copyto(h, np.inf, where=excluded)
    smallest = _smallest(h, r)
    bound = phi + smallest.sum(axis=1)
    live = np.flatnonzero(bound < st.threshold())
    exact = coordinate_minima(D[None, :], g[live])
    np.copyto(exact, np.inf, where=excluded[live])
    h[live] = exact
    smallest[live] = _smallest(exact, r)
    bound[live] = phi[live] + smallest[live].sum(axis=1)
    return bound, h, smallest


def box_free_minima(D: np.ndarray, g: np.ndarray) -> np.ndarray:
    """A lower bound on :func:`.bounds.coordinate_minima` (T, n) in three passes instead of seven: −g²/D
    (the minimum over every t, not only |t| ≤ 1) where D > 0, the box minimum D − 2|g| where D ≤ 0."""
    flat = D <= 0
    h = g * g
    h *= -1 / np.where(flat, 1.0, D)
    if flat.any():
        h[:, flat] = coordinate_minima(D[flat], g[:, flat])
    return h


def _smallest(h: np.ndarray, r: int) -> np.ndarray:
    """The r smallest entries of each row of h (T, n), sorted: r passes of argmin (for the r ≤ k of a
    search, faster than a partition), each minimum masked and then restored, in reverse order."""
    rows = np.arange(len(h))
    at = np.empty((len(h), r), dtype=np.intp)
    values = np.empty((len(h), r))
    for i in range(r):
        at[:, i] = np.argmin(h, axis=1)
        values[:, i] = h[rows, at[:, i]]
        h[rows, at[:, i]] = np.inf
    for i in reversed(range(r)):
        h[rows, at[:, i]] = values[:, i]
    return values


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
