"""The server's side of a model's worker process: starting it, one request at a time under the limits, and
turning a crash, a hang or a runaway into a clear message.

:class:`Worker` is forked by this server's zygote (:mod:`.zygote`: a fresh ``python -I -B`` the server spawned,
never a fork of the server, with numpy, pandas and scikit-learn imported) or, where there is none, spawned as
``python -I -B`` itself; either way with an empty environment but for thread counts, a private temporary folder as
its working and home folder, its own session (no terminal), and pipes for stdin, stdout and stderr, and confined
(:mod:`.confine`) before it reads a byte of the model. Each request waits for its reply under a wall-time and a
CPU-time limit (the worker's CPU time is read from ``/proc``); past either, or when the worker dies, it is killed
and :class:`ModelCrashed` says what happened. The next request starts a new worker (:mod:`.model` reloads the
model into it).
"""
from __future__ import annotations

import fcntl
import functools
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ...errors import ModelCrashed, ProtocolError, RemoteError
from .protocol import CALL_HEADER_BYTES, Expect, read_reply, request_bytes
from .worker import BOOT
from .zygote import AVAILABLE, spawn, zygote

PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])
START_SECONDS = 120.0  # a fresh worker imports numpy, pandas and scikit-learn before it answers
CHECK_SECONDS = 0.1  # a wait for a reply wakes this often to check the worker's CPU time and life (asleep between)
PIPE_BYTES = 1 << 20  # Linux's default /proc/sys/fs/pipe-max-size
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
DEFAULT_EXPECT = Expect()
STDERR_TAIL = 8 * 2**10  # bytes of a worker's stderr kept for the crash message (read in chunks, never by line)
BACKSTOP_CALLS = 30  # RLIMIT_CPU of a worker: this many calls at the per-call CPU limit (at least 10 minutes)


