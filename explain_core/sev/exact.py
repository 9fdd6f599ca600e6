"""The fewest feature groups to move so a tree ensemble's decision flips, solved exactly with OR-Tools CP-SAT.

One choice per feature group among its options (SEV: the query's value or the reference's; SEVᵀ: one value per
split-threshold interval), option 0 the start (cost 0), every other option cost 1. A split whose options all go the
same way is fixed; each tree keeps only the leaves its unfixed splits can reach, one indicator each, exactly one per
tree, and at every unfixed split the leaves of each side are bounded by the options that go that way (a tight,
node-based formulation). The raw output is a linear expression of the leaf indicators, scaled to integers, and the
decision is a constraint on it, widened by ``tol`` so that every vertex the model could flip is admitted: each
solution is then re-scored by the real model, a vertex it does not confirm is cut off (a no-good) and the search
goes on. So the minimum is the model's own, ties at the boundary included: a vertex the widened constraint excludes
lies more than ``tol`` (far above the model's floating-point error) on the wrong side, and every admitted one is
decided by the model. The search is deterministic (one worker, a fixed seed) and bounded by CP-SAT's deterministic
time, not wall seconds.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .trees import TreeEnsemble

MAX_ROUNDS = 50  # re-solves after cutting off vertices the model did not confirm
STATUSES = ("optimal", "no flip exists", "limit reached")
WORKERS, SEED = 1, 0  # CP-SAT runs on one worker with a fixed seed: the same answer on any machine
Rescore = Callable[[list[np.ndarray]], np.ndarray]  # option choices (one array per vertex) → the model confirms a flip


def cp():
    """OR-Tools CP-SAT, imported when a problem is first solved (importing explain_core stays light)."""
    from ortools.sat.python import cp_model
    return cp_model


@dataclass(frozen=True)
class FlipProblem:
    """The ensemble, each internal node's group and its options that go left (a bitmask), each group's number of
    options (1 = fixed), and the target: raw output above (``need_high``) or below ``raw_threshold``, ± ``tol``."""

    ensemble: TreeEnsemble
    node_group: np.ndarray
    node_left: np.ndarray
    options: np.ndarray
    need_high: bool
    raw_threshold: float
    tol: float


def flip_problem(ensemble: TreeEnsemble, feature_group: np.ndarray, values: np.ndarray,
                 option_rows: Sequence[Sequence[int]], need_high: bool, raw_threshold: float,
                 tol: float) -> FlipProblem:
    """The problem whose group g has options ``values[option_rows[g][k]]`` (rows of final-estimator inputs: only g's
    own inputs are read from them), each split's direction decided in the library's arithmetic."""
    inner = np.flatnonzero(ensemble.feature >= 0)
    group = np.full(len(ensemble.feature), -1, dtype=np.int64)
    group[inner] = feature_group[ensemble.feature[inner]]
    left = np.zeros(len(ensemble.feature), dtype=np.uint64)
    if all(list(rows) in ([0], [0, 1]) for rows in option_rows):  # SEV: every group's options are rows 0 and 1
        moves = np.array([len(rows) == 2 for rows in option_rows])[group[inner]]
        for k in (0, 1):
            goes = ensemble.goes_left(inner, values[k, ensemble.feature[inner]]) & (moves if k else True)
            left[inner] |= goes.astype(np.uint64) << np.uint64(k)
        return FlipProblem(ensemble, group, left, np.array([len(r) for r in option_rows]), need_high,
                           raw_threshold, tol)
    for g in np.unique(group[inner]):
        nodes = inner[group[inner] == g]
        rows = np.asarray(option_rows[g], dtype=np.int64)
        goes = ensemble.goes_left(np.broadcast_to(nodes, (len(rows), len(nodes))),
                                  values[rows[:, None], ensemble.feature[nodes][None, :]])
        left[nodes] = (goes.astype(np.uint64) << np.arange(len(rows), dtype=np.uint64)[:, None]).sum(axis=0)
    options = np.array([len(r) for r in option_rows], dtype=np.int64)
    return FlipProblem(ensemble, group, left, options, need_high, raw_threshold, tol)


@dataclass(frozen=True)
class FlipOutcome:
    """``status`` (:data:`STATUSES`); ``value`` the fewest moves confirmed (certified minimal when ``optimal``);
    ``bound`` a proven lower bound; ``solutions`` the model-confirmed choices at ``value`` (all of them when
    ``complete``); ``work`` CP-SAT's deterministic time spent; ``solver`` what answered (``layers``: the first
    layers evaluated on the trees, ``cp-sat``, ``sort``: :mod:`.additive`)."""

    status: str
    value: int | None
    bound: int
    solutions: tuple[np.ndarray, ...]
    complete: bool
    work: float
    solver: str = "cp-sat"


class _Model:
    """The CP-SAT model of a :class:`FlipProblem`: one literal per option, the reachable leaves, the margin."""

    def __init__(self, problem: FlipProblem):
        self.problem, self.model = problem, cp().CpModel()
        self.lits: list[list] = []
        for g, k in enumerate(problem.options.tolist()):
            if k == 1:
                self.lits.append([])
            elif k == 2:
                v = self.model.new_bool_var(f"move{g}")
                self.lits.append([v.Not(), v])
            else:
                zs = [self.model.new_bool_var(f"g{g}o{j}") for j in range(k)]
                self.model.add_exactly_one(zs)
                self.lits.append(zs)
        self.moved = [lits[0].Not() for lits in self.lits if lits]
        self._margin()

    def _margin(self) -> None:
        p, ens = self.problem, self.problem.ensemble
        constant, terms = ens.base, []
        for root in ens.roots.tolist():
            leaves, splits = _reachable(p, int(root))
            values = ens.value[leaves]
            low = float(values.min())
            constant += low
            if len(leaves) == 1:
                continue
            ys = [self.model.new_bool_var("") for _ in leaves]
            self.model.add_exactly_one(ys)
            for g, left, right, a, b, c in splits:
                self.model.add(sum(ys[a:b]) <= sum(self._option_lits(g, left)))
                self.model.add(sum(ys[b:c]) <= sum(self._option_lits(g, right)))
            terms.append((ys, values - low))
        self.n_variable = len(terms)
        self.scale = 2.0 ** math.ceil(math.log2(max(1, len(terms)) / p.tol))
        slack = 0.5 * len(terms)
        expr = sum(round(v * self.scale) * y for ys, vals in terms for y, v in zip(ys, vals.tolist()))
        if p.need_high:
            bound = math.ceil(self.scale * (p.raw_threshold - p.tol - constant) - slack)
            self.model.add(expr >= bound) if terms else self._fixed(constant >= p.raw_threshold - p.tol)
        else:
            bound = math.floor(self.scale * (p.raw_threshold + p.tol - constant) + slack)
            self.model.add(expr <= bound) if terms else self._fixed(constant <= p.raw_threshold + p.tol)

    def _fixed(self, holds: bool) -> None:
        if not holds:
            self.model.add_bool_or([])  # no vertex can flip

    def _option_lits(self, g: int, mask: int) -> list:
        return [lit for k, lit in enumerate(self.lits[g]) if mask >> k & 1]

    def choices(self, solver) -> np.ndarray:
        return _choices(self.lits, solver)

    def cut(self, choice: np.ndarray) -> None:
        """No-good: never this vertex again."""
        self.model.add_bool_or([lits[int(k)].Not() for lits, k in zip(self.lits, choice) if lits])



def _reachable(p: FlipProblem, root: int):
    """The reachable leaves of one tree (in depth-first order) and its unfixed splits as (group, options left,
    options right, first leaf left, first leaf right, end): the leaves of a side form a contiguous range."""
    ens, full = p.ensemble, [(1 << int(k)) - 1 for k in p.options.tolist()]
    leaves, splits = [], []

    def walk(node: int, allowed: dict) -> None:
        while ens.feature[node] >= 0:
            g = int(p.node_group[node])
            mask = allowed.get(g, full[g])
            left = mask & int(p.node_left[node])
            right = mask & ~int(p.node_left[node])
            if left and right:
                a = len(leaves)
                walk(int(ens.left[node]), {**allowed, g: left})
                b = len(leaves)
                walk(int(ens.right[node]), {**allowed, g: right})
                splits.append((g, left, right, a, b, len(leaves)))
                return
            node = int(ens.left[node] if left else ens.right[node])
        leaves.append(node)

    walk(root, {})
    return np.array(leaves, dtype=np.int64), splits


def _choices(lits: list[list], solver) -> np.ndarray:
    """The option chosen for each group in the solver's current solution."""
    return np.array([next((k for k, lit in enumerate(group) if solver.boolean_value(lit)), 0) if group else 0
                     for group in lits], dtype=np.int64)


