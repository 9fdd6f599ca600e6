"""The mixed-integer model of one ReLU network's flip problem (:class:`~.network.ReluProblem`), solved by HiGHS through
OR-Tools MathOpt: one binary per movable group (each input of the network is affine in its group's binary), the
fewest moved groups such that the raw output crosses the threshold (widened by ``tol``).

Each hidden unit's pre-activation is kept as an affine form in the groups' binaries and the earlier unstable units'
outputs, so its bounds are exact in the binaries (the first layer's are exact) and interval-propagated in the rest,
intersected with plain interval propagation. A unit whose bounds say it is always off is dropped and one always on
is linear; only the others get a binary and the big-M encoding ``y ≥ pre, y ≤ pre − lo (1 − a), y ≤ hi a`` —
and in the last hidden layer only the units whose output weight pushes toward the target: the others are wanted
low, so ``y ≥ pre, y ≥ 0`` is their exact ReLU.
``plain=True`` builds the straightforward model instead (every unit a binary, interval bounds): the anchor of
bench/sev_relu.py, solved by SCIP or HiGHS. Each run is deterministic and bounded by branch-and-bound nodes (work, not
seconds).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .exact import FlipOutcome, Rescore, _swaps
from .network import ReluProblem

NODES_PER_BUDGET = 20  # branch-and-bound nodes per unit of the exact engine's budget (see exact_sev.BUDGET_UNIT)
MAX_ROUNDS = 50  # re-solves after cutting off vertices the model did not confirm


def mathopt():
    """OR-Tools MathOpt, imported when a network is first solved (importing explain_core stays light)."""
    from ortools.math_opt.python import mathopt as module
    return module


@dataclass
class ReluMip:
    """The MathOpt model: ``z`` one binary per movable group (in :attr:`~.network.ReluProblem.movable` order),
    ``moves`` their sum."""

    problem: ReluProblem
    model: object
    z: list
    moves: object

    def choice(self, result) -> np.ndarray:
        """The solution as one option per group (1 = moved)."""
        choice = np.zeros(len(self.problem.options), dtype=np.int64)
        choice[self.problem.movable] = [int(result.variable_values(v) > 0.5) for v in self.z]
        return choice

    def cut(self, choice: np.ndarray) -> None:
        """No-good: never this vertex again."""
        moved = choice[self.problem.movable] == 1
        lhs = mathopt().fast_sum((1 - v) if m else v for v, m in zip(self.z, moved))
        self.model.add_linear_constraint(lhs >= 1)


@dataclass
class _Form:
    """Affine forms of a layer's units: ``const`` + ``z`` @ binaries + ``y`` @ earlier unstable units' outputs."""

    const: np.ndarray
    z: np.ndarray
    y: np.ndarray

    def bounds(self, y_high: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact in the binaries when at most ``k`` of them are 1, each unstable output within [0, its bound]."""
        y = np.pad(self.y, ((0, 0), (0, len(y_high) - self.y.shape[1])))
        down, up = np.minimum(self.z, 0), np.maximum(self.z, 0)
        if k < self.z.shape[1]:  # the k largest effects each way
            down, up = np.sort(down, axis=1)[:, :k], -np.sort(-up, axis=1)[:, :k]
        return (self.const + down.sum(1) + np.minimum(y, 0) @ y_high,
                self.const + up.sum(1) + np.maximum(y, 0) @ y_high)

    def expression(self, i: int, z: list, ys: list):
        terms = [c * v for c, v in zip(self.z[i].tolist(), z) if c != 0]
        terms += [c * v for c, v in zip(self.y[i].tolist(), ys) if c != 0]
        return mathopt().fast_sum(terms) + float(self.const[i])


@dataclass(frozen=True)
class _Layer:
    """One hidden layer: its pre-activations' forms and bounds, its unstable units (each a variable), and which of
    them need no binary (``convex``)."""

    form: _Form
    lo: np.ndarray
    hi: np.ndarray
    unstable: np.ndarray
    convex: np.ndarray


