"""The mixed-integer model of one ReLU network's flip problem (:class:`~.relu.ReluProblem`), solved by SCIP through
OR-Tools MathOpt: one binary per movable group (each input of the network is affine in its group's binary), the
fewest moved groups such that the raw output crosses the threshold (widened by ``tol``).

Each hidden unit's pre-activation is kept as an affine form in the groups' binaries and the earlier unstable units'
outputs, so its bounds are exact in the binaries (the first layer's are exact) and interval-propagated in the rest,
intersected with plain interval propagation. A unit whose bounds say it is always off is dropped and one always on
is linear; only the others get a binary and the big-M encoding ``y ≥ pre, y ≤ pre − lo (1 − a), y ≤ hi a`` —
and in the last hidden layer only the units whose output weight pushes toward the target: the others are wanted
low, so ``y ≥ pre, y ≥ 0`` is their exact ReLU.
``plain=True`` builds the straightforward model instead (every unit a binary, interval bounds): the anchor of
bench/sev_relu.py. SCIP runs on one thread with a fixed seed, bounded by branch-and-bound nodes (work, not seconds).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .exact import FlipOutcome, Rescore, _swaps
from .relu import ReluProblem

NODES_PER_BUDGET = 1_000  # SCIP branch-and-bound nodes per unit of the exact engine's budget
MAX_ROUNDS = 50  # re-solves after cutting off vertices the model did not confirm


def mathopt():
    """OR-Tools MathOpt, imported when a network is first solved (importing explain_core stays light)."""
    from ortools.math_opt.python import mathopt as module
    return module


@dataclass
class ReluMip:
    """The MathOpt model: ``z`` one binary per movable group (in :attr:`~.relu.ReluProblem.movable` order),
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


def build(problem: ReluProblem, plain: bool = False) -> ReluMip:
    """The model of ``problem`` (see the module's docstring); ``plain``: the straightforward one."""
    mo = mathopt()
    net, movable = problem.network, problem.movable
    model = mo.Model(name="relu-sev")
    z = [model.add_binary_variable(name=f"z{g}") for g in movable]
    position = np.full(len(problem.options), -1)
    position[movable] = np.arange(len(movable))
    column = position[problem.feature_group]
    moving = column >= 0
    form = _Form(problem.start @ net.weights[0] + net.biases[0], np.zeros((net.weights[0].shape[1], len(z))),
                 np.zeros((net.weights[0].shape[1], 0)))
    np.add.at(form.z.T, column[moving], (problem.other - problem.start)[moving, None] * net.weights[0][moving])
    ys, y_high, ibp, last = [], np.zeros(0), None, len(net.weights) - 2
    for layer, (w, b) in enumerate(zip(net.weights[1:], net.biases[1:])):
        lo, hi = form.bounds(y_high)
        if ibp is not None:  # interval propagation from the previous layer's box (the plain model's only bounds)
            lo, hi = ibp if plain else (np.maximum(lo, ibp[0]), np.minimum(hi, ibp[1]))
        box = (np.maximum(lo, 0.0), np.maximum(hi, 0.0))
        against = w[:, 0] * (1 if problem.need_high else -1) < 0
        post, new = _units(model, form, (lo, hi), z, ys, plain, against if layer == last and not plain else None)
        ys += new
        y_high = np.concatenate([y_high, box[1][[i for i in range(len(lo)) if _unstable(lo[i], hi[i], plain)]]])
        ibp = (b + np.maximum(w, 0).T @ box[0] + np.minimum(w, 0).T @ box[1],
               b + np.maximum(w, 0).T @ box[1] + np.minimum(w, 0).T @ box[0])
        form = post.next(w, b)
    moves = mo.fast_sum(z)
    raw = form.expression(0, z, ys) + net.base
    if problem.need_high:
        model.add_linear_constraint(raw >= problem.raw_threshold - problem.tol)
    else:
        model.add_linear_constraint(raw <= problem.raw_threshold + problem.tol)
    model.minimize(moves)
    return ReluMip(problem, model, z, moves)


