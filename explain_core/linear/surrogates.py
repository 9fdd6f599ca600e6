"""LIME and KernelSHAP in the PLE paper's Boolean space (§6), fitted beside the anchored explanation by
:func:`~.compare.compare` on its shared sample.

Both work on LIME's interpretable representation b ∈ {0,1}^{d−1}, b_j = (1 + z_j x_j)/2 ("literal j keeps the
query's value"); a linear model β₀ + Σβ_j b_j is the z-space explanation w_j = β_j x_j / 2, w_0 = β₀ + Σβ_j / 2
(:func:`to_z_space`). lime and shap are imported when LIME or SHAP runs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..results import ValueEquality
from ..seeding import global_generators
from .space import LiteralSpace, Sample, sample_neighbourhood

SHAP_BACKGROUND = 50
"""KernelSHAP's background rows, drawn from D_{x,σ}."""


def to_z_space(intercept: float, coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    """β₀ + Σβ_j b_j with b_j = (1 + z_j x_j)/2 over the non-bias literals → w ∈ R^d."""
    w = np.zeros(len(x))
    w[1:] = coef * x[1:] / 2
    w[0] = intercept + coef.sum() / 2
    return w


def lime_fit(sample: Sample, k: int, *, seed: int = 0, kernel_width: float | None = None) -> np.ndarray:
    """LIME (``lime.lime_base.LimeBase``, defaults) on the shared sample in b-space: k−1 features plus
    the intercept, exponential kernel on the Euclidean distance to x with LimeTabular's default width
    0.75·√(d−1); x itself is prepended as LIME's first row."""
    from lime.lime_base import LimeBase

    x = sample.x
    B = np.vstack([np.ones(len(x) - 1), (1 + sample.Z[:, 1:] * x[1:]) / 2])
    labels = np.concatenate([[sample.fx], sample.y])[:, None]
    distances = np.sqrt(((1 - B) ** 2).sum(axis=1))
    width = kernel_width or 0.75 * np.sqrt(len(x) - 1)
    kernel = lambda dist: np.sqrt(np.exp(-(dist ** 2) / width ** 2))  # noqa: E731 (LimeTabular's kernel)
    coef = np.zeros(len(x) - 1)
    if k <= 1:  # no feature: LIME's surrogate is its weighted mean
        return to_z_space(float(np.average(labels[:, 0], weights=kernel(distances))), coef, x)
    intercept, pairs, _, _ = LimeBase(kernel, random_state=seed).explain_instance_with_data(
        B, labels, distances, 0, k - 1)
    for j, beta in pairs:
        coef[j] = beta
    return to_z_space(float(intercept), coef, x)


@dataclass(frozen=True, eq=False)
class ShapValues(ValueEquality):
    """KernelSHAP in b-space against a background drawn from D_{x,σ}: φ_0 = E_bg[f], φ_j per literal.

    ``dense`` is the anchored linear model φ_0 + Σφ_j (b_j − b̄_j)/(1 − b̄_j) in z-space (every
    literal, local accuracy w·x = f(x)); ``truncated(k)`` keeps the k−1 largest |φ_j| and the bias,
    and so loses anchoring by |Σ of the dropped φ_j|.
    """

    phi0: float
    phi: np.ndarray
    background_mean: np.ndarray
    x: np.ndarray

    def linear(self, keep: np.ndarray) -> np.ndarray:
        scale = np.where(self.background_mean < 1, 1 - self.background_mean, np.inf)
        w = np.zeros(len(self.x))
        w[1:] = np.where(keep, self.phi * self.x[1:] / (2 * scale), 0.0)
        w[0] = self.phi0 + np.sum(np.where(keep, self.phi * (0.5 - self.background_mean) / scale, 0.0))
        return w

    @property
    def dense(self) -> np.ndarray:
        return self.linear(np.ones(len(self.phi), dtype=bool))

    def truncated(self, k: int) -> np.ndarray:
        keep = np.zeros(len(self.phi), dtype=bool)
        keep[np.argsort(-np.abs(self.phi), kind="stable")[:max(k - 1, 0)]] = True
        return self.linear(keep)


def kernel_shap(space: LiteralSpace, sigma: float, *, seed: int = 0, background: int = SHAP_BACKGROUND,
                nsamples: int | str = "auto") -> ShapValues:
    """KernelSHAP (``shap.KernelExplainer``, no ℓ1 selection: dense) of f at x in b-space (seeded)."""
    import shap

    x = space.x.astype(float)
    bg = (1 + sample_neighbourhood(space.x, sigma, background, seed)[:, 1:] * x[1:]) / 2

    def f(B: np.ndarray) -> np.ndarray:
        Z = np.column_stack([np.ones(len(B)), np.where(B > 0.5, x[1:], -x[1:])]).astype(np.int8)
        return space.evaluate(Z, seed)

    with global_generators(seed):  # KernelExplainer draws its coalitions from NumPy's global generator
        explainer = shap.KernelExplainer(f, bg)
        phi = np.asarray(explainer.shap_values(np.ones((1, len(x) - 1)), nsamples=nsamples, l1_reg=False,
                                               silent=True), dtype=float).reshape(-1)
    return ShapValues(float(np.ravel(explainer.expected_value)[0]), phi, bg.mean(axis=0), x)
