"""``explain-core app``: the installed dashboard served by Streamlit."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from ..errors import UsageError


def app_file() -> Path:
    """The dashboard's ``app.py``: beside this package in a source checkout (or an editable install), else where
    ``pip install`` put it (``<prefix>/share/explain-explorer``)."""
    import sysconfig

    installed = Path(sysconfig.get_path("data")) / "share" / "explain-explorer"
    for folder in (Path(__file__).resolve().parents[2], installed):
        if (folder / "app.py").is_file() and (folder / "app_pages").is_dir():
            return folder / "app.py"
    raise UsageError("The dashboard's app.py was not found; reinstall with `pip install explain-explorer[app]`, or "
                     "run `streamlit run app.py` in a source checkout.")


def run_app(extra: Sequence[str]) -> NoReturn:
    """``streamlit run app.py`` on the installed dashboard, in its folder (Streamlit reads its
    ``.streamlit/config.toml`` from the working folder); other arguments go to Streamlit. The command becomes
    the Streamlit server (exec), so a signal to it (Ctrl-C, a service manager's stop) reaches the server."""
    app = app_file()
    os.chdir(app.parent)
    os.execv(sys.executable, [sys.executable, "-m", "streamlit", "run", str(app), *extra])