def _solver(budget: float):
    """One deterministic CP-SAT run: :data:`WORKERS` threads, a fixed seed (:data:`SEED`), ``budget`` deterministic
    seconds; the LP relaxation at its fullest (``linearization_level`` 2: the node-based leaf bounds are tight), one
    presolve pass (measured on bench/sev_exact.py's models: a third faster than presolving to a fixed point)."""
    solver = cp().CpSolver()
    solver.parameters.num_workers = WORKERS
    solver.parameters.random_seed = SEED
    solver.parameters.linearization_level = 2
    solver.parameters.max_presolve_iterations = 1  # presolve to a fixed point costs more than it saves here
    solver.parameters.max_deterministic_time = max(budget, 1e-3)
    return solver


def vertex_raw(problem: FlipProblem, choices: np.ndarray) -> np.ndarray:
    """The ensemble's raw output at each vertex (rows of ``choices``: one option per group), read off the split
    directions of the problem (so in the library's arithmetic)."""
    ens = problem.ensemble
    node = np.broadcast_to(ens.roots, (len(choices), ens.n_trees)).copy()
    rows = np.arange(len(choices))[:, None]
    while True:
        g = problem.node_group[node]
        inner = g >= 0
        if not inner.any():
            return ens.base + ens.value[node].sum(axis=1)
        bit = choices[rows, np.maximum(g, 0)].astype(np.uint64)
        left = (problem.node_left[node] >> bit) & np.uint64(1)
        node = np.where(inner, np.where(left == 1, ens.left[node], ens.right[node]), node)


