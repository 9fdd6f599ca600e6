"""The decision threshold (issue 30): ``Setup.with_threshold`` relabels exactly the rows whose score crosses it, keys
every cache anew (and back), re-evaluates the metrics and rebuilds a regression's reference; SEV after it flips at the
new threshold (brute force over the hypercube); ``threshold_sweep``'s counts equal hand counts; an uploaded model
(sandboxed) follows it without being reloaded; a saved analysis restores it."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, precision_score, recall_score
from streamlit.testing.v1 import AppTest

from conftest import bands_frame, visible

from explain_core import demo_model
from explain_core.analysis import SEVParameters, demo_setup, make_setup, row_sev
from explain_core.errors import IntakeError
from explain_core.inspection.performance import model_performance
from explain_core.inspection.threshold import METRICS, threshold_sweep
from explain_core.intake.data import make_dataset
from explain_core.intake.models import wrap_model
from explain_core.intake.sandbox.model import SandboxedModel
from explain_core.intake.trained import TrainedModel
from explain_core.reference import make_reference
from explain_core.results import load_result
from explain_core.saved import AnalysisState, DataRecipe, ModelRecipe, rebuild
from explain_core.setup import Parameters, UploadChoices, model_from_upload


@pytest.fixture(scope="module")
def compas(explain_cache_dir):
    return demo_setup("compas", "gbdt")


@pytest.fixture(scope="module")
def housing(explain_cache_dir):
    return demo_setup("california_housing", "gbdt")


@pytest.fixture(scope="module")
def three_classes():
    """A three-class table and a logistic regression fitted on its columns (one class against the rest)."""
    data = make_dataset(bands_frame(400, seed=0), "band", positive_class="high", name="bands")
    train, test = data.split(0)
    pipe = LogisticRegression(max_iter=2000).fit(data.features.iloc[train], data.target.iloc[train])
    return data, pipe, make_setup(data, TrainedModel(wrap_model(pipe, data), train, test, {}, key="bands",
                                                     source="multiclass LR"))


def all_scores(setup) -> np.ndarray:
    return setup.model.score(setup.dataset.features)


def test_with_threshold_relabels_exactly_the_rows_whose_score_crosses_it(compas):
    scores = all_scores(compas)
    moved = compas.with_threshold(0.3)
    before, after = compas.model.labels_of(scores), moved.model.labels_of(scores)
    assert np.array_equal(after, (scores >= 0.3).astype(int))  # a custom threshold: positive at score ≥ t
    changed = np.flatnonzero(before != after)
    assert len(changed) > 0 and np.all((scores[changed] >= 0.3) & (scores[changed] <= 0.5))
    assert np.array_equal(moved.model.label(compas.dataset.features), after)
    assert moved.model.custom_threshold and moved.restricted == compas.restricted
    test = compas.test_rows
    assert moved.metrics["test_accuracy"] == pytest.approx(np.mean(after[test] == compas.dataset.y[test]))
    assert moved.metrics["test_auc"] == pytest.approx(compas.metrics["test_auc"])  # AUC does not see the threshold
    assert moved.reference == compas.reference  # a classifier's opposite class is the true class


def test_the_key_follows_the_threshold_and_comes_back_with_it(compas):
    moved = compas.with_threshold(0.3)
    assert moved.key != compas.key and moved.model_key != compas.model_key and moved.chosen_threshold == 0.3
    assert moved.with_threshold(0.4).key not in (moved.key, compas.key)
    back = moved.with_threshold(0.4).with_threshold(0.5)
    assert back.key == compas.key and back.model_key == compas.model_key and back.chosen_threshold is None
    assert not back.model.custom_threshold  # the model's own predict again, ties included
    assert back.metrics == compas.metrics
    assert compas.with_threshold(0.5) is compas
    with pytest.raises(IntakeError, match="finite"):
        compas.with_threshold(float("nan"))


def brute_force_minus(setup, query: pd.DataFrame) -> tuple[int, set]:
    """SEV⁻ by scoring every vertex of the hypercube: the fewest groups set to the reference that flip the label
    at the setup's threshold, and every minimal set."""
    groups = setup.dataset.groups
    reference = setup.reference_for(query)
    subsets = [s for k in range(len(groups) + 1) for s in itertools.combinations(range(len(groups)), k)]
    frame = pd.concat([query] * len(subsets), ignore_index=True)
    for i, subset in enumerate(subsets):
        for g in subset:
            for column in groups[g].columns:
                frame.loc[i, column] = reference.values[column]
    labels = setup.model.labels_of(setup.model.score(frame))
    flips = [s for s, label in zip(subsets, labels) if label != labels[0]]
    size = min(len(s) for s in flips)
    return size, {frozenset(groups[g].name for g in s) for s in flips if len(s) == size}


