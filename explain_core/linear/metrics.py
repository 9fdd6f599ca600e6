"""How good a linear explanation is (PLE): relevance error R (Def. 1, exact or Monte Carlo), fidelity error
F (Def. 6) on a fresh sample, the anchoring gap |w·x − f(x)| and the Lemma 4 bound R ≤ (1 + e^{−σ})^k·F.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from .problem import support_of
from .space import LiteralSpace, Sample, keep_probability, sample_neighbourhood

EXACT_RELEVANCE_LIMIT = 18  # enumerate the literals outside the support when at most this many
MAX_SUPPORT_PATTERNS = 16  # relevance needs the 2^|S| sign patterns of the support
RELEVANCE_SAMPLES = 20_000
"""The default Monte Carlo draws of the relevance error R(w)."""


# ---------------------------------------------------------------------------------------------------
# Relevance (Def. 1) and the Lemma 4 bound

@dataclass(frozen=True)
class Relevance:
    """R(w) = E[¼(f(z) − f(x))² | w·z = w·x] under D_{x,σ} (Def. 1).

    ``method`` is ``exact`` (every literal outside the support enumerated, ``samples`` points
    evaluated) or ``monte_carlo`` (``samples`` draws from D conditioned on the event; ``ci`` is the
    normal-approximation interval at ``confidence``). ``event_probability`` is P[w·z = w·x].

    Parameters
    ----------
    value : float
        R(w).
    method : str
        ``"exact"`` or ``"monte_carlo"``.
    samples : int
        Points evaluated or drawn.
    stderr : float
        Its standard error (0 when exact).
    ci : tuple of float
        Its interval.
    confidence, event_probability : float
        The interval's level, and P[w·z = w·x].
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
    (and f is deterministic), else Monte Carlo with ``samples`` conditioned draws (seeded).

    Parameters
    ----------
    space : LiteralSpace
        The query and f.
    w : numpy.ndarray
        Weights.
    sigma : float
        σ.
    seed : int
        The draws' seed.
    exact_limit : int
        The most literals outside the support enumerated.
    samples : int
        Monte Carlo draws.
    confidence : float
        The interval's level.

    Returns
    -------
    Relevance
        R(w), exact or estimated.
    """
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
    """R ≤ (1 + e^{−σ})^k · F for every anchored k-sparse w (Lemma 4).

    Parameters
    ----------
    fidelity : float
        F.
    k : int
        The sparsity.
    sigma : float
        σ.

    Returns
    -------
    float
        The bound on R.
    """
    return (1 + np.exp(-sigma)) ** k * fidelity


def anchoring_gap(w: np.ndarray, x: np.ndarray, fx: float) -> float:
    """How far ``w`` is from anchored: |w·x − f(x)|.

    Parameters
    ----------
    w : numpy.ndarray
        Weights.
    x : numpy.ndarray
        The query.
    fx : float
        f(x).

    Returns
    -------
    float
        The gap (0 for an anchored w).
    """
    return float(abs(np.asarray(w) @ np.asarray(x, dtype=float) - fx))


# ---------------------------------------------------------------------------------------------------
# One explanation

@dataclass(frozen=True)
class Scores:
    """The metrics of one explanation w: F̂ (empirical), F (out of sample), R (Def. 1; None for a w too
    dense to enumerate its support's patterns), |w·x − f(x)|, ‖w‖₀ and the Lemma 4 bound (1 + e^{−σ})^k·F.

    Parameters
    ----------
    empirical_fidelity, fidelity : float
        F̂ and F.
    relevance : Relevance, optional
        R.
    anchoring_gap : float
        |w·x − f(x)|.
    support_size : int
        ‖w‖₀.
    bound : float
        Lemma 4's bound.
    """

    empirical_fidelity: float
    fidelity: float
    relevance: Relevance | None
    anchoring_gap: float
    support_size: int
    bound: float


def score(space: LiteralSpace, w: np.ndarray, train: Sample, holdout: Sample, k: int, *, seed: int = 0,
          relevance_samples: int = RELEVANCE_SAMPLES) -> Scores:
    """All metrics of ``w`` on the fitting sample and a fresh one of the same neighbourhood.

    Parameters
    ----------
    space : LiteralSpace
        The query and f.
    w : numpy.ndarray
        Weights.
    train, holdout : Sample
        The fitting sample, and a fresh one.
    k : int
        The sparsity budget (Lemma 4).
    seed : int
        The relevance's seed.
    relevance_samples : int
        Monte Carlo draws.

    Returns
    -------
    Scores
        F̂, F, R, the anchoring gap, ‖w‖₀ and Lemma 4's bound.
    """
    F = holdout.fidelity(w)
    sparse = len([j for j in support_of(w) if j != 0]) <= MAX_SUPPORT_PATTERNS
    rel = relevance(space, w, train.sigma, seed=seed, samples=relevance_samples) if sparse else None
    return Scores(train.fidelity(w), F, rel, anchoring_gap(w, space.x, train.fx), len(support_of(w)),
                  lemma4_bound(F, k, train.sigma))
