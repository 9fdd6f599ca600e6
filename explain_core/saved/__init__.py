"""Saved analyses: a visitor's session kept on the server, so a reload or a shared link brings the same analysis back.

:mod:`~explain_core.saved.recipe` says what a session is made of, as plain data (:class:`AnalysisState`: the data
and model as the visitor chose them, the files by checksum, the reference, restricted features, parameters, row and
what-if edits) and :mod:`~explain_core.saved.restore` rebuilds the setup from it with the pages' own builders;
:mod:`~explain_core.saved.store` keeps states and their files in a database (SQLite, or PostgreSQL for replicas)
under unguessable tokens and, with sign-in on, per user.
"""
from ..errors import SavedNotFound
from .guard import StoreError
from .recipe import AnalysisState, DataRecipe, FileRef, ModelRecipe
from .records import SavedInfo, Stored, new_token
from .restore import Builders, Restored, rebuild
from .schema import state_root
from .store import SavedStore

__all__ = ["AnalysisState", "Builders", "DataRecipe", "FileRef", "ModelRecipe", "Restored", "rebuild", "SavedInfo",
           "SavedNotFound", "SavedStore", "StoreError", "Stored", "new_token", "state_root"]
