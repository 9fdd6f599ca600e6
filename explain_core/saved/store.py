"""The store of saved analyses: one database behind one interface (SQLAlchemy Core), SQLite by default or
PostgreSQL for several replicas (:mod:`.schema`).

Two kinds of record, each a state (JSON text, :class:`~explain_core.saved.recipe.AnalysisState`) with the files it
names (the uploaded table, the model file), by SHA-256, their bytes in the database or a folder (:mod:`.blobs`):

- a **session**: a visitor's working analysis, kept under the session's token (in the app's URL) and rewritten as it
  changes, so a reload finds it; with sign-in on it also belongs to its user, and no one else's token opens it;
- a **saved analysis**: a named copy a session made, listed for its *owner* — the session's token without sign-in,
  the signed-in user with it (then from any browser) — and opened through its own read-only share token. Opening a
  share link copies it into a new session with a new token: nobody ever writes to another's record. A share link a
  signed-out visitor opened is held through their sign-in (:mod:`.pending`), then opened the same way.

Only hashes of tokens and of users are stored (:mod:`.records`: a copy of the database gives no working link). Every
query names one record, found by the hash of a token the caller holds (and, signed in, their user): nothing of one
token's or user's data is reachable from another's. Sizes (state + files) are counted and checked against the
operator's limits (:attr:`~explain_core.limits.Limits.saved_mb`, ``saved_analysis_mb``, and for one visitor — a
token's session with the analyses it saved, or one user's — ``saved_visitor_mb``) before anything is written;
records not used for ``saved_days`` are deleted (at start and then at most every :data:`PURGE_EVERY_S` on writes).
Each change is one transaction; no database error reaches the caller (:mod:`.guard`).
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Mapping

import sqlalchemy as sa

from ..errors import IntakeError, SavedNotFound
from ..limits import over
from . import blobs
from .database import SECRET_ENV
from .guard import guarded
from .pending import PendingShares
from .records import SavedInfo, Stored, checked_name, checked_token, new_token, share_token, token_hash, user_hash
from .schema import files as file_rows
from .schema import records

R = records.c


class SavedStore(PendingShares):
    """Sessions and saved analyses in one database (see the module's docstring). Each public call takes the
    caller's ``token`` and, with sign-in on, ``user`` (their identity, e.g. the provider's issuer and subject).

    Parameters
    ----------
    folder : str or pathlib.Path, optional
        The folder of the SQLite file (default :func:`~explain_core.saved.schema.state_root`).
    url : str, optional
        A database URL instead (default ``EXPLAIN_STATE_URL``; ``postgresql+psycopg://…``).
    files_folder : str or pathlib.Path, optional
        Where uploaded files' bytes go (default ``EXPLAIN_STATE_FILES``; None: in the database).
    secret : bytes, optional
        The server's secret, the key of signed-in users' share tokens (default ``EXPLAIN_STATE_SECRET``).
    caps : Limits, optional
        The limits (default: :func:`~explain_core.limits.limits` at each call).
    clock : callable
        The time in seconds.

    Raises
    ------
    IntakeError
        When the database cannot be used or was written by a newer version.
    """

    def _owner(self, token: str | None, user: str | None) -> tuple[bytes, bytes]:
        """The owner's hash and the key of their share tokens: the token's, or the signed-in user's."""
        if user is None:
            checked_token(token)
            return token_hash(token), token.encode()
        if not self._secret:
            raise IntakeError(f"Sign-in needs the server's secret ({SECRET_ENV}, or the sign-in's cookie secret).")
        return user_hash(user), hmac.new(self._secret, b"user:" + user.encode(), hashlib.sha256).digest()

    def _session(self, conn: sa.Connection, token: str, user: str | None) -> sa.Row | None:
        """``(id, state, size)`` of the live session of ``token`` (and of ``user``, who must be its own), else None."""
        expected = token_hash(token)
        mine = R.user_hash.is_(None) if user is None else R.user_hash == user_hash(user)
        row = conn.execute(sa.select(R.id, R.state, R.size, R.token_hash).where(
            R.token_hash == expected, R.used >= self._expiry(), mine)).first()
        return row if row is not None and hmac.compare_digest(row[3], expected) else None

    def _check_room(self, conn: sa.Connection, size: int, family: sa.ColumnElement, replacing: int = 0) -> None:
        """The per-analysis, per-visitor (``family``: the records counted together — a token's session and what it
        saved, or one user's) and total limits, for a record of ``size`` bytes replacing one of ``replacing``."""
        caps, mb = self.caps, 2 ** 20
        if size > caps.saved_analysis_mb * mb:
            raise over("This analysis (its data file, model file and choices)", size / mb, caps.saved_analysis_mb,
                       "use smaller files to keep it across reloads and links.", " MB")
        used = sa.func.coalesce(sa.func.sum(R.size), 0)
        mine = conn.execute(sa.select(used).where(family)).scalar() - replacing + size
        if mine > caps.saved_visitor_mb * mb:
            raise over("The space your saved analyses take", mine / mb, caps.saved_visitor_mb,
                       "delete saved analyses you no longer need (Home).", " MB")
        total = conn.execute(sa.select(used)).scalar() - replacing + size
        if total > caps.saved_mb * mb:
            raise over("The space saved analyses take on this server", total / mb, caps.saved_mb,
                       "delete saved analyses you no longer need (Home), or ask the operator for more room.", " MB")

    def _family(self, token: str | None, user: str | None) -> sa.ColumnElement:
        if user is not None:
            return sa.or_(R.user_hash == user_hash(user), R.owner_hash == user_hash(user))
        return sa.or_(R.token_hash == token_hash(token), R.owner_hash == token_hash(token))

    def _copy(self, conn: sa.Connection, source: int, family: sa.ColumnElement, **values) -> int:
        """A new record with ``source``'s state and files and these ``values`` (the limits checked first); its id."""
        state, size = conn.execute(sa.select(R.state, R.size).where(R.id == source)).one()
        self._check_room(conn, size, family)
        now = self._now()
        record = conn.execute(records.insert().values(state=state, size=size, created=now, used=now, **{
            "name": "", "summary": "", **values}).returning(R.id)).scalar_one()
        blobs.copy(conn, source, record)
        return record

    # --- sessions ----------------------------------------------------------------------------------------------

    @guarded("keeping this analysis")
    def save_session(self, token: str, state: str, files: Mapping[str, bytes], *, user: str | None = None) -> int:
        """Keep the session's working analysis (``state`` and the ``files`` it names), replacing what ``token``
        kept before; only files not already kept are written.

        Parameters
        ----------
        token : str
            The session's token.
        state : str
            The state as JSON.
        files : mapping of str to bytes
            Its files, by SHA-256.
        user : str, optional
            The signed-in user, whose session it is.

        Returns
        -------
        int
            The record's size in bytes.

        Raises
        ------
        IntakeError
            When a file does not match its checksum, the token is another user's, or the record would pass a
            saved-analysis limit.
        """
        checked_token(token)
        size = len(state.encode()) + sum(len(data) for data in files.values())
        with self._connect(write=True) as conn:
            conn.execute(records.delete().where(R.token_hash == token_hash(token), R.used < self._expiry()))
            found = self._session(conn, token, user)
            if found is None and conn.execute(sa.select(R.id).where(R.token_hash == token_hash(token))).first():
                raise SavedNotFound(self._unknown("This session"))  # another user's (or nobody's) token
            self._check_room(conn, size, self._family(token, user), replacing=found[2] if found else 0)
            now = self._now()
            if found is None:
                record = conn.execute(records.insert().values(
                    token_hash=token_hash(token), user_hash=None if user is None else user_hash(user), state=state,
                    size=size, created=now, used=now, name="", summary="").returning(R.id)).scalar_one()
            else:
                record = found[0]
                conn.execute(records.update().where(R.id == record).values(state=state, size=size, used=now))
            kept = set(conn.execute(sa.select(file_rows.c.sha256).where(file_rows.c.record == record)).scalars())
            new = set(files) - kept  # only these are hashed and written (a reload's files are stored once)
            blobs.checked(files, new)
            blobs.refresh(self.files_folder, {sha: files[sha] for sha in kept & set(files)})
            conn.execute(file_rows.delete().where(file_rows.c.record == record,
                                                    file_rows.c.sha256.in_(kept - set(files))))
            blobs.write(conn, record, {sha: files[sha] for sha in new}, self.files_folder)
        self._maybe_purge()
        return size

    @guarded("opening this analysis")
    def open_session(self, token: str, *, user: str | None = None) -> Stored | None:
        """The session's working analysis; None for a token that has saved analyses but no working one (a fresh
        session keeps it, and its list); :class:`SavedNotFound` for a token this server does not know (any
        more), or another user's. Opening counts as use: the session and what it saved start their expiry again.

        Parameters
        ----------
        token : str
            The session's token.
        user : str, optional
            The signed-in user.

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
            found = self._session(conn, token, user)
            owned = 0 if user is not None else conn.execute(sa.select(sa.func.count()).where(
                R.owner_hash == token_hash(token), R.used >= self._expiry())).scalar()
            if found is None and not owned:
                raise SavedNotFound(self._unknown("This link's analysis"))
            mine = R.id == found[0] if user is not None else self._family(token, None)
            conn.execute(records.update().where(mine).values(used=self._now()))
            return Stored(found[1], blobs.read(conn, found[0], self.files_folder)) if found is not None else None

    # --- saved analyses ----------------------------------------------------------------------------------------

    @guarded("saving the analysis")
    def save_analysis(self, token: str, name: str, summary: str = "", *, user: str | None = None) -> SavedInfo:
        """A named copy of the session's working analysis, owned by ``token`` (or ``user``), with its share token.

        Parameters
        ----------
        token : str
            The session's token.
        name : str
            The analysis's name.
        summary : str
            What it holds, in words.
        user : str, optional
            The signed-in user, who owns it.

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
        name, (owner, key) = checked_name(name), self._owner(token, user)
        salt = secrets.token_bytes(16)
        with self._connect(write=True) as conn:
            found = self._session(conn, token, user)
            if found is None:
                raise IntakeError("There is nothing to save yet: this session is the demo it started on. Change the "
                                  "data, model, row or a parameter first.")
            record = self._copy(conn, found[0], self._family(token, user), owner_hash=owner, salt=salt, name=name,
                                share_hash=token_hash(share_token(key, salt)), summary=summary[:300])
        return next(info for info in self.list_analyses(token, user=user) if info.id == record)

    @guarded("listing your saved analyses")
    def list_analyses(self, token: str | None, *, user: str | None = None) -> list[SavedInfo]:
        """The analyses ``token`` (or ``user``, from any session) saved, newest first (listing counts as use).

        Parameters
        ----------
        token : str or None
            The session's token (None: a signed-in user's session that has none yet).
        user : str, optional
            The signed-in user.

        Returns
        -------
        list of SavedInfo
            The analyses.
        """
        owner, key = self._owner(token, user)
        theirs = (R.owner_hash == owner, R.used >= self._expiry())
        with self._connect(write=True) as conn:
            rows = conn.execute(sa.select(R.id, R.name, R.summary, R.created, R.used, R.size, R.salt).where(
                *theirs).order_by(R.created.desc(), R.id.desc())).all()
            conn.execute(records.update().where(*theirs).values(used=self._now()))
        return [SavedInfo(i, n, s, c, u, size, share_token(key, salt)) for i, n, s, c, u, size, salt in rows]

    @guarded("deleting the analysis")
    def delete_analysis(self, token: str | None, analysis: int, *, user: str | None = None) -> bool:
        """Delete one of ``token``'s (or ``user``'s) saved analyses (its share link stops working); False when it is
        not theirs.

        Parameters
        ----------
        token : str or None
            The owner's token (None with ``user``).
        analysis : int
            The analysis's id.
        user : str, optional
            The signed-in user.

        Returns
        -------
        bool
            Whether it was deleted.
        """
        owner, _ = self._owner(token, user)
        with self._connect(write=True) as conn:
            gone = conn.execute(records.delete().where(R.id == int(analysis), R.owner_hash == owner)).rowcount
            blobs.sweep(conn, self.files_folder)
        return bool(gone)

    @guarded("opening the saved analysis")
    def open_saved(self, token: str, analysis: int, *, user: str | None = None) -> None:
        """Make one of the owner's saved analyses the session ``token``'s working analysis again (a copy: the saved
        one is left as it was).

        Parameters
        ----------
        token : str
            The session's token.
        analysis : int
            The analysis's id.
        user : str, optional
            The signed-in user, who owns it.

        Raises
        ------
        SavedNotFound
            When the analysis is not the owner's (or is gone).
        """
        checked_token(token)
        owner, _ = self._owner(token, user)
        with self._connect(write=True) as conn:
            row = conn.execute(sa.select(R.id).where(R.id == int(analysis), R.owner_hash == owner,
                                                     R.used >= self._expiry())).first()
            if row is None:
                raise SavedNotFound(self._unknown("This saved analysis"))
            if self._session(conn, token, user) is None and conn.execute(
                    sa.select(R.id).where(R.token_hash == token_hash(token))).first():
                raise SavedNotFound(self._unknown("This session"))
            conn.execute(records.delete().where(R.token_hash == token_hash(token)))  # counted no more
            self._copy(conn, row[0], self._family(token, user), token_hash=token_hash(token),
                       user_hash=None if user is None else user_hash(user))
            conn.execute(records.update().where(R.id == row[0]).values(used=self._now()))

    @guarded("opening the shared analysis")
    def open_share(self, share: str, *, user: str | None = None) -> tuple[str, str]:
        """A shared link opened: a new session (its new token, and the analysis's name) holding a copy of the saved
        analysis, which stays as it was; with sign-in on, the new session is ``user``'s.

        Parameters
        ----------
        share : str
            The share token.
        user : str, optional
            The signed-in user who opened it.

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
        return self._open_shared(token_hash(share), user)

    def _open_shared(self, expected: bytes, user: str | None) -> tuple[str, str]:
        """:meth:`open_share` of the share token whose hash is ``expected`` (also a held link's,
        :meth:`claim_share`)."""
        with self._connect(write=True) as conn:
            found = conn.execute(sa.select(R.id, R.name, R.share_hash).where(
                R.share_hash == expected, R.used >= self._expiry())).first()
            if found is None or not hmac.compare_digest(found[2], expected):
                raise SavedNotFound(self._unknown("The shared analysis"))
            token = new_token()
            self._copy(conn, found[0], self._family(token, user), token_hash=token_hash(token),
                       user_hash=None if user is None else user_hash(user))
            conn.execute(records.update().where(R.id == found[0]).values(used=self._now()))
        return token, found[1]
