"""Anchored k-sparse linear explanations (PLE paper): IHT with the exact GSHP projection, the
certified exact fit, and the fidelity / relevance metrics.

An explanation of f at x is w ∈ R^d (coordinate 0 = the bias literal) with w·x = f(x) (anchoring) and
‖w‖₀ ≤ k, fitted on m samples of the σ-neighbourhood D_{x,σ} to minimise the empirical fidelity
error F̂(w) = (1/4m)‖Zw − y‖² (P4, eq. 8). Typical use::

    space = boolean_model(load_demo("adult")).space(row)      # or group_space(model, data, row, ref)
    ex = explain_linear(space, k=5, sigma=1.0, m=5000, seed=0)
    ex.table(); ex.scores.relevance.value; ex.exact.status, ex.exact.gap
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np
import pandas as pd
import torch
from scipy.stats import norm

from .linear_exact import ExactFit, GramProblem, exact_fit, solve_support, support_of
from .linear_space import LiteralSpace, TargetScale, keep_probability, sample_neighbourhood

SOLVERS = ("exact", "iht")
EXACT_RELEVANCE_LIMIT = 18  # enumerate the literals outside the support when at most this many
MAX_SUPPORT_PATTERNS = 16  # relevance needs the 2^|S| sign patterns of the support
RELEVANCE_SAMPLES = 20_000


def device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# ---------------------------------------------------------------------------------------------------
# Samples of the neighbourhood

@dataclass(frozen=True, eq=False)
class Sample:
    """m labelled samples {(z_i, f(z_i))} of D_{x,σ} (one batched, chunked evaluation of f)."""

    Z: np.ndarray
    y: np.ndarray
    x: np.ndarray
    fx: float
    sigma: float
    seed: int

    @property
    def m(self) -> int:
        return len(self.y)

    @cached_property
    def gram(self) -> GramProblem:
        return GramProblem.from_sample(self.Z, self.y, self.x, self.fx)

    def fidelity(self, w: np.ndarray) -> float:
        """Fidelity error (1/4m)‖Zw − y‖² on this sample (eq. 8; out-of-sample F on a fresh one)."""
        r = self.Z @ np.asarray(w, dtype=float) - self.y
        return float(r @ r) / (4 * self.m)


def draw_sample(space: LiteralSpace, sigma: float, m: int, seed: int) -> Sample:
    """m samples of D_{x,σ} labelled by f (seeded)."""
    Z = sample_neighbourhood(space.x, sigma, m, seed)
    return Sample(Z, space.evaluate(Z, seed), space.x.astype(float), space.fx, sigma, seed)


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
        raise ValueError(f"starts must be a non-empty subset of {STARTS} and step_scales non-empty")
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


# ---------------------------------------------------------------------------------------------------
# Relevance (Def. 1) and the Lemma 4 bound

@dataclass(frozen=True)
class Relevance:
    """R(w) = E[¼(f(z) − f(x))² | w·z = w·x] under D_{x,σ} (Def. 1).

    ``method`` is ``exact`` (every literal outside the support enumerated, ``samples`` points
    evaluated) or ``monte_carlo`` (``samples`` draws from D conditioned on the event; ``ci`` is the
    normal-approximation interval at ``confidence``). ``event_probability`` is P[w·z = w·x].
    """

    value: float
    method: str
    samples: int
    stderr: float
    ci: tuple[float, float]
    confidence: float
    event_probability: float


def _support_patterns(w: np.ndarray, x: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Support literals S (bias excluded), their sign patterns in the event w·z = w·x, and P(pattern)."""
    S = np.array([j for j in support_of(w) if j != 0], dtype=np.intp)
    if len(S) > MAX_SUPPORT_PATTERNS:
        raise ValueError(f"relevance needs the 2^{len(S)} patterns of the support; at most 2^{MAX_SUPPORT_PATTERNS}")
    flips = ((np.arange(2 ** len(S))[:, None] >> np.arange(len(S))) & 1).astype(bool)
    patterns = np.where(flips, -x[S], x[S])
    scale = 1e-9 * (1 + np.abs(w).sum())
    inside = np.abs(patterns @ w[S] - x[S] @ w[S]) <= scale
    p = keep_probability(sigma)
    prob = np.prod(np.where(flips, 1 - p, p), axis=1)
    return S, patterns[inside], prob[inside]


def relevance(space: LiteralSpace, w: np.ndarray, sigma: float, *, seed: int = 0,
              exact_limit: int = EXACT_RELEVANCE_LIMIT, samples: int = RELEVANCE_SAMPLES,
              confidence: float = 0.95) -> Relevance:
    """Relevance error (Def. 1): exact when at most ``exact_limit`` literals lie outside the support
    (and f is deterministic), else Monte Carlo with ``samples`` conditioned draws (seeded)."""
    w = np.asarray(w, dtype=float)
    x = space.x.astype(float)
    S, patterns, prob = _support_patterns(w, x, sigma)
    outside = np.setdiff1d(np.arange(1, space.d), S)
    event = float(prob.sum())
    fx = space.fx
    if len(outside) <= exact_limit and space.deterministic:
        Z, weight = _enumerate(x, S, outside, patterns, prob, sigma)
        loss = (space.evaluate(Z, seed) - fx) ** 2 / 4
        value = float(weight @ loss / weight.sum())
        return Relevance(value, "exact", len(Z), 0.0, (value, value), 1.0, event)
    rng = np.random.default_rng(seed)
    Z = sample_neighbourhood(space.x, sigma, samples, seed)
    Z[:, S] = patterns[rng.choice(len(patterns), size=samples, p=prob / event)]
    loss = (space.evaluate(Z, seed + 1) - fx) ** 2 / 4
    value, stderr = float(loss.mean()), float(loss.std(ddof=1) / np.sqrt(samples))
    half = float(norm.ppf(0.5 + confidence / 2)) * stderr
    return Relevance(value, "monte_carlo", samples, stderr, (value - half, value + half), confidence, event)


