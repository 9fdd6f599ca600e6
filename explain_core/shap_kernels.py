"""SHAP's numba kernels kept compiled on disk: the permutation explainer's kernels (:data:`CACHED_KERNELS`) get a
disk cache in the per-user cache folder, and its link function a C callback, so a new process loads them instead of
compiling them (about 3 s before its first permutation SHAP value of an MLP or a regressor)."""
from __future__ import annotations

from functools import cache
from pathlib import Path

from .cache import cache_root

# SHAP's numba kernels of the permutation explainer that a disk cache can serve in a later process. The kernels
# taking the link function (shap.utils._masked_model._build_fixed_*_output) are given the identity link as a C
# callback (:func:`identity_link`): with shap's own jitted ``links.identity`` their signature names that dispatcher
# by its address, so a cached copy never matched again and every process compiled them anew (about 3 s before its
# first permutation SHAP value of an MLP or a regressor); a C callback's type is its signature, float64(float64).
# (``model.score`` is one output, so the multi-output kernel never runs here.)
CACHED_KERNELS = {"shap.maskers._tabular": ("_single_delta_mask", "_delta_masking"),
                  "shap.utils._masked_model": ("_build_fixed_single_output",)}


def _identity(x: float) -> float:
    return x


@cache
def identity_link():
    """shap's identity link (``shap.links.identity``) as a numba C callback of float64 → float64, for the
    permutation explainer's kernels, which apply it to one mean at a time (with ``linearize_link=False``: the
    linearisation is skipped for the identity anyway)."""
    import numba

    return numba.cfunc(numba.types.float64(numba.types.float64))(_identity)


@cache
def cache_shap_kernels() -> None:
    """Once per process: :func:`keep_kernels` in the per-user cache."""
    keep_kernels(cache_root() / "numba")


def keep_kernels(folder: Path) -> bool:
    """Keep :data:`CACHED_KERNELS` compiled in ``folder``, so a new process loads them (about 2 s less before its
    first permutation SHAP value); True when they are. Where ``folder`` cannot be written, or numba's caching API
    differs, they compile in memory as before (False); the compiled code, and so every value, is the same."""
    import importlib

    try:
        from numba.core.caching import CompileResultCacheImpl, FunctionCache, UserProvidedCacheLocator
    except ImportError:
        return False

    class Locator(UserProvidedCacheLocator):
        def __init__(self, py_func, py_file):
            self._py_file, self._lineno = py_file, py_func.__code__.co_firstlineno
            self._cache_path = str(folder / self.get_suitable_cache_subpath(py_file))

        @classmethod
        def from_function(cls, py_func, py_file):  # numba's own, without its check of numba.config.CACHE_DIR
            return super(UserProvidedCacheLocator, cls).from_function(py_func, py_file)

    class Impl(CompileResultCacheImpl):
        _locator_classes = [Locator]

    class KernelCache(FunctionCache):
        _impl_class = Impl

    for module, names in CACHED_KERNELS.items():
        for name in names:
            kernel = getattr(importlib.import_module(module), name, None)
            if not (hasattr(kernel, "_cache") and hasattr(kernel, "py_func")):  # not a dispatcher (NUMBA_DISABLE_JIT)
                return False
            try:
                kernel._cache = KernelCache(kernel.py_func)
            except (RuntimeError, OSError):  # no writable folder: numba found no locator
                return False
    return True
