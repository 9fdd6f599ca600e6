"""What an audit folder may hold: the manifest (``audit.json``) lists every partition file the audit wrote, with
its row range, size and SHA-256. A resumed run recomputes only what the manifest lists and the file on disk still
matches; a file it did not write, or one that changed, is refused with its name — never merged into the results.
Reading an audit back (the dashboard) checks the names and sizes, and says plainly when the folder is damaged.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..errors import IntakeError

MANIFEST, PARTS = "audit.json", "parts"


def part_path(out: Path, i: int) -> Path:
    return out / PARTS / f"part-{i:05d}.parquet"


def part_entry(path: Path, start: int, rows: int) -> dict:
    """The manifest's record of one partition file just written."""
    return {"rows": [int(start), int(start) + int(rows)], "bytes": path.stat().st_size, "sha256": _digest(path)}


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(folder: Path) -> dict:
    """The manifest, or a clear message when it is missing or damaged."""
    path = folder / MANIFEST
    if not path.is_file():
        raise IntakeError(f"{folder} holds no audit (no {MANIFEST}); run `python -m explain_core audit` first.")
    try:
        manifest = json.loads(path.read_text())
        assert isinstance(manifest, dict) and isinstance(manifest.get("parts", {}), dict)
        assert isinstance(manifest["groups"], list) and isinstance(manifest["partitions"], int)
    except (ValueError, KeyError, AssertionError, UnicodeDecodeError):
        raise IntakeError(f"The audit in {folder} is damaged: {MANIFEST} is not the manifest this tool writes; run "
                          "the audit again into a new folder.") from None
    return manifest


def written_parts(folder: Path, manifest: dict, *, checksums: bool) -> list[int]:
    """The partitions the manifest lists whose file is there, unchanged (by size, and by SHA-256 with
    ``checksums``); an IntakeError naming any file in ``parts/`` that the audit did not write or that changed."""
    listed = {int(i): entry for i, entry in manifest.get("parts", {}).items()}
    known = {part_path(folder, i).name for i in listed}
    foreign = sorted(p.name for p in (folder / PARTS).glob("*") if p.name not in known and not p.name.startswith("."))
    if foreign:
        raise IntakeError(f"{folder / PARTS / foreign[0]} was not written by this audit (the manifest does not list "
                          "it), so it is not merged; remove it, or run the audit into a new folder.")
    done = []
    for i, entry in sorted(listed.items()):
        path = part_path(folder, i)
        if not path.is_file():
            continue
        if path.is_symlink() or path.stat().st_size != entry.get("bytes") or \
                (checksums and _digest(path) != entry.get("sha256")):
            raise IntakeError(f"{path} changed since the audit wrote it (its size or checksum differs from the "
                              "manifest), so it is not merged; remove it to compute that partition again.")
        done.append(i)
    return done


def write_json(path: Path, value: dict) -> None:
    """``value`` as JSON, atomically (a manifest is whole or the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1))
    os.replace(tmp, path)
