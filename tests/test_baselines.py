"""LIME / SHAP group attributions and LIME-C / SHAP-C flip numbers (SEV paper §5.4)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from itertools import combinations
from math import factorial

from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures, StandardScaler

from explain_core import demo_model, load_demo, make_reference
from explain_core.baselines import Attribution, GroupCodec, explain_lime, explain_shap, flip_number
from explain_core.shap_kernels import CACHED_KERNELS, keep_kernels
from explain_core.cache import cache_root
from explain_core.intake.data import make_dataset
from explain_core.intake.layout import GroupLayout, TableChoices
from explain_core.intake.encoding import make_encoder
from explain_core.intake.models import ModelAdapter, wrap_model
from explain_core.intake.tracing import encoded_column_groups
from explain_core.reference import Reference
from explain_core.sev import sev

EXPLAINER = {"l2_lr": "LinearExplainer", "gbdt": "TreeExplainer", "mlp": "PermutationExplainer"}


@pytest.fixture(scope="module")
def demo(explain_cache_dir):
    """``demo(name, kind)`` → (dataset, trained model, reference, predicted-positive test rows), cached."""
    cache = {}

    def get(name: str, kind: str):
        if (name, kind) not in cache:
            data = cache.setdefault(name, load_demo(name))
            trained = demo_model(data, kind)
            test = data.features.iloc[trained.test_rows]
            positives = test[trained.model.label(test) == 1]
            cache[name, kind] = (data, trained, make_reference(data, trained.train_rows), positives)
        return cache[name, kind]
    return get


def group_of_encoded(data, encoder) -> np.ndarray:
    """Group of each encoded column from its output name (``cat__purpose_car`` → purpose), longest match."""
    out = []
    for name in encoder.get_feature_names_out():
        raw = name.split("__", 1)[1]
        hits = [(len(c), i) for i, g in enumerate(data.groups) for c in g.columns
                if raw == c or raw.startswith(f"{c}_")]
        out.append(max(hits)[1])
    return np.array(out)


# --- flip numbers against exact SEV⁻ -------------------------------------------------------------------

@pytest.mark.parametrize("name,kind,n_queries,background", [
    ("compas", "l2_lr", 20, 100), ("compas", "gbdt", 20, 100), ("german_credit", "l2_lr", 20, 100),
    ("german_credit", "gbdt", 20, 100), ("german_credit", "mlp", 4, 20),  # MLP: the slow model-agnostic path
])
def test_flip_numbers_are_at_least_sev_minus(demo, name, kind, n_queries, background):
    data, trained, ref, positives = demo(name, kind)
    model, layout = trained.model, GroupLayout.of(data)
    flips = []
    for i in range(min(n_queries, len(positives))):
        row = positives.iloc[[i]]
        minus = sev(model, layout, row, ref, kind="minus", max_depth=layout.size)
        lime = explain_lime(model, data, row, trained.train_rows, num_samples=1000)
        shap_ = explain_shap(model, data, row, trained.train_rows, background=background)
        assert shap_.explainer.startswith(EXPLAINER[kind])
        for attribution in (lime, shap_):
            assert attribution.groups == tuple(data.group_names)
            path = flip_number(model, data, row, ref, attribution)
            assert path.explained_class == 1 and path.order == attribution.order
            assert path.scores[0] == pytest.approx(model.score(row)[0])
            if minus.value is None:
                assert path.count is None
            elif path.count is not None:
                assert path.count >= minus.value
                assert model.labels_of(path.scores[path.count]) == 0
                assert (model.labels_of(path.scores[:path.count]) == 1).all()
            flips.append(path.count)
    assert any(f is not None for f in flips)


# --- SHAP values against independent computations --------------------------------------------------------

@pytest.mark.parametrize("name", ["compas", "german_credit"])
def test_linear_shap_is_coefficient_times_offset_summed_per_group(demo, name):
    data, trained, _, positives = demo(name, "l2_lr")
    encoder, lr = trained.model.estimator[0], trained.model.estimator[-1]
    columns = group_of_encoded(data, encoder)
    np.testing.assert_array_equal(encoded_column_groups(encoder, data.groups), columns)
    mean = encoder.transform(data.features.iloc[trained.train_rows]).mean(axis=0)
    for i in range(3):
        row = positives.iloc[[i]]
        x = encoder.transform(row)[0]
        contribution = lr.coef_[0] * (x - mean)
        expected = np.array([contribution[columns == g].sum() for g in range(len(data.groups))])
        att = explain_shap(trained.model, data, row, trained.train_rows, background=len(trained.train_rows))
        assert att.output == "log-odds" and att.groups == tuple(data.group_names)
        np.testing.assert_allclose(att.values, expected, atol=1e-9)
        assert att.base_value + att.values.sum() == pytest.approx(lr.decision_function([x])[0], abs=1e-9)


def test_german_one_hot_columns_sum_into_one_group(demo):
    data, trained, _, _ = demo("german_credit", "l2_lr")
    mapping = encoded_column_groups(trained.model.estimator[0], data.groups)
    purpose = data.group_names.index("purpose")
    assert (mapping == purpose).sum() == data.features["purpose"].nunique() > 2
    assert len(set(mapping)) == len(data.groups) == 20 and len(mapping) > 20


@pytest.mark.parametrize("name", ["compas", "german_credit"])
def test_tree_shap_is_additive_in_log_odds(demo, name):
    data, trained, _, positives = demo(name, "gbdt")
    for i in range(3):
        row = positives.iloc[[i]]
        att = explain_shap(trained.model, data, row, trained.train_rows)
        assert att.explainer.startswith("TreeExplainer") and att.output == "log-odds"
        raw = trained.model.estimator.decision_function(row)[0]
        assert att.base_value + att.values.sum() == pytest.approx(raw, abs=1e-6)


def test_a_row_at_a_split_threshold_gets_shap_values_that_add_up_to_the_models_output():
    """scikit-learn sends a float32 value to the right of a float64 threshold that rounds to it in float32; shap's
    interventional TreeExplainer sends it left, and its additivity check raised. That row is explained by
    permutation SHAP of the model's own score, and says so."""
    def ulps(v, k):
        for _ in range(abs(k)):
            v = np.nextafter(v, np.float32(np.sign(k) * 2))
        return v
    x = np.float32(0.75)
    low, high = ulps(x, -3), ulps(x, 2)  # the threshold, their midpoint, is half an ulp below x
    assert np.float32((np.float64(low) + np.float64(high)) / 2) == x > (np.float64(low) + np.float64(high)) / 2
    frame = pd.DataFrame({"x": [low, high] * 10 + [x, low], "z": [0.0] * 22, "y": [0, 1] * 11})
    data = make_dataset(frame, "y")
    estimator = GradientBoostingClassifier(n_estimators=3, random_state=0).fit(data.features.iloc[:20], data.y[:20])
    model, train = wrap_model(estimator, data), np.arange(20)
    tied = explain_shap(model, data, data.features.iloc[[20]], train)
    assert tied.explainer.startswith("PermutationExplainer") and "additivity" in tied.explainer
    assert tied.output == "probability"
    assert tied.base_value + tied.values.sum() == pytest.approx(model.score(data.features.iloc[[20]])[0], abs=1e-9)
    clear = explain_shap(model, data, data.features.iloc[[21]], train)
    assert clear.explainer.startswith("TreeExplainer") and clear.output == "log-odds"
    raw = estimator.decision_function(data.features.iloc[[21]])[0]
    assert clear.base_value + clear.values.sum() == pytest.approx(raw, abs=1e-6)


