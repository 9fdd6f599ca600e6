"""(MIP) of the PLE paper as a mixed-integer QP in SCIP (OR-Tools MathOpt), and its ℓ1 relaxation.

Big-M = 1 from the box; the perspective formulation carries D (:func:`.search.curvature`, the uniform
part) as w_j² ≤ θ_j s_j and the rest Q = G − D as Σu_i² with u = Lᵀw (Q = LLᵀ). Warm-started from an
incumbent; stops at a deadline, returning SCIP's dual bound.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np

from ..errors import check_choice
from .problem import GramProblem, Outcome, solve_support

FORMULATIONS = ("perspective", "dense")
SCIP_TOLERANCES = {"numerics/feastol": 1e-9, "numerics/dualfeastol": 1e-7}  # SCIP's 1e-6 left gaps up to 4e-4


def _factor(Q: np.ndarray) -> np.ndarray:
    """L with Q = LLᵀ (eigenvectors scaled by √λ; numerically null directions dropped)."""
    vals, vecs = np.linalg.eigh((Q + Q.T) / 2)
    keep = vals > 1e-12 * max(vals.max(), 1e-300)
    return vecs[:, keep] * np.sqrt(vals[keep])


def solve_miqp(problem: GramProblem, k: int, incumbent: np.ndarray, *, deadline: float,
               formulation: str = "perspective", threads: int = 1) -> Outcome:
    """(MIP) in SCIP via MathOpt, warm-started from ``incumbent``, until ``deadline`` (time.monotonic()).

    ``perspective`` (default): G = Q + D with D = diag(0, δ, …, δ); θ_j ≥ w_j²/s_j carries D and
    Q = LLᵀ enters as Σu_i² with linear rows u = Lᵀw. ``dense``: the plain big-M model with wᵀGw as one
    quadratic objective (the baseline that does not converge on realistic sizes). The returned w is the
    better of the incumbent and SCIP's solution re-solved on its support; the lower bound is SCIP's dual
    bound (≥ 0).
    """
    check_choice(formulation, FORMULATIONS, "MIQP formulation")
    from ortools.math_opt.python import mathopt

    d = problem.d
    model = mathopt.Model(name="ple")
    w = [model.add_variable(lb=-1, ub=1, name=f"w{j}") for j in range(d)]
    s = [model.add_binary_variable(name=f"s{j}") for j in range(d)]
    for j in range(d):
        model.add_linear_constraint(w[j] <= s[j])
        model.add_linear_constraint(-w[j] <= s[j])
    model.add_linear_constraint(mathopt.fast_sum(s) <= k)
    model.add_linear_constraint(mathopt.fast_sum(float(problem.x[j]) * w[j] for j in range(d)) == problem.fx)
    linear = mathopt.fast_sum(-2 * float(problem.c[j]) * w[j] for j in range(d)) + problem.yy
    hint = {**{w[j]: float(incumbent[j]) for j in range(d)},
            **{s[j]: float(abs(incumbent[j]) > 1e-12) for j in range(d)}}
    if formulation == "dense":
        quad = mathopt.fast_sum(float(problem.G[i, j]) * w[i] * w[j] for i in range(d) for j in range(d)
                                if problem.G[i, j] != 0)
        model.minimize((quad + linear) / 4)
    else:
        hint.update(_perspective(model, problem, w, s, linear, incumbent))
    from ortools.math_opt.solvers.gscip import gscip_pb2

    precise = gscip_pb2.GScipParameters(real_params=SCIP_TOLERANCES)
    params = mathopt.SolveParameters(time_limit=timedelta(seconds=max(deadline - time.monotonic(), 0.01)),
                                     threads=threads, relative_gap_tolerance=1e-7, absolute_gap_tolerance=1e-10,
                                     gscip=precise)
    hints = mathopt.ModelSolveParameters(solution_hints=[mathopt.SolutionHint(variable_values=hint)])
    result = mathopt.solve(model, mathopt.SolverType.GSCIP, params=params, model_params=hints)
    best, best_value = incumbent, problem.objective(incumbent)
    if result.has_primal_feasible_solution():
        chosen = [j for j in range(d) if result.variable_values(s[j]) > 0.5]
        polished, value = solve_support(problem, chosen)
        if value < best_value:
            best, best_value = polished, value
    dual = float(result.termination.objective_bounds.dual_bound)
    lower = max(0.0, min(best_value, dual)) if np.isfinite(dual) else 0.0
    optimal = result.termination.reason == mathopt.TerminationReason.OPTIMAL
    return Outcome(best, best_value, lower, int(result.solve_stats.node_count), optimal)


def _perspective(model, problem: GramProblem, w: list, s: list, linear, incumbent: np.ndarray) -> dict:
    """The perspective objective on ``model``: G = Q + D with D = diag(0, δ, …, δ), θ_j ≥ w_j²/s_j carrying D and
    Q = LLᵀ as Σu_i² with linear rows u = Lᵀw; returns the hint values of u and θ at ``incumbent``."""
    from ortools.math_opt.python import mathopt

    d = problem.d
    delta = problem.min_curvature
    D = np.full(d, delta)
    D[0] = 0.0
    L = _factor(problem.G - np.diag(D))
    u = [model.add_variable(lb=-np.inf, ub=np.inf, name=f"u{i}") for i in range(L.shape[1])]
    for i in range(L.shape[1]):
        model.add_linear_constraint(u[i] == mathopt.fast_sum(float(L[j, i]) * w[j] for j in range(d)
                                                             if L[j, i] != 0))
    theta = {j: model.add_variable(lb=0, ub=1, name=f"theta{j}") for j in range(1, d) if delta > 0}
    for j, th in theta.items():
        model.add_quadratic_constraint(w[j] * w[j] <= th * s[j])
    model.minimize((mathopt.fast_sum(ui * ui for ui in u) + delta * mathopt.fast_sum(theta.values()) + linear) / 4)
    uval = L.T @ incumbent
    hint = {u[i]: float(uval[i]) for i in range(len(u))}
    hint.update({th: float(incumbent[j] ** 2) for j, th in theta.items()})
    return hint


def start_worker(problem: GramProblem, k: int, incumbent: np.ndarray, deadline: float) -> subprocess.Popen:
    """:func:`solve_miqp` in a separate Python process (``python -m explain_core.linear.miqp``), so that it
    runs on another core beside the search and can be killed at once. Arrays go in and out as .npz
    (no pickle); :func:`worker_result` reads the answer once the process has exited."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen([sys.executable, "-m", "explain_core.linear.miqp"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    message = io.BytesIO()
    np.savez(message, G=problem.G, c=problem.c, x=problem.x, scalars=np.array([problem.yy, problem.fx, problem.m, k]),
             incumbent=incumbent, deadline=np.array([deadline]))
    threading.Thread(target=_feed, args=(process.stdin, message.getvalue()), daemon=True).start()
    return process


