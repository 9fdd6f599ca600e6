"""Every issue-30 view on every bundled demo (its GBDT; L2 logistic regression / ridge as the second model), each
checked against an independent computation on small budgets: partial dependence against scoring the moved rows one
grid value at a time, SHAP interaction values against each row's output (local accuracy), cohorts and fairness
against numpy hand counts (and fairlearn's own functions), the error tree's leaves against a partition of the test
rows, the threshold sweep against the confusion matrix of the model's own labels, two models against their labels
row by row.

Binary classification (COMPAS, Adult, German credit, credit approval) and regression (California housing, student
performance: read at or above / below the model's threshold where a view needs classes); a multiclass model one
against the rest and uploaded models are checked in each view's own test module."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_fairness import assert_split_matches

from explain_core.analysis import Parameters, demo_setup
from explain_core.inspection import interactions, partial_dependence
from explain_core.inspection.cohorts import compare_cohorts
from explain_core.inspection.filters import ERROR_QUANTILE, MISCLASSIFIED, Cohort, Filter
from explain_core.inspection.errors import error_tree, leaf_cohort
from explain_core.inspection.fairness import REST, fairness_report
from explain_core.inspection.interactions import SHAP_METHOD
from explain_core.inspection.threshold import threshold_sweep
from explain_core.inspection.two_models import compare_models

DEMOS = ("compas", "adult", "german_credit", "california_housing", "student_performance_math", "credit_approval")
SEV = Parameters().sev


@pytest.fixture(scope="module", params=DEMOS)
def setup(request, explain_cache_dir):
    return demo_setup(request.param, "gbdt")


def scored(setup) -> np.ndarray:
    return setup.model.score(setup.dataset.features.iloc[setup.test_rows])


def true_classes(setup) -> np.ndarray:
    """The test rows' true class: the label, or a regression's target on the model's side of its threshold."""
    y = setup.dataset.y[setup.test_rows]
    return y.astype(int) if setup.dataset.task == "classification" else setup.model.labels_of(y).astype(int)


def wrong_by_hand(setup) -> np.ndarray:
    """Misclassified, or a regression's absolute error above the test rows' 80 % quantile."""
    scores = scored(setup)
    if setup.dataset.task == "classification":
        return setup.model.labels_of(scores).astype(int) != true_classes(setup)
    residual = np.abs(setup.dataset.y[setup.test_rows] - scores)
    return residual > np.quantile(residual, ERROR_QUANTILE)


def set_group(frame: pd.DataFrame, group, value) -> pd.DataFrame:
    """``frame`` with ``group`` set to ``value`` on every row (a one-hot block: its column ``value`` on, the others
    off), written column by column."""
    moved = frame.copy()
    for column in group.columns:
        new = (column == value) if group.is_block else value
        moved[column] = pd.Series([new] * len(moved), index=moved.index).astype(frame[column].dtype)
    return moved


