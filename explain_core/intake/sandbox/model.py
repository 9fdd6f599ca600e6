"""An uploaded model as the server sees it: :class:`SandboxedModel`, scikit-learn's interface over a worker process
that holds the real model (:mod:`.worker`), with no object of the model's in the server.

The proxy mirrors what the model reports (its methods, ``classes_``, its input names or count, all checked as
plain data); ``predict_proba`` / ``decision_function`` / ``predict`` send the rows and return the worker's arrays;
:meth:`~SandboxedModel.stage` gives the encoder and the final step of a two-step Pipeline, so hypercube vertices
can be mixed as encoded arrays here and only the final step's scoring crosses the pipe;
:meth:`~SandboxedModel.introspect` runs a function of this package on the real model (trees, coefficients) and
returns its plain answer. A worker idle for ``model_idle_seconds`` is stopped (its memory returns to the system);
the next request starts a new one and loads the model again from the file's bytes, as after a crash. A pickled
proxy (a Dask worker's copy) carries the file, not the process.
"""
from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass

import numpy as np

from ...errors import IntakeError, ModelCrashed, RemoteError, RemoteModelError
from ...limits import limit, limits
from .client import Worker
from .protocol import MAX_TEXT_CHARS, Expect, call_expect

METHODS = ("predict_proba", "decision_function", "predict")
_LIVE: "weakref.WeakSet[SandboxedModel]" = weakref.WeakSet()
_REAPER: list[threading.Thread] = []


@dataclass(frozen=True, repr=False)
class ModelFile:
    """What the worker loads: the file's bytes and how (``confirmed``: the skops types the visitor confirmed)."""

    data: bytes
    suffix: str
    name: str
    trusted: bool = False
    confirmed: tuple[str, ...] = ()

    def request(self) -> dict:
        return {"op": "load", "file": {"data": self.data, "suffix": self.suffix, "name": self.name,
                                       "trusted": self.trusted, "confirmed": self.confirmed, "caps": limits()}}


