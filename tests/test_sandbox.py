"""Uploaded models load and run only in a sandboxed worker process (issue 25): every layer holds on this kernel,
the payloads that ran on the server after one confirmation are refused by the allow-list (and live when the guard is
bypassed), a crash, a hang or a runaway becomes a message while the server and other models go on."""
from __future__ import annotations

import json
import operator
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from hostile import (call_payloads, function_skops, lightgbm_text, onnx_data_dependent, onnx_loop, onnx_memory_hog,
                     probe_pickle, reduce_call_skops, xgboost_json)
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

from explain_core import IntakeError, UntrustedModelError, load_demo, make_dataset
from explain_core.errors import ModelCrashed, RemoteError
from explain_core.intake.boosters import check_native_header
from explain_core.intake.loading import load_model_bytes
from explain_core.intake.sandbox import zygote
from explain_core.intake.sandbox.client import Worker
from explain_core.intake.sandbox.model import SandboxedModel
from explain_core.intake.skops_policy import check_file, decide
from explain_core.limits import limits
from explain_core.setup import UploadChoices, model_from_upload

pytestmark = pytest.mark.slow
EVERY_LAYER = {"limits": True, "network": True, "files": True, "signal scope": True, "seccomp": True,
               "pid namespace": True, "pids cgroup": True}


@pytest.fixture(scope="module")
def lr_blob():
    X = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "b": [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]})
    return sio.dumps(LogisticRegression().fit(X, [0, 0, 1, 0, 1, 1])), X


