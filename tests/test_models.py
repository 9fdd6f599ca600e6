"""Model adapter, safe model-file loading (skops, ONNX, refused pickles) and cached demo models."""
import operator
import os
import pickle
import shlex
import time
from concurrent.futures import ThreadPoolExecutor

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from sklearn.svm import LinearSVC

from explain_core.cache import CACHE_ENV
from explain_core.errors import IntakeError, UntrustedModelError
from explain_core.intake import demo_models as training
from explain_core.intake.data import make_dataset
from explain_core.intake.demos import load_demo
from explain_core.intake.demo_models import demo_model
from explain_core.intake.encoding import make_encoder
from explain_core.intake.formats import TRUSTED_ENV
from explain_core.intake.layout import TableChoices
from explain_core.intake.loading import load_model_file, model_from_file
from explain_core.intake.models import wrap_model


@pytest.fixture(scope="module")
def german():
    return load_demo("german_credit")  # string classes 'bad'/'good', positive 'bad' (the first class)


@pytest.fixture(scope="module")
def encoder(german):
    return make_encoder(german).fit(german.features)


@pytest.fixture(scope="module")
def encoded(german, encoder):
    return encoder.transform(german.features)


@pytest.fixture(scope="module")
def bare_lr(german, encoded):
    return LogisticRegression(max_iter=1000).fit(encoded, german.target)


def predicts_bad(estimator, X):
    return (estimator.predict(X) == "bad").astype(int)


# ------------------------------------------------------------------------------------------------
# Adapter

def test_pipeline_takes_raw_columns_in_its_own_order(german):
    columns = german.columns[::-1]
    pipe = make_pipeline(make_encoder(german), LogisticRegression(max_iter=1000))
    pipe.fit(german.features[columns], german.target)
    model = wrap_model(pipe, german)
    assert (model.takes, model.columns, model.score_kind, model.threshold) == ("raw", columns, "proba", 0.5)
    assert model.positive_class == "bad"
    np.testing.assert_allclose(model.score(german.features), pipe.predict_proba(german.features[columns])[:, 0])
    assert np.array_equal(model.label(german.features), predicts_bad(pipe, german.features[columns]))


def test_bare_estimator_takes_the_encoded_matrix(german, encoder, encoded, bare_lr):
    model = wrap_model(bare_lr, german, encoder=encoder)
    assert model.takes == "encoded"
    np.testing.assert_allclose(model.score(german.features), bare_lr.predict_proba(encoded)[:, 0])
    assert np.array_equal(model.label(german.features), predicts_bad(bare_lr, encoded))


@pytest.mark.parametrize("positive", ["bad", "good"])
def test_decision_function_model_agrees_with_its_predict(german, encoder, encoded, positive):
    data = make_dataset(german.features.assign(credit_risk=german.target), "credit_risk", positive_class=positive)
    svc = LinearSVC(C=0.05).fit(encoded, german.target)
    model = wrap_model(svc, data, encoder=encoder)
    assert (model.score_kind, model.threshold) == ("decision", 0.0)
    assert np.array_equal(model.label(german.features), (svc.predict(encoded) == positive).astype(int))
    assert 0 < model.label(german.features).mean() < 1


def test_string_classes_pick_the_right_probability_column(german, encoder, encoded, bare_lr):
    good = make_dataset(german.features.assign(credit_risk=german.target), "credit_risk", positive_class="good")
    proba = dict(zip(bare_lr.classes_, bare_lr.predict_proba(encoded).T))
    np.testing.assert_allclose(wrap_model(bare_lr, german, encoder=encoder).score(german.features), proba["bad"])
    np.testing.assert_allclose(wrap_model(bare_lr, good, encoder=encoder).score(german.features), proba["good"])


