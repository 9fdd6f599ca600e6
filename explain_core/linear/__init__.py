"""Anchored k-sparse linear explanations (PLE paper): IHT with the exact GSHP projection, the
certified exact fit, and the fidelity / relevance metrics. Torch is imported only when IHT runs on it
(a CUDA device); the rest of explain_core never imports it.

An explanation of f at x is w ∈ R^d (coordinate 0 = the bias literal) with w·x = f(x) (anchoring) and
‖w‖₀ ≤ k, fitted on m samples of the σ-neighbourhood D_{x,σ} to minimise the empirical fidelity
error F̂(w) = (1/4m)‖Zw − y‖² (P4, eq. 8). Modules: :mod:`.space` (the Boolean hypercube, samples),
:mod:`.iht`, :mod:`.exact` (certified optimum, over :mod:`.problem`, :mod:`.bounds`, :mod:`.search`,
:mod:`.miqp`), :mod:`.metrics`, :mod:`.compare` (beside LIME and SHAP).
Typical use::

    space = boolean_model(load_demo("adult")).space(row)      # or group_space(model, data, row, ref)
    ex = explain_linear(space, k=5, sigma=1.0, m=5000, seed=0)
    ex.table(); ex.scores.relevance.value; ex.exact.status, ex.exact.gap
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import check_choice, names_method
from ..limits import limits, over
from ..results import Explanation
from .exact import ExactFit, exact_fit
from .iht import PAPER_IHT, IHTResult, device, gshp, iht, project_anchored
from .metrics import RELEVANCE_SAMPLES, Relevance, Scores, anchoring_gap, lemma4_bound, relevance, score
from .problem import GramProblem, support_of
from .space import (LiteralSpace, Sample, TargetScale, boolean_model, draw_sample, group_space,
                    sample_neighbourhood)

SOLVERS = ("exact", "iht")

__all__ = ["ExactFit", "GramProblem", "IHTResult", "LinearExplanation", "LiteralSpace", "PAPER_IHT", "Relevance",
           "Sample", "Scores", "TargetScale", "anchoring_gap", "boolean_model", "device", "draw_sample",
           "exact_fit", "explain_linear", "group_space", "gshp", "iht", "lemma4_bound", "project_anchored",
           "relevance", "sample_neighbourhood", "score", "support_of"]


def check_samples(m: int) -> None:
    """m is capped by the ``linear_samples`` limit (a sample and a hold-out sample of m rows each)."""
    cap = limits().linear_samples
    if m > cap:
        raise over("The number of samples m", m, cap, "choose a smaller m (a few thousand is usually enough).")


@dataclass(frozen=True, eq=False)
class LinearExplanation(Explanation):
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

    method = "anchored k-sparse linear explanation"
    meta_parameters = ("k", "sigma", "m", "seed", "solver")

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


@names_method("the linear explanation")
def explain_linear(space: LiteralSpace, k: int = 5, sigma: float = 1.0, m: int = 5000, *, seed: int = 0,
                   solver: str = "exact", time_limit: float = 10.0, holdout_m: int | None = None,
                   relevance_samples: int = RELEVANCE_SAMPLES) -> LinearExplanation:
    """Fit (P4) on m samples of D_{x,σ}: IHT with :func:`iht`'s default (Alg. 1 from f(x)e₁ and from the
    projected anchored least-squares solution, steps η·{1, 2}, best polished iterate), then
    (``solver="exact"``) the certified optimum within ``time_limit`` seconds; score it on a fresh sample
    of ``holdout_m`` (default m) points."""
    check_choice(solver, SOLVERS, "linear solver")
    check_samples(max(m, holdout_m or m))
    train = draw_sample(space, sigma, m, seed)
    holdout = draw_sample(space, sigma, holdout_m or m, seed + 1)
    fit = iht(train, k)
    exact = exact_fit(train.gram, k, fit.w, time_limit=time_limit) if solver == "exact" else None
    w = exact.w if exact is not None else fit.w
    scores = score(space, w, train, holdout, k, seed=seed + 2, relevance_samples=relevance_samples)
    return LinearExplanation(space.names, space.x, train.fx, w, k, sigma, m, seed, solver, scores, fit, exact,
                             space.target)