class SandboxedModel:
    """An uploaded model living in its own worker process, behind scikit-learn's estimator interface."""

    def __init__(self, source: ModelFile, info: dict | None = None):
        self.source = source
        self._lock = threading.RLock()
        self._slot: list[Worker | None] = [None]
        weakref.finalize(self, _close, self._slot)
        self.info = check_info(info if info is not None else self._start(), source.name)
        classes = self.info["classes"]
        self._label_chars = max(1, max(map(len, map(str, classes)), default=0)) if classes else MAX_TEXT_CHARS
        for attribute, value in (("classes_", self.info["classes"]), ("feature_names_in_", self.info["feature_names"]),
                                 ("n_features_in_", self.info["n_features"])):
            if value is not None:
                setattr(self, attribute, np.array(value, dtype=object) if attribute == "feature_names_in_" else
                        np.asarray(value) if attribute == "classes_" else value)
        _LIVE.add(self)
        _start_reaper()

    def __reduce__(self):
        return SandboxedModel, (self.source, self.info)

    def __repr__(self) -> str:
        return f"SandboxedModel({self.source.name}: {self.info['type']})"

    @property
    def predict_proba(self):
        return self._method("predict_proba", "model")

    @property
    def decision_function(self):
        return self._method("decision_function", "model")

    @property
    def predict(self):
        return self._method("predict", "model")

    def _method(self, method: str, stage: str):
        if method not in self.info["methods"]:
            raise AttributeError(f"{self.source.name} has no {method}")
        return lambda X: self.call(stage, method, X, "scoring")

    def call(self, stage: str, method: str, X, verb: str) -> np.ndarray:
        """``method`` of the worker's ``stage`` on the rows of ``X`` (a frame, an array or
        :class:`~explain_core.intake.mixed.MixedRows`), sent in chunks of at most ``model_call_rows`` rows: each
        chunk is one request under the per-call time limit, its reply bounded by the chunk (:meth:`_expect`), and the
        worker never holds more than one chunk."""
        size = int(limit("model_call_rows"))
        pick = (lambda a: X.iloc[a:a + size]) if hasattr(X, "iloc") else (lambda a: X[a:a + size])
        parts = []
        for a in range(0, max(len(X), 1), size):
            rows = pick(a)
            parts.append(self.request({"op": "call", "stage": stage, "method": method, "X": rows, **_config()},
                                      f"{verb} {len(rows):,} rows", self._expect(method, len(rows))))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _expect(self, method: str, rows: int) -> Expect:
        """What a call's reply may hold: ``rows`` scores of this model's classes (or of up to
        :attr:`~explain_core.limits.Limits.model_classes` outputs where it names none), a classifier's labels (no
        longer than its longest class's), or encoded rows (as wide as an encoder's output may be). Limits are read
        one by one, and only where needed (this is every call's path)."""
        classes = self.info["classes"]
        if method == "transform":
            return call_expect(rows, int(limit("columns")) * 64, "biuf")
        width = len(classes) if classes else int(limit("model_classes"))
        if method != "predict":
            return call_expect(rows, width, "biuf")
        return call_expect(rows, 1 if classes else width, "biufU", self._label_chars)

    def stage(self, name: str) -> "Stage":
        return Stage(self, name)

    def encoded_split(self, groups) -> np.ndarray | None:
        """The feature group of each column the model's encoder outputs (a two-step Pipeline with a column-wise
        encoder, traced in the worker), or None."""
        found = self.request({"op": "split", "groups": list(groups)}, "reading its encoder")["column_group"]
        if found is None:
            return None
        found = np.asarray(found)
        if found.ndim != 1 or found.dtype.kind not in "iu" or len(found) > limits().cells or \
                (len(found) and not 0 <= found.min() <= found.max() < len(groups)):
            raise ModelCrashed(f"{self.source.name}'s worker described its encoder with malformed data.")
        return found.astype(int)

    def introspect(self, function, *args, layers=(), stage: str = "model"):
        """``function(model, *args)`` run in the worker on the real model (wrapped in ``layers``, see
        :func:`~explain_core.intake.inputs.rewrap`); its answer is plain data, to be validated by the caller."""
        request = {"op": "introspect", "module": function.__module__, "function": function.__qualname__,
                   "args": args, "layers": tuple(layers), "stage": stage}
        return self.request(request, f"running {function.__qualname__}")

    def request(self, request: dict, what: str, expect: Expect | None = None):
        """One request to the worker (started, and the model loaded, if there is none, or it is retiring), its
        reply bounded by ``expect`` (default: plain data, with arrays of at most 16 MB + 4 × the model file's size:
        a model's trees or coefficients)."""
        with self._lock:
            worker = self._slot[0]
            if worker is None or not worker.alive or worker.retiring:
                _close(self._slot)
                self._start()
                worker = self._slot[0]
            expect = expect or Expect(array_bytes=16 * 2**20 + 4 * len(self.source.data))
            try:
                return worker.call(request, seconds=limit("model_seconds"), what=what, expect=expect)
            except RemoteError as exc:
                raise translated(exc, self.source.name, what, limits()) from None

    def _start(self) -> dict:
        caps = limits()
        with self._lock:
            worker = Worker(caps.model_memory_mb, caps.model_seconds)
            self._slot[0] = worker
            try:
                info = worker.call(self.source.request(), seconds=caps.model_seconds, what="loading",
                                   expect=Expect(array_bytes=0))
            except RemoteError as exc:
                _close(self._slot)
                raise translated(exc, self.source.name, "loading", caps) from None
            except ModelCrashed as exc:
                raise damaged(self.source, exc) from None
            if getattr(self, "info", None) is not None and check_info(info, self.source.name) != self.info:
                _close(self._slot)
                raise ModelCrashed(f"{self.source.name} described itself differently when loaded again.")
            return info

    @property
    def confined(self) -> dict:
        """The layers that hold in the worker (``limits``, ``network``, ``files``, ``seccomp``), once started."""
        worker = self._slot[0]
        return dict(worker.confined) if worker is not None else {}

    def close_if_idle(self, seconds: float) -> None:
        if self._lock.acquire(blocking=False):
            try:
                worker = self._slot[0]
                if worker is not None and time.monotonic() - worker.used > seconds:
                    _close(self._slot)
            finally:
                self._lock.release()


