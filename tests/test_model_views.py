"""The model and global views: their numbers are scikit-learn's and shap's own, and the page draws them."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import average_precision_score, confusion_matrix, roc_auc_score
from streamlit.testing.v1 import AppTest

from explain_core.analysis import Parameters, demo_setup, row_baselines
from explain_core.inspection.global_shap import global_shap, group_values
from explain_core.inspection.performance import model_performance
from explain_core.views.global_shap import importance_figure
from explain_core.views.model import roc_figure

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(scope="module")
def demo(explain_cache_dir):
    return demo_setup()


def test_performance_numbers_equal_sklearn(demo):
    perf = model_performance(demo)
    rows = demo.test_rows
    y, scores = demo.dataset.y[rows], demo.model.score(demo.dataset.features.iloc[rows])
    assert perf.auc == pytest.approx(roc_auc_score(y, scores))
    assert perf.auc == pytest.approx(demo.metrics["test_auc"])
    assert perf.average_precision == pytest.approx(average_precision_score(y, scores))
    assert (perf.confusion.to_numpy() == confusion_matrix(y, scores > demo.model.threshold)).all()
    observed, predicted = calibration_curve(y, scores, n_bins=10)
    assert np.allclose(perf.calibration["observed"], observed) and np.allclose(perf.calibration["predicted"], predicted)
    assert perf.balance["test"].tolist() == np.bincount(y, minlength=2).tolist()
    assert perf.balance["train"].tolist() == np.bincount(demo.dataset.y[demo.train_rows], minlength=2).tolist()
    point = next(t for t in roc_figure(perf).data if t.meta and t.meta["role"] == "operating_point")
    (tn, fp), (fn, tp) = confusion_matrix(y, scores > demo.model.threshold)
    assert (point.x[0], point.y[0]) == pytest.approx((fp / (fp + tn), tp / (tp + fn)))


def test_regression_is_read_against_the_threshold(explain_cache_dir):
    setup = demo_setup("student_performance_math", "gbdt")
    perf = model_performance(setup)
    truth = setup.dataset.y[setup.test_rows]
    assert np.any(truth == setup.model.threshold)  # whole grades at the median: a grade equal to it is positive
    assert perf.y.tolist() == (truth >= setup.model.threshold).astype(int).tolist()
    assert perf.calibration is None and len(perf.values) == len(truth)


def test_global_shap_equals_each_rows_shap(demo):
    gs = global_shap(demo, rows=30, seed=0, background=100)
    for i in (0, 7, 29):
        one = row_baselines(demo, demo.query(int(gs.rows[i])), Parameters(shap_background=100)).shap
        assert np.allclose(gs.values[i], one.values, atol=1e-9) and gs.base_value == pytest.approx(one.base_value)
    imp = gs.importance()
    assert np.allclose(imp[list(demo.dataset.group_names)], np.abs(gs.values).mean(axis=0))
    bars = importance_figure(gs).data[0]
    assert list(bars.y) == list(imp.index) and np.allclose(bars.x, imp.to_numpy())
    assert list(group_values(demo, gs.rows)["age"]) == list(demo.dataset.features["age"].iloc[gs.rows])


def test_model_page_draws_the_views():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/model_view.py").run()
    at.toggle(key="mv_global").set_value(True).run()
    assert not at.exception and not at.error
    roles = {t.get("meta", {}).get("role") for c in at.get("plotly_chart") for t in json.loads(c.proto.spec)["data"]}
    assert {"roc", "pr", "confusion", "calibration", "balance", "importance", "prevalence", "beeswarm",
            "dependence"} <= roles
