"""Which types a ``.skops`` model file may bring: a vetted allow-list, unknown types shown with what they really
are, and types that could run code or touch files refused outright — even when confirmed, even in trusted mode.

skops lists the types of a file that are not in its own trusted set (:func:`skops.io.get_untrusted_types`).
Each is checked here by *resolving* its name to the object it points to, because a harmless-looking name can
be an alias (``scipy._lib._tmpdirs.rmtree`` is ``shutil.rmtree``; ``sklearn.datasets._california_housing.remove``
is ``os.remove``). Names are only resolved by importing modules of the standard library and of the vetted
packages below; a name from any other package is not imported to check it (so it is refused, except in the
operator's trusted mode).
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import operator
import re
import sys
import types
from dataclasses import dataclass
from typing import Iterable

import numpy as np

VETTED_PACKAGES = ("sklearn", "numpy", "scipy", "xgboost", "lightgbm", "catboost")
# Packages all_estimators() never reads a class from (sklearn.utils.discovery: a name part in its
# _MODULE_TO_IGNORE, or a private module "._"): the walk need not import them to descend into them.
_IGNORED_PARTS = frozenset({"tests", "externals", "setup", "conftest", "experimental", "estimator_checks"})


def _ignored(name: str) -> bool:
    return name.startswith("sklearn.") and ("._" in name or not _IGNORED_PARTS.isdisjoint(name.split(".")))


def skops_io():
    """``skops.io``, imported without importing torch.

    Importing ``skops.io`` lists scikit-learn's estimators (``sklearn.utils.all_estimators``), whose
    ``pkgutil.walk_packages`` imports every sub-package to descend into it — among them
    ``sklearn.externals.array_api_compat.torch``, which imports torch (about 1.5 s, most of a cold start), and
    every private package. ``all_estimators`` reads no class from those anyway, so for the import only, the walk
    does not descend into them: the trusted-type list is the same (checked by the tests), without torch.
    """
    if "skops.io" in sys.modules:
        return sys.modules["skops.io"]
    import pkgutil

    walk = pkgutil.walk_packages

    def walk_skipping(path=None, prefix="", onerror=None):
        for info in pkgutil.iter_modules(path, prefix):
            yield info
            if not info.ispkg or _ignored(info.name):
                continue
            try:
                __import__(info.name)
            except ImportError:
                if onerror is not None:
                    onerror(info.name)
                continue
            except Exception:  # noqa: BLE001 — pkgutil's own contract: other errors go to onerror or up
                if onerror is None:
                    raise
                onerror(info.name)
                continue
            inner = getattr(sys.modules[info.name], "__path__", None) or []
            yield from walk_skipping(inner, info.name + ".", onerror)

    pkgutil.walk_packages = walk_skipping
    try:
        return importlib.import_module("skops.io")
    finally:
        pkgutil.walk_packages = walk


PIP_NAMES = {"sklearn": "scikit-learn"}

# The non-default types that scikit-learn, numpy, scipy, XGBoost, LightGBM and CatBoost models are built from (found
# by saving every common estimator with skops; each resolves to a plain class or a pure function, checked by the
# tests; the boosters' state is their own model format, read without running code).
ALLOWED_TYPES = frozenset({
    "numpy.dtype",
    "collections.OrderedDict",
    "scipy.interpolate._bsplines.BSpline",
    "scipy._lib.array_api_compat.numpy._aliases.asarray",
    "sklearn.tree._tree.Tree",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
    "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
    "sklearn.calibration._CalibratedClassifier",
    "sklearn.calibration._SigmoidCalibration",
    "sklearn.metrics._dist_metrics.EuclideanDistance64",
    "sklearn.neighbors._kd_tree.KDTree",
    "sklearn.neighbors._ball_tree.BallTree",
    "sklearn.utils._bunch.Bunch",
    "xgboost.core.Booster",
    "xgboost.sklearn.XGBClassifier",
    "xgboost.sklearn.XGBRegressor",
    "xgboost.sklearn.XGBRFClassifier",
    "xgboost.sklearn.XGBRFRegressor",
    "lightgbm.basic.Booster",
    "lightgbm.sklearn.LGBMClassifier",
    "lightgbm.sklearn.LGBMRegressor",
    "catboost.core.CatBoostClassifier",
    "catboost.core.CatBoostRegressor",
})

# Modules whose functions and classes run code, touch files, processes, the network or the interpreter.
DANGEROUS_MODULES = frozenset({
    "os", "posix", "nt", "posixpath", "ntpath", "shutil", "subprocess", "_posixsubprocess", "sys", "importlib",
    "pickle", "_pickle", "marshal", "copyreg", "runpy", "code", "codeop", "ctypes", "_ctypes", "socket", "_socket",
    "ssl", "pty", "pathlib", "io", "_io", "tempfile", "multiprocessing", "_multiprocessing", "signal", "_signal",
    "webbrowser", "urllib", "http", "ftplib", "smtplib", "poplib", "imaplib", "telnetlib", "shelve", "dbm",
    "sqlite3", "glob", "fileinput", "zipfile", "tarfile", "gzip", "bz2", "lzma", "platform", "pdb", "bdb",
    "cProfile", "profile", "trace", "types", "inspect", "gc", "ast", "threading", "_thread", "asyncio",
    "concurrent", "zipimport", "pkgutil", "site", "sysconfig", "distutils", "setuptools", "pip", "dill",
    "cloudpickle", "joblib", "skops", "pandas.io", "resource", "fcntl", "mmap", "select", "selectors", "atexit",
    "faulthandler", "tracemalloc", "ensurepip", "venv", "compileall", "py_compile", "linecache", "tokenize",
    "numpy.lib.npyio", "numpy.lib.format", "numpy.ctypeslib", "scipy.io", "sklearn.datasets", "xgboost.callback",
})
DANGEROUS_BUILTINS = frozenset({"eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "__import__",
                                "globals", "locals", "vars", "input", "breakpoint", "exit", "quit", "help",
                                "memoryview", "__build_class__", "function", "code", "type", "classmethod",
                                "staticmethod", "property", "super"})
# Callables that call other callables or look up attributes by name: they turn any object into code.
WRAPPERS = (functools.partial, functools.partialmethod, functools.reduce, operator.attrgetter,
            operator.methodcaller, getattr(operator, "call", None))
# Functions of any package that read or write files, or (de)serialise objects.
IO_NAMES = re.compile(r"^(load\w*|save\w*|dump\w*|fetch_\w+|fromfile|tofile|genfromtxt|fromregex|memmap|"
                      r"DataSource|open\w*|read_\w+|to_\w+|remove|unlink|rmtree|system|popen|exec\w*|eval|"
                      r"spawn\w*|call|check_call|check_output|run)$")
NOT_IMPORTED = frozenset({"antigravity", "this", "turtle", "turtledemo", "idlelib", "tkinter", "__hello__",
                          "__phello__"})


@dataclass(frozen=True)
class TypeCheck:
    """One type named in a skops file: what it resolves to and the verdict.

    ``verdict``: ``allowed`` (on the vetted list), ``unknown`` (resolved and harmless-looking, loads after
    confirmation), ``unresolved`` (from a package that is not imported to check it, or that does not exist:
    refused) or ``dangerous`` (refused outright); ``reason`` says why in plain words."""

    name: str
    resolved: str
    verdict: str
    reason: str


def check_types(names: Iterable[str], *, trusted: bool = False) -> list[TypeCheck]:
    """The verdict on every type name (``trusted``: the operator's mode, which may import any package to check)."""
    return [_check(name, trusted) for name in names]


def _check(name: str, trusted: bool) -> TypeCheck:
    found, obj = _resolve(name, trusted)
    if not found:
        return TypeCheck(name, "not checked", "unresolved", obj)
    resolved = describe(obj)
    reason = danger(obj)
    if reason:
        return TypeCheck(name, resolved, "dangerous", reason)
    if name in ALLOWED_TYPES:
        return TypeCheck(name, resolved, "allowed", "a vetted model component")
    return TypeCheck(name, resolved, "unknown", "not on the vetted list: it runs whatever code it contains when "
                                                 "the model is used — load it only if you trust the file's author")


def _resolve(name: str, trusted: bool) -> tuple[bool, object]:
    """(True, the object ``name`` points to) or (False, why it was not resolved); never imports outside the
    standard library and the vetted packages unless ``trusted``."""
    parts = name.split(".")
    top = parts[0]
    importable = top not in NOT_IMPORTED and (
        top in VETTED_PACKAGES or top in sys.stdlib_module_names or top == "builtins" or trusted)
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        module = sys.modules.get(module_name)
        if module is None and importable:
            try:
                module = importlib.import_module(module_name)
            except Exception:  # noqa: BLE001 — not a module at this cut: try a shorter prefix
                continue
        if module is None:
            continue
        obj = module
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            continue
        return True, obj
    if not importable:
        return False, (f"{name} comes from the package {top!r}, which is not vetted here; this server does not "
                       "import unvetted packages to check what a name points to")
    if importlib.util.find_spec(top) is None:
        return False, (f"{name} needs the package {top}, which is not installed on this server (the operator can "
                       f"add it: pip install {PIP_NAMES.get(top, top)})")
    return False, f"{name} does not exist in this installation"


def describe(obj) -> str:
    """What an object really is: ``shutil.rmtree (function)``, ``posix.system (built-in function)``."""
    module = getattr(obj, "__module__", None) or getattr(obj, "__name__", "?")
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    kind = ("module" if isinstance(obj, type(sys)) else "class" if isinstance(obj, type) else
            "numpy ufunc" if isinstance(obj, np.ufunc) else
            "built-in function" if isinstance(obj, types.BuiltinFunctionType) else
            "function" if callable(obj) else type(obj).__name__)
    if kind == "module":
        return f"{obj.__name__} (module)"
    return f"{module}.{qualname} ({kind})"


def danger(obj) -> str | None:
    """Why ``obj`` could run code or touch files/processes, or None when it cannot (as far as this list knows)."""
    if isinstance(obj, np.ufunc):
        return None  # element-wise arithmetic
    if isinstance(obj, type(sys)):
        return _module_danger(obj.__name__) and f"the module {obj.__name__} gives access to files, processes or code"
    if any(obj is w for w in WRAPPERS if w is not None):
        return "it calls other functions or looks up attributes by name, so it can run any code"
    if getattr(obj, "__module__", None) == "builtins" and getattr(obj, "__name__", "") in DANGEROUS_BUILTINS:
        return f"the built-in {obj.__name__} runs code or reaches any object"
    module = getattr(obj, "__module__", None) or ""
    if _module_danger(module):
        return f"it is {describe(obj)}, from a module that touches files, processes or the interpreter"
    if callable(obj) and IO_NAMES.match(getattr(obj, "__name__", "") or ""):
        return f"it is {describe(obj)}, which reads or writes files, runs commands or (de)serialises objects"
    return None


@functools.lru_cache(maxsize=512)
def _module_danger(module: str) -> bool:
    parts = module.split(".")
    return any(".".join(parts[:i]) in DANGEROUS_MODULES for i in range(1, len(parts) + 1))