def _enumerate(x, S, outside, patterns, prob, sigma) -> tuple[np.ndarray, np.ndarray]:
    """Every z of the event: each support pattern × each assignment of the outside literals, with D-weights."""
    n = len(outside)
    flips = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(bool)
    p = keep_probability(sigma)
    out_prob = np.prod(np.where(flips, 1 - p, p), axis=1)
    Z = np.tile(x.astype(np.int8), (len(patterns) * len(flips), 1))
    Z[:, S] = np.repeat(patterns, len(flips), axis=0)
    Z[:, outside] = np.tile(np.where(flips, -x[outside], x[outside]), (len(patterns), 1))
    return Z, np.repeat(prob, len(flips)) * np.tile(out_prob, len(patterns))


def lemma4_bound(fidelity: float, k: int, sigma: float) -> float:
    """R ≤ (1 + e^{−σ})^k · F for every anchored k-sparse w (Lemma 4)."""
    return (1 + np.exp(-sigma)) ** k * fidelity


def anchoring_gap(w: np.ndarray, x: np.ndarray, fx: float) -> float:
    return float(abs(np.asarray(w) @ np.asarray(x, dtype=float) - fx))


# ---------------------------------------------------------------------------------------------------
# One explanation

@dataclass(frozen=True)
class Scores:
    """The metrics of one explanation w: F̂ (empirical), F (out of sample), R (Def. 1; None for a w too
    dense to enumerate its support's patterns), |w·x − f(x)|, ‖w‖₀ and the Lemma 4 bound (1 + e^{−σ})^k·F."""

    empirical_fidelity: float
    fidelity: float
    relevance: Relevance | None
    anchoring_gap: float
    support_size: int
    bound: float


def score(space: LiteralSpace, w: np.ndarray, train: Sample, holdout: Sample, k: int, *, seed: int = 0,
          relevance_samples: int = RELEVANCE_SAMPLES) -> Scores:
    """All metrics of ``w`` on the fitting sample and a fresh one of the same neighbourhood."""
    F = holdout.fidelity(w)
    sparse = len([j for j in support_of(w) if j != 0]) <= MAX_SUPPORT_PATTERNS
    rel = relevance(space, w, train.sigma, seed=seed, samples=relevance_samples) if sparse else None
    return Scores(train.fidelity(w), F, rel, anchoring_gap(w, space.x, train.fx), len(support_of(w)),
                  lemma4_bound(F, k, train.sigma))


@dataclass(frozen=True, eq=False)
class LinearExplanation:
    """An anchored k-sparse linear explanation of f at x, with how it was found and how good it is."""

    names: tuple[str, ...]
    x: np.ndarray
    fx: float
    w: np.ndarray
    k: int
    sigma: float
    m: int
    seed: int
    solver: str
    scores: Scores
    iht: IHTResult
    exact: ExactFit | None
    target: TargetScale

    @property
    def support(self) -> tuple[str, ...]:
        return tuple(self.names[j] for j in support_of(self.w))

    def table(self) -> pd.DataFrame:
        """One row per literal in the support: does x satisfy it, w_j, and its contribution w_j·x_j to f(x)
        — the contributions sum to f(x) (anchoring); in model units they sum to the model's output
        (the bias row carries the offset)."""
        rows = []
        for j in support_of(self.w):
            contribution = float(self.w[j] * self.x[j])
            rows.append({"literal": self.names[j], "holds": bool(self.x[j] > 0), "weight": float(self.w[j]),
                         "contribution": contribution,
                         "contribution (model units)": contribution * self.target.unit
                         + (self.target.offset if j == 0 else 0.0)})
        return pd.DataFrame(rows)


def explain_linear(space: LiteralSpace, k: int = 5, sigma: float = 1.0, m: int = 5000, *, seed: int = 0,
                   solver: str = "exact", time_limit: float = 10.0, holdout_m: int | None = None,
                   relevance_samples: int = RELEVANCE_SAMPLES) -> LinearExplanation:
    """Fit (P4) on m samples of D_{x,σ}: IHT with :func:`iht`'s default (Alg. 1 from f(x)e₁ and from the
    projected anchored least-squares solution, steps η·{1, 2}, best polished iterate), then
    (``solver="exact"``) the certified optimum within ``time_limit`` seconds; score it on a fresh sample
    of ``holdout_m`` (default m) points."""
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, not {solver!r}")
    train = draw_sample(space, sigma, m, seed)
    holdout = draw_sample(space, sigma, holdout_m or m, seed + 1)
    fit = iht(train, k)
    exact = exact_fit(train.gram, k, fit.w, time_limit=time_limit) if solver == "exact" else None
    w = exact.w if exact is not None else fit.w
    scores = score(space, w, train, holdout, k, seed=seed + 2, relevance_samples=relevance_samples)
    return LinearExplanation(space.names, space.x, train.fx, w, k, sigma, m, seed, solver, scores, fit, exact,
                             space.target)