def test_pdp_and_ice_of_the_first_feature_equal_scoring_each_grid_value(setup):
    group = setup.dataset.groups[0]
    row = int(setup.test_rows[1])
    result = partial_dependence(setup, [group.name], row=row, rows=60, ice_rows=4, grid=8, seed=2)
    assert len(result.rows) == min(60, len(setup.test_rows)) and np.isin(result.rows, setup.test_rows).all()
    sample = setup.dataset.features.iloc[result.rows]
    for k in sorted({0, len(result.grids[0]) // 2, len(result.grids[0]) - 1}):
        value = result.grids[0][k]
        scores = setup.model.score(set_group(sample, group, value))
        assert result.average[k] == pytest.approx(scores.mean()), value
        np.testing.assert_allclose(result.ice[:, k], scores[:4])
        assert result.row_ice[k] == pytest.approx(setup.model.score(set_group(setup.query(row), group, value))[0])
    assert result.row_score == pytest.approx(setup.model.score(setup.query(row))[0])


def test_interactions_of_each_row_add_up_to_its_output(setup):
    """SHAP's local accuracy: a row's interaction values sum to its output less a constant (the trees' expected
    value), so their totals differ between rows as the outputs do (log-odds of P(positive); a regression's
    prediction)."""
    found = interactions(setup, rows=30, seed=1)
    p = len(setup.dataset.groups)
    assert found.method == SHAP_METHOD and found.matrix.shape == (p, p)  # a GBDT: shap's tree explainer reads it
    assert np.allclose(found.matrix, found.matrix.T) and (found.matrix >= 0).all()
    score = setup.model.score(setup.dataset.features.iloc[found.rows])
    output = np.log(score / (1 - score)) if setup.dataset.task == "classification" else score
    totals = found.shap_values.sum(axis=1)
    np.testing.assert_allclose(totals - totals.mean(), output - output.mean(), atol=1e-6 * max(1, np.ptp(output)))
    assert found.pairs().iloc[0, 2] == pytest.approx(np.max(found.matrix - np.diag(np.diag(found.matrix))))


def numeric_feature(setup):
    return next(g for g in setup.dataset.groups if g.kind == "numeric" and not g.is_block)


def test_cohort_comparison_counts_equal_hand_counts(setup):
    group = numeric_feature(setup)
    values = pd.to_numeric(pd.Series(group.values_in(setup.dataset.features.iloc[setup.test_rows])))
    cut = float(values.median())
    cohorts = [Cohort("wrong", (Filter(MISCLASSIFIED, "=", 1),)), Cohort("low", (Filter(group.name, "<", cut),))]
    result = compare_cohorts(setup, cohorts, SEV, budget=2, seed=0, shap_background=None)
    wrong = wrong_by_hand(setup)
    low = (values < cut).to_numpy()
    table = result.table().set_index("cohort")
    assert table.loc["wrong", "test rows"] == wrong.sum() and table.loc["wrong", "error rate"] == 1.0
    assert table.loc["low", "test rows"] == low.sum()
    assert table.loc["low", "error rate"] == pytest.approx(wrong[low].mean())
    assert all(len(s.sampled) == min(2, s.size) and len(s.sev_minus) == len(s.sampled) for s in result.stats)


def test_fairness_groups_equal_hand_counts(setup):
    protected = tuple(setup.dataset.restricted_suggestion[:1])
    group = numeric_feature(setup)
    cut = float(pd.to_numeric(pd.Series(group.values_in(setup.dataset.features))).median())
    low = Cohort("low", (Filter(group.name, "<", cut),))
    report = fairness_report(setup, SEV, protected, [low], sev_budget=2, seed=0)
    predicted = setup.model.labels_of(scored(setup)).astype(int)
    truth = true_classes(setup)
    splits = {s.split: s for s in report.splits}
    assert set(splits) == {*protected, "low"}
    inside = np.isin(setup.test_rows, low.rows(setup))
    assert_split_matches(splits["low"], truth, predicted, np.where(inside, "low", REST))
    for name in protected:
        if not splits[name].binning:  # read by value (a binned numeric feature's bins are tested in test_fairness)
            values = setup.dataset.group(name).values_in(setup.dataset.features.iloc[setup.test_rows])
            assert_split_matches(splits[name], truth, predicted, np.asarray(values, dtype=str))
    assert report.sev_rows == 2 and (report.sev_any is None) == (not protected or report.sev_any is None)


def test_error_tree_leaves_partition_the_test_rows(setup):
    tree = error_tree(setup)
    wrong = wrong_by_hand(setup)
    assert tree.rows == len(setup.test_rows) and tree.errors == wrong.sum()
    rows = [leaf_cohort(tree, leaf.node).rows(setup) for leaf in tree.leaves]
    together = np.concatenate(rows)
    assert len(together) == len(np.unique(together)) and np.array_equal(np.sort(together), np.sort(setup.test_rows))
    for leaf, picked in zip(tree.leaves, rows):
        assert leaf.size == len(picked) and leaf.errors == wrong[np.isin(setup.test_rows, picked)].sum()


def test_threshold_sweep_at_the_current_threshold_is_the_models_confusion(setup):
    sweep = threshold_sweep(setup, points=11)
    predicted, truth = setup.model.labels_of(scored(setup)).astype(bool), true_classes(setup).astype(bool)
    line = sweep.table().loc[setup.model.threshold]
    assert (line.TP, line.FP, line.FN, line.TN) == ((predicted & truth).sum(), (predicted & ~truth).sum(),
                                                    (~predicted & truth).sum(), (~predicted & ~truth).sum())
    if setup.dataset.task == "classification":
        assert line.accuracy == pytest.approx(setup.metrics["test_accuracy"])
    assert (sweep.tp + sweep.fp + sweep.fn + sweep.tn == len(setup.test_rows)).all()
    assert np.all(np.diff(sweep.tp + sweep.fp) <= 0)  # a higher threshold never selects more rows


def test_two_models_disagree_where_their_labels_differ(setup):
    second = demo_setup(setup.dataset.name, "l2_lr")
    compared = compare_models(setup, second)
    frame = setup.dataset.features.iloc[setup.test_rows]
    labels = [s.model.label(frame) for s in (setup, second)]
    assert np.array_equal(compared.disagree, setup.test_rows[labels[0] != labels[1]])
    table = compared.metrics_table()
    for i, s in enumerate((setup, second)):
        assert table[f"model {i + 1}"].to_dict() == {k: float(v) for k, v in s.metrics.items() if k != "test_rows"}
