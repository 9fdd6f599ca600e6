"""Loading model files safely: every uploaded model — ``.skops``, ``.onnx``, the boosters' own formats (XGBoost
``.json``/``.ubj``, LightGBM ``.txt``, CatBoost ``.cbm``) and pickles (``.joblib``/``.pkl``, only in the operator's
trusted mode) — is loaded and scored only inside its own sandboxed worker process
(:class:`~explain_core.intake.sandbox.model.SandboxedModel`): the server holds the file's bytes and a proxy, never
an object of the model's.

Trusted mode belongs to whoever runs the server: the ``EXPLAIN_TRUSTED_MODELS=1`` environment variable, the
command line's ``--trusted``, or the app's ``st.secrets`` (read by the app and passed here). Nothing a browser
visitor sends can turn it on. Even in trusted mode a ``.skops`` file naming a function off the vetted list, or a
type that could run code or touch files, is refused (:mod:`explain_core.intake.skops_policy`).
"""
from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import IntakeError, UntrustedModelError
from ..limits import Limits, limits, over
from .data import Dataset
from .formats import MODEL_FORMATS, MODEL_SUFFIXES, PICKLE_SUFFIXES, TRUSTED_ENV
from .models import ModelAdapter, wrap_model
from .tables import safe_name


def trusted_mode(trusted: bool | None = None) -> bool:
    """The operator's trusted mode: an explicit argument (the CLI's ``--trusted``, the app's secrets) wins;
    otherwise ``EXPLAIN_TRUSTED_MODELS=1``."""
    return bool(trusted) if trusted is not None else os.environ.get(TRUSTED_ENV, "") == "1"


def load_model_file(path, *, trusted: bool | None = None, trusted_types: Sequence[str] | None = None,
                    name: str | None = None, caps: Limits | None = None):
    """:func:`load_model_bytes` of a file on disk (refused past the ``upload_mb`` limit before it is read).

    Parameters
    ----------
    path : str or pathlib.Path
        The model file (``.skops``, ``.onnx``, booster files; pickles in trusted mode).
    trusted : bool, optional
        Trusted mode (default: ``EXPLAIN_TRUSTED_MODELS``).
    trusted_types : sequence of str, optional
        skops types the user confirmed.
    name : str, optional
        The file's name in messages (default: the path's).
    caps : Limits, optional
        The limits (default :func:`limits`).

    Returns
    -------
    object
        The model, loaded in its sandboxed worker: a proxy with scikit-learn's interface.

    Raises
    ------
    IntakeError
        When the file is over a limit, damaged or of an unknown format; :class:`UntrustedModelError` when it holds
        a pickle or types nobody vetted.
    """
    path = Path(path)
    caps = caps or limits()
    size = path.stat().st_size
    if size > caps.upload_mb * 2**20:
        raise over(f"The size of {path.name}", size / 2**20, caps.upload_mb, "upload a smaller model file.", " MB")
    return load_model_bytes(path.read_bytes(), name or path.name, trusted=trusted, trusted_types=trusted_types,
                            caps=caps)


def load_model_bytes(data: bytes, filename: str, *, trusted: bool | None = None,
                     trusted_types: Sequence[str] | None = None, caps: Limits | None = None):
    """The model in a file's bytes, loaded in its sandboxed worker: a proxy with scikit-learn's interface.

    Pickles are refused without being read unless trusted mode is on. A skops file loads when every type is
    vetted; classes off the list load when listed in ``trusted_types`` (the user's confirmation) or in trusted
    mode, and only when loading them cannot run code; functions off the list and dangerous types never load.
    ``filename`` (its suffix says the format) names the file in messages.
    """
    from .sandbox.model import ModelFile, SandboxedModel

    name = safe_name(filename, "model")
    suffix = Path(name).suffix.lower()
    caps = caps or limits()
    if suffix not in MODEL_SUFFIXES:
        raise IntakeError(f"{name}: unsupported model format {suffix!r}; upload {MODEL_FORMATS}; .joblib/.pkl only "
                          "when the server runs in trusted mode.")
    trusted = trusted_mode(trusted)
    if suffix in PICKLE_SUFFIXES and not trusted:
        raise UntrustedModelError(
            f"{name} is a pickle file: loading it can run any code it contains, so it is refused. Save the model "
            "with skops (skops.io.dump) or export it to ONNX. Only the server's operator can allow pickles, for "
            f"files they made themselves ({TRUSTED_ENV}=1 when starting the server).")
    if suffix == ".skops":
        check_skops_archive(data, name, caps)
    return SandboxedModel(ModelFile(bytes(data), suffix, name, trusted, tuple(trusted_types or ())))


def check_skops_archive(data: bytes, name: str, caps: Limits) -> None:
    """Refuse a skops file whose stored arrays decode past the ``model_array_mb`` limit, reading only the zip's
    directory and each array's header (nothing is decompressed)."""
    limit = caps.model_array_mb * 2**20
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
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


def model_from_file(path, dataset: Dataset, *, trusted: bool | None = None, encoder=None,
                    threshold: float | None = None, positive_class=None) -> ModelAdapter:
    """Load a model file and wrap it for ``dataset`` in one step.

    Parameters
    ----------
    path : str or pathlib.Path
        The model file.
    dataset : Dataset
        The data it explains.
    trusted : bool, optional
        Trusted mode (default: ``EXPLAIN_TRUSTED_MODELS``).
    encoder, threshold, positive_class : optional
        As in :func:`wrap_model`.

    Returns
    -------
    ModelAdapter
        The loaded, wrapped model.

    Raises
    ------
    IntakeError
        As :func:`load_model_file` and :func:`wrap_model` do.
    """
    return wrap_model(load_model_file(path, trusted=trusted), dataset, encoder=encoder, threshold=threshold,
                      positive_class=positive_class, name=safe_name(Path(path).name, "model"))