class Stage:
    """The encoder (``transform``) or the final step (scoring) of a sandboxed two-step Pipeline, or the whole model
    (``"model"``) taking a matrix that may be compact (:class:`~explain_core.intake.mixed.MixedRows`)."""

    def __init__(self, model: SandboxedModel, name: str):
        self.model, self.name = model, name
        if hasattr(model, "classes_") and name in ("final", "model"):
            self.classes_ = model.classes_

    def transform(self, X):
        return self.model.call(self.name, "transform", X, "encoding")

    @property
    def predict_proba(self):
        return self.model._method("predict_proba", self.name)

    @property
    def decision_function(self):
        return self.model._method("decision_function", self.name)

    @property
    def predict(self):
        return self.model._method("predict", self.name)

    def introspect(self, function, *args):
        return self.model.introspect(function, *args, stage=self.name)


def _config() -> dict:
    """The server's scikit-learn setting that a call carries to the worker: ``assume_finite`` (the adapter skips
    the input check where it checks the scores itself, :meth:`~explain_core.intake.models.ModelAdapter.scores_of`)."""
    import sklearn

    return {"assume_finite": bool(sklearn.get_config()["assume_finite"])}


def check_info(info, name: str) -> dict:
    """The worker's description of its model, checked as plain data (its code may have run while loading)."""
    caps = limits()
    try:
        methods = [m for m in info["methods"] if m in METHODS]
        classes, names, count = info["classes"], info["feature_names"], info["n_features"]
        assert classes is None or (isinstance(classes, list) and len(classes) <= caps.model_classes and
                                   all(isinstance(c, (str, int, float, bool)) for c in classes))
        assert names is None or (isinstance(names, list) and len(names) <= caps.columns and
                                 all(isinstance(n, str) and len(n) <= 1000 for n in names))
        assert count is None or (isinstance(count, int) and 0 <= count <= caps.columns)
        return {"type": str(info["type"])[:200], "methods": methods, "classes": classes, "feature_names": names,
                "n_features": count, "steps": int(info.get("steps", 0)),
                "reads_floats": info.get("reads_floats") is True}
    except (AssertionError, KeyError, TypeError, ValueError):
        raise ModelCrashed(f"{name}'s worker described the model with malformed data, so it is refused.") from None


def translated(exc: RemoteError, name: str, what: str, caps) -> Exception:
    """The worker's error report as this package's error."""
    from ...errors import UntrustedModelError
    from ..skops_policy import TypeCheck

    info, message = exc.info, str(exc)
    kind = info.get("kind")
    if kind == "untrusted":
        return UntrustedModelError(message, [str(t)[:300] for t in info.get("types", [])][:200],
                                   [TypeCheck.from_dict(c) for c in info.get("checks", []) if isinstance(c, dict)])
    if kind == "intake":
        return IntakeError(message)
    if kind == "memory":
        return IntakeError(f"{name} ran out of memory while {what} (this server's limit: {caps.model_memory_mb:,.0f} "
                           "MB per model); upload a smaller model, or explain fewer rows at once.")
    if what == "loading":
        return IntakeError(f"{name} could not be loaded ({info.get('type', 'error')}: {message}); save it again "
                           "with the same library versions as this server's.")
    return RemoteModelError(str(info.get("type", "Exception"))[:100], message)


def damaged(source: ModelFile, exc: ModelCrashed) -> IntakeError:
    """A crash while loading: for the boosters' own formats, the file is damaged (their parsers abort on it)."""
    from ..boosters import LIBRARY_NAMES
    from ..formats import NATIVE_SUFFIXES

    library = NATIVE_SUFFIXES.get(source.suffix)
    if library is None:
        return exc
    return ModelCrashed(f"{source.name}: this {LIBRARY_NAMES[library]} file is damaged — {exc} Save the model "
                        "again with the booster's save_model and upload the whole file.")


def _close(slot: list) -> None:
    worker, slot[0] = slot[0], None
    if worker is not None:
        worker.close()


def _start_reaper() -> None:
    """A daemon thread that stops workers idle for longer than ``model_idle_seconds``."""
    if _REAPER and _REAPER[0].is_alive():
        return

    def reap():
        while True:
            time.sleep(2.0)
            try:
                idle = limit("model_idle_seconds")
            except IntakeError:  # a mistyped setting is the operator's to fix; the thread must outlive it
                continue
            for model in list(_LIVE):
                model.close_if_idle(idle)

    thread = threading.Thread(target=reap, name="explain-sandbox-reaper", daemon=True)
    _REAPER[:] = [thread]
    thread.start()
