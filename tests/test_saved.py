"""Saved analyses through the library: the store on SQLite and on PostgreSQL (round trip, limits, expiry, isolation,
tokens, tampering; a damaged or locked SQLite file) and the recipes (a session's state as JSON, rebuilt into the
same setup, an uploaded model through the sandbox)."""
from __future__ import annotations

import hashlib
import io
import sqlite3
import threading

import numpy as np
import pandas as pd
import pytest

from explain_core import IntakeError
from explain_core.analysis import Parameters, demo_setup, make_setup, predicted_rows
from explain_core.intake.data import make_dataset
from explain_core.intake.demo_models import train_model
from explain_core.intake.layout import TableChoices
from explain_core.limits import Limits
from explain_core.saved import (AnalysisState, DataRecipe, FileRef, ModelRecipe, SavedNotFound, SavedStore,
                                new_token, rebuild)
from explain_core.saved.records import MAX_NAME, token_hash
from explain_core.saved.schema import FILE_NAME
from explain_core.setup import UploadChoices, model_from_upload
from store_backends import rows

MB = 2 ** 20
DAY = 86_400.0


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(open_store, clock):
    return open_store(caps=Limits(saved_mb=1.0, saved_analysis_mb=0.5, saved_days=30), clock=clock)


def blob(n: int, seed: int = 0) -> tuple[str, bytes]:
    data = np.random.default_rng(seed).bytes(n)
    return hashlib.sha256(data).hexdigest(), data


# --- the store ------------------------------------------------------------------------------------------------

def test_a_session_round_trips_and_rewrites_only_its_changed_files(store):
    token = new_token()
    (a, data_a), (b, data_b) = blob(1000, 1), blob(2000, 2)
    assert store.save_session(token, '{"v": 1}', {a: data_a}) == 8 + 1000
    back = store.open_session(token)
    assert back.state == '{"v": 1}' and back.files == {a: data_a}
    store.save_session(token, '{"v": 2}', {b: data_b})  # the state no longer names a: it goes, b comes
    back = store.open_session(token)
    assert back.state == '{"v": 2}' and back.files == {b: data_b}
    assert rows(store, "SELECT COUNT(*), SUM(size) FROM records") == [(1, 8 + 2000)]
    assert store.usage() == 8 + 2000


def test_only_hashes_of_tokens_are_stored(store):
    token = new_token()
    store.save_session(token, "{}", {})
    info = store.save_analysis(token, "mine")
    cells = [bytes(c) if isinstance(c, (bytes, memoryview)) else str(c).encode()
             for table in ("records", "files") for row in rows(store, f"SELECT * FROM {table}") for c in row]
    assert not any(token.encode() in c or info.share_token.encode() in c for c in cells)
    assert rows(store, "SELECT COUNT(*) FROM records WHERE token_hash = ?", token_hash(token)) == [(1,)]
    if store.path is not None:  # the SQLite file itself, and its journal
        raw = store.path.read_bytes() + b"".join(p.read_bytes() for p in store.path.parent.glob(f"{FILE_NAME}-*"))
        assert token.encode() not in raw and info.share_token.encode() not in raw
        assert oct(store.path.stat().st_mode & 0o777) == "0o600"


def test_bad_and_unknown_tokens_are_not_found(store):
    for bad in ("", "short", "x" * 43 + "!", "../../etc/passwd", "a" * 44):
        with pytest.raises(SavedNotFound, match="incomplete or mistyped"):
            store.open_session(bad)
    with pytest.raises(SavedNotFound, match="not on this server"):
        store.open_session(new_token())
    with pytest.raises(SavedNotFound, match="not on this server"):
        store.open_share(new_token())


def test_a_shared_link_opens_a_copy_under_a_new_token(store):
    owner = new_token()
    sha, data = blob(500)
    store.save_session(owner, '{"v": 1}', {sha: data})
    info = store.save_analysis(owner, "  credit   model, v1 ", "german_credit · L2 · row 3")
    assert info.name == "credit model, v1" and info.summary == "german_credit · L2 · row 3"
    assert [i.name for i in store.list_analyses(owner)] == ["credit model, v1"]
    viewer, name = store.open_share(info.share_token)
    assert name == "credit model, v1" and viewer != owner
    assert store.open_session(viewer).files == {sha: data}
    store.save_session(viewer, '{"v": "changed by the viewer"}', {})  # the viewer works on their copy
    assert store.list_analyses(viewer) == []  # the viewer owns nothing
    again, _ = store.open_share(info.share_token)  # the saved analysis itself is as it was
    assert store.open_session(again).state == '{"v": 1}' and store.open_session(owner).state == '{"v": 1}'
    with pytest.raises(SavedNotFound):
        store.open_share(owner)  # a session token is no share token


