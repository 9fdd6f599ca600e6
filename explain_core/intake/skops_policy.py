"""Which types a ``.skops`` model file may bring: an allow-list, checked node by node.

skops builds a model from a tree of nodes. An ``ObjectNode`` makes an instance of a class without calling it
(``cls.__new__`` and then ``__setstate__`` or the instance ``__dict__``); a ``TypeNode`` hands back a class; a
``FunctionNode`` hands back a function, which the model calls later; ``ConstructorFromReduceNode`` *calls* the
named object with arguments from the file; a ``PartialNode`` binds arguments to a function. So:

- a function (``FunctionNode``) or anything called at load (``ConstructorFromReduceNode``, ``MethodNode``,
  ``OperatorFuncNode``) must be on the vetted lists, or the file is refused — it cannot be confirmed;
- ``functools.partial`` is accepted when the function it binds is vetted (scikit-learn's own
  ``HistGradientBoosting`` models hold one), refused otherwise;
- a class off the list (``ObjectNode``/``TypeNode``) may be confirmed by the visitor only when loading it cannot
  run code: its ``__new__``, ``__setstate__``, ``__getattr__`` and ``__getattribute__`` are ``object``'s or a
  vetted class's and its metaclass is ``type``/``ABCMeta`` (:func:`loads_without_code`: the only code skops runs
  for such a node) — using the model then runs its methods, inside the sandboxed worker;
- whatever resolves to something that runs code, touches files or the interpreter is refused in every mode.

Each name is checked by *resolving* it to the object it points to, because a harmless-looking name can be an
alias (``scipy._lib._tmpdirs.rmtree`` is ``shutil.rmtree``). Names are resolved by importing modules of the
standard library and of the vetted packages only (another package only in the operator's trusted mode). The check
runs in the model's worker process, before anything of the file is built.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import io
import json
import operator
import re
import sys
import types
import zipfile
from dataclasses import asdict, dataclass, replace
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

# The non-default classes that scikit-learn, numpy, scipy, XGBoost, LightGBM and CatBoost models are built from
# (found by saving every common estimator with skops; each resolves to a plain class, checked by the tests; the
# boosters' state is their own model format, read without running code).
ALLOWED_CLASSES = frozenset({
    "numpy.dtype",
    "collections.OrderedDict",
    "scipy.interpolate._bsplines.BSpline",
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
# Functions a model may hold (skops' own list adds numpy's and scipy's ufuncs): pure functions of arrays. The
# first is what HistGradientBoosting's native categorical support binds in a functools.partial.
ALLOWED_FUNCTIONS = frozenset({
    "sklearn.utils.validation.check_array",
    "scipy._lib.array_api_compat.numpy._aliases.asarray",
})
ALLOWED_TYPES = ALLOWED_CLASSES | ALLOWED_FUNCTIONS
# Loaders that build an object without calling what the file names; every other loader calls it (or binds it).
BUILDS = frozenset({"ObjectNode", "TypeNode"})
# Code skops runs when it builds an ObjectNode's instance: these must not be the class's own.
LOAD_HOOKS = ("__new__", "__setstate__", "__getattr__", "__getattribute__")

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
    "logging", "mailbox", "pydoc", "timeit", "sklearn.utils._testing", "pandas.util._print_versions", "doctest",
    "unittest", "cmd", "pstats", "smtpd", "wsgiref", "xmlrpc", "socketserver", "tkinter", "curses", "readline",
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

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: dict) -> "TypeCheck":
        """A check sent by a model's worker: four strings, cut to a readable length."""
        return cls(*(str(value.get(f, ""))[:500] for f in ("name", "resolved", "verdict", "reason")))


def check_types(names: Iterable[str], *, trusted: bool = False) -> list[TypeCheck]:
    """The verdict on every type name by itself (``trusted``: the operator's mode, which may import any package to
    check); :func:`check_file` adds how the file uses each name."""
    return [_check(name, trusted)[0] for name in names]


def _check(name: str, trusted: bool) -> tuple[TypeCheck, object]:
    found, obj = _resolve(name, trusted)
    if not found:
        return TypeCheck(name, "not checked", "unresolved", obj), None
    resolved = describe(obj)
    reason = danger(obj)
    if reason:
        return TypeCheck(name, resolved, "dangerous", reason), obj
    if name in ALLOWED_TYPES:
        return TypeCheck(name, resolved, "allowed", "a vetted model component"), obj
    return TypeCheck(name, resolved, "unknown", "not on the vetted list: using the model runs its code (inside "
                                                 "the sandbox) — load it only if you trust the file's author"), obj


def check_file(data: bytes, *, trusted: bool = False) -> list[TypeCheck]:
    """The verdict on every name of a skops file that skops itself does not trust, by how the file uses it (the
    module docstring's rules)."""
    untrusted = list(skops_io().get_untrusted_types(data=data))
    uses, bound = node_uses(_schema(data))
    checks = []
    for name in untrusted:
        check, obj = _check(name, trusted)
        checks.append(_by_use(check, obj, uses.get(name, set()), bound, set(untrusted)))
    return checks