def test_seeds_reproduce_and_change_values(demo):
    data, trained, _, positives = demo("german_credit", "mlp")
    row, rows = positives.iloc[[0]], trained.train_rows
    lime = [explain_lime(trained.model, data, row, rows, seed=s, num_samples=1000) for s in (1, 1, 2)]
    np.random.seed(7)
    expected_draw = np.random.rand()
    np.random.seed(7)
    shap_ = [explain_shap(trained.model, data, row, rows, seed=s, background=10) for s in (1, 1, 2)]
    assert np.random.rand() == expected_draw  # NumPy's global generator is left as it was
    for a, same, other in (lime, shap_):
        np.testing.assert_array_equal(a.values, same.values)
        assert a.base_value == same.base_value
        assert not np.array_equal(a.values, other.values)
    assert shap_[0].output == "probability"
    assert shap_[0].base_value + shap_[0].values.sum() == pytest.approx(trained.model.score(row)[0])


# --- hand-built flip counting ------------------------------------------------------------------------------

class LinearScore:
    """P(positive) = sigmoid(frame @ weights + bias) over named columns."""

    classes_ = np.array([0, 1])

    def __init__(self, weights: dict, bias: float):
        self.weights, self.bias = weights, bias

    def predict_proba(self, frame):
        z = sum(w * frame[c].to_numpy(dtype=float) for c, w in self.weights.items()) + self.bias
        p = 1 / (1 + np.exp(-z))
        return np.column_stack([1 - p, p])


