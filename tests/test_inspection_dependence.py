"""Partial dependence, ICE and interactions (issue 30) against independent computations: brute-force averaging of
the adapter's score row by row, scikit-learn's own partial_dependence, closed forms of linear and product models,
shap's own TreeExplainer values, and Friedman's H written out loop by loop."""
from __future__ import annotations

import io
import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import shap
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.ensemble import RandomForestClassifier
from sklearn.inspection import partial_dependence as sklearn_partial_dependence
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import Pipeline
from streamlit.testing.v1 import AppTest

from explain_core.analysis import demo_setup
from explain_core.inspection import Interactions, PartialDependence, interactions, partial_dependence
from explain_core.inspection.interactions import H_METHOD, SHAP_METHOD, h_statistic, tree_interactions
from explain_core.intake.data import make_dataset
from explain_core.intake.demos import load_demo
from explain_core.intake.encoding import encoded_model, make_encoder
from explain_core.intake.layout import TableChoices
from explain_core.intake.models import wrap_model
from explain_core.intake.trained import TrainedModel
from explain_core.results import load_result
from explain_core.setup import make_setup
from explain_core.sev.readings import explanation_lines
from explain_core.views.dependence import dependence_figure, dependence_text, interaction_figure, interaction_text
from explain_core.vocabulary import format_number

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(scope="module")
def compas(explain_cache_dir):
    return demo_setup("compas", "gbdt")


def brute_force(setup, rows, column_values: dict) -> np.ndarray:
    """The score of each of ``rows`` with the columns set to ``column_values`` (one model call)."""
    frame = setup.dataset.features.iloc[np.asarray(rows, dtype=int)].copy()
    for column, value in column_values.items():
        frame[column] = pd.Series([value] * len(frame), index=frame.index).astype(frame[column].dtype)
    return setup.model.score(frame)


def check_against_brute_force(setup, result: PartialDependence, row: int, ice_checked: int = 3) -> None:
    group = setup.dataset.group(result.groups[0])
    for k, value in enumerate(result.grids[0]):
        values = ({c: int(c == value) for c in group.columns} if group.is_block else {group.columns[0]: value})
        scores = brute_force(setup, result.rows, values)
        assert result.average[k] == pytest.approx(scores.mean(), abs=1e-12)
        assert np.allclose(result.ice[:ice_checked, k], scores[:ice_checked], atol=1e-12)
        assert result.row_ice[k] == pytest.approx(brute_force(setup, [row], values)[0], abs=1e-12)


def synthetic_setup(frame: pd.DataFrame, estimator, onehot=None) -> tuple:
    data = make_dataset(frame, "y", task="regression", name="synthetic", choices=TableChoices(onehot_groups=onehot))
    train, test = np.arange(len(frame)), np.arange(len(frame))
    estimator.fit(data.features, data.target)
    return data, make_setup(data, TrainedModel(wrap_model(estimator, data), train, test, {}, key="synthetic",
                                               source="a test"))


class Formula(RegressorMixin, BaseEstimator):
    """A regression whose prediction is a written-out formula of the columns x1, x2, x3."""

    def __init__(self, formula: str = "product"):
        self.formula = formula

    def fit(self, X, y=None):
        self.feature_names_in_ = np.array(X.columns, dtype=object)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        x1, x2, x3 = (np.asarray(X[c], dtype=float) for c in ("x1", "x2", "x3"))
        if self.formula == "product":
            return x1 * x2
        if self.formula == "additive":
            return 2 * x1 - x2 + np.sin(x3)
        return x1 + x1 * x2 + x3 ** 2


# --- partial dependence and ICE ---------------------------------------------------------------------------------

