"""Loading model files safely: ``.skops`` by a vetted type policy, ``.onnx`` after a bounded trial run, the
boosters' own formats (XGBoost ``.json``/``.ubj``, LightGBM ``.txt``, CatBoost ``.cbm``), and pickles
(``.joblib``/``.pkl``) only in the operator's trusted mode.

Trusted mode belongs to whoever runs the server: the ``EXPLAIN_TRUSTED_MODELS=1`` environment variable, the
command line's ``--trusted``, or the app's ``st.secrets`` (read by the app and passed here). Nothing a browser
visitor sends can turn it on. Even in trusted mode a ``.skops`` file naming a type that could run code or
touch files is refused (:mod:`explain_core.intake.skops_policy`).
"""
from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import IntakeError
from ..limits import Limits, limits, over
from .boosters import NATIVE_SUFFIXES, load_native, require
from .data import Dataset
from .models import ModelAdapter, wrap_model
from .onnx_model import OnnxModel
from .skops_policy import TypeCheck, check_types, skops_io
from .tables import safe_name

TRUSTED_ENV = "EXPLAIN_TRUSTED_MODELS"
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
MODEL_SUFFIXES = (".skops", ".onnx", *NATIVE_SUFFIXES) + PICKLE_SUFFIXES


class UntrustedModelError(IntakeError):
    """A model file that would run arbitrary code (pickle) or holds types nobody vetted (skops).

    ``types`` lists the unvetted but harmless-looking types of a skops file that the user may confirm
    (empty when nothing can be confirmed: a pickle, or a file with a refused type); ``checks`` holds the
    verdict on every type that is not on skops' own trusted list, with what each name resolves to.
    """

    def __init__(self, message: str, types: Sequence[str] = (), checks: Sequence[TypeCheck] = ()):
        super().__init__(message)
        self.types = tuple(types)
        self.checks = tuple(checks)


def trusted_mode(trusted: bool | None = None) -> bool:
    """The operator's trusted mode: an explicit argument (the CLI's ``--trusted``, the app's secrets) wins;
    otherwise ``EXPLAIN_TRUSTED_MODELS=1``."""
    return bool(trusted) if trusted is not None else os.environ.get(TRUSTED_ENV, "") == "1"


def load_model_file(path, *, trusted: bool | None = None, trusted_types: Sequence[str] | None = None,
                    name: str | None = None, caps: Limits | None = None):
    """Load an estimator from ``.skops`` or ``.onnx``; ``.joblib``/``.pkl`` only in trusted mode.

    Pickle-based files run arbitrary code when loaded, so they are refused (without being read) unless
    trusted mode is on. A skops file loads when every type is vetted; unvetted harmless-looking types load
    when listed in ``trusted_types`` (the user's confirmation) or in trusted mode; dangerous or unresolvable
    types never load. ``name`` is the file's name in messages (default the path's).
    """
    path = Path(path)
    name = safe_name(name or path.name, "model")
    caps = caps or limits()
    suffix = path.suffix.lower()
    if suffix == ".skops":
        return _load_skops(path, name, trusted_mode(trusted), set(trusted_types or ()), caps)
    if suffix == ".onnx":
        return OnnxModel(path, name=name)
    if suffix in NATIVE_SUFFIXES:
        return load_native(path, name)
    if suffix in PICKLE_SUFFIXES:
        return _load_pickle(path, name, trusted_mode(trusted))
    raise IntakeError(f"{name}: unsupported model format {suffix!r}; upload .skops, .onnx, or a booster's own file "
                      "(XGBoost .json/.ubj, LightGBM .txt, CatBoost .cbm); .joblib/.pkl only when the server runs "
                      "in trusted mode.")


def _load_pickle(path: Path, name: str, trusted: bool):
    if not trusted:
        raise UntrustedModelError(
            f"{name} is a pickle file: loading it can run any code it contains, so it is refused. Save the model "
            "with skops (skops.io.dump) or export it to ONNX. Only the server's operator can allow pickles, for "
            f"files they made themselves ({TRUSTED_ENV}=1 when starting the server).")
    import joblib

    try:
        return joblib.load(path)
    except Exception as exc:
        raise IntakeError(f"{name} could not be unpickled ({type(exc).__name__}: {exc}); re-save the "
                          "model (skops.io.dump is safer) with the same library versions.") from exc


