"""References (SEV paper §3/App. A) checked against independent pandas computations; restricted features."""
import numpy as np
import pandas as pd
import pytest

from explain_core.errors import IntakeError
from explain_core.intake.data import make_dataset
from explain_core.intake.demos import load_demo
from explain_core.intake.layout import TableChoices
from explain_core.reference import check_restricted, make_reference


@pytest.fixture(scope="module")
def compas():
    return load_demo("compas")


@pytest.fixture(scope="module")
def german():
    return load_demo("german_credit")


def expected(frame: pd.DataFrame, numeric, statistic="mean", *, whole_over: pd.DataFrame | None = None) -> dict:
    """Mean/median of numeric columns and mode of the others, computed directly; with ``whole_over`` (the rows the
    reference is built from) a numeric column whose values there are all whole numbers is rounded, half up."""
    out = {c: getattr(frame[c], statistic)() if c in numeric else frame[c].value_counts().idxmax() for c in frame}
    if whole_over is not None:
        out.update({c: float(np.floor(out[c] + 0.5)) for c in numeric
                    if (whole_over[c].dropna() == whole_over[c].dropna().round()).all()})
    return out


def assert_values(reference, wanted):
    assert reference.values.keys() == wanted.keys()
    for column, value in wanted.items():
        if isinstance(value, (float, np.floating)):
            assert reference.values[column] == pytest.approx(value)
        else:
            assert reference.values[column] == value, column


def test_default_is_mean_and_mode_over_negative_training_rows(compas):
    train, _ = compas.split(0)
    raw = compas.features.assign(y=compas.target).iloc[train]
    negatives = raw[raw.y == 0].drop(columns="y")
    reference = make_reference(compas, train)
    numeric = [c for c in compas.columns if c not in ("sex", "charge_degree")]
    assert_values(reference, expected(negatives, numeric, whole_over=compas.features.iloc[train]))
    assert reference.values["age"] == 37 and reference.values["prior_offense_count"] % 1 == 0  # whole: rounded
    assert_values(make_reference(compas, train, rounded=False), expected(negatives, numeric))
    assert reference.values["sex"] == "Male" and reference.values["charge_degree"] == "Felony"
    assert reference.description.endswith(f"features over {len(negatives):,} rows of class 0, whole-valued features "
                                          "rounded")


def test_median_whole_population_and_the_other_class(german):
    numeric = [c for c in german.columns if german.kind_of(c) == "numeric"]
    assert_values(make_reference(german, statistic="median", population="all"),
                  expected(german.features, numeric, "median", whole_over=german.features))
    good = german.features[german.target == "good"]
    bad = german.features[german.target == "bad"]
    # explaining 'bad' (positive): reference of 'good'
    assert_values(make_reference(german), expected(good, numeric, whole_over=german.features))
    positives = make_reference(german, explain_class=0, rounded=False)
    assert_values(positives, expected(bad, numeric))
    assert positives.description.endswith(f"over {len(bad)} rows of class bad")


def test_declared_onehot_group_takes_the_most_common_block_pattern(german):
    encoded = pd.get_dummies(german.features, columns=["purpose"], prefix_sep="=", dtype=int)
    block = [c for c in encoded if c.startswith("purpose=")]
    data = make_dataset(encoded.assign(credit_risk=german.target), "credit_risk", positive_class="bad",
                        choices=TableChoices(onehot_groups={"purpose": block}))
    reference = make_reference(data)
    counts = german.features.purpose[german.target == "good"].value_counts()
    assert counts.iloc[0] > counts.iloc[1]  # a unique mode, so the check does not depend on tie-breaking
    assert {c: reference.values[c] for c in block} == {c: int(c == f"purpose={counts.index[0]}") for c in block}
    assert sum(reference.values[c] for c in block) == 1


def test_onehot_block_ties_go_to_the_earliest_column_like_the_categorical_mode():
    frame = pd.DataFrame({"x": range(6), "pet": ["dog", "cat", "bird", "cat", "dog", "bird"], "y": [0] * 5 + [1]})
    block = pd.get_dummies(frame, columns=["pet"], dtype=int)
    data = make_dataset(block, "y", choices=TableChoices(onehot_groups={"pet": ["pet_bird", "pet_cat", "pet_dog"]}))
    assert make_reference(data).values | {"x": 0} == {"x": 0, "pet_bird": 0, "pet_cat": 1, "pet_dog": 0}
    assert make_reference(make_dataset(frame, "y")).values["pet"] == "cat"