def test_pdp_and_ice_equal_brute_force_and_sklearn_on_a_demo(compas):
    row = int(compas.test_rows[3])
    result = partial_dependence(compas, ["age"], row=row, rows=60, ice_rows=10)
    assert result.kinds == ("numeric",) and len(result.rows) == 60 and list(result.ice_rows) == list(result.rows[:10])
    ages = compas.dataset.features["age"]
    assert set(result.grids[0]) <= set(ages) and len(result.grids[0]) == 20
    assert result.grids[0][0] == np.quantile(ages, 0.05, method="inverted_cdf")
    check_against_brute_force(compas, result, row)
    assert result.row_values == (compas.dataset.features["age"].iloc[row],)
    assert result.row_score == pytest.approx(float(compas.model.score(compas.query(row))[0]))
    sample = compas.dataset.features.iloc[result.rows].astype({"age": float})  # sklearn refuses integer columns
    theirs = sklearn_partial_dependence(compas.model.estimator, sample, ["age"],
                                        custom_values={"age": result.grids[0]}, method="brute", kind="both")
    assert np.allclose(theirs["average"][0], result.average) and np.allclose(theirs["individual"][0][:10], result.ice)
    sexes = partial_dependence(compas, ["sex"], row=row, rows=40)
    assert sexes.kinds == ("categorical",) and list(sexes.grids[0]) == ["Male", "Female"]  # the card's order
    check_against_brute_force(compas, sexes, row)


def test_a_one_hot_block_is_one_categorical_feature_and_a_linear_model_has_its_closed_form():
    rng = np.random.default_rng(0)
    n = 80
    colour = rng.choice(["red", "green", "none"], size=n)
    frame = pd.DataFrame({"x": rng.normal(size=n), "c_red": (colour == "red").astype(int),
                          "c_green": (colour == "green").astype(int), "z": rng.integers(0, 5, n)})
    frame["y"] = 3 * frame["x"] + 2 * frame["c_red"] - frame["c_green"] + 0.5 * frame["z"] + rng.normal(0, .1, n)
    data, setup = synthetic_setup(frame, LinearRegression(), onehot={"colour": ["c_red", "c_green"]})
    lr = setup.model.estimator
    coef = dict(zip(lr.feature_names_in_, lr.coef_))
    result = partial_dependence(setup, ["colour"], row=5, rows=50)
    assert result.kinds == ("categorical",) and list(result.grids[0]) == ["c_red", "c_green", "none"]
    sample = data.features.iloc[result.rows]
    rest = lr.intercept_ + coef["x"] * sample["x"].mean() + coef["z"] * sample["z"].mean()
    assert np.allclose(result.average, [rest + coef["c_red"], rest + coef["c_green"], rest])
    check_against_brute_force(setup, result, 5)
    x = partial_dependence(setup, ["x"], row=5, rows=50)
    others = lr.intercept_ + coef["z"] * sample["z"].mean() + sample[["c_red", "c_green"]].to_numpy() @ \
        [coef["c_red"], coef["c_green"]]
    assert np.allclose(x.average, coef["x"] * x.grids[0] + others.mean())


def test_two_dimensional_pdp_equals_brute_force(compas):
    row = int(compas.test_rows[0])
    result = partial_dependence(compas, ["sex", "prior_offense_count"], row=row, rows=30, grid=8)
    assert result.average.shape == (2, len(result.grids[1])) and len(result.grids[1]) <= 4
    for i, sex in enumerate(result.grids[0]):
        for j, priors in enumerate(result.grids[1]):
            values = {"sex": sex, "prior_offense_count": priors}
            assert result.average[i, j] == pytest.approx(brute_force(compas, result.rows, values).mean(), abs=1e-12)
            assert result.row_ice[i, j] == pytest.approx(brute_force(compas, [row], values)[0], abs=1e-12)
    table = result.table()
    assert len(table) == result.average.size and table.iloc[-1, 2] == pytest.approx(result.average[-1, -1])
    assert load_result(result.to_json()) == result
    assert {t.meta["role"] for t in dependence_figure(result).data} == {"pdp2d"}
    assert dependence_text(result).startswith("Averaged over 30 test rows, P(recidivated) is highest")