@dataclass
class _Form:
    """Affine forms of a layer's units: ``const`` + ``z`` @ binaries + ``y`` @ earlier unstable units' outputs."""

    const: np.ndarray
    z: np.ndarray
    y: np.ndarray

    def bounds(self, y_high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact in the binaries, each unstable output within [0, its upper bound]."""
        y = np.pad(self.y, ((0, 0), (0, len(y_high) - self.y.shape[1])))
        return (self.const + np.minimum(self.z, 0).sum(1) + np.minimum(y, 0) @ y_high,
                self.const + np.maximum(self.z, 0).sum(1) + np.maximum(y, 0) @ y_high)

    def next(self, w: np.ndarray, b: np.ndarray) -> _Form:
        return _Form(self.const @ w + b, w.T @ self.z, w.T @ self.y)

    def expression(self, i: int, z: list, ys: list):
        terms = [c * v for c, v in zip(self.z[i].tolist(), z) if c != 0]
        terms += [c * v for c, v in zip(self.y[i].tolist(), ys) if c != 0]
        return mathopt().fast_sum(terms) + float(self.const[i])


def _unstable(lo: float, hi: float, plain: bool) -> bool:
    return plain or (lo < 0 < hi)


def _units(model, form: _Form, bounds: tuple[np.ndarray, np.ndarray], z: list, ys: list, plain: bool,
           against: np.ndarray | None):
    """The layer's outputs as affine forms (an off unit 0, an on unit its pre-activation, an unstable one a new
    variable with its big-M encoding) and the new variables. ``against`` (the last hidden layer only): the units
    whose output weight works against the target, so the search wants them low and ``y ≥ pre, y ≥ 0`` is exact
    for them (no binary: only the units pushing toward the target need the ReLU's upper envelope)."""
    lo, hi = bounds
    n_y = len(ys)
    unstable = [i for i in range(len(lo)) if _unstable(lo[i], hi[i], plain)]
    on = (lo >= 0) & ~np.isin(np.arange(len(lo)), unstable)
    width = n_y + len(unstable)
    post = _Form(np.where(on, form.const, 0.0), np.where(on[:, None], form.z, 0.0),
                 np.pad(np.where(on[:, None], form.y, 0.0), ((0, 0), (0, width - form.y.shape[1]))))
    new = []
    for k, i in enumerate(unstable):
        low, high = float(lo[i]), float(max(hi[i], 0.0))
        pre = model.add_variable(lb=low, ub=max(float(hi[i]), low))
        model.add_linear_constraint(pre == form.expression(i, z, ys))
        y = model.add_variable(lb=0.0, ub=high)
        model.add_linear_constraint(y >= pre)
        if against is None or not against[i]:
            a = model.add_binary_variable()
            model.add_linear_constraint(y <= pre - low * (1 - a))
            model.add_linear_constraint(y <= high * a)
        post.y[i, n_y + k] = 1.0
        new.append(y)
    return post, new


def _solve(mip: ReluMip, budget: float):
    """One SCIP run: one thread, a fixed seed, at most ``budget`` × :data:`NODES_PER_BUDGET` nodes."""
    mo = mathopt()
    params = mo.SolveParameters(threads=1, random_seed=0, node_limit=max(1, int(budget * NODES_PER_BUDGET)))
    result = mo.solve(mip.model, mo.SolverType.GSCIP, params=params)
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
          plain: bool = False) -> FlipOutcome:
    """The fewest moves: ``incumbent`` (a confirmed flip, or None) proven minimal, or a smaller flip the model
    confirms, with at least ``cleared`` moves; ``plain``: the straightforward model, no incumbent (the anchor)."""
    best = int(incumbent.sum()) if incumbent is not None else None
    kept = (incumbent,) if incumbent is not None else ()
    if best is not None and best <= cleared:
        return FlipOutcome("optimal", best, best, kept, True, 0.0, "network layers")
    mip, spent, bound = build(problem, plain), 0.0, cleared
    if cleared:
        mip.model.add_linear_constraint(mip.moves >= cleared)
    if best is not None:
        mip.model.add_linear_constraint(mip.moves <= best - 1)
    for _ in range(MAX_ROUNDS):
        result, work = _solve(mip, budget - spent)
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
    """Out of budget: the better of the incumbent and SCIP's confirmed solution is an upper bound."""
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
    for another, evaluated on the network, each crossing one confirmed by the model), then SCIP with every vertex
    seen cut off looks for one more; when there is none the list is complete. Stops at ``cap`` flips in all or
    when ``budget`` is spent."""
    mip = build(problem)
    mip.model.add_linear_constraint(mip.moves == int(first.sum()))
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
