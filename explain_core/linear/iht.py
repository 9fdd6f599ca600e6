"""IHT (PLE Algorithm 1) with the exact GSHP projection (Lemma 6): numpy on CPU, torch on CUDA.

Alg. 1 minimises F̂(w) = (1/4m)‖Zw − y‖² (P4, eq. 8) over anchored (w·x = f(x)), k-sparse w by projected
gradient steps; each run's best iterate is polished by re-solving its support exactly with the box.
The runs of one call (starts × step sizes) advance together: one Gram product G·Wᵀ per iteration for
all of them (G = ZᵀZ/m, c = Zᵀy/m, shared with the exact fit), each run stopping on its own criterion.

Backends (``backend="auto"``): torch on a CUDA device when one is available; numpy otherwise. On CPU the
numpy loop is the faster one (``bench/linear_exact.py`` prints both per instance: a median 4–9 ms against
27–120 ms for torch on this CPU at d = 21–301, k ≤ 8, m = 5000); both run the same iterations and agree
to 1e-9 (tested). On a GPU the torch loop is untested here (no device was lent to this work).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import IntakeError, check_choice
from ..results import ValueEquality
from .problem import GramProblem, solve_support, support_of
from .space import Sample

BACKENDS = ("auto", "numpy", "torch")


def device():
    """The torch device IHT's torch backend runs on: CUDA when available, else CPU.

    Returns
    -------
    torch.device
        ``cuda`` or ``cpu``.
    """
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


GPU_DRIVER_FILES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/kfd")  # NVIDIA, AMD ROCm


def cuda_available() -> bool:
    """Whether torch sees a CUDA (or ROCm) device; torch is not even imported where no GPU driver is present."""
    if not any(Path(path).exists() for path in GPU_DRIVER_FILES):
        return False
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency; numpy needs nothing more
        return False
    return bool(torch.cuda.is_available())


# ---------------------------------------------------------------------------------------------------
# The projection (Lemma 6): GSHP, in numpy and in torch

def gshp_numpy(u: np.ndarray, k: int, b: float) -> np.ndarray:
    """Exact Euclidean projection of u onto {v : ‖v‖₀ ≤ k, Σv = b} (Kyrillidis et al. 2013, GSHP).

    Greedy selector: first argmax b·u_i (|u_i| if b = 0), then repeatedly the index maximising
    |u_i − (Σ_S u − b)/|S||; hyperplane projector: v_S = u_S − (Σ_S u − b)/|S|. Ties go to the lowest
    index (as :func:`gshp`). Each later pick is the largest or the smallest remaining u_i, so the picks
    walk two sorted lists of candidates: the k − 1 largest and the k − 1 smallest entries (with ties).
    """
    d = len(u)
    k = min(k, d)
    first = int(np.argmax(b * u if b != 0 else np.abs(u)))
    chosen, total = [first], float(u[first])
    if k > 1:
        rest = np.arange(d)
        if d > 2 * k:  # the k largest and k smallest of all u (with ties) hold the k − 1 of the rest
            ordered = np.partition(u, (k - 1, d - k))
            rest = np.flatnonzero((u >= ordered[d - k]) | (u <= ordered[k - 1]))
        pairs = sorted((p for p in zip(u[rest].tolist(), rest.tolist()) if p[1] != first),
                       key=lambda p: (-p[0], p[1]))  # high first, then index
        low = sorted(pairs, key=lambda p: (p[0], p[1]))
        taken, top, bottom = {first}, 0, 0
        for size in range(1, k):
            while pairs[top][1] in taken:
                top += 1
            while low[bottom][1] in taken:
                bottom += 1
            shift = (total - b) / size
            (vh, ih), (vl, il) = pairs[top], low[bottom]
            gh, gl = abs(vh - shift), abs(vl - shift)
            value, index = (vh, ih) if gh > gl or (gh == gl and ih < il) else (vl, il)
            taken.add(index)
            chosen.append(index)
            total += value
    v = np.zeros_like(u)
    idx = np.array(chosen)
    v[idx] = u[idx] - (total - b) / k
    return v


def gshp(u, k: int, b: float):
    """:func:`gshp_numpy` on a torch tensor (its device), same selector and projector.

    Parameters
    ----------
    u : torch.Tensor
        The point to project (any coordinates: GSHP treats them alike).
    k : int
        The sparsity budget.
    b : float
        The anchoring constant: the result sums to ``b``.

    Returns
    -------
    torch.Tensor
        The projection onto {w : Σw = b, ‖w‖₀ ≤ k}.
    """
    import torch

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


def project_anchored(v, x, k: int, fx: float):
    """Π onto {w : w·x = f(x), ‖w‖₀ ≤ k} (Lemma 6): GSHP on u = v ⊙ x, mapped back by ⊙ x (x ∈ {±1}^d).

    Parameters
    ----------
    v : numpy.ndarray or torch.Tensor
        The point to project.
    x : numpy.ndarray or torch.Tensor
        The query, ±1.
    k : int
        The sparsity budget.
    fx : float
        f(x).

    Returns
    -------
    numpy.ndarray or torch.Tensor
        The projection, of ``v``'s type.
    """
    if isinstance(v, np.ndarray):
        return gshp_numpy(v * x, k, fx) * x
    return gshp(v * x, k, fx) * x


def step_size(sigma: float) -> float:
    """η = 1/β = (18/19)·cosh²(σ/2) (Assumption 1, §6.1)."""
    return 18 / 19 * np.cosh(sigma / 2) ** 2


STARTS = ("bias", "least_squares")
DEFAULT_STEP_SCALES = (1.0, 2.0)
DEFAULT_STARTS = STARTS
PATIENCE = 30  # iterations without improvement before a run stops (200 gave the same polished result on 198
#               problems of d = 8–201, k = 2–8, at 4× the time: the step-2η runs oscillate once they stall)
PAPER_IHT = {"step_scales": (1.0,), "starts": ("bias",)}  # Alg. 1 exactly as in the paper: one run, w₀ = f(x)e₁, η
"""The options of :func:`iht` that run Algorithm 1 exactly as the paper does: one run from f(x)e₁, step η."""


def anchored_least_squares(problem: GramProblem) -> np.ndarray:
    """argmin F̂(w) s.t. x·w = f(x) over all of R^d (no sparsity, no box; minimum-norm when G is singular)."""
    d = problem.d
    kkt = np.zeros((d + 1, d + 1))
    kkt[:d, :d], kkt[:d, d], kkt[d, :d] = problem.G, problem.x, problem.x
    rhs = np.r_[problem.c, problem.fx]
    try:
        solution = np.linalg.solve(kkt, rhs)
        if np.isfinite(solution).all() and np.abs(kkt @ solution - rhs).max() <= 1e-9 * (1 + np.abs(rhs).max()):
            return solution[:d]
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(kkt, rhs, rcond=None)[0][:d]


@dataclass(frozen=True, eq=False)
class IHTResult(ValueEquality):
    """The best polished result over the runs of Algorithm 1 (one per start × step size).

    ``iterate`` is the winning run's best iterate (anchored, k-sparse, not boxed; F̂ ≤ that run's
    w₀, ``origin_objective``); ``w`` its support re-solved exactly with the box (or f(x)e₁ if that were
    worse — never above ``start_objective`` = F̂(f(x)e₁)). ``origin`` names the winning run's start,
    ``step`` its η; ``iterations`` are the winning run's, ``runs`` how many runs were made, ``backend``
    where they ran (``numpy`` or ``torch:<device>``).

    Parameters
    ----------
    w : numpy.ndarray
        The polished winner.
    objective : float
        F̂(w).
    iterate : numpy.ndarray
        The winning run's best iterate.
    iterate_objective, start_objective, origin_objective : float
        F̂ of the iterate, of f(x)e₁, and of the winning run's start.
    iterations, runs : int
        The winning run's iterations, and the runs made.
    step : float
        Its η.
    seconds : float
        Time of every run.
    backend, origin : str
        Where it ran, and the winning start.
    """

    w: np.ndarray
    objective: float
    iterate: np.ndarray
    iterate_objective: float
    start_objective: float
    iterations: int
    step: float
    seconds: float
    backend: str
    origin: str = "bias"
    origin_objective: float = float("nan")
    runs: int = 1

    @property
    def support(self) -> tuple[int, ...]:
        return support_of(self.w)


def iht(sample: Sample, k: int, *, step_scales: Sequence[float] = DEFAULT_STEP_SCALES,
        starts: Sequence[str] = DEFAULT_STARTS, max_iter: int = 5000, tol: float = 1e-12, patience: int = PATIENCE,
        backend: str = "auto") -> IHTResult:
    """Alg. 1 run from w₀ = f(x)e₁ and from w₀ = Π(anchored least squares), each with steps η·{1, 2};
    best polished iterate.

    Algorithm 1 is: v = w − η∇L(w), w ← Π_{anchored ∩ k-sparse}(v) by GSHP, best iterate kept, with
    η = step_size(σ) = (18/19)cosh²(σ/2) and ∇L(w) = Gw − c. By default it is run 4 times — for each
    start in ``starts`` (``"bias"``: the paper's w₀ = f(x)e₁; ``"least_squares"``: the GSHP projection of
    the anchored least-squares solution over all d literals) and each η·s for s in ``step_scales`` — and
    each run's best iterate is polished (its support re-solved exactly with the box); the lowest
    polished F̂ wins and is never above F̂(f(x)e₁). The paper's single run is
    ``iht(sample, k, **PAPER_IHT)``. A run stops after ``max_iter`` iterations, at a fixed point
    (max |Δw| ≤ ``tol``) or after ``patience`` iterations without improvement.

    Parameters
    ----------
    sample : Sample
        The labelled samples.
    k : int
        The sparsity budget.
    step_scales : sequence of float
        Multiples of η.
    starts : sequence of str
        ``"bias"`` and / or ``"least_squares"``.
    max_iter : int
        Iterations per run.
    tol : float
        The fixed-point tolerance.
    patience : int
        Iterations without improvement before a run stops.
    backend : str
        ``"auto"``, ``"numpy"`` or ``"torch"``.

    Returns
    -------
    IHTResult
        The best polished result.

    Raises
    ------
    IntakeError
        When ``starts`` or ``step_scales`` is empty or unknown, or ``backend`` is unknown.
    """
    unknown = set(starts) - set(STARTS)
    if unknown or not starts or not step_scales:
        raise IntakeError(f"IHT's starts must be a non-empty subset of {', '.join(STARTS)}, and its step scales "
                          "non-empty.")
    check_choice(backend, BACKENDS, "IHT backend")
    t0 = time.monotonic()
    problem = sample.gram
    start = problem.start()
    origins = {"bias": start,
               "least_squares": project_anchored(anchored_least_squares(problem), problem.x, k, problem.fx)}
    runs = [(origin, step_size(sample.sigma) * scale) for origin in starts for scale in step_scales]
    W0 = np.array([origins[origin] for origin, _ in runs])
    etas = np.array([eta for _, eta in runs])
    use_torch = backend == "torch" or (backend == "auto" and cuda_available())
    loop = _TorchLoop(problem, k) if use_torch else _NumpyLoop(problem, k)
    iterates, iterations = _alg1(loop, W0, etas, max_iter, tol, patience)
    start_value = problem.objective(start)
    best = None
    for (origin, eta), iterate, count, w0 in zip(runs, iterates, iterations, W0):
        polished, value = solve_support(problem, support_of(iterate))
        if value > start_value:  # only when the box binds on a support without the bias
            polished, value = start, start_value
        if best is None or value < best[1]:
            best = (polished, value, iterate, int(count), eta, origin, problem.objective(w0))
    polished, value, iterate, count, eta, origin, origin_value = best
    return IHTResult(polished, value, iterate, problem.objective(iterate), start_value, count, eta,
                     time.monotonic() - t0, loop.name, origin, origin_value, len(runs))


class _NumpyLoop:
    """Gradients, losses and projections of R runs at once, on numpy arrays."""

    name = "numpy"

    def __init__(self, problem: GramProblem, k: int):
        self.problem, self.k = problem, k

    def grad_loss(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        P = self.problem
        GW = W @ P.G
        return GW - P.c, (np.einsum("rd,rd->r", W, GW) - 2 * W @ P.c + P.yy) / 4

    def project(self, V: np.ndarray) -> np.ndarray:
        P = self.problem
        return np.array([project_anchored(v, P.x, self.k, P.fx) for v in V])

    def put(self, W: np.ndarray) -> np.ndarray:
        return W

    def get(self, W) -> np.ndarray:
        return W

    def moved(self, new, old) -> np.ndarray:
        return np.abs(new - old).max(axis=1)


class _TorchLoop(_NumpyLoop):
    """The same on torch tensors, on :func:`device` (one host sync per iteration, for the stopping rule)."""

    def __init__(self, problem: GramProblem, k: int):
        import torch

        super().__init__(problem, k)
        self.torch, self.on = torch, device()
        self.name = f"torch:{self.on}"
        self.G, self.c, self.x = (torch.as_tensor(a, dtype=torch.float64, device=self.on)
                                  for a in (problem.G, problem.c, problem.x))

    def grad_loss(self, W):
        GW = W @ self.G
        loss = ((W * GW).sum(dim=1) - 2 * W @ self.c + self.problem.yy) / 4
        return GW - self.c, loss.cpu().numpy()

    def project(self, V):
        return self.torch.stack([project_anchored(v, self.x, self.k, self.problem.fx) for v in V])

    def put(self, W: np.ndarray):
        return self.torch.as_tensor(W, dtype=self.torch.float64, device=self.on)

    def get(self, W) -> np.ndarray:
        return W.cpu().numpy()

    def moved(self, new, old) -> np.ndarray:
        return (new - old).abs().amax(dim=1).cpu().numpy()


def _alg1(loop, W0: np.ndarray, etas: np.ndarray, max_iter: int, tol: float, patience: int):
    """The loop of Algorithm 1 for every run (rows of W0, steps ``etas``) together; each run keeps its best
    iterate (lowest F̂) and stops on its own rule. Returns (best iterates as numpy, iterations per run)."""
    W = loop.put(W0)
    grad, loss = loop.grad_loss(W)
    best, best_loss = loop.put(W0.copy()), loss.copy()
    step = loop.put(etas[:, None])
    stale = np.zeros(len(W0), dtype=int)
    iterations = np.zeros(len(W0), dtype=int)
    active = np.arange(len(W0))
    for it in range(1, max_iter + 1):
        new = loop.project(W[active] - step[active] * grad[active])
        moved = loop.moved(new, W[active])
        W[active] = new
        g, values = loop.grad_loss(new)
        grad[active] = g
        better = np.flatnonzero(values < best_loss[active])
        best[active[better]] = new[better]
        best_loss[active[better]] = values[better]
        stale[active] += 1
        stale[active[better]] = 0
        iterations[active] = it
        active = active[(moved > tol) & (stale[active] < patience)]
        if len(active) == 0:
            break
    return loop.get(best), iterations