def test_result_round_trips_and_its_figure_and_words_show_its_numbers(compas):
    row = int(compas.test_rows[3])
    result = partial_dependence(compas, ["age"], row=row, rows=40, ice_rows=5)
    assert load_result(result.to_json()) == result
    table = result.table()
    assert list(table.columns[:3]) == ["age", "average P(recidivated)", f"P(recidivated) of row {row}"]
    assert table.shape == (len(result.grids[0]), 3 + 5)
    traces = {t.meta["role"]: t for t in dependence_figure(result).data}
    assert np.allclose(traces["pdp"].y, result.average) and np.allclose(traces["row_ice"].y, result.row_ice)
    assert traces["row_point"].y[0] == pytest.approx(result.row_score)
    assert sum(v is None for v in traces["ice"].x) == 5
    text = dependence_text(result)
    first, last = (f"{v:.3g}" for v in (result.average[0], result.average[-1]))
    assert text.startswith("Raising age from 21 to 57 lowers the average P(recidivated)") and first in text and \
        last in text


def test_multiclass_one_against_the_rest_and_regression(explain_cache_dir):
    housing = load_demo("california_housing")
    frame = housing.features.iloc[:1500].copy()
    frame["band"] = pd.cut(housing.target.iloc[:1500], [0, 150_000, 300_000, np.inf],
                           labels=["low", "mid", "high"]).astype(str)
    data = make_dataset(frame, "band", positive_class="high", name="bands")
    train, test = data.split(0)
    forest = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0)  # shap reads multiclass forests
    pipe = Pipeline([("encode", make_encoder(data)), ("forest", forest)])
    pipe.fit(data.features.iloc[train], data.target.iloc[train])
    setup = make_setup(data, TrainedModel(wrap_model(pipe, data), train, test, {}, key="bands", source="a test"))
    low = setup.with_positive_class("low")
    result = partial_dependence(low, ["median_income"], row=int(test[0]), rows=25)
    column = list(pipe.classes_).index("low")
    for k, value in enumerate(result.grids[0]):
        moved = data.features.iloc[result.rows].assign(median_income=value)
        assert result.average[k] == pytest.approx(pipe.predict_proba(moved)[:, column].mean())
    found = interactions(low, rows=20)
    split = encoded_model(low.model, data.groups)
    X = split.encode(data.features.iloc[found.rows])
    theirs = np.asarray(shap.TreeExplainer(pipe[-1]).shap_values(X))[..., column]
    assert found.method == SHAP_METHOD and np.allclose(found.shap_values, grouped(theirs, split.column_group, data))
    regression = demo_setup("california_housing", "gbdt")
    pdp = partial_dependence(regression, ["median_income"], row=int(regression.test_rows[0]), rows=20)
    assert pdp.output == "prediction"
    check_against_brute_force(regression, pdp, int(regression.test_rows[0]))
    found = interactions(regression, rows=20)  # trees on the standardised target: their values × its scale
    split = encoded_model(regression.model, regression.dataset.groups)
    inner, X = split.estimator, split.encode(regression.dataset.features.iloc[found.rows])
    theirs = shap.TreeExplainer(inner.regressor_).shap_values(X)
    theirs = grouped(theirs * inner.transformer_.scale_[0], split.column_group, regression.dataset)
    assert (found.method, found.output) == (SHAP_METHOD, "prediction") and np.allclose(found.shap_values, theirs)