def test_model_trained_on_other_columns_is_refused(german):
    renamed = german.features.rename(columns={"age": "age_years", "job": "occupation"})
    other = make_dataset(renamed.assign(credit_risk=german.target), "credit_risk", positive_class="bad")
    pipe = make_pipeline(make_encoder(other), LogisticRegression(max_iter=200)).fit(renamed, german.target)
    with pytest.raises(IntakeError, match="lacks: age_years, occupation"):
        wrap_model(pipe, german)
    narrow = make_pipeline(make_encoder(german), LogisticRegression(max_iter=200))
    narrow.fit(german.features, german.target)
    wider = make_dataset(german.features.assign(extra=1.0, credit_risk=german.target), "credit_risk")
    with pytest.raises(IntakeError, match="does not use: extra"):
        wrap_model(narrow, wider)


def test_rows_without_a_column_or_with_text_for_a_number_get_the_librarys_message(german, encoder, bare_lr):
    """A notebook's row lacking a column raised pandas' KeyError, and text in a numeric column the imputer's
    ValueError, from every method; both now say what to fix, through the raw and the encoded doors."""
    from explain_core import explain_sev, make_reference
    from explain_core.errors import ModelCallError

    pipe = make_pipeline(make_encoder(german), LogisticRegression(max_iter=300)).fit(german.features, german.target)
    reference = make_reference(german)
    for model in (wrap_model(pipe, german), wrap_model(bare_lr, german, encoder=encoder)):
        row = german.features.iloc[[3]]
        with pytest.raises(IntakeError, match=r"lack the model's columns age, job; pass rows with every column"):
            model.score(row.drop(columns=["job", "age"]))
        with pytest.raises(IntakeError, match=r"lack the model's column age;"):
            explain_sev(model, german, row.drop(columns=["age"]), reference)
        with pytest.raises(ModelCallError, match="preprocessing raised ValueError on 1 row.*a number in each numeric"):
            explain_sev(model, german, row.assign(age="thirty"), reference)


def test_bare_estimator_with_wrong_width_or_without_encoder_is_refused(german, encoder, encoded, bare_lr):
    narrow = LogisticRegression().fit(encoded[:, :5], german.target)
    with pytest.raises(IntakeError, match=f"expects 5 input columns but the dataset's encoding has {encoded.shape[1]}"):
        wrap_model(narrow, german, encoder=encoder)
    with pytest.raises(IntakeError, match="does not record its input column names.*encoder"):
        wrap_model(bare_lr, german)
    with pytest.raises(IntakeError, match="encoder is not fitted"):
        wrap_model(bare_lr, german, encoder=make_encoder(german))


def test_model_with_recoded_classes(german, encoder, encoded):
    lr01 = LogisticRegression(max_iter=1000).fit(encoded, german.y)
    with pytest.raises(IntakeError, match=r"classes \[0, 1\] do not include the positive class 'bad'"):
        wrap_model(lr01, german, encoder=encoder)
    model = wrap_model(lr01, german, encoder=encoder, positive_class=1)
    np.testing.assert_allclose(model.score(german.features), lr01.predict_proba(encoded)[:, 1])


# ------------------------------------------------------------------------------------------------
# Model files: pickles refused by default, skops type check, ONNX