def test_sev_after_with_threshold_flips_at_the_new_threshold(compas):
    moved = compas.with_threshold(0.3)
    scores = all_scores(compas)
    row = int(next(r for r in compas.test_rows if 0.3 <= scores[r] < 0.45))  # negative at 0.5, positive at 0.3
    query = compas.query(row)
    ex = row_sev(moved, query, SEVParameters())
    assert ex.explained_class == 1 and row_sev(compas, query, SEVParameters()).explained_class == 0
    size, sets = brute_force_minus(moved, query)
    assert ex.minus.value == size and {frozenset(e) for e in ex.minus.explanations} == sets
    for explanation in ex.minus.explanations:  # each reached vertex scores below the new threshold
        vertex = query.copy()
        for group in moved.dataset.groups:
            if group.name in explanation:
                for column in group.columns:
                    vertex[column] = moved.reference_for(query).values[column]
        assert moved.model.score(vertex)[0] < 0.3


def test_sweep_counts_equal_hand_counts(compas):
    moved = compas.with_threshold(0.3)
    sweep = threshold_sweep(moved, also=[0.62, 0.5])
    scores = moved.model.score(moved.dataset.features.iloc[moved.test_rows])
    y = moved.dataset.y[moved.test_rows]
    assert 0.3 in sweep.thresholds and 0.62 in sweep.thresholds and len(sweep.thresholds) >= 30
    assert sweep.thresholds.min() == scores.min() and sweep.thresholds.max() == scores.max()
    table = sweep.table()
    for t in (sweep.thresholds[0], sweep.thresholds[7], 0.3, 0.5, 0.62, sweep.thresholds[-1]):
        predicted = scores >= t
        line = table.loc[t]
        assert (line.TP, line.FP, line.FN, line.TN) == (np.sum(predicted & (y == 1)), np.sum(predicted & (y == 0)),
                                                        np.sum(~predicted & (y == 1)), np.sum(~predicted & (y == 0)))
        assert line["selection rate"] == pytest.approx(predicted.mean())
        if predicted.any():
            assert line.precision == pytest.approx(precision_score(y, predicted))
        assert line["recall (TPR)"] == pytest.approx(recall_score(y, predicted))
        assert line.F1 == pytest.approx(f1_score(y, predicted))
        assert line.FPR == pytest.approx(np.mean(predicted[y == 0]))
    assert table.loc[0.3, "accuracy"] == pytest.approx(moved.metrics["test_accuracy"])
    default = threshold_sweep(compas)  # at the model's own threshold: its own labels (ties by predict)
    assert default.table().loc[0.5, "accuracy"] == pytest.approx(compas.metrics["test_accuracy"])
    assert default.confusion(0.5).to_numpy().sum() == len(compas.test_rows)
    assert load_result(sweep.to_json()) == sweep


def test_the_figures_draw_the_sweep(compas):
    from explain_core.views.threshold import sweep_confusion_figure, sweep_figure, sweep_text

    sweep = threshold_sweep(compas, also=(0.3,))
    table = sweep.table()
    fig = sweep_figure(sweep, 0.3)
    assert [t.meta["role"] for t in fig.data] == list(METRICS)
    for trace in fig.data:
        np.testing.assert_allclose(np.asarray(trace.y, dtype=float), table[trace.meta["role"]].to_numpy())
    assert sorted(shape.x0 for shape in fig.layout.shapes) == [0.3, 0.5]  # the chosen and the one in use
    counts = np.asarray(sweep_confusion_figure(sweep, 0.3).data[0].text)
    assert counts[1][1].startswith(f"{int(table.loc[0.3, 'TP']):,}<br>")
    assert f"accuracy {table.loc[0.3, 'accuracy']:.1%}" in sweep_text(sweep, 0.3)