def test_an_uploaded_model_gives_the_same_numbers_through_its_sandbox(compas):
    import skops.io as sio

    from explain_core.intake.sandbox.model import SandboxedModel
    from explain_core.setup import model_from_upload

    uploaded = make_setup(compas.dataset, model_from_upload(compas.dataset, sio.dumps(compas.model.estimator),
                                                            "gbdt.skops"))
    assert isinstance(uploaded.model.estimator, SandboxedModel)
    row = int(compas.test_rows[2])
    for groups in (["age"], ["charge_degree", "age"]):
        mine, theirs = (partial_dependence(s, groups, row=row, rows=50) for s in (uploaded, compas))
        assert np.allclose(mine.average, theirs.average) and np.allclose(mine.row_ice, theirs.row_ice)
    mine, theirs = (interactions(s, rows=30) for s in (uploaded, compas))
    assert mine.method == SHAP_METHOD and np.allclose(mine.matrix, theirs.matrix)
    mine, theirs = (h_statistic(s, compas.test_rows[:8]) for s in (uploaded, compas))
    assert np.allclose(mine.matrix, theirs.matrix, equal_nan=True)


# --- interactions ------------------------------------------------------------------------------------------------

def grouped(values: np.ndarray, column_group, data) -> np.ndarray:
    """Rows × encoded columns summed into rows × groups."""
    return np.stack([np.bincount(column_group, weights=v, minlength=len(data.groups)) for v in values])


def test_shap_interaction_rows_sum_to_shaps_own_values(compas):
    found = interactions(compas, rows=50)
    assert found.method == SHAP_METHOD and found.output == "log-odds" and len(found.rows) == 50
    split = encoded_model(compas.model, compas.dataset.groups)
    X = split.encode(compas.dataset.features.iloc[found.rows])
    explainer = shap.TreeExplainer(split.estimator)
    assert np.allclose(found.shap_values, grouped(explainer.shap_values(X), split.column_group, compas.dataset))
    raw = explainer.shap_interaction_values(X)
    by_group = np.zeros((len(X), len(compas.dataset.groups), len(compas.dataset.groups)))
    for a, ga in enumerate(split.column_group):
        for b, gb in enumerate(split.column_group):
            by_group[:, ga, gb] += raw[:, a, b]
    assert np.allclose(found.matrix, np.abs(by_group).mean(axis=0))
    pairs = found.pairs()
    assert len(pairs) == 21 and pairs.iloc[0, 2] == max(found.matrix[j, k] for j, k in combinations(range(7), 2))
    assert load_result(found.to_json()) == found
    heat = interaction_figure(found).data[0]
    assert np.isnan(np.diag(np.asarray(heat.z, dtype=float))).all()
    assert interaction_text(found).startswith(f"The strongest interactions by mean |SHAP interaction value| "
                                              f"(log-odds, 50 test rows) are {pairs.iloc[0, 0]} × {pairs.iloc[0, 1]}")


def brute_force_h(predict, X: pd.DataFrame) -> np.ndarray:
    """Friedman's H of every pair of columns, each partial dependence a loop over the sample's points (the n moved
    copies of the sample scored in one call; each column's own partial dependence computed once)."""
    n, names = len(X), list(X.columns)

    def pd_at(columns):
        copies = []
        for i in range(n):
            moved = X.copy()
            for c in columns:
                moved[c] = X[c].iloc[i]
            copies.append(moved)
        values = np.asarray(predict(pd.concat(copies, ignore_index=True))).reshape(n, n).mean(axis=1)
        return values - np.mean(values)

    alone = {name: pd_at([name]) for name in names}
    H = np.full((len(names),) * 2, np.nan)
    for j, k in combinations(range(len(names)), 2):
        joint = pd_at([names[j], names[k]])
        rest = joint - alone[names[j]] - alone[names[k]]
        total = (joint ** 2).sum()  # no joint effect at all (a feature constant on the sample): no interaction
        H[j, k] = H[k, j] = np.sqrt((rest ** 2).sum() / total) if total > 1e-12 else 0.0
    return H


