"""Two models side by side (issue 30): metrics, the rows where the predicted labels disagree (counted by hand from
each model's own labels), one row's SEV and SHAP under each (the methods run on each setup alone), on binary,
multiclass one-vs-rest, regression and an uploaded (sandboxed) second model; another dataset or split is refused."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression
from streamlit.testing.v1 import AppTest

from conftest import bands_frame, visible

from explain_core import demo_model
from explain_core.analysis import Parameters, demo_setup, make_setup, row_sev, trained_setup
from explain_core.baselines import explain_shap
from explain_core.errors import IntakeError
from explain_core.inspection.two_models import aligned_second, compare_models
from explain_core.intake.data import make_dataset
from explain_core.intake.models import wrap_model
from explain_core.intake.sandbox.model import SandboxedModel
from explain_core.intake.trained import TrainedModel
from explain_core.results import load_result
from explain_core.saved import AnalysisState, DataRecipe, FileRef, ModelRecipe, rebuild
from explain_core.setup import model_from_upload


@pytest.fixture(scope="module")
def compas(explain_cache_dir):
    return demo_setup("compas", "gbdt"), demo_setup("compas", "l2_lr")


def hand_disagreements(first, second) -> np.ndarray:
    frame = first.dataset.features.iloc[first.test_rows]
    return first.test_rows[first.model.label(frame) != second.model.label(frame)]


def test_two_binary_models_on_the_same_rows(compas):
    first, second = compas
    row = int(hand_disagreements(first, second)[0])
    compared = compare_models(first, second, row)
    expected = hand_disagreements(first, second)
    assert np.array_equal(compared.disagree, expected) and len(expected) > 0
    assert compared.disagreement_share == pytest.approx(len(expected) / len(first.test_rows))
    table = compared.disagreements()
    assert list(table.index) == list(expected) and table.iloc[:, 1].iloc[0] != table.iloc[:, 3].iloc[0]
    assert compared.metrics_table().loc["test_accuracy"].tolist() == [first.metrics["test_accuracy"],
                                                                       second.metrics["test_accuracy"]]
    query = first.query(row)
    for ex, shap, setup in zip(compared.sev, compared.shap, (first, second)):
        alone = row_sev(setup, query, Parameters())
        assert (ex.minus.value, ex.minus.explanations, ex.explained_class) == \
            (alone.minus.value, alone.minus.explanations, alone.explained_class)
        alone_shap = explain_shap(setup.model, setup.dataset, query, setup.train_rows)
        np.testing.assert_allclose(shap.values, alone_shap.values)
    assert compared.sev[0].explained_class != compared.sev[1].explained_class  # a row they disagree on
    assert compared.row_table().shape == (len(first.dataset.groups), 4)
    assert load_result(compared.to_json()) == compared


def test_another_dataset_or_split_is_refused(compas):
    first, _ = compas
    with pytest.raises(IntakeError, match="not fitted on this dataset"):
        compare_models(first, demo_setup("german_credit", "l2_lr"))
    with pytest.raises(IntakeError, match="another train/test split"):
        compare_models(first, trained_setup(first.dataset, "l2_lr", seed=1))


def test_a_multiclass_second_model_is_explained_for_the_same_class():
    data = make_dataset(bands_frame(300, seed=1), "band", positive_class="high", name="bands")
    train, test = data.split(0)
    setups = []
    for c in (1.0, 0.01):
        lr = LogisticRegression(C=c, max_iter=2000).fit(data.features.iloc[train], data.target.iloc[train])
        setups.append((lr, make_setup(data, TrainedModel(wrap_model(lr, data), train, test, {"test_rows": "split"},
                                                         key=f"lr{c}"))))
    first = setups[0][1].with_positive_class("low")
    second = aligned_second(first, setups[1][1])
    p_low = setups[1][0].predict_proba(data.features)[:, list(setups[1][0].classes_).index("low")]
    np.testing.assert_allclose(second.model.score(data.features), p_low)
    compared = compare_models(first, setups[1][1])
    assert np.array_equal(compared.disagree, hand_disagreements(first, second))


def test_two_regressions_split_at_the_first_models_threshold(explain_cache_dir):
    first, second = demo_setup("california_housing", "gbdt"), demo_setup("california_housing", "l2_lr")
    compared = compare_models(first, second)
    frame = first.dataset.features.iloc[first.test_rows]
    assert np.array_equal(compared.disagree, hand_disagreements(first, second))
    assert np.array_equal(compared.truth, (first.dataset.y[first.test_rows] >= first.model.threshold).astype(int))
    np.testing.assert_allclose(compared.scores[1], second.model.score(frame))
    assert "test_r2" in compared.metrics_table().index


def test_an_uploaded_second_model_runs_in_its_sandbox(compas):
    first, local = compas
    data = first.dataset
    blob = sio.dumps(demo_model(data, "l2_lr").model.estimator)
    uploaded = make_setup(data, model_from_upload(data, blob, "lr.skops"))
    assert isinstance(uploaded.model.estimator, SandboxedModel)
    compared = compare_models(first, uploaded, int(first.test_rows[0]))
    assert np.array_equal(compared.disagree, hand_disagreements(first, local))
    assert compared.sev[1].minus.explanations == row_sev(local, first.query(int(first.test_rows[0])),
                                                         Parameters()).minus.explanations
    file = FileRef.of(blob, "lr.skops")  # a saved analysis keeps the second model's file and restores it the same way
    state = AnalysisState.of(first, DataRecipe(demo="compas"), ModelRecipe("demo", "gbdt"), parameters=Parameters(),
                             row=0, second=ModelRecipe("file", file=file))
    restored = rebuild(AnalysisState.from_json(state.to_json()), {file.sha256: blob})
    assert restored.setup.key == first.key and restored.second.key == uploaded.key
    assert isinstance(restored.second.model.estimator, SandboxedModel) and file in state.files


# --- the app (AppTest) ----------------------------------------------------------------------------------------------

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_the_second_model_on_the_model_page_and_on_compare(compas):
    first, second = compas
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.switch_page("app_pages/model_view.py").run()
    at.radio(key="second_source").set_value("demo")
    at.selectbox(key="second_kind").set_value("l2_lr")
    at.button(key=f"FormSubmitter:second_form_{first.key}-Use as the second model").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    expected = hand_disagreements(first, second)
    assert at.session_state["second_model"][1].key == second.key
    assert any(list(d.value.index) == list(expected) for d in at.dataframe)
    text = " ".join(visible(m.value) for m in at.markdown)
    assert f"They predict differently on **{len(expected):,}** of the {len(first.test_rows):,} test rows" in text
    row = int(expected[0])
    at.session_state["row"] = row
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, at.exception
    text = " ".join(visible(m.value) for m in at.markdown)
    for i, setup in enumerate((first, second)):
        ex = row_sev(setup, first.query(row), Parameters())
        assert (f"Model {i + 1} (**{setup.model.name}**) predicts **{setup.class_names[ex.explained_class]}**"
                in text), text
        assert f"SEV⁻ = {ex.minus.shown}, moving {', '.join(ex.minus.explanations[0])}." in text, text
    at.switch_page("app_pages/report.py").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert "a second model beside this one" in " ".join(visible(m.value) for m in at.markdown)
    token = at.query_params["session"]
    again = AppTest.from_file(APP, default_timeout=180)
    again.query_params["session"] = token[0] if isinstance(token, list) else token
    again.run()  # a reload: the second model comes back from the saved analysis's recipe
    assert not again.exception and again.session_state["second_model"][1].key == second.key
    assert again.session_state["second_model"][0] == first.key


def test_the_pdf_names_the_moved_threshold_and_the_second_model(compas):
    import io

    from pypdf import PdfReader

    from explain_core.report import RowResults, build_row_report, write_pdf

    first, second = compas
    moved = first.with_threshold(0.3)
    row = int(hand_disagreements(moved, second)[0])
    report = build_row_report(RowResults(moved, row, Parameters(), supply={"second": second}), ("sev",))
    text = " ".join(" ".join(p.extract_text() for p in PdfReader(io.BytesIO(
        write_pdf(report, image_renderer="matplotlib"))).pages).split())
    assert "Decision threshold 0.3, chosen on The model page (the model's own: 0.5)" in text, text[:3000]
    predicted = moved.model.label(moved.dataset.features.iloc[moved.test_rows]) == 1
    truth = moved.dataset.y[moved.test_rows] == 1
    counts = [(predicted & truth).sum(), (predicted & ~truth).sum(), (~predicted & truth).sum(),
              (~predicted & ~truth).sum()]
    assert ("{:,} true positives, {:,} false positives, {:,} false negatives, {:,} true negatives".format(*counts)
            in text), text[:3000]
    compared = compare_models(moved, second, row)
    assert (f"predict differently on {len(compared.disagree):,} of the {len(moved.test_rows):,} test rows"
            in text), text[:3000]
    assert f"test_accuracy {moved.metrics['test_accuracy']:.4f} {second.metrics['test_accuracy']:.4f}" in text
    plain = build_row_report(RowResults(first, row, Parameters()), ("sev",))
    assert plain.models is None and "chosen on The model page" not in " ".join(
        p.extract_text() for p in PdfReader(io.BytesIO(write_pdf(plain, image_renderer="matplotlib"))).pages)


def test_a_saved_second_model_that_no_longer_fits_is_left_out(compas):
    first, _ = compas
    state = AnalysisState.of(first, DataRecipe(demo="compas"), ModelRecipe("demo", "gbdt"), parameters=Parameters(),
                             row=0, second=ModelRecipe("trained", "l2_lr", seed=1))  # another split: refused
    restored = rebuild(AnalysisState.from_json(state.to_json()), {})
    assert restored.setup.key == first.key and restored.second is None
    kept = AnalysisState.of(first, DataRecipe(demo="compas"), ModelRecipe("demo", "gbdt"), parameters=Parameters(),
                            row=0, second=ModelRecipe("demo", "l2_lr"))
    assert rebuild(kept, {}).second.key == compas[1].key
