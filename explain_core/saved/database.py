"""The database under :class:`~explain_core.saved.store.SavedStore`: opening it (schema migrated,
:mod:`.schema`), one transaction per call, recovering a damaged store (:mod:`.guard`), the clock and expiry, and
housekeeping (expired records purged, unnamed files swept, :mod:`.blobs`).
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Callable, Iterator

import sqlalchemy as sa

from ..errors import IntakeError
from ..limits import Limits, limits
from . import blobs
from .guard import BUSY_SECONDS, ERRORS, LOG, StoreError, guarded, kind_of, message, move_aside
from .schema import (PENDING_S, URL_ENV, has_tables, lock_for_writing, make_engine, migrate, pending, records,
                     sqlite_file, state_root)

PURGE_EVERY_S = 600.0
SECRET_ENV = "EXPLAIN_STATE_SECRET"
R = records.c


class Database:
    """The plumbing every store call goes through (the parameters are :class:`~explain_core.saved.store.SavedStore`'s).

    Parameters
    ----------
    folder, url, files_folder, secret, caps, clock
        See :class:`~explain_core.saved.store.SavedStore`.
    """

    def __init__(self, folder: Path | str | None = None, *, url: str | None = None,
                 files_folder: Path | str | None = None, secret: bytes | None = None, caps: Limits | None = None,
                 clock: Callable[[], float] = time.time):
        url = url or os.environ.get(URL_ENV) or None
        self.path = None if url else sqlite_file(Path(folder) if folder is not None else state_root())
        self.engine = make_engine(url or f"sqlite:///{self.path}")
        self.where = str(self.path) if self.path else self.engine.url.render_as_string(hide_password=True)
        chosen = files_folder if files_folder is not None else blobs.files_root()
        self.files_folder = None if chosen is None else Path(chosen)
        self._secret = secret if secret is not None else os.environ.get(SECRET_ENV, "").encode() or None
        self._caps, self._clock = caps, clock
        self._purged_at, self._lock, self.damaged_at = 0.0, threading.Lock(), None
        try:
            migrate(self.engine, self.where)
        except ERRORS as exc:
            if kind_of(exc) != "damaged" or not self.recover():
                raise StoreError(message(kind_of(exc), "opening them", exc)) from None
        self.purge_expired()

    @property
    def caps(self) -> Limits:
        return self._caps or limits()

    # --- plumbing --------------------------------------------------------------------------------------------

    @contextmanager
    def _connect(self, write: bool = False) -> Iterator[sa.Connection]:
        """One transaction, committed or rolled back whole; with ``write``, holding the write lock."""
        with self.engine.connect().execution_options(write=write) as conn, conn.begin():
            if write:
                lock_for_writing(conn)
            yield conn

    def recover(self) -> bool:
        """Make a damaged store usable again: a SQLite file is moved aside and a fresh store made in its place; a
        PostgreSQL database whose tables are gone gets them again (:mod:`.guard`).

        Returns
        -------
        bool
            True when the store is usable again: a fresh one was made, or the file is sound again (another thread
            replaced it) or busy (nothing is moved then); False when making a fresh one failed.
        """
        with self._lock:
            if self._sound():
                return True
            try:
                if self.path is not None:
                    move_aside(self.path)
                    sqlite_file(self.path.parent)
                migrate(self.engine, self.where)
            except (OSError, IntakeError, *ERRORS) as exc:
                LOG.error("A fresh store for the saved analyses could not be made at %s: %s", self.where, exc)
                return False
            self.damaged_at = self._now()
            return True

    def _sound(self) -> bool:
        """Whether the database holds its tables (a SQLite file also passes its quick check; busy counts as
        sound)."""
        try:
            if self.path is not None:
                with closing(sqlite3.connect(self.path, timeout=BUSY_SECONDS)) as conn:
                    if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                        return False
            with self.engine.connect() as conn:
                return has_tables(conn)
        except ERRORS as exc:
            return kind_of(exc) == "busy"

    def _now(self) -> float:
        return float(self._clock())

    def _expiry(self) -> float:
        return self._now() - self.caps.saved_days * 86_400

    def _unknown(self, what: str) -> str:
        damaged = "" if self.damaged_at is None else (
            " The server's file of saved analyses was found damaged and set aside at "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(self.damaged_at))} (its operator keeps it).")
        return (f"{what} is not on this server: it was deleted, or not used for {self.caps.saved_days:g} days (saved "
                f"analyses are then removed), or the link is incomplete.{damaged}")

    # --- housekeeping ------------------------------------------------------------------------------------------

    @guarded("removing expired analyses")
    def purge_expired(self) -> int:
        """Delete every record not used for ``saved_days`` (with its files) and every share link held through a
        sign-in longer than :data:`~explain_core.saved.schema.PENDING_S`, and return the space to the system; how
        many records were deleted.

        Returns
        -------
        int
            Records deleted.
        """
        with self._lock:
            self._purged_at = self._now()
        with self._connect(write=True) as conn:
            gone = conn.execute(records.delete().where(R.used < self._expiry())).rowcount
            conn.execute(pending.delete().where(pending.c.created < self._now() - PENDING_S))
            blobs.sweep(conn, self.files_folder)
        if gone and self.path is not None:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA incremental_vacuum")
        return gone

    def _maybe_purge(self) -> None:
        with self._lock:
            due = self._now() - self._purged_at >= PURGE_EVERY_S
        if due:
            try:
                self.purge_expired()
            except StoreError as exc:  # housekeeping: the write it follows is done, the next one tries again
                LOG.warning("Expired saved analyses were not removed: %s", exc)

    @guarded("counting their size")
    def usage(self) -> int:
        """Bytes the records hold (states and files), as the limits count them.

        Returns
        -------
        int
            Bytes.
        """
        with self._connect() as conn:
            return int(conn.execute(sa.select(sa.func.coalesce(sa.func.sum(R.size), 0))).scalar())
