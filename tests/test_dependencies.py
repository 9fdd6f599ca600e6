"""The seams with other packages: every imported package is declared in pyproject.toml, and the private APIs the
code reaches into still exist (a dependency upgrade that moves them fails here, loudly, not in a user's session)."""
from __future__ import annotations

import ast
import importlib
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SHIPPED = [*sorted((ROOT / "explain_core").rglob("*.py")), *sorted((ROOT / "app_pages").glob("*.py")),
           *sorted((ROOT / "ui").glob("*.py")), ROOT / "app.py"]


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalised (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0)).lower()


def declared() -> set[str]:
    names = {_name(r) for r in PROJECT["dependencies"]}
    for extra in PROJECT["optional-dependencies"].values():
        names |= {_name(r) for r in extra}
    return names


def imported_modules(paths) -> set[str]:
    """Top-level modules imported anywhere in ``paths`` (also inside functions), relative imports left out."""
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def test_every_imported_package_is_declared():
    third_party = imported_modules(SHIPPED) - set(sys.stdlib_module_names) - {"explain_core", "ui", "__future__"}
    providers = metadata.packages_distributions()
    undeclared = {}
    for module in sorted(third_party):
        dists = {_name(d) for d in providers.get(module, [])}
        assert dists, f"{module} is imported but no installed distribution provides it"
        if not dists & declared():
            undeclared[module] = sorted(dists)
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
    assert "onnx" in third_party and "onnx" in declared()  # the one the issue found missing


def test_requirements_install_the_project_with_its_test_extra():
    assert (ROOT / "requirements.txt").read_text().split() == ["-e", ".[test]"]


def test_streamlit_runtime_runs_only_on_the_releases_it_was_written_for():
    """ui/streamlit_runtime (every use of Streamlit's internals) imports under the app extra's Streamlit range only;
    another release is refused with the command that installs a supported one."""
    from ui import streamlit_runtime

    assert "streamlit>=1.67,<1.80" in PROJECT["optional-dependencies"]["app"]  # the range SUPPORTED copies
    for supported in ("1.67.0", "1.79.9"):
        streamlit_runtime.check_version(supported)
    for other in ("1.66.1", "1.80.0", "2.1.0"):
        with pytest.raises(ImportError, match=f"Streamlit {other} is not supported.*streamlit>=1.67,<1.80"):
            streamlit_runtime.check_version(other)


def test_streamlit_session_state_look_exists():
    """ui/streamlit_runtime.keep_callbacks_whole wraps Streamlit's private SafeSessionState.on_script_will_rerun and
    holds its ``_yield_callback`` (the look for a newer click) while the callbacks run."""
    import inspect

    from streamlit.runtime.state.safe_session_state import SafeSessionState

    assert "_yield_callback" in SafeSessionState.__annotations__
    assert "self._yield_callback()" in inspect.getsource(SafeSessionState.on_script_will_rerun)


def test_streamlit_script_requests_internals_exist():
    """ui/streamlit_runtime.rerun_to_page asks for its rerun under the session's request lock, only while none waits."""
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequests, ScriptRequestType

    requests = ScriptRequests()
    with requests._lock:
        assert requests._state == ScriptRequestType.CONTINUE
        assert callable(requests._request_rerun_locked)


def test_no_test_skips_itself_when_a_dependency_is_missing():
    """A missing dependency fails the suite (CI installs the test extra), never skips a module or a test quietly:
    no test calls pytest.importorskip."""
    calls = [f"{path.name}:{node.lineno}" for path in sorted((ROOT / "tests").glob("*.py"))
             for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Attribute)
             and node.attr == "importorskip"]
    assert not calls, f"import these instead: {calls}"


