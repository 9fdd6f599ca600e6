"""What explain_core keeps: on disk, the demo models it trains (skops files) and their metadata; in memory, the
:class:`Memo` of an object that computes something once for its lifetime.

The disk cache is a per-user folder (``platformdirs.user_cache_dir("explain-explorer")``, e.g.
``~/.cache/explain-explorer``), or the folder named by ``EXPLAIN_CACHE_DIR``; never next to the package. Files are
written atomically, so a process reading the cache never sees half a file, and a model is trained under a lock
(:func:`held`), so processes sharing the cache (the server's, the command line's) train it once between them.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Hashable, TypeVar

T = TypeVar("T")

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


class Memo:
    """Values one object computes once and keeps for its own lifetime, by key: a setup's mirrored references, a
    model's encoder/estimator splits, an encoding's rows and references, a trained model's before/after comparison.

    The scope is the owner: a dataclass holds its memo in a field with ``init=False, compare=False, repr=False``, so
    every instance (a ``dataclasses.replace`` copy too) starts with its own empty memo, and the memo is no part of
    the owner's value (equality, JSON). The key names what the value depends on beyond the owner. At most
    ``max_entries`` values are kept (the least recently used goes first); a pickled memo arrives empty (a Dask
    worker computes its own). Safe to share between threads (two may compute the same value once each).
    """

    def __init__(self, name: str, max_entries: int = 64):
        self.name, self.max_entries = name, max_entries
        self._values: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value kept for ``key``, else ``compute()`` kept and returned."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = compute()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self.max_entries:
                self._values.popitem(last=False)
        return value

    def __contains__(self, key) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def __reduce__(self):
        return Memo, (self.name, self.max_entries)

    def __repr__(self) -> str:
        return f"Memo({self.name!r}, {len(self)} of at most {self.max_entries})"


def memo_field(name: str, max_entries: int = 64):
    """A dataclass field holding its instance's own :class:`Memo` (no part of the instance's value)."""
    from dataclasses import field

    return field(default_factory=lambda: Memo(name, max_entries), init=False, compare=False, repr=False)


def write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Write via a temporary file and rename, so a concurrent reader never sees half a file."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)


@contextmanager
def held(path: Path):
    """Hold a lock named for ``path`` (``<cache>/locks/<name>.lock``) while making ``path``: another process or thread
    wanting the same file waits, then finds it made. Where the lock cannot be taken (a read-only cache, no
    ``fcntl``), no lock is held."""
    try:
        import fcntl

        handle = open(cache_dir("locks") / f"{path.name}.lock", "a")
    except (ImportError, OSError):
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            pass
        yield  # the lock goes with the file's closing