class WritesSentinel:
    """A pickle payload: unpickling it runs a shell command that creates ``path``."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(self.path)}",)


@pytest.mark.parametrize("suffix", [".pkl", ".joblib"])
def test_pickle_payload_never_runs_unless_trusted(tmp_path, monkeypatch, suffix):
    sentinel, path = tmp_path / "pwned", tmp_path / f"model{suffix}"
    if suffix == ".pkl":
        path.write_bytes(pickle.dumps(WritesSentinel(sentinel)))
    else:
        joblib.dump(WritesSentinel(sentinel), path)
    monkeypatch.delenv(TRUSTED_ENV, raising=False)
    with pytest.raises(UntrustedModelError, match="pickle file.*any code.*skops.*ONNX.*" + TRUSTED_ENV):
        load_model_file(path)
    monkeypatch.setenv(TRUSTED_ENV, "1")
    with pytest.raises(UntrustedModelError):
        load_model_file(path, trusted=False)  # the explicit argument wins over the environment
    assert not sentinel.exists()
    with pytest.raises(IntakeError, match="not a model"):  # trusted: unpickled, in the sandbox, where it is contained
        load_model_file(path, trusted=True)
    assert not sentinel.exists()
    joblib.load(path)  # proof that the payload is live: unpickled in this process, it runs
    assert sentinel.exists()


def test_pickle_loads_with_trusted_mode_from_the_environment(tmp_path, monkeypatch, german, encoder, bare_lr):
    joblib.dump(bare_lr, tmp_path / "lr.joblib")
    monkeypatch.setenv(TRUSTED_ENV, "1")
    model = model_from_file(tmp_path / "lr.joblib", german, encoder=encoder)
    direct = wrap_model(bare_lr, german, encoder=encoder)
    np.testing.assert_allclose(model.score(german.features), direct.score(german.features))


def test_skops_file_with_untrusted_types_is_refused_unless_trusted(tmp_path, monkeypatch, german, encoded):
    monkeypatch.delenv(TRUSTED_ENV, raising=False)
    pipe = Pipeline([("neg", FunctionTransformer(np.vectorize(np.negative))), ("lr", LogisticRegression(max_iter=500))])
    pipe.fit(encoded, german.target)
    path = tmp_path / "model.skops"
    sio.dump(pipe, path)
    types = sio.get_untrusted_types(file=path)
    assert types == ["numpy.vectorize"]  # a class off the list whose loading runs no code: it can be confirmed
    with pytest.raises(UntrustedModelError, match="not known to be safe") as info:
        load_model_file(path)
    assert all(t in str(info.value) for t in types)
    for loaded in (load_model_file(path, trusted_types=types), load_model_file(path, trusted=True)):
        np.testing.assert_array_equal(loaded.predict_proba(encoded), pipe.predict_proba(encoded))


@pytest.mark.parametrize("name, content, message", [
    ("model.skops", b"not a zip", "not a readable skops file"),
    ("model.onnx", b"not onnx", "not a loadable ONNX model"),
    ("model.h5", b"", "unsupported model format '.h5'"),
])
def test_unreadable_model_files(tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(IntakeError, match=message):
        load_model_file(tmp_path / name)


def to_onnx_file(model, inputs, path, zipmap=False):
    from skl2onnx import convert_sklearn

    options = {id(model): {"zipmap": zipmap}} if hasattr(model, "predict_proba") else None
    path.write_bytes(convert_sklearn(model, initial_types=inputs, options=options).SerializeToString())
    return path


@pytest.mark.parametrize("estimator, zipmap", [
    (LogisticRegression(max_iter=1000), False),
    (LogisticRegression(max_iter=1000), True),
    (MLPClassifier(hidden_layer_sizes=(16,), early_stopping=True, random_state=0), False),
    (GradientBoostingClassifier(n_estimators=20, random_state=0), False),
])
def test_onnx_on_the_encoded_matrix_matches_sklearn(tmp_path, german, encoder, encoded, estimator, zipmap):
    from skl2onnx.common.data_types import FloatTensorType

    estimator.fit(encoded.astype(np.float32), german.target)
    path = to_onnx_file(estimator, [("X", FloatTensorType([None, encoded.shape[1]]))], tmp_path / "m.onnx", zipmap)
    onnx_model = load_model_file(path)
    assert onnx_model.info["type"].endswith("OnnxModel") and list(onnx_model.classes_) == ["bad", "good"]
    model = wrap_model(onnx_model, german, encoder=encoder)
    expected = estimator.predict_proba(encoded.astype(np.float32))[:, 0]
    np.testing.assert_allclose(model.score(german.features), expected, atol=1e-5)
    assert (model.label(german.features) == predicts_bad(estimator, encoded.astype(np.float32))).mean() > 0.999


def test_onnx_pipeline_with_one_input_per_raw_column(tmp_path, german):
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    numeric = [c for c in german.columns if german.kind_of(c) == "numeric"]
    text = [c for c in german.columns if c not in numeric]
    pipe = make_pipeline(ColumnTransformer([("num", StandardScaler(), numeric), ("cat", OneHotEncoder(), text)]),
                         LogisticRegression(max_iter=1000))
    pipe.fit(german.features, german.target)
    inputs = [(c, FloatTensorType([None, 1]) if c in numeric else StringTensorType([None, 1])) for c in german.columns]
    model = model_from_file(to_onnx_file(pipe, inputs, tmp_path / "pipe.onnx", zipmap=True), german)
    assert model.takes == "raw" and model.positive_class == "bad"
    np.testing.assert_allclose(model.score(german.features), pipe.predict_proba(german.features)[:, 0], atol=1e-5)


def test_onnx_regressor(tmp_path):
    from skl2onnx.common.data_types import FloatTensorType

    data = load_demo("student_performance_math")
    encoder = make_encoder(data).fit(data.features)
    X = encoder.transform(data.features).astype(np.float32)
    ridge = Ridge().fit(X, data.y)
    model = model_from_file(to_onnx_file(ridge, [("X", FloatTensorType([None, X.shape[1]]))], tmp_path / "r.onnx"),
                            data, encoder=encoder)
    assert model.score_kind == "predict"
    np.testing.assert_allclose(model.score(data.features), ridge.predict(X), rtol=1e-5, atol=1e-4)


# ------------------------------------------------------------------------------------------------
# Demo models

@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    return tmp_path / "models"


def test_demo_model_is_cached_on_disk(cache, monkeypatch):
    first = demo_model("compas", "l2_lr")
    assert sorted(p.suffix for p in cache.iterdir()) == [".json", ".skops"]
    assert set(first.metrics) == {"train_accuracy", "train_auc", "test_accuracy", "test_auc", "test_rows"}
    assert first.metrics["test_rows"] == "split"  # the seeded split's test rows: the model never saw them
    assert 0.65 < first.metrics["test_auc"] < 0.8 and len(first.test_rows) == np.ceil(0.2 * 6172)

    def no_training(*args, **kwargs):
        raise AssertionError("the cached model should have been loaded")

    monkeypatch.setattr(training, "train_model", no_training)
    second = demo_model("compas", "l2_lr")
    features = load_demo("compas").features
    assert np.array_equal(second.model.score(features), first.model.score(features))
    assert second.metrics == first.metrics and second.model.threshold == first.model.threshold
    assert np.array_equal(second.train_rows, first.train_rows) and np.array_equal(second.test_rows, first.test_rows)


def test_a_demo_model_two_ask_for_at_once_is_trained_once(cache, monkeypatch):
    calls, train = [], training.train_model

    def counted(*args, **kwargs):
        calls.append(args)
        time.sleep(0.5)  # the other caller asks while this one trains
        return train(*args, **kwargs)

    monkeypatch.setattr(training, "train_model", counted)
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(lambda _: demo_model("compas", "l2_lr"), range(2))
    assert len(calls) == 1
    features = load_demo("compas").features
    assert np.array_equal(second.model.score(features), first.model.score(features))
    assert second.metrics == first.metrics


def test_tampered_cache_file_is_refused(cache, german, encoded):
    demo_model("compas", "l1_lr")
    evil = Pipeline([("neg", FunctionTransformer(operator.neg)), ("lr", LogisticRegression())]).fit(encoded, german.y)
    sio.dump(evil, next(cache.glob("*.skops")))
    with pytest.raises(UntrustedModelError, match="unexpected types.*_operator.neg"):
        demo_model("compas", "l1_lr")


@pytest.mark.parametrize("name, kind", [("compas", "l1_lr"), ("compas", "gbdt"), ("german_credit", "mlp")])
def test_demo_classifier_labels_agree_with_predict(name, kind):
    trained = demo_model(name, kind)
    data = load_demo(name)
    pipe, model = trained.model.estimator, trained.model
    assert model.positive_class == 1 and model.threshold == 0.5
    assert np.array_equal(model.label(data.features), pipe.predict(data.features))
    assert trained.metrics["test_auc"] > 0.65


@pytest.mark.parametrize("kind", ["l2_lr", "mlp"])
def test_demo_regressor(kind):
    trained = demo_model("student_performance_math", kind)
    data = load_demo("student_performance_math")
    assert set(trained.metrics) == {"train_r2", "train_rmse", "test_r2", "test_rmse", "test_rows"}
    assert trained.metrics["test_r2"] > 0.5
    assert trained.model.threshold == np.median(data.y[trained.train_rows])


def test_a_regression_demo_names_its_linear_model_for_what_it_is(cache):
    """A regression's linear kinds are a ridge and a lasso, not logistic regressions: named so when trained and
    when loaded from the cache."""
    trained, loaded = (demo_model("student_performance_math", "l2_lr").model for _ in range(2))
    assert sorted(p.suffix for p in cache.iterdir()) == [".json", ".skops"]  # the second came from the disk
    for model in (trained, loaded):
        assert model.name == "Ridge (L2 linear regression) on student_performance_math"
        assert isinstance(model.estimator[-1].regressor_, Ridge)
    assert demo_model("compas", "l2_lr").model.name == "L2 logistic regression on compas"


def test_unknown_demo_kind():
    with pytest.raises(IntakeError, match="Unknown model kind 'svm'.*l1_lr, l2_lr, gbdt, mlp"):
        demo_model("compas", "svm")


# ------------------------------------------------------------------------------------------------
# Decisions at ties (issue 15 §4): at the default threshold the label is the model's own predict

TIE_ROWS = np.array([[0.49999999999999994, 0.5], [0.5, 0.5], [0.5, 0.49999999999999994], [0.5, 0.5000000000000001],
                     [0.4999999999999999, 0.5000000000000001], [0.5000000000000002, 0.5], [0.2, 0.8], [0.9, 0.1]])


class TableClassifier:
    """P(row i) = TIE_ROWS[x_i]; predict as sklearn's: the first arg-max of predict_proba."""

    def __init__(self, classes, columns=("x",)):
        self.classes_ = np.array(classes)
        self.feature_names_in_ = np.array(columns, dtype=object)

    def predict_proba(self, X):
        return TIE_ROWS[np.asarray(X["x"], dtype=int)]

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def tie_data(classes, positive):
    frame = pd.DataFrame({"x": np.arange(len(TIE_ROWS)), "y": np.resize(classes, len(TIE_ROWS))})
    return make_dataset(frame, "y", positive_class=positive, choices=TableChoices(kinds={"x": "numeric"}))


