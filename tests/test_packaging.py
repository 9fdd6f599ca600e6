"""The package as a newcomer installs it: a wheel with the bundled data and the dashboard, installed into a fresh
virtual environment, works from any folder — the library reads its data through importlib.resources, writes
its cache to the user's cache folder, and ``explain-core app`` serves the installed dashboard."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from explain_core import cache

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the source: setuptools builds in the source's ``build/``, which two test
    workers (pytest -n) or an editable install would otherwise share."""
    source, out = tmp_path_factory.mktemp("source") / "tree", tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        "build", "dist", ".git", ".venv", "venv", "__pycache__", "*.egg-info", "tests", "bench"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(source),
                    "-w", str(out)], check=True, capture_output=True, cwd=out)
    return next(out.glob("explain_explorer-*.whl"))


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv that sees the installing environment's dependencies but gets explain-explorer only from the
    wheel. ``--system-site-packages`` shows the *base* interpreter's packages; when the tests run in a virtual
    environment (the README's way), its packages are added too (:func:`see_installing_environment`)."""
    folder = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(folder)], check=True)
    see_installing_environment(folder)
    subprocess.run([folder / "bin" / "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)
    return folder


def see_installing_environment(folder: Path) -> None:
    """A .pth file in the venv at ``folder`` that adds this interpreter's site-packages (after the venv's own, so
    the wheel's explain_core comes first); nothing to add when this interpreter is the base one."""
    import site

    if sys.prefix == sys.base_prefix:
        return
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = subprocess.run([folder / "bin" / "python", "-c", where], capture_output=True, text=True,
                             check=True).stdout.strip()
    lines = [f"import site; site.addsitedir({path!r})" for path in site.getsitepackages()]
    (Path(purelib) / "installing-environment.pth").write_text("\n".join(lines) + "\n")


def test_wheel_holds_the_package_its_data_and_the_dashboard(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"explain_core/datasets/compas.csv", "explain_core/datasets/datasets.json",
            "explain_core/linear/iht.py", "explain_core/report/pdf.py"} <= names
    packages = {str(p.relative_to(ROOT)) for p in (ROOT / "explain_core").rglob("__init__.py")}
    assert packages <= names, f"packages missing from the wheel: {sorted(packages - names)}"
    shared = [n for n in names if ".data/data/share/explain-explorer/" in n]
    assert ({n.split("share/explain-explorer/")[1] for n in shared}
            >= {"app.py", "app_pages/sev.py", "ui/shared.py", ".streamlit/config.toml"})
    assert not [n for n in names if n.startswith(("tests/", "bench/"))]
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "explain-core = explain_core.__main__:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_package_reads_its_data_and_writes_its_cache_outside_itself(venv, tmp_path):
    code = ("import explain_core, explain_core.cache as c, explain_core.cli.app as m; "
            "from explain_core import load_demo; print(explain_core.__file__); "
            "print(load_demo('german_credit').features.shape[0]); print(c.cache_dir()); print(m.app_file())")
    env = {k: v for k, v in os.environ.items() if k != cache.CACHE_ENV} | {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    done = subprocess.run([venv / "bin" / "python", "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env=env, check=True)
    package, rows, cache_folder, app = done.stdout.split()
    assert Path(package).is_relative_to(venv) and rows == "1000"
    assert Path(cache_folder) == tmp_path / "xdg" / "explain-explorer" / "models"
    assert not Path(cache_folder).is_relative_to(Path(package).parent)
    assert Path(app) == venv / "share" / "explain-explorer" / "app.py"
    version = subprocess.run([venv / "bin" / "explain-core", "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("explain-core ")


def test_cache_defaults_to_the_user_cache_folder(monkeypatch, tmp_path):
    import platformdirs

    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    assert cache.cache_root() == Path(platformdirs.user_cache_dir("explain-explorer", appauthor=False))
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    assert cache.cache_dir() == tmp_path / "models" and (tmp_path / "models").is_dir()


def test_installed_app_command_serves_the_dashboard(venv, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, cache.CACHE_ENV: str(tmp_path)}
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([venv / "bin" / "explain-core", "app", "--server.headless", "true", "--server.port",
                                   str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
                                  cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as answer:
                    assert answer.read().strip() == b"ok"
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, \
                    f"explain-core app did not start:\n{log.read_text()[-3000:]}"
                time.sleep(0.25)
    finally:
        server.terminate()
        server.wait(timeout=10)
    with pytest.raises(OSError):  # the command is the server itself: stopping it leaves nothing serving
        urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
