"""SEV of ReLU networks (:class:`~.network.Network`): the exact solution (:func:`solve_relu`) of one query's flip
problem (:class:`~.network.ReluProblem`).

A vertex takes each group's value at the start (the query for SEV⁻ and SEV®, the reference for SEV⁺) or at the other
end, so every input of the network is one of two numbers and the first layer's pre-activations are affine in the
groups' binaries — their interval bounds are exact. The search runs, in order: the first layers evaluated on the
network directly (every vertex of 1, 2, … moves while they hold few vertices, each flip confirmed by the model); a
greedy path (the move that pushes the raw output furthest, until it crosses, then pruned and shortened by
two-for-one swaps), whose confirmed flip is the incumbent; and, when the incumbent is not yet proven minimal, the
mixed-integer model of :mod:`.relu_mip`, asked for a flip of fewer moves than the incumbent and at least as many as
the layers and the output's bounds cleared. As in :mod:`.exact`,
the threshold is widened by ``tol`` and every solution is re-scored by the model itself: one it does not confirm is
cut off and the search goes on, so a value is certified only when the solver proves that nothing smaller flips.
"""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from .exact import FlipOutcome, Rescore, crosses, shallow_search
from .network import ReluProblem
from .relu_mip import list_others, prove

__all__ = ["ReluProblem", "greedy_flip", "solve_relu"]


def greedy_flip(problem: ReluProblem, rescore: Rescore) -> np.ndarray | None:
    """A model-confirmed flip by the greedy path: each step moves the group that pushes the raw output furthest
    toward the target, until it crosses; the flip is then pruned (groups whose return still crosses go back), and
    the smaller of the pruned and the plain path the model confirms is returned (None: no confirmed flip)."""
    choice = np.zeros(len(problem.options), dtype=np.int64)
    free = list(problem.movable)
    while free:
        steps = np.repeat(choice[None, :], len(free), axis=0)
        steps[np.arange(len(free)), free] = 1
        raw = problem.vertex_raw(steps)
        best = int(np.argmax(problem.push(raw)))
        choice = steps[best]
        free.pop(best)
        if crosses(problem, raw[best:best + 1])[0]:
            break
    else:
        return None
    pruned = choice.copy()
    for g in np.flatnonzero(choice)[np.argsort(problem.push(_singles(problem, choice)))]:
        trial = pruned.copy()
        trial[g] = 0
        if crosses(problem, problem.vertex_raw(trial))[0]:
            pruned = trial
    tried = [pruned, choice] if pruned.sum() < choice.sum() else [choice]
    confirmed = rescore(tried)
    found = next((c for c, ok in zip(tried, confirmed) if ok), None)
    while found is not None and (shorter := _two_for_one(problem, found)) is not None and rescore([shorter])[0]:
        found = shorter
    return found


def _two_for_one(problem: ReluProblem, choice: np.ndarray) -> np.ndarray | None:
    """A vertex of one move fewer that may flip (on the network): two moved groups back, one other moved (the one
    pushing furthest); None when there is none."""
    moved, still = np.flatnonzero(choice == 1), np.flatnonzero((problem.options == 2) & (choice == 0))
    if len(moved) < 2 or not len(still):
        return None
    pairs = np.array(list(itertools.combinations(moved.tolist(), 2)))
    trials = np.repeat(choice[None, :], len(pairs) * len(still), axis=0)
    rows = np.arange(len(trials))
    trials[rows, np.repeat(pairs[:, 0], len(still))] = 0
    trials[rows, np.repeat(pairs[:, 1], len(still))] = 0
    trials[rows, np.tile(still, len(pairs))] = 1
    raw = problem.vertex_raw(trials)
    best = int(np.argmax(problem.push(raw)))
    return trials[best] if crosses(problem, raw[best:best + 1])[0] else None


def _singles(problem: ReluProblem, choice: np.ndarray) -> np.ndarray:
    """The raw output with each moved group of ``choice`` sent back alone (the least useful first, sorted)."""
    moved = np.flatnonzero(choice)
    back = np.repeat(choice[None, :], len(moved), axis=0)
    back[np.arange(len(moved)), moved] = 0
    return -problem.vertex_raw(back) if problem.need_high else problem.vertex_raw(back)


LIST_SHARE = 0.1
"""The part of a search's budget the list of its other minimal explanations may spend in the MIP (looking for one
more, or proving there is none): on digits' MLP that proof took 2,043 and over 10,000 nodes (12 s and 91 s at load 8)
where the value's own took 1 and 245; past it the list found so far is shown, marked as possibly incomplete."""


def solve_relu(problem: ReluProblem, rescore: Rescore, *, budget: float = 10.0, cap: int = 256,
               shallow: int = 2_000, cleared: int = 0) -> FlipOutcome:
    """The fewest moves that flip the decision, each solution confirmed by ``rescore``, and the other minimal
    solutions up to ``cap``: the first layers while they hold at most ``shallow`` vertices, the greedy incumbent,
    then the MIP within ``budget`` (:data:`~.relu_mip.NODES_PER_BUDGET` branch-and-bound nodes per unit) to prove
    it or find better; the other solutions within :data:`LIST_SHARE` of it. ``cleared``: no vertex of fewer moves
    flips (a BFS searched them)."""
    found, cleared = shallow_search(problem, rescore, shallow, cleared, cap, raw_of=problem.vertex_raw)
    if found is not None:
        return replace(found, solver="network layers")
    if not crosses(problem, problem.vertex_raw(np.zeros(len(problem.options))))[0]:
        cleared = max(cleared, 1)  # the start itself cannot flip
    incumbent = greedy_flip(problem, rescore)
    outcome = prove(problem, rescore, incumbent, cleared, budget)
    if outcome.status != "optimal" or cap <= 1:
        return outcome if outcome.status != "optimal" else replace(outcome, complete=False)
    others, complete, work = list_others(problem, outcome.solutions[0], rescore, cap, budget * LIST_SHARE)
    return replace(outcome, solutions=(outcome.solutions[0], *others), complete=complete, work=outcome.work + work)
