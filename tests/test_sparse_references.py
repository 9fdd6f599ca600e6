"""All-Opt^© and All-Opt^F (notes §6a, acceptance check 5): the loss terms are zero exactly when every positive has a
single-group flip with margin θ and every reference sits θ below the threshold; the vertices each row is trained
on are its own references' (checked against the model on raw rows); after training the trained model's own SEV^© /
SEV^F is not above the base model's."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from explain_core.analysis import demo_setup
from explain_core.references import Clustering, fit_prototypes
from explain_core.setup import SEVParameters
from explain_core.sparse.losses import all_opt_references, pos_base
from explain_core.sparse.references import flexible_reference
from explain_core.sparse.training import TrainingSettings, prepare, sparse_setup, train_sparse


def test_loss_terms_are_zero_exactly_at_the_margin():
    T, theta = 0.5, 0.05
    positive = torch.tensor([1.0, 1.0, 0.0])
    at_margin = torch.tensor([[0.45, 0.9], [0.7, 0.2], [0.99, 0.99]])  # the negative row 3 does not count
    assert float(all_opt_references(at_margin, positive, T, theta)) == 0.0
    above = torch.tensor([[0.46, 0.9], [0.7, 0.2], [0.99, 0.99]])
    assert float(all_opt_references(above, positive, T, theta)) == pytest.approx(0.01 / 2, abs=1e-6)
    floor = T - theta
    assert float(pos_base(torch.tensor(0.40), T, theta)) - floor == pytest.approx(0.0, abs=1e-7)
    assert float(pos_base(torch.tensor(0.47), T, theta)) - floor == pytest.approx(0.02, abs=1e-6)


@pytest.fixture(scope="module")
def compas_lr():
    return demo_setup("compas", "l2_lr")


@pytest.mark.parametrize("kind", ["l2_lr", "gbdt"])
def test_each_row_is_trained_towards_its_own_typical_case(kind):
    s = demo_setup("compas", kind)
    problem = prepare(s, TrainingSettings(objective="all_opt_cluster"), device="cpu")
    prototypes = fit_prototypes(s.model, s.dataset, s.train_rows, clustering=Clustering(seed=0, assignment="nearest"))
    train = s.dataset.features.iloc[s.train_rows]
    assigned, _ = prototypes.assign(train)
    idx = torch.arange(5)
    got = torch.sigmoid(problem.family.vertex_logits(idx)).detach().numpy()
    for i in range(5):
        ref = prototypes.prototypes[assigned[i]].reference.values
        rows = []
        for g in s.dataset.groups:
            row = train.iloc[i].to_dict()
            row.update({c: ref[c] for c in g.columns})
            rows.append(row)
        expected = s.model.score(pd.DataFrame(rows))
        assert got[i] == pytest.approx(expected, abs=1e-4)
    worst = max(s.model.score(p.reference.as_frame(s.dataset.columns))[0] for p in prototypes.valid)
    assert float(torch.sigmoid(problem.family.reference_logit())) == pytest.approx(worst, abs=1e-4)


def test_flexible_reference_never_scores_above_the_plain_one(compas_lr):
    s = compas_lr
    columns = list(s.model.columns)
    plain = s.model.score(s.reference.as_frame(columns))[0]
    flexible = s.model.score(pd.DataFrame([flexible_reference(s, None, columns)], columns=columns))[0]
    assert flexible <= plain and flexible < plain - 1e-3


@pytest.mark.parametrize("objective", ["all_opt_cluster", "all_opt_flexible"])
def test_trained_model_is_measured_and_not_less_sparse(compas_lr, objective):
    """The trained model's own SEV^© / SEV^F (references refitted for it), on its positive test rows, is not above
    the base model's (catches G4: measuring the base model)."""
    result = train_sparse(compas_lr, TrainingSettings(objective=objective, warmup_epochs=0, sev_epochs=5, seed=0))
    after = sparse_setup(compas_lr, result)
    compared = after.training.comparison(after, SEVParameters())
    (name, (before_mean, after_mean)), = compared.reference_means.items()
    assert after_mean <= before_mean and np.isfinite(after_mean)
    assert name in compared.table().index and name.split(" (")[0] in compared.headline()
    assert after.model.score(after.reference.as_frame(after.dataset.columns))[0] < after.model.threshold