def tiny_case(bias: float):
    frame = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [0.0, 1.0, 3.0], "c": [0.0, 1.0, 5.0], "y": [0, 1, 1]})
    data = make_dataset(frame, "y")
    model = ModelAdapter(LinearScore({"a": 3.0, "b": 1.0, "c": 1.0}, bias), ["a", "b", "c"], "classification")
    reference = Reference({"a": 0.0, "b": 0.0, "c": 0.0}, "zeros")
    return data, model, reference, data.features.iloc[[1]]  # query a = b = c = 1


@pytest.mark.parametrize("values,order,count", [
    ((5.0, 0.1, 0.2), ("a", "c", "b"), 1),      # 3+1+1-2.5 > 0; without a: 2-2.5 < 0
    ((0.1, -5.0, 2.0), ("b", "c", "a"), 3),     # without b: 1.5, without b, c: 0.5, all at reference: -2.5
    ((0.0, 1.0, -1.0), ("b", "c", "a"), 3),     # ties keep dataset order
])
def test_flip_count_on_hand_built_model(values, order, count):
    data, model, reference, query = tiny_case(bias=-2.5)
    att = Attribution("LIME", ("a", "b", "c"), np.array(values), None, "probability", "by hand")
    path = flip_number(model, data, query, reference, att)
    assert (path.method, path.order, path.count, path.explained_class) == ("LIME-C", order, count, 1)
    expected = [3 + 1 + 1 - 2.5]
    for k in range(1, 4):  # the score after moving the first k groups of the order to 0
        kept = {"a": 3.0, "b": 1.0, "c": 1.0}
        expected.append(sum(w for g, w in kept.items() if g not in order[:k]) - 2.5)
    np.testing.assert_allclose(path.scores, 1 / (1 + np.exp(-np.array(expected))))


class InteractionScore:
    """P(positive) = sigmoid(2a + b − c + 1.5·a·d + bias): not additive, so the order matters beyond the weights."""

    classes_ = np.array([0, 1])

    def __init__(self, bias: float):
        self.bias = bias

    def predict_proba(self, frame):
        a, b, c, d = (frame[k].to_numpy(dtype=float) for k in "abcd")
        p = 1 / (1 + np.exp(-(2 * a + b - c + 1.5 * a * d + self.bias)))
        return np.column_stack([1 - p, p])


def brute_force_flip(model, query: pd.DataFrame, reference: dict, ranking) -> int | None:
    """Move the groups of ``ranking`` to the reference one at a time, one model call per row; first flip."""
    row, label = query.copy(), model.predict_proba(query)[0, 1] > 0.5
    for k, group in enumerate(ranking, start=1):
        row[group] = reference[group]
        if (model.predict_proba(row)[0, 1] > 0.5) != label:
            return k
    return None