def test_numba_cache_classes_and_shap_kernels_exist():
    """explain_core.shap_kernels.keep_kernels subclasses numba's cache classes and gives SHAP's kernels their cache (a
    change there would quietly leave them compiling in every process)."""
    import importlib

    from numba.core import caching

    from explain_core.shap_kernels import CACHED_KERNELS

    for name in ("CompileResultCacheImpl", "FunctionCache", "UserProvidedCacheLocator"):
        assert isinstance(getattr(caching, name), type), name
    assert caching.CompileResultCacheImpl._locator_classes and caching.FunctionCache._impl_class
    for module, names in CACHED_KERNELS.items():
        for name in names:
            kernel = getattr(importlib.import_module(module), name)
            assert hasattr(kernel, "_cache") and callable(kernel.py_func), (module, name)


def test_kaleido_tab_return_internal_exists():
    """report/figures.py replaces kaleido's private Kaleido._return_kaleido_tab (which reloads the tab's page, then
    puts it back on ``tabs_ready``) by one that only puts it back."""
    import inspect

    import kaleido

    returned = inspect.getsource(kaleido.Kaleido._return_kaleido_tab)
    assert "reload()" in returned and "self.tabs_ready.put(tab)" in returned
    assert inspect.iscoroutinefunction(kaleido.Kaleido.calc_fig) and inspect.iscoroutinefunction(kaleido.Kaleido.open)
    from choreographer.browsers.chromium import Chromium

    assert callable(Chromium.find_browser)


def test_pandas_column_arrays_reader_exists():
    """intake/encoding.object_rows reads a frame's columns with pandas' private DataFrame._iter_column_arrays: each
    column's own array (numpy or extension), in order."""
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame({"a": [1, 2], "s": pd.array(["x", None], dtype="str"), "k": pd.Categorical(["p", "q"])})
    arrays = list(frame._iter_column_arrays())
    assert len(arrays) == 3 and isinstance(arrays[0], np.ndarray) and list(arrays[0]) == [1, 2]
    assert arrays[1][0] == "x" and pd.isna(arrays[1][1]) and list(arrays[2]) == ["p", "q"]


def test_shap_internal_error_class_exists():
    """baselines.py catches shap's private InvalidModelError to fall back from TreeExplainer."""
    errors = importlib.import_module("shap.utils._exceptions")
    assert issubclass(errors.InvalidModelError, Exception)


def numpydoc_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of a public function's docstring (its numpydoc sections); 0 for a private one or none."""
    first = node.body[0]
    if node.name.startswith("_") or not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                                         and isinstance(first.value.value, str)):
        return 0
    return first.end_lineno - first.lineno + 1


def test_modules_and_functions_are_short():
    """The project's standard: no module over 450 lines, no function over 60 (explain_core, app_pages, ui, app.py),
    both counted raw (docstrings, comments and blank lines included), save one exception: a public function's
    docstring does not count against its 60 lines. Numpydoc sections take two or three lines per parameter (an
    eight-parameter function's Parameters, Returns and Raises take 40), so counting them would leave such a function
    20 lines of code, or shorten its documentation to pass; a private function's docstring counts."""
    long_modules = {str(p.relative_to(ROOT)): n for p in SHIPPED if (n := len(p.read_text().splitlines())) > 450}
    long_functions = {f"{p.relative_to(ROOT)}:{node.lineno} {node.name}": n
                      for p in SHIPPED for node in ast.walk(ast.parse(p.read_text()))
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and (n := node.end_lineno - node.lineno + 1 - numpydoc_lines(node)) > 60}
    assert not long_modules and not long_functions, (f"split these modules by concern: {long_modules}; "
                                                     f"split these functions: {long_functions}")


def test_the_numbers_import_no_plotly():
    """Figures live in explain_core.views (and the reports that draw them): the package, the audit workers and the
    sparse training import no plotly, so a Dask worker or a training job never loads it."""
    code = ("import sys, explain_core, explain_core.analysis, explain_core.audit, explain_core.audit.rows, "
            "explain_core.audit.run, explain_core.audit.cluster, explain_core.audit.summary, "
            "explain_core.sparse.training, explain_core.sparse.compare, explain_core.sev.summaries, "
            "explain_core.cli.main; print(sorted(m for m in sys.modules if m.split('.')[0] == 'plotly'))")
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"
    figures = subprocess.run([sys.executable, "-c", "import sys, explain_core.views.sparse; "
                              "print('plotly' in sys.modules)"], capture_output=True, text=True, cwd=ROOT, check=True)
    assert figures.stdout.strip() == "True"  # the check above can fail: the figure modules do import it


