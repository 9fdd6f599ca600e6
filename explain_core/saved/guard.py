"""Every failure of the saved analyses' database as a clear message, with the visitor's session going on.

:func:`guarded` wraps each public call of :class:`~explain_core.saved.store.SavedStore`: the database's errors
never reach a page. A database another process holds (SQLite busy or locked, a PostgreSQL lock not granted within
:data:`BUSY_SECONDS`, a write that collided with another) is tried once more after :data:`RETRY_AFTER_S`, then
refused with a message (nothing was written: each call is one transaction). A damaged SQLite file (not a database, a
malformed page, its tables gone) is moved aside — kept beside it for the operator as ``<name>.damaged-<time>``, with
its journal, and logged — and a fresh store is created, on which the call is tried once more; a PostgreSQL database
whose tables are gone gets them again. A database that cannot be reached, or any other error (a full disk, a folder
without permission), is a message naming it.
"""
from __future__ import annotations

import functools
import logging
import os
import sqlite3
import time
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from ..errors import IntakeError

BUSY_SECONDS = 2.0  # the database's own wait for a lock, per attempt
RETRY_AFTER_S = 0.25
DAMAGED_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (primary result codes)
BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED
BUSY_STATES = ("55P03", "40001", "40P01", "23505")  # lock not granted, serialisation, deadlock, a concurrent insert
DOWN_STATES = ("08",)  # PostgreSQL's connection exceptions (class 08)
ERRORS = (SQLAlchemyError, sqlite3.Error)
LOG = logging.getLogger(__name__)


class StoreError(IntakeError):
    """The saved analyses could not be read or written; the visitor's session goes on, unsaved."""


def kind_of(exc: Exception) -> str:
    """``"busy"``, ``"damaged"``, ``"down"`` (the database cannot be reached) or ``"other"``."""
    orig = getattr(exc, "orig", None) or exc  # SQLAlchemy's DBAPIError wraps the driver's own
    code = (getattr(orig, "sqlite_errorcode", None) or 0) & 0xFF
    state = getattr(orig, "sqlstate", None) or ""
    text = str(orig).lower()
    if code in BUSY_CODES or state in BUSY_STATES or "database is locked" in text or "busy" in text:
        return "busy"
    if code in DAMAGED_CODES or "malformed" in text or "not a database" in text or "no such table" in text or (
            state == "42P01"):  # PostgreSQL's undefined table
        return "damaged"
    if state.startswith(DOWN_STATES) or not state and type(orig).__module__.startswith("psycopg") and (
            type(orig).__name__ == "OperationalError"):  # refused, timed out, no such host
        return "down"
    return "other"


def move_aside(path: Path) -> Path:
    """Rename the damaged file (and its write-ahead log) to ``<name>.damaged-<time>``, drop its shared-memory index,
    log it; the new name."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    os.replace(path, aside)
    for suffix, keep in (("-wal", True), ("-shm", False)):
        journal = path.with_name(path.name + suffix)
        if journal.exists() and keep:
            os.replace(journal, aside.with_name(aside.name + suffix))
        elif journal.exists():
            journal.unlink()
    LOG.error("The saved analyses' file %s was damaged: moved aside to %s (kept for the operator); a fresh store "
              "was created.", path, aside)
    return aside


def message(kind: str, what: str, exc: Exception) -> str:
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
    if kind == "busy":
        return (f"The saved analyses are busy (another process holds their file), so {what} did not happen; it is "
                "tried again on your next change.")
    if kind == "damaged":
        return (f"The saved analyses' file is damaged and could not be replaced ({reason}), so {what} did not "
                "happen; the server's operator can move it away.")
    if kind == "down":
        return (f"The saved analyses' database cannot be reached ({reason}), so {what} did not happen; it is tried "
                "again on your next change.")
    return f"The saved analyses could not be read or written ({reason}), so {what} did not happen."


def guarded(what: str):
    """Decorate a store method: the database's errors handled as the module docstring says (``what`` names the call
    in messages: "saving this analysis")."""
    def wrap(method):
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            for attempt in (0, 1):
                try:
                    return method(self, *args, **kwargs)
                except ERRORS as exc:
                    kind = kind_of(exc)
                    if attempt == 0 and kind == "busy":
                        time.sleep(RETRY_AFTER_S)
                        continue
                    if attempt == 0 and kind == "damaged" and self.recover():
                        continue
                    raise StoreError(message(kind, what, exc)) from None
        return run
    return wrap
