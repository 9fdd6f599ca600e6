"""The SEV paper's training losses (§4), in torch, over feature groups.

A model's score ``g`` is the positive class's probability; ``T`` is its decision threshold. The vertices one
step from the reference (SEV⁺) or from the query (SEV⁻) move one *feature group* at a time: every encoded column
of the group (a one-hot block, a categorical's dummies) takes the other end's values together.

- All-Opt⁺ (eq. 6): ``−1/n⁺ Σ_i min(max_j g(e_j ⊙ x_i + (1 − e_j) ⊙ x̃), T)``;
- All-Opt⁻ (eq. 7): ``1/n⁺ Σ_i max(min_j g((1 − e_j) ⊙ x_i + e_j ⊙ x̃), T)``; All-Opt® is eq. 7 with the
  minimum taken over the groups an explanation may move (the restricted ones are held at the query);
- Vol-Opt (eq. 5, linear models): ``1/p Σ_j log max(|g_ref(β) / β_j|, ε)`` (Theorem 5's log-volume), with
  |g_ref| floored at the margin ℓ_Pos_base keeps (see :func:`vol_opt`);
- ℓ_Pos_base (eq. 8): ``max(g(x̃), T − θ)``, which keeps the reference predicted negative.

``n⁺`` counts the queries the current model predicts positive (the rows SEV explains).
"""
from __future__ import annotations

import numpy as np
import torch

OBJECTIVES = {"all_opt_plus": "All-Opt⁺", "all_opt_minus": "All-Opt⁻", "all_opt_restricted": "All-Opt®",
              "vol_opt": "Vol-Opt"}
VERTEX_SIDE = {"all_opt_plus": "plus", "all_opt_minus": "minus", "all_opt_restricted": "minus"}
DEFAULT_THETA = 0.05
DEFAULT_EPS = 0.1  # Vol-Opt's ε: with 1e-6, near-zero one-hot coefficients dominate eq. 5 (bench/sev_training.py)


def group_matrix(column_group: np.ndarray, n_groups: int) -> np.ndarray:
    """(G, d) 0/1 matrix: row g marks the encoded columns of feature group g."""
    column_group = np.asarray(column_group)
    return (column_group[None, :] == np.arange(n_groups)[:, None]).astype(float)


def one_step_vertices(X: torch.Tensor, reference: torch.Tensor, groups: torch.Tensor, side: str) -> torch.Tensor:
    """(n, G, d) encoded vertices one group-move away: from the reference towards each query (``plus``: group j
    takes the query's values, the rest the reference's), or from each query towards the reference (``minus``)."""
    gap = (X - reference)[:, None, :] * groups[None, :, :]
    return reference + gap if side == "plus" else X[:, None, :] - gap


def all_opt_plus(vertex_scores: torch.Tensor, positive: torch.Tensor, threshold: float) -> torch.Tensor:
    """Eq. 6 from the scores (n, G) of the vertices one step from the reference; ``positive`` marks the n⁺ queries."""
    best = vertex_scores.max(dim=1).values.clamp(max=threshold)
    return -_mean_over(best, positive)


def all_opt_minus(vertex_scores: torch.Tensor, positive: torch.Tensor, threshold: float,
                  movable: torch.Tensor | None = None) -> torch.Tensor:
    """Eq. 7 from the scores (n, G) of the vertices one step from each query; with ``movable`` (G,) bool, the
    minimum runs over the movable groups only (All-Opt®)."""
    if movable is not None:
        vertex_scores = vertex_scores.masked_fill(~movable[None, :], float("inf"))
    worst = vertex_scores.min(dim=1).values.clamp(min=threshold)
    return _mean_over(worst, positive)


def vol_opt(coef: torch.Tensor, intercept: torch.Tensor, reference: torch.Tensor, eps: float = DEFAULT_EPS,
            margin: float = 0.0) -> torch.Tensor:
    """Eq. 5 for a linear score ``intercept + coef·x``: the mean log of |g_ref(β)/β_j|, floored at ε.

    The paper prints ``min(·, ε)``; a floor is what keeps the logarithm finite (a cap would stop the gradient as
    soon as one term exceeds ε), so the floor is used. A zero β_j is handled as the paper suggests, by ε added
    to the denominator; ε = 0.1 (on standardised / one-hot columns) keeps the many near-zero one-hot coefficients
    from dominating the mean. |g_ref| is floored at ``margin``: Theorem 5 needs the reference predicted negative, and
    ℓ_Pos_base keeps its score at least θ below T (a raw score of logit(T − θ)); without the floor the log pulls
    g_ref through 0 with an unbounded gradient and the reference crosses the boundary.
    """
    g_ref = (intercept + coef @ reference).abs().clamp(min=margin)
    return torch.log((g_ref / (coef.abs() + eps)).clamp(min=eps)).mean()


def reference_margin(threshold: float, theta: float) -> float:
    """The raw score distance logit(T) − logit(T − θ) that ℓ_Pos_base keeps between the reference and the
    boundary (0 when T − θ ≤ 0)."""
    low = threshold - theta
    return 0.0 if low <= 0 else float(np.log(threshold / (1 - threshold)) - np.log(low / (1 - low)))


def pos_base(reference_score: torch.Tensor, threshold: float, theta: float = DEFAULT_THETA) -> torch.Tensor:
    """Eq. 8: ``max(g(x̃), T − θ)``: constant while the reference is predicted negative with margin θ."""
    return reference_score.clamp(min=threshold - theta)


def _mean_over(values: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over the positive queries (0 when there are none in this batch)."""
    count = positive.sum()
    return (values * positive).sum() / count.clamp(min=1)
