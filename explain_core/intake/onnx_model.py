"""ONNX models (onnxruntime) behind scikit-learn's predict / predict_proba, with bounded work.

An uploaded graph is first loaded and run once on a synthetic row in a separate worker process with a time
limit and a memory limit (:func:`probe`), so a graph that never returns or that allocates without bound is
refused without touching the server. In the server each later call is cancelled by onnxruntime's terminate
flag once it runs past the time limit.
"""
from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np

from ..errors import IntakeError
from ..limits import Limits, limits

ONNX_DTYPES = {"tensor(string)": object, "tensor(float)": np.float32, "tensor(double)": np.float64,
               "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": bool}

# Run with ``python -I -c PROBE path memory_mb``: loads the graph and runs it once on one synthetic row under an
# address-space limit; prints "ok", or exits with status 3 when memory ran out. Imports only onnxruntime and numpy.
PROBE = r"""
import resource, sys
limit = int(float(sys.argv[2]) * 2**20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    import numpy as np, onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
    kinds = {"tensor(string)": object, "tensor(double)": np.float64, "tensor(int64)": np.int64,
             "tensor(int32)": np.int32, "tensor(bool)": bool}
    feed = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in (i.shape or [1])]
        kind = kinds.get(i.type, np.float32)
        feed[i.name] = np.full(shape, "0", dtype=object) if kind is object else np.zeros(shape, dtype=kind)
    try:
        session.run(None, feed)
    except MemoryError:
        raise
    except Exception as exc:
        if "allocate" in str(exc).lower() or "bad_alloc" in str(exc):
            sys.exit(3)
        # otherwise a synthetic row may be invalid input: only time and memory are checked here
except MemoryError:
    sys.exit(3)
except Exception as exc:
    if "bad_alloc" in str(exc) or "allocate" in str(exc).lower():
        sys.exit(3)
    print("error:", " ".join(str(exc).split())[:300])
    sys.exit(2)
print("ok")
"""


def probe(path: Path, name: str, caps: Limits | None = None) -> None:
    """Load and run the graph once in a worker process; an IntakeError when it fails, runs out of time or memory."""
    caps = caps or limits()
    command = [sys.executable, "-I", "-c", PROBE, str(path), str(caps.model_memory_mb)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=caps.model_seconds)
    except subprocess.TimeoutExpired:
        raise IntakeError(f"{name} did not load and score one row within {caps.model_seconds:g} s (this server's "
                          "limit), so it is refused; check the graph for unbounded loops, or export a smaller model.") \
            from None
    if done.returncode == 3:
        raise IntakeError(f"{name} needs more than {caps.model_memory_mb:g} MB of memory to load and score one row "
                          "(this server's limit), so it is refused; export a smaller model.")
    if done.returncode != 0 or "ok" not in done.stdout:
        detail = (done.stdout + done.stderr).strip().splitlines()
        reason = detail[-1].removeprefix("error: ") if detail else f"exit status {done.returncode}"
        raise IntakeError(f"{name} is not a loadable ONNX model ({reason[:300]}); re-export it.")


class OnnxModel:
    """An ONNX classifier/regressor (onnxruntime) with sklearn's predict/predict_proba interface.

    A graph with one input per raw column takes the raw table; a graph with one 2-D input takes a matrix (the
    dataset's columns in order, or its encoded matrix with the encoder). Outputs follow skl2onnx and onnxmltools
    (the label first, then the probabilities: a tensor, or a ZipMap list of {class: probability}); a graph with
    one float output (torch, TensorFlow exporters) gives the positive class's probability (one column) or both
    classes' (two columns) for classes 0 and 1, or a regression's prediction. Each call is cancelled after
    ``seconds`` (default: the ``model_seconds`` limit).
    """

    def __init__(self, path, *, name: str | None = None, seconds: float | None = None, checked: bool = False):
        import onnx
        import onnxruntime as ort

        self.name = name or Path(path).name
        self.seconds = limits().model_seconds if seconds is None else float(seconds)
        if not checked:
            probe(Path(path), self.name)
        try:
            graph = onnx.load(str(path)).graph
            self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise IntakeError(f"{self.name} is not a loadable ONNX model ({exc}); re-export it.") from exc
        inputs = self.session.get_inputs()
        self.input_types = {i.name: ONNX_DTYPES.get(i.type, np.float32) for i in inputs}
        if len(inputs) > 1:
            self.feature_names_in_ = np.array([i.name for i in inputs], dtype=object)
        elif isinstance(inputs[0].shape[-1], int):
            self.n_features_in_ = inputs[0].shape[-1]
        self.outputs = [o.name for o in self.session.get_outputs()]
        classes = onnx_classes(graph)
        if classes is None and len(self.outputs) == 1:
            classes = np.array([0, 1])  # one score output: P(class 1), or a regression's prediction
        if classes is not None:
            self.classes_ = classes

    def _feed(self, X) -> dict:
        if len(self.input_types) == 1:
            (name, dtype), = self.input_types.items()
            return {name: np.asarray(X, dtype=dtype)}
        return {name: np.asarray(X[name]).astype(str if dtype is object else dtype).reshape(-1, 1)
                for name, dtype in self.input_types.items()}

    def _run(self, outputs: list[str], X):
        """``session.run`` cancelled by onnxruntime's terminate flag after ``seconds``."""
        import onnxruntime as ort

        options = ort.RunOptions()
        timer = threading.Timer(self.seconds, setattr, (options, "terminate", True))
        timer.daemon = True
        timer.start()
        try:
            return self.session.run(outputs, self._feed(X), options)
        except Exception:
            if options.terminate:
                raise IntakeError(f"{self.name} did not finish scoring {len(X):,} rows within {self.seconds:g} s "
                                  "(this server's limit), so the run was stopped.") from None
            raise
        finally:
            timer.cancel()

    def predict(self, X):
        return np.asarray(self._run(self.outputs[:1], X)[0]).ravel()

    @property
    def predict_proba(self):
        if not hasattr(self, "classes_"):
            raise AttributeError("this ONNX model has no probability output with known classes")
        return self._predict_proba

    def _predict_proba(self, X):
        proba = self._run(self.outputs[-1:] if len(self.outputs) == 1 else self.outputs[1:2], X)[0]
        if isinstance(proba, list):  # ZipMap: one {class: probability} per row
            return np.array([[row[c] for c in self.classes_] for row in proba], dtype=float)
        proba = np.asarray(proba, dtype=float)
        if len(self.outputs) == 1:
            proba = proba.reshape(len(proba), -1)
            if proba.shape[1] == 1:
                proba = np.column_stack([1 - proba[:, 0], proba[:, 0]])
            low, high = np.nanmin(proba), np.nanmax(proba)
            if low < -1e-6 or high > 1 + 1e-6:
                raise IntakeError(f"{self.name}'s output is not a probability (values from {low:.3g} to {high:.3g}); "
                                  "export the model with its sigmoid or softmax at the end, or upload it for a "
                                  "regression target.")
        return proba


def onnx_classes(graph) -> np.ndarray | None:
    """Class labels in probability-column order: a classifier/ZipMap node's classlabels_* attribute,
    or the ``classes`` initializer skl2onnx writes for MLPs and similar."""
    import onnx
    from onnx import numpy_helper

    for node in graph.node:
        for attr in node.attribute:
            if attr.name in ("classlabels_strings", "classlabels_int64s", "classlabels_ints"):
                values = onnx.helper.get_attribute_value(attr)
                return np.array([v.decode() if isinstance(v, bytes) else v for v in values])
    init = next((i for i in graph.initializer if i.name == "classes"), None)
    return None if init is None else numpy_helper.to_array(init)
