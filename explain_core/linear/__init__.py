"""Anchored k-sparse linear explanations (PLE paper): IHT with the exact GSHP projection, the
certified exact fit, and the fidelity / relevance metrics. Torch is imported only when IHT runs on it
(a CUDA device); the rest of explain_core never imports it.

An explanation of f at x is w ∈ R^d (coordinate 0 = the bias literal) with w·x = f(x) (anchoring) and
‖w‖₀ ≤ k, fitted on m samples of the σ-neighbourhood D_{x,σ} to minimise the empirical fidelity
error F̂(w) = (1/4m)‖Zw − y‖² (P4, eq. 8). Modules: :mod:`.space` (the Boolean hypercube, samples),
:mod:`.boolean` (the paper's Boolean-model mode), :mod:`.iht`, :mod:`.exact` (certified optimum, over
:mod:`.problem`, :mod:`.bounds`, :mod:`.search`, :mod:`.miqp`), :mod:`.metrics`, :mod:`.compare` (the one fitting
pipeline: the explanation, beside LIME and SHAP on the same sample; :func:`explain_linear` and
:class:`LinearExplanation` live there).
Typical use::

    space = boolean_model(load_demo("adult")).space(row)      # or group_space(model, data, row, ref)
    ex = explain_linear(space, k=5, sigma=1.0, m=5000, seed=0)
    ex.table(); ex.scores.relevance.value; ex.exact.status, ex.exact.gap
"""
from __future__ import annotations

from .compare import (METHODS, SOLVERS, Comparison, FittingOptions, LinearExplanation, MethodResult, check_samples,
                      compare, explain_linear)
from .exact import ExactFit, exact_fit
from .iht import PAPER_IHT, IHTResult, device, gshp, iht, project_anchored
from .metrics import RELEVANCE_SAMPLES, Relevance, Scores, anchoring_gap, lemma4_bound, relevance, score
from .problem import GramProblem, support_of
from .groups import group_space
from .boolean import boolean_model
from .space import LiteralSpace, Sample, TargetScale, draw_sample, sample_neighbourhood

__all__ = ["METHODS", "RELEVANCE_SAMPLES", "SOLVERS", "Comparison", "ExactFit", "FittingOptions", "GramProblem",
           "IHTResult", "LinearExplanation", "LiteralSpace", "MethodResult", "PAPER_IHT", "Relevance", "Sample",
           "Scores", "TargetScale", "anchoring_gap", "boolean_model", "check_samples", "compare", "device",
           "draw_sample", "exact_fit", "explain_linear", "group_space", "gshp", "iht", "lemma4_bound",
           "project_anchored", "relevance", "sample_neighbourhood", "score", "support_of"]
