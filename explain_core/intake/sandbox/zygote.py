"""Where model workers come from: one clean, spawned process per server that has imported what every worker needs, and
forks a worker for each model (the forkserver pattern of ``multiprocessing`` and Chromium's zygote).

A fresh ``python -I -B`` worker spent 1.4–1.8 s of CPU importing numpy, pandas and scikit-learn before it could load
a model, and 0.6 s more importing skops, on every upload, on every restart after a crash and after every idle stop.
The zygote is spawned exactly as a worker was (``python -I -B``, an empty environment but for thread counts, a
private folder, its own session; the same boot code loads :mod:`.confine` from its file) and never forked from the
server; it reads nothing a visitor sent, only requests from the server over a Unix socket: "a worker with this
memory limit, in this folder, on these three pipes" (the pipes' ends passed as file descriptors). It forks; the
child starts a new session, takes the pipes as its standard streams, closes every other descriptor, joins the
worker's own ``pids`` cgroup (:class:`PidsGroups`) and forks into a new PID namespace
(:func:`~.confine.new_pid_namespace`) its pid 1, which forks the worker; each passes on the exit of the one below.
The worker moves into its folder, confines itself with every layer of :mod:`.confine` and serves
(:func:`~.worker.serve`), as a spawned worker does after its imports. The zygote and every process below it die with
their parent (``PR_SET_PDEATHSIG``); the zygote kills its children when it stops. The zygote waits on its children
through pidfds and tells the server each worker's exit status (a crash's signal is named on the page). It stops when
the server closes the socket (or exits), and after :data:`IDLE_SECONDS` with no worker alive; the next worker then
starts a new one. Where ``os.pidfd_open`` is missing (not Linux ≥ 5.3) workers are spawned one by one.
"""
from __future__ import annotations

import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from .worker import LOAD_CONFINE

IDLE_SECONDS = 300.0  # a worker stops after 20 s idle by default; the zygote (about 200 MB) after 5 min
AVAILABLE = hasattr(os, "pidfd_open") and hasattr(socket, "send_fds") and sys.platform.startswith("linux")
PIDS_MAX = 128  # threads and processes of one worker (its pids cgroup), where the system gives one
BOOT = LOAD_CONFINE + r"""
confine.die_with_parent(lambda: os.getppid() == int(sys.argv[3]))
confine.seccomp_module()
sys.path.insert(0, root)
from explain_core.intake.sandbox.zygote import serve_forks
serve_forks(int(sys.argv[2]), confine, root)
"""


def serve_forks(control: int, confine, root: str) -> None:
    """The zygote's loop: fork a worker per request, report each child's exit, stop when the server is gone or
    nothing has happened for :data:`IDLE_SECONDS` with no child alive; its workers are killed when it stops."""
    from ..skops_policy import skops_io
    from .loaders import open_model  # noqa: F401 — what every worker imports, imported once here
    from .worker import serve

    skops_io()  # skops' own import lists scikit-learn's estimators (0.6 s): the default format's, paid once

    channel = socket.socket(fileno=control)
    children: dict[int, Child] = {}  # pidfd → the child
    groups = PidsGroups()
    try:
        while True:
            ready = select.select([control, *children], [], [], None if children else IDLE_SECONDS)[0]
            if not ready:
                return
            for fd in ready:
                if fd != control:
                    child = children.pop(fd)
                    os.close(fd)
                    code = child.exit_code(os.waitpid(child.pid, 0)[1])
                    groups.remove(child.group)
                    channel.send(json.dumps({"exited": child.worker, "code": code}).encode())
                    continue
                message, fds, _, _ = socket.recv_fds(channel, 4096, 3)
                if not message:
                    return
                request = json.loads(message)
                child = _fork(request, fds, groups.make(), confine, root, serve)
                for received in fds:
                    os.close(received)
                children[os.pidfd_open(child.pid)] = child
                channel.send(json.dumps({"pid": child.worker, "id": request["id"]}).encode())
    finally:
        for pidfd, child in children.items():  # the processes below each child die with it
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            os.waitpid(child.pid, 0)
            groups.remove(child.group)
        groups.remove(None)