def test_regression_uses_all_rows():
    data = load_demo("student_performance_math")
    reference = make_reference(data, np.arange(100))
    assert reference.values["absences"] == np.floor(data.features.absences[:100].mean() + 0.5)
    assert reference.description.endswith("over 100 rows, whole-valued features rounded")


def test_one_class_against_the_rest():
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "c": list("aabbcc")})
    data = make_dataset(frame, "c", positive_class="a")
    reference = make_reference(data, rounded=False)
    assert reference.values["x"] == pytest.approx(4.5) and reference.description.endswith("rows of class not a")
    assert make_reference(data).values["x"] == 5.0  # whole-valued: 4.5 rounds half up


def test_custom_values(german):
    encoded = pd.get_dummies(german.features, columns=["purpose"], dtype=int)
    block = [c for c in encoded if c.startswith("purpose_")]
    data = make_dataset(encoded.assign(credit_risk=german.target), "credit_risk", positive_class="bad",
                        choices=TableChoices(onehot_groups={"purpose": block}))
    reference = make_reference(data, overrides={"age": "40", "housing": "rent", "purpose": "purpose_business"})
    assert reference.values["age"] == 40.0 and reference.values["housing"] == "rent"
    assert [reference.values[c] for c in block] == [int(c == "purpose_business") for c in block]
    assert reference.description.endswith("custom: age, housing, purpose")
    assert reference.values["duration_months"] == make_reference(data).values["duration_months"]


@pytest.mark.parametrize("overrides, message", [
    ({"height": 1}, "unknown feature 'height'"),
    ({"age": "old"}, "must be a number"),
    ({"housing": "castle"}, "'castle' for 'housing' does not occur.*'own'"),
])
def test_bad_custom_values(german, overrides, message):
    with pytest.raises(IntakeError, match=message):
        make_reference(german, overrides=overrides)


def test_bad_settings(compas):
    with pytest.raises(IntakeError, match="statistic"):
        make_reference(compas, statistic="mode")
    with pytest.raises(IntakeError, match="population"):
        make_reference(compas, population="others")
    with pytest.raises(IntakeError, match="No rows of the opposite class"):
        make_reference(compas, np.flatnonzero(compas.y == 1))


def test_check_restricted(compas):
    assert check_restricted(compas, ["age", "sex"]) == ("sex", "age")
    assert check_restricted(compas, []) == ()
    with pytest.raises(IntakeError, match="Unknown restricted features: race; choose from sex, age"):
        check_restricted(compas, ["race", "age"])
    with pytest.raises(IntakeError, match="Every feature is restricted"):
        check_restricted(compas, compas.group_names)


def test_realistic_references_rounded_and_nearest_real_row(compas):
    rows = np.arange(0, len(compas.features), 2)
    negatives = rows[compas.y[rows] == 0]
    frame = compas.features.iloc[negatives]
    rounded = make_reference(compas, rows)
    mean = make_reference(compas, rows, rounded=False)
    for column in ("age", "prior_offense_count", "juvenile_other_count"):  # whole-valued counts and ages
        assert rounded.values[column] == round(mean.values[column]) and rounded.values[column] % 1 == 0
    assert "rounded" in rounded.description and rounded.rounded
    # nearest real row: brute force over every row of the other class, IQR-scaled numeric distance + mismatches
    real = make_reference(compas, rows, statistic="nearest_row")
    median = make_reference(compas, rows, statistic="median").values
    numeric = [g.name for g in compas.groups if g.kind == "numeric"]
    iqr = {c: (frame[c].quantile(0.75) - frame[c].quantile(0.25)) or frame[c].std(ddof=0) or 1.0 for c in numeric}
    distance = sum((frame[c] - median[c]).abs() / iqr[c] for c in numeric) + sum(
        (frame[c] != median[c]).astype(float) for c in compas.columns if c not in numeric)
    best = int(np.argmin(distance.to_numpy()))
    assert real.values == frame.iloc[best].to_dict()
    assert f"real row {frame.index[best]}" in real.description
