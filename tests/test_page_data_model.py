"""The Data & model page (AppTest), checked against explain_core computed independently.

Widget keys are the page's (all prefixed ``dm_``); uploads go through AppTest's ``file_uploader.set_value``.
"""
from __future__ import annotations

import io
import os
import pickle
import shlex
from dataclasses import replace
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from streamlit.testing.v1 import AppTest

from conftest import visible
from explain_core import IntakeError, UntrustedModelError, load_demo, make_dataset, make_reference, read_table
from explain_core.intake.layout import TableChoices
from explain_core.analysis import predicted_rows
from explain_core.intake.data import infer_task
from explain_core.intake.demo_models import demo_model, train_model
from explain_core.intake.encoding import make_encoder
from explain_core.intake.formats import TRUSTED_ENV
from explain_core.intake.loading import load_model_bytes, load_model_file
from explain_core.intake.models import wrap_model
from explain_core.intake.trained import evaluate

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGE = "app_pages/data_model.py"
TIMEOUT = 60


@pytest.fixture(autouse=True)
def _no_trusted_mode(monkeypatch):
    """Trusted mode is off unless a test turns it on."""
    monkeypatch.delenv(TRUSTED_ENV, raising=False)


@pytest.fixture(scope="module")
def compas(explain_cache_dir):
    data = load_demo("compas")
    return data, demo_model(data, "gbdt")


@pytest.fixture(scope="module")
def compas_lr(compas):
    """A plain Pipeline fitted on COMPAS' raw columns and 0/1 target (its classes match positive class 1)."""
    data, _ = compas
    pipe = Pipeline([("encode", make_encoder(data)), ("lr", LogisticRegression(max_iter=1000))])
    return pipe.fit(data.features, data.y)


def open_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def session(at) -> tuple:
    """What an error must leave alone: the setup (by identity and content key), the row and the parameters."""
    s = at.session_state["setup"]
    return s, s.key, at.session_state["row"], at.session_state["params"]


def assert_unchanged(at, before) -> None:
    s, key, row, params = session(at)
    assert s is before[0] and key == before[1] and row == before[2] and params == before[3]


def errors(at) -> list[str]:
    return [visible(e.value) for e in at.error]


