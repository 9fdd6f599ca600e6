"""Certified optimum of the empirical problem (P4)/(MIP) of the PLE paper (:mod:`.problem` states it).

Paths, after an incumbent (IHT + polish, an upper bound):

1. **search over supports** (:mod:`.search`) — exhaustive enumeration, or branch-and-bound with a
   separable lower bound whose curvature is sparsity-aware (:func:`.search.curvature`);
2. **MIQP in SCIP** (:mod:`.miqp`) — the perspective formulation, warm-started from the incumbent.

``auto`` enumerates when that is small, else runs branch-and-bound and — when the search has not finished
within a second — the MIQP side by side in a separate process (both cores busy, killed as soon as the
search is done) until either proves optimality or the deadline strikes; the answer is the better solution
with the larger of the two lower bounds. Every path checks its deadline.
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from math import comb

import numpy as np

from ..errors import check_choice
from ..results import ValueEquality
from .miqp import solve_miqp, start_worker, worker_result
from .problem import BOX_TOL, GramProblem, Outcome, support_of
from .search import search_supports

ENUMERATION_LIMIT = 100_000  # exhaustive enumeration up to this many supports (the side-by-side run beyond)
METHODS = ("auto", "enumeration", "branch_and_bound", "miqp", "side_by_side")
MIQP_DELAY = 1.0  # seconds of search alone before the MIQP process starts (5% of the time limit if less)
MIQP_GRACE = 0.02  # share of the MIQP's time it stops before the deadline, and waited for after it
OPTIMAL_GAP = 1e-6  # "optimal" = certified to this relative gap (the search proves its optimum exactly)


@dataclass(frozen=True, eq=False)
class ExactFit(ValueEquality):
    """The result of :func:`exact_fit`.

    ``status`` is ``optimal`` (certified: ``gap`` ≤ OPTIMAL_GAP), ``time_limit`` (the best solution found
    when the time ran out) or ``stopped`` (a solver finished within its own tolerance above OPTIMAL_GAP).
    ``lower_bound`` is always a valid bound on the optimum (≥ 0) and ``gap`` = (objective − lower_bound)
    / objective ∈ [0, 1]. ``objective`` is F̂ of the returned ``w``; ``nodes`` counts supports evaluated
    (search) plus SCIP's nodes; ``incumbent_objective`` is F̂ of the starting incumbent.

    Parameters
    ----------
    w : numpy.ndarray
        The fit.
    objective : float
        F̂(w).
    support : tuple of int
        Its non-zero literals.
    status, method : str
        The status, and the method that answered.
    lower_bound, gap : float
        The certificate.
    seconds : float
        Solving time.
    nodes : int
        Supports and nodes evaluated.
    incumbent_objective : float
        F̂ of the starting incumbent.
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


def exact_fit(problem: GramProblem, k: int, incumbent: np.ndarray | None = None, *, method: str = "auto",
              time_limit: float = 10.0, enumeration_limit: int = ENUMERATION_LIMIT) -> ExactFit:
    """Certified optimum of (MIP) within ``time_limit`` seconds (module docstring).

    ``auto``: exhaustive enumeration when C(d, k) ≤ ``enumeration_limit``, else ``side_by_side``
    (branch-and-bound and SCIP's MIQP at once). ``incumbent`` defaults to w₀ = f(x)e₁; it must be
    anchored, k-sparse and in the box.

    Parameters
    ----------
    problem : GramProblem
        (P4) in Gram form.
    k : int
        The sparsity budget.
    incumbent : numpy.ndarray, optional
        A starting solution.
    method : str
        ``"auto"``, ``"enumeration"``, ``"branch_and_bound"``, ``"miqp"`` or ``"side_by_side"``.
    time_limit : float
        Seconds.
    enumeration_limit : int
        The largest C(d, k) enumerated under ``auto``.

    Returns
    -------
    ExactFit
        The fit and its certificate.

    Raises
    ------
    IntakeError
        When ``method`` is unknown.
    """
    check_choice(method, METHODS, "exact-fit method")
    t0 = time.monotonic()
    deadline = t0 + time_limit
    start = problem.start() if incumbent is None else np.asarray(incumbent, dtype=float)
    if (np.abs(start) > 1 + BOX_TOL).any() or abs(start @ problem.x - problem.fx) > 1e-9 or len(support_of(start)) > k:
        raise ValueError("the incumbent must be anchored, k-sparse and inside the box")
    if method == "auto":
        method = "enumeration" if comb(problem.d, min(k, problem.d)) <= enumeration_limit else "side_by_side"
    if method == "miqp":
        out = solve_miqp(problem, k, start, deadline=deadline)
    elif method == "side_by_side":
        out = _side_by_side(problem, k, start, deadline)
    else:
        out = search_supports(problem, k, start, prune=method == "branch_and_bound", deadline=deadline)
    gap = relative_gap(out.objective, out.lower_bound)
    certified = _proved(out)
    status = "optimal" if certified else "time_limit" if time.monotonic() >= deadline else "stopped"
    return ExactFit(out.w, out.objective, support_of(out.w), status, method, out.lower_bound, gap,
                    time.monotonic() - t0, out.work, problem.objective(start))