def propagate(problem: ReluProblem, k: int, plain: bool = False) -> tuple[list[_Layer], _Form, tuple]:
    """The hidden layers and the output's form and bounds when at most ``k`` groups move (see the module's
    docstring; ``plain``: interval bounds only, every unit unstable)."""
    net, movable = problem.network, problem.movable
    position = np.full(len(problem.options), -1)
    position[movable] = np.arange(len(movable))
    column = position[problem.feature_group]
    moving = column >= 0
    form = _Form(problem.start @ net.weights[0] + net.biases[0], np.zeros((net.weights[0].shape[1], len(movable))),
                 np.zeros((net.weights[0].shape[1], 0)))
    np.add.at(form.z.T, column[moving], (problem.other - problem.start)[moving, None] * net.weights[0][moving])
    layers, y_high, ibp = [], np.zeros(0), None
    for depth, (w, b) in enumerate(zip(net.weights[1:], net.biases[1:]), start=2):
        lo, hi = form.bounds(y_high, len(movable) if plain else k)
        if ibp is not None:  # interval propagation from the previous layer's box (the plain model's only bounds)
            lo, hi = ibp if plain else (np.maximum(lo, ibp[0]), np.minimum(hi, ibp[1]))
        unstable = np.ones(len(lo), dtype=bool) if plain else (lo < 0) & (hi > 0)
        last = depth == len(net.weights) and not plain  # the output's weights: each unit's sign is its push
        against = (w[:, 0] < 0) == problem.need_high if last else np.zeros(len(lo), dtype=bool)
        layers.append(_Layer(form, lo, hi, np.flatnonzero(unstable), against[unstable]))
        on = (lo >= 0) & ~unstable
        n_y = len(y_high)
        y = np.zeros((len(lo), n_y + int(unstable.sum())))
        y[:, :form.y.shape[1]] = np.where(on[:, None], form.y, 0.0)
        y[np.flatnonzero(unstable), n_y + np.arange(unstable.sum())] = 1.0
        post = _Form(np.where(on, form.const, 0.0), np.where(on[:, None], form.z, 0.0), y)
        box = (np.maximum(lo, 0.0), np.maximum(hi, 0.0))
        y_high = np.concatenate([y_high, box[1][unstable]])
        ibp = (b + np.maximum(w, 0).T @ box[0] + np.minimum(w, 0).T @ box[1],
               b + np.maximum(w, 0).T @ box[1] + np.minimum(w, 0).T @ box[0])
        form = _Form(post.const @ w + b, w.T @ post.z, w.T @ post.y)
    lo, hi = form.bounds(y_high, len(movable) if plain else k)
    if ibp is not None:
        lo, hi = np.maximum(lo, ibp[0]), np.minimum(hi, ibp[1])
    return layers, form, (float(lo[0]) + net.base, float(hi[0]) + net.base)


def reachable(problem: ReluProblem, k: int) -> bool:
    """Whether the output's bounds with at most ``k`` moves admit a crossing (False: no flip of ≤ k moves)."""
    lo, hi = propagate(problem, k)[2]
    return hi >= problem.raw_threshold - problem.tol if problem.need_high else lo <= problem.raw_threshold + problem.tol


def build(problem: ReluProblem, k: int, plain: bool = False) -> ReluMip:
    """The model of ``problem`` with at most ``k`` moves (see the module's docstring); ``plain``: the
    straightforward one."""
    mo = mathopt()
    model = mo.Model(name="relu-sev")
    z = [model.add_binary_variable(name=f"z{g}") for g in problem.movable]
    layers, out, _ = propagate(problem, k, plain)
    ys = []
    for layer in layers:
        new = []
        for i, convex in zip(layer.unstable.tolist(), layer.convex.tolist()):
            low, high = float(layer.lo[i]), float(max(layer.hi[i], 0.0))
            pre = model.add_variable(lb=low, ub=max(float(layer.hi[i]), low))
            model.add_linear_constraint(pre == layer.form.expression(i, z, ys))
            y = model.add_variable(lb=0.0, ub=high)
            model.add_linear_constraint(y >= pre)
            if not convex:  # wanted high: the ReLU's upper envelope needs a binary
                a = model.add_binary_variable()
                model.add_linear_constraint(y <= pre - low * (1 - a))
                model.add_linear_constraint(y <= high * a)
            new.append(y)
        ys += new
    moves = mo.fast_sum(z)
    raw = out.expression(0, z, ys) + problem.network.base
    if problem.need_high:
        model.add_linear_constraint(raw >= problem.raw_threshold - problem.tol)
    else:
        model.add_linear_constraint(raw <= problem.raw_threshold + problem.tol)
    model.add_linear_constraint(moves <= k)
    model.minimize(moves)
    return ReluMip(problem, model, z, moves)


def _solve(mip: ReluMip, budget: float, solver: str = "highs"):
    """One deterministic run, at most ``budget`` × :data:`NODES_PER_BUDGET` nodes: HiGHS, or (``solver="scip"``,
    the bench's anchor) SCIP on one thread with a fixed seed (measured on bench/sev_relu.py's digits rows: SCIP's
    default root cuts spent 15 s on the tuned model's root where HiGHS proved it in 3 nodes)."""
    mo = mathopt()
    nodes = max(1, int(budget * NODES_PER_BUDGET))
    if solver == "scip":
        params = mo.SolveParameters(threads=1, random_seed=0, node_limit=nodes)
        result = mo.solve(mip.model, mo.SolverType.GSCIP, params=params)
    else:
        result = mo.solve(mip.model, mo.SolverType.HIGHS, params=mo.SolveParameters(random_seed=0, node_limit=nodes))
    return result, max(1, int(result.solve_stats.node_count)) / NODES_PER_BUDGET


