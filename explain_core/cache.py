"""Where explain_core keeps what it writes: the demo models it trains (skops files) and their metadata.

A per-user cache folder (``platformdirs.user_cache_dir("explain-explorer")``, e.g. ``~/.cache/explain-explorer``),
or the folder named by ``EXPLAIN_CACHE_DIR``; never next to the package. Files are written atomically, so a
process reading the cache never sees half a file.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

CACHE_ENV = "EXPLAIN_CACHE_DIR"
APP_NAME = "explain-explorer"


def cache_root() -> Path:
    """``EXPLAIN_CACHE_DIR`` when set, else the user's cache folder for this application."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def cache_dir(part: str = "models") -> Path:
    """A sub-folder of the cache (created on first use)."""
    path = cache_root() / part
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Write via a temporary file and rename, so a concurrent reader never sees half a file."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)
