"""The sample mode of LENS Alg. 1 (line 24; Thm 2): one-sided binomial tests of H0: PS(c, y) < τ, with Holm's
family-wise control across the factors of one input, and the limits a number of references puts on them.

The test of a factor with ``hits`` of ``n`` samples reaching y is ``binomtest(hits, n, τ, alternative="greater")``
(scipy.stats): its p-value is computed at PS = τ, the boundary of H0, which is the supremum of the type I error
over H0 (Lehmann & Romano Ch. 3). A factor whose true PS is exactly τ is τ-sufficient (Def. 4) but the test
accepts it only with probability about α: the boundary belongs to H1 and is where the test has no power.

Per-factor testing (``correction="none"``) bounds the chance of accepting *each* factor whose PS < τ by α, so
over many null factors of one input the chance of accepting at least one grows towards m·α. Holm's step-down
(Holm 1979; the default) bounds the chance of accepting *any* factor whose PS < τ, per input, by α.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import binomtest

from ..errors import check_choice

CORRECTIONS = ("holm", "none")
"""The sample mode's multiple-testing corrections: Holm's family-wise, or none (per factor)."""


def binomial_p_values(hits: np.ndarray, n: int, tau: float) -> np.ndarray:
    """One-sided p-values of H0: PS < τ for each factor's ``hits`` out of ``n`` (one scipy test per distinct count)."""
    hits = np.asarray(hits, dtype=np.int64)
    counts = np.unique(hits)
    table = np.ones(n + 1)
    table[counts] = [binomtest(int(k), n, tau, alternative="greater").pvalue for k in counts]
    return table[hits]


def holm(p_values: np.ndarray, alpha: float, family: int | None = None) -> np.ndarray:
    """Holm's step-down: which hypotheses are rejected at family-wise level α.

    Sorted p-values p_(1) ≤ … ≤ p_(m) are rejected while p_(i) ≤ α / (m − i + 1). ``family`` (≥ the number of
    p-values) counts hypotheses of the family whose p-values are not given (factors not scored): they count as
    p = 1, which can only remove rejections, so the family-wise level stays α.
    """
    p = np.asarray(p_values, dtype=float)
    m = len(p) if family is None else max(int(family), len(p))
    order = np.argsort(p, kind="stable")
    limits = alpha / (m - np.arange(len(p)))
    failed = np.flatnonzero(p[order] > limits)
    stop = failed[0] if len(failed) else len(p)
    out = np.zeros(len(p), dtype=bool)
    out[order[:stop]] = True
    return out


def passes(hits: np.ndarray, n: int, tau: float, alpha: float, correction: str = "holm",
           family: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Which factors the test accepts as τ-sufficient, and their (unadjusted) p-values."""
    check_choice(correction, CORRECTIONS, "multiple-testing correction")
    p_values = binomial_p_values(hits, n, tau)
    accepted = holm(p_values, alpha, family) if correction == "holm" else p_values <= alpha
    return accepted, p_values


def first_level(alpha: float, correction: str, family: int) -> float:
    """The level the smallest p-value must reach for any factor to pass: α, or α / m under Holm."""
    return alpha / max(1, family) if correction == "holm" else alpha


def references_needed(tau: float, level: float) -> int | None:
    """The fewest references n for which a factor reaching y on all n passes at ``level``: τⁿ ≤ level
    (None when no n does: τ = 1)."""
    if tau >= 1:
        return None
    if tau <= 0:
        return 1
    return max(1, math.ceil(math.log(level) / math.log(tau) - 1e-12))


def power_limit(tau: float, alpha: float, n: int, correction: str = "holm", family: int = 1) -> str | None:
    """Why no factor can pass the test with ``n`` references, or None when one can.

    The smallest p-value n samples can give is τⁿ (every sample reaches y), so a factor can pass only when
    τⁿ ≤ α (per factor) or τⁿ ≤ α / m (Holm over m factors), i.e. τ ≤ level^(1/n).
    """
    level = first_level(alpha, correction, family)
    if tau ** n <= level:
        return None
    need = references_needed(tau, level)
    over = f" over {family:,} factors (Holm)" if correction == "holm" else ""
    bound = f"τ ≤ {level ** (1 / n):.4f}"
    fix = ("τ = 1 can never be established by a test; use the exact rule or τ < 1" if need is None else
           f"with τ = {tau:g} it needs at least {need:,} references")
    return (f"With {n:,} references no factor can pass the binomial test at α = {alpha:g}{over}: even a factor that "
            f"reaches the outcome on every reference has p-value τⁿ = {tau ** n:.3g}, so a factor can pass only when "
            f"{bound}; {fix} (or lower τ, raise α, or test fewer factors).")


def error_statement(alpha: float | None, correction: str, family: int) -> str:
    """The per-input error rate the rule guarantees, in words."""
    if alpha is None:
        return ("Exact rule (sample PS ≥ τ): no error guarantee — a factor whose true PS is below τ passes whenever "
                "its sample share reaches τ.")
    if correction == "holm":
        return (f"Holm's correction over the {family:,} factors of this input: the chance of listing any factor "
                f"whose true PS is below τ is at most α = {alpha:g} for this input.")
    return (f"No correction: each factor whose true PS is below τ is listed with chance at most α = {alpha:g}; over "
            f"the {family:,} factors of this input the chance of listing at least one can reach "
            f"{min(1.0, alpha * family):.3g}.")