def test_regression_threshold_splits_the_prediction_and_its_reference_follows(housing):
    scores = all_scores(housing)
    t = float(np.sort(scores[housing.test_rows])[int(0.7 * len(housing.test_rows))])  # a test row's own prediction
    moved = housing.with_threshold(t)
    tied = scores == t
    assert tied.any() and np.all(moved.model.labels_of(scores)[tied] == 1)  # a prediction equal to t is positive
    assert np.array_equal(moved.model.labels_of(scores), (scores >= t).astype(int))
    expected = make_reference(housing.dataset, housing.train_rows, threshold=t)
    assert moved.reference.values == expected.values and moved.reference.threshold == t
    assert moved.reference.values != housing.reference.values and moved.key != housing.key
    assert moved.metrics == housing.metrics  # R² and RMSE do not see the threshold
    sweep = threshold_sweep(moved)
    y = housing.dataset.y[housing.test_rows]
    test_scores = scores[housing.test_rows]
    line = sweep.table().loc[t]  # the true class is the target's side of the same threshold
    assert line.TP == np.sum((test_scores >= t) & (y >= t)) and line.TN == np.sum((test_scores < t) & (y < t))
    assert line.TP + line.FP == np.sum(test_scores >= t)  # the tied test row is predicted positive
    assert moved.with_threshold(housing.model.threshold).key == housing.key


def test_regression_target_at_the_threshold_is_of_the_positive_side(explain_cache_dir):
    """Whole grades (student_performance_math): many rows' target equals the median threshold 11; the sweep counts
    them positive, at the model's threshold and at another whole grade, as the model's view of the test rows does."""
    setup = demo_setup("student_performance_math", "l2_lr")
    t, rows = setup.model.threshold, setup.test_rows
    y, scores = setup.dataset.y[rows], setup.model.score(setup.dataset.features.iloc[rows])
    assert t == 11 and np.sum(y == t) > 0
    table = threshold_sweep(setup, also=[9.0]).table()
    for cut in (t, 9.0):
        line = table.loc[cut]
        assert line.TP + line.FN == np.sum(y >= cut)
        assert line.TP == np.sum((scores >= cut) & (y >= cut)) and line.TN == np.sum((scores < cut) & (y < cut))
    assert model_performance(setup).confusion.to_numpy()[1].sum() == np.sum(y >= t)  # true class 1: y ≥ 11


def test_a_multiclass_model_one_against_the_rest(three_classes):
    data, pipe, setup = three_classes
    low = setup.with_positive_class("low").with_threshold(0.2)
    rows = data.features
    p_low = pipe.predict_proba(rows)[:, list(pipe.classes_).index("low")]
    assert np.array_equal(low.model.label(rows), (p_low >= 0.2).astype(int))
    assert low.dataset.positive_class == "low" and low.chosen_threshold == 0.2
    mid = low.with_positive_class("mid")  # another class keeps the chosen threshold
    p_mid = pipe.predict_proba(rows)[:, list(pipe.classes_).index("mid")]
    assert np.array_equal(mid.model.label(rows), (p_mid >= 0.2).astype(int)) and mid.key != low.key


def test_an_uploaded_model_follows_the_threshold_in_its_sandbox(compas):
    data = compas.dataset
    blob = sio.dumps(demo_model(data, "gbdt").model.estimator)
    uploaded = make_setup(data, model_from_upload(data, blob, "gbdt.skops", UploadChoices(threshold=0.4)))
    worker = uploaded.model.estimator
    moved = uploaded.with_threshold(0.3)
    assert moved.model.estimator is worker and isinstance(worker, SandboxedModel)  # not loaded again
    assert np.array_equal(moved.model.label(data.features), compas.with_threshold(0.3).model.label(data.features))
    assert moved.key != uploaded.key and moved.with_threshold(0.4).key == uploaded.key
    default = uploaded.with_threshold(0.5)  # the model's own predict, but not the key of the upload at 0.4
    assert not default.model.custom_threshold and default.key not in (uploaded.key, moved.key)
    assert np.array_equal(default.model.label(data.features), compas.model.label(data.features))