def test_nothing_of_one_token_is_reachable_from_another(store):
    alice, bob = new_token(), new_token()
    sha, data = blob(300)
    store.save_session(alice, '{"who": "alice"}', {sha: data})
    info = store.save_analysis(alice, "alice's")
    store.save_session(bob, '{"who": "bob"}', {})
    assert store.open_session(bob).files == {} and store.list_analyses(bob) == []
    assert not store.delete_analysis(bob, info.id)
    with pytest.raises(SavedNotFound):
        store.open_saved(bob, info.id)
    assert store.open_session(bob).state == '{"who": "bob"}'
    store.open_saved(alice, info.id)  # the owner can bring it back into her session
    assert store.open_session(alice).files == {sha: data}
    assert store.delete_analysis(alice, info.id)
    with pytest.raises(SavedNotFound):
        store.open_share(info.share_token)  # a deleted analysis's link stops working
    assert rows(store, "SELECT COUNT(*) FROM files") == [(1,)]  # alice's session's copy only


def test_sizes_are_checked_before_anything_is_written(store):
    token, other = new_token(), new_token()
    big_sha, big = blob(int(0.6 * MB))
    with pytest.raises(IntakeError, match="over this server's limit of 0 MB.*EXPLAIN_MAX_"):
        store.save_session(token, "{}", {big_sha: big})  # over saved_analysis_mb = 0.5
    assert rows(store, "SELECT COUNT(*) FROM records") == [(0,)]
    a, data_a = blob(int(0.4 * MB), 1)
    store.save_session(token, '{"v": 1}', {a: data_a})
    store.save_session(other, "{}", {blob(int(0.4 * MB), 2)[0]: blob(int(0.4 * MB), 2)[1]})
    with pytest.raises(IntakeError, match="space saved analyses take"):  # a copy would pass saved_mb = 1
        store.save_analysis(token, "one more")
    c, data_c = blob(int(0.45 * MB), 3)
    store.save_session(token, '{"v": 2}', {c: data_c})  # replacing its own files: counted once
    assert store.open_session(token).files == {c: data_c}
    with pytest.raises(IntakeError, match="does not match its checksum"):
        store.save_session(token, "{}", {a: data_c})


def test_records_expire_after_the_days_without_use(store, clock):
    token = new_token()
    store.save_session(token, "{}", {blob(100)[0]: blob(100)[1]})
    info = store.save_analysis(token, "kept")
    clock.now += 29 * DAY
    assert store.open_session(token) is not None  # used: the session and what it saved start again
    clock.now += 29 * DAY
    assert store.list_analyses(token)[0].id == info.id
    clock.now += 31 * DAY
    with pytest.raises(SavedNotFound, match="not used for 30 days"):
        store.open_session(token)
    with pytest.raises(SavedNotFound):
        store.open_share(info.share_token)
    assert store.purge_expired() == 2
    assert rows(store, "SELECT COUNT(*) FROM records") == [(0,)] and rows(store, "SELECT COUNT(*) FROM files") == [(0,)]
    store.save_session(token, "{}", {})  # the old token may start over
    assert store.open_session(token).state == "{}"


def test_a_token_with_saved_analyses_but_no_working_one_starts_fresh(store):
    token = new_token()
    store.save_session(token, "{}", {})
    store.save_analysis(token, "kept")
    rows(store, "DELETE FROM records WHERE token_hash = ?", token_hash(token))
    assert store.open_session(token) is None and len(store.list_analyses(token)) == 1


def test_names_are_checked(store):
    token = new_token()
    store.save_session(token, "{}", {})
    for bad in ("", "   ", "x" * (MAX_NAME + 1), "tab\x00zero"):
        with pytest.raises(IntakeError, match="name of 1 to"):
            store.save_analysis(token, bad)
    with pytest.raises(IntakeError, match="nothing to save"):
        store.save_analysis(new_token(), "no session")


