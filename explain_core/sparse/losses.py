"""The SEV paper's training losses (§4), in torch, over feature groups.

A model's score ``g`` is the positive class's probability; ``T`` is its decision threshold. The vertices one
step from the reference (SEV⁺) or from the query (SEV⁻) move one *feature group* at a time: every encoded column
of the group (a one-hot block, a categorical's dummies) takes the other end's values together.

- All-Opt⁺ (eq. 6): ``−1/n⁺ Σ_i min(max_j g(e_j ⊙ x_i + (1 − e_j) ⊙ x̃), T)``;
- All-Opt⁻ (eq. 7): ``1/n⁺ Σ_i max(min_j g((1 − e_j) ⊙ x_i + e_j ⊙ x̃), T)``; All-Opt® is eq. 7 with the
  minimum taken over the groups an explanation may move (the restricted ones are held at the query);
- Vol-Opt (eq. 5, linear models): ``1/G Σ_g log max(|g_ref(β)| / (s_g(β) + ε), ε)`` (Theorem 5's log-volume)
  over one axis per feature group, whose coefficient ``s_g`` is the root mean square of the group's one-step score
  change ``β_g·(x_g − x̃_g)`` over the training rows (for a numeric feature ``|β_j|`` times a constant, so eq. 5
  up to a constant), with |g_ref| floored at the margin ℓ_Pos_base keeps (see :func:`vol_opt`);
- ℓ_Pos_base (eq. 8): ``max(g(x̃), T − θ)``, which keeps the reference predicted negative;
- All-Opt^© / All-Opt^F ("Improving Decision Sparsity", S12): ``1/n⁺ Σ_i [max(min_{m,j} g(v_imj), T − θ) − (T − θ)]``
  over the one-step vertices towards each of the row's references (:mod:`.references`).

``n⁺`` counts the queries the current model predicts positive (the rows SEV explains).
"""
from __future__ import annotations

import numpy as np
import torch

OBJECTIVES = {"all_opt_plus": "All-Opt⁺", "all_opt_minus": "All-Opt⁻", "all_opt_restricted": "All-Opt®",
              "vol_opt": "Vol-Opt", "all_opt_cluster": "All-Opt^©", "all_opt_flexible": "All-Opt^F"}
REFERENCE_SET_OBJECTIVES = ("all_opt_cluster", "all_opt_flexible")  # "Improving Decision Sparsity" (S12): .references
VERTEX_SIDE = {"all_opt_plus": "plus", "all_opt_minus": "minus", "all_opt_restricted": "minus"}
DEFAULT_THETA = 0.05
DEFAULT_EPS = 0.01  # Vol-Opt's ε, in raw-score units: added to s_g (a group the model ignores) and the ratio's floor


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


def all_opt_references(vertex_scores: torch.Tensor, positive: torch.Tensor, threshold: float,
                       theta: float) -> torch.Tensor:
    """S12's ℓ_SEV from the scores (n, M·G) of the vertices one step from each query towards each of its M
    references: zero exactly when every positive query has a vertex at or below T − θ."""
    floor = threshold - theta
    return _mean_over(vertex_scores.min(dim=1).values.clamp(min=floor) - floor, positive)


def group_moments(X: np.ndarray, reference: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """(d, d) second moments ``mean_i (x_i − x̃)(x_i − x̃)ᵀ`` of the training rows about the reference, kept within
    each feature group (zero across groups): ``β_gᵀ M β_g`` is then the mean square of group g's score step."""
    gap = np.asarray(X, dtype=float) - np.asarray(reference, dtype=float)
    same_group = groups.T @ groups
    return (gap.T @ gap) / max(1, len(gap)) * same_group


def group_scales(coef: torch.Tensor, moments: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """(G,) ``s_g = sqrt(mean_i (β_g·(x_ig − x̃_g))²)``: each group's typical one-step score change, i.e. the
    coefficient of the group's axis once the axis is measured in its own spread (``moments``: :func:`group_moments`)."""
    squares = groups @ (coef * (moments @ coef))
    return squares.clamp(min=1e-12).sqrt()


def vol_opt(coef: torch.Tensor, intercept: torch.Tensor, reference: torch.Tensor, moments: torch.Tensor,
            groups: torch.Tensor, eps: float = DEFAULT_EPS, margin: float = 0.0) -> torch.Tensor:
    """Eq. 5 for a linear score ``intercept + coef·x`` over the G feature groups: the mean over groups of
    ``log max(|g_ref(β)| / (s_g + ε), ε)``.

    Theorem 5 counts one axis per coordinate an explanation moves. An explanation moves a feature group (a one-hot
    block as one), so each group is one axis: its coordinate is the group's score step ``β_g·(x_g − x̃_g)`` in
    units of its spread, and its coefficient the spread ``s_g`` (:func:`group_scales`). For a numeric or binary
    feature ``s_g = |β_j|·c_j`` with ``c_j`` fixed by the data, so the term differs from the paper's
    ``log |g_ref/β_j|`` by a constant and Theorem 5 holds unchanged. For a one-hot block, a level weighs by how
    often it occurs, and shifting every level's coefficient alike (which changes no prediction and no SEV) does
    not change s_g; per encoded column, eq. 5 would instead push every rare level's coefficient away from zero.

    The paper prints ``min(·, ε)``; a floor is what keeps the logarithm finite (a cap would stop the gradient as soon
    as one term exceeds ε), so the floor is used. A group the model ignores (s_g = 0) is handled as the paper
    suggests, by ε added to the denominator. |g_ref| is floored at ``margin``: Theorem 5 needs the reference
    predicted negative, and ℓ_Pos_base keeps its score at least θ below T (a raw score of logit(T − θ)); without
    the floor the log pulls g_ref through 0 with an unbounded gradient and the reference crosses the boundary.
    """
    g_ref = (intercept + coef @ reference).abs().clamp(min=margin)
    return torch.log((g_ref / (group_scales(coef, moments, groups) + eps)).clamp(min=eps)).mean()


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