def metric_values(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def expected_metrics(metrics: dict) -> dict[str, str]:
    labels = {"train_accuracy": "Train accuracy", "test_accuracy": "Test accuracy", "train_auc": "Train AUC",
              "test_auc": "Test AUC"}
    return {labels[k]: f"{v:.3f}" for k, v in metrics.items() if k in labels}


def message_of(fn) -> str:
    with pytest.raises(IntakeError) as info:
        fn()
    return str(info.value)


def cell(value: float) -> str:
    """A number as the page's tables show it (2 decimals, whole numbers without)."""
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def upload(at, key: str, name: str, data: bytes) -> AppTest:
    at.file_uploader(key=key).set_value((name, data, "application/octet-stream")).run()
    assert not at.exception, at.exception
    return at


def edit(at, key: str, edited_rows=None, added_rows=None) -> None:
    """Seed a data_editor's edits (AppTest applies them on the next run)."""
    at.session_state[key] = {"edited_rows": edited_rows or {}, "added_rows": added_rows or [], "deleted_rows": []}


# ---------------------------------------------------------------------------------------------------------------

def test_page_renders_the_current_demo_setup(compas):
    data, trained = compas
    at = open_page()
    assert not at.error
    assert at.title[0].value == "Data & model"
    assert at.selectbox(key="dm_demo").value == "compas"
    assert "L2 logistic regression" in at.selectbox(key="dm_demo_kind").options
    assert metric_values(at) == expected_metrics(trained.metrics)
    reference = make_reference(data, trained.train_rows)
    table = at.data_editor(key="dm_reference").value
    assert list(table.index) == data.group_names
    assert table.at["age", "computed"] == cell(reference.values["age"])
    assert table.at["sex", "computed"] == str(reference.values["sex"])
    assert table["custom"].isna().all()
    assert (f"**Reference in use after “Use this setup”**: {reference.description}."
            in [visible(c) for c in at.caption.values])
    assert at.multiselect(key="dm_restricted").value == []
    assert "sex, age" in at.multiselect(key="dm_restricted").help  # the card's suggestion, as a hint only
    # issue 55: the two buttons say what each does (Load demo fills the form; Use this setup changes the session)
    said = " ".join(visible(c) for c in at.caption.values)
    assert "Load demo puts this demo's data and model in the sections below" in said.replace("**", "")
    assert "until Use this setup" in said.replace("**", "")
    assert "every page then explains with them" in at.button(key="dm_use").help
    at.selectbox(key="dm_demo").select("california_housing").run()  # a regression: a ridge and a lasso
    kinds = at.selectbox(key="dm_demo_kind").options
    assert {"Ridge (L2 linear regression)", "Lasso (L1 linear regression)"} <= set(kinds) and not at.error
    assert "L2 logistic regression" not in kinds


def test_bad_data_files_show_their_message_and_keep_the_session():
    at = open_page()
    before = session(at)
    at.radio(key="dm_data_source").set_value("upload").run()
    bad = {"rows.csv": b"a,b,label\n1,2,x\n3,4,5,y\n",
           "empty.csv": b"  \n",
           "dupes.csv": b"a,b,a,label\n1,2,3,x\n4,5,6,y\n",
           "latin1.csv": "a,city,label\n1,Malmö,x\n".encode("latin-1"),
           "broken.parquet": b"PAR1 not really parquet"}
    for name, data in bad.items():
        expected = message_of(lambda: read_table(data, filename=name))  # noqa: B023 (called here)
        upload(at, "dm_upload", name, data)
        assert errors(at) == [expected], name
        assert name in expected
        assert "dm_build" not in [b.key for b in at.button]  # nothing to configure from an unreadable file
        assert_unchanged(at, before)
        assert at.session_state["dm_dataset"] is before[0].dataset


def _table(n: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    purpose = rng.choice(["car", "tv", "other"], n)
    return pd.DataFrame({
        "id": np.arange(n),
        "age": rng.integers(18, 80, n),
        "rooms": rng.integers(1, 4, n),  # three values: inferred numeric, overridden to categorical
        "smoker": rng.choice(["yes", "no"], n),
        "purpose_car": (purpose == "car").astype(int), "purpose_tv": (purpose == "tv").astype(int),
        "purpose_other": (purpose == "other").astype(int),
        "status": rng.choice(["ok", "bad", "late"], n),
        "constant": ["same"] * n,
    })


def test_uploaded_table_is_configured_and_built_like_make_dataset():
    frame = _table()
    at = open_page()
    before = session(at)
    at.radio(key="dm_data_source").set_value("upload").run()
    upload(at, "dm_upload", "loans.csv", frame.to_csv(index=False).encode())
    assert not at.error
    columns = list(frame.columns)
    assert at.selectbox(key="dm_target").options == columns
    assert at.selectbox(key="dm_target").value == "constant"  # the last column by default
    # until "Use this data", sections 2-4 still configure the previous data, and say so
    assert any("uploaded file is not used yet" in w.value for w in at.warning)
    assert at.button(key="dm_use").disabled

    # a target with one value is refused with make_dataset's own message
    at.button(key="dm_build").click().run()
    assert errors(at) == [message_of(lambda: make_dataset(frame, "constant"))]
    assert_unchanged(at, before)

    # three classes: task inferred, no positive class until one is chosen (make_dataset's message)
    at.selectbox(key="dm_target").select("status").run()
    assert at.selectbox(key="dm_task").value == infer_task(frame["status"]) == "classification"
    assert at.selectbox(key="dm_positive").options == ["bad", "late", "ok"]
    assert at.selectbox(key="dm_positive").value is None
    at.button(key="dm_build").click().run()
    assert errors(at) == [message_of(lambda: make_dataset(frame, "status"))]

    # kinds, drops and a one-hot group through the editors
    kinds = at.data_editor(key="dm_columns").value
    assert list(kinds.index) == columns
    assert kinds.at["rooms", "inferred kind"] == "numeric" and kinds.at["status", "role"] == "target"
    edit(at, "dm_columns", edited_rows={columns.index("rooms"): {"kind": "categorical"},
                                        columns.index("id"): {"drop": True},
                                        columns.index("constant"): {"drop": True}})
    edit(at, "dm_onehot", added_rows=[{"group": "purpose",
                                       "columns": ["purpose_car", "purpose_tv", "purpose_other"]}])
    at.selectbox(key="dm_positive").select("late").run()
    at.button(key="dm_build").click().run()
    assert not at.exception and not at.error
    built = at.session_state["dm_dataset"]
    expected = make_dataset(frame, "status", positive_class="late", name="loans",
                            choices=TableChoices(kinds={"rooms": "categorical"}, drop=["id", "constant"],
                                                 onehot_groups={"purpose": ["purpose_car", "purpose_tv",
                                                                            "purpose_other"]}))
    assert (built.name, built.task, built.positive_class, built.groups) == \
           (expected.name, expected.task, expected.positive_class, expected.groups)
    pd.testing.assert_frame_equal(built.features, expected.features)
    assert built.group("purpose").kind == "categorical" and built.group("rooms").kind == "categorical"
    assert any("No model for this dataset yet" in i.value for i in at.info)
    assert not any("not used yet" in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == "dm_use"]  # nothing to use until a model exists
    assert_unchanged(at, before)


def test_train_on_german_credit_then_use_this_setup():
    german = load_demo("german_credit")
    expected = train_model(german, "l2_lr", seed=1)
    at = open_page()
    at.selectbox(key="dm_demo").select("german_credit").run()
    at.selectbox(key="dm_demo_kind").select("l2_lr").run()
    at.button(key="dm_demo_load").click().run()
    assert at.session_state["dm_dataset"].name == "german_credit"
    assert at.session_state["setup"].dataset.name == "compas"  # nothing used yet
    at.radio(key="dm_model_source").set_value("train").run()
    at.selectbox(key="dm_train_kind").select("l2_lr").run()
    at.number_input(key="dm_seed").set_value(1).run()
    at.button(key="dm_train").click().run()
    assert not at.exception and not at.error
    assert (at.status[0].label, at.status[0].state) == ("Trained L2 logistic regression on german_credit", "complete")
    assert metric_values(at) == expected_metrics(expected.metrics)

    at.button(key="dm_use").click().run()
    assert not at.exception and not at.error
    s = at.session_state["setup"]
    assert s.dataset.name == "german_credit" and s.dataset.positive_class == "bad"
    assert s.model.name == "L2 logistic regression on german_credit"
    assert s.source == "trained here: L2 logistic regression (seed 1)"
    assert s.metrics == pytest.approx(expected.metrics)
    assert np.array_equal(s.train_rows, german.split(1)[0]) and np.array_equal(s.test_rows, german.split(1)[1])
    assert s.reference.values == make_reference(german, german.split(1)[0]).values
    np.testing.assert_allclose(s.model.score(german.features), expected.model.score(german.features))
    assert at.session_state["row"] == int(predicted_rows(s)[0])
    assert metric_values(at) == expected_metrics(expected.metrics)
    assert any("Now using **german_credit**" in visible(m.value) for m in at.success)
    assert any("**german_credit** · L2 logistic regression on german_credit" in visible(c) for c in at.caption.values)


def test_reference_statistic_custom_values_and_restricted_features(compas):
    data, trained = compas
    at = open_page()
    before = session(at)
    at.selectbox(key="dm_statistic").select("median").run()
    median = make_reference(data, trained.train_rows, statistic="median").values
    computed = at.data_editor(key="dm_reference").value["computed"]
    assert computed["age"] == cell(median["age"]) and computed["sex"] == str(median["sex"])
    assert (f"**Reference in use after “Use this setup”**: "
            f"{make_reference(data, trained.train_rows, statistic='median').description}."
            in [visible(c) for c in at.caption.values])
    at.multiselect(key="dm_restricted").set_value(["age", "sex"]).run()
    age = data.group_names.index("age")
    edit(at, "dm_reference", edited_rows={age: {"custom": "abc"}})  # a bad custom value: refused, nothing changes
    at.run()
    assert errors(at) == [message_of(lambda: make_reference(data, trained.train_rows, overrides={"age": "abc"}))]
    assert not [b for b in at.button if b.key == "dm_use"]
    assert_unchanged(at, before)

    edit(at, "dm_reference", edited_rows={age: {"custom": "40"}})
    at.run()
    at.button(key="dm_use").click().run()
    assert not at.exception and not at.error
    s = at.session_state["setup"]
    expected = make_reference(data, trained.train_rows, statistic="median", overrides={"age": "40"})
    assert s.reference.values == expected.values and s.reference.description == expected.description
    assert s.reference.values["age"] == 40.0
    assert s.reference.values["prior_offense_count"] == median["prior_offense_count"] != \
           make_reference(data, trained.train_rows).values["prior_offense_count"]
    assert s.restricted == ("sex", "age")  # dataset order
    assert s.model is before[0].model and s.model_key == before[0].model_key == "demo:compas:gbdt:0"
    assert at.session_state["row"] == before[2] and at.session_state["params"] == before[3]
    # back on the page, the custom value and the restricted features are shown as in use
    assert at.data_editor(key="dm_reference").value.at["age", "custom"] == "40"
    assert at.multiselect(key="dm_restricted").value == ["age", "sex"]  # as the analyst chose them


class WritesSentinel:
    """A pickle payload: unpickling it runs a shell command that creates ``path``."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(self.path)}",)


def test_pickle_is_refused_and_trusted_mode_is_the_operators(tmp_path, compas, compas_lr, monkeypatch):
    data, _ = compas
    sentinel = tmp_path / "pwned"
    payload = pickle.dumps(WritesSentinel(sentinel))
    expected = message_of(lambda: load_model_bytes(payload, "model.pkl"))
    at = open_page()
    before = session(at)
    at.radio(key="dm_model_source").set_value("upload").run()
    assert not at.toggle and not [c for c in at.checkbox if "trust" in c.label.lower()]  # nothing a visitor can flip
    assert any("only the server's operator" in visible(c).lower() for c in at.caption.values)
    upload(at, "dm_model_file", "model.pkl", payload)
    at.button(key="dm_load_model").click().run()
    assert errors(at) == [expected] and "pickle file" in expected and "operator" in expected
    assert not sentinel.exists()
    assert_unchanged(at, before)

    # the operator turns trusted mode on (environment of the server process): the page says so, pickles load
    monkeypatch.setenv(TRUSTED_ENV, "1")
    at.run()
    assert any("Trusted mode is on" in visible(w.value) for w in at.warning)
    fewer = replace(data, features=data.features.drop(columns=["age"]),
                    groups=tuple(g for g in data.groups if g.name != "age"))
    other = Pipeline([("encode", make_encoder(fewer)), ("lr", LogisticRegression(max_iter=200))])
    other.fit(fewer.features, fewer.y)
    buffer = io.BytesIO()
    joblib.dump(other, buffer)
    upload(at, "dm_model_file", "other.joblib", buffer.getvalue())
    at.button(key="dm_load_model").click().run()
    assert errors(at) == [message_of(lambda: wrap_model(other, data))]
    assert_unchanged(at, before)

    # a model with the right column names that cannot score these rows (it was fitted on numbers, not text)
    numeric = data.features.apply(lambda c: c if c.dtype.kind in "if" else c.astype("category").cat.codes)
    wrong = LogisticRegression(max_iter=200).fit(numeric, data.y)
    buffer = io.BytesIO()
    joblib.dump(wrong, buffer)
    upload(at, "dm_model_file", "numbers.joblib", buffer.getvalue())
    at.button(key="dm_load_model").click().run()
    assert not at.exception
    assert len(at.error) == 1 and visible(at.error[0].value).startswith("The model raised ValueError while scoring")
    assert_unchanged(at, before)

    # a benign pickle in trusted mode loads, with its metrics on the split of the chosen seed
    buffer = io.BytesIO()
    joblib.dump(compas_lr, buffer)
    upload(at, "dm_model_file", "model.joblib", buffer.getvalue())
    at.button(key="dm_load_model").click().run()
    assert not at.error
    train, test = data.split(0)
    assert metric_values(at) == expected_metrics(evaluate(wrap_model(compas_lr, data), data, train, test))
    at.button(key="dm_use").click().run()
    assert at.session_state["setup"].source == "uploaded model.joblib"


def test_skops_types_are_listed_with_what_they_are_and_loaded_once_confirmed(compas):
    data, _ = compas
    pipe = Pipeline([("encode", make_encoder(data)), ("neg", FunctionTransformer(np.vectorize(np.negative))),
                     ("lr", LogisticRegression(max_iter=1000))]).fit(data.features, data.y)
    blob = sio.dumps(pipe)
    types = sio.get_untrusted_types(data=blob)
    assert "numpy.vectorize" in types
    with pytest.raises(UntrustedModelError) as info:
        load_model_bytes(blob, "model.skops")
    at = open_page()
    before = session(at)
    at.radio(key="dm_model_source").set_value("upload").run()
    upload(at, "dm_model_file", "model.skops", blob)
    at.number_input(key="dm_threshold").set_value(0.3).run()
    at.button(key="dm_load_model").click().run()
    assert errors(at) == [str(info.value)]
    checks = next(d.value for d in at.dataframe if "type in the file" in d.value.columns)
    verdicts = dict(zip(checks["type in the file"], zip(checks["what it really is"], checks["verdict"])))
    assert verdicts == {"numpy.vectorize": ("numpy.vectorize (class)", "unknown"),
                        "numpy.dtype": ("numpy.dtype (class)", "allowed")}
    assert list(info.value.types) == ["numpy.vectorize"]
    confirm = at.checkbox(key="dm_trust_types")
    assert "1 unvetted types" in confirm.label
    assert_unchanged(at, before)
    confirm.check().run()
    at.button(key="dm_load_model").click().run()
    assert not at.error and not at.exception
    model = wrap_model(pipe, data, threshold=0.3)
    assert metric_values(at) == expected_metrics(evaluate(model, data, *data.split(0)))


# --- the explain_core helpers the page relies on ------------------------------------------------------------------

def test_load_model_bytes_and_untrusted_types(tmp_path, compas_lr):
    pipe = Pipeline([("neg", FunctionTransformer(np.vectorize(np.negative))), ("lr", LogisticRegression())])
    pipe.fit(np.eye(4), [0, 1, 0, 1])
    blob = sio.dumps(pipe)
    with pytest.raises(UntrustedModelError) as info:
        load_model_bytes(blob, "some/dir/model.skops")
    assert "numpy.vectorize" in info.value.types and str(info.value).startswith("model.skops contains classes")
    loaded = load_model_bytes(blob, "model.skops", trusted_types=info.value.types)
    np.testing.assert_array_equal(loaded.predict_proba(np.eye(4)), pipe.predict_proba(np.eye(4)))
    with pytest.raises(UntrustedModelError) as info:
        load_model_bytes(pickle.dumps(compas_lr), "model.pkl")
    assert info.value.types == ()
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(compas_lr))
    with pytest.raises(UntrustedModelError) as direct:
        load_model_file(tmp_path / "model.pkl")
    assert str(info.value) == str(direct.value)


def test_corrupt_pickle_in_trusted_mode_is_an_intake_error():
    with pytest.raises(IntakeError, match="model.pkl could not be unpickled"):
        load_model_bytes(b"not a pickle at all", "model.pkl", trusted=True)


def test_infer_task_and_text_regression_target():
    assert infer_task(pd.Series([1.5, 2.0, 3.0, np.nan])) == "regression"
    assert infer_task(pd.Series([0, 1, 1, np.nan])) == "classification"
    assert infer_task(pd.Series(["a", "b", "c"])) == "classification"
    frame = pd.DataFrame({"x": [1, 2, 3, 4], "y": ["a", "b", "c", "a"]})
    assert make_dataset(frame, "y", positive_class="a").task == infer_task(frame["y"])
    with pytest.raises(IntakeError, match="Target 'y' holds text .* cannot be a regression target"):
        make_dataset(frame, "y", task="regression")


# --- an uploaded model's test rows ------------------------------------------------------------------------------

def test_an_uploaded_models_metrics_say_it_may_have_seen_the_test_rows_unless_told(compas, compas_lr):
    """compas_lr was fitted on every row: on the app's split its 'test' metrics are on rows it saw, and the page
    says so; ticked 'none of these rows was used in training', every row is a test row and the warning goes."""
    from explain_core.vocabulary import metrics_caveat

    data, _ = compas
    at = open_page()
    at.radio(key="dm_model_source").set_value("upload").run()
    upload(at, "dm_model_file", "model.skops", sio.dumps(compas_lr))
    at.button(key="dm_load_model").click().run()
    assert not at.error and not at.exception
    model = wrap_model(compas_lr, data)
    train, test = data.split(0)
    assert metric_values(at) == expected_metrics(evaluate(model, data, train, test))
    warned = [w.value for w in at.warning if "possibly on some of these very rows" in w.value]
    assert warned == [metrics_caveat({"test_rows": "may_be_seen"})]
    at.checkbox(key="dm_unseen").check().run()
    at.button(key="dm_load_model").click().run()
    every = np.arange(len(data.features))
    assert metric_values(at) == expected_metrics(evaluate(model, data, train, every))
    assert not [w for w in at.warning if "possibly on some of these very rows" in w.value]
    assert any("every row of the table" in c.value for c in at.caption)
    assert at.session_state["dm_model"].metrics["test_rows"] == "unseen"


def test_a_holdout_column_or_file_sets_the_test_rows():
    """The analyst's hold-out — a column of the table (left out of the features) or a second file appended — is the
    split of every model: the metrics of an upload are on those rows, brute-force checked with scikit-learn."""
    from sklearn.metrics import accuracy_score

    from explain_core.analysis import model_from_upload
    from explain_core.intake.holdout import append_holdout, holdout_by_column

    frame = load_demo("compas").features.assign(two_year_recid=load_demo("compas").target)
    frame["subset"] = np.where(np.arange(len(frame)) % 4 == 0, "test", "train")
    at = open_page()
    at.radio(key="dm_data_source").set_value("upload").run()
    upload(at, "dm_upload", "compas.csv", frame.to_csv(index=False).encode())
    at.selectbox(key="dm_target").select("two_year_recid").run()
    at.radio(key="dm_holdout").set_value("column").run()
    assert at.selectbox(key="dm_holdout_column").value == "subset"  # found by its name
    assert at.selectbox(key="dm_holdout_value").value == "test"
    at.button(key="dm_build").click().run()
    assert not at.exception and not at.error
    built = at.session_state["dm_dataset"]
    marked = np.flatnonzero(frame["subset"].to_numpy() == "test")
    assert "subset" not in built.columns and list(built.holdout) == list(marked)
    assert [list(part) for part in built.split(3)] == [list(np.setdiff1d(np.arange(len(frame)), marked)), list(marked)]
    fitted = Pipeline([("encode", make_encoder(built)), ("lr", LogisticRegression(max_iter=1000))]).fit(
        built.features, built.y)
    trained = model_from_upload(built, sio.dumps(fitted), "lr.skops")
    assert trained.metrics["test_rows"] == "holdout" and list(trained.test_rows) == list(marked)
    assert trained.metrics["test_accuracy"] == pytest.approx(
        accuracy_score(built.y[marked], fitted.predict(built.features.iloc[marked])))
    # a second file of held-out rows: appended, its rows the test rows
    head, tail = frame.iloc[:5000], frame.iloc[5000:]
    joined, rows = append_holdout(head, tail[list(reversed(frame.columns))])
    pd.testing.assert_frame_equal(joined, frame.reset_index(drop=True))
    assert list(rows) == list(range(5000, len(frame)))
    assert "lacks subset" in message_of(lambda: append_holdout(head, tail.drop(columns="subset")))
    at = open_page()  # … and on the page
    at.radio(key="dm_data_source").set_value("upload").run()
    upload(at, "dm_upload", "head.csv", head.to_csv(index=False).encode())
    at.selectbox(key="dm_target").select("two_year_recid").run()
    at.radio(key="dm_holdout").set_value("file").run()
    upload(at, "dm_holdout_file", "tail.csv", tail.to_csv(index=False).encode())
    at.button(key="dm_build").click().run()
    assert not at.exception and not at.error
    built = at.session_state["dm_dataset"]
    assert len(built.features) == len(frame) and list(built.holdout) == list(range(5000, len(frame)))
    assert "does not occur" in message_of(lambda: holdout_by_column(frame, "subset", "validation"))
    assert "Every row is marked" in message_of(lambda: holdout_by_column(frame.assign(subset="test"), "subset",
                                                                          "test"))