def test_the_core_imports_neither_streamlit_nor_torch():
    """explain_core never imports Streamlit, and importing it (or its reports) does not import torch."""
    code = ("import sys, explain_core, explain_core.analysis, explain_core.report; "
            "print('streamlit' in sys.modules, 'torch' in sys.modules)")
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.split() == ["False", "False"]
    assert "streamlit" not in imported_modules(sorted((ROOT / "explain_core").rglob("*.py")))


def test_a_linear_explanation_on_cpu_runs_without_torch():
    """Where no GPU driver is present, IHT runs in numpy and torch is never imported (a second saved)."""
    code = ("import sys, numpy as np; from explain_core.linear.iht import cuda_available; "
            "from explain_core.linear import explain_linear, LiteralSpace, "
            "TargetScale; x = np.array([1, 1, -1, 1, -1], dtype=np.int8); "
            "space = LiteralSpace(tuple('abcde'), x, lambda Z, s: np.tanh(Z @ [0.1, 0.4, -0.3, 0.2, 0.1]), "
            "TargetScale('regression'), 'function'); "
            "gpu = cuda_available(); ex = explain_linear(space, 2, 1.0, 500, seed=0); "
            "print(gpu, 'torch' in sys.modules, ex.iht.backend)")
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    gpu, imported, backend = done.stdout.split()
    if gpu == "False":
        assert imported == "False" and backend == "numpy"
    else:  # pragma: no cover - a machine with a GPU driver
        assert backend.startswith("torch")


WIDE_LEFT: set[str] = set()  # functions still taking more than 8 parameters (issue 53): this list only shrinks


def test_no_new_function_takes_more_than_eight_parameters():
    """Every function of explain_core/, ui/ and app_pages/ takes at most 8 parameters (``self``/``cls`` aside; ``*args``
    and ``**kwargs`` count one each): a wider one takes a parameter object. The ones left from before are listed in
    WIDE_LEFT, which only shrinks (a name there that is no longer wide must leave it)."""
    wide = set()
    for path in [p for p in SHIPPED if p.name != "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs] if x.arg not in ("self", "cls")]
                if len(names) + (a.vararg is not None) + (a.kwarg is not None) > 8:
                    wide.add(f"{path.relative_to(ROOT)}:{node.name}")
    assert not wide - WIDE_LEFT, f"more than 8 parameters (use a parameter object): {sorted(wide - WIDE_LEFT)}"
    assert not WIDE_LEFT - wide, f"no longer wide, take them off WIDE_LEFT: {sorted(WIDE_LEFT - wide)}"


def test_streamlit_xsrf_cookie_carries_a_browser_key():
    """ui/streamlit_runtime.browser_key reads the token inside Streamlit's XSRF cookie (its name and masked format
    are Streamlit's own), which Streamlit sets whenever sign-in is on; anything else is no key."""
    import inspect
    import os

    from streamlit.web.server import server_util
    from streamlit.web.server.starlette import starlette_app_utils
    from streamlit.web.server.starlette.starlette_server_config import XSRF_COOKIE_NAME

    from ui import streamlit_runtime

    assert streamlit_runtime.XSRF_COOKIE == XSRF_COOKIE_NAME
    assert 'secrets_singleton.get("auth"' in inspect.getsource(server_util.is_xsrf_enabled)  # on with sign-in
    token = os.urandom(16)
    for _ in range(5):  # masked anew on each page load: the same token
        assert streamlit_runtime.xsrf_token(starlette_app_utils.generate_xsrf_token_string(token)) == token
    for hostile in (None, 42, "", "2|", "1|00|00|1", "2|zzzzzzzz|" + "00" * 16 + "|1", "2|00000000|00|1",
                    "2|00000000|" + "00" * 16 + "|1|x", "2|00000000|" + "00" * 65 + "|1", "00" * 16):
        assert streamlit_runtime.xsrf_token(hostile) is None