def _feed(pipe, data: bytes) -> None:
    """Write the problem while the worker starts (its imports take a second; the pipe holds 64 KiB)."""
    try:
        pipe.write(data)
        pipe.close()
    except OSError:  # the worker was killed or died at start-up: worker_result gives None
        pass


def worker_result(process: subprocess.Popen) -> Outcome | None:
    """The Outcome of an exited worker (None if it failed)."""
    try:
        data = np.load(io.BytesIO(process.stdout.read()))
        w, (objective, lower, work, complete) = data["w"], data["scalars"]
    except (OSError, ValueError, KeyError, EOFError):
        return None
    return Outcome(w, float(objective), float(lower), int(work), bool(complete))


def _serve() -> None:
    """The worker process: read the problem from stdin, solve, write the Outcome to stdout."""
    data = np.load(io.BytesIO(sys.stdin.buffer.read()))
    yy, fx, m, k = data["scalars"]
    problem = GramProblem(data["G"], data["c"], float(yy), data["x"], float(fx), int(m))
    out = solve_miqp(problem, int(k), data["incumbent"], deadline=float(data["deadline"][0]))
    reply = io.BytesIO()
    np.savez(reply, w=out.w, scalars=np.array([out.objective, out.lower_bound, out.work, float(out.complete)]))
    sys.stdout.buffer.write(reply.getvalue())


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
    model.add_linear_constraint(mathopt.fast_sum(a) <= k)
    model.add_linear_constraint(mathopt.fast_sum(float(problem.x[j]) * w[j] for j in range(d)) == problem.fx)
    L = _factor(problem.G)
    u = [model.add_variable(lb=-np.inf, ub=np.inf) for _ in range(L.shape[1])]
    for i in range(L.shape[1]):
        model.add_linear_constraint(u[i] == mathopt.fast_sum(float(L[j, i]) * w[j] for j in range(d)))
    model.minimize((mathopt.fast_sum(ui * ui for ui in u)
                    + mathopt.fast_sum(-2 * float(problem.c[j]) * w[j] for j in range(d)) + problem.yy) / 4)
    params = mathopt.SolveParameters(time_limit=timedelta(seconds=time_limit), relative_gap_tolerance=1e-7)
    result = mathopt.solve(model, mathopt.SolverType.GSCIP, params=params)
    sol = np.array([result.variable_values(v) for v in w]) if result.has_primal_feasible_solution() else np.zeros(d)
    optimal = result.termination.reason == mathopt.TerminationReason.OPTIMAL
    return Relaxation(sol, float(result.termination.objective_bounds.dual_bound), int((np.abs(sol) > 1e-6).sum()),
                      "optimal" if optimal else "time_limit", time.monotonic() - t0)


if __name__ == "__main__":
    _serve()
