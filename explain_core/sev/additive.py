"""SEV of additive models by sorting: logistic regression and other linear models on feature groups, depth-1
boosted stumps, and any tree ensemble whose trees each branch on one group for this query (EBM-like GAMs).

When each group's move changes the raw output by a fixed amount Δ_g, whatever else moves, the fewest moves that
cross the threshold are the largest gains first: the minimum k is the first prefix of the sorted gains that covers
the gap, and every minimal set (ties included) is a k-subset whose gains cover it, listed by a depth-first
enumeration that stops as soon as the largest remaining gains cannot. As in :mod:`.exact`, the gap is widened by
the tolerance and every set is re-scored by the real model, so the boundary is decided by the model itself.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .exact import FlipOutcome, FlipProblem, Rescore, _reachable


@dataclass(frozen=True)
class Additive:
    """The raw output at the start vertex and the change Δ_g when group g moves (0 where it cannot move)."""

    start: float
    delta: np.ndarray
    movable: np.ndarray


def additive_of_trees(problem: FlipProblem) -> Additive | None:
    """The ensemble as an additive model of its binary groups, when every tree branches on at most one group for
    this problem (None otherwise)."""
    if (problem.options > 2).any():
        return None
    ens, start, delta = problem.ensemble, problem.ensemble.base, np.zeros(len(problem.options))
    for root in ens.roots.tolist():
        leaves, splits = _reachable(problem, int(root))
        if len({s[0] for s in splits}) > 1:
            return None
        if not splits:
            start += float(ens.value[leaves[0]])
            continue
        g, left, _, a, b, _ = splits[0]
        stay, move = (leaves[a], leaves[b]) if left == 1 else (leaves[b], leaves[a])
        start += float(ens.value[stay])
        delta[g] += float(ens.value[move] - ens.value[stay])
    return Additive(start, delta, problem.options == 2)


def additive_of_linear(coef: np.ndarray, base: float, start_row: np.ndarray, other_row: np.ndarray,
                       feature_group: np.ndarray, movable: np.ndarray) -> Additive:
    """A linear model's raw output coef·x + base: Δ_g sums coef_j (other_j − start_j) over g's inputs."""
    change = coef * (other_row - start_row)
    delta = np.zeros(len(movable))
    np.add.at(delta, feature_group, change)
    return Additive(float(coef @ start_row + base), np.where(movable, delta, 0.0), movable)


def solve_sorted(model: Additive, need_high: bool, raw_threshold: float, tol: float, rescore: Rescore, *,
                 cap: int = 256) -> FlipOutcome:
    """The fewest moves whose gains cover the gap to the threshold (widened by ``tol``), every minimal set up to
    ``cap``, each confirmed by ``rescore`` (choices: 1 = moved); sets the model does not confirm are passed over and
    the next size is tried."""
    gain = np.where(model.movable, model.delta if need_high else -model.delta, -np.inf)
    gap = (raw_threshold - tol - model.start) if need_high else (model.start - raw_threshold - tol)
    order = np.argsort(-gain, kind="stable")
    movable = int(model.movable.sum())
    sorted_gain = gain[order][:movable]
    best = np.concatenate([[0.0], np.cumsum(sorted_gain)])
    first = next((k for k in range(movable + 1) if best[k] >= gap), None)
    if first is None:
        return FlipOutcome("no flip exists", None, movable + 1, (), True, 0.0, "sort")
    for k in range(first, movable + 1):
        found, complete = _subsets(sorted_gain, k, gap, cap)
        choices = [np.isin(np.arange(len(gain)), order[list(s)]).astype(np.int64) for s in found]
        flips = rescore(choices) if choices else np.zeros(0, dtype=bool)
        confirmed = tuple(c for c, ok in zip(choices, flips) if ok)
        if confirmed:
            return FlipOutcome("optimal", k, k, confirmed, complete, 0.0, "sort")
        if not complete:
            return FlipOutcome("limit reached", None, k, (), False, 0.0, "sort")
    return FlipOutcome("no flip exists", None, movable + 1, (), True, 0.0, "sort")


def _subsets(gain: np.ndarray, k: int, gap: float, cap: int) -> tuple[list[tuple[int, ...]], bool]:
    """Every k-subset of positions in ``gain`` (sorted, largest first) whose sum is at least ``gap``, up to ``cap``;
    a branch stops when the next largest gains cannot reach the gap."""
    window = np.concatenate([[0.0], np.cumsum(gain)])
    found: list[tuple[int, ...]] = []

    def best(i: int, r: int) -> float:  # the largest sum of r gains from position i on
        return window[i + r] - window[i]

    def walk(i: int, chosen: tuple[int, ...], total: float) -> bool:
        r = k - len(chosen)
        if r == 0:
            found.append(chosen)
            return len(found) < cap
        for j in range(i, len(gain) - r + 1):
            if total + best(j, r) < gap:
                break
            if not walk(j + 1, chosen + (j,), total + gain[j]):
                return False
        return True

    complete = walk(0, (), 0.0)
    return found, complete
