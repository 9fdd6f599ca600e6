"""The bytes of a saved analysis's files (the uploaded table, the model file): in the database (the default) or in
a configured folder (``EXPLAIN_STATE_FILES``: a database that keeps only states stays small; replicas share the
folder).

Either way a file is named by its SHA-256, checked when written and again when read (a damaged or missing file is
an :class:`~explain_core.errors.IntakeError`, never wrong bytes). In the folder each content is one file
``<sha[:2]>/<sha>`` (0600, written whole then renamed into place), shared by every record that names it; a file no
record names any more is deleted by :func:`sweep` once it is older than :data:`GRACE_S` (a write in flight on
another replica is never swept).
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import Mapping

import sqlalchemy as sa

from ..errors import IntakeError
from .schema import files

FILES_ENV = "EXPLAIN_STATE_FILES"
GRACE_S = 3_600.0


def files_root() -> Path | None:
    """``EXPLAIN_STATE_FILES`` when set, else None (the bytes go in the database)."""
    return Path(os.environ[FILES_ENV]) if os.environ.get(FILES_ENV) else None


def checked(given: Mapping[str, bytes], shas) -> None:
    """Each of ``shas`` matches its bytes in ``given``, else :class:`IntakeError`."""
    for sha in shas:
        if hashlib.sha256(given[sha]).hexdigest() != sha:
            raise IntakeError(f"A file given for the saved analysis does not match its checksum {sha[:12]}….")


def write(conn: sa.Connection, record: int, given: Mapping[str, bytes], folder: Path | None) -> None:
    """Add ``given`` (checked) to ``record``: as rows, or as files in ``folder`` with rows that point to them."""
    refresh(folder, given)
    if given:
        conn.execute(files.insert(), [{"record": record, "sha256": sha, "data": b"" if folder else data,
                                       "in_folder": folder is not None} for sha, data in given.items()])


def refresh(folder: Path | None, given: Mapping[str, bytes]) -> None:
    """Files a record already names, given again: in the folder, written back (checked) when missing."""
    for sha, data in given.items():
        if folder is not None:
            _write_file(folder, sha, data)


def _path(folder: Path, sha: str) -> Path:
    return folder / sha[:2] / sha


def _write_file(folder: Path, sha: str, data: bytes) -> None:
    path = _path(folder, sha)
    if path.exists():
        os.utime(path)  # in use again: not swept for another GRACE_S
        return
    checked({sha: data}, [sha])
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".writing-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read(conn: sa.Connection, record: int, folder: Path | None) -> dict[str, bytes]:
    """``record``'s files by SHA-256, each checked against its hash."""
    found = {}
    for sha, data, in_folder in conn.execute(sa.select(files.c.sha256, files.c.data, files.c.in_folder).where(
            files.c.record == record)):
        if in_folder:
            try:
                data = _path(folder or Path("/nonexistent"), sha).read_bytes()
            except OSError:
                raise IntakeError("A file of this saved analysis is missing from the server's folder of files "
                                  f"({FILES_ENV}); it cannot be restored.") from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise IntakeError("A file of this saved analysis is damaged (its content no longer matches its "
                              "checksum); it cannot be restored.")
        found[sha] = bytes(data)
    return found


def copy(conn: sa.Connection, source: int, record: int) -> None:
    """``source``'s files named by ``record`` too (a folder's file is shared, not copied)."""
    conn.execute(files.insert().from_select(
        ["record", "sha256", "data", "in_folder"],
        sa.select(sa.literal(record), files.c.sha256, files.c.data, files.c.in_folder).where(files.c.record == source)))


def sweep(conn: sa.Connection, folder: Path | None) -> int:
    """Delete the folder's files that no record names and that are older than :data:`GRACE_S`; how many."""
    if folder is None or not folder.exists():
        return 0
    named = set(conn.execute(sa.select(files.c.sha256).where(files.c.in_folder).distinct()).scalars())
    gone, old = 0, time.time() - GRACE_S
    for path in folder.glob("??/*"):
        if path.name not in named and path.stat().st_mtime < old:
            path.unlink(missing_ok=True)
            gone += 1
    return gone