@pytest.mark.parametrize("bias,values", [
    (-1.0, (0.4, 0.9, -1.2, 0.4)), (-1.0, (-2.0, 0.3, 0.5, 0.0)), (-3.5, (1.0, -0.5, 0.2, 2.0)),
    (-4.5, (0.1, -0.2, 0.3, -0.4)),  # query predicted negative: "signed" ranks toward class 0 first
])
def test_both_flip_orders_match_brute_force(bias, values):
    frame = pd.DataFrame({"a": [1.0, 0.0, 2.0], "b": [1.0, 0.0, 1.0], "c": [-1.0, 0.0, 1.0], "d": [1.0, 0.0, 0.0],
                          "y": [1, 0, 1]})
    data = make_dataset(frame, "y")
    model = ModelAdapter(InteractionScore(bias), list("abcd"), "classification")
    ref = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}
    query = data.features.iloc[[0]]
    explained = int(model.score(query)[0] > 0.5)
    att = Attribution("SHAP", tuple("abcd"), np.array(values), 0.0, "log-odds", "by hand")
    toward = np.array(values) * (1 if explained else -1)
    expected_order = {"absolute": tuple(np.array(list("abcd"))[np.argsort(-np.abs(values), kind="stable")]),
                      "signed": tuple(np.array(list("abcd"))[np.argsort(-toward, kind="stable")])}
    for order, ranking in expected_order.items():
        path = flip_number(model, data, query, Reference(ref, "zeros"), att, order=order)
        assert path.order == ranking and path.explained_class == explained
        assert path.count == brute_force_flip(model.estimator, query, ref, ranking)
    with pytest.raises(ValueError):
        flip_number(model, data, query, Reference(ref, "zeros"), att, order="by magnitude")


def test_flip_count_is_none_when_the_reference_keeps_the_label():
    data, model, reference, query = tiny_case(bias=0.5)  # reference scores sigmoid(0.5) > 0.5
    att = Attribution("SHAP", ("a", "b", "c"), np.array([1.0, 2.0, 3.0]), 0.0, "log-odds", "by hand")
    assert flip_number(model, data, query, reference, att).count is None
    with pytest.raises(ValueError):
        flip_number(model, data, query, reference, Attribution("SHAP", ("a", "b"), np.ones(2), 0.0, "", ""))


def brute_force_shapley(model: ModelAdapter, query: pd.DataFrame, background: pd.DataFrame) -> np.ndarray:
    """Interventional Shapley values of ``model.score`` with one player per column, every coalition enumerated:
    v(S) = the mean score over the background rows with the columns in S set to the query's."""
    columns = list(query.columns)
    value = {}
    for size in range(len(columns) + 1):
        for coalition in combinations(columns, size):
            value[coalition] = model.score(background.assign(**{c: query[c].iloc[0] for c in coalition})).mean()
    n, phi = len(columns), np.zeros(len(columns))
    for i, column in enumerate(columns):
        for coalition, v in value.items():
            if column not in coalition:
                joined = tuple(c for c in columns if c in coalition or c == column)
                phi[i] += factorial(len(coalition)) * factorial(n - len(coalition) - 1) / factorial(n) * (
                    value[joined] - v)
    return phi


@pytest.mark.parametrize("regressor, explainer", [(GradientBoostingRegressor(n_estimators=40, random_state=0),
                                                   "TreeExplainer"), (Ridge(), "LinearExplainer")])