def test_a_tampered_file_is_refused(store):
    token = new_token()
    sha, data = blob(200)
    store.save_session(token, "{}", {sha: data})
    rows(store, "UPDATE files SET data = ?", b"x" + data[1:])
    with pytest.raises(IntakeError, match="damaged"):
        store.open_session(token)


def test_a_file_of_another_version_or_no_database_is_a_message(tmp_path):
    store = SavedStore(tmp_path)
    rows(store, "UPDATE alembic_version SET version_num = '9999'")  # a newer app's revision
    with pytest.raises(IntakeError, match="another version.*revision 9999.*EXPLAIN_STATE_DIR.*EXPLAIN_STATE_URL"):
        SavedStore(tmp_path)
    rows(store, "DROP TABLE alembic_version")
    rows(store, "PRAGMA user_version = 7")  # a store from before migrations, but not the one this app adopts
    with pytest.raises(IntakeError, match="another version.*schema 7"):
        SavedStore(tmp_path)
    other = tmp_path / "garbage"
    other.mkdir()
    (other / FILE_NAME).write_bytes(b"this is not a database" * 100)
    fresh = SavedStore(other)  # the damaged file set aside for the operator, as it was; a fresh store in its place
    [aside] = other.glob(FILE_NAME + ".damaged-*")
    assert aside.read_bytes() == b"this is not a database" * 100 and fresh.usage() == 0


