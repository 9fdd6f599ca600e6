"""Loading a model from its file's bytes — run only inside the confined worker (:mod:`.worker`).

``.skops`` by the allow-list policy (:mod:`~explain_core.intake.skops_policy`), ``.onnx`` with onnxruntime,
the boosters' own formats after their headers are checked against the limits (:mod:`~explain_core.intake.boosters`),
pickles only in the operator's trusted mode. :func:`describe` reports what the server needs to wrap the model,
as plain data (``reads_floats``: the model reads one float matrix by position, so the server may send it
compact float rows, :func:`~explain_core.intake.encoding.encoded_model`), and refuses a model larger than the
limits before it is used.
"""
from __future__ import annotations

import io

from ...errors import IntakeError, UntrustedModelError
from ...limits import Limits, over
from ..boosters import NativeBooster, check_native_header, load_native, require
from ..formats import PICKLE_SUFFIXES, TRUSTED_ENV
from ..inputs import input_names
from ..skops_policy import check_file, decide, skops_io

METHODS = ("predict_proba", "decision_function", "predict")


def open_model(data: bytes, suffix: str, name: str, trusted: bool, confirmed: tuple[str, ...], caps: Limits):
    """The estimator in ``data`` (a file with ``suffix``); IntakeError / UntrustedModelError with the reason."""
    if suffix == ".skops":
        checks = check_file(data, trusted=trusted)
        untrusted = decide(checks, set(confirmed), trusted, name)
        try:
            return skops_io().loads(data, trusted=untrusted)
        except ModuleNotFoundError as exc:
            require(exc.name.split(".")[0], name)
            raise
    if suffix == ".onnx":
        from ..onnx_model import OnnxModel

        return OnnxModel(data, name=name)
    if suffix in PICKLE_SUFFIXES:
        return _unpickle(data, name, trusted)
    check_native_header(data, suffix, name, caps)
    return load_native(data, suffix, name)


def _unpickle(data: bytes, name: str, trusted: bool):
    if not trusted:
        raise UntrustedModelError(f"{name} is a pickle file; it loads only when the server runs in trusted mode "
                                  f"({TRUSTED_ENV}=1).")
    import joblib

    try:
        return joblib.load(io.BytesIO(data))
    except Exception as exc:
        raise IntakeError(f"{name} could not be unpickled ({type(exc).__name__}: {exc}); re-save the "
                          "model (skops.io.dump is safer) with the same library versions.") from exc


def describe(model, caps: Limits) -> dict:
    """What the server's proxy mirrors: the methods the model has, its classes, its input names or count."""
    methods = [m for m in METHODS if hasattr(model, m)]
    if not methods:
        raise IntakeError(f"The file holds a {type(model).__name__}, not a model: it has no predict, predict_proba "
                          "or decision_function; save the fitted model itself.")
    classes = getattr(model, "classes_", None)
    names = input_names(model)
    count = len(names) if names is not None else getattr(model, "n_features_in_", None)
    if classes is not None and len(classes) > caps.model_classes:
        raise over("The number of classes of this model", len(classes), caps.model_classes,
                   "upload a model with fewer classes.")
    if count is not None and int(count) > caps.columns:
        raise over("The number of inputs of this model", int(count), caps.columns,
                   "upload a model of fewer features.")
    kind = type(model)
    return {"type": f"{kind.__module__}.{kind.__qualname__}",
            "methods": methods,
            "classes": None if classes is None else list(classes),
            "feature_names": names, "n_features": None if count is None else int(count),
            "steps": len(model.steps) if hasattr(model, "steps") else 0,
            "reads_floats": isinstance(model, NativeBooster) and model.reads_floats}