def _by_use(check: TypeCheck, obj, loaders: set[str], bound: list[tuple[str, str]], untrusted: set[str]) -> TypeCheck:
    if check.name == "functools.partial":
        bad = [n for loader, n in bound if loader != "FunctionNode" or (n in untrusted and n not in ALLOWED_FUNCTIONS)]
        if bad:
            return replace(check, verdict="dangerous", reason=f"it binds {', '.join(sorted(set(bad)))}, which is not "
                                                              "a vetted function, so using the model would call it")
        return replace(check, verdict="allowed", reason="it binds vetted functions only")
    if check.verdict != "unknown":
        return check
    if loaders - BUILDS or not isinstance(obj, type):
        how = "calls it while loading" if loaders - BUILDS - {"FunctionNode"} else "holds it as a function to call"
        return replace(check, verdict="dangerous", reason=f"the file {how} ({', '.join(sorted(loaders))}), and it "
                                                          "is not on the vetted list")
    hook = load_hook(obj)
    if hook:
        return replace(check, verdict="dangerous", reason=f"building it runs its own code ({hook})")
    return replace(check, reason="a class not on the vetted list: loading it only sets its attributes (it has no "
                                 "__new__, __setstate__ or attribute hooks of its own), but using the model runs its "
                                 "methods, inside the sandbox — load it only if you trust the file's author")


def load_hook(obj) -> str | None:
    """What code skops would run while building an instance of ``obj`` from a file (None for none): ``obj`` must
    be a class whose metaclass is ``type``/``ABCMeta`` and whose :data:`LOAD_HOOKS` are ``object``'s or a vetted
    class's (e.g. scikit-learn's ``BaseEstimator.__setstate__``)."""
    import abc

    if not isinstance(obj, type):
        return f"it is not a class but {describe(obj)}"
    if type(obj) not in (type, abc.ABCMeta):
        return f"its metaclass {describe(type(obj))}"
    for hook in LOAD_HOOKS:
        owner = next((k for k in obj.__mro__ if hook in vars(k)), object)
        if owner is not object and _name(owner) not in ALLOWED_CLASSES and not _name(owner).startswith("sklearn."):
            return f"{_name(owner)}.{hook}"
    return None


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def node_uses(schema) -> tuple[dict[str, set[str]], list[tuple[str, str]]]:
    """Per name in a skops schema, the node kinds (``__loader__``) it appears as; and (loader, name) of what each
    ``PartialNode`` binds."""
    uses: dict[str, set[str]] = {}
    bound: list[tuple[str, str]] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if "__loader__" in node:
                uses.setdefault(_node_name(node), set()).add(str(node["__loader__"]))
                if node["__loader__"] == "PartialNode":
                    func = (node.get("content") or {}).get("func") or {}
                    bound.append((str(func.get("__loader__")), _node_name(func)) if isinstance(func, dict) else
                                 ("?", str(func)))
            stack.extend(node.values())
    return uses, bound


def _node_name(node: dict) -> str:
    return f"{node.get('__module__')}.{node.get('__class__')}"


def _schema(data: bytes) -> dict:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return json.loads(archive.read("schema.json"))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        from ..errors import IntakeError

        raise IntakeError(f"This is not a readable skops file ({exc}); save it with skops.io.dump.") from None


def decide(checks: list[TypeCheck], confirmed: set[str], trusted: bool, name: str) -> list[str]:
    """The names to pass to skops' loader, or the refusal: dangerous or unresolved names always; classes off the
    list unless confirmed by the visitor or in trusted mode (``UntrustedModelError.types``: what may be confirmed)."""
    from ..errors import UntrustedModelError

    refused = [c for c in checks if c.verdict == "dangerous"]
    if refused:
        raise UntrustedModelError(
            f"{name} is refused: " + "; ".join(f"{c.name} (really {c.resolved}: {c.reason})" for c in refused)
            + ". Save a model built from scikit-learn, XGBoost, LightGBM or CatBoost parts and vetted functions "
              "only (numpy's element-wise functions, for a FunctionTransformer).", (), checks)
    unresolved = [c for c in checks if c.verdict == "unresolved"]
    if unresolved:
        raise UntrustedModelError(f"{name} cannot be loaded: " + "; ".join(c.reason for c in unresolved) + ".",
                                  (), checks)
    unknown = [c.name for c in checks if c.verdict == "unknown" and c.name not in confirmed]
    if unknown and not trusted:
        raise UntrustedModelError(
            f"{name} contains classes that are not known to be safe: "
            + "; ".join(f"{c.name} (really {c.resolved})" for c in checks if c.name in unknown)
            + ". Load it only if you trust its author, by confirming these types.", unknown, checks)
    return [c.name for c in checks]


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