def test_a_regressor_on_a_standardised_target_gets_exact_shap_in_the_target_units(regressor, explainer):
    """The demo regressions (a TransformedTargetRegressor with a StandardScaler) are explained through their inner
    regressor, scaled back: equal to the enumerated Shapley values of the pipeline's own predictions."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.normal(size=(90, 4)), columns=["a", "b", "c", "d"])
    frame["y"] = 5000 + 800 * frame.a * (frame.b > 0) - 300 * frame.c + rng.normal(scale=50, size=90)
    data = make_dataset(frame, "y", task="regression")
    pipe = Pipeline([("encode", make_encoder(data)),
                     ("model", TransformedTargetRegressor(regressor=regressor, transformer=StandardScaler()))])
    model = wrap_model(pipe.fit(data.features, data.y), data)
    rows, tolerance = np.arange(60), 1e-7 * data.y.std()  # the rows: the whole background; shap's trees: float32
    for i in (60, 75):
        query = data.features.iloc[[i]]
        att = explain_shap(model, data, query, rows, background=len(rows))
        assert att.explainer.startswith(explainer) and att.output == "prediction"
        expected = brute_force_shapley(model, query, data.features.iloc[rows])
        np.testing.assert_allclose(att.values, expected, rtol=0, atol=tolerance)
        assert att.base_value + att.values.sum() == pytest.approx(model.score(query)[0], abs=tolerance)


# --- encodings: codec round trip, one-hot blocks, fallback to the model-agnostic path -------------------------

@pytest.fixture(scope="module")
def mixed():
    """Numeric, categorical with NaN, binary and a declared one-hot block; a label driven by all of them."""
    rng = np.random.default_rng(0)
    n = 300
    pet = rng.integers(0, 3, n)  # 2 = neither
    frame = pd.DataFrame({"x": rng.normal(size=n), "color": rng.choice(["red", "green", "blue", None], n),
                          "flag": rng.choice(["yes", "no"], n), "pet_cat": (pet == 0).astype(int),
                          "pet_dog": (pet == 1).astype(int)})
    logit = frame.x + (frame.color == "red") - (frame.flag == "no") + 1.5 * frame.pet_dog
    frame["y"] = (logit + rng.normal(scale=0.5, size=n) > 0.5).astype(int)
    return make_dataset(frame, "y", choices=TableChoices(onehot_groups={"pet": ["pet_cat", "pet_dog"]}))


def test_codec_round_trips_categories_nan_and_blocks(mixed):
    codec = GroupCodec(mixed, mixed.features)
    coded = codec.encode(mixed.features)
    assert coded.shape == (len(mixed.features), 4)
    assert set(coded[:, mixed.group_names.index("pet")]) == {0, 1, 2}
    pd.testing.assert_frame_equal(codec.decode(coded), mixed.features, check_dtype=False)


def test_declared_block_maps_to_its_group_and_unmappable_encoders_fall_back(mixed):
    rows = np.arange(len(mixed.features))
    query = mixed.features.iloc[[0]]
    pipe = Pipeline([("encode", make_encoder(mixed)), ("model", LogisticRegression())]).fit(mixed.features, mixed.y)
    model = wrap_model(pipe, mixed)
    mapping = encoded_column_groups(pipe[0], mixed.groups)
    assert list(mapping[-2:]) == [mixed.group_names.index("pet")] * 2
    linear = explain_shap(model, mixed, query, rows)
    assert linear.explainer.startswith("LinearExplainer") and linear.groups == tuple(mixed.group_names)

    poly = ColumnTransformer([("poly", PolynomialFeatures(2), ["x"]),
                              ("rest", OneHotEncoder(handle_unknown="ignore"), ["flag", "pet_cat", "pet_dog"]),
                              ("color", OneHotEncoder(handle_unknown="ignore"), ["color"])])
    pipe = Pipeline([("encode", poly), ("model", LogisticRegression())]).fit(mixed.features, mixed.y)
    model = wrap_model(pipe, mixed)
    assert encoded_column_groups(pipe[0], mixed.groups) is None
    agnostic = explain_shap(model, mixed, query, rows, background=30)
    assert agnostic.explainer.startswith("PermutationExplainer") and agnostic.output == "probability"
    assert agnostic.base_value + agnostic.values.sum() == pytest.approx(model.score(query)[0])
    lime = explain_lime(model, mixed, query, rows, num_samples=500)
    assert lime.groups == tuple(mixed.group_names) and np.isfinite(lime.values).all()


def kernels():
    import importlib

    return [getattr(importlib.import_module(module), name) for module, names in CACHED_KERNELS.items()
            for name in names]


def test_permutation_shap_keeps_its_kernels_in_the_cache_and_an_unwritable_one_changes_nothing(mixed, tmp_path):
    rows, query = np.arange(len(mixed.features)), mixed.features.iloc[[0]]
    poly = ColumnTransformer([("poly", PolynomialFeatures(2), ["x"]), ("color", OneHotEncoder(), ["color"]),
                              ("rest", "passthrough", ["pet_cat", "pet_dog"])])
    model = wrap_model(Pipeline([("encode", poly), ("model", LogisticRegression())]).fit(mixed.features, mixed.y),
                       mixed)
    att = explain_shap(model, mixed, query, rows, background=20)
    assert att.explainer.startswith("PermutationExplainer")
    kept = {p.name.split("-")[0] for p in (cache_root() / "numba").rglob("*.nbi")}
    assert {f"{module.rsplit('.', 1)[-1]}.{name}" for module, names in CACHED_KERNELS.items() for name in names} <= kept
    (tmp_path / "a-file").write_text("")
    before = [k._cache for k in kernels()]
    assert keep_kernels(tmp_path / "a-file" / "numba") is False  # no folder can be made under a file
    assert [k._cache for k in kernels()] == before
    again = explain_shap(model, mixed, query, rows, background=20)
    assert np.array_equal(again.values, att.values) and again.base_value == att.base_value


LINK_KERNEL_SCRIPT = """
import numpy as np, pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import PolynomialFeatures
from shap.utils._masked_model import _build_fixed_single_output as kernel
from explain_core.baselines import explain_shap
from explain_core.intake.data import make_dataset
from explain_core.intake.models import wrap_model
rng = np.random.default_rng(0)
frame = pd.DataFrame({"x": rng.normal(size=200), "z": rng.normal(size=200)})
frame["y"] = (frame.x + frame.z ** 2 > 1).astype(int)
data = make_dataset(frame, "y")
model = wrap_model(Pipeline([("poly", PolynomialFeatures(2)), ("lr", LogisticRegression())]).fit(data.features, data.y),
                   data)