def _load_skops(path: Path, name: str, trusted: bool, confirmed: set[str], caps: Limits):
    sio = skops_io()

    check_skops_archive(path, name, caps)
    try:
        untrusted = sio.get_untrusted_types(file=path)
    except Exception as exc:
        raise IntakeError(f"{name} is not a readable skops file ({exc}); save it with skops.io.dump.") from exc
    checks = check_types(untrusted, trusted=trusted)
    refused = [c for c in checks if c.verdict == "dangerous"]
    if refused:
        raise UntrustedModelError(
            f"{name} is refused: it names types that could run code or touch files on this server — "
            + "; ".join(f"{c.name} (really {c.resolved}: {c.reason})" for c in refused)
            + ". Save a model built from scikit-learn, XGBoost or LightGBM parts only.", (), checks)
    unresolved = [c for c in checks if c.verdict == "unresolved"]
    if unresolved:
        raise UntrustedModelError(f"{name} cannot be loaded: " + "; ".join(c.reason for c in unresolved) + ".",
                                  (), checks)
    unknown = [c.name for c in checks if c.verdict == "unknown" and c.name not in confirmed]
    if unknown and not trusted:
        raise UntrustedModelError(
            f"{name} contains types that are not known to be safe: "
            + "; ".join(f"{c.name} (really {c.resolved})" for c in checks if c.name in unknown)
            + ". Load it only if you trust its author, by confirming these types.", unknown, checks)
    try:
        return sio.load(path, trusted=untrusted)
    except ModuleNotFoundError as exc:
        require(exc.name.split(".")[0], name)  # names the package and its install command
        raise


def check_skops_archive(path: Path, name: str, caps: Limits) -> None:
    """Refuse a skops file whose stored arrays decode past the ``model_array_mb`` limit, reading only the zip's
    directory and each array's header (nothing is decompressed)."""
    limit = caps.model_array_mb * 2**20
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            for info in members:
                size = max(info.file_size, _npy_bytes(archive, info) if info.filename.endswith(".npy") else 0)
                if size > limit:
                    raise over(f"The decoded size of the stored array {info.filename!r} in {name}", size / 2**20,
                               caps.model_array_mb, "save a smaller model.", " MB")
            total = sum(i.file_size for i in members)
    except zipfile.BadZipFile as exc:
        raise IntakeError(f"{name} is not a readable skops file ({exc}); save it with skops.io.dump.") from exc
    if total > 4 * limit:
        raise over(f"The decoded size of {name}", total / 2**20, 4 * caps.model_array_mb, "save a smaller model.",
                   " MB")


def _npy_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """The size an ``.npy`` member's header declares (shape × item size), read from its first bytes."""
    from numpy.lib import format as npy

    try:
        with archive.open(info) as handle:
            version = npy.read_magic(handle)
            reader = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            shape, _, dtype = reader(handle, max_header_size=10_000)
    except Exception:  # noqa: BLE001 — not a plain array: its declared size is checked instead
        return 0
    return int(np.prod(shape, dtype=float) * dtype.itemsize)


def load_model_bytes(data: bytes, filename: str, *, trusted: bool | None = None,
                     trusted_types: Sequence[str] | None = None):
    """:func:`load_model_file` for an upload's bytes: written to a temporary folder (messages name the user's
    file), loaded, and deleted."""
    name = safe_name(filename, "model")
    suffix = Path(name).suffix.lower()
    with tempfile.TemporaryDirectory(prefix="explain-upload-") as folder:
        path = Path(folder) / f"model{suffix}"
        path.write_bytes(bytes(data))
        return load_model_file(path, trusted=trusted, trusted_types=trusted_types, name=name)


def model_from_file(path, dataset: Dataset, *, trusted: bool | None = None, encoder=None,
                    threshold: float | None = None, positive_class=None) -> ModelAdapter:
    """Load a model file and wrap it for ``dataset`` in one step."""
    return wrap_model(load_model_file(path, trusted=trusted), dataset, encoder=encoder, threshold=threshold,
                      positive_class=positive_class, name=safe_name(Path(path).name, "model"))