def test_every_layer_holds_and_nothing_of_the_server_reaches_the_worker(tmp_path, monkeypatch):
    """A trusted pickle runs its code in the worker: it cannot write a file, read the server's folder, connect
    to a port, run a command, or see the server's environment (a secret set here)."""
    secret = tmp_path / "secrets.toml"
    secret.write_text("password = 'hunter2'")
    sentinel = tmp_path / "written"
    monkeypatch.setenv("EXPLAIN_TEST_SECRET", "hunter2")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        blob = probe_pickle(sentinel, secret, listener.getsockname()[1])
        with pytest.raises(IntakeError, match="PROBE") as info:
            load_model_bytes(blob, "probe.pkl", trusted=True)
    report = json.loads(re.search(r"PROBE (\{.*\})", str(info.value)).group(1))
    assert report["write"].startswith("refused") and report["read"].startswith("refused"), report
    assert report["connect"].startswith("refused") and report["shell"] == "32512", report  # spawning failed: 127
    assert "EXPLAIN_TEST_SECRET" not in report["environment"] and "PATH" in report["environment"]
    assert not sentinel.exists() and not Path(f"{sentinel}-shell").exists()
    done = subprocess.run([sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
                          input=blob, capture_output=True)  # the same pickle outside the sandbox: it is live
    assert b"PROBE" in done.stderr and sentinel.exists()


def test_the_worker_reports_its_layers(lr_blob):
    model = load_model_bytes(lr_blob[0], "lr.skops")
    assert model.confined == EVERY_LAYER
    np.testing.assert_allclose(model.predict_proba(lr_blob[1]), sio.loads(lr_blob[0]).predict_proba(lr_blob[1]))


def test_confirmable_callables_of_issue_25_are_refused_and_live_when_bypassed(tmp_path):
    """The seven callables that ran after one confirmation: refused by the policy even confirmed and in trusted
    mode, with nothing to confirm (two of them through the worker, all by the policy it runs); each creates its
    sentinel when skops loads the file without the guard."""
    payloads = {name: reduce_call_skops(module, function, *args)
                for name, (module, function, args) in call_payloads(tmp_path / "pwned").items()}
    for name, blob in payloads.items():
        untrusted = sio.get_untrusted_types(data=blob)
        with pytest.raises(UntrustedModelError, match="refused") as info:
            decide(check_file(blob, trusted=True), set(untrusted), True, "model.skops")
        assert info.value.types == (), name
    for name in ("timeit.timeit", "logging.FileHandler"):
        with pytest.raises(UntrustedModelError, match="refused"):
            load_model_bytes(payloads[name], "model.skops", trusted=True, trusted_types=["timeit.timeit",
                                                                                         "logging.FileHandler"])
    assert not (tmp_path / "pwned").exists()
    live = {name: tmp_path / f"live-{i}" for i, name in enumerate(payloads)}
    blobs = [reduce_call_skops(*call_payloads(live[name])[name][:2], *call_payloads(live[name])[name][2])
             for name in payloads]
    unguarded = ("import pickle, skops.io as sio, sys\nfor data in pickle.load(sys.stdin.buffer):\n"
                 "    try:\n        sio.loads(data, trusted=sio.get_untrusted_types(data=data))\n"
                 "    except Exception:\n        pass")
    subprocess.run([sys.executable, "-c", unguarded], input=pickle.dumps(blobs), capture_output=True, timeout=300,
                   cwd=tmp_path)
    assert [name for name, sentinel in live.items() if not sentinel.exists()] == []  # each payload is live


def test_functions_off_the_list_are_refused_partial_of_a_vetted_function_is_not():
    import timeit

    [check] = check_file(function_skops(operator.neg))  # a harmless function, but off the list: not confirmable
    assert check.verdict == "dangerous" and "holds it as a function" in check.reason
    [check] = check_file(function_skops(timeit.timeit))
    assert check.verdict == "dangerous"
    assert [c.verdict for c in check_file(function_skops(np.log1p))] == []  # a ufunc: trusted by skops itself
    frame = pd.DataFrame({"x": np.arange(40.0), "c": pd.Categorical(list("abcd") * 10)})
    hgb = HistGradientBoostingClassifier(categorical_features="from_dtype", max_iter=3).fit(frame, frame["x"] > 20)
    blob = sio.dumps(hgb)
    verdicts = {c.name: c.verdict for c in check_file(blob)}
    assert verdicts["functools.partial"] == "allowed" and "unknown" not in verdicts.values(), verdicts
    model = load_model_bytes(blob, "hgb.skops")  # scikit-learn's own native-categorical model: no question asked
    np.testing.assert_allclose(model.predict_proba(frame), hgb.predict_proba(frame))


def test_a_class_confirmable_only_when_loading_it_runs_no_code():
    import random

    from explain_core.intake.skops_policy import load_hook

    assert load_hook(np.vectorize) is None
    assert load_hook(random.Random) == "_random.Random.__new__"  # built by its own C constructor
    assert "not a class" in load_hook(len)


def test_a_lightgbm_file_that_aborts_its_parser_is_a_message_and_the_next_model_works(lr_blob):
    with pytest.raises(ModelCrashed, match="this LightGBM file is damaged.*SIGABRT"):
        load_model_bytes(lightgbm_text("num_leaves"), "model.txt")  # one edited number: LightGBM aborts
    assert load_model_bytes(lr_blob[0], "lr.skops").predict(lr_blob[1]).shape == (6,)


def test_booster_headers_past_the_limits_are_refused_before_loading():
    caps = limits()  # the checks the worker runs before the booster's own parser sees the file
    with pytest.raises(IntakeError, match="this LightGBM file is damaged.*cut short"):
        check_native_header(lightgbm_text("truncated"), ".txt", "model.txt", caps)
    with pytest.raises(IntakeError, match="number of classes.*100,000,000.*limit of 1,000"):
        check_native_header(lightgbm_text("classes"), ".txt", "model.txt", caps)
    with pytest.raises(IntakeError, match="number of features.*2,000,000,000.*limit of 2,000"):
        check_native_header(xgboost_json("2000000000"), ".json", "model.json", caps)
    with pytest.raises(IntakeError, match="this XGBoost file is damaged"):
        check_native_header(b'{"learner": 3}', ".json", "model.json", caps)
    check_native_header(lightgbm_text(), ".txt", "model.txt", caps)
    with pytest.raises(IntakeError, match="number of features.*2,000,000,000"):  # and through the worker
        load_model_bytes(xgboost_json("2000000000"), "model.json")
    assert load_model_bytes(xgboost_json(), "model.json").predict_proba(np.zeros((3, 4))).shape == (3, 2)


def test_every_onnx_call_runs_under_the_time_and_memory_limits(monkeypatch):
    monkeypatch.setenv("EXPLAIN_MAX_MODEL_MEMORY_MB", "1500")
    rows = np.array([[0.0, 0.0, 0.0], [30.0, 40.0, 50.0]], dtype=np.float32)
    data_dependent = load_model_bytes(onnx_data_dependent(), "scan.onnx")
    assert data_dependent.predict(rows[:1]).shape == (1,)  # the all-zero row a trial run would use: fine
    with pytest.raises((IntakeError, ModelCrashed), match="memory"):
        data_dependent.predict(rows)  # 5·10⁹ floats for a real row
    assert data_dependent.predict(rows[:1]).shape == (1,)  # a new worker, the same model
    loop = load_model_bytes(onnx_loop(), "loop.onnx")  # loaded under the default time limit (a busy machine)
    monkeypatch.setenv("EXPLAIN_MAX_MODEL_SECONDS", "3")  # read by every call: scoring stops at 3 s
    started = time.monotonic()
    with pytest.raises(ModelCrashed, match="did not finish scoring 2 rows within 3 s"):
        loop.predict(rows)
    assert time.monotonic() - started < 30
    with pytest.raises((IntakeError, ModelCrashed), match="memory"):
        load_model_bytes(onnx_memory_hog(), "hog.onnx").predict(rows)


def test_an_idle_worker_stops_and_a_pickled_proxy_carries_the_file(lr_blob, monkeypatch):
    monkeypatch.setenv("EXPLAIN_MAX_MODEL_IDLE_SECONDS", "0.5")
    model = load_model_bytes(lr_blob[0], "lr.skops")
    first = model.predict_proba(lr_blob[1])
    process = model._slot[0].process
    deadline = time.monotonic() + 15
    while (model._slot[0] is not None or process.poll() is None) and time.monotonic() < deadline:
        time.sleep(0.2)  # the reaper empties the slot, then stops the process: both are waited for
    assert model._slot[0] is None and process.poll() is not None  # its memory went back to the system
    np.testing.assert_array_equal(model.predict_proba(lr_blob[1]), first)  # restarted on demand
    copy = pickle.loads(pickle.dumps(model))
    assert isinstance(copy, SandboxedModel) and copy._slot[0] is None
    np.testing.assert_array_equal(copy.predict_proba(lr_blob[1]), first)


def _parent(pid: int, levels: int = 1) -> int:
    for _ in range(levels):
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return pid


@pytest.mark.skipif(not zygote.AVAILABLE, reason="workers are forked by a zygote on Linux with pidfds only")
def test_workers_are_forked_by_a_spawned_zygote_never_by_the_server(lr_blob):
    """Every worker is forked from the zygote (three levels down: the zygote's child, the PID namespace's pid 1, the
    worker), which is a fresh ``python -I -B`` the server spawned (not a fork of it); each worker is confined on its
    own; a worker's signal reaches the page by name; a zygote that dies takes its workers with it (issue 51: no
    worker outlives what started it) and is replaced by the next worker's start."""
    first, second = (Worker(limits().model_memory_mb, limits().model_seconds) for _ in range(2))
    source = zygote._ZYGOTE[0]
    assert _parent(first.process.pid, 3) == _parent(second.process.pid, 3) == source.process.pid != os.getpid()
    assert _parent(source.process.pid) == os.getpid()
    command = Path(f"/proc/{source.process.pid}/cmdline").read_bytes().split(b"\0")
    assert command[1:4] == [b"-I", b"-B", b"-c"] and b"serve_forks" in command[4]
    assert first.confined == second.confined == EVERY_LAYER
    assert first.process.pid != second.process.pid and second.alive
    os.kill(second.process.pid, signal.SIGABRT)
    with pytest.raises(ModelCrashed, match="stopped by signal SIGABRT"):
        second.call({"op": "split", "groups": []}, seconds=5, what="reading its steps")
    source.process.kill()
    source.process.wait(5)
    third = Worker(limits().model_memory_mb, limits().model_seconds)
    assert zygote._ZYGOTE[0] is not source and _parent(third.process.pid, 3) == zygote._ZYGOTE[0].process.pid
    first.process.wait(5)  # gone with its zygote
    with pytest.raises(ModelCrashed, match="crashed while reading its steps"):
        first.call({"op": "split", "groups": []}, seconds=5, what="reading its steps")
    with pytest.raises(RemoteError, match="no model is loaded"):
        third.call({"op": "split", "groups": []}, seconds=5, what="reading its steps")
    for worker in (first, third):
        worker.close()
        assert worker.process.poll() is not None


@pytest.mark.parametrize("name, kind", [("compas", "gbdt"), ("adult", "l2_lr")])
def test_an_uploaded_model_explains_like_the_same_model_in_process(name, kind):
    """Same values, explanations and vertex scores, though the sandboxed path scores more vertices ahead and
    sends them compact (intake.mixed), mixed in the worker; the batched search too, in chunks that cut the
    compact rows. Scores agree to the last bits a BLAS call may change with the rows' placement in memory."""
    from explain_core import demo_model
    from explain_core.setup import make_setup
    from explain_core.sev.engine import BFSSearch, explain_sev, sev_batch

    data = load_demo(name)
    trained = demo_model(data, kind)
    uploaded = make_setup(data, model_from_upload(data, sio.dumps(trained.model.estimator), f"{kind}.skops",
                                                    UploadChoices(positive_class=trained.model.positive_class)))
    local = make_setup(data, trained)
    assert isinstance(uploaded.model.estimator, SandboxedModel) and uploaded.model.sandboxed
    assert not local.model.sandboxed
    for row in uploaded.test_rows[:6]:
        q = data.features.iloc[[int(row)]]
        a, b = (explain_sev(s.model, data, q, s.reference_for(q)) for s in (uploaded, local))
        for x, y in ((a.minus, b.minus), (a.plus, b.plus)):
            assert (x.value, x.explanations) == (y.value, y.explanations)
            np.testing.assert_array_equal(x.vertex_masks, y.vertex_masks)
            np.testing.assert_allclose(x.vertex_scores, y.vertex_scores, rtol=1e-12)  # BLAS: last bits
    queries = data.features.iloc[uploaded.test_rows[:40]]
    a, b = (sev_batch(s.model, data.layout, queries, local.reference, BFSSearch(chunk_rows=97))
            for s in (uploaded, local))
    assert [(r.value, r.explanations) for r in a] == [(r.value, r.explanations) for r in b]
    np.testing.assert_allclose(np.concatenate([r.vertex_scores for r in a]),
                               np.concatenate([r.vertex_scores for r in b]), rtol=1e-12)


def numeric_compas(renamed: bool = False):
    """COMPAS's numeric columns as a dataset (with spaces in its names when ``renamed``: the boosters' files then
    hold the sanitised names, matched back through RenamedInputs)."""
    data = load_demo("compas")
    frame = data.features.select_dtypes("number")
    if renamed:
        frame = frame.rename(columns=lambda c: c.replace("_", " "))
    return make_dataset(frame.assign(label=np.asarray(data.y)), "label", positive_class=1)


def booster_blob(data, kind: str) -> tuple[bytes, str]:
    import lightgbm
    import xgboost

    X, y = data.features, data.y
    if kind == "xgboost":
        booster = xgboost.XGBClassifier(n_estimators=30, max_depth=3, n_jobs=1).fit(X, y).get_booster()
        return bytes(booster.save_raw("json")), "m.json"
    if kind == "lightgbm":
        return lightgbm.LGBMClassifier(n_estimators=30, num_leaves=7, verbose=-1, n_jobs=1).fit(
            X, y).booster_.model_to_string().encode(), "m.txt"
    return sio.dumps(LogisticRegression(max_iter=500).fit(X.to_numpy(), y)), "unnamed.skops"


@pytest.mark.parametrize("kind, renamed", [("xgboost", False), ("lightgbm", True), ("unnamed", False)])
def test_a_model_reading_floats_gets_compact_vertices_and_explains_as_in_process(kind, renamed, monkeypatch):
    """A native XGBoost / LightGBM booster (here with sanitised names) or a model fed unnamed columns in order reads
    one float matrix by position, so its vertices cross to the worker compact (MixedRows), as a Pipeline's encoded
    ones do, and the explanations are those of the same file loaded in this process."""
    from dataclasses import replace

    from explain_core.intake import encoding
    from explain_core.intake.boosters import load_native
    from explain_core.intake.encoding import FloatColumns, encoded_model
    from explain_core.intake.mixed import MixedRows
    from explain_core.intake.models import wrap_model
    from explain_core.setup import make_setup
    from explain_core.sev.engine import explain_sev
    from explain_core.sparse.training import default_settings

    data = numeric_compas(renamed)
    blob, filename = booster_blob(data, kind)
    choices = UploadChoices(positive_class=1, by_order=kind == "unnamed")
    uploaded = make_setup(data, model_from_upload(data, blob, filename, choices))
    inner = sio.loads(blob, trusted=[]) if kind == "unnamed" else load_native(blob, "." + filename.split(".")[1],
                                                                                 filename)
    local = replace(uploaded, model=wrap_model(inner, data, positive_class=1, by_order=kind == "unnamed"))
    assert uploaded.model.sandboxed and not local.model.sandboxed
    sent = []
    original = SandboxedModel.request
    monkeypatch.setattr(SandboxedModel, "request", lambda self, request, what, *bound: (
        request["op"] == "call" and sent.append(type(request["X"])), original(self, request, what, *bound))[1])
    if kind != "unnamed":  # in process, a booster is split the same way
        assert isinstance(encoded_model(local.model, data.layout.groups).encoder, FloatColumns)
    with monkeypatch.context() as unsplit:  # the same file in process, fed data frames (no split): the oracle
        unsplit.setattr(encoding, "_float_split", lambda *args: None)
        framed = replace(uploaded, model=wrap_model(inner, data, positive_class=1, by_order=kind == "unnamed"))
        assert encoded_model(framed.model, data.layout.groups) is None
    for row in uploaded.test_rows[:5]:
        q = data.features.iloc[[int(row)]]
        references = [s.reference_for(q) for s in (uploaded, local)]
        sent.clear()
        a, b = (explain_sev(s.model, data, q, r) for s, r in zip((uploaded, local), references))
        assert sent and set(sent) == {MixedRows}  # the query, the reference and every vertex: compact
        c = explain_sev(framed.model, data, q, references[1])
        for x, y in ((a.minus, b.minus), (a.plus, b.plus), (a.minus, c.minus), (a.plus, c.plus)):
            assert (x.value, x.explanations) == (y.value, y.explanations)
            np.testing.assert_array_equal(x.vertex_masks, y.vertex_masks)
            np.testing.assert_allclose(x.vertex_scores, y.vertex_scores, rtol=1e-12)
    with pytest.raises(IntakeError, match="An uploaded model .* cannot be trained for sparse explanations"):
        default_settings(uploaded, "all_opt_minus")


def test_mixed_rows_are_the_vertices_and_cut_like_them():
    from explain_core.intake.mixed import MixedRows

    rng = np.random.default_rng(0)
    groups = np.array([0, 0, 1, 2, 2, 2])
    rows = MixedRows(rng.normal(size=(4, 6)), rng.normal(size=6), rng.integers(0, 4, 30),
                     rng.random((30, 3)) < 0.5, groups)
    full = np.array([[rows.bases[w, c] if rows.keep[r, groups[c]] else rows.reference[c] for c in range(6)]
                     for r, w in enumerate(rows.which)])
    np.testing.assert_array_equal(rows.array(), full)
    assert len(rows) == 30 and rows.shape == (30, 6)
    for index in (slice(5, 17), np.array([3, 0, 29])):
        np.testing.assert_array_equal(rows[index].array(), full[index])


def test_a_model_that_raises_in_its_worker_gets_the_adapters_message():
    frame = pd.DataFrame({"x": np.arange(20.0), "y": np.arange(20) % 2})
    data = make_dataset(frame, "y")
    blob = sio.dumps(LogisticRegression().fit(frame[["x"]].to_numpy()[:, :1].repeat(2, axis=1), frame["y"]))
    with pytest.raises(IntakeError, match="does not record its input column names|expects 2"):
        model_from_upload(data, blob, "two_inputs.skops", UploadChoices(by_order=True))


def test_the_server_waits_for_a_reply_asleep_not_spinning(monkeypatch):
    """Under load the server and the worker share the cores: the server's wait for a reply is one blocking wait on
    the pipe (select with the deadline as its timeout), never a loop of polls, however soon the reply comes."""
    import os
    import select
    import threading
    import time
    from types import SimpleNamespace

    from explain_core.intake.sandbox.client import Worker
    from explain_core.intake.sandbox.protocol import Expect, reply_bytes

    waits = []
    original = select.select
    monkeypatch.setattr(select, "select", lambda *args: waits.append(args[3]) or original(*args))
    inbox, outbox = os.pipe()
    worker = Worker.__new__(Worker)
    worker.buffer, worker.process = bytearray(), SimpleNamespace(stdout=os.fdopen(inbox, "rb", buffering=0))
    try:
        for delay in (0.002, 0.05):
            waits.clear()
            later = threading.Timer(delay, os.write, (outbox, reply_bytes({"value": 7})))
            start = time.perf_counter()  # before the timer starts: the reply cannot come sooner than ``delay`` after
            later.start()
            assert worker._reply(5.0, None, "testing", Expect()) == {"value": 7}
            later.join()
            assert time.perf_counter() - start >= delay
            assert len(waits) == 1 and waits[0] > 0.05, waits[:5]  # one wait, asleep, for the whole reply
    finally:
        worker.process.stdout.close()
        os.close(outbox)


def test_the_workers_pipes_hold_a_batch_of_rows(lr_blob):
    import fcntl
    import sys

    from explain_core.intake.sandbox.client import PIPE_BYTES

    model = load_model_bytes(lr_blob[0], "lr.skops")
    model.predict_proba(lr_blob[1])
    if sys.platform.startswith("linux"):
        for pipe in (model._slot[0].process.stdin, model._slot[0].process.stdout):
            assert fcntl.fcntl(pipe.fileno(), 1032) >= PIPE_BYTES  # F_GETPIPE_SZ


def test_one_limit_reads_as_all_of_them(monkeypatch):
    from explain_core.limits import limit, limits

    monkeypatch.delenv("EXPLAIN_MAX_MODEL_SECONDS", raising=False)
    assert limit("model_seconds") == limits().model_seconds == 20.0
    monkeypatch.setenv("EXPLAIN_MAX_MODEL_SECONDS", "3.5")
    assert limit("model_seconds") == limits().model_seconds == 3.5
    monkeypatch.setenv("EXPLAIN_MAX_MODEL_SECONDS", "zero")
    with pytest.raises(IntakeError, match="not a number"):
        limit("model_seconds")


def test_every_call_is_chunked_and_gives_the_numbers_of_one_call(lr_blob, monkeypatch):
    """Rows go to the worker in chunks of at most ``model_call_rows`` (frames, arrays and compact vertices alike),
    each chunk one request under the per-call time limit; the scores equal one call's and the in-process model's."""
    from explain_core.intake.mixed import MixedRows

    blob, X = lr_blob
    rows = pd.DataFrame(np.random.default_rng(0).normal(2, 2, (53, 2)), columns=list(X.columns))
    model = load_model_bytes(blob, "lr.skops")
    whole = model.predict_proba(rows)
    sent = []
    real = Worker.call

    def spy(self, request, **kwargs):
        if request.get("op") == "call":
            sent.append(len(request["X"]))
        return real(self, request, **kwargs)

    monkeypatch.setattr(Worker, "call", spy)
    monkeypatch.setenv("EXPLAIN_MAX_MODEL_CALL_ROWS", "7")
    chunked = model.predict_proba(rows)
    assert sent == [7] * 7 + [4]
    np.testing.assert_array_equal(chunked, whole)
    local = sio.loads(blob, trusted=sio.get_untrusted_types(data=blob))
    np.testing.assert_allclose(whole, local.predict_proba(rows))
    sent.clear()
    keep = np.random.default_rng(1).random((30, 2)) < 0.5
    mixed = MixedRows(rows.to_numpy()[:3], np.zeros(2), np.arange(30) % 3, keep, np.arange(2))
    np.testing.assert_allclose(model.stage("model").predict_proba(mixed), local.predict_proba(mixed.array()))
    assert sent == [7, 7, 7, 7, 2]  # compact vertices are cut like rows
