"""The process's memory allocators: glibc's malloc (through ctypes; absent on other C libraries) and Arrow's pool.

A long-running server hands back what a visitor who left freed (:func:`release_freed_memory`); a Dask worker sets
the thresholds its nanny changed (:func:`mallopt`, used by :mod:`explain_core.audit.cluster`).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import lru_cache

import pyarrow

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


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


def release_freed_memory() -> None:
    """Collect garbage, then give freed memory back to the operating system: Arrow's pool (mimalloc keeps the pages
    of the tables Streamlit sent to browsers) and glibc's heap (``malloc_trim``; skipped without glibc)."""
    gc.collect()
    pyarrow.default_memory_pool().release_unused()
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)
