"""A served app held by a test: ``streamlit run app.py`` on a free local port (:func:`serve`), and a visitor that
speaks Streamlit's own websocket protocol to it (:class:`Visitor`: BackMsg reruns out, ForwardMsgs in), so a test
can send clicks in an exact order relative to what the server has run, which a browser cannot."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVER_START_TIMEOUT = 240  # seconds: at load 20+ a start (imports, the default demo from the cache) took over 60
READ_TIMEOUT = 30  # seconds a visitor waits for the server's next message
QUIET = 0.3  # seconds without a message after a finished run: the session's runs are over


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().strip() == b"ok"
    except OSError:
        return False


class Server(str):
    """A live server's base URL, with the seconds it took to start (its start-up work included) and its log."""

    def __new__(cls, url: str, started_in: float, log: Path):
        server = super().__new__(cls, url)
        server.started_in, server.log = started_in, log
        return server


@contextmanager
def serve(log: Path, env: dict[str, str], *options: str, launcher: tuple[str, ...] = ("-m", "streamlit"),
          port: int | None = None):
    """``streamlit run app.py`` on ``port`` (default: a free local port) with the project's config and command-line
    ``options`` (e.g. ``"--runner.fastReruns", "true"``; ``launcher``: how Python starts Streamlit's command line,
    e.g. the path of ``paused_runs.py``); yields its :class:`Server` once healthy, stops it on leaving."""
    port = port or free_port()
    cmd = [sys.executable, *launcher, "run", "app.py", "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
           "--browser.gatherUsageStats", "false", *options]
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        while not healthy(url):
            if proc.poll() is not None or time.monotonic() > started + SERVER_START_TIMEOUT:
                pytest.fail(f"Streamlit server did not start (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
            time.sleep(0.05)
        yield Server(url, time.monotonic() - started, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Visitor:
    """One browser tab at the protocol level: reruns sent as ``BackMsg``s on ``/_stcore/stream``, the server's
    ``ForwardMsg``s read back one by one. It keeps, as the browser does, the URL's query, the widgets' values and the
    page shown; and what was drawn: the elements of the latest run and every error shown since connecting."""

    def __init__(self, ws):
        self.ws = ws  # an open connection to /_stcore/stream (:func:`visit`)
        self.query, self.values, self.pages, self.page = "", {}, {}, ""
        self.elements, self.errors, self.running, self.finished = [], [], False, False
        self.ids: list[str] = []  # every widget id drawn, latest last

    def rerun(self, page: str = "", trigger: str | None = None) -> None:
        """Send a rerun as the browser does: on page ``page`` (a title; "" for the page shown), with the widgets'
        values and, for a button click, the ``trigger`` key's widget set."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_script_hash = self.pages[page] if page else self.page
        states = msg.rerun_script.widget_states.widgets
        for key, value in self.values.items():
            states.add(id=self.widget_id(key), string_value=value)
        if trigger:
            states.add(id=self.widget_id(trigger), trigger_value=True)
        self.ws.send(msg.SerializeToString())
        self.finished = False  # until a run after this one has finished

    def choose(self, key: str, label: str) -> None:
        """Choose option ``label`` in the selectbox ``key`` (sent with the next rerun)."""
        self.values[key] = label

    def widget_id(self, key: str) -> str:
        """The id of the latest widget drawn with ``key`` (Streamlit ends a keyed widget's id with it)."""
        return next(id_ for id_ in reversed(self.ids) if id_.endswith(f"-{key}"))

    def read(self, timeout: float = READ_TIMEOUT):
        """The server's next ForwardMsg (``TimeoutError`` after ``timeout`` s), noted: the query, the page, the run's
        elements, errors shown."""
        from streamlit.proto.Alert_pb2 import Alert
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = ForwardMsg()
        msg.ParseFromString(self.ws.recv(timeout=timeout))
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.elements = []
        elif kind == "navigation":
            self.pages = {p.page_name: p.page_script_hash for p in msg.navigation.app_pages}
            self.page = msg.navigation.page_script_hash
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "session_status_changed":
            self.running = msg.session_status_changed.script_is_running
        elif kind == "script_finished":
            self.finished = msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            drawn = getattr(element, element.WhichOneof("type"))
            self.elements.append(drawn)
            if getattr(drawn, "id", ""):
                self.ids.append(drawn.id)
            if element.HasField("exception") or (element.HasField("alert") and drawn.format == Alert.ERROR):
                self.errors.append(drawn)
        return msg

    def read_until(self, found) -> None:
        """Read until a message for which ``found(msg)`` holds."""
        while not found(self.read()):
            pass

    def settle(self, quiet: float = QUIET) -> None:
        """Read until the session's runs are over: a run finished (not stopped for a rerun), the script idle, and no
        message for ``quiet`` seconds (the server reports the script idle between a run and a rerun folded in)."""
        while True:
            idle = self.finished and not self.running
            try:
                self.read(timeout=quiet if idle else READ_TIMEOUT)
            except TimeoutError:
                if idle:
                    return
                raise

    def shown_page(self) -> str:
        """The title of the page the latest run drew."""
        return next(title for title, hash_ in self.pages.items() if hash_ == self.page)

    def texts(self) -> list[str]:
        """The markdown of the latest run's elements (captions, text)."""
        return [e.body for e in self.elements if isinstance(getattr(e, "body", None), str)]


@contextmanager
def visit(server: str):
    """A :class:`Visitor` of the served app at ``server`` (its URL), connected while in the block."""
    from websockets.sync.client import connect  # imported here: only the protocol tests need websockets

    with connect(server.replace("http://", "ws://") + "/_stcore/stream", subprotocols=["streamlit"],
                 max_size=None) as ws:
        yield Visitor(ws)
