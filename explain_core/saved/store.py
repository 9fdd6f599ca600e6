"""The store of saved analyses: one SQLite file (the standard library's ``sqlite3``) in the server's own folder.

Two kinds of record, each a state (JSON text, :class:`~explain_core.saved.recipe.AnalysisState`) with the files it
names (the uploaded table, the model file) as blobs, by SHA-256:

- a **session**: a visitor's working analysis, kept under the session's token (in the app's URL) and rewritten as it
  changes, so a reload finds it;
- a **saved analysis**: a named copy a session made, listed for that session (its *owner*: the token it was saved
  under; there are no accounts), opened through its own read-only share token. Opening a share link copies it into
  a new session with a new token: nobody ever writes to another's record.

Only SHA-256 hashes of tokens are stored (a copy of the file gives no working link); a share token is an HMAC of its
owner's token and a random salt, so the owner's list can show it again while the file holds only its hash. Every
query names one record, found by the hash of a token the caller holds: nothing of one token's data is reachable
from another's. Sizes (state + files) are counted and checked against the operator's limits
(:attr:`~explain_core.limits.Limits.saved_mb`, ``saved_analysis_mb``) before anything is written; records not used
for ``saved_days`` are deleted (at start and then at most every :data:`PURGE_EVERY_S` on writes). Each change is
one transaction (atomic); the file is in WAL mode and every call opens its own connection, so threads and
processes can share it. No SQLite error reaches the caller: a busy file, a damaged one (moved aside for the operator,
a fresh store made) or any other failure is a :class:`~explain_core.saved.guard.StoreError` with the reason
(:mod:`.guard`). Besides the total, one visitor — a session's token with the analyses it saved — may hold at most
:attr:`~explain_core.limits.Limits.saved_visitor_mb`. The folder is ``EXPLAIN_STATE_DIR`` or the user's data folder
(``platformdirs.user_data_dir``), created private (0700, the file 0600).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import threading
import time
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping

from ..cache import APP_NAME
from ..errors import IntakeError, SavedNotFound
from ..limits import Limits, limits, over
from .guard import BUSY_SECONDS, LOG, StoreError, guarded, kind_of, message, move_aside

STATE_ENV = "EXPLAIN_STATE_DIR"
FILE_NAME = "saved-analyses.sqlite3"
SCHEMA_VERSION = 1
TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)
PURGE_EVERY_S = 600.0
MAX_NAME = 80
SCHEMA = """
CREATE TABLE records (
    id INTEGER PRIMARY KEY,
    token_hash BLOB UNIQUE,   -- a session: SHA-256 of its token
    owner_hash BLOB,          -- a saved analysis: SHA-256 of the token of the session that saved it
    share_hash BLOB UNIQUE,   -- a saved analysis: SHA-256 of its share token
    salt BLOB,                -- a saved analysis: its share token is HMAC(owner's token, salt)
    name TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    size INTEGER NOT NULL,
    created REAL NOT NULL,
    used REAL NOT NULL,
    CHECK ((token_hash IS NULL) != (share_hash IS NULL)));
CREATE INDEX records_owner ON records (owner_hash);
CREATE INDEX records_used ON records (used);
CREATE TABLE files (
    record INTEGER NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    sha256 TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (record, sha256));
"""


def state_root() -> Path:
    """``EXPLAIN_STATE_DIR`` when set, else the user's data folder for this application.

    Returns
    -------
    pathlib.Path
        The folder.
    """
    if os.environ.get(STATE_ENV):
        return Path(os.environ[STATE_ENV])
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def new_token() -> str:
    """A fresh unguessable token (256 random bits, URL-safe).

    Returns
    -------
    str
        The token.
    """
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def share_token(owner_token: str, salt: bytes) -> str:
    """The read-only token of a saved analysis: HMAC-SHA-256 of its owner's token and its salt, URL-safe."""
    digest = hmac.new(owner_token.encode(), b"share:" + salt, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def checked_token(token: str, what: str = "link") -> str:
    """``token`` when it has a token's form, else :class:`SavedNotFound` (before any lookup)."""
    if not isinstance(token, str) or not TOKEN.fullmatch(token):
        raise SavedNotFound(f"This {what} does not name a saved analysis (its token is incomplete or mistyped); "
                            "ask for the link again.")
    return token


@dataclass(frozen=True)
class Stored:
    """A record's state (JSON text) and its files by SHA-256.

    Parameters
    ----------
    state : str
        The state as JSON.
    files : dict of str to bytes
        Its files.
    """

    state: str
    files: dict[str, bytes]


@dataclass(frozen=True)
class SavedInfo:
    """One saved analysis as its owner's list shows it.

    Parameters
    ----------
    id : int
        The record's id.
    name, summary : str
        Its name, and what it holds.
    created, used : float
        When it was saved and last opened (seconds since the epoch).
    size : int
        Bytes.
    share_token : str
        Its share token.
    """

    id: int
    name: str
    summary: str
    created: float
    used: float
    size: int
    share_token: str


class SavedStore:
    """Sessions and saved analyses in one SQLite file (see the module's docstring). ``caps`` fixes the limits
    (default: :func:`~explain_core.limits.limits` at each call); ``clock`` gives the time in seconds.

    Parameters
    ----------
    folder : str or pathlib.Path, optional
        The folder of the SQLite file (default :func:`state_root`).
    caps : Limits, optional
        The limits.
    clock : callable
        The time in seconds.
    """

    def __init__(self, folder: Path | str | None = None, *, caps: Limits | None = None,
                 clock: Callable[[], float] = time.time):
        folder = Path(folder) if folder is not None else state_root()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path, self._caps, self._clock = folder / FILE_NAME, caps, clock
        if not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        self._purged_at, self._lock, self.damaged_at = 0.0, threading.Lock(), None
        try:
            self._init_schema()
        except sqlite3.Error as exc:
            if kind_of(exc) != "damaged" or not self.recover():
                raise StoreError(message(kind_of(exc), "opening them", exc)) from None
        self.purge_expired()

    @property
    def caps(self) -> Limits:
        return self._caps or limits()

    # --- plumbing --------------------------------------------------------------------------------------------

    @contextmanager
    def _connect(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """One connection for one call; with ``write`` one immediate transaction, committed or rolled back whole."""
        conn = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            if write:
                conn.execute("BEGIN IMMEDIATE")
            yield conn
            if write:
                conn.execute("COMMIT")
        except BaseException:
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error:  # a damaged file: the original error says more
                pass
            raise
        finally:
            conn.close()

    def recover(self) -> bool:
        """Move a damaged file aside and create a fresh store in its place (:mod:`.guard`).

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
                move_aside(self.path)
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
                self._init_schema()
            except (OSError, sqlite3.Error) as exc:
                LOG.error("A fresh store for the saved analyses could not be made at %s: %s", self.path, exc)
                return False
            self.damaged_at = self._now()
            return True

    def _sound(self) -> bool:
        """Whether the file passes SQLite's quick check and holds its tables (a busy file counts as sound)."""
        try:
            with closing(sqlite3.connect(self.path, timeout=BUSY_SECONDS)) as conn:
                return conn.execute("PRAGMA quick_check").fetchone()[0] == "ok" and conn.execute(
                    "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('records', 'files')").fetchone()[0] == 2
        except sqlite3.Error as exc:
            return kind_of(exc) == "busy"

    def _init_schema(self) -> None:
        """Create the tables in a new file (WAL mode, space returned on purges), or check an existing file's schema
        (SQLite's errors are the caller's)."""
        with self._connect() as conn:
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # effective while the file has no table yet
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                version = SCHEMA_VERSION
            conn.execute("COMMIT")
        if version != SCHEMA_VERSION:
            raise IntakeError(f"The saved analyses ({self.path}) were written by another version of this app "
                              f"(schema {version}, this one reads {SCHEMA_VERSION}); give this server its own folder "
                              "(EXPLAIN_STATE_DIR).")

    def _now(self) -> float:
        return float(self._clock())

    def _expiry(self) -> float:
        return self._now() - self.caps.saved_days * 86_400

    def _record(self, conn, column: str, token: str) -> tuple | None:
        """``(id, state, size, hash)`` of the live record whose ``column`` is the hash of ``token``, else None."""
        expected = token_hash(token)
        row = conn.execute(f"SELECT id, state, size, {column} FROM records WHERE {column} = ? AND used >= ?",
                           (expected, self._expiry())).fetchone()
        return row if row is not None and hmac.compare_digest(row[3], expected) else None

    def _files(self, conn, record: int) -> dict[str, bytes]:
        files = {}
        for sha, data in conn.execute("SELECT sha256, data FROM files WHERE record = ?", (record,)):
            if hashlib.sha256(data).hexdigest() != sha:
                raise IntakeError("A file of this saved analysis is damaged (its content no longer matches its "
                                  "checksum); it cannot be restored.")
            files[sha] = bytes(data)
        return files

    def _check_room(self, conn, size: int, family: bytes, replacing: int = 0) -> None:
        """The per-analysis, per-visitor (``family``: the hash of the session's token, whose working analysis and
        saved ones count together) and total limits, for a record of ``size`` bytes replacing one of ``replacing``."""
        caps, mb = self.caps, 2 ** 20
        if size > caps.saved_analysis_mb * mb:
            raise over("This analysis (its data file, model file and choices)", size / mb, caps.saved_analysis_mb,
                       "use smaller files to keep it across reloads and links.", " MB")
        mine = conn.execute("SELECT COALESCE(SUM(size), 0) FROM records WHERE token_hash = ? OR owner_hash = ?",
                            (family, family)).fetchone()[0] - replacing + size
        if mine > caps.saved_visitor_mb * mb:
            raise over("The space your saved analyses take", mine / mb, caps.saved_visitor_mb,
                       "delete saved analyses you no longer need (Home).", " MB")
        total = conn.execute("SELECT COALESCE(SUM(size), 0) FROM records").fetchone()[0] - replacing + size
        if total > caps.saved_mb * mb:
            raise over("The space saved analyses take on this server", total / mb, caps.saved_mb,
                       "delete saved analyses you no longer need (Home), or ask the operator for more room.", " MB")

    def _copy(self, conn, source: int, *, token: bytes | None = None, owner: bytes | None = None,
              share: bytes | None = None, salt: bytes | None = None, name: str = "", summary: str = "") -> int:
        """A new record with ``source``'s state and files (the limits checked first); its id."""
        state, size = conn.execute("SELECT state, size FROM records WHERE id = ?", (source,)).fetchone()
        self._check_room(conn, size, token or owner)
        now = self._now()
        record = conn.execute(
            "INSERT INTO records (token_hash, owner_hash, share_hash, salt, name, summary, state, size, created, used)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (token, owner, share, salt, name, summary, state, size, now,
                                                       now)).lastrowid
        conn.execute("INSERT INTO files (record, sha256, data) SELECT ?, sha256, data FROM files WHERE record = ?",
                     (record, source))
        return record

    # --- sessions ----------------------------------------------------------------------------------------------

    @guarded("saving this analysis")
    def save_session(self, token: str, state: str, files: Mapping[str, bytes]) -> int:
        """Write a session's working analysis: ``state`` and every file it names (``files``, by SHA-256; only those
        not stored yet are written, those it no longer names are dropped), after checking the limits. Its size.

        Parameters
        ----------
        token : str
            The session's token.
        state : str
            The state as JSON.
        files : mapping of str to bytes
            Its files, by SHA-256.

        Returns
        -------
        int
            The record's size in bytes.

        Raises
        ------
        IntakeError
            When a file does not match its checksum, or the record would pass a saved-analysis limit.
        """
        checked_token(token)
        size = len(state.encode()) + sum(len(data) for data in files.values())
        with self._connect(write=True) as conn:
            conn.execute("DELETE FROM records WHERE token_hash = ? AND used < ?", (token_hash(token), self._expiry()))
            found = self._record(conn, "token_hash", token)
            self._check_room(conn, size, token_hash(token), replacing=found[2] if found else 0)
            now = self._now()
            if found is None:
                record = conn.execute("INSERT INTO records (token_hash, state, size, created, used) VALUES "
                                      "(?, ?, ?, ?, ?)", (token_hash(token), state, size, now, now)).lastrowid
            else:
                record = found[0]
                conn.execute("UPDATE records SET state = ?, size = ?, used = ? WHERE id = ?", (state, size, now,
                                                                                            record))
            kept = {sha for (sha,) in conn.execute("SELECT sha256 FROM files WHERE record = ?", (record,))}
            new = set(files) - kept  # only these are hashed and written (a reload's files are stored once)
            for sha in new:
                if hashlib.sha256(files[sha]).hexdigest() != sha:
                    raise IntakeError(f"A file given for the saved analysis does not match its checksum {sha[:12]}….")
            conn.executemany("DELETE FROM files WHERE record = ? AND sha256 = ?",
                             [(record, sha) for sha in kept - set(files)])
            conn.executemany("INSERT INTO files (record, sha256, data) VALUES (?, ?, ?)",
                             [(record, sha, files[sha]) for sha in new])
        self._maybe_purge()
        return size

    @guarded("opening this analysis")
    def open_session(self, token: str) -> Stored | None:
        """The session's working analysis; None for a token that has saved analyses but no working one (a fresh
        session keeps it, and its list); :class:`SavedNotFound` for a token this server does not know (any
        more). Opening counts as use: the session and the analyses it saved start their expiry again.

        Parameters
        ----------
        token : str
            The session's token.

        Returns
        -------
        Stored or None
            The working analysis.

        Raises
        ------
        SavedNotFound
            When the token is unknown.
        """
        checked_token(token)
        with self._connect(write=True) as conn:
            found = self._record(conn, "token_hash", token)
            owned = conn.execute("SELECT COUNT(*) FROM records WHERE owner_hash = ? AND used >= ?",
                                 (token_hash(token), self._expiry())).fetchone()[0]
            if found is None and not owned:
                raise SavedNotFound(self._unknown("This link's analysis"))
            conn.execute("UPDATE records SET used = ? WHERE token_hash = ? OR owner_hash = ?",
                         (self._now(), token_hash(token), token_hash(token)))
            return Stored(found[1], self._files(conn, found[0])) if found is not None else None

    def _unknown(self, what: str) -> str:
        damaged = "" if self.damaged_at is None else (
            " The server's file of saved analyses was found damaged and set aside at "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(self.damaged_at))} (its operator keeps it).")
        return (f"{what} is not on this server: it was deleted, or not used for {self.caps.saved_days:g} days (saved "
                f"analyses are then removed), or the link is incomplete.{damaged}")

    # --- saved analyses ----------------------------------------------------------------------------------------

    @guarded("saving the analysis")
    def save_analysis(self, token: str, name: str, summary: str = "") -> SavedInfo:
        """A named copy of the session's working analysis, owned by ``token``, with its own share token.

        Parameters
        ----------
        token : str
            The session's token.
        name : str
            The analysis's name.
        summary : str
            What it holds, in words.

        Returns
        -------
        SavedInfo
            The saved analysis.

        Raises
        ------
        IntakeError
            When the session has nothing to save, or the copy would pass a saved-analysis limit.
        """
        checked_token(token)
        name = checked_name(name)
        salt = secrets.token_bytes(16)
        share = share_token(token, salt)
        with self._connect(write=True) as conn:
            found = self._record(conn, "token_hash", token)
            if found is None:
                raise IntakeError("There is nothing to save yet: this session is the demo it started on. Change the "
                                  "data, model, row or a parameter first.")
            record = self._copy(conn, found[0], owner=token_hash(token), share=token_hash(share), salt=salt,
                                name=name, summary=summary[:300])
        return next(info for info in self.list_analyses(token) if info.id == record)

    @guarded("listing your saved analyses")
    def list_analyses(self, token: str) -> list[SavedInfo]:
        """The analyses ``token`` saved, newest first (listing them counts as use).

        Parameters
        ----------
        token : str
            The session's token.

        Returns
        -------
        list of SavedInfo
            The analyses.
        """
        checked_token(token)
        owner = token_hash(token)
        with self._connect(write=True) as conn:
            rows = conn.execute("SELECT id, name, summary, created, used, size, salt FROM records WHERE owner_hash = ?"
                                " AND used >= ? ORDER BY created DESC, id DESC", (owner, self._expiry())).fetchall()
            conn.execute("UPDATE records SET used = ? WHERE owner_hash = ? AND used >= ?", (self._now(), owner,
                                                                                         self._expiry()))
        return [SavedInfo(i, n, s, c, u, size, share_token(token, salt)) for i, n, s, c, u, size, salt in rows]

    @guarded("deleting the analysis")
    def delete_analysis(self, token: str, analysis: int) -> bool:
        """Delete one of ``token``'s saved analyses (its share link stops working); False when it is not theirs.

        Parameters
        ----------
        token : str
            The owner's token.
        analysis : int
            The analysis's id.

        Returns
        -------
        bool
            Whether it was deleted.
        """
        checked_token(token)
        with self._connect(write=True) as conn:
            gone = conn.execute("DELETE FROM records WHERE id = ? AND owner_hash = ?",
                                (int(analysis), token_hash(token))).rowcount
        return bool(gone)

    @guarded("opening the saved analysis")
    def open_saved(self, token: str, analysis: int) -> None:
        """Make one of ``token``'s saved analyses the session's working analysis again (a copy: the saved one is
        left as it was).

        Parameters
        ----------
        token : str
            The owner's token.
        analysis : int
            The analysis's id.

        Raises
        ------
        SavedNotFound
            When the analysis is not the token's (or is gone).
        """
        checked_token(token)
        with self._connect(write=True) as conn:
            row = conn.execute("SELECT id FROM records WHERE id = ? AND owner_hash = ? AND used >= ?",
                               (int(analysis), token_hash(token), self._expiry())).fetchone()
            if row is None:
                raise SavedNotFound(self._unknown("This saved analysis"))
            conn.execute("DELETE FROM records WHERE token_hash = ?", (token_hash(token),))  # counted no more
            self._copy(conn, row[0], token=token_hash(token))
            conn.execute("UPDATE records SET used = ? WHERE id = ?", (self._now(), row[0]))

    @guarded("opening the shared analysis")
    def open_share(self, share: str) -> tuple[str, str]:
        """A shared link opened: a new session (its new token, and the analysis's name) holding a copy of the saved
        analysis, which stays as it was.

        Parameters
        ----------
        share : str
            The share token.

        Returns
        -------
        tuple of (str, str)
            The new session's token, and the analysis's name.

        Raises
        ------
        SavedNotFound
            When the share token is unknown.
        """
        checked_token(share, "shared link")
        with self._connect(write=True) as conn:
            found = self._record(conn, "share_hash", share)
            if found is None:
                raise SavedNotFound(self._unknown("The shared analysis"))
            token = new_token()
            self._copy(conn, found[0], token=token_hash(token))
            conn.execute("UPDATE records SET used = ? WHERE id = ?", (self._now(), found[0]))
            name = conn.execute("SELECT name FROM records WHERE id = ?", (found[0],)).fetchone()[0]
        return token, name

    # --- housekeeping ------------------------------------------------------------------------------------------

    @guarded("removing expired analyses")
    def purge_expired(self) -> int:
        """Delete every record not used for ``saved_days`` (with its files) and return the space to the system;
        how many were deleted.

        Returns
        -------
        int
            Records deleted.
        """
        with self._lock:
            self._purged_at = self._now()
        with self._connect(write=True) as conn:
            gone = conn.execute("DELETE FROM records WHERE used < ?", (self._expiry(),)).rowcount
        if gone:
            with self._connect() as conn:
                conn.execute("PRAGMA incremental_vacuum")
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
            return int(conn.execute("SELECT COALESCE(SUM(size), 0) FROM records").fetchone()[0])


def checked_name(name: str) -> str:
    """A saved analysis's name: one line of 1 to :data:`MAX_NAME` printable characters."""
    text = " ".join(str(name or "").split())
    if not 1 <= len(text) <= MAX_NAME or not text.isprintable():
        raise IntakeError(f"Give the analysis a name of 1 to {MAX_NAME} characters (letters, digits, spaces, "
                          "punctuation).")
    return text