def test_h_statistic_is_zero_for_an_additive_model_and_one_for_a_pure_product():
    rng = np.random.default_rng(1)
    grid = pd.DataFrame([(a, b, c) for a in (-1, 1) for b in (-1, 1) for c in (0, 1, 2)], columns=["x1", "x2", "x3"])
    product = grid.assign(y=grid["x1"] * grid["x2"])
    _, setup = synthetic_setup(product, Formula("product"))
    found = h_statistic(setup, np.arange(len(grid)))
    assert found.method == H_METHOD and found.matrix[0, 1] == pytest.approx(1.0)
    assert found.matrix[0, 2] == pytest.approx(0.0) and np.isnan(found.matrix[0, 0])
    frame = pd.DataFrame(rng.normal(size=(30, 3)), columns=["x1", "x2", "x3"])
    _, setup = synthetic_setup(frame.assign(y=rng.normal(size=30)), Formula("additive"))
    assert np.nanmax(h_statistic(setup, np.arange(30)).matrix) < 1e-7
    _, setup = synthetic_setup(frame.assign(y=rng.normal(size=30)), Formula("mixed"))
    found = h_statistic(setup, np.arange(30))
    expected = brute_force_h(setup.model.estimator.predict, frame)
    assert np.allclose(found.matrix, expected, equal_nan=True) and found.matrix[0, 1] > 0.1
    y = 2 * frame["x1"] - frame["x2"] + 0.3 * frame["x3"]
    _, setup = synthetic_setup(frame.assign(y=y), LinearRegression())
    found = interactions(setup, h_rows=20)
    assert found.method == H_METHOD and len(found.rows) == 20 and np.nanmax(found.matrix) < 1e-7
    assert tree_interactions(setup, np.arange(5)) is None


def test_h_statistic_of_a_network_on_a_demo_equals_the_loops(explain_cache_dir):
    setup = demo_setup("compas", "mlp")
    found = interactions(setup, h_rows=12)
    assert found.method == H_METHOD and found.output == "P(recidivated)" and len(found.rows) == 12
    frame = setup.dataset.features.iloc[found.rows].reset_index(drop=True)
    assert np.allclose(found.matrix, brute_force_h(setup.model.score, frame), equal_nan=True)
    assert isinstance(load_result(found.to_json()), Interactions)
    assert interaction_text(found).startswith("The strongest interactions by the H-statistic estimate (12 test rows")


# --- the page -----------------------------------------------------------------------------------------------------

def test_model_page_draws_the_dependence_section(chart_specs):
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/model_view.py").run()
    at.toggle(key="mv_global").set_value(True)  # beside the global views: no key of theirs is taken
    at.toggle(key="mv_pdp_toggle").set_value(True).run()
    assert not at.exception and not at.error
    setup, row = at.session_state["setup"], at.session_state["row"]
    specs = {t.get("meta", {}).get("role"): t for c in chart_specs(at) for t in c["data"]}
    assert {"pdp", "ice", "row_ice", "row_point", "interactions", "dependence", "beeswarm"} <= set(specs)
    first = setup.dataset.group_names[0]
    want = partial_dependence(setup, [first], row=row, rows=500, ice_rows=100, seed=at.session_state["params"].seed)
    assert np.allclose(specs["pdp"]["y"], want.average) and np.allclose(specs["row_ice"]["y"], want.row_ice)
    at.selectbox(key="mv_pdp_pair").select("age").run()
    assert not at.exception
    roles = {t.get("meta", {}).get("role") for c in chart_specs(at) for t in c["data"]}
    assert "pdp2d" in roles and "pdp" not in roles
    assert [b.label for b in at.get("download_button")][-4:] == ["CSV", "JSON", "CSV", "JSON"]
    json.loads(json.dumps(chart_specs(at)[-1]))  # the charts are plain JSON
    at.switch_page("app_pages/home.py").run()  # a ridge regression: its prediction, and the H-statistic estimate
    at.selectbox(key="home_demo").select("california_housing").run()
    at.selectbox(key="home_kind").select("l2_lr").run()
    at.button(key="home_load").click().run()
    at.switch_page("app_pages/model_view.py").run()
    at.toggle(key="mv_pdp_toggle").set_value(True).run()
    assert not at.exception and not at.error and at.session_state["setup"].dataset.task == "regression"
    assert any("H-statistic estimate (Friedman's H" in c.value for c in at.caption)


