"""Bring your own model (issue 11): every family analysts ship, saved in every supported format, loaded through the
upload path (``model_from_upload``), scores equal to the original model's on 200 rows, and one row explained with
SEV, LENS and the linear method. Also sanitised names, single-tensor inputs, missing packages, multiclass models
and regression references."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from explain_core import (ContextOptions, IntakeError, SEVParameters, UntrustedModelError, explain_sev, lens_contexts,
                          opposite_references)
from explain_core.analysis import Parameters, UploadChoices, make_setup, model_from_upload, row_baselines
from explain_core.errors import ModelCallError
from explain_core.intake.data import make_dataset
from explain_core.intake.demos import load_demo
from explain_core.intake.demo_models import demo_model
from explain_core.intake.encoding import make_encoder
from explain_core.intake.models import wrap_model
from explain_core.intake.sandbox.loaders import open_model
from explain_core.intake.trained import TrainedModel
from explain_core.limits import limits
from explain_core.linear import explain_linear, group_space
from explain_core.reference import make_reference

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning",
                                        "ignore::sklearn.exceptions.ConvergenceWarning")
ROWS = 200


@pytest.fixture(scope="module")
def data():
    """California housing as a classification (value above the median), with a space in one column name."""
    housing = load_demo("california_housing")
    frame = housing.features.rename(columns={"median_income": "median income"})
    frame["expensive"] = np.where(housing.target > housing.target.median(), "yes", "no")
    return make_dataset(frame, "expensive", positive_class="yes", name="housing")


@pytest.fixture(scope="module")
def xy(data):
    return data.features, data.y


def skops_bytes(model) -> bytes:
    return sio.dumps(model)


def native_bytes(model, suffix: str, tmp_path) -> bytes:
    path = tmp_path / f"model{suffix}"
    booster = model.get_booster() if hasattr(model, "get_booster") else getattr(model, "booster_", model)
    booster.save_model(str(path))
    return path.read_bytes()


def onnx_bytes(model, width: int, family: str) -> bytes:
    """One float tensor input: onnxmltools for the boosters, skl2onnx for scikit-learn."""
    if family == "sklearn":
        from skl2onnx import convert_sklearn
        from skl2onnx.common.data_types import FloatTensorType as SklearnFloats

        return convert_sklearn(model, initial_types=[("input", SklearnFloats([None, width]))],
                               options={id(model): {"zipmap": False}}).SerializeToString()
    from onnxmltools import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    types = [("input", FloatTensorType([None, width]))]
    if family == "xgboost":
        return convert_xgboost(model, initial_types=types).SerializeToString()
    return convert_lightgbm(model, initial_types=types, zipmap=False).SerializeToString()


def catboost_onnx(model, tmp_path) -> bytes:
    path = tmp_path / "cat.onnx"
    model.save_model(str(path), format="onnx")
    return path.read_bytes()


def torch_onnx(X: np.ndarray, y: np.ndarray) -> tuple[bytes, callable]:
    import torch

    torch.manual_seed(0)
    scale = X.std(axis=0)
    net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], 16), torch.nn.ReLU(), torch.nn.Linear(16, 1),
                              torch.nn.Sigmoid())
    inputs = torch.tensor(X / scale, dtype=torch.float32)
    target = torch.tensor(y, dtype=torch.float32)[:, None]
    optimiser = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(100):
        optimiser.zero_grad()
        torch.nn.functional.binary_cross_entropy(net(inputs), target).backward()
        optimiser.step()
    scaled = torch.nn.Sequential(_Scale(scale), *net)
    buffer = io.BytesIO()
    torch.onnx.export(scaled, (torch.zeros(1, X.shape[1]),), buffer, input_names=["x"], output_names=["p"],
                      dynamic_axes={"x": {0: "n"}, "p": {0: "n"}}, dynamo=False)
    return buffer.getvalue(), lambda A: scaled(torch.tensor(A, dtype=torch.float32)).detach().numpy().ravel()


class _Scale(__import__("torch").nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.register_buffer("scale", __import__("torch").tensor(scale, dtype=__import__("torch").float32))

    def forward(self, x):
        return x / self.scale


def explain_one_row(setup) -> None:
    """SEV, LENS and the linear method on one row of the setup (small budgets: the code paths, not the figures)."""
    data, model = setup.dataset, setup.model
    row = data.features.iloc[[int(setup.test_rows[0])]]
    reference = setup.reference_for(row)
    ex = explain_sev(model, data, row, reference, options=SEVParameters(max_depth=3))
    assert ex.minus.status in ("explained", "beyond_depth", "unexplainable")
    refs = opposite_references(model, data, row, setup.train_rows, n=10)
    assert len(lens_contexts(model, data, row, refs, ContextOptions(max_size=2))["r2i"].masks) == 1 + 8 + 28
    lin = explain_linear(group_space(model, data, row, reference), k=3, m=200)
    assert lin.scores.anchoring_gap < 1e-9


def load(data, blob: bytes, filename: str, **kwargs) -> object:
    trained = model_from_upload(data, blob, filename, UploadChoices(**kwargs))
    return make_setup(data, trained)


def same_scores(setup, original, X) -> None:
    rows = X.iloc[:ROWS]
    np.testing.assert_allclose(setup.model.score(rows), original(rows), atol=1e-6, rtol=0)


# --- every family, every format --------------------------------------------------------------------------------

def test_scikit_learn_random_forest(data, xy, tmp_path):
    X, y = xy
    numeric = X.to_numpy()
    forest = RandomForestClassifier(n_estimators=30, max_depth=6, random_state=0).fit(X, y)
    setup = load(data, skops_bytes(forest), "forest.skops", positive_class=1)  # vetted types: no question asked
    same_scores(setup, lambda R: forest.predict_proba(R)[:, 1], X)
    explain_one_row(setup)
    plain = RandomForestClassifier(n_estimators=30, max_depth=6, random_state=0).fit(numeric, y)
    with pytest.raises(IntakeError, match="in their order"):  # a numpy-trained model: names must be confirmed
        load(data, onnx_bytes(plain, X.shape[1], "sklearn"), "forest.onnx", positive_class=1)
    setup = load(data, onnx_bytes(plain, X.shape[1], "sklearn"), "forest.onnx", positive_class=1, by_order=True)
    same_scores(setup, lambda R: plain.predict_proba(R.to_numpy(np.float32))[:, 1], X)
    assert setup.model.estimator.mapping["median income"] == "input 7"


def test_xgboost_sklearn_and_native(data, xy, tmp_path):
    import xgboost

    X, y = xy
    model = xgboost.XGBClassifier(n_estimators=40, max_depth=3, random_state=0, n_jobs=1).fit(X, y)
    expected = lambda R: model.predict_proba(R)[:, 1]  # noqa: E731
    loaded = {}
    for blob, name in [(skops_bytes(model), "xgb.skops"), (native_bytes(model, ".json", tmp_path), "xgb.json"),
                       (native_bytes(model, ".ubj", tmp_path), "xgb.ubj")]:
        loaded[name] = load(data, blob, name, positive_class=1)
        same_scores(loaded[name], expected, X)
    unnamed = xgboost.XGBClassifier(n_estimators=40, max_depth=3, random_state=0, n_jobs=1).fit(X.to_numpy(), y)
    # onnxmltools exports XGBoost models fitted without column names (f0, f1, …): the inputs go in order
    setup = load(data, onnx_bytes(unnamed, X.shape[1], "xgboost"), "xgb.onnx", positive_class=1, by_order=True)
    same_scores(setup, lambda R: unnamed.predict_proba(R.to_numpy())[:, 1], X)
    explain_one_row(setup)
    shap = row_baselines(loaded["xgb.json"], data.features.iloc[[0]], Parameters(lime_samples=200,
                                                                                   shap_background=20)).shap
    assert shap.explainer.startswith("TreeExplainer")  # SHAP's tree path for the native booster too


def test_xgboost_with_native_categorical_features_scores_text_columns_in_its_sandbox(tmp_path):
    """An XGBoost model trained with ``enable_categorical`` on text columns: its .json scores the dataset's text
    as the original model scores the same values as categories (it was refused: "DataFrame.dtypes for data must
    be int, float, bool or category"), one row alone as in a batch, and SEV explains a row."""
    import xgboost

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"colour": rng.choice(["red", "green", "blue", "amber"], 400),
                          "size": rng.normal(size=400).round(2), "shape": rng.choice(["round", "square"], 400)})
    frame["y"] = ((frame["colour"].isin(["red", "amber"])) ^ (frame["size"] > 0.5)).astype(int)
    data = make_dataset(frame, "y")
    X = data.features.astype({"colour": "category", "shape": "category"})
    model = xgboost.XGBClassifier(n_estimators=30, max_depth=3, enable_categorical=True, tree_method="hist",
                                  random_state=0, n_jobs=1).fit(X, data.y)
    setup = load(data, native_bytes(model, ".json", tmp_path), "cat.json", positive_class=1)
    assert setup.model.sandboxed
    expected = model.predict_proba(X.iloc[:ROWS])[:, 1]
    np.testing.assert_allclose(setup.model.score(data.features.iloc[:ROWS]), expected, atol=1e-6, rtol=0)
    assert setup.model.score(data.features.iloc[[7]])[0] == pytest.approx(expected[7], abs=1e-6)
    row = data.features.iloc[[7]]
    assert explain_sev(setup.model, data, row, setup.reference_for(row)).minus.status == "explained"