@pytest.mark.parametrize("classes, positive", [((0, 1), 1), (("bad", "good"), "bad"), (("bad", "good"), "good")])
def test_default_threshold_labels_rows_at_the_tie_as_predict_does(classes, positive):
    data = tie_data(classes, positive)
    model = wrap_model(TableClassifier(classes), data)
    expected = (model.estimator.predict(data.features) == positive).astype(int)
    assert expected[0] == (positive == classes[1])  # the row: predict says classes_[1]
    np.testing.assert_array_equal(model.label(data.features), expected)
    scores = model.score(data.features)
    np.testing.assert_allclose(scores, TIE_ROWS[:, list(classes).index(positive)], rtol=0, atol=1e-15)


@pytest.mark.parametrize("kind", ["proba", "decision"])
@pytest.mark.parametrize("intercept", [0.0, 1e-17, -1e-17])
def test_logistic_regression_on_its_boundary_matches_predict(german, encoded, kind, intercept):
    """Decision exactly 0 (predict: classes_[0]) or ±1e-17 (expit gives [0.5, 0.5], predict follows the sign)."""
    lr = LogisticRegression().fit(encoded[:50], german.target[:50])
    lr.coef_[:] = 0.0
    lr.intercept_[:] = intercept
    for positive in ("bad", "good"):
        model = wrap_model(lr, german, encoder=make_encoder(german).fit(german.features), score_kind=kind,
                           positive_class=positive)
        rows = german.features.iloc[:20]
        np.testing.assert_array_equal(model.label(rows), (lr.predict(encoded[:20]) == positive).astype(int))