att = explain_shap(model, data, data.features.iloc[[0]], np.arange(200), background=20)
print(att.explainer.split(" ")[0], sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))
"""


def test_a_new_process_loads_the_kernel_taking_the_link_from_the_cache():
    """The permutation explainer's kernel that applies the link (given as a C callback: its signature is the same
    in every process) is compiled once, then loaded from the cache by the next process (it compiled anew in every
    process with shap's jitted identity, about 3 s), with the same values."""
    import subprocess
    import sys

    runs = [subprocess.run([sys.executable, "-c", LINK_KERNEL_SCRIPT], capture_output=True, text=True, check=True
                           ).stdout.split() for _ in range(2)]
    assert runs[0][0] == runs[1][0] == "PermutationExplainer"
    assert int(runs[1][1]) >= 1 and runs[1][2] == "0", runs  # loaded, not compiled


def test_shap_explains_the_positive_class_when_it_is_classes_0(mixed):
    labels = np.where(mixed.y == 1, "approved", "rejected")  # classes_ = [approved, rejected]
    pipe = Pipeline([("encode", make_encoder(mixed)), ("model", LogisticRegression())]).fit(mixed.features, labels)
    model = ModelAdapter(pipe, mixed.columns, "classification", positive_class="approved")
    query = mixed.features.iloc[[0]]
    att = explain_shap(model, mixed, query, np.arange(len(mixed.features)))
    p = model.score(query)[0]
    assert att.base_value + att.values.sum() == pytest.approx(np.log(p / (1 - p)))
