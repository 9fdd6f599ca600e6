"""Fairness group metrics (fairlearn's MetricFrame) and the two differences against numpy hand counts, on a small
frame and on a demo; the protected features' share of the SEV explanations against each row's own SEV."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference

from explain_core import IntakeError
from explain_core.analysis import Parameters, demo_setup, row_sev
from explain_core.inspection.filters import Cohort, Filter
from explain_core.inspection.fairness import REST, fairness_report, group_split
from explain_core.results import load_result
from explain_core.views.cohorts import fairness_text

SEV = Parameters().sev


def by_hand(y_true, y_pred, groups) -> pd.DataFrame:
    rows = []
    for g in sorted(set(groups)):
        t, p = y_true[groups == g], y_pred[groups == g]
        pos, neg = (t == 1).sum(), (t == 0).sum()
        rows.append({"group": g, "count": len(t), "selection rate": p.mean(),
                     "TPR": ((p == 1) & (t == 1)).sum() / pos if pos else 0.0,  # fairlearn's 0 for no positives
                     "FPR": ((p == 1) & (t == 0)).sum() / neg if neg else 0.0, "accuracy": (p == t).mean()})
    return pd.DataFrame(rows)


def assert_split_matches(split, y_true, y_pred, groups):
    want = by_hand(np.asarray(y_true), np.asarray(y_pred), np.asarray(groups, dtype=str))
    got = split.groups.sort_values("group").reset_index(drop=True)
    assert list(got["group"]) == list(want["group"])
    for column in ("count", "selection rate", "TPR", "FPR", "accuracy"):
        np.testing.assert_allclose(got[column].to_numpy(dtype=float), want[column].to_numpy(dtype=float),
                                   err_msg=column)
    assert split.parity_difference == pytest.approx(want["selection rate"].max() - want["selection rate"].min())
    odds = max(want["TPR"].max() - want["TPR"].min(), want["FPR"].max() - want["FPR"].min())
    assert split.odds_difference == pytest.approx(odds)
    groups = np.asarray(groups, dtype=str)  # and fairlearn's own functions agree
    assert split.parity_difference == pytest.approx(demographic_parity_difference(y_true, y_pred,
                                                                                  sensitive_features=groups))
    assert split.odds_difference == pytest.approx(equalized_odds_difference(y_true, y_pred, sensitive_features=groups))


def test_group_metrics_on_a_small_frame_equal_hand_counts():
    y_true = np.array([1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0])
    y_pred = np.array([1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1])
    groups = np.array(list("aaaabbbbcccc"))
    split = group_split(y_true, y_pred, groups, "g", "protected")
    assert_split_matches(split, y_true, y_pred, groups)
    # by hand, group a: 4 rows, 3 selected, TPR 2/3, FPR 1/1; group b: TPR 1/1, FPR 0/3
    a = split.groups.set_index("group").loc["a"]
    assert (a["count"], a["selection rate"], a["TPR"], a["FPR"]) == (4, 0.75, pytest.approx(2 / 3), 1.0)


@pytest.fixture(scope="module")
def compas():
    return demo_setup("compas", "gbdt")


def test_a_demo_per_protected_feature_and_cohort_equals_hand_counts(compas):
    young = Cohort("young", (Filter("age", "<", 25),))
    report = fairness_report(compas, SEV, ["sex", "age"], [young], sev_budget=20, seed=1)
    test = compas.test_rows
    frame = compas.dataset.features.iloc[test]
    y_true, y_pred = compas.dataset.y[test], compas.model.estimator.predict(frame).astype(int)
    sex, age, cohort = report.splits
    assert_split_matches(sex, y_true, y_pred, frame.sex.to_numpy())
    edges = np.quantile(frame.age, [0, 0.25, 0.5, 0.75, 1])  # quartiles: each bin holds its upper end
    quartile = np.searchsorted(edges[1:-1], frame.age.to_numpy(), side="left")
    assert_split_matches(age, y_true, y_pred, np.array([age.groups["group"].sort_values().iloc[q]
                                                        for q in quartile]))
    assert sorted(age.groups["count"]) == sorted(np.bincount(quartile))
    assert "quantile bins" in age.binning
    assert_split_matches(cohort, y_true, y_pred, np.where(frame.age < 25, "young", REST))
    assert load_result(report.to_json()) == report
    assert list(report.differences()["split"]) == ["sex", "age", "young"]


def test_the_protected_share_of_sev_explanations_equals_each_rows_own(compas):
    report = fairness_report(compas, SEV, ["sex", "age"], sev_budget=15, seed=2)
    sample = np.sort(np.random.default_rng(2).choice(compas.test_rows, 15, replace=False))
    results = [row_sev(compas.with_restricted(()), compas.query(r), SEV).minus for r in sample]
    explained = [r for r in results if r.explainable]
    uses = [[bool({"sex", "age"} & set(e)) for e in r.explanations] for r in explained]
    assert report.sev_rows == 15
    assert report.sev_any == pytest.approx(np.mean([any(u) for u in uses]))
    assert report.sev_all == pytest.approx(np.mean([all(u) for u in uses]))
    assert "sampled test rows" in fairness_text(report)


def test_defaults_bad_names_and_a_regression(compas):
    assert fairness_report(compas, SEV, sev_budget=5).protected == ("sex", "age")  # the data card's suggestion
    with pytest.raises(IntakeError, match="Unknown feature group 'race'"):
        fairness_report(compas, SEV, ["race"])
    housing = demo_setup("california_housing", "gbdt")
    empty = fairness_report(housing, SEV, sev_budget=5)
    assert empty.splits == () and empty.sev_any is None and "No protected feature" in fairness_text(empty)
    report = fairness_report(housing, SEV, ["housing_median_age"], sev_budget=5)
    test = housing.test_rows
    frame = housing.dataset.features.iloc[test]
    threshold = housing.model.threshold  # read at or above / below the model's threshold
    y_true = (housing.dataset.y[test] >= threshold).astype(int)
    y_pred = (housing.model.estimator.predict(frame) >= threshold).astype(int)
    split = report.splits[0]
    assert split.groups["count"].sum() == len(test) and report.outcome == "at or above / below the model's threshold"
    labels = np.empty(len(test), dtype=object)
    for group in sorted(split.groups["group"], key=lambda g: float(g.split("–")[1])):  # each bin holds its upper end
        labels[(frame.housing_median_age <= float(group.split("–")[1])).to_numpy() & pd.isna(labels)] = group
    assert_split_matches(split, y_true, y_pred, labels)


def test_a_regression_target_at_the_threshold_is_positive():
    """Whole grades (student_performance_math): the rows whose grade equals the median threshold 11 count in the
    positive class, and so does a prediction equal to a chosen threshold."""
    base = demo_setup("student_performance_math", "l2_lr")
    test = base.test_rows
    scores = base.model.score(base.dataset.features.iloc[test])
    assert base.model.threshold == 11 and np.any(base.dataset.y[test] == 11)
    for setup in (base, base.with_threshold(float(np.sort(scores)[len(scores) // 2]))):
        t, y = setup.model.threshold, setup.dataset.y[test]
        assert np.any(y == t) or np.any(scores == t)
        split = fairness_report(setup, SEV, ["sex"], sev_budget=2).splits[0]
        sex = setup.dataset.features["sex"].iloc[test].astype(str).to_numpy()
        assert_split_matches(split, (y >= t).astype(int), (scores >= t).astype(int), sex)