def relative_gap(upper: float, lower: float) -> float:
    """(upper − lower)/upper in [0, 1] for 0 ≤ lower ≤ upper (0 when upper is 0)."""
    if upper <= 1e-300:
        return 0.0
    return float(min(1.0, max(0.0, upper - lower) / upper))


def _proved(out: Outcome) -> bool:
    return out.complete and relative_gap(out.objective, out.lower_bound) <= OPTIMAL_GAP


def _side_by_side(problem: GramProblem, k: int, start: np.ndarray, deadline: float) -> Outcome:
    """Branch-and-bound here and, if it has not finished after MIQP_DELAY, the MIQP in a separate process
    until one proves optimality or the deadline: the better solution, the larger lower bound."""
    beside = _MIQPBeside(problem, k, start, deadline)
    try:
        search = search_supports(problem, k, start, prune=True, deadline=deadline, stop=beside.proved)
        if not search.complete:
            beside.wait()
    finally:
        beside.close()
    scip = beside.result
    if scip is None:
        return search
    best = search if search.objective <= scip.objective else scip
    lower = best.objective if search.complete else min(best.objective, max(search.lower_bound, scip.lower_bound))
    complete = search.complete or (scip.complete and relative_gap(best.objective, lower) <= OPTIMAL_GAP)
    return Outcome(best.w, best.objective, lower, search.work + scip.work, complete)


class _MIQPBeside:
    """The MIQP worker process beside the search: started after a head start, polled, killed at the end."""

    def __init__(self, problem: GramProblem, k: int, start: np.ndarray, deadline: float):
        self.deadline = deadline
        self.launch_at = time.monotonic() + min(MIQP_DELAY, 0.05 * (deadline - time.monotonic()))
        self.grace = MIQP_GRACE * (deadline - self.launch_at)
        self.args = (problem, k, start, deadline - self.grace)  # SCIP stops early enough for its reply to arrive
        self.process: subprocess.Popen | None = None
        self.launched = self.finished = False
        self.result: Outcome | None = None

    def proved(self) -> bool:
        """The search's stop rule: launch when due, read the answer once the process has exited."""
        if not self.launched and time.monotonic() >= self.launch_at:
            self.launched = True
            try:
                self.process = start_worker(*self.args)
            except OSError:  # no processes here: the search goes on alone
                self.process = None
        if self.process is not None and not self.finished and self.process.poll() is not None:
            self.finished, self.result = True, worker_result(self.process)
        return self.result is not None and _proved(self.result)

    def wait(self) -> None:
        """After the search stopped at the deadline: SCIP was told to stop one grace period earlier, and has
        one more for its reply (its own overshoot, the polish and the exit took up to 0.6 s on a busy machine)."""
        if self.process is None or self.finished:
            return
        try:
            self.process.wait(max(0.0, self.deadline - time.monotonic()) + self.grace)
        except subprocess.TimeoutExpired:
            return
        self.finished, self.result = True, worker_result(self.process)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
