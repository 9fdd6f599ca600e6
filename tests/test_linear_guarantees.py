"""The sample sizes of the PLE paper's Theorems 2–3 (explain_core.linear.guarantees): the paper's worked example,
the proof's own deviation bound at the returned size, the inverse, and the radii."""
from __future__ import annotations

import math

import pytest

from explain_core.errors import IntakeError
from explain_core.linear.guarantees import SampleGuidance, radius, samples_needed, tolerance_at
from explain_core.views.linear import sample_guidance_text


def test_theorem_2s_worked_example():
    # §4.2: "setting k = 5, d = 100, ε = 0.1, and δ = 0.05, yields … roughly 2.9 × 10⁶ samples"
    assert samples_needed(5, 100, 1.0, 0.1, 0.05) == pytest.approx(2.9e6, rel=0.02)


@pytest.mark.parametrize("k, d, sigma, epsilon, delta", [(5, 100, 1.0, 0.1, 0.05), (3, 40, 0.0, 0.5, 0.1),
                                                         (8, 400, 2.0, 0.05, 0.01)])
def test_the_returned_size_meets_the_proofs_deviation_bound(k, d, sigma, epsilon, delta):
    """Theorem 26.15 (Shalev-Shwartz & Ben-David) as the proof applies it: ρ = (B+1)/2, c = (B+1)²/4."""
    for solver, log_delta in (("exact", 2), ("iht", 4)):
        b = radius(k, sigma, solver)
        m = samples_needed(k, d, sigma, epsilon, delta, solver)
        rho, c = (b + 1) / 2, (b + 1) ** 2 / 4
        deviation = (2 * rho * b * math.sqrt(2 * math.log(2 * d) / m)
                     + c * math.sqrt(2 * math.log(log_delta / delta) / m))
        assert deviation <= epsilon
        assert tolerance_at(m, k, d, sigma, delta, solver) <= epsilon < tolerance_at(m - 1, k, d, sigma, delta, solver)


def test_radii_and_their_checks():
    assert radius(5, 1.0, "exact") == 5
    alpha = 17 / 18 / math.cosh(0.5) ** 2  # Assumption 1: α = λ(1 − θ), θ = 1/18, λ = sech²(σ/2)
    assert radius(5, 1.0, "iht") == pytest.approx(5 + 4 * math.sqrt(5 / alpha))
    assert radius(5, 3.0, "iht") > radius(5, 1.0, "iht")  # locality costs samples
    with pytest.raises(IntakeError, match="solver"):
        radius(5, 1.0, "lasso")


def test_the_pages_sentence_says_when_the_bound_is_vacuous():
    text = sample_guidance_text(SampleGuidance(5000, 5, 40, 1.0, delta=0.05, epsilon=0.1))
    assert "vacuous" in text and f"{samples_needed(5, 40, 1.0, 0.1, 0.05):,}" in text and "95%" in text
    assert "vacuous" not in sample_guidance_text(SampleGuidance(10 ** 8, 5, 40, 1.0, delta=0.05, epsilon=0.1))
