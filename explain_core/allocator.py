"""The process's memory allocators: glibc's malloc (through ctypes; absent on other C libraries) and Arrow's pool.

A long-running server hands back what a visitor who left freed (:func:`release_freed_memory`, with small trimming
held by :func:`hold_thresholds`); a Dask worker sets the thresholds its nanny changed
(:func:`hold_thresholds`, used by :mod:`explain_core.audit.cluster`).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import lru_cache

import pyarrow

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
GLIBC_MMAP_CEILING = 32 << 20  # where glibc's rising mmap threshold stops (DEFAULT_MMAP_THRESHOLD_MAX, 64-bit)


@lru_cache(maxsize=1)
def _libc():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def mallopt(parameter: int, value: int) -> bool:
    """glibc's ``mallopt``; False where it failed or there is no glibc."""
    function = getattr(_libc(), "mallopt", None)
    return bool(function is not None and function(parameter, value))


def hold_thresholds(mmap_bytes: int, trim_bytes: int) -> bool:
    """Fix glibc's mmap and trim thresholds (which also stops glibc from raising them as it goes: once a block of
    32 MiB was freed, its own rule keeps up to 64 MiB free at the top of every thread's heap). False where it failed
    or there is no glibc."""
    return mallopt(M_MMAP_THRESHOLD, mmap_bytes) and mallopt(M_TRIM_THRESHOLD, trim_bytes)


def release_freed_memory() -> None:
    """Collect garbage, then give freed memory back to the operating system: Arrow's pool (mimalloc keeps the pages
    of the tables Streamlit sent to browsers) and glibc's heap (``malloc_trim``; skipped without glibc)."""
    gc.collect()
    pyarrow.default_memory_pool().release_unused()
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)
