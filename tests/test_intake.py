"""Intake: reading CSV/Parquet, feature kinds and groups, bundled demo datasets, clear errors."""
import io

import numpy as np
import pandas as pd
import pytest

from explain_core.errors import IntakeError
from explain_core.intake.data import find_value, make_dataset
from explain_core.intake.demos import DEMO_DROPS, demo_cards, demo_names, load_demo
from explain_core.intake.layout import TableChoices
from explain_core.intake.tables import read_table


def raises(fn, *words):
    """Run ``fn``; it must raise IntakeError (a ValueError) whose message holds every word (any case)."""
    with pytest.raises(IntakeError) as info:
        fn()
    assert isinstance(info.value, ValueError)
    message = str(info.value).lower()
    for word in words:
        assert word.lower() in message, f"{word!r} not in {message!r}"
    return message


@pytest.fixture
def table():
    return pd.DataFrame({
        "age": [25, 32, 47, 51, 38, 29],
        "income": [1.5, 2.0, np.nan, 3.5, 2.2, 1.1],
        "smoker": ["yes", "no", "no", "yes", "no", "no"],
        "city": ["Oslo", "Rome", "Lima", "Oslo", "Rome", "Lima"],
        "label": ["ok", "bad", "ok", "bad", "ok", "bad"],
    })


# ------------------------------------------------------------------------------------------------
# Bundled datasets

@pytest.mark.parametrize("name", demo_names())
def test_demo_dataset_loads_as_its_card_says(name):
    data, card = load_demo(name), demo_cards()[name]
    assert (data.name, data.task, len(data.features)) == (name, card["task"], card["n_rows"])
    assert data.target.name == card["target"]
    features = [c for c in card["columns"] if c["role"] == "feature" and c["name"] not in DEMO_DROPS.get(name, ())]
    assert data.columns == [c["name"] for c in features]
    for column in features:
        group = data.group(column["name"])
        assert group.columns == (column["name"],) and group.kind == column["kind"]
        if column["kind"] != "numeric" and "values" in column:
            assert set(data.features[column["name"]].dropna().map(str)) <= set(map(str, column["values"]))
    missing = {c: int(n) for c, n in data.features.isna().sum().items() if n}
    assert missing == {c: n for c, n in card["missing_values"].items() if c in data.columns}
    if data.task == "classification":
        assert find_value(card["positive_class"], [data.positive_class]) is not None
        assert data.y.sum() == card["class_balance"][str(card["positive_class"])]
    else:
        assert data.positive_class is None and data.y.dtype == float


def test_demo_restricted_suggestion_and_split():
    data = load_demo("german_credit")
    assert data.restricted_suggestion == ["age", "personal_status_sex", "foreign_worker"]
    assert data.sev_paper_restricted == ["age", "personal_status_sex", "job"]  # SEV paper App. F
    adult = load_demo("adult")  # App. F: "age, marital-status, relationship, race, sex, native-country and occupation"
    assert sorted(adult.sev_paper_restricted) == sorted(["age", "marital_status", "relationship", "race", "sex",
                                                         "native_country", "occupation"])
    assert load_demo("california_housing").sev_paper_restricted == []
    train, test = data.split(seed=0)
    assert len(test) == 200 and len(np.intersect1d(train, test)) == 0
    assert data.y[test].mean() == pytest.approx(data.y.mean(), abs=0.01)  # stratified
    assert np.array_equal(train, data.split(seed=0)[0])


def test_unknown_demo_is_refused():
    raises(lambda: load_demo("iris"), "iris", "compas")


# ------------------------------------------------------------------------------------------------
# Reading files and building datasets

