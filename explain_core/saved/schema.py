"""Where the saved analyses live and the shape they have: the database (SQLAlchemy Core) and its migrations
(Alembic).

The database is ``EXPLAIN_STATE_URL`` when set (``postgresql+psycopg://user:password@host/db``: one store for several
replicas of the app), else one SQLite file in the state folder (``EXPLAIN_STATE_DIR`` or the user's data folder,
created private: 0700, the file 0600). Opening a store brings its schema to this version's (:func:`migrate`): a new
database gets the tables, an older one is upgraded in one transaction (every saved analysis kept), and a SQLite
file written before migrations existed (``PRAGMA user_version = 1``) is adopted as the first revision. A database of
a newer version is refused with a message. SQLite runs in WAL mode with a fresh connection per call (so a damaged file
can be moved aside, :mod:`.guard`), writes in ``BEGIN IMMEDIATE``; PostgreSQL keeps a pool, waits
:data:`~explain_core.saved.guard.BUSY_SECONDS` for a lock, and serialises writes with one advisory lock
(:data:`WRITE_LOCK`), as SQLite's single writer does.
"""
from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.pool import NullPool

from ..cache import APP_NAME
from ..errors import IntakeError
from .guard import BUSY_SECONDS

STATE_ENV, URL_ENV = "EXPLAIN_STATE_DIR", "EXPLAIN_STATE_URL"
FILE_NAME = "saved-analyses.sqlite3"
HEAD = "0003"
OLD_SQLITE_VERSION = 1  # the user_version of the store before migrations
WRITE_LOCK = 56_0001  # PostgreSQL advisory lock id held by each write transaction
MIGRATIONS = Path(__file__).with_name("migrations")

metadata = sa.MetaData()
records = sa.Table(
    "records", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("token_hash", sa.LargeBinary), sa.Column("owner_hash", sa.LargeBinary),
    sa.Column("share_hash", sa.LargeBinary), sa.Column("salt", sa.LargeBinary), sa.Column("user_hash", sa.LargeBinary),
    sa.Column("name", sa.Text), sa.Column("summary", sa.Text), sa.Column("state", sa.Text),
    sa.Column("size", sa.BigInteger), sa.Column("created", sa.Float), sa.Column("used", sa.Float))
files = sa.Table(
    "files", metadata,
    sa.Column("record", sa.Integer, primary_key=True), sa.Column("sha256", sa.Text, primary_key=True),
    sa.Column("data", sa.LargeBinary), sa.Column("in_folder", sa.Boolean))
PENDING_S = 600.0  # how long a signed-out visitor's share link is kept for their sign-in (:mod:`.pending`)
pending = sa.Table(
    "pending", metadata,
    sa.Column("key_hash", sa.LargeBinary, primary_key=True), sa.Column("share_hash", sa.LargeBinary),
    sa.Column("created", sa.Float))


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


def sqlite_file(folder: Path) -> Path:
    """The SQLite file in ``folder``, both created private when new."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / FILE_NAME
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    return path


def make_engine(url: str) -> sa.Engine:
    """An engine for ``url`` set up as the module's docstring says; a clear message for a URL it cannot use."""
    try:
        parsed = sa.make_url(url)
        if parsed.get_backend_name() == "sqlite":
            engine = sa.create_engine(parsed, poolclass=NullPool, connect_args={"timeout": BUSY_SECONDS})
            event.listen(engine, "connect", _sqlite_connect)
            event.listen(engine, "begin", _sqlite_begin)
            return engine
        if parsed.get_backend_name() != "postgresql":
            raise ValueError(f"{parsed.get_backend_name()} is not one of sqlite, postgresql")
        return sa.create_engine(parsed, pool_pre_ping=True, pool_size=4, max_overflow=4, connect_args={
            "options": f"-c lock_timeout={int(BUSY_SECONDS * 1000)}", "connect_timeout": 5})
    except (sa.exc.ArgumentError, ValueError, ImportError) as exc:
        raise IntakeError(f"The database of saved analyses ({URL_ENV}) cannot be used: {exc}.") from None


def _sqlite_connect(dbapi, _record) -> None:
    dbapi.isolation_level = None  # SQLAlchemy's events begin the transactions, not the driver
    dbapi.execute("PRAGMA foreign_keys = ON")


def _sqlite_file_modes(engine: sa.Engine) -> None:
    """A new file's space returned on purges, and WAL mode (kept in the file; set outside any transaction)."""
    raw = engine.raw_connection()
    try:
        if raw.driver_connection.execute("PRAGMA page_count").fetchone()[0] == 0:
            raw.driver_connection.execute("PRAGMA auto_vacuum = INCREMENTAL")  # effective before the first table
        raw.driver_connection.execute("PRAGMA journal_mode = WAL")
    finally:
        raw.close()


def _sqlite_begin(conn) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")


def lock_for_writing(conn: sa.Connection) -> None:
    """Hold the write lock until the transaction ends (SQLite's ``BEGIN IMMEDIATE`` already does)."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:id)"), {"id": WRITE_LOCK})


def migrate(engine: sa.Engine, where: str) -> None:
    """Bring the database to :data:`HEAD` (see the module's docstring); ``where`` names it in messages.

    Raises
    ------
    IntakeError
        When the database was written by a newer or unknown version of this app.
    """
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if engine.dialect.name == "sqlite":
        _sqlite_file_modes(engine)
    with engine.connect().execution_options(write=True) as conn, conn.begin():
        lock_for_writing(conn)
        config.attributes["connection"] = conn
        current = MigrationContext.configure(conn).get_current_revision()
        if current is None and sa.inspect(conn).has_table("records"):
            old = conn.exec_driver_sql("PRAGMA user_version").scalar() if conn.dialect.name == "sqlite" else None
            if old != OLD_SQLITE_VERSION:
                raise _other_version(where, f"schema {old}")
            command.stamp(config, "0001")
            current = "0001"
        known = {script.revision for script in ScriptDirectory.from_config(config).walk_revisions()}
        if current is not None and current not in known:
            raise _other_version(where, f"revision {current}")
        command.upgrade(config, HEAD)


def _other_version(where: str, what: str) -> IntakeError:
    return IntakeError(f"The saved analyses ({where}) were written by another version of this app ({what}, this one "
                       f"reads up to revision {HEAD}); give this server its own folder ({STATE_ENV}) or database "
                       f"({URL_ENV}).")


def has_tables(conn: sa.Connection) -> bool:
    """Whether the database holds the store's tables."""
    inspector = sa.inspect(conn)
    return inspector.has_table("records") and inspector.has_table("files")
