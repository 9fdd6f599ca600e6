"""Security hardening (issue 17), one test per row of the attack table, in the library and, where a visitor
acts through a page, through the page (AppTest). Payloads write a sentinel file that must never appear; each
attack also shows it is live (what happens when the guard is bypassed), so a test cannot pass by accident."""
from __future__ import annotations

import csv
import io
import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from streamlit.testing.v1 import AppTest

from conftest import visible
from explain_core import NonFiniteScores, UntrustedModelError, explain_lime, explain_sev, lens_contexts, make_reference
from explain_core.analysis import Parameters, make_setup
from explain_core.errors import IntakeError, ModelCallError
from explain_core.export import neutralise, to_csv
from explain_core.intake.data import make_dataset
from explain_core.intake.demos import load_demo
from explain_core.intake.demo_models import demo_model, train_model
from explain_core.intake.formats import TRUSTED_ENV
from explain_core.intake.loading import load_model_bytes
from explain_core.intake.models import ModelAdapter, wrap_model
from explain_core.intake.skops_policy import ALLOWED_TYPES, check_types, danger
from explain_core.intake.tables import read_table, safe_name
from explain_core.lens import ContextOptions, opposite_references
from explain_core.linear import explain_linear, group_space
from explain_core.report import write_index
from explain_core.setup import UploadChoices, model_from_upload
from hostile import (DISGUISED, FORMULAS, disguised_skops, eval_payload_skops, markdown_table, nested_parquet,
                     onnx_loop, onnx_memory_hog, parquet_bomb, skops_array_bomb, wide_header)

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


@pytest.fixture(autouse=True)
def _no_trusted_mode(monkeypatch):
    monkeypatch.delenv(TRUSTED_ENV, raising=False)


