"""Every failure of the saved-analyses file as a clear message, with the visitor's session going on.

:func:`guarded` wraps each public call of :class:`~explain_core.saved.store.SavedStore`: SQLite's errors never
reach a page. A file another process holds (busy or locked) is waited for :data:`BUSY_SECONDS`, the call tried once
more after :data:`RETRY_AFTER_S`, then refused with a message (nothing was written: each call is one transaction).
A damaged file (not a database, a malformed page, its tables gone) is moved aside — kept beside it for the operator
as ``<name>.damaged-<time>``, with its journal, and logged — and a fresh store is created, on which the call is
tried once more. Any other error (a full disk, a folder without permission) is a message naming it.
"""
from __future__ import annotations

import functools
import logging
import os
import sqlite3
import time
from pathlib import Path

from ..errors import IntakeError

BUSY_SECONDS = 2.0  # SQLite's own wait for a lock, per attempt
RETRY_AFTER_S = 0.25
DAMAGED_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (primary result codes)
BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED
LOG = logging.getLogger(__name__)


class StoreError(IntakeError):
    """The saved analyses could not be read or written; the visitor's session goes on, unsaved."""


def kind_of(exc: sqlite3.Error) -> str:
    """``"busy"``, ``"damaged"`` or ``"other"``."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    text = str(exc).lower()
    if code in BUSY_CODES or "locked" in text or "busy" in text:
        return "busy"
    if code in DAMAGED_CODES or "malformed" in text or "not a database" in text or "no such table" in text:
        return "damaged"
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


def message(kind: str, what: str, exc: sqlite3.Error) -> str:
    if kind == "busy":
        return (f"The saved analyses are busy (another process holds their file), so {what} did not happen; it is "
                "tried again on your next change.")
    if kind == "damaged":
        return (f"The saved analyses' file is damaged and could not be replaced ({exc}), so {what} did not happen; "
                "the server's operator can move it away.")
    return f"The saved analyses could not be read or written ({exc}), so {what} did not happen."


def guarded(what: str):
    """Decorate a store method: SQLite's errors handled as the module docstring says (``what`` names the call in
    messages: "saving this analysis")."""
    def wrap(method):
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            for attempt in (0, 1):
                try:
                    return method(self, *args, **kwargs)
                except sqlite3.Error as exc:
                    kind = kind_of(exc)
                    if attempt == 0 and kind == "busy":
                        time.sleep(RETRY_AFTER_S)
                        continue
                    if attempt == 0 and kind == "damaged" and self.recover():
                        continue
                    raise StoreError(message(kind, what, exc)) from None
        return run
    return wrap