def test_csv_and_parquet_give_the_same_dataset(table, tmp_path):
    table.to_csv(tmp_path / "t.csv", index=False)
    table.to_parquet(tmp_path / "t.parquet", index=False)
    from_csv = read_table(tmp_path / "t.csv")
    from_parquet = read_table(tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(from_csv, from_parquet, check_dtype=False)
    data = make_dataset(from_parquet, "label", positive_class="bad")
    assert data.task == "classification" and data.positive_class == "bad"
    assert data.y.tolist() == [0, 1, 0, 1, 0, 1]
    assert {g.name: g.kind for g in data.groups} == {
        "age": "numeric", "income": "numeric", "smoker": "binary", "city": "categorical"}


def test_read_table_from_bytes_and_file_like_and_semicolons(table):
    text = table.to_csv(index=False)
    pd.testing.assert_frame_equal(read_table(text.encode()), table)
    pd.testing.assert_frame_equal(read_table(io.BytesIO(text.encode()), filename="t.csv"), table)
    pd.testing.assert_frame_equal(read_table(table.to_csv(index=False, sep=";").encode()), table)


def test_task_and_positive_class_defaults(table):
    regression = make_dataset(table, "age", choices=TableChoices(drop=["label"]))
    assert regression.task == "regression" and regression.positive_class is None
    assert make_dataset(table, "smoker").positive_class == "yes"
    numeric = make_dataset(table.assign(y=[0, 1, 0, 1, 1, 0]), "y", positive_class="1",
                           choices=TableChoices(drop=["label"]))
    assert numeric.positive_class == 1 and numeric.y.tolist() == [0, 1, 0, 1, 1, 0]


def test_more_than_two_classes_need_a_positive_class(table):
    raises(lambda: make_dataset(table, "city"), "3 classes", "positive class")
    data = make_dataset(table, "city", positive_class="Oslo")
    assert data.y.tolist() == [1, 0, 0, 1, 0, 0]


def test_kinds_are_inferred_and_overridable(table):
    data = make_dataset(table, "label", choices=TableChoices(kinds={"age": "categorical", "smoker": "categorical"}))
    assert data.kind_of("age") == "categorical" and data.kind_of("smoker") == "categorical"
    raises(lambda: make_dataset(table, "label", choices=TableChoices(kinds={"city": "numeric"})),
           "city", "text", "categorical")
    raises(lambda: make_dataset(table, "label", choices=TableChoices(kinds={"city": "binary"})),
           "city", "3 distinct", "categorical")
    raises(lambda: make_dataset(table, "label", choices=TableChoices(kinds={"age": "ordinal"})), "ordinal", "numeric")
    raises(lambda: make_dataset(table, "label", choices=TableChoices(kinds={"height": "numeric"})),
           "height", "unknown columns")


def test_categorical_column_is_one_group_and_onehot_blocks_can_be_declared(table):
    encoded = pd.get_dummies(table, columns=["city"], dtype=int)
    block = ["city_Lima", "city_Oslo", "city_Rome"]
    data = make_dataset(encoded, "label", choices=TableChoices(onehot_groups={"city": block}))
    assert data.group_names == ["age", "income", "smoker", "city"]
    assert data.group("city").columns == tuple(block) and data.group("city").kind == "categorical"
    assert make_dataset(table, "label").group("city").columns == ("city",)
    without = make_dataset(encoded, "label")
    assert [without.kind_of(c) for c in block] == ["binary"] * 3


def test_declared_groups_are_validated(table):
    encoded = pd.get_dummies(table, columns=["city"], dtype=int)
    raises(lambda: make_dataset(encoded, "label", choices=TableChoices(onehot_groups={"city": ["city_Lima", "age"]})),
           "not one-hot", "city")
    raises(lambda: make_dataset(encoded.assign(city_Rome=1), "label",
                                choices=TableChoices(onehot_groups={"city": ["city_Lima", "city_Oslo", "city_Rome"]})),
           "at most one 1")
    twice = TableChoices(onehot_groups={"a": ["city_Lima"], "b": ["city_Lima", "city_Oslo"]})
    raises(lambda: make_dataset(encoded, "label", choices=twice), "more than one group", "city_Lima")
    raises(lambda: make_dataset(encoded, "label",
                                choices=TableChoices(onehot_groups={"age": ["city_Lima", "city_Oslo"]})),
           "age", "rename")
    raises(lambda: make_dataset(encoded, "label", choices=TableChoices(onehot_groups={"city": ["city_Paris"]})),
           "city_Paris", "unknown")


# ------------------------------------------------------------------------------------------------
# Clear errors, one per case

def test_non_utf8_file():
    raises(lambda: read_table("age,ville\n30,Zürich\n".encode("latin-1"), filename="x.csv"),
           "x.csv", "not UTF-8", "CSV UTF-8")


def test_binary_file():
    raises(lambda: read_table(b"\x00\x01PK\x03\x04", filename="x.xlsx"), "binary", "CSV or Parquet")


def test_unreadable_parquet():
    raises(lambda: read_table(b"PAR1 this is not parquet", filename="x.parquet"), "not a readable Parquet", "re-export")


def test_rows_with_more_fields_than_the_header():
    raises(lambda: read_table(b"a,b\n1,2,3,4\n5,6\n"), "more fields than the header")
    raises(lambda: read_table(b"a,b\n1,2\n5,6,7\n"), "could not be parsed", "as many fields")


def test_empty_file():
    raises(lambda: read_table(b"", filename="x.csv"), "x.csv", "empty", "header row")
    raises(lambda: read_table(b"a,b\n", filename="x.csv"), "no data rows")


def test_missing_target_column(table):
    raises(lambda: make_dataset(table, "outcome"), "outcome", "not in the file", "age")


def test_target_with_missing_values(table):
    raises(lambda: make_dataset(table, "income"), "income", "1 missing", "drop those rows")


def test_constant_target(table):
    raises(lambda: make_dataset(table.assign(y=3.0), "y"), "'y'", "constant", "pick another target")


def test_single_class(table):
    raises(lambda: make_dataset(table.assign(label="ok"), "label", task="classification"),
           "'ok'", "single class", "two outcomes")


def test_positive_class_that_does_not_occur(table):
    raises(lambda: make_dataset(table, "label", positive_class="good"), "'good'", "does not occur", "'bad', 'ok'")


def test_all_nan_column(table):
    raises(lambda: make_dataset(table.assign(notes=np.nan), "label"), "notes", "no values", "drop them")
    csv = table.assign(notes=np.nan).to_csv(index=False).encode()
    raises(lambda: make_dataset(read_table(csv), "label"), "notes")


def test_duplicate_column_names(table):
    # pandas would rename the second 'a' to 'a.1'; the header line is checked itself
    raises(lambda: read_table(b"a,b,a\n1,2,3\n", filename="x.csv"), "x.csv", "duplicate", "a", "unique")
    raises(lambda: read_table(b'"a", "a"\n1,2\n'), "duplicate")
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table([pa.array([1]), pa.array([2])], names=["a", "a"]), buffer)
    raises(lambda: read_table(buffer.getvalue(), filename="x.parquet"), "duplicate", "a")
    raises(lambda: make_dataset(pd.concat([table, table[["age"]]], axis=1), "label"), "duplicate", "age")


