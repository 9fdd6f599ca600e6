"""All-Opt^© and All-Opt^F ("Improving Decision Sparsity", notes §6a, S12): training towards SEV = 1 against the
references SEV^© and SEV^F explain with, and measuring it on the trained model.

``ℓ_SEV = 1/n⁺ Σ_i [max(min_{m,j} g(x_i with group j moved to the row's reference r_m), T − θ) − (T − θ)]`` over the
training rows the current model predicts positive (:func:`~.losses.all_opt_references`): zero exactly when each
has a single-group move to one of its references that reaches a score of T − θ or less. ℓ_Pos_base (eq. 8) keeps the
worst reference predicted negative with the same margin: the references' largest logit goes into it.

- All-Opt^©: each row's reference is the typical case nearest to it (the paper's assignment, also used to measure
  the trained model's SEV^©; :mod:`~explain_core.references.prototypes`, fitted on the base model's training rows,
  held fixed during training: the paper's refresh never reached its loss, G7, and ℓ_Pos_base keeps the fixed
  prototypes negative);
- All-Opt^F: each row has two references, the plain one and r^F, the flexible reference of the base model: the grid
  value of every numeric window (:mod:`~explain_core.references.flexible`) chosen by coordinate descent to lower
  the base model's score at the reference (the paper's Alg. 1, with the vertices built from r^F itself: G3).

After training, SEV^© / SEV^F are measured on the **trained** model (G4), with references fitted for it, on the test
rows each model predicts positive (:func:`reference_means`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..references import Clustering, compare_kinds, fit_prototypes, flexible_windows
from ..references.kinds import ReferenceFits
from ..references.outcome import KIND_LABELS
from .losses import REFERENCE_SET_OBJECTIVES, one_step_vertices

OBJECTIVE_KIND = {"all_opt_cluster": "cluster", "all_opt_flexible": "flexible"}
DESCENT_SWEEPS = 10


def flexible_reference(setup, parts, columns) -> dict:
    """r^F: the plain reference with each numeric value replaced, coordinate by coordinate, by the window value
    that lowers the model's score the most (sweeps until none improves); never scores above the plain one."""
    reference = setup.reference_of_label(1)
    population = setup.train_rows[setup.dataset.y[setup.train_rows] == 0]
    values = dict(reference.values)
    windows = flexible_windows(setup.dataset, population, reference)
    best = float(setup.model.score(pd.DataFrame([values], columns=columns))[0])
    for _ in range(DESCENT_SWEEPS):
        improved = False
        for w in windows:
            trials = pd.DataFrame([{**values, w.group: v} for v in w.values], columns=columns)
            scores = setup.model.score(trials)
            if scores.min() < best - 1e-12:
                best, values[w.group], improved = float(scores.min()), w.values[int(scores.argmin())], True
        if not improved:
            break
    return values


def reference_rows(setup, objective: str, parts, columns) -> tuple[list[np.ndarray], np.ndarray]:
    """The encoded references of every training row (one (n, d) array per reference a row has) and the set of
    distinct references (R, d)."""
    train = setup.dataset.features.iloc[setup.train_rows]

    def encode(values: dict) -> np.ndarray:
        return parts.encode(pd.DataFrame([values], columns=columns)[columns])[0]

    if objective == "all_opt_cluster":
        prototypes = fit_prototypes(setup.model, setup.dataset, setup.train_rows,
                                    clustering=Clustering(seed=0, assignment="nearest"))
        assigned, _ = prototypes.assign(train)
        encoded = np.array([encode(p.reference.values) for p in prototypes.prototypes])
        return [encoded[assigned]], encoded[[i for i, p in enumerate(prototypes.prototypes) if p.valid]]
    plain = encode(setup.reference_of_label(1).values)
    flexible = encode(flexible_reference(setup, parts, columns))
    n = len(setup.train_rows)
    return [np.tile(plain, (n, 1)), np.tile(flexible, (n, 1))], np.array([plain, flexible])


def attach_references(family, setup, parts, settings) -> None:
    """Give ``family`` (a :class:`~.training._Family`) the one-step vertices towards each row's references and the
    references' worst logit for ℓ_Pos_base."""
    if settings.objective not in REFERENCE_SET_OBJECTIVES:
        return
    columns = list(setup.model.columns)
    per_row, distinct = reference_rows(setup, settings.objective, parts, columns)
    device = family.X.device
    if hasattr(family, "vertex_nodes"):  # gradient boosting: leaves of every vertex, computed once
        X32 = family.X.cpu().numpy()
        family.vertex_nodes = torch.cat([family._vertex_leaves(X32, r.astype(np.float32)) for r in per_row], dim=1)
        nodes = family._leaves(distinct.astype(np.float32))
        family.reference_logit = lambda: family._score(nodes).max()
        return
    refs = [torch.as_tensor(r, dtype=torch.float32, device=device) for r in per_row]
    distinct_t = torch.as_tensor(distinct, dtype=torch.float32, device=device)
    family.vertex_logits = lambda idx: torch.cat(
        [family.logits(one_step_vertices(family.X[idx], r[idx], family.groups, "minus")) for r in refs], dim=1)
    family.reference_logit = lambda: family.logits(distinct_t).max()


def reference_means(objective: str, before, after, params) -> dict[str, tuple[float, float]]:
    """Mean SEV^© or SEV^F before and after, each model with its own fitted references, on the test rows each
    predicts positive: ``{"mean SEV^© …": (before, after)}``."""
    kind = OBJECTIVE_KIND.get(objective)
    if kind is None:
        return {}
    means = []
    for side in (before, after):
        rows = side.test_rows[side.model.label(side.dataset.features.iloc[side.test_rows]) == 1]
        fits = ReferenceFits(side, assignment="nearest")  # as trained: towards the nearest typical case
        table = compare_kinds(side, rows, fits, kinds=(kind,), max_depth=params.max_depth).table
        means.append(float(table["mean SEV"].iloc[0]) if len(table) else float("nan"))
    return {f"mean {KIND_LABELS[kind]} (test rows predicted positive)": tuple(means)}
