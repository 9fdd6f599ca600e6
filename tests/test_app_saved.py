"""Saved analyses in the app (AppTest): the session kept under a token in the URL and restored by it (an upload
through the same sandboxed loading), "Save this analysis" and Home's list, a shared link's read-only copy, bad and
expired tokens, a damaged record."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression
from streamlit.testing.v1 import AppTest

from conftest import drawn, visible
from explain_core.analysis import Parameters, demo_setup, make_setup, predicted_rows
from explain_core.intake.data import make_dataset
from explain_core.saved.records import token_hash
from explain_core.saved.schema import FILE_NAME
from explain_core.setup import model_from_upload

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 90


def run(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def param(at, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def warnings(at) -> list[str]:
    return [visible(w.value) for w in at.warning]


def load_demo(at, name: str, kind: str) -> None:
    at.switch_page("app_pages/home.py").run()
    at.selectbox(key="home_demo").select(name).run()
    at.selectbox(key="home_kind").select(kind).run()
    at.button(key="home_load").click().run()
    assert not at.exception, at.exception


def save(at, name: str) -> tuple[str, str]:
    at.text_input(key="saved_name").input(name)
    at.button(key="FormSubmitter:saved_form-Save").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    saved_name, link = at.session_state["saved_last"]
    return saved_name, link.split("share=")[1]


@pytest.fixture(scope="module")
def german(explain_cache_dir):
    return demo_setup("german_credit", "l2_lr")


def test_a_fresh_demo_session_needs_no_token_and_a_changed_one_gets_one(german):
    at = run()
    drawn(at.sidebar.selectbox, "sidebar_row").select(int(at.session_state["setup"].test_rows[3])).run()
    assert param(at, "session") is None  # the demo and a row: ?row= says it all
    load_demo(at, "german_credit", "l2_lr")
    token = param(at, "session")
    assert token and len(token) == 43 and at.session_state["setup"].key == german.key


def test_a_reload_by_token_restores_the_analysis(german):
    at = run()
    load_demo(at, "german_credit", "l2_lr")
    at.switch_page("app_pages/sev.py").run()
    row = int(predicted_rows(german)[4])
    drawn(at.sidebar.selectbox, "sidebar_row").select(row).run()
    at.slider(key="sev_depth").set_value(2).run()
    at.multiselect(key="sev_held").set_value(["age"]).run()
    at.session_state["whatif"] = {"duration_months": 9}
    at.run()
    token = param(at, "session")
    again = run(session=token)  # F5: a new session with the same URL
    s = again.session_state["setup"]
    assert s.key == german.key and s.restricted == ("age",)
    assert again.session_state["row"] == row and again.session_state["params"] == Parameters(max_depth=2)
    assert again.session_state["whatif"] == {"duration_months": 9} and not warnings(again)
    assert param(again, "session") == token


@pytest.fixture(scope="module")
def upload_files():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"income": rng.normal(50, 12, 300).round(1), "debt": rng.normal(20, 6, 300).round(1),
                          "tenure": rng.integers(0, 25, 300)})
    frame["approved"] = np.where(frame.income - 1.5 * frame.debt + rng.normal(0, 5, 300) > 20, "yes", "no")
    model = LogisticRegression(max_iter=2000).fit(frame[["income", "debt", "tenure"]], frame["approved"])
    return frame, frame.to_csv(index=False).encode(), sio.dumps(model)


def test_an_uploaded_table_and_model_come_back_through_the_sandbox(upload_files):
    frame, csv, model_file = upload_files
    at = run()
    at.switch_page("app_pages/data_model.py").run()
    at.radio(key="dm_data_source").set_value("upload").run()
    at.file_uploader(key="dm_upload").set_value(("loans.csv", csv, "text/csv")).run()
    at.button(key="dm_build").click().run()
    at.radio(key="dm_model_source").set_value("upload").run()
    at.file_uploader(key="dm_model_file").set_value(("loans.skops", model_file, "application/octet-stream")).run()
    at.button(key="dm_load_model").click().run()
    at.button(key="dm_use").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    used = at.session_state["setup"]
    token = param(at, "session")
    again = run(session=token, row=str(used.test_rows[2]))
    s = again.session_state["setup"]
    dataset = make_dataset(frame, "approved", positive_class="yes", name="loans")
    expected = make_setup(dataset, model_from_upload(dataset, model_file, "loans.skops"))
    assert s.key == used.key == expected.key and again.session_state["row"] == int(used.test_rows[2])
    assert "Sandboxed" in type(s.model.estimator).__name__  # loaded in its worker, as the upload was
    np.testing.assert_array_equal(s.model.score(dataset.features), expected.model.score(dataset.features))
    assert s.source == "uploaded loans.skops"


def test_save_lists_it_on_home_and_its_link_opens_a_read_only_copy(german):
    owner = run()
    load_demo(owner, "german_credit", "l2_lr")
    row = int(predicted_rows(german)[2])
    drawn(owner.sidebar.selectbox, "sidebar_row").select(row).run()
    name, share = save(owner, "credit, applicant of interest")
    owner.switch_page("app_pages/home.py").run()
    listed = [visible(m.value) for m in owner.markdown if "credit, applicant of interest" in m.value]
    assert listed and f"row {row}" in listed[0]
    assert any(share in c.value for c in owner.code)

    viewer = run(share=share)
    assert viewer.session_state["setup"].key == german.key and viewer.session_state["row"] == row
    assert any("your own copy" in visible(i.value) for i in viewer.info)
    viewer_token = param(viewer, "session")
    assert viewer_token and viewer_token != param(owner, "session") and param(viewer, "share") is None
    assert not [m for m in viewer.markdown if "applicant of interest" in m.value]  # not the viewer's own list
    other = int(predicted_rows(german)[6])
    drawn(viewer.sidebar.selectbox, "sidebar_row").select(other).run()  # the viewer's change, on the viewer's copy
    assert run(session=viewer_token).session_state["row"] == other
    assert run(share=share).session_state["row"] == row  # the saved analysis is as it was
    assert run(session=param(owner, "session")).session_state["row"] == row


def test_open_and_delete_from_the_list(german):
    at = run()
    load_demo(at, "german_credit", "l2_lr")
    _, share = save(at, "first")
    load_demo(at, "compas", "l2_lr")
    at.switch_page("app_pages/home.py").run()
    assert at.session_state["setup"].dataset.name == "compas"
    [opened] = [b for b in at.button if b.key and b.key.startswith("saved_open_")]
    opened.click().run()
    assert not at.exception and at.session_state["setup"].key == german.key
    [delete] = [b for b in at.button if b.key and b.key.startswith("saved_delete_")]
    delete.click().run()
    assert not [b for b in at.button if b.key and b.key.startswith("saved_open_")]
    gone = run(share=share)
    assert any("not on this server" in w for w in warnings(gone))
    assert gone.session_state["setup"].dataset.name == "compas"  # a fresh session on the demo


def test_bad_and_expired_tokens_get_a_message_and_a_fresh_session(german, explain_state_dir):
    for bad in ("not-a-token", "A" * 43):
        at = run(session=bad, row="3")
        assert any("A fresh session started on the demo" in w for w in warnings(at)), warnings(at)
        assert at.session_state["setup"].dataset.name == "compas" and param(at, "session") is None
    owner = run()
    load_demo(owner, "german_credit", "l2_lr")
    token = param(owner, "session")
    with sqlite3.connect(explain_state_dir / FILE_NAME) as conn:  # not used for longer than the expiry
        conn.execute("UPDATE records SET used = 0 WHERE token_hash = ?", (token_hash(token),))
    at = run(session=token)
    assert any("not used for 30 days" in w for w in warnings(at)), warnings(at)
    assert at.session_state["setup"].dataset.name == "compas"


def test_a_damaged_record_is_a_message_and_the_app_goes_on(german, explain_state_dir):
    owner = run()
    load_demo(owner, "german_credit", "l2_lr")
    token = param(owner, "session")
    with sqlite3.connect(explain_state_dir / FILE_NAME) as conn:
        conn.execute("UPDATE records SET state = replace(state, '\"l2_lr\"', '\"not_a_kind\"') WHERE token_hash = ?",
                     (token_hash(token),))
    at = run(session=token)
    assert any("could not be restored" in w and "Unknown model kind" in w for w in warnings(at)), warnings(at)
    assert at.session_state["setup"].dataset.name == "compas" and not at.error
    with sqlite3.connect(explain_state_dir / FILE_NAME) as conn:  # left as it was until the visitor changes something
        [(state,)] = conn.execute("SELECT state FROM records WHERE token_hash = ?", (token_hash(token),)).fetchall()
    assert '"not_a_kind"' in state



def test_a_model_trained_on_the_sparser_page_is_kept_as_its_skops_file():
    from explain_core.sparse.training import TrainingSettings, sparse_setup, train_sparse

    base = demo_setup("compas", "l2_lr")
    after = sparse_setup(base, train_sparse(base, TrainingSettings(objective="all_opt_minus", warmup_epochs=1,
                                                                   sev_epochs=1)))
    at = run()
    at.session_state["setup"] = after  # as "Use this model for the session" leaves it
    at.run()
    token = param(at, "session")
    assert token and "saved_problem" not in at.session_state
    s = run(session=token).session_state["setup"]
    assert "Sandboxed" in type(s.model.estimator).__name__ and s.source == after.source
    features = after.dataset.features
    np.testing.assert_allclose(s.model.score(features), after.model.score(features), rtol=1e-9)
    np.testing.assert_array_equal(s.model.label(features), after.model.label(features))
    assert s.reference.values == after.reference.values


def test_a_locked_store_is_said_on_the_page_and_the_session_goes_on(german, explain_state_dir):
    """Another process holds the file: the change is made and shown, the page says it is not kept (busy), and the
    next change after the lock is gone is kept."""
    at = run()
    holder = sqlite3.connect(explain_state_dir / FILE_NAME, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        load_demo(at, "german_credit", "l2_lr")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert at.session_state["setup"].key == german.key and not at.error
    assert "busy" in at.session_state["saved_problem"] and param(at, "session") is None
    load_demo(at, "compas", "l2_lr")  # the next change, the file free again
    token = param(at, "session")
    assert token and "saved_problem" not in at.session_state
    assert run(session=token).session_state["setup"].model_key == at.session_state["setup"].model_key


def test_a_damaged_store_is_set_aside_and_a_reload_gets_a_message_and_a_fresh_session(german, explain_state_dir):
    owner = run()
    load_demo(owner, "german_credit", "l2_lr")
    token = param(owner, "session")
    path = explain_state_dir / FILE_NAME
    with sqlite3.connect(path) as conn:  # the save's pages into the file itself: in WAL mode a served app of this
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # worker holding the store open keeps them in the log
    conn.close()
    path.write_bytes(b"\xff" * 100 + path.read_bytes()[100:])
    at = run(session=token)
    assert any("found damaged and set aside" in w and "A fresh session" in w for w in warnings(at)), warnings(at)
    assert at.session_state["setup"].dataset.name == "compas" and not at.error
    assert list(explain_state_dir.glob(FILE_NAME + ".damaged-*"))
    load_demo(at, "german_credit", "l2_lr")  # saved in the fresh store
    assert run(session=param(at, "session")).session_state["setup"].key == german.key