def _damage(path, kind: str) -> None:
    data = path.read_bytes()
    page = int.from_bytes(data[16:18], "big")
    damaged = {"header": b"\xff" * 100 + data[100:],  # not a database any more
               "pages": data[:page] + bytes(range(256)) * ((len(data) - page) // 256),  # every table's pages
               "truncated": data[:page + page // 2],  # cut inside its second page
               "emptied": b""}[kind]  # a valid, empty database: its tables gone
    path.write_bytes(damaged)


@pytest.mark.parametrize("kind", ["header", "pages", "truncated", "emptied"])
def test_a_damaged_file_is_set_aside_and_the_session_goes_on(tmp_path, kind, caplog):
    """Four kinds of damage: the call that meets it gets a clear answer (here: the link is unknown, and why), the
    file is kept aside as it was (logged) and a fresh store takes over, so the next save works."""
    store = SavedStore(tmp_path)
    token, sha_data = new_token(), blob(300_000)
    store.save_session(token, '{"v": 1}', dict([sha_data]))
    _damage(store.path, kind)
    damaged = store.path.read_bytes()
    with pytest.raises(SavedNotFound, match="found damaged and set aside"):
        store.open_session(token)
    [aside] = tmp_path.glob(FILE_NAME + ".damaged-*")
    assert aside.read_bytes() == damaged and "moved aside" in caplog.text
    other = new_token()
    store.save_session(other, '{"v": 2}', {})
    assert store.open_session(other).state == '{"v": 2}' and SavedStore(tmp_path).open_session(other) is not None


def test_a_locked_file_is_a_message_soon_and_nothing_saved_is_lost(tmp_path):
    import time

    store = SavedStore(tmp_path)
    token, sha_data = new_token(), blob(1000)
    store.save_session(token, '{"v": 1}', dict([sha_data]))
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process writing, for longer than the busy timeout and the retry
    try:
        started = time.monotonic()
        with pytest.raises(IntakeError, match="busy .* did not happen; it is tried again on your next change"):
            store.save_session(token, '{"v": 2}', {})
        assert time.monotonic() - started < 10
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.open_session(token).state == '{"v": 1}' and store.open_session(token).files == dict([sha_data])
    store.save_session(token, '{"v": 2}', {})
    assert store.open_session(token).state == '{"v": 2}'


def test_one_visitor_cannot_fill_the_store(open_store):
    """A session's working analysis and the ones it saved count against ``saved_visitor_mb``; another visitor still
    has room."""
    store = open_store(caps=Limits(saved_mb=10.0, saved_analysis_mb=1.5, saved_visitor_mb=2.0))
    greedy, other = new_token(), new_token()
    store.save_session(greedy, "{}", dict([blob(int(0.9 * MB), 1)]))
    store.save_analysis(greedy, "first")
    with pytest.raises(IntakeError, match="space your saved analyses take is 3 MB, over this server's limit of 2"):
        store.save_analysis(greedy, "second")
    with pytest.raises(IntakeError, match="space your saved analyses take"):
        store.save_session(greedy, "{}", dict([blob(int(0.9 * MB), 1), blob(int(0.3 * MB), 2)]))
    store.save_session(other, "{}", dict([blob(int(0.9 * MB), 3)]))
    assert len(store.list_analyses(greedy)) == 1 and store.open_session(other) is not None


def test_threads_write_at_once(store):
    tokens = [new_token() for _ in range(8)]
    errors = []

    def work(token):
        try:
            for i in range(5):
                store.save_session(token, f'{{"i": {i}}}', {})
        except Exception as exc:  # noqa: BLE001 — collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and all(store.open_session(t).state == '{"i": 4}' for t in tokens)


def test_the_default_folder_is_the_state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLAIN_STATE_DIR", str(tmp_path / "state"))
    assert SavedStore().path == tmp_path / "state" / FILE_NAME
    monkeypatch.setenv("EXPLAIN_MAX_SAVED_DAYS", "0")
    with pytest.raises(IntakeError, match="EXPLAIN_MAX_SAVED_DAYS must be positive"):
        SavedStore()


# --- recipes ----------------------------------------------------------------------------------------------------

def test_a_demo_state_round_trips_and_rebuilds_the_same_setup():
    base = demo_setup("compas", "l2_lr")
    setup = base.with_restricted(["sex", "age"])
    setup = setup.with_reference(make_reference_like(setup, statistic="median", rounded=True,
                                                     overrides={"prior_offense_count": "2"}))
    row = int(predicted_rows(setup)[3])
    state = AnalysisState.of(setup, DataRecipe(demo="compas"), ModelRecipe("demo", "l2_lr"),
                             parameters=Parameters(k=3, tau=0.8, alpha=0.05, seed=7), row=row,
                             whatif={"age": np.int64(30), "sex": "Male"})
    text = state.to_json()
    assert AnalysisState.from_json(text) == state and AnalysisState.from_json(text).to_json() == text
    restored = rebuild(AnalysisState.from_json(text), {})
    assert restored.setup.key == setup.key and restored.setup.restricted == ("sex", "age")
    assert restored.setup.reference.values == setup.reference.values
    assert restored.parameters == Parameters(k=3, tau=0.8, alpha=0.05, seed=7)
    assert restored.row == row and restored.whatif == {"age": 30, "sex": "Male"}


def make_reference_like(setup, **choices):
    from explain_core.reference import make_reference

    return make_reference(setup.dataset, setup.train_rows, threshold=setup.model.threshold, **choices)


def test_a_model_trained_here_rebuilds_with_its_seed():
    setup = demo_setup("german_credit", "l2_lr")
    trained = train_model(setup.dataset, "l1_lr", seed=3)
    ours = make_setup(setup.dataset, trained)
    state = AnalysisState.of(ours, DataRecipe(demo="german_credit"), ModelRecipe("trained", "l1_lr", seed=3),
                             parameters=Parameters(), row=0)
    restored = rebuild(AnalysisState.from_json(state.to_json()), {})
    assert restored.setup.key == ours.key
    np.testing.assert_array_equal(restored.setup.test_rows, ours.test_rows)


@pytest.fixture(scope="module")
def three_class_upload():
    """A three-class CSV and a scikit-learn model file for it (skops): the bytes an upload sends."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"income": rng.normal(50, 10, 240).round(1), "debt": rng.normal(20, 5, 240).round(1),
                          "years": rng.integers(0, 30, 240)})
    frame["band"] = np.where(frame.income - frame.debt > 35, "high", np.where(frame.income - frame.debt > 25,
                                                                               "mid", "low"))
    csv = frame.to_csv(index=False).encode()
    model = LogisticRegression(max_iter=2000).fit(frame[["income", "debt", "years"]], frame["band"])
    return csv, sio.dumps(model)


def test_an_uploaded_table_and_model_file_rebuild_through_the_same_loading(three_class_upload):
    csv, model_file = three_class_upload
    data_ref, model_ref = FileRef.of(csv, "bands.csv"), FileRef.of(model_file, "bands.skops")
    recipe = DataRecipe.upload(data_ref, "band", task="classification", positive_class="high", name="bands",
                               choices=TableChoices(kinds={"years": "numeric"}))
    dataset = make_dataset(pd.read_csv(io.BytesIO(csv)), "band", task="classification", positive_class="high",
                           name="bands", choices=TableChoices(kinds={"years": "numeric"}))
    trained = model_from_upload(dataset, model_file, "bands.skops", UploadChoices(seed=2))
    setup = make_setup(dataset, trained).with_positive_class("mid").with_restricted(["years"])
    state = AnalysisState.of(setup, recipe, ModelRecipe("file", seed=2, file=model_ref), parameters=Parameters(),
                             row=5)
    files = {data_ref.sha256: csv, model_ref.sha256: model_file}
    restored = rebuild(AnalysisState.from_json(state.to_json()), files)
    assert restored.setup.key == setup.key and restored.setup.dataset.positive_class == "mid"
    assert type(restored.setup.model.estimator).__name__ == type(setup.model.estimator).__name__
    assert "Sandboxed" in type(restored.setup.model.estimator).__name__  # loaded in its worker, as the upload was
    features = setup.dataset.features
    np.testing.assert_array_equal(restored.setup.model.score(features), setup.model.score(features))
    with pytest.raises(IntakeError, match="bands.skops of this saved analysis is missing or damaged"):
        rebuild(state, {data_ref.sha256: csv, model_ref.sha256: model_file[:-1] + b"x"})


def test_a_marked_hold_out_is_kept_and_rebuilt(three_class_upload):
    """The analyst's hold-out (issue 26: rows the model was not trained on) is part of the data's recipe: the
    restored dataset has the same test rows, so its metrics are computed on the same rows."""
    csv, _ = three_class_upload
    frame, ref = pd.read_csv(io.BytesIO(csv)), FileRef.of(csv, "bands.csv")
    held = [3, 17, 40, 41, 200]
    dataset = make_dataset(frame, "band", positive_class="high", name="bands", choices=TableChoices(holdout=held))
    setup = make_setup(dataset, train_model(dataset, "l2_lr", seed=1))
    state = AnalysisState.of(setup, DataRecipe.upload(ref, "band", positive_class="high", name="bands",
                                                      choices=TableChoices(holdout=held)),
                             ModelRecipe("trained", "l2_lr", seed=1), parameters=Parameters(), row=0)
    restored = rebuild(AnalysisState.from_json(state.to_json()), {ref.sha256: csv})
    np.testing.assert_array_equal(restored.setup.test_rows, held)
    assert restored.setup.key == setup.key


def test_a_tampered_state_is_a_message_not_a_crash():
    state = AnalysisState.of(demo_setup("compas", "l2_lr"), DataRecipe(demo="compas"), ModelRecipe("demo", "l2_lr"),
                             parameters=Parameters(), row=0)
    text = state.to_json()
    for edit, message in ((lambda t: t.replace('"m": 5000', '"m": 100000000'), "over this server's limit"),
                          (lambda t: t.replace('"k": 5', '"k": "five"'), "damaged"),
                          (lambda t: t.replace('"origin": "demo"', '"origin": "pickle"'), "Unknown model origin"),
                          (lambda t: t.replace('"version": 1', '"version": 9'), "another version"),
                          (lambda t: t[:-5], "damaged"),
                          (lambda t: t.replace('"positive_class": null', '"positive_class": [1, 2]', 1), "damaged")):
        with pytest.raises(IntakeError, match=message):
            AnalysisState.from_json(edit(text))
    for edit, message in ((lambda t: t.replace('"demo": "compas"', '"demo": "../../etc/passwd"'),
                           "Unknown bundled dataset"),
                          (lambda t: t.replace('"row": 0', '"row": 99999999'), "which its data does not have"),
                          (lambda t: t.replace('"restricted": []', '"restricted": ["nope"]'),
                           "Unknown restricted features")):
        with pytest.raises(IntakeError, match=message):
            rebuild(AnalysisState.from_json(edit(text)), {})