def test_lightgbm_sklearn_and_native_with_sanitised_names(data, xy, tmp_path):
    import lightgbm

    X, y = xy
    model = lightgbm.LGBMClassifier(n_estimators=40, num_leaves=8, random_state=0, n_jobs=1, verbose=-1).fit(X, y)
    assert "median_income" in model.feature_names_in_  # LightGBM sanitised the space
    expected = lambda R: model.predict_proba(R.rename(columns={"median income": "median_income"}))[:, 1]  # noqa: E731
    loaded = {}
    for blob, name, kwargs in [(skops_bytes(model), "lgbm.skops", {}),
                               (native_bytes(model, ".txt", tmp_path), "lgbm.txt", {}),
                               (onnx_bytes(model, X.shape[1], "lightgbm"), "lgbm.onnx", {"by_order": True})]:
        setup = loaded[name] = load(data, blob, name, positive_class=1, **kwargs)
        same_scores(setup, expected, X)
        if name != "lgbm.onnx":
            assert setup.model.estimator.mapping["median income"] == "median_income"
    explain_one_row(setup)
    shap = row_baselines(loaded["lgbm.skops"], data.features.iloc[[0]],
                         Parameters(lime_samples=200, shap_background=20)).shap
    assert shap.explainer.startswith("TreeExplainer")


