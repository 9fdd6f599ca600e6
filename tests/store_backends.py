"""The saved analyses' back ends for the tests (a pytest plugin, named in conftest's ``pytest_plugins``):
:func:`open_store` opens stores on SQLite or on PostgreSQL, the tests that take it run on both.

PostgreSQL is a real server: Debian's
``postgresql`` (``.ci/run`` installs it), started in a temporary data folder on a free local port, as the
``postgres`` user when the tests run as root (the server refuses root). One server serves a whole run: the first
worker (pytest -n) to ask starts it, every worker gets its own database on it (:func:`postgres_url`), and the run's
end stops it and removes its folder (:func:`pytest_sessionfinish`, in the controlling process). Tests that need it
skip when it is not installed, except in CI, where they fail (conftest's ``missing``)."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import missing

# Debian's postgresql package: the newest installed major version's programs
BIN = max(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name),
          default=Path("/usr/lib/postgresql/bin"))
USER = "explain"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _run(*command: str) -> None:
    subprocess.run(_as_server_user([str(BIN / command[0]), *command[1:]]), check=True, capture_output=True,
                   timeout=120)


def _start(folder: Path) -> dict:
    """A server with its data in ``folder`` (owned by the server's user); its port and folder."""
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    _run("initdb", "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
    _run("pg_ctl", "-D", str(data), "-w", "-l", str(folder / "server.log"), "-o",
         f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off", "start")
    return {"port": port, "folder": str(folder)}


def _run_dir(config) -> Path:
    """The run's own folder, the same in the controller and in every worker."""
    base = config._tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def postgres_url(request) -> str:
    """The URL of this worker's own database on the run's server (started on first use)."""
    if not (BIN / "postgres").exists():
        missing(f"PostgreSQL is not installed ({BIN}); .ci/run installs Debian's postgresql")
    record = _run_dir(request.config) / "postgres.json"
    with open(_run_dir(request.config) / "postgres.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            record.write_text(json.dumps(_start(Path(tempfile.mkdtemp(prefix="explain-pg-")))))
    port = json.loads(record.read_text())["port"]
    name = f"{USER}_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    _run("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", USER, name)
    return f"postgresql+psycopg://{USER}@127.0.0.1:{port}/{name}"


def pytest_sessionfinish(session) -> None:
    """The run's end (the controlling process): the server stopped, its folder removed."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    record = _run_dir(session.config) / "postgres.json"
    if record.exists():
        folder = Path(json.loads(record.read_text())["folder"])
        subprocess.run(_as_server_user([str(BIN / "pg_ctl"), "-D", str(folder / "data"), "-m", "immediate",
                                        "stop"]), capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
        record.unlink()


@pytest.fixture(params=["sqlite", "postgresql"])
def open_store(request, tmp_path):
    """``open_store(**kwargs)`` → a :class:`~explain_core.saved.SavedStore` on this test's own empty database (the
    param's back end); every call opens the same database, as another process would."""
    from explain_core.saved import SavedStore

    url = emptied(request.getfixturevalue("postgres_url")) if request.param == "postgresql" else None
    stores = []

    def opened(**kwargs):
        stores.append(SavedStore(tmp_path / "state", url=url, **kwargs))
        return stores[-1]

    yield opened
    for store in stores:
        store.engine.dispose()


def rows(store, sql: str, *args) -> list[tuple]:
    """``sql`` (``?`` placeholders) run on the store's database in a transaction of its own; its rows."""
    if store.engine.dialect.name == "postgresql":
        sql = sql.replace("?", "%s")
    with store.engine.begin() as conn:
        result = conn.exec_driver_sql(sql, tuple(args))
        return [tuple(row) for row in result] if result.returns_rows else []


def emptied(url: str) -> str:
    """``url``'s database with nothing in it (its schema dropped and made again); the URL."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP SCHEMA public CASCADE")
        conn.exec_driver_sql("CREATE SCHEMA public")
    engine.dispose()
    return url
