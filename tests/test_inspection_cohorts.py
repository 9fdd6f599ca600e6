"""Cohorts (filters, comparison), the error tree and cohorts in saved analyses, each checked against a hand count:
pandas masks, the demo estimator's own predictions, scikit-learn's AUC and a tree refitted here."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.tree import DecisionTreeClassifier

from conftest import bands_frame
from explain_core import IntakeError
from explain_core.analysis import Parameters, demo_setup, row_sev
from explain_core.inspection.cohorts import compare_cohorts
from explain_core.inspection.filters import MISCLASSIFIED, PREDICTED, TRUE_CLASS, Cohort, Filter, fitting
from explain_core.inspection.errors import error_tree, leaf_cohort, tree_inputs
from explain_core.intake.data import make_dataset
from explain_core.intake.layout import TableChoices
from explain_core.intake.models import wrap_model
from explain_core.intake.trained import TrainedModel
from explain_core.results import load_result
from explain_core.saved import AnalysisState, DataRecipe, ModelRecipe, SavedStore, new_token, rebuild
from explain_core.setup import make_setup, model_from_upload

SEV = Parameters().sev


@pytest.fixture(scope="module")
def compas():
    return demo_setup("compas", "gbdt")


def wrong_by_hand(setup) -> np.ndarray:
    """Misclassified test rows from the fitted estimator itself (not the adapter's labelling)."""
    X = setup.dataset.features.iloc[setup.test_rows]
    return setup.model.estimator.predict(X).astype(int) != setup.dataset.y[setup.test_rows]


def test_filters_select_the_rows_pandas_selects(compas):
    X, test = compas.dataset.features, compas.test_rows
    frame = X.iloc[test]
    wrong = wrong_by_hand(compas)
    predicted = compas.model.estimator.predict(frame).astype(int)
    cases = [(Filter("age", "<", 25), frame.age < 25), (Filter("age", "between", [25, 30]), frame.age.between(25, 30)),
             (Filter("prior_offense_count", ">=", 3), frame.prior_offense_count >= 3),
             (Filter("sex", "=", "Female"), frame.sex == "Female"),
             (Filter("sex", "not in", ("Female",)), frame.sex != "Female"),
             (Filter(MISCLASSIFIED, "=", 1), wrong), (Filter(PREDICTED, "=", 0), predicted == 0),
             (Filter(TRUE_CLASS, "=", 1), compas.dataset.y[test] == 1)]
    for f, want in cases:
        assert np.array_equal(Cohort("c", (f,)).rows(compas), test[np.asarray(want)]), f
    both = Cohort("young women wrong", (Filter("age", "<", 25), Filter("sex", "=", "Female"),
                                        Filter(MISCLASSIFIED, "=", 1)))
    assert np.array_equal(both.rows(compas), test[np.asarray((frame.age < 25) & (frame.sex == "Female")) & wrong])
    assert both.text(compas) == "age < 25 and sex = Female and misclassified"
    assert len(Cohort("all").rows(compas)) == len(test)


@pytest.mark.parametrize("bad, words", [
    (Filter("height", "<", 3), "not a feature"), (Filter("age", "in", (3,)), "numeric feature age"),
    (Filter("age", "<", "old"), "needs a number"), (Filter("age", "between", (40, 20)), "low ≤ high"),
    (Filter("sex", "=", "Other"), "no value Other"), (Filter("sex", "<", "Male"), "comparison for the feature sex"),
    (Filter(MISCLASSIFIED, "=", 2), "misclassified"), (Filter("sex", "in", ()), "at least one value")])
def test_a_bad_filter_is_an_intake_error_saying_what_to_change(compas, bad, words):
    with pytest.raises(IntakeError, match=words):
        Cohort("bad", (bad,)).rows(compas)
    assert fitting([Cohort("bad", (bad,)), Cohort("ok")], compas.dataset) == (Cohort("ok"),)


def test_a_filter_read_from_text_is_the_structured_one(compas):
    from explain_core.inspection.filters import parse_filter

    cases = {"age < 25": Filter("age", "<", 25.0), "age ≥ 60": Filter("age", ">=", 60.0),
             "age between 18 and 25": Filter("age", "between", (18.0, 25.0)),
             "sex = Female": Filter("sex", "=", "Female"), "sex = female": Filter("sex", "=", "Female"),
             "sex in Female, Male": Filter("sex", "in", ("Female", "Male")),
             "misclassified": Filter(MISCLASSIFIED, "=", 1), "correctly classified": Filter(MISCLASSIFIED, "=", 0),
             "predicted 1": Filter(PREDICTED, "=", 1), "true class 0": Filter(TRUE_CLASS, "=", 0)}
    for text, want in cases.items():
        assert parse_filter(text, compas.dataset) == want, text
    for text, words in (("age < old", "needs a number"), ("height > 3", "not a feature"), ("hello", "not a filter")):
        with pytest.raises(IntakeError, match=words):
            parse_filter(text, compas.dataset)


def test_a_one_hot_block_is_filtered_by_its_level_names():
    rng = np.random.default_rng(1)
    pet = rng.choice(["pet_cat", "pet_dog", "none"], 200)
    frame = pd.DataFrame({"x": rng.normal(size=200), "pet_cat": (pet == "pet_cat").astype(int),
                          "pet_dog": (pet == "pet_dog").astype(int)})
    frame["y"] = (frame.x + frame.pet_cat > 0.5).astype(int)
    data = make_dataset(frame, "y", choices=TableChoices(onehot_groups={"pet": ["pet_cat", "pet_dog"]}))
    setup = make_setup(data, TrainedModel(wrap_model(DecisionTreeClassifier(max_depth=2).fit(
        data.features, data.y), data), np.arange(100), np.arange(100, 200), {}, key="pets", source="tree"))
    for level in ("pet_cat", "pet_dog", "none"):
        rows = Cohort("c", (Filter("pet", "=", level),)).rows(setup)
        assert np.array_equal(rows, np.arange(100, 200)[pet[100:] == level])


def test_the_comparison_counts_match_a_hand_count(compas):
    test = compas.test_rows
    young = Cohort("young", (Filter("age", "<", 25),))
    recid = Cohort("recidivated", (Filter(TRUE_CLASS, "=", 1),))
    result = compare_cohorts(compas, [young, recid], SEV, budget=25, seed=3)
    frame = compas.dataset.features.iloc[test]
    inside = np.asarray(frame.age < 25)
    proba = compas.model.estimator.predict_proba(frame)[:, 1]
    stats = result.stats[0]
    assert stats.size == inside.sum()
    assert stats.accuracy == pytest.approx(1 - wrong_by_hand(compas)[inside].mean())
    assert stats.auc == pytest.approx(roc_auc_score(compas.dataset.y[test][inside], proba[inside]))
    assert result.stats[1].auc is None  # one class only
    assert len(stats.sampled) == 25 and set(stats.sampled) <= set(test[inside])
    by_row = [row_sev(compas, compas.query(r), SEV).minus for r in stats.sampled]
    assert list(stats.sev_minus) == [r.value if r.explainable else None for r in by_row]
    uses_age = np.mean([any("age" in e for e in r.explanations) for r in by_row if r.explainable])
    assert stats.prevalence["age"] == pytest.approx(uses_age)
    assert stats.unexplainable == pytest.approx(np.mean([not r.explainable for r in by_row]))
    assert set(stats.shap) == set(compas.dataset.group_names) and all(v >= 0 for v in stats.shap.values())
    again = compare_cohorts(compas, [young, recid], SEV, budget=25, seed=3)
    assert again == result and load_result(result.to_json()) == result
    assert list(result.table()["test rows"]) == [inside.sum(), int((compas.dataset.y[test] == 1).sum())]


def refitted_leaves(setup, tree):
    """The error tree refitted here on the same inputs: each test row's leaf."""
    rows = setup.test_rows
    X, _ = tree_inputs(setup, rows)
    from explain_core.inspection.filters import model_outcome
    fitted = DecisionTreeClassifier(max_depth=tree.max_depth, min_samples_leaf=tree.min_samples_leaf,
                                    random_state=tree.seed).fit(X, model_outcome(setup, rows).wrong)
    return fitted.apply(X)


@pytest.mark.parametrize("name", ["compas", "credit_approval", "california_housing"])
def test_each_leaf_is_a_cohort_of_exactly_its_rows_with_its_error_rate(name):
    setup = demo_setup(name, "gbdt")
    tree = error_tree(setup)
    test = setup.test_rows
    if setup.dataset.task == "classification":
        wrong = wrong_by_hand(setup)
    else:  # an error in the largest fifth of the test rows' absolute errors
        residual = np.abs(setup.dataset.y[test] - setup.model.estimator.predict(setup.dataset.features.iloc[test]))
        wrong = residual > np.quantile(residual, 0.8)
    assert tree.errors == wrong.sum() and sum(leaf.size for leaf in tree.leaves) == len(test)
    reached = refitted_leaves(setup, tree)
    for leaf in tree.leaves:
        rows = leaf_cohort(tree, leaf.node).rows(setup)
        assert np.array_equal(rows, test[reached == leaf.node]), leaf.rule
        picked = np.isin(test, rows)
        assert leaf.errors == wrong[picked].sum()
        assert leaf.error_rate == pytest.approx(wrong[picked].mean())
        assert leaf.error_share == pytest.approx(wrong[picked].sum() / wrong.sum())
    assert [leaf.error_rate for leaf in tree.leaves] == sorted((leaf.error_rate for leaf in tree.leaves),
                                                               reverse=True)
    assert load_result(tree.to_json()) == tree
    if name == "credit_approval":  # numeric values are missing there: the rules say where they go
        assert any(f.missing for leaf in tree.leaves for f in leaf.filters)


def test_cohorts_are_saved_and_come_back(compas, tmp_path):
    cohorts = (Cohort("young", (Filter("age", "between", (18, 25)), Filter(MISCLASSIFIED, "=", 1))),
               Cohort("women", (Filter("sex", "in", ["Female"]),)))
    state = AnalysisState.of(compas, DataRecipe(demo="compas"), ModelRecipe("demo", "gbdt"), parameters=Parameters(),
                             row=3, cohorts=cohorts)
    store, token = SavedStore(tmp_path), new_token()
    store.save_session(token, state.to_json(), {})
    restored = rebuild(AnalysisState.from_json(SavedStore(tmp_path).open_session(token).state), {})
    assert restored.cohorts == cohorts
    assert [len(c.rows(restored.setup)) for c in restored.cohorts] == [len(c.rows(compas)) for c in cohorts]
    edited = state.to_json().replace('"feature": "sex"', '"feature": "gender"')
    with pytest.raises(IntakeError, match="gender"):
        rebuild(AnalysisState.from_json(edited), {})


@pytest.mark.slow
def test_an_uploaded_multiclass_model_one_vs_rest():
    """A three-class skops file through the sandboxed worker, explained for "mid" against the rest."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    frame = bands_frame(300, seed=0)
    model = LogisticRegression(max_iter=2000).fit(frame[["income", "debt"]], frame["band"])
    data = make_dataset(pd.read_csv(io.BytesIO(frame.to_csv(index=False).encode())), "band",
                        task="classification", positive_class="high")
    setup = make_setup(data, model_from_upload(data, sio.dumps(model), "bands.skops")).with_positive_class("mid")
    test = setup.test_rows
    is_mid = model.predict(frame.iloc[test][["income", "debt"]]) == "mid"
    wrong = is_mid != (frame.band.iloc[test] == "mid").to_numpy()
    result = compare_cohorts(setup, [Cohort("all")], SEV, budget=10)
    assert result.stats[0].accuracy == pytest.approx(1 - wrong.mean())
    tree = error_tree(setup)
    assert tree.errors == wrong.sum()
    from explain_core.inspection.fairness import fairness_report
    rich = Cohort("rich", (Filter("income", ">", 50),))
    split = fairness_report(setup, SEV, [], [rich], sev_budget=5).splits[0]
    inside = (frame.income.iloc[test] > 50).to_numpy()
    rates = split.groups.set_index("group")["selection rate"]
    assert rates["rich"] == pytest.approx(is_mid[inside].mean()) and split.groups["count"].sum() == len(test)


def test_the_figures_draw_the_results_numbers_and_readings_lead_with_them(compas):
    from explain_core.views.cohorts import comparison_figure, comparison_text, error_tree_figure, error_tree_text
    from explain_core.views.style import contrast

    young = Cohort("young", (Filter("age", "<", 25),))
    result = compare_cohorts(compas, [Cohort("all"), young], SEV, budget=10)
    bars = {t.name: list(t.y) for t in comparison_figure(result).data}
    assert bars["error rate"] == [s.error_rate for s in result.stats] and bars["AUC"] == [s.auc for s in result.stats]
    worst = max(result.stats, key=lambda s: s.error_rate)
    assert comparison_text(result).startswith(f"The model is wrong on {worst.error_rate:.0%} of the {worst.size:,}")
    tree = error_tree(compas)
    treemap = error_tree_figure(tree).data[0]
    assert list(treemap.values) == [leaf.size for leaf in tree.leaves]
    cells = [c for c in treemap.marker.colors]
    from explain_core.views.cohorts import cell_colours
    assert all(contrast(text, cell) >= 4.5 for text, cell in zip(treemap.textfont.color, cell_colours(cells)))
    assert error_tree_text(tree).startswith(f"The model is wrong on {tree.leaves[0].error_rate:.0%} of the")
