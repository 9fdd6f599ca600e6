"""Where model workers come from: one clean, spawned process per server that has imported what every worker
needs, and forks a worker for each model (the forkserver pattern of ``multiprocessing`` and Chromium's zygote).

A fresh ``python -I -B`` worker spent 1.4–1.8 s of CPU importing numpy, pandas and scikit-learn before it could
load a model, and 0.6 s more importing skops, on every upload, on every restart after a crash and after every idle
stop. The zygote is spawned exactly as a worker was (``python -I -B``, an empty environment but for thread counts,
a private folder, its own session; the same boot code loads :mod:`.confine` from its file) and never forked from
the server; it reads nothing a visitor sent, only requests from the server over a
Unix socket: "a worker with this memory limit, in this folder, on these three pipes" (the pipes' ends passed as
file descriptors). It forks; the child starts a new session, takes the pipes as its standard streams, closes
every other descriptor, moves into its folder and then confines itself with every layer of :mod:`.confine` and
serves (:func:`~.worker.serve`), as a spawned worker does after its imports. The zygote waits on its children
through pidfds and tells the server each one's exit status (a crash's signal is named on the page). It stops when
the server closes the socket (or exits), and after :data:`IDLE_SECONDS` with no worker alive; the next worker
then starts a new one. Where ``os.pidfd_open`` is missing (not Linux ≥ 5.3) workers are spawned one by one.
"""
from __future__ import annotations

import json
import os
import queue
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

from .worker import LOAD_CONFINE

IDLE_SECONDS = 300.0  # a worker stops after 20 s idle by default; the zygote (about 200 MB) after 5 min
AVAILABLE = hasattr(os, "pidfd_open") and hasattr(socket, "send_fds") and sys.platform.startswith("linux")
BOOT = LOAD_CONFINE + r"""
confine.seccomp_module()
sys.path.insert(0, root)
from explain_core.intake.sandbox.zygote import serve_forks
serve_forks(int(sys.argv[2]), confine, root)
"""


def serve_forks(control: int, confine, root: str) -> None:
    """The zygote's loop: fork a worker per request, report each child's exit, stop when the server is gone or
    nothing has happened for :data:`IDLE_SECONDS` with no child alive."""
    from ..skops_policy import skops_io
    from .loaders import open_model  # noqa: F401 — what every worker imports, imported once here
    from .worker import serve

    skops_io()  # skops' own import lists scikit-learn's estimators (0.6 s): the default format's, paid once

    channel = socket.socket(fileno=control)
    children: dict[int, int] = {}  # pidfd → pid
    while True:
        ready = select.select([control, *children], [], [], None if children else IDLE_SECONDS)[0]
        if not ready:
            return
        for fd in ready:
            if fd != control:
                pid = children.pop(fd)
                os.close(fd)
                code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
                channel.send(json.dumps({"exited": pid, "code": code}).encode())
                continue
            message, fds, _, _ = socket.recv_fds(channel, 4096, 3)
            if not message:
                return
            request = json.loads(message)
            pid = _fork(request, fds, channel, children, confine, root, serve)
            for received in fds:
                os.close(received)
            children[os.pidfd_open(pid)] = pid
            channel.send(json.dumps({"pid": pid, "id": request["id"]}).encode())


def _fork(request: dict, fds: list[int], channel, children, confine, root: str, serve) -> int:
    """Fork one worker (the module docstring's steps); in the parent, the child's pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        channel.close()
        for pidfd in children:
            os.close(pidfd)
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        folder = request["folder"]
        os.chdir(folder)
        os.environ.update(HOME=folder, TMPDIR=folder)
        tempfile.tempdir = None
        serve(confine.confine(float(request["memory_mb"]), root))
    except BaseException:  # noqa: BLE001 — the child never returns into the zygote's loop
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        os._exit(code)


class Zygote:
    """The server's side: the zygote process, a thread reading its replies and exit notices, :meth:`fork`."""

    def __init__(self, environment: dict, package_root: str):
        self.folder = tempfile.mkdtemp(prefix="explain-zygote-")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-B", "-c", BOOT, package_root, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.folder,
            env={**environment, "HOME": self.folder, "TMPDIR": self.folder}, start_new_session=True)
        theirs.close()
        self.channel, self.lock = ours, threading.Lock()
        self.replies: queue.Queue = queue.Queue()
        self.exits: dict[int, int] = {}
        self.changed = threading.Condition()
        self.alive, self.requests = True, 0
        threading.Thread(target=self._listen, name="explain-zygote", daemon=True).start()

    def fork(self, memory_mb: float, folder: str, fds: tuple[int, int, int], timeout: float) -> int | None:
        """A new worker's pid, or None when the zygote is gone or did not answer within ``timeout``."""
        with self.lock:
            self.requests += 1
            asked = {"memory_mb": memory_mb, "folder": folder, "id": self.requests}
            deadline = time.monotonic() + timeout
            try:
                socket.send_fds(self.channel, [json.dumps(asked).encode()], list(fds))
                reply = self.replies.get(timeout=timeout)
                while reply is not None and reply["id"] != asked["id"]:  # the answer to a request given up on
                    reply = self.replies.get(timeout=max(0.0, deadline - time.monotonic()))
            except (OSError, queue.Empty):
                reply = None
        return None if reply is None else reply["pid"]

    def exit_code(self, pid: int, timeout: float) -> int | None:
        """The exit status of worker ``pid`` once the zygote has reported it (None: not within ``timeout``)."""
        with self.changed:
            self.changed.wait_for(lambda: pid in self.exits or not self.alive, timeout)
            return self.exits.pop(pid, None)

    def _listen(self) -> None:
        while True:
            try:
                message = self.channel.recv(4096)
            except OSError:
                message = b""
            if not message:
                break
            notice = json.loads(message)
            if "pid" in notice:
                self.replies.put(notice)
            else:
                with self.changed:
                    self.exits[notice["exited"]] = notice["code"]
                    self.changed.notify_all()
        with self.changed:
            self.alive = False
            self.changed.notify_all()
        self.replies.put(None)
        self.channel.close()
        self.process.wait()
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


_ZYGOTE: list[Zygote | None] = [None]
_STARTING = threading.Lock()


def zygote(environment: dict, package_root: str) -> Zygote:
    """This server's zygote, started on first use and again after it has stopped."""
    with _STARTING:
        current = _ZYGOTE[0]
        if current is None or not current.alive or current.process.poll() is not None:  # ended, EOF not yet read
            current = _ZYGOTE[0] = Zygote(environment, package_root)
        return current
