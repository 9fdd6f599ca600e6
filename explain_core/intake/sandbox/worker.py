"""The worker process that holds one uploaded model: it confines itself (:mod:`.confine`) before reading any of
the file, then loads the model (:mod:`.loaders`) and answers the server's requests over its pipes, one at a time.

Forked by the zygote (:mod:`.zygote`), or started by :class:`~explain_core.intake.sandbox.client.Worker` as
``python -I -B -c BOOT root memory_mb cpu_seconds server_pid``, where
``BOOT`` confines the process with :mod:`.confine` (loaded from its file, before any other import of this package)
and then calls :func:`serve`. Requests (``op``): ``load`` (the model from its bytes; replies its description),
``call`` (``predict_proba`` / ``decision_function`` / ``predict`` of the model or its final step, ``transform``
of its encoder), ``split`` (which feature group each encoded column comes from), ``introspect`` (plain data read
off the model by a function of this package). Every reply is plain data (:mod:`.protocol`); a failure is a reply
``{"error": …}``; a crash ends the process, and the server starts a new one.
"""
from __future__ import annotations

import os
import sys

LOAD_CONFINE = r"""
import importlib.util, os, sys
root = sys.argv[1]
spec = importlib.util.spec_from_file_location("_confine", os.path.join(root, "explain_core", "intake", "sandbox",
                                                                        "confine.py"))
confine = importlib.util.module_from_spec(spec)
spec.loader.exec_module(confine)
"""  # the start of a worker's boot code and of the zygote's (:mod:`.zygote`): confine.py from its file
BOOT = LOAD_CONFINE + r"""
confine.die_with_parent(lambda: os.getppid() == int(sys.argv[4]))
layers = confine.confine(float(sys.argv[2]), root, float(sys.argv[3]))
sys.path.insert(0, root)
from explain_core.intake.sandbox.worker import serve
serve(layers)
"""



def _channels() -> tuple[int, int]:
    """The pipes to the server, moved off fds 0 and 1 so that a model printing to stdout (LightGBM does) cannot
    corrupt the protocol: its prints go to stderr, which the server keeps the end of."""
    inbox, outbox = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return inbox, outbox


def serve(layers: dict) -> None:
    """Answer requests until the server closes the pipe."""
    from .protocol import read_request, reply_bytes

    sys.modules["matplotlib"] = None  # shap imports it when it can; it needs a writable cache, no model needs it
    inbox, outbox = _channels()

    def read_exact(n: int) -> bytes:
        chunks, left = [], n
        while left:
            chunk = os.read(inbox, min(left, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def send(value) -> None:
        data = reply_bytes(value)
        view = memoryview(data)
        while view:
            view = view[os.write(outbox, view):]

    send({"ready": True, "confined": layers, "pid": os.getpid()})
    state = Holder()
    while True:
        try:
            request = read_request(read_exact)  # asleep in read() until the server writes: no polling
        except EOFError:
            return
        try:
            send({"value": state.handle(request)})
        except MemoryError:
            send({"error": {"kind": "memory", "message": "the model ran out of memory (this worker's limit)"}})
        except BaseException as exc:  # noqa: BLE001 — every failure of the model becomes a reply
            send({"error": _error(exc)})


def _error(exc: BaseException) -> dict:
    from ...errors import IntakeError, one_line
    from ...errors import UntrustedModelError

    message = one_line(exc, 2000)
    kind = "untrusted" if isinstance(exc, UntrustedModelError) else "intake" if isinstance(exc, IntakeError) else \
        "memory" if "bad_alloc" in message or "failed to allocate" in message.lower() else "model"
    error = {"kind": kind, "type": type(exc).__name__, "message": message}
    for field in ("types", "checks"):
        if getattr(exc, field, None):
            error[field] = [c if isinstance(c, str) else c.as_dict() for c in getattr(exc, field)]
    return error


class Holder:
    """The loaded model and the requests on it."""

    def __init__(self):
        self.model = None

    def handle(self, request: dict):
        op = request["op"]
        if op == "load":
            from .loaders import describe, open_model

            self.model = open_model(**request["file"])
            return describe(self.model, request["file"]["caps"])
        if self.model is None:
            raise RuntimeError("no model is loaded in this worker")
        if op == "call":
            return self.call(request["stage"], request["method"], request["X"], request.get("assume_finite", False))
        if op == "split":
            from ..tracing import encoded_column_groups

            encoder = self.stage("encoder")
            return {"column_group": encoded_column_groups(encoder, request["groups"])} if encoder is not None \
                else {"column_group": None}
        if op == "introspect":
            return self.introspect(request)
        raise ValueError(f"unknown request {op!r}")

    def stage(self, name: str):
        """The whole model, or the encoder / final estimator of a two-step Pipeline whose final step takes the
        encoder's matrix (None where the model is not such a Pipeline)."""
        from sklearn.pipeline import Pipeline

        if name == "model":
            return self.model
        model = self.model
        if not isinstance(model, Pipeline) or len(model.steps) != 2:
            return None
        if getattr(model[-1], "feature_names_in_", None) is not None:
            return None
        return model[0] if name == "encoder" else model[-1]

    def call(self, stage: str, method: str, X, assume_finite: bool = False):
        import numpy as np
        import sklearn

        target = self.stage(stage)
        if target is None:
            raise RuntimeError(f"this model has no {stage} step")
        if method not in ("predict_proba", "decision_function", "predict", "transform"):
            raise ValueError(f"unknown method {method!r}")
        from ..mixed import MixedRows

        X = X.array() if isinstance(X, MixedRows) else X  # hypercube vertices, mixed here
        with sklearn.config_context(assume_finite=assume_finite):  # as the server's adapter asked
            out = getattr(target, method)(X)
        if hasattr(out, "toarray"):
            out = out.toarray()
        if isinstance(out, list):  # an ONNX ZipMap or similar: the caller's adapter turns it into an array
            raise TypeError(f"{method} returned a list, not an array")
        return np.asarray(out)

    def introspect(self, request: dict):
        import importlib

        from ..inputs import rewrap

        module = request["module"]
        if not module.startswith("explain_core."):
            raise ValueError(f"introspection runs functions of this package only, not of {module}")
        function = getattr(importlib.import_module(module), request["function"])
        target = self.stage(request.get("stage", "model"))
        return function(rewrap(target, request.get("layers", ())), *request.get("args", ()))
