"""IHT (PLE Algorithm 1) with the exact GSHP projection (Lemma 6), in torch — on CUDA when available.

Alg. 1 minimises F̂(w) = (1/4m)‖Zw − y‖² (P4, eq. 8) over anchored (w·x = f(x)), k-sparse w by projected
gradient steps; each run's best iterate is polished by re-solving its support exactly with the box.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..errors import IntakeError
from .exact import GramProblem, solve_support, support_of
from .space import Sample


def device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# ---------------------------------------------------------------------------------------------------
# IHT (Algorithm 1) with the GSHP projection (Lemma 6)

def gshp(u: torch.Tensor, k: int, b: float) -> torch.Tensor:
    """Exact Euclidean projection of u onto {v : ‖v‖₀ ≤ k, Σv = b} (Kyrillidis et al. 2013, GSHP).

    Greedy selector: first argmax b·u_i (ties: largest |u_i|), then repeatedly the index maximising
    |u_i − (Σ_S u − b)/|S||; hyperplane projector: v_S = u_S − (Σ_S u − b)/|S|.
    """
    d = u.shape[0]
    k = min(k, d)
    key = b * u if b != 0 else u.abs()
    chosen = torch.zeros(d, dtype=torch.bool, device=u.device)
    chosen[torch.argmax(key)] = True
    total = u[chosen].sum()
    for size in range(1, k):
        score = (u - (total - b) / size).abs().masked_fill(chosen, -1.0)
        j = torch.argmax(score)
        chosen[j] = True
        total = total + u[j]
    v = torch.zeros_like(u)
    v[chosen] = u[chosen] - (total - b) / k
    return v


def project_anchored(v: torch.Tensor, x: torch.Tensor, k: int, fx: float) -> torch.Tensor:
    """Π onto {w : w·x = f(x), ‖w‖₀ ≤ k} (Lemma 6): GSHP on u = v ⊙ x, mapped back by ⊙ x."""
    return gshp(v * x, k, fx) * x


def step_size(sigma: float) -> float:
    """η = 1/β = (18/19)·cosh²(σ/2) (Assumption 1, §6.1)."""
    return 18 / 19 * np.cosh(sigma / 2) ** 2


STARTS = ("bias", "least_squares")
DEFAULT_STEP_SCALES = (1.0, 2.0)
DEFAULT_STARTS = STARTS
PAPER_IHT = {"step_scales": (1.0,), "starts": ("bias",)}  # Alg. 1 exactly as in the paper: one run, w₀ = f(x)e₁, η


def anchored_least_squares(problem: GramProblem) -> np.ndarray:
    """argmin F̂(w) s.t. x·w = f(x) over all of R^d (no sparsity, no box; minimum-norm when G is singular)."""
    d = problem.d
    kkt = np.zeros((d + 1, d + 1))
    kkt[:d, :d], kkt[:d, d], kkt[d, :d] = problem.G, problem.x, problem.x
    return np.linalg.lstsq(kkt, np.r_[problem.c, problem.fx], rcond=None)[0][:d]


@dataclass(frozen=True, eq=False)
class IHTResult:
    """The best polished result over the runs of Algorithm 1 (one per start × step size).

    ``iterate`` is the winning run's best iterate (anchored, k-sparse, not boxed; F̂ ≤ that run's
    w₀, ``origin_objective``); ``w`` its support re-solved exactly with the box (or f(x)e₁ if that were
    worse — never above ``start_objective`` = F̂(f(x)e₁)). ``origin`` names the winning run's start,
    ``step`` its η; ``iterations`` are the winning run's, ``runs`` how many runs were made. ``gram``
    says whether the gradient used the precomputed G = ZᵀZ/m, c = Zᵀy/m.
    """

    w: np.ndarray
    objective: float
    iterate: np.ndarray
    iterate_objective: float
    start_objective: float
    iterations: int
    step: float
    seconds: float
    device: str
    gram: bool
    origin: str = "bias"
    origin_objective: float = float("nan")
    runs: int = 1

    @property
    def support(self) -> tuple[int, ...]:
        return support_of(self.w)

    @property
    def iterate_in_box(self) -> bool:
        return bool(np.abs(self.iterate).max() <= 1 + 1e-9)


def iht(sample: Sample, k: int, *, step_scales: Sequence[float] = DEFAULT_STEP_SCALES,
        starts: Sequence[str] = DEFAULT_STARTS, max_iter: int = 5000, tol: float = 1e-12, patience: int = 200,
        on: torch.device | None = None) -> IHTResult:
    """Alg. 1 run from w₀ = f(x)e₁ and from w₀ = Π(anchored least squares), each with steps η·{1, 2};
    best polished iterate.

    Algorithm 1 is: v = w − η∇L(w), w ← Π_{anchored ∩ k-sparse}(v) by GSHP, best iterate kept, with
    η = step_size(σ) = (18/19)cosh²(σ/2). By default it is run 4 times — for each start in ``starts``
    (``"bias"``: the paper's w₀ = f(x)e₁; ``"least_squares"``: the GSHP projection of the anchored
    least-squares solution over all d literals) and each η·s for s in ``step_scales`` — and each run's
    best iterate is polished (its support re-solved exactly with the box); the lowest polished F̂ wins
    and is never above F̂(f(x)e₁). The paper's single run is ``iht(sample, k, **PAPER_IHT)``
    (``step_scales=(1.0,), starts=("bias",)``). A run stops after ``max_iter`` iterations, at a fixed
    point (max |Δw| ≤ ``tol``) or after ``patience`` iterations without improvement.
    ∇L(w) = (1/m)Zᵀ(Zw − y) uses G = ZᵀZ/m and c = Zᵀy/m when that is cheaper (max_iter > d/2).
    """
    unknown = set(starts) - set(STARTS)
    if unknown or not starts or not step_scales:
        raise IntakeError(f"IHT's starts must be a non-empty subset of {', '.join(STARTS)}, and its step scales "
                          "non-empty.")
    t0 = time.monotonic()
    on = on or device()
    m, d = sample.Z.shape
    x = torch.as_tensor(sample.x, dtype=torch.float64, device=on)
    Z = torch.as_tensor(sample.Z, dtype=torch.float64, device=on)
    y = torch.as_tensor(sample.y, dtype=torch.float64, device=on)
    use_gram = max_iter > d / 2
    if use_gram:
        G, c, yy = Z.T @ Z / m, Z.T @ y / m, float(y @ y) / m
        grad_loss = lambda w: (G @ w - c, float(w @ G @ w - 2 * c @ w + yy) / 4)  # noqa: E731
    else:
        def grad_loss(w):
            r = Z @ w - y
            return Z.T @ r / m, float(r @ r) / (4 * m)
    problem = sample.gram
    start = problem.start()
    start_value = problem.objective(start)
    best, runs = None, 0
    for origin in starts:
        if origin == "bias":
            w0 = torch.as_tensor(start, device=on)
        else:
            w0 = project_anchored(torch.as_tensor(anchored_least_squares(problem), device=on), x, k, sample.fx)
        for scale in step_scales:
            eta = step_size(sample.sigma) * scale
            iterate, iterations = _alg1(grad_loss, w0, x, k, sample.fx, eta, max_iter, tol, patience)
            runs += 1
            polished, value = solve_support(problem, support_of(iterate))
            if value > start_value:  # only when the box binds on a support without the bias
                polished, value = start, start_value
            if best is None or value < best[1]:
                best = (polished, value, iterate, iterations, eta, origin, problem.objective(w0.cpu().numpy()))
    polished, value, iterate, iterations, eta, origin, origin_value = best
    return IHTResult(polished, value, iterate, problem.objective(iterate), start_value, iterations, eta,
                     time.monotonic() - t0, str(on), use_gram, origin, origin_value, runs)


def _alg1(grad_loss, w, x, k, fx, eta, max_iter, tol, patience) -> tuple[np.ndarray, int]:
    """The loop of Algorithm 1 from w; returns the best iterate (lowest F̂) and the iterations run."""
    grad, loss = grad_loss(w)
    best, best_loss, stale, it = w, loss, 0, 0
    for it in range(1, max_iter + 1):
        new = project_anchored(w - eta * grad, x, k, fx)
        moved = float((new - w).abs().max())
        w = new
        grad, loss = grad_loss(w)
        if loss < best_loss:
            best, best_loss, stale = w, loss, 0
        else:
            stale += 1
        if moved <= tol or stale >= patience:
            break
    return best.cpu().numpy(), it