# --- the PDF ------------------------------------------------------------------------------------------------------

def test_the_report_draws_the_rows_leading_feature(compas):
    from pypdf import PdfReader

    import explain_core.report as rep
    from explain_core.analysis import Parameters
    from explain_core.inspection.global_shap import global_shap

    row = int(compas.test_rows[3])
    report = rep.build_row_report(rep.RowResults(compas, row, Parameters()), ("sev", "dependence"))
    leading = explanation_lines(report.sev, "minus", compas.model.threshold)[0].moves[0].group
    want = partial_dependence(compas, [leading], row=row, rows=500, ice_rows=100)
    assert report.dependence == want and "dependence" in report.figures
    assert report.contents()[-1][0] == "2. Partial dependence"
    pdf = PdfReader(io.BytesIO(rep.write_pdf(report, image_renderer="matplotlib")))
    text = " ".join(" ".join(page.extract_text() for page in pdf.pages).split())
    assert f"2. Partial dependence — how {leading} moves the score" in text
    assert " ".join(dependence_text(want).split()) in text and "first feature of this row's minimal SEV" in text
    pairs = interactions(compas, seed=0)  # the model page's sample: its strongest pairs below the PDP
    assert report.interactions == pairs and "Which features act together" in text
    assert " ".join(interaction_text(pairs).split()) in text
    top = pairs.pairs().iloc[0]
    assert f"{top['feature']} {top['with']} {format_number(top.iloc[2])}" in text
    # no SEV: the top mean |SHAP|
    alone = rep.build_row_report(rep.RowResults(compas, row, Parameters()), ("dependence",))
    assert alone.dependence.groups == (global_shap(compas, rows=100).importance().index[0],)
    assert list(alone.json_files()) == [f"compas_row{row}.dependence.json", f"compas_row{row}.interactions.json"]
    # the SEV at hand (the pages' cache), its section not shown: the leading feature is still SEV's
    supplied = rep.build_row_report(rep.RowResults(compas, row, Parameters(), supply={"sev": report.sev}),
                                    ("dependence",))
    assert supplied.dependence == want and supplied.sev is None


def test_moved_frames_are_the_moved_rows_of_each_change_one_after_another():
    """The H-statistic's one frame (built as arrays) equals the concatenation of :func:`moved_rows` of each set of
    groups: numeric, categorical and a one-hot block, singles and pairs, with every column's dtype."""
    from explain_core.inspection.dependence import moved_frames, moved_rows

    rng = np.random.default_rng(1)
    n = 7
    colour = rng.choice(["red", "green", "none"], size=n)
    frame = pd.DataFrame({"x": rng.normal(size=n), "c_red": (colour == "red").astype(int),
                          "c_green": (colour == "green").astype(int), "z": rng.integers(0, 5, n),
                          "k": pd.Categorical(rng.choice(["a", "b"], size=n)), "s": rng.choice(["u", "v"], size=n),
                          "y": rng.integers(0, 2, n)})
    data = make_dataset(frame, "y", choices=TableChoices(kinds={"z": "numeric"},
                                                         onehot_groups={"colour": ["c_red", "c_green"]}))
    features = data.features[data.columns]
    groups = {g.name: g for g in data.groups}
    values = {name: g.values_in(features)[:3] for name, g in groups.items()}
    changes = [[(groups[a], values[a])] for a in groups] + \
        [[(groups[a], values[a]), (groups[b], values[b])] for a, b in combinations(groups, 2)]
    want = pd.concat([moved_rows(features, c) for c in changes], ignore_index=True)
    pd.testing.assert_frame_equal(moved_frames(features, changes), want)