def test_file_over_the_size_limit(table, tmp_path, monkeypatch):
    path = tmp_path / "big.csv"
    pd.concat([table] * 5000).to_csv(path, index=False)
    raises(lambda: read_table(path, max_mb=0.1), "big.csv", "over the 0.1 MB limit", "EXPLAIN_MAX_UPLOAD_MB")
    monkeypatch.setenv("EXPLAIN_MAX_UPLOAD_MB", "0.1")
    raises(lambda: read_table(path.read_bytes()), "over the 0.1 MB limit")
    monkeypatch.setenv("EXPLAIN_MAX_UPLOAD_MB", "10")
    assert len(read_table(path)) == 30000


def test_a_header_name_past_the_csv_readers_limit_is_a_message(tmp_path):
    """Issue 51: a column name over 131,072 characters raised the CSV reader's own error (a traceback)."""
    from explain_core.intake.tables import check_source_shape
    from explain_core.limits import limits

    data = ("a" * 140_000 + ",b\n1,2\n").encode()
    with pytest.raises(IntakeError, match="longer than 131,072 characters .*shorten the column names"):
        read_table(data, filename="wide.csv")
    (tmp_path / "wide.csv").write_bytes(data)
    with pytest.raises(IntakeError, match="longer than 131,072 characters"):
        check_source_shape(tmp_path / "wide.csv", (".parquet",), limits())
    assert list(read_table(("a" * 100_000 + ",b\n1,2\n").encode(), filename="long.csv").columns)[1] == "b"