def test_catboost_sklearn_native_and_onnx(data, xy, tmp_path):
    import catboost

    X, y = xy
    model = catboost.CatBoostClassifier(iterations=40, depth=4, random_seed=0, verbose=0, thread_count=1,
                                        allow_writing_files=False).fit(X, y)
    expected = lambda R: model.predict_proba(R)[:, 1]  # noqa: E731
    for blob, name, kwargs in [(skops_bytes(model), "cat.skops", {}),
                               (native_bytes(model, ".cbm", tmp_path), "cat.cbm", {}),
                               (catboost_onnx(model, tmp_path), "cat.onnx", {"by_order": True})]:
        setup = load(data, blob, name, positive_class=1, **kwargs)
        same_scores(setup, expected, X)
    explain_one_row(setup)


def test_torch_mlp_exported_to_onnx(data, xy):
    X, y = xy
    blob, forward = torch_onnx(X.to_numpy(), y)
    setup = load(data, blob, "mlp.onnx", positive_class=1, by_order=True)
    same_scores(setup, lambda R: forward(R.to_numpy()), X)
    explain_one_row(setup)


def test_onnx_from_a_dataframe_with_spaces_in_column_names(data, xy):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import StandardScaler
    from skl2onnx import to_onnx

    X, y = xy
    pipe = Pipeline([("scale", ColumnTransformer([("num", StandardScaler(), list(X.columns))])),
                     ("lr", LogisticRegression(max_iter=500))]).fit(X, y)
    blob = to_onnx(pipe, X.iloc[:1].astype(np.float32), options={"zipmap": False}).SerializeToString()
    setup = load(data, blob, "lr.onnx", positive_class=1)
    assert setup.model.estimator.mapping["median income"] == "median_income"  # skl2onnx sanitised the name
    same_scores(setup, lambda R: pipe.predict_proba(R.astype(np.float32))[:, 1], X)


def test_demo_xgboost_and_lightgbm_models():
    data = load_demo("compas")
    for kind in ("xgb", "lgbm"):
        trained = demo_model(data, kind)
        assert trained.metrics["test_auc"] > 0.7
        assert demo_model(data, kind).model.score(data.features.iloc[:50]).tolist() == \
            trained.model.score(data.features.iloc[:50]).tolist()  # cached, and repeatable


# --- clear failures --------------------------------------------------------------------------------------------

def test_missing_package_is_named_with_its_install_command(monkeypatch, data, xy, tmp_path):
    import importlib

    import xgboost

    X, y = xy
    blob = skops_bytes(xgboost.XGBClassifier(n_estimators=5).fit(X, y))
    native = native_bytes(xgboost.XGBClassifier(n_estimators=5).fit(X, y), ".json", tmp_path)
    real = importlib.import_module

    def without_xgboost(name, *args, **kwargs):
        if name.split(".")[0] == "xgboost":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", without_xgboost)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "xgboost" else 1)
    for module in [m for m in list(__import__("sys").modules) if m.split(".")[0] == "xgboost"]:
        monkeypatch.delitem(__import__("sys").modules, module)
    caps = limits()  # the loaders the model's worker runs, here without xgboost
    missing = "needs the package xgboost, which is not installed.*pip install xgboost"
    with pytest.raises(UntrustedModelError, match=missing):
        open_model(blob, ".skops", "xgb.skops", False, (), caps)
    with pytest.raises(IntakeError, match=missing):
        open_model(native, ".json", "xgb.json", False, (), caps)