class Child:
    """A child of the zygote (``pid``), the worker two levels below it (``worker``: its pid as the server sees it),
    and the worker's pids cgroup."""

    def __init__(self, pid: int, group: str | None):
        self.pid, self.group = pid, group
        self.worker = _descendant(_descendant(pid))

    @staticmethod
    def exit_code(status: int) -> int:
        """The worker's exit code (negative: the signal that ended it), as passed on from below (:func:`_below`)."""
        code = os.waitstatus_to_exitcode(status)
        return -(code - 128) if 128 < code < 128 + signal.NSIG else code


def _descendant(pid: int, seconds: float = 10.0) -> int:
    """The pid of ``pid``'s first child (each level forks the next at once); ``pid`` itself when there is none within
    ``seconds`` (it ended: its exit is reported as the worker's)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as listed:
                found = listed.read().split()
        except OSError:
            return pid
        if found:
            return int(found[0])
        time.sleep(0.0005)
    return pid


def _fork(request: dict, fds: list[int], group: str | None, confine, root: str, serve) -> Child:
    """Fork one worker (the module docstring's steps); in the zygote, the child. The child takes the pipes, joins
    the worker's cgroup and forks the namespace's pid 1 (:func:`_below`), which forks the worker: each passes on
    the exit of the one below (the init of a namespace cannot be ended by its own signals, so the worker is not
    it) and each dies with the one above."""
    sys.stdout.flush()
    sys.stderr.flush()
    me = os.pidfd_open(os.getpid())
    pid = os.fork()
    if pid:
        os.close(me)
        return Child(pid, group)
    code = 0
    try:
        confine.die_with_parent(lambda: not select.select([me], [], [], 0)[0])
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        joined = confine.join_pids_group(group)
        isolated = confine.new_pid_namespace()
        _below(confine)  # the namespace's pid 1
        _below(confine)  # the worker
        folder = request["folder"]
        os.chdir(folder)
        os.environ.update(HOME=folder, TMPDIR=folder)
        tempfile.tempdir = None
        layers = confine.confine(float(request["memory_mb"]), root, float(request["cpu_seconds"]))
        serve({**layers, "pid namespace": isolated, "pids cgroup": joined})
    except BaseException:  # noqa: BLE001 — the child never returns into the zygote's loop
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        os._exit(code)


def _below(confine) -> None:
    """Fork; the child returns, and dies with this process. Here: let go of the pipes, wait for the child (and
    any orphan: pid 1 of a namespace reaps them) and exit with its status (a signal ``s`` as ``128 + s``)."""
    parent = os.pidfd_open(os.getpid())
    child = os.fork()
    if child == 0:
        confine.die_with_parent(lambda: not select.select([parent], [], [], 0)[0])
        os.close(parent)
        return
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


class PidsGroups:
    """One ``pids`` cgroup per worker under this zygote's own (``pids.max`` :data:`PIDS_MAX`), where the system's
    cgroup file system lets this process make one (root, or a delegated subtree); otherwise none."""

    def __init__(self):
        self.root = _pids_root()
        if self.root is not None:
            _sweep(self.root)
            self.root = os.path.join(self.root, f"explain-zygote-{os.getpid()}")
            try:
                os.makedirs(self.root, exist_ok=True)
            except OSError:
                self.root = None
        self.count = 0

    def make(self) -> str | None:
        if self.root is None:
            return None
        self.count += 1
        folder = os.path.join(self.root, f"worker-{self.count}")
        try:
            os.mkdir(folder)
            with open(os.path.join(folder, "pids.max"), "w") as cap:
                cap.write(str(PIDS_MAX))
        except OSError:
            return None
        return folder

    def remove(self, folder: str | None) -> None:
        """Remove a worker's folder (its processes gone), or with None this zygote's own (its workers' gone)."""
        try:
            os.rmdir(folder or self.root or "")
        except OSError:
            pass


def _sweep(parent: str) -> None:
    """Remove the folders of zygotes that were killed (they could not remove their own)."""
    for name in os.listdir(parent):
        pid = name.removeprefix("explain-zygote-")
        if pid != name and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            folder = os.path.join(parent, name)
            for path in [os.path.join(folder, sub) for sub in os.listdir(folder) if sub.startswith("worker-")] + \
                    [folder]:
                try:
                    os.rmdir(path)
                except OSError:
                    pass


def _pids_root() -> str | None:
    """The folder of this process's ``pids`` cgroup (v1's ``pids`` hierarchy, or v2 with the controller on), if
    it is writable here."""
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
        mounts = open("/proc/self/mountinfo").read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for mount in mounts:
            fields = mount.split()
            kind = fields[fields.index("-") + 1]
            v1 = kind == "cgroup" and "pids" in fields[-1].split(",") and "pids" in controllers.split(",")
            v2 = kind == "cgroup2" and controllers == "" and \
                "pids" in _read(os.path.join(fields[4], "cgroup.controllers"))
            if v1 or v2:
                folder = os.path.join(fields[4], path.lstrip("/"))
                if os.access(folder, os.W_OK):
                    return folder
    return None


def _read(path: str) -> str:
    try:
        return open(path).read()
    except OSError:
        return ""


class Zygote:
    """The server's side: the zygote process, a thread reading its replies and exit notices, :meth:`fork`."""

    def __init__(self, environment: dict, package_root: str):
        self.folder = tempfile.mkdtemp(prefix="explain-zygote-")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = spawn(
            [sys.executable, "-I", "-B", "-c", BOOT, package_root, str(theirs.fileno()), str(os.getpid())],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, cwd=self.folder, env={**environment, "HOME": self.folder,
                                                             "TMPDIR": self.folder}, start_new_session=True)
        theirs.close()
        self.channel, self.lock = ours, threading.Lock()
        self.replies: queue.Queue = queue.Queue()
        self.exits: dict[int, int] = {}
        self.changed = threading.Condition()
        self.alive, self.requests = True, 0
        threading.Thread(target=self._listen, name="explain-zygote", daemon=True).start()

    def fork(self, limits: dict, folder: str, fds: tuple[int, int, int], timeout: float) -> int | None:
        """A new worker's pid (``limits``: its ``memory_mb`` and ``cpu_seconds``), or None when the zygote is gone
        or did not answer within ``timeout``."""
        with self.lock:
            self.requests += 1
            asked = {**limits, "folder": folder, "id": self.requests}
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
_SPAWNS: queue.Queue = queue.Queue()
_SPAWNER: list[threading.Thread] = []
_SPAWN_LOCK = threading.Lock()


def spawn(args: list[str], **options) -> subprocess.Popen:
    """``subprocess.Popen(args, **options)`` run by one thread that lives as long as the server: a sandbox process
    dies with the thread that started it (``PR_SET_PDEATHSIG``), and a page's script thread ends after each run."""
    with _SPAWN_LOCK:
        if not _SPAWNER or not _SPAWNER[0].is_alive():
            _SPAWNER[:] = [threading.Thread(target=_spawner, name="explain-sandbox-spawner", daemon=True)]
            _SPAWNER[0].start()
    done: queue.Queue = queue.Queue()
    _SPAWNS.put((args, options, done))
    outcome = done.get()
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def _spawner() -> None:
    while True:
        args, options, done = _SPAWNS.get()
        try:
            done.put(subprocess.Popen(args, **options))
        except BaseException as exc:  # noqa: BLE001 — handed to the caller, raised there
            done.put(exc)


def zygote(environment: dict, package_root: str) -> Zygote:
    """This server's zygote, started on first use and again after it has stopped."""
    with _STARTING:
        current = _ZYGOTE[0]
        if current is None or not current.alive or current.process.poll() is not None:  # ended, EOF not yet read
            current = _ZYGOTE[0] = Zygote(environment, package_root)
        return current