def _reason(result) -> str:
    """``optimal``, ``infeasible``, ``feasible`` (a limit, with a solution) or ``limit`` (none)."""
    why = mathopt().TerminationReason
    reason = result.termination.reason
    if reason == why.OPTIMAL:
        return "optimal"
    if reason in (why.INFEASIBLE, why.INFEASIBLE_OR_UNBOUNDED):
        return "infeasible"
    return "feasible" if result.has_primal_feasible_solution() else "limit"


def _dual(result) -> int:
    value = float(result.termination.objective_bounds.dual_bound)
    return math.ceil(value - 1e-6) if math.isfinite(value) else 0


def prove(problem: ReluProblem, rescore: Rescore, incumbent: np.ndarray | None, cleared: int, budget: float,
          plain: bool = False, solver: str = "highs") -> FlipOutcome:
    """The fewest moves: ``incumbent`` (a confirmed flip, or None) proven minimal, or a smaller flip the model
    confirms, with at least ``cleared`` moves; ``plain``: the straightforward model, no incumbent (the anchor),
    solved by ``solver`` (``highs`` or ``scip``)."""
    best = int(incumbent.sum()) if incumbent is not None else None
    kept = (incumbent,) if incumbent is not None else ()
    if best is not None and best <= cleared:
        return FlipOutcome("optimal", best, best, kept, True, 0.0, "network layers")
    most = len(problem.movable) if best is None else best - 1
    while not plain and cleared <= most and not reachable(problem, cleared):
        cleared += 1  # no flip of this many moves: even the output's bounds do not cross
    if cleared > most:
        return (FlipOutcome("optimal", best, best, kept, True, 0.0, "network layers") if best is not None else
                FlipOutcome("no flip exists", None, cleared, (), True, 0.0, "network layers"))
    mip, spent, bound = build(problem, most, plain), 0.0, cleared
    if cleared:
        mip.model.add_linear_constraint(mip.moves >= cleared)
    for _ in range(MAX_ROUNDS):
        result, work = _solve(mip, budget - spent, solver)
        spent += work
        reason = _reason(result)
        if reason == "infeasible":
            if best is None:
                return FlipOutcome("no flip exists", None, bound, (), True, spent, "mip")
            return FlipOutcome("optimal", best, best, kept, True, spent, "mip")
        if reason != "optimal" or spent >= budget:
            return _limit(mip, result, reason, rescore, kept, max(bound, _dual(result)), spent)
        choice = mip.choice(result)
        bound = int(choice.sum())
        if rescore([choice])[0]:
            return FlipOutcome("optimal", bound, bound, (choice,), True, spent, "mip")
        mip.cut(choice)  # within the band and not confirmed: the model says no
    return FlipOutcome("limit reached", best, bound, kept, False, spent, "mip")


def _limit(mip: ReluMip, result, reason: str, rescore: Rescore, kept: tuple, bound: int,
           spent: float) -> FlipOutcome:
    """Out of budget: the better of the incumbent and the solver's confirmed solution is an upper bound."""
    if reason in ("feasible", "optimal"):
        choice = mip.choice(result)
        if (not kept or choice.sum() < kept[0].sum()) and rescore([choice])[0]:
            kept = (choice,)
    value = int(kept[0].sum()) if kept else None
    return FlipOutcome("limit reached", value, min(bound, value) if value is not None else bound, kept, False,
                       spent, "mip")


def list_others(problem: ReluProblem, first: np.ndarray, rescore: Rescore, cap: int,
                budget: float) -> tuple[list[np.ndarray], bool, float]:
    """The other model-confirmed flips of as many moves as ``first``: neighbours first (one moved group swapped
    for another, evaluated on the network, each crossing one confirmed by the model), then HiGHS with every vertex
    seen cut off looks for one more; when there is none the list is complete. Stops at ``cap`` flips in all or
    when ``budget`` is spent."""
    mip = build(problem, int(first.sum()))
    mip.model.add_linear_constraint(mip.moves >= int(first.sum()))
    known = {first.tobytes()}
    mip.cut(first)
    confirmed, frontier, spent = [], [first], 0.0
    while True:
        while frontier and len(confirmed) + 1 < cap:
            candidates = _swaps(problem, frontier, known, raw_of=problem.vertex_raw)
            for choice in candidates:
                mip.cut(choice)
            flips = rescore(candidates) if candidates else np.zeros(0, dtype=bool)
            frontier = [c for c, ok in zip(candidates, flips) if ok]
            confirmed += frontier
        if len(confirmed) + 1 >= cap or spent >= budget:
            return confirmed[:cap - 1], False, spent
        result, work = _solve(mip, budget - spent)
        spent += work
        reason = _reason(result)
        if reason == "infeasible":
            return confirmed, True, spent
        if reason != "optimal":
            return confirmed, False, spent
        choice = mip.choice(result)
        known.add(choice.tobytes())
        mip.cut(choice)
        frontier = [choice] if rescore([choice])[0] else []
        confirmed += frontier