def test_a_saved_analysis_restores_the_threshold(compas):
    moved = compas.with_threshold(0.35)
    state = AnalysisState.of(moved, DataRecipe(demo="compas"), ModelRecipe("demo", "gbdt"), parameters=Parameters(),
                             row=3)
    restored = rebuild(AnalysisState.from_json(state.to_json()), {})
    assert restored.setup.model.threshold == 0.35 and restored.setup.key == moved.key
    plain = AnalysisState.of(compas, DataRecipe(demo="compas"), ModelRecipe("demo", "gbdt"), parameters=Parameters(),
                             row=3)
    assert plain.threshold is None and rebuild(plain, {}).setup.key == compas.key


# --- the app (AppTest) ----------------------------------------------------------------------------------------------

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def open_model_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/model_view.py").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return at


def test_the_model_page_applies_the_threshold_to_every_page_and_a_reload_keeps_it(compas):
    at = open_model_page()
    at.number_input(key=f"mt_threshold_{compas.key}").set_value(0.3).run()
    shown = {m.label: m.value for m in at.metric}
    expected = threshold_sweep(compas, also=(0.3,)).at(0.3)
    assert shown["accuracy"] == f"{expected['accuracy']:.3f}" and shown["FPR"] == f"{expected['FPR']:.3f}"
    assert at.session_state["setup"].key == compas.key  # nothing changes until applied
    at.button(key=f"mt_apply_{compas.key}").click().run()
    moved = compas.with_threshold(0.3)
    assert at.session_state["setup"].key == moved.key and not at.exception
    scores = all_scores(compas)
    row = int(next(r for r in compas.test_rows if 0.3 <= scores[r] < 0.5))  # positive only at the new threshold
    at.session_state["row"] = row
    at.switch_page("app_pages/sev.py").run()
    banner = visible(at.info[0].value)
    assert f"predicted **{compas.dataset.class_name(1)}** at the threshold 0.3" in banner, banner
    assert row_sev(moved, compas.query(row), SEVParameters()).explained_class == 1
    at.switch_page("app_pages/pick_row.py").run()
    at.segmented_control(key="pick_predicted").set_value("all").run()
    listed = at.dataframe[0].value
    labels = moved.model.labels_of(scores[list(listed.index)])
    assert list(listed["predicted"]) == [moved.dataset.class_name(int(v), short=True) for v in labels]  # its words
    token = at.query_params["session"][0] if isinstance(at.query_params["session"], list) \
        else at.query_params["session"]
    again = AppTest.from_file(APP, default_timeout=120)
    again.query_params["session"] = token
    again.run()
    assert again.session_state["setup"].key == moved.key and again.session_state["setup"].model.threshold == 0.3
    again.switch_page("app_pages/model_view.py").run()
    again.button(key=f"mt_reset_{moved.key}").click().run()
    assert again.session_state["setup"].key == compas.key


def test_a_regression_threshold_applied_on_the_model_page(housing):
    at = open_model_page()
    at.session_state["setup"] = housing
    at.session_state["row"] = int(housing.test_rows[0])
    at.run()
    t = float(np.quantile(all_scores(housing), 0.7))
    at.number_input(key=f"mt_threshold_{housing.key}").set_value(t).run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    at.button(key=f"mt_apply_{housing.key}").click().run()
    moved = at.session_state["setup"]
    assert moved.key == housing.with_threshold(t).key and moved.chosen_threshold == t
    at.switch_page("app_pages/sev.py").run()
    score = housing.model.score(housing.query(int(housing.test_rows[0])))[0]
    side = "at or above" if score >= moved.model.threshold else "below"
    assert f"**{side}** the threshold" in visible(at.info[0].value) and not at.exception