def crosses(problem: FlipProblem, raw: np.ndarray) -> np.ndarray:
    """Whether a raw output may flip the decision (the widened test: the model decides within the band)."""
    if problem.need_high:
        return raw >= problem.raw_threshold - problem.tol
    return raw <= problem.raw_threshold + problem.tol


def shallow_search(problem: FlipProblem, rescore: Rescore, max_vertices: int, start: int = 0, cap: int = 256,
                   raw_of: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[FlipOutcome | None, int]:
    """The first layers (``start``, ``start`` + 1, … moves: fewer are known not to flip) evaluated on the trees
    (or by ``raw_of``: the raw output at each row of choices, for a problem of another model) while their vertices
    fit in ``max_vertices``: a flip found there, every one listed up to ``cap`` (``None`` if none), and how many
    layers are cleared."""
    movable = np.flatnonzero(problem.options == 2)
    if (problem.options > 2).any():
        return None, start
    used = 0
    for depth in range(start, len(movable) + 1):
        count = math.comb(len(movable), depth)
        used += count
        if used > max_vertices:
            return None, depth
        combos = np.array(list(itertools.combinations(movable.tolist(), depth)), dtype=np.int64).reshape(count, depth)
        choices = np.zeros((len(combos), len(problem.options)), dtype=np.int64)
        choices[np.arange(len(combos))[:, None], combos] = 1
        candidates = choices[crosses(problem, (raw_of or (lambda c: vertex_raw(problem, c)))(choices))]
        flips = rescore(list(candidates)) if len(candidates) else np.zeros(0, dtype=bool)
        if flips.any():
            found = candidates[flips]
            return FlipOutcome("optimal", depth, depth, tuple(found[:cap]), len(found) <= cap, 0.0, "layers"), depth
    return FlipOutcome("no flip exists", None, len(movable) + 1, (), True, 0.0, "layers"), len(movable) + 1


def solve_flip(problem: FlipProblem, rescore: Rescore, *, budget: float = 10.0, list_budget: float = 10.0,
               cap: int = 256, shallow: int = 2_000, cleared: int = 0) -> FlipOutcome:
    """The fewest moves that flip the decision, each solution confirmed by ``rescore``, and the other minimal
    solutions up to ``cap`` (``complete`` says whether that is all of them). The first layers are evaluated on the
    trees directly while they hold at most ``shallow`` vertices; then CP-SAT, within ``budget`` deterministic
    seconds to certify the minimum and ``list_budget`` more to list the other minimal solutions. ``cleared``: no
    vertex of fewer moves flips (the model said so: a BFS searched them)."""
    found, cleared = shallow_search(problem, rescore, shallow, cleared, cap)
    if found is not None:
        return found
    built = _Model(problem)
    objective = sum(built.moved)
    if cleared:
        built.model.add(objective >= cleared)  # no vertex of fewer moves flips
    spent, bound = 0.0, cleared
    for _ in range(MAX_ROUNDS):
        built.model.minimize(objective)
        solver = _solver(budget - spent)
        status = solver.solve(built.model)
        spent += solver.deterministic_time
        if status == cp().INFEASIBLE:
            return FlipOutcome("no flip exists", None, bound, (), True, spent)
        if status not in (cp().OPTIMAL, cp().FEASIBLE):
            return FlipOutcome("limit reached", None, max(bound, _bound(solver)), (), False, spent)
        k, first = round(solver.objective_value), built.choices(solver)
        confirmed = bool(rescore([first])[0])
        if status == cp().FEASIBLE:  # out of budget: a confirmed incumbent is an upper bound
            return FlipOutcome("limit reached", k if confirmed else None, max(bound, _bound(solver)),
                               (first,) if confirmed else (), False, spent)
        bound = k
        if confirmed:
            others, complete, work = _list_others(built, objective, k, first, rescore, cap, list_budget)
            return FlipOutcome("optimal", k, k, (first, *others), complete, spent + work)
        built.cut(first)  # within the band and not confirmed: the model says no
    return FlipOutcome("limit reached", None, bound, (), False, spent)


def _bound(solver) -> int:
    value = solver.best_objective_bound
    return math.ceil(value - 1e-9) if math.isfinite(value) else 0


def _list_others(built: _Model, objective, k: int, first: np.ndarray, rescore: Rescore, cap: int,
                 budget: float) -> tuple[list[np.ndarray], bool, float]:
    """The other model-confirmed solutions of exactly ``k`` moves. Neighbours first (one moved group swapped for
    another, evaluated on the trees, each crossing one confirmed by the model), then a CP-SAT run with every vertex
    seen cut off looks for one more: when there is none the list is complete. Stops at ``cap`` solutions in all or
    after ``budget`` deterministic seconds."""
    built.model.clear_objective()
    built.model.add(objective == k)
    known = {first.tobytes()}
    built.cut(first)
    confirmed, frontier, spent = [], [first], 0.0
    while True:
        while frontier and len(confirmed) + 1 < cap:
            candidates = _swaps(built.problem, frontier, known)
            for choice in candidates:
                built.cut(choice)
            flips = rescore(candidates) if candidates else np.zeros(0, dtype=bool)
            frontier = [c for c, ok in zip(candidates, flips) if ok]
            confirmed += frontier
        if len(confirmed) + 1 >= cap or spent >= budget:
            return confirmed[:cap - 1], False, spent
        solver = _solver(budget - spent)
        status = solver.solve(built.model)
        spent += solver.deterministic_time
        if status == cp().INFEASIBLE:
            return confirmed, True, spent
        if status not in (cp().OPTIMAL, cp().FEASIBLE):
            return confirmed, False, spent
        choice = built.choices(solver)
        known.add(choice.tobytes())
        built.cut(choice)
        frontier = [choice] if rescore([choice])[0] else []
        confirmed += frontier


def _swaps(problem: FlipProblem, frontier: list[np.ndarray], known: set,
           raw_of: Callable[[np.ndarray], np.ndarray] | None = None) -> list[np.ndarray]:
    """Vertices not seen yet that swap one moved group of a frontier vertex for an unmoved one and may flip (on the
    trees, or by ``raw_of`` as in :func:`shallow_search`); every vertex generated is marked seen."""
    if (problem.options > 2).any():
        return []
    movable = problem.options == 2
    out = []
    for choice in frontier:
        moved, still = np.flatnonzero(choice == 1), np.flatnonzero(movable & (choice == 0))
        swaps = np.repeat(choice[None, :], len(moved) * len(still), axis=0)
        a, b = np.repeat(moved, len(still)), np.tile(still, len(moved))
        swaps[np.arange(len(swaps)), a], swaps[np.arange(len(swaps)), b] = 0, 1
        new = [row for row in swaps if row.tobytes() not in known]
        known.update(row.tobytes() for row in new)
        if new:
            block = np.array(new)
            out += list(block[crosses(problem, (raw_of or (lambda c: vertex_raw(problem, c)))(block))])
    return out