def test_custom_threshold_is_score_at_least_t():
    data = tie_data((0, 1), 1)
    model = wrap_model(TableClassifier((0, 1)), data, threshold=0.8)
    assert model.custom_threshold and "≥ 0.8" in model.rule
    np.testing.assert_array_equal(model.label(data.features), (TIE_ROWS[:, 1] >= 0.8).astype(int))
    assert not wrap_model(TableClassifier((0, 1)), data, threshold=0.5).custom_threshold  # the default is not custom


class IdentityRegressor:
    """Predicts each row's ``x``: predictions land exactly on chosen thresholds."""

    feature_names_in_ = np.array(["x"], dtype=object)

    def predict(self, X):
        return np.asarray(X["x"], dtype=float)


def test_regression_prediction_at_the_threshold_is_positive():
    """A regression's row is positive when its prediction is ≥ the threshold: the default (the median) or one chosen."""
    frame = pd.DataFrame({"x": [1.0, 2.0, 2.0, 3.0, 4.0], "y": [1.0, 2.0, 2.0, 3.0, 4.0]})
    data = make_dataset(frame, "y", task="regression", choices=TableChoices(kinds={"x": "numeric"}))
    model = wrap_model(IdentityRegressor(), data)
    assert model.threshold == 2.0 and not model.custom_threshold and model.rule == "prediction at or above 2"
    np.testing.assert_array_equal(model.label(data.features), [0, 1, 1, 1, 1])
    chosen = wrap_model(IdentityRegressor(), data, threshold=3.0)
    np.testing.assert_array_equal(chosen.label(data.features), [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(chosen.labels_of(np.array([2.9999999999999996, 3.0])), [0, 1])


def test_engines_label_tie_rows_as_predict_does():
    """LENS and SEV read labels through the same rule: intervened rows at the tie get predict's label."""
    from explain_core.intake.layout import GroupLayout
    from explain_core.lens import ContextOptions, lens_contexts
    from explain_core.reference import Reference
    from explain_core.sev import sev

    class Tie2(TableClassifier):
        def predict_proba(self, X):  # row (a, b) → TIE_ROWS[a + 2 b]: every row sits near the tie
            return TIE_ROWS[np.asarray(X["a"], dtype=int) + 2 * np.asarray(X["b"], dtype=int)]

    frame = pd.DataFrame({"a": [0, 1, 1, 0, 1], "b": [0, 1, 0, 1, 1], "y": [0, 1, 0, 1, 0]})
    data = make_dataset(frame, "y", choices=TableChoices(kinds={"a": "numeric", "b": "numeric"}))
    model = wrap_model(Tie2((0, 1), ("a", "b")), data)
    query, refs = data.features.iloc[[0]], data.features.iloc[1:]
    ctx = lens_contexts(model, data, query, refs, ContextOptions(directions=["r2i"]))["r2i"]
    for r in range(len(refs)):
        for j in range(len(ctx.masks)):
            keep = ctx.masks[j]
            row = pd.DataFrame({c: [query[c].iloc[0] if keep[g] else refs[c].iloc[r]] for g, c in enumerate("ab")})
            assert ctx.labels[r, j] == model.estimator.predict(row)[0]
    layout = GroupLayout.of(data)
    found = sev(model, layout, query, Reference(refs.iloc[0].to_dict(), "test"), kind="minus", max_depth=2)
    assert found.value == 1  # (0, 0) → P = [0.49999999999999994, 0.5] says 1; moving a gives (1, 0): [0.5, 0.5] → 0