def open_data_model(secrets: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for key, value in (secrets or {}).items():
        at.secrets[key] = value
    at.run()
    at.switch_page("app_pages/data_model.py").run()
    at.radio(key="dm_model_source").set_value("upload").run()
    assert not at.exception
    return at


def upload_model(at: AppTest, name: str, data: bytes) -> AppTest:
    """Put a file into the model uploader (as the browser would) and press Load model."""
    at.file_uploader(key="dm_model_file").set_value((name, data, "application/octet-stream")).run()
    at.button(key="dm_load_model").click().run()
    assert not at.exception, at.exception
    return at


# --- 1 · trusted mode is the operator's ---------------------------------------------------------------------

def test_row1_a_visitor_cannot_turn_on_trusted_mode(tmp_path):
    sentinel = tmp_path / "pwned"
    payload = pickle.dumps(_WritesSentinel(sentinel))
    at = open_data_model()
    assert not at.toggle and not any("trust" in c.label.lower() for c in at.checkbox)
    upload_model(at, "model.pkl", payload)
    assert any("only the server's operator" in visible(e.value).lower() for e in at.error)
    assert not sentinel.exists()
    # the operator's secrets (server side) do turn it on: the pickle is unpickled — in the sandboxed worker, where
    # the payload's command cannot run
    at = open_data_model({"trusted_models": True})
    assert any("Trusted mode is on" in visible(w.value) for w in at.warning)
    upload_model(at, "model.pkl", payload)
    assert any("not a model" in visible(e.value) for e in at.error)
    assert not sentinel.exists()
    pickle.loads(payload)  # the payload is live: unpickled in this process, it runs
    assert sentinel.exists()


def test_row1_a_pickle_loaded_while_trusted_is_not_served_from_the_cache_once_trust_is_off(monkeypatch):
    """Issue 51: the cache of loaded models is keyed on trusted mode (a pickle stayed usable after the operator
    turned trusted mode off, until a restart)."""
    import joblib
    from sklearn.linear_model import LogisticRegression

    from ui import uploads

    frame = pd.DataFrame({"x": np.arange(20.0), "y": np.arange(20) % 2})
    data = make_dataset(frame, "y")
    buffer = io.BytesIO()
    joblib.dump(LogisticRegression().fit(frame[["x"]], frame["y"]), buffer)
    args = (data, buffer.getvalue(), uploads.ModelUpload(data.key, "digest", "model.pkl", UploadChoices()))
    monkeypatch.setenv(TRUSTED_ENV, "1")
    assert uploads.load_cached(*args).model.sandboxed
    assert uploads.load_cached(*args) is uploads.load_cached(*args)  # cached while trusted
    monkeypatch.setenv(TRUSTED_ENV, "0")
    with pytest.raises(UntrustedModelError, match="is a pickle file.*Only the server's operator can allow"):
        uploads.load_cached(*args)


class _WritesSentinel:
    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return os.system, (f"touch '{self.path}'",)


# --- 2, 3 · skops by allow-list --------------------------------------------------------------------------------

def test_allow_list_resolves_to_harmless_classes_and_functions():
    checks = check_types(sorted(ALLOWED_TYPES))
    assert [c.verdict for c in checks] == ["allowed"] * len(ALLOWED_TYPES), [c for c in checks
                                                                             if c.verdict != "allowed"]
    assert all("(class)" in c.resolved or "(function)" in c.resolved for c in checks)


@pytest.mark.parametrize("name", ["builtins.eval", "builtins.exec", "builtins.compile", "builtins.open",
                                  "builtins.getattr", "builtins.__import__", "os.system", "posix.system",
                                  "shutil.rmtree", "subprocess.Popen", "sys.exit", "importlib.import_module",
                                  "pickle.loads", "marshal.loads", "functools.partial", "operator.attrgetter",
                                  "operator.methodcaller", "numpy.load", "numpy.save", "pandas.read_pickle",
                                  "scipy._lib._tmpdirs.rmtree", "sklearn.datasets._california_housing.remove"])
def test_code_running_and_file_touching_names_are_dangerous(name):
    [check] = check_types([name], trusted=True)
    assert check.verdict == "dangerous", check


def test_danger_checks_the_object_not_the_name():
    import scipy._lib._tmpdirs as tmpdirs
    import sklearn.datasets._california_housing as housing

    assert tmpdirs.rmtree is __import__("shutil").rmtree and housing.remove is os.remove  # the aliases are real
    assert danger(tmpdirs.rmtree) and danger(housing.remove) and danger(os.system)
    assert danger(np.log1p) is None and danger(pd.DataFrame) is None


def test_row2_eval_payload_is_refused_even_confirmed_and_in_trusted_mode(tmp_path, monkeypatch):
    sentinel = tmp_path / "pwned"
    blob = eval_payload_skops(sentinel)
    types = sio.get_untrusted_types(data=blob)
    assert {"builtins.eval", "functools.partial"} <= set(types)
    for trusted in (None, True):
        with pytest.raises(UntrustedModelError, match="refused") as info:
            load_model_bytes(blob, "model.skops", trusted=trusted, trusted_types=types)
        assert info.value.types == ()  # nothing that can be confirmed
        assert {c.name for c in info.value.checks if c.verdict == "dangerous"} >= {"builtins.eval",
                                                                                   "functools.partial"}
    assert not sentinel.exists()
    loaded = sio.loads(blob, trusted=types)  # bypassing the guard: the payload runs on the first scoring call
    with pytest.raises(Exception):  # noqa: B017 (whatever the payload raises: what matters is that it ran)
        loaded.predict(pd.DataFrame({"a": [1.0], "b": [0.0]}))
    assert sentinel.exists()


@pytest.mark.parametrize("alias, real, resolved", DISGUISED)
def test_row3_disguised_names_are_refused_with_what_they_really_are(alias, real, resolved):
    blob = disguised_skops(alias, real)
    name = f"{alias}.{real.__name__}"
    assert name in sio.get_untrusted_types(data=blob)
    with pytest.raises(UntrustedModelError) as info:
        load_model_bytes(blob, "model.skops", trusted=True, trusted_types=[name])
    assert f"{name} (really {resolved}" in str(info.value)
    assert sio.loads(blob, trusted=[name]).func is real  # the name does point to the dangerous function


def test_rows2_3_through_the_page_no_confirmation_is_offered(tmp_path, monkeypatch):
    sentinel = tmp_path / "pwned"
    monkeypatch.setenv(TRUSTED_ENV, "1")  # even in the operator's trusted mode
    at = open_data_model()
    upload_model(at, "model.skops", eval_payload_skops(sentinel))
    assert any("refused" in visible(e.value) and "builtins.eval" in visible(e.value) for e in at.error)
    assert not [c for c in at.checkbox if c.key == "dm_trust_types"]
    table = next(d.value for d in at.dataframe if "type in the file" in d.value.columns)
    assert set(table.loc[table["verdict"] == "dangerous", "type in the file"]) >= {"builtins.eval", "functools.partial"}
    upload_model(at, "rm.skops", disguised_skops(*DISGUISED[0][:2]))
    assert any("really shutil.rmtree" in visible(e.value) for e in at.error)
    assert not sentinel.exists()


# --- 4 · limits where the bytes are decoded -------------------------------------------------------------------

def test_row4_parquet_expanding_past_the_row_limit_is_refused_from_its_footer(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    path = parquet_bomb(3_000_000, tmp_path / "bomb.parquet")
    assert path.stat().st_size < 200_000  # tiny on disk
    monkeypatch.setattr(pq.ParquetFile, "read", lambda *a, **k: pytest.fail("the data was decoded"))
    with pytest.raises(IntakeError, match="number of rows is 3,000,000, over this server's limit of 2,000,000"):
        read_table(path)


def test_row4_csv_is_read_in_chunks_and_stopped_at_the_limits(monkeypatch):
    monkeypatch.setenv("EXPLAIN_MAX_ROWS", "1000")
    monkeypatch.setattr("explain_core.intake.tables.CSV_CHUNK_ROWS", 500)
    data = ("a,b\n" + "1,2\n" * 5000).encode()
    with pytest.raises(IntakeError, match=r"number of rows \(at least, counted so far\) is 1,500, over .* 1,000"):
        read_table(data, filename="long.csv")
    monkeypatch.setenv("EXPLAIN_MAX_CELLS", "3000")
    monkeypatch.setenv("EXPLAIN_MAX_ROWS", "100000")
    with pytest.raises(IntakeError, match="number of cells"):
        read_table(data, filename="long.csv")


def test_row4_skops_array_bomb_is_refused_before_decoding(monkeypatch):
    blob = skops_array_bomb(2_000_000)  # 16 MB of zeros, compressed to a few KB
    assert len(blob) < 100_000
    monkeypatch.setenv("EXPLAIN_MAX_MODEL_ARRAY_MB", "8")
    with pytest.raises(IntakeError, match=r"decoded size of the stored array .* in bomb.skops is 15 MB, "
                                          r"over this server's limit of 8 MB"):
        load_model_bytes(blob, "bomb.skops")
    monkeypatch.setattr(sio, "load", lambda *a, **k: pytest.fail("decoded"))
    with pytest.raises(IntakeError):
        load_model_bytes(blob, "bomb.skops")


def test_row5_onnx_that_never_returns_or_allocates_without_bound_is_refused_at_upload(monkeypatch):
    """Through the upload path (which scores the data's first rows): a clear message each (more in test_sandbox)."""
    monkeypatch.setenv("EXPLAIN_MAX_MODEL_SECONDS", "3")
    data = make_dataset(pd.DataFrame({"a": np.arange(30.0), "b": 1.0, "c": 2.0, "y": np.arange(30) % 2}), "y")
    with pytest.raises(IntakeError, match="did not finish scoring 20 rows within 3 s"):
        model_from_upload(data, onnx_loop(), "loop.onnx", UploadChoices(by_order=True))
    with pytest.raises(IntakeError, match="memory"):
        model_from_upload(data, onnx_memory_hog(), "hog.onnx", UploadChoices(by_order=True))


def test_limits_are_the_operators_and_checked(monkeypatch):
    from explain_core.limits import limits

    monkeypatch.setenv("EXPLAIN_MAX_ROWS", "123")
    assert limits().rows == 123
    monkeypatch.setenv("EXPLAIN_MAX_ROWS", "many")
    with pytest.raises(IntakeError, match="EXPLAIN_MAX_ROWS='many' is not a number"):
        limits()


# --- 5 · bounded work -----------------------------------------------------------------------------------------

def test_row5_wide_header_is_refused_in_one_pass():
    with pytest.raises(IntakeError, match="number of columns is 20,000, over this server's limit of 2,000"):
        read_table(wide_header(20_000), filename="wide.csv")
    duplicates = (",".join(["x"] * 1500) + "\n" + ",".join(["1"] * 1500) + "\n").encode()
    with pytest.raises(IntakeError, match="duplicate column names: x"):
        read_table(duplicates, filename="dupes.csv")


def test_row5_lens_factor_size_is_bounded_before_any_factor_is_built():
    columns = [f"x{j}" for j in range(30)]
    data = make_dataset(pd.DataFrame({**{c: [0.0, 1.0] for c in columns}, "y": [0, 1]}), "y")
    model = ModelAdapter(_Sum(columns), columns, "classification", score_kind="decision", threshold=0.0)
    refs = data.features.iloc[[0]]
    with pytest.raises(IntakeError, match=r"factors of up to 30 of 30 features, 1 reference rows and 2 context\(s\): "
                                          r".* \(here at most \d+ fits\)"):
        lens_contexts(model, data, data.features.iloc[[1]], refs, ContextOptions(max_size=30))


class _Sum:
    classes_ = np.array([0, 1])

    def __init__(self, columns):
        self.columns = columns

    def decision_function(self, X):
        return X[self.columns].to_numpy(float).sum(axis=1) - 14.5


def test_row5_linear_samples_and_training_rows_are_bounded(monkeypatch):
    data = load_demo("compas")
    trained = demo_model(data, "l2_lr")
    row = data.features.iloc[[0]]
    space = group_space(trained.model, data, row, make_reference(data, trained.train_rows))
    with pytest.raises(IntakeError, match="number of samples m is 1,000,000, over this server's limit of 200,000"):
        explain_linear(space, m=1_000_000)
    monkeypatch.setenv("EXPLAIN_MAX_TRAIN_ROWS", "1000")
    with pytest.raises(IntakeError, match="number of training rows is 4,937, over this server's limit of 1,000"):
        train_model(data, "gbdt")


# --- 6 · rendering ----------------------------------------------------------------------------------------------

PAGES = ["app_pages/home.py", "app_pages/data_model.py", "app_pages/pick_row.py", "app_pages/sev.py",
         "app_pages/lens.py", "app_pages/linear.py", "app_pages/compare.py", "app_pages/report.py"]


@pytest.fixture(scope="module")
def markdown_setup():
    data = make_dataset(markdown_table(), "label", positive_class="yes", name="**upload**")
    return make_setup(data, train_model(data, "l2_lr"))


def markdown_sources(at: AppTest) -> list[str]:
    """The markdown source of every element that renders markdown (text, alerts, metric labels, help)."""
    parts = [e.value for kind in ("markdown", "caption", "info", "success", "warning", "error", "title", "subheader")
             for e in at.get(kind)]
    return parts + [m.label for m in at.metric] + [m.help or "" for m in at.metric]


@pytest.mark.parametrize("page", PAGES)
def test_row6_user_names_are_never_markdown_on_any_page(markdown_setup, page):
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["setup"] = markdown_setup
    at.session_state["row"] = int(markdown_setup.test_rows[0])
    at.session_state["params"] = Parameters(m=300, lens_references=20, lime_samples=200, shap_background=20)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    sources = markdown_sources(at)
    for raw in ("![x](", "**bold**", "<b>red</b>", "[blue](", "**upload**"):
        assert not [s for s in sources if raw in s], (page, raw)
    assert any("**upload**" in visible(s) for s in sources)  # shown, literally


def test_row6_plot_labels_escape_html(markdown_setup):
    from explain_core.analysis import row_baselines
    from explain_core.views.compare import attribution_figure

    base = row_baselines(markdown_setup, markdown_setup.query(0), Parameters(lime_samples=200, shap_background=20))
    fig = attribution_figure(markdown_setup.dataset.group_names, {"LIME": base.lime.values})
    assert all("<" not in label for label in fig.data[0].y)


# --- 7 · exports ---------------------------------------------------------------------------------------------------

def test_row7_csv_cells_and_headers_starting_a_formula_are_neutralised(tmp_path):
    table = pd.DataFrame({"=1+2": list(FORMULAS), "n": [-1.5, 2.0, 3.0, -4.0, 5.0],
                          "tab": ["\tx", "\ry", "z", "", "a"]})
    header, *rows = list(csv.reader(io.StringIO(to_csv(table).decode(), newline="")))
    assert header == ["'=1+2", "n", "tab"]
    assert [r[0] for r in rows] == ["'" + f for f in FORMULAS]
    assert [r[1] for r in rows] == ["-1.5", "2.0", "3.0", "-4.0", "5.0"]  # numbers stay numbers
    assert [r[2] for r in rows] == ["'\tx", "'\ry", "z", "", "a"]
    assert neutralise("plain") == "plain" and neutralise(-3) == -3
    index = write_index([{"row": 1, "prediction": "=cmd", "lens_smallest_factor": "@SUM(1)"}], tmp_path / "i.csv")
    assert "'=cmd" in index.read_text() and "'@SUM(1)" in index.read_text()


# --- 8 · NaN/inf honesty ---------------------------------------------------------------------------------------------

class _NaNOnMixedRows:
    """Scores real rows of ``known`` with a logistic model and every other (mixed) row as NaN."""

    classes_ = np.array([0, 1])

    def __init__(self, known: pd.DataFrame):
        self.columns = list(known.columns)
        self.known = set(map(tuple, known.astype(str).to_numpy()))

    def predict_proba(self, X):
        p = 1 / (1 + np.exp(-(X["age"].to_numpy(float) - 30) / 5))
        real = np.array([tuple(r) in self.known for r in X[self.columns].astype(str).to_numpy()])
        p = np.where(real, p, np.nan)
        return np.column_stack([1 - p, p])


@pytest.fixture(scope="module")
def nan_model():
    data = load_demo("compas")
    model = ModelAdapter(_NaNOnMixedRows(data.features), data.columns, "classification", positive_class=1)
    return data, model, make_reference(data)


def test_row8_nan_scores_stop_each_method_with_its_name(nan_model):
    data, model, reference = nan_model
    row = data.features.iloc[[3]]
    with pytest.raises(NonFiniteScores, match=r"NaN or infinite scores for \d+ of \d+ rows while computing SEV"):
        explain_sev(model, data, row, reference)
    refs = opposite_references(model, data, row, n=20)
    with pytest.raises(NonFiniteScores, match="while computing LENS"):
        lens_contexts(model, data, row, refs)
    with pytest.raises(NonFiniteScores, match="while computing LIME"):
        explain_lime(model, data, row, np.arange(200), num_samples=100)
    with pytest.raises(NonFiniteScores, match="while computing the linear explanation"):
        explain_linear(group_space(model, data, row, reference), m=100)


def test_row8_nan_scores_are_shown_as_a_message_on_the_page(nan_model):
    data, model, _ = nan_model
    from explain_core.intake.trained import TrainedModel

    train, test = data.split(0)
    setup = make_setup(data, TrainedModel(model, train, test, {}, key="nan", source="NaN on mixed rows"))
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["setup"] = setup
    at.session_state["row"] = int(test[0])
    at.run()
    at.switch_page("app_pages/sev.py").run()
    assert not at.exception
    assert any("NaN or infinite scores" in visible(e.value) and "SEV" in visible(e.value) for e in at.error)
    assert at.session_state["setup"] is setup  # the session keeps its state


# --- 9 · every other odd input gets a clear message ----------------------------------------------------------------

def test_row9_tiny_files_cannot_be_trained_on():
    tiny = make_dataset(pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": [0, 1, 0]}), "y")
    with pytest.raises(IntakeError, match="has 3 rows; a train/test split needs at least 10"):
        train_model(tiny, "gbdt")
    skewed = make_dataset(pd.DataFrame({"a": np.arange(20.0), "y": [1] + [0] * 19}), "y")
    with pytest.raises(IntakeError, match="Only 1 row"):
        train_model(skewed, "l2_lr")


def test_row9_infinite_values_and_huge_targets_are_refused():
    with pytest.raises(IntakeError, match=r"Columns with infinite values: a \(1\)"):
        make_dataset(pd.DataFrame({"a": [1.0, np.inf, 3.0], "y": [0, 1, 0]}), "y")
    with pytest.raises(IntakeError, match="reaches 1e\\+300"):
        make_dataset(pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": [1e300, -1e300, 5.0]}), "y", task="regression")
    with pytest.raises(IntakeError, match="infinite values"):
        make_dataset(pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": [np.inf, 1.0, 5.0]}), "y", task="regression")


def test_row9_nested_parquet_long_names_and_decimal_commas():
    with pytest.raises(IntakeError, match="nested columns .*: x; flatten"):
        read_table(nested_parquet(), filename="nested.parquet")
    long = "a" * 300 + ".csv"
    assert len(safe_name(long)) <= 80 and safe_name(long).endswith(".csv")
    with pytest.raises(IntakeError) as info:
        load_model_bytes(b"junk", "m" * 300 + ".skops")
    assert len(str(info.value)) < 500
    semicolons = read_table("a;b;y\n5,5;1,25;0\n6,5;2,5;1\n".encode(), filename="eu.csv")
    assert semicolons["a"].tolist() == [5.5, 6.5] and semicolons["b"].dtype.kind == "f"
    with pytest.raises(IntakeError, match="decimal commas"):
        read_table('a,y\n"5,5",0\n"6,5",1\n'.encode(), filename="quoted.csv")


def test_row9_a_model_that_raises_on_some_rows_gets_a_message():
    data = load_demo("compas")

    class Fragile:
        classes_ = np.array([0, 1])
        feature_names_in_ = np.array(data.columns, dtype=object)

        def predict_proba(self, X):
            if (X["age"] > 60).any():
                raise ValueError("age out of range")
            return np.tile([0.4, 0.6], (len(X), 1))

    model = wrap_model(Fragile(), data, positive_class=1)
    with pytest.raises(ModelCallError, match="The model raised ValueError while scoring .*age out of range"):
        model.score(data.features)


def test_row9_a_non_number_row_link_falls_back_to_the_default_row():
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["row"] = "²"
    at.run()
    assert not at.exception and not at.error
    assert at.session_state["row"] != 2


def test_row7_every_csv_download_of_the_pages_is_neutralised(monkeypatch, tmp_path):
    """The Pick a row page's CSV of a table whose cells and headers are formulas: built through the one writer."""
    from streamlit.delta_generator import DeltaGenerator

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"=1+2": rng.normal(size=60), "note": rng.choice(list(FORMULAS), size=60),
                          "y": rng.integers(0, 2, size=60)})
    data = make_dataset(frame, "y")
    setup = make_setup(data, train_model(data, "l2_lr"))
    downloads: dict[str, bytes] = {}
    original = DeltaGenerator.download_button

    def capture(self, label, data, *args, **kwargs):
        downloads[kwargs.get("file_name", label)] = data() if callable(data) else data
        return original(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", capture)
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["setup"] = setup
    at.session_state["row"] = int(setup.test_rows[0])
    at.run()
    at.switch_page("app_pages/pick_row.py").run()
    assert not at.exception and not at.error
    header, *rows = list(csv.reader(io.StringIO(downloads["rows.csv"].decode(), newline="")))
    assert "'=1+2" in header and "=1+2" not in header
    cells = [c for r in rows for c in r]
    assert not [c for c in cells if c.startswith(("=", "+", "@")) or (c.startswith("-") and not _number(c))]


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def test_row5_page_controls_are_bounded_by_the_limits(monkeypatch):
    from explain_core.lens import largest_factor_size
    from explain_core.lens.search import FactorSearch, search_factors
    from explain_core.limits import limits

    at = AppTest.from_file(APP, default_timeout=90).run()
    at.switch_page("app_pages/linear.py").run()
    assert at.number_input(key="lin_m").max == limits().linear_samples
    german = make_setup(load_demo("german_credit"), demo_model("german_credit", "gbdt"))
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["setup"] = german
    at.session_state["row"] = int(german.test_rows[0])
    at.session_state["params"] = Parameters(lens_references=2000)
    at.run()
    at.switch_page("app_pages/lens.py").run()
    assert not at.exception
    assert largest_factor_size(20, 2000) < 20  # the exhaustive contexts are bounded by the lens_samples limit …
    assert at.number_input(key="lens_budget").max == limits().lens_rows  # … the layered search, in model rows …
    data = load_demo("german_credit")
    monkeypatch.setenv("EXPLAIN_MAX_LENS_SAMPLES", "10000")  # … and in memory (10 × lens_samples labels)
    query = data.features.iloc[[int(german.test_rows[0])]]
    found = search_factors(german.model, data, query, data.features.iloc[german.train_rows[:100]],
                           FactorSearch(tau=1.0, budget_rows=None))
    assert found.stopped == "memory" and len(found.context.masks) * 100 <= 100_000
    monkeypatch.delenv("EXPLAIN_MAX_LENS_SAMPLES")
    monkeypatch.setenv("EXPLAIN_MAX_TRAIN_ROWS", "500")
    at = open_data_model()
    at.radio(key="dm_model_source").set_value("train").run()
    at.button(key="dm_train").click().run()
    assert any("number of training rows is 4,937, over this server's limit of 500" in visible(e.value)
               for e in at.error)