def test_wrong_shapes_and_nan_are_refused_at_upload(data):
    class TwoColumns:
        classes_ = np.array([0, 1])
        feature_names_in_ = np.array(data.columns, dtype=object)

        def __init__(self, output):
            self.output = output

        def predict_proba(self, X):
            return self.output(len(X))

    bad_shape = wrap_model(TwoColumns(lambda n: np.full((n, 3), 1 / 3)), data, positive_class=1)
    with pytest.raises(ModelCallError, match=r"probabilities of shape \(20, 3\) for 20 rows"):
        bad_shape.score(data.features.iloc[:20])
    from explain_core.setup import check_model

    nan = wrap_model(TwoColumns(lambda n: np.full((n, 2), np.nan)), data, positive_class=1)
    with pytest.raises(IntakeError, match="returned NaN or infinite scores for 20 of the dataset's first 20 rows"):
        check_model(nan, data, "nan.skops")


def test_missing_columns_name_the_closest(data, xy):
    X, y = xy
    renamed = LogisticRegression(max_iter=200).fit(X.rename(columns={"latitude": "lat"}), y)
    with pytest.raises(IntakeError, match=r"lacks: lat \(closest in the dataset: lat → latitude\)"):
        wrap_model(renamed, data, positive_class=1)


# --- multiclass and regression, stated ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def three_classes():
    housing = load_demo("california_housing")
    frame = housing.features.copy()
    frame["band"] = pd.cut(housing.target, [0, 150_000, 300_000, np.inf], labels=["low", "mid", "high"]).astype(str)
    data = make_dataset(frame, "band", positive_class="high", name="bands")
    train, test = data.split(0)
    pipe = Pipeline([("encode", make_encoder(data)), ("lr", LogisticRegression(max_iter=500))])
    pipe.fit(data.features.iloc[train], data.target.iloc[train])
    model = wrap_model(pipe, data)
    return data, pipe, make_setup(data, TrainedModel(model, train, test, {}, key="bands", source="multiclass LR"))


def test_multiclass_model_is_explained_for_the_chosen_class(three_classes):
    data, pipe, setup = three_classes
    assert setup.explainable_classes() == ["high", "low", "mid"]
    low = setup.with_positive_class("low")
    assert low.dataset.positive_class == "low" and low.reference.explain_class == 1
    rows = data.features.iloc[:ROWS]
    column = list(pipe.classes_).index("low")
    np.testing.assert_allclose(low.model.score(rows), pipe.predict_proba(rows)[:, column])
    expected = make_reference(low.dataset, setup.train_rows)  # the training rows that are not "low"
    assert low.reference.values == expected.values
    assert low.metrics["test_auc"] > 0.8
    with pytest.raises(IntakeError, match="choose one of: high, low, mid"):
        setup.with_positive_class("none")
    binary = demo_model("compas", "l2_lr")
    assert make_setup(load_demo("compas"), binary).explainable_classes() == []


def test_sidebar_chooses_the_class_on_every_page(three_classes):
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT, drawn

    _, _, setup = three_classes
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.session_state["setup"] = setup
    at.session_state["row"] = int(setup.test_rows[0])
    at.run()
    at.switch_page("app_pages/sev.py").run()
    assert drawn(at.selectbox, "sidebar_class").value == "high"
    drawn(at.selectbox, "sidebar_class").select("mid").run()
    assert not at.exception and at.session_state["setup"].dataset.positive_class == "mid"
    assert "mid" in at.info[0].value  # the banner names the class explained


def test_regression_reference_comes_from_the_other_side_of_the_threshold():
    data = load_demo("student_performance_math")
    trained = demo_model(data, "l2_lr")
    setup = make_setup(data, trained)
    t = trained.model.threshold
    assert t == 11 and np.sum(data.y[trained.train_rows] == t) > 0  # whole grades: training rows at the threshold
    below = trained.train_rows[data.y[trained.train_rows] < t]
    assert setup.reference.population == "opposite" and setup.reference.threshold == t
    # a whole-valued feature's mean is rounded half up (issue 26)
    assert setup.reference.values["absences"] == np.floor(data.features["absences"].iloc[below].mean() + 0.5)
    assert f"over {len(below)} rows with final_grade < {t:.4g}" in setup.reference.description
    mirror = setup.reference_of_label(0)
    above = trained.train_rows[data.y[trained.train_rows] >= t]  # a grade equal to the threshold is positive
    assert f"over {len(above)} rows with final_grade ≥ {t:.4g}" in mirror.description
    assert mirror.values["absences"] == np.floor(data.features["absences"].iloc[above].mean() + 0.5)
