"""Sparse-explanation training (SEV paper §4, App. C): each loss against a plain loop over its equation, Theorem 5
by Monte Carlo, All-Opt⁺ on data where a low-SEV model exists, tree reweighting, export and reload."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch

from explain_core.analysis import dataset_sev, predicted_rows
from explain_core.errors import TrainingCancelled
from explain_core.intake.data import make_dataset
from explain_core.intake.loading import load_model_file
from explain_core.intake.models import wrap_model
from explain_core.intake.onnx_export import onnx_bytes
from explain_core.setup import Parameters, trained_setup
from explain_core.sparse.families import APP_B
from explain_core.sparse.losses import reference_margin, vol_opt
from explain_core.sparse.training import (TrainingSettings, batch_loss, default_settings, prepare, skops_bytes,
                                          sparse_setup, train_sparse)

TINY = dict(warmup_epochs=1, sev_epochs=2)


def mixed_data(n=240, seed=0):
    """Two numeric features, a 3-valued categorical (three encoded columns: one group) and a binary one."""
    return make_dataset(mixed_frame(n, seed), "y", name="mixed")


def mixed_frame(n, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                          "c": rng.choice(["x", "y", "z"], size=n), "d": rng.choice(["no", "yes"], size=n)})
    logit = 1.5 * frame["a"] - frame["b"] + (frame["c"] == "z") * 1.2 + (frame["d"] == "yes") - 0.8
    frame["y"] = (logit + rng.logistic(size=n) * 0.5 > 0).astype(int)
    return frame


@pytest.fixture(scope="module")
def mixed():
    return mixed_data()


@pytest.fixture(scope="module", params=["l2_lr", "mlp", "gbdt"])
def base(request, mixed):
    return trained_setup(mixed, request.param, seed=0)


def loop_terms(setup, problem, objective, theta=0.05, eps=1e-6):
    """Eqs. 5-8 and the BCE evaluated plainly: one model call per vertex, loops over queries and groups."""
    estimator, T = problem.parts.estimator, setup.model.threshold
    pos = list(estimator.classes_).index(setup.model.positive_class)
    X = problem.family.X.cpu().numpy().astype(float)
    ref = problem.family.reference.cpu().numpy().astype(float)
    groups = problem.parts.column_group
    names = setup.dataset.layout.names
    y = problem.y.cpu().numpy()

    def g(v):
        return float(estimator.predict_proba(np.asarray(v, dtype=float)[None, :])[0, pos])

    bce = 0.0
    for xi, yi in zip(X, y):
        p = g(xi)
        bce -= (yi * math.log(p) + (1 - yi) * math.log(1 - p)) / len(X)
    terms = {"bce": bce, "pos_base": max(g(ref), T - theta)}
    if objective == "vol_opt":
        beta, beta0 = estimator.coef_[0] * (1 if pos == 1 else -1), estimator.intercept_[0] * (1 if pos == 1 else -1)
        g_ref = beta0 + sum(b * r for b, r in zip(beta, ref))
        margin = math.log(T / (1 - T)) - math.log((T - theta) / (1 - T + theta))  # ℓ_Pos_base's margin, raw score
        total = 0.0
        for j in range(len(names)):  # one axis per group: s_j = RMS over rows of the group's one-step score change
            steps = [sum(beta[c] * (xi[c] - ref[c]) for c in range(len(ref)) if groups[c] == j) for xi in X]
            s_j = math.sqrt(sum(step ** 2 for step in steps) / len(steps))
            total += math.log(max(max(abs(g_ref), margin) / (s_j + eps), eps))
        terms["sev"] = total / len(names)
        return terms
    total, n_pos = 0.0, 0
    for xi in X:
        if g(xi) <= T:
            continue
        n_pos += 1
        scores = []
        for j, name in enumerate(names):
            if objective == "all_opt_restricted" and name in RESTRICTED:
                continue
            v = ref.copy() if objective == "all_opt_plus" else xi.copy()
            for c in range(len(v)):
                if groups[c] == j:
                    v[c] = xi[c] if objective == "all_opt_plus" else ref[c]
            scores.append(g(v))
        total += -min(max(scores), T) if objective == "all_opt_plus" else max(min(scores), T)
    terms["sev"] = total / max(1, n_pos)
    return terms


RESTRICTED = ("a", "c")


@pytest.mark.parametrize("objective", ["all_opt_plus", "all_opt_minus", "all_opt_restricted", "vol_opt"])
def test_each_loss_equals_a_loop_over_its_equation(base, objective):
    if objective == "vol_opt" and "logistic" not in base.model.name.lower():
        pytest.skip("Vol-Opt is for linear models")
    settings = TrainingSettings(objective=objective, restricted=RESTRICTED if objective == "all_opt_restricted" else ())
    problem = prepare(base, settings, device="cpu")
    idx = torch.arange(len(problem.y))
    terms = batch_loss(problem.family, idx, problem.y, problem.settings, problem.movable, True)
    got = {k: float(v.detach()) for k, v in terms.items()}
    want = loop_terms(base, problem, objective, eps=settings.eps)
    assert problem.parts.column_group.tolist().count(base.dataset.layout.names.index("c")) == 3  # a 3-column group
    for term in ("bce", "sev", "pos_base"):
        assert got[term] == pytest.approx(want[term], rel=1e-4, abs=1e-5), term
    assert abs(want["sev"]) > 1e-3  # the term is not trivially zero on this data


def test_vol_opt_is_a_log_volume_and_theorem_5_scaling_holds_by_monte_carlo():
    """For f(x) = 1[β0 + β·x > 0] with reference 0, the volume with SEV⁺ = k scales as Π|g_ref/β_j| (Theorem 5);
    Vol-Opt (eq. 5) is the mean log of those factors, so its change is (1/p)·log of the volume ratio."""
    rng = np.random.default_rng(1)
    p, n = 3, 1_500_000
    subsets = [s for d in range(1, p + 1) for s in itertools.combinations(range(p), d)]

    def volumes(beta0, beta):
        bound = (p - 1) * abs(beta0) / np.abs(beta) * 1.05  # |β_j x_j| ≤ (p−1)|g_ref| on SEV⁺ ≥ 2 (proof of Thm 5)
        x = rng.uniform(-bound, bound, size=(n, p))
        sev = np.full(n, 0)
        for s in sorted(subsets, key=len, reverse=True):
            flips = beta0 + x[:, list(s)] @ beta[list(s)] > 0
            sev = np.where(flips, len(s), sev)
        box = np.prod(2 * bound)
        return {k: box * np.mean(sev == k) for k in (2, 3)}

    beta0, beta = -1.0, np.array([0.5, -2.0, 1.5])
    beta0_new, beta_new = -2.5, np.array([1.2, 0.7, -3.0])
    before, after = volumes(beta0, beta), volumes(beta0_new, beta_new)
    factor = np.prod(np.abs(beta0_new / beta_new)) / np.prod(np.abs(beta0 / beta))
    for k in (2, 3):
        assert after[k] / before[k] == pytest.approx(factor, rel=0.05), k
    ref, axes = torch.zeros(p, dtype=torch.float64), torch.eye(p, dtype=torch.float64)
    for spread in (np.ones(p), np.array([0.3, 2.0, 5.0])):  # a numeric axis's s_j = |β_j|·spread_j: a constant
        moments = torch.diag(torch.tensor(spread ** 2))
        change = float(vol_opt(torch.tensor(beta_new), torch.tensor(beta0_new), ref, moments, axes, 0.0)
                       - vol_opt(torch.tensor(beta), torch.tensor(beta0), ref, moments, axes, 0.0))
        assert change == pytest.approx(math.log(after[2] / before[2]) / p, abs=0.02)
    plain = vol_opt(torch.tensor(beta), torch.tensor(beta0), ref, torch.eye(p, dtype=torch.float64), axes, 0.0)
    assert float(plain) == pytest.approx(np.mean(np.log(np.abs(beta0 / beta))))  # eq. 5 itself


def test_vol_opt_ignores_a_shift_of_a_one_hot_groups_coefficients(mixed):
    """Adding c to every level's coefficient of a one-hot group and −c to the intercept changes no score and no
    SEV; Vol-Opt over group axes does not change either (per encoded column it would)."""
    base = trained_setup(mixed, "l2_lr", seed=0)
    problem = prepare(base, TrainingSettings(objective="vol_opt"), device="cpu")
    family = problem.family
    block = torch.as_tensor(problem.parts.column_group == base.dataset.layout.names.index("c"))
    coef, intercept = family.coef.detach(), family.intercept.detach()
    shifted_coef, shifted_intercept = coef + 0.7 * block, intercept - 0.7
    torch.testing.assert_close(family.X @ shifted_coef + shifted_intercept, family.X @ coef + intercept)
    args = (family.reference, family.moments, family.groups, 1e-6)
    assert float(vol_opt(shifted_coef, shifted_intercept, *args)) == pytest.approx(
        float(vol_opt(coef, intercept, *args)), abs=1e-5)
    per_column = torch.eye(len(coef))
    assert abs(float(vol_opt(shifted_coef, shifted_intercept, family.reference, family.moments * per_column,
                             per_column, 1e-6) - vol_opt(coef, intercept, family.reference,
                                                         family.moments * per_column, per_column, 1e-6))) > 0.05


def test_vol_opt_stops_pulling_the_reference_at_pos_base_margin():
    coef, ref, axes = torch.tensor([0.5, -2.0], requires_grad=True), torch.tensor([1.0, 0.0]), torch.eye(2)
    margin = reference_margin(0.5, 0.05)
    assert margin == pytest.approx(math.log(0.55 / 0.45))
    near = vol_opt(coef, torch.tensor(-0.45, requires_grad=True), ref, axes, axes, 1e-6, margin)  # g_ref = −0.05
    assert float(near.detach()) == pytest.approx((math.log(margin / 0.5) + math.log(margin / 2.0)) / 2, rel=1e-5)
    far = torch.tensor(-1.5, requires_grad=True)  # g_ref = −1: descent raises the intercept, towards the boundary
    vol_opt(coef, far, ref, axes, axes, 1e-6, margin).backward()
    assert far.grad < 0


@pytest.fixture(scope="module")
def shifted():
    """Negatives near 0 in four features; each positive has two of them shifted to 1.6. The base L2 LR puts its
    boundary midway (SEV⁺ ≈ 2: one shifted feature from the reference is not enough), yet a model with SEV⁺ = 1
    is as accurate: a boundary just above the negatives, which one shifted feature crosses."""
    rng = np.random.default_rng(3)
    n, p = 1500, 4
    X = rng.normal(scale=0.25, size=(n, p))
    y = rng.random(n) < 0.3
    for i in np.flatnonzero(y):
        X[i, rng.choice(p, 2, replace=False)] += 1.6
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame["y"] = y.astype(int)
    return make_dataset(frame, "y", name="shifted")


def mean_sev(setup, kind="plus"):
    values = [v for v in dataset_sev(setup, predicted_rows(setup), Parameters(), kind=kind).values if v is not None]
    return float(np.mean(values))


def test_all_opt_plus_brings_mean_sev_plus_to_one_keeping_accuracy(shifted):
    base = trained_setup(shifted, "l2_lr", seed=0)
    result = train_sparse(base, TrainingSettings(objective="all_opt_plus", warmup_epochs=2, sev_epochs=8, seed=0),
                          device="cpu")
    after = sparse_setup(base, result)
    assert mean_sev(base) > 1.5
    assert mean_sev(after) <= 1.1
    assert after.metrics["test_accuracy"] >= base.metrics["test_accuracy"] - 0.01
    ref = after.reference_of_label(1).as_frame(shifted.columns)
    assert after.model.score(ref)[0] < after.model.threshold  # ℓ_Pos_base kept the reference negative


def test_tree_reweighting_changes_only_one_weight_per_tree(mixed):
    base = trained_setup(mixed, "gbdt", seed=0)
    result = train_sparse(base, TrainingSettings(objective="all_opt_minus", **TINY), device="cpu")
    old, new = base.model.estimator[-1], result.estimator
    assert new is not old and new.init_ is not old.init_ and new.learning_rate == old.learning_rate
    weights = []
    for t_old, t_new in zip(old.estimators_[:, 0], new.estimators_[:, 0]):
        a, b = t_old.tree_, t_new.tree_
        for attr in ("children_left", "children_right", "feature", "threshold"):
            np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
        values, scaled = a.value[:, 0, 0], b.value[:, 0, 0]
        w = scaled[np.argmax(np.abs(values))] / values[np.argmax(np.abs(values))]
        np.testing.assert_allclose(scaled, w * values, rtol=1e-6, atol=1e-12)
        weights.append(w)
    assert np.ptp(weights) > 1e-3  # the weights trained, and not all alike
    X = old.estimators_[0, 0].tree_.value  # the base model itself was not touched
    assert X is not None and np.allclose(base.model.estimator[-1].estimators_[0, 0].tree_.value, X)


def test_seeded_progress_per_epoch_and_cancel(mixed):
    base = trained_setup(mixed, "l2_lr", seed=0)
    settings = TrainingSettings(objective="all_opt_plus", **TINY, seed=4)
    seen = []
    one = train_sparse(base, settings, progress=lambda f, m: seen.append(f), device="cpu")
    two = train_sparse(base, settings, device="cpu")
    assert seen == pytest.approx([1 / 3, 2 / 3, 1.0]) and len(one.history) == 3
    assert [h["phase"] for h in one.history] == ["warm-up", "sev", "sev"] and one.history[0]["sev"] == 0.0
    np.testing.assert_array_equal(one.estimator.coef_, two.estimator.coef_)
    with pytest.raises(TrainingCancelled):
        train_sparse(base, settings, cancel=lambda: True, device="cpu")


def test_knobs_left_unset_take_the_model_familys_defaults(mixed):
    """App. B for LR (Vol-Opt λ 0.01); GBDT's tree weights are fine-tuned at 0.03 without warm-up for 15 epochs at
    λ 1 (App. B's warm-up cost the COMPAS demo 2 points of accuracy whatever λ, issue 55); an MLP is fine-tuned at
    its own learning rate, without warm-up, for 15 epochs at λ 0.1; All-Opt® takes λ 3 everywhere. What the caller
    sets is kept, and a result records the settings it used."""
    lr, gbdt, mlp = (trained_setup(mixed, kind, seed=0) for kind in ("l2_lr", "gbdt", "mlp"))
    assert default_settings(lr, "all_opt_minus") == {**APP_B, "strength": 1}
    assert default_settings(gbdt, "all_opt_plus") == {"learning_rate": 0.03, "warmup_epochs": 0, "sev_epochs": 15,
                                                      "strength": 1}
    assert default_settings(lr, "vol_opt")["strength"] == 0.01 and APP_B["learning_rate"] == 0.1
    assert default_settings(lr, "all_opt_restricted")["strength"] == default_settings(gbdt, "all_opt_restricted")[
        "strength"] == 3
    network = mlp.model.estimator[-1]
    network_rate = network.learning_rate_init
    assert default_settings(mlp, "all_opt_minus") == {"learning_rate": network_rate, "warmup_epochs": 0,
                                                      "sev_epochs": 15, "strength": 0.1}
    assert default_settings(mlp, "all_opt_restricted")["strength"] == 3
    network.learning_rate_init = 0.004  # read from the fitted network, not a constant
    try:
        assert default_settings(mlp, "all_opt_plus")["learning_rate"] == 0.004
    finally:
        network.learning_rate_init = network_rate
    kept = prepare(mlp, TrainingSettings(objective="all_opt_plus", learning_rate=0.05, warmup_epochs=2), "cpu").settings
    assert (kept.learning_rate, kept.warmup_epochs, kept.sev_epochs, kept.strength) == (0.05, 2, 15, 0.1)
    tuned = train_sparse(mlp, TrainingSettings(objective="all_opt_minus"), device="cpu")
    assert [h["phase"] for h in tuned.history] == ["sev"] * 15 and tuned.settings.learning_rate == network_rate
    result = train_sparse(lr, TrainingSettings(objective="all_opt_minus", sev_epochs=1), device="cpu")
    assert result.settings == TrainingSettings(objective="all_opt_minus", strength=1.0, learning_rate=0.1,
                                               warmup_epochs=70, sev_epochs=1)
    assert len(result.history) == 71
    with pytest.raises(Exception, match="learning rate"):
        TrainingSettings(learning_rate=0.0)


def test_vol_opt_only_for_linear_models(mixed):
    with pytest.raises(Exception, match="linear models"):
        train_sparse(trained_setup(mixed, "gbdt", seed=0), TrainingSettings(objective="vol_opt", **TINY))


def reloaded_scores(content: bytes, suffix: str, setup, frame, tmp_path):
    """Scores of a downloaded model file, loaded back the way the app loads an upload."""
    path = tmp_path / f"m{suffix}"
    path.write_bytes(content)
    return wrap_model(load_model_file(path), setup.dataset, positive_class=setup.model.positive_class).score(frame)


def assert_same_predictions(got, expected, threshold):
    """Scores equal within float32 precision relative to their scale; labels equal away from the threshold."""
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(expected).max()))
    clear = np.abs(expected - threshold) > 1e-5
    np.testing.assert_array_equal((got > threshold)[clear], (expected > threshold)[clear])


def test_export_as_skops_and_onnx_reloads_with_equal_predictions(base, tmp_path):
    result = train_sparse(base, TrainingSettings(objective="all_opt_plus", **TINY), device="cpu")
    after = sparse_setup(base, result)
    frame = base.dataset.features
    expected = after.model.score(frame)
    assert not np.allclose(expected, base.model.score(frame))  # training changed the model
    # skops: vetted types only, exactly equal
    np.testing.assert_array_equal(reloaded_scores(skops_bytes(after), ".skops", after, frame, tmp_path), expected)
    # ONNX: one input per raw column, so the file alone (no encoder) reloads
    assert_same_predictions(reloaded_scores(onnx_bytes(after), ".onnx", after, frame, tmp_path), expected,
                            after.model.threshold)


def test_onnx_export_imputes_and_ignores_unknown_categories_as_scikit_learn_does(tmp_path):
    frame = mixed_frame(300, 5)
    frame.loc[::7, "a"] = np.nan
    frame.loc[::5, "c"] = np.nan
    data = make_dataset(frame, "y", name="gaps")
    for kind in ("l2_lr", "gbdt"):
        setup = trained_setup(data, kind, seed=0)
        rows = data.features.copy()
        rows.loc[rows.index[:4], "c"] = "unseen"  # a category the encoder never saw: all zeros in both
        expected = setup.model.score(rows)
        assert rows["c"].isna().any() and rows["a"].isna().any()
        assert_same_predictions(reloaded_scores(onnx_bytes(setup), ".onnx", setup, rows, tmp_path), expected,
                                setup.model.threshold)


def test_the_pdf_report_says_how_the_model_was_trained(mixed):
    import io

    from pypdf import PdfReader

    from explain_core import report as rep
    from explain_core.vocabulary import fmt_metric

    base = trained_setup(mixed, "l2_lr", seed=0)
    after = sparse_setup(base, train_sparse(base, TrainingSettings(objective="all_opt_minus", strength=2.5, **TINY)))
    made = rep.build_row_report(rep.RowResults(after, int(after.test_rows[0]), Parameters()), ("sev",))
    text = " ".join(" ".join(p.extract_text() for p in PdfReader(io.BytesIO(
        rep.write_pdf(made, image_renderer="matplotlib"))).pages).split())
    assert "Trained for sparse explanations" in text and "objective All-Opt⁻, λ = 2.5" in text
    table = after.training.comparison(after, Parameters().sev).table()
    for name, row in table.iterrows():
        assert f"{name} {fmt_metric(row['before'])} {fmt_metric(row['after'])}" in text, name
    plain = rep.build_row_report(rep.RowResults(base, int(base.test_rows[0]), Parameters()), ("sev",))
    assert plain.sparsity is None


@pytest.mark.parametrize("name", ["compas", "german_credit"])
def test_the_first_train_with_the_defaults_gives_a_better_model_on_the_demo(explain_cache_dir, name):
    """Issue 55: "Train" with the page's defaults on the default demo (COMPAS, gradient boosting) said "did not give a
    better model … 0.686 → 0.664". With every knob left unset, All-Opt⁺ shortens the mean SEV⁺ and keeps the test
    accuracy within 1 point (the page's own verdict, ``shortfall``), on COMPAS and on German credit."""
    from explain_core.analysis import demo_setup
    from explain_core.sparse.training import sparse_setup

    base = demo_setup(name, "gbdt")
    result = train_sparse(base, TrainingSettings(), device="cpu")
    after = sparse_setup(base, result)
    compared = after.training.comparison(after, Parameters().sev)
    before_sev, after_sev = compared.targeted("all_opt_plus")
    assert compared.shortfall("all_opt_plus", result.settings.strength) is None, (before_sev, after_sev)
    assert after_sev < before_sev
