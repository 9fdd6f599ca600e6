"""Saved analyses: a visitor's session kept on the server, so a reload or a shared link brings the same analysis back.

:mod:`~explain_core.saved.recipe` says what a session is made of, as plain data (:class:`AnalysisState`: the data
and model as the visitor chose them, the files by checksum, the reference, restricted features, parameters, row and
what-if edits) and rebuilds the setup from it with the pages' own builders; :mod:`~explain_core.saved.store` keeps
states and their files in SQLite under unguessable tokens.
"""
from ..errors import SavedNotFound
from .recipe import AnalysisState, Builders, DataRecipe, FileRef, ModelRecipe, Restored, rebuild
from .store import SavedInfo, SavedStore, Stored, new_token, state_root

__all__ = ["AnalysisState", "Builders", "DataRecipe", "FileRef", "ModelRecipe", "Restored", "rebuild", "SavedInfo",
           "SavedNotFound", "SavedStore", "Stored", "new_token", "state_root"]