@functools.cache
def threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def _environment(folder: str) -> dict:
    """Nothing of the server's environment (no secrets): a path, a locale, the private folder, thread counts and
    how idle threads wait."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": folder, "TMPDIR": folder,
           "PYTHONHASHSEED": "0"}
    env.update(dict.fromkeys(THREAD_VARIABLES, str(threads())))
    env["OMP_WAIT_POLICY"] = "PASSIVE"  # a booster's OpenMP threads sleep after each call instead of spinning on the
    # cores the server and other workers need (XGBoost's one-row SEV with four workers alive: 9.4× → 1.3× in process)
    return env


def _widen(*pipes) -> None:
    """Pipes of :data:`PIPE_BYTES` (Linux's default is 64 KiB), so that a batch of rows crosses in one write and
    one read rather than a wake-up of each side per 64 KiB; left as they are where the system refuses."""
    for pipe in pipes:
        try:
            fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
        except OSError:
            pass


def cpu_backstop(call_seconds: float) -> float:
    """A worker's whole CPU time (``RLIMIT_CPU``): :data:`BACKSTOP_CALLS` calls at the per-call CPU limit, at least
    10 minutes. A worker is retired before it could reach it (:attr:`Worker.retiring`), so only a worker running
    more threads than it was given, or one orphaned, ever meets it."""
    return max(600.0, BACKSTOP_CALLS * call_seconds * threads())


def _forked(memory_mb: float, cpu_seconds: float, folder: str) -> Forked | None:
    """A worker forked by this server's zygote (:mod:`.zygote`) on three new pipes; None where there is no zygote
    or it did not answer (the caller spawns one instead)."""
    if not AVAILABLE:
        return None
    pipes = [os.pipe() for _ in range(3)]  # stdin, stdout, stderr: (read end, write end)
    theirs = (pipes[0][0], pipes[1][1], pipes[2][1])
    try:
        source = zygote(_environment(folder), PACKAGE_ROOT)
        pid = source.fork({"memory_mb": memory_mb, "cpu_seconds": cpu_seconds}, folder, theirs, START_SECONDS)
    finally:
        for fd in theirs:
            os.close(fd)
    if pid is None:
        for fd in (pipes[0][1], pipes[1][0], pipes[2][0]):
            os.close(fd)
        return None
    return Forked(source, pid, pipes[0][1], pipes[1][0], pipes[2][0])


class Forked:
    """What :class:`Worker` uses of a ``subprocess.Popen``, for a worker forked by the zygote: its pipes, ``poll``,
    ``wait``, ``kill`` and ``returncode`` (the exit status the zygote reports), through a pidfd."""

    def __init__(self, source, pid: int, stdin: int, stdout: int, stderr: int):
        self.source, self.pid, self.args = source, pid, ["zygote worker", str(pid)]
        self.stdin, self.stdout = open(stdin, "wb", buffering=0), open(stdout, "rb", buffering=0)
        self.stderr = open(stderr, "rb")
        try:
            self.pidfd = os.pidfd_open(pid)
        except ProcessLookupError:  # it ended and was reaped already: its status is on its way
            self.pidfd = None
        self.returncode = None

    def _ended(self, timeout: float | None) -> bool:
        return self.pidfd is None or bool(select.select([self.pidfd], [], [], timeout)[0])

    def poll(self) -> int | None:
        if self.returncode is None and self._ended(0):
            code = self.source.exit_code(self.pid, 2.0)
            self.returncode = 1 if code is None else code  # 1: the zygote is gone, with the status
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not self._ended(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.poll()

    def kill(self) -> None:
        if self.pidfd is not None and self.returncode is None:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def release(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class Worker:
    """One worker process: :meth:`call` sends a request and returns the reply's value."""

    def __init__(self, memory_mb: float, call_seconds: float):
        self.folder = tempfile.mkdtemp(prefix="explain-sandbox-")
        self.stderr = bytearray()  # its last STDERR_TAIL bytes
        self.buffer = bytearray()
        backstop = cpu_backstop(call_seconds)
        self.process = _forked(memory_mb, backstop, self.folder) or spawn(
            [sys.executable, "-I", "-B", "-c", BOOT, PACKAGE_ROOT, str(memory_mb), str(backstop), str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self.folder,
            env=_environment(self.folder), start_new_session=True, close_fds=True)
        _widen(self.process.stdin, self.process.stdout)
        self.drain = threading.Thread(target=self._drain, daemon=True)
        self.drain.start()
        self.used = self.started = time.monotonic()
        self.retire_at = self.started + 0.8 * backstop / threads()  # its CPU time cannot reach the backstop before
        hello = self._reply(START_SECONDS, None, "starting", Expect(CALL_HEADER_BYTES, 0))
        self.confined: dict = hello.get("confined", {}) if isinstance(hello, dict) else {}

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    @property
    def retiring(self) -> bool:
        """Whether this worker has lived long enough that its CPU time could near its backstop: the next request
        starts a new one."""
        return time.monotonic() > self.retire_at

    def call(self, request: dict, *, seconds: float, what: str, expect: Expect = DEFAULT_EXPECT):
        """The value of the worker's reply to ``request`` (bounded by ``expect``); ``what`` names it in messages
        ("scoring 20 rows")."""
        try:
            data = memoryview(request_bytes(request))
            while data:
                data = data[os.write(self.process.stdin.fileno(), data):]
        except (BrokenPipeError, OSError):
            raise self._crashed(what) from None
        reply = self._reply(seconds, seconds * threads(), what, expect)
        self.used = time.monotonic()
        if not isinstance(reply, dict) or not ({"value", "error"} & set(reply)):
            self.close()
            raise ModelCrashed(f"The model's worker answered with malformed data while {what}; it was stopped.")
        if "error" in reply:
            raise RemoteError(reply["error"])
        return reply["value"]

    def _reply(self, seconds: float, cpu_seconds: float | None, what: str, expect: Expect):
        """The next reply within ``seconds`` of wall time (its decoding included) and ``cpu_seconds`` of the
        worker's CPU time, within ``expect``. The CPU time is counted from the first wait that finds no reply
        (0.1 s in): a call answered sooner reads no ``/proc`` file (SEV's one-row calls take a millisecond; reading
        it took a tenth of one)."""
        deadline = time.monotonic() + seconds
        budget = [None, cpu_seconds] if cpu_seconds is not None else None

        def read_exact(n: int) -> bytes:
            while len(self.buffer) < n:
                self._fill(deadline, budget, seconds, what)
            out = bytes(self.buffer[:n])
            del self.buffer[:n]
            return out

        try:
            reply = read_reply(read_exact, expect)
        except ProtocolError as exc:
            self.close()
            raise ModelCrashed(f"The model's worker answered with malformed data while {what} ({exc}); it was "
                               "stopped.") from None
        if time.monotonic() > deadline:
            raise self._late(what, seconds)
        return reply

    def _fill(self, deadline: float, budget, seconds: float, what: str) -> None:
        """Wait asleep (``select`` on the pipe, the deadline as its timeout: never a spin, which would take a core
        from the worker it waits for) for the next bytes of the reply, checking the worker's CPU time and life each
        :data:`CHECK_SECONDS`."""
        out = self.process.stdout.fileno()
        if select.select([out], [], [], max(0.0, min(CHECK_SECONDS, deadline - time.monotonic())))[0]:
            chunk = os.read(out, 1 << 20)
            if not chunk:
                raise self._crashed(what)
            self.buffer += chunk
            return
        if time.monotonic() > deadline:
            raise self._late(what, seconds)
        used = self._cpu() if budget is not None else 0.0
        if budget is not None and budget[0] is None:
            budget[0] = used
        if budget is not None and used - budget[0] > budget[1]:
            self.close()
            raise ModelCrashed(f"The model used more than {budget[1]:g} s of CPU time {what} (this server's limit), "
                               "so its worker was stopped.")
        if not self.alive:
            raise self._crashed(what)

    def _late(self, what: str, seconds: float) -> ModelCrashed:
        self.close()
        return ModelCrashed(f"The model did not finish {what} within {seconds:g} s (this server's limit), so its "
                            "worker was stopped; a smaller batch or a simpler model may fit.")

    def _cpu(self) -> float:
        """CPU seconds the worker has used (all its threads), from /proc; 0 where /proc is not there."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def _crashed(self, what: str) -> ModelCrashed:
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:  # it closed its pipe but lives on: stopped here
            self.process.kill()
            self.process.wait()
        self.drain.join(timeout=1)
        code = self.process.returncode
        how = (f"was stopped by signal {signal.Signals(-code).name}" if code is not None and code < 0 and
               -code in signal.valid_signals() else f"exited with status {code}")
        words = " ".join(bytes(self.stderr).decode("utf-8", "replace").split())[-600:]
        self.close()
        hint = " (an allocation past this server's memory limit ends it this way too)" if code in (-6, -9) else \
            " (it used up the CPU time a worker may have in all)" if code == -signal.SIGXCPU else ""
        return ModelCrashed(f"The model crashed while {what}: its worker {how}{hint}."
                            + (f" Its last output: {words}" if words else "")
                            + " The server and other sessions are not affected; the next request starts a new worker.")

    def _drain(self) -> None:
        """Read the worker's stderr as it comes, in chunks, keeping its last :data:`STDERR_TAIL` bytes (a model
        writing without a newline, or without end, costs the server nothing more)."""
        fd = self.process.stderr.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.stderr += chunk
            del self.stderr[:-STDERR_TAIL]

    def close(self) -> None:
        """Stop the process (if running) and remove its folder."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=5)
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        if isinstance(self.process, Forked):
            self.process.release()
        shutil.rmtree(self.folder, ignore_errors=True)
