"""Where the session's datasets and models came from: a bundled demo, a file the visitor uploaded (its bytes), the
choices that made it a dataset, a model trained here or loaded from a file. Pages remember each one as they build it
(:func:`remember_data`, :func:`remember_model`); ``ui/saved.py`` reads them to keep the analysis across reloads
and links. Session key ``origins``: recipes by dataset key and by model key, and the files by SHA-256."""
from __future__ import annotations

import streamlit as st

from explain_core.analysis import Setup
from explain_core.intake.data import Dataset
from explain_core.saved.recipe import DataRecipe, ModelRecipe


def _origins() -> dict:
    return st.session_state.setdefault("origins", {"data": {}, "model": {}, "files": {}})


def remember_data(dataset: Dataset, recipe: DataRecipe, data: bytes | None = None) -> None:
    """``dataset`` was made by ``recipe`` (from the file ``data``, for an upload)."""
    origins = _origins()
    origins["data"][dataset.key] = recipe
    if data is not None:
        origins["files"][recipe.file.sha256] = data


def remember_model(model_key: str, recipe: ModelRecipe, data: bytes | None = None) -> None:
    """The model keyed ``model_key`` was made by ``recipe`` (from the file ``data``, for a model file)."""
    origins = _origins()
    origins["model"][model_key] = recipe
    if data is not None:
        origins["files"][recipe.file.sha256] = data


def origins_of(setup: Setup) -> tuple[DataRecipe | None, ModelRecipe | None]:
    origins = _origins()
    return origins["data"].get(setup.dataset.key), origins["model"].get(setup.model_key)


def remembered_file(sha256: str) -> bytes | None:
    return _origins()["files"].get(sha256)


def keep(data_keys: set, model_keys: set) -> None:
    """Forget every origin but those of ``data_keys`` and ``model_keys``, and the files no kept origin names."""
    origins = _origins()
    origins["data"] = {k: v for k, v in origins["data"].items() if k in data_keys}
    origins["model"] = {k: v for k, v in origins["model"].items() if k in model_keys}
    named = {r.file.sha256 for r in (*origins["data"].values(), *origins["model"].values()) if r.file is not None}
    origins["files"] = {k: v for k, v in origins["files"].items() if k in named}
