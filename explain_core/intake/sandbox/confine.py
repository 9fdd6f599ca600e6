"""Confining the worker process before it reads a byte of an uploaded model: resource limits (memory, CPU time as
a backstop, files), its own (empty) network and user namespaces, a Landlock rule set (the kernel's file-system
sandbox: read-only access to the Python installation and the system libraries, nothing else — not the server's
folder, its secrets or ``/proc`` of other processes; no writing anywhere; no TCP; and, where the kernel has Landlock
ABI 6, no signal to and no abstract Unix socket of any process outside the worker's own domain), and a seccomp
filter. The zygote (:mod:`.zygote`) puts each worker in its own PID namespace (:func:`new_pid_namespace`: no
pid outside it can be named) and in its own ``pids`` cgroup (:func:`join_pids_group`: a cap on its threads), and
every process of the sandbox dies with its parent (:func:`die_with_parent`).

The seccomp filter (libseccomp through pyseccomp) refuses, with an error and the process going on: starting
programs (``execve``), new processes (``fork``, ``clone`` without ``CLONE_THREAD``), sockets, opening any file for
writing, creating, renaming or deleting files and folders, changing permissions, signalling other processes,
tracing, mounting, leaving the namespaces and raising its own resource limits; every signal call aimed at another
process (``kill``/``tgkill`` of any pid but its own — 0 and −1 included —, ``tkill``, ``rt_sigqueueinfo``,
``rt_tgsigqueueinfo``, ``pidfd_open``, ``pidfd_send_signal``, ``pidfd_getfd``). Threads, memory, reading the
allowed files and the inherited pipes work as usual. Where the kernel lacks a layer, :func:`confine` says which
layers hold; the server shows them (:attr:`~explain_core.intake.sandbox.client.Worker.confined`).

This module is loaded from its file by the worker's boot code (or the zygote's, :mod:`.zygote`, whose forked
workers call :func:`confine` first of all), before anything else of the package: it imports only the standard
library (and pyseccomp, inside :func:`install_filter`).
"""
from __future__ import annotations

import ctypes
import errno
import math
import os
import resource
import sys

CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID, CLONE_THREAD = 0x10000000, 0x40000000, 0x20000000, 0x00010000
PR_SET_PDEATHSIG, SIGKILL = 1, 9
WRITE_FLAGS = (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC, os.O_APPEND)
REFUSED = (  # EPERM: programs, processes, sockets, files changed, privileges, other processes
    "execve", "execveat", "fork", "vfork", "socket", "socketpair", "creat", "unlink", "unlinkat", "rename",
    "renameat", "renameat2", "mkdir", "mkdirat", "rmdir", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod",
    "fchmodat", "chown", "fchown", "lchown", "fchownat", "truncate", "ftruncate", "mknod", "mknodat", "setxattr",
    "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "memfd_create", "ptrace", "tkill",
    "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "setsid", "setpgid", "setrlimit", "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "kexec_load",
    "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "sethostname", "setdomainname",
    "acct", "quotactl", "name_to_handle_at", "open_by_handle_at", "userfaultfd", "io_uring_setup", "utime", "utimes",
    "utimensat", "futimesat", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal",
    "pidfd_getfd", "kcmp", "process_madvise")
# Landlock (linux/landlock.h): syscall numbers (the same on every architecture) and access rights.
LANDLOCK_CREATE, LANDLOCK_ADD_RULE, LANDLOCK_RESTRICT = 444, 445, 446
READ_FILE, READ_DIR, RULE_PATH_BENEATH, PR_SET_NO_NEW_PRIVS = 1 << 2, 1 << 3, 1, 38
TCP_BIND_CONNECT = (1 << 0) | (1 << 1)  # ABI 4: handled and never allowed
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
SYSTEM_READABLE = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib", "/usr/share/zoneinfo",
                   "/etc/ld.so.cache", "/etc/localtime", "/proc/cpuinfo", "/proc/meminfo", "/proc/self",
                   "/sys/devices/system/cpu", "/dev/null", "/dev/urandom")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def set_limits(memory_mb: float, cpu_seconds: float, files: int = 256) -> None:
    """Address space, CPU time (a backstop: the server stops a call past its own CPU limit long before), no core
    dumps, no file may grow (RLIMIT_FSIZE 0), few open files: hard = soft, so the process cannot raise them again
    (it has no capability outside its own user namespace, and seccomp refuses ``setrlimit``)."""
    for kind, value in ((resource.RLIMIT_AS, int(memory_mb * 2**20)), (resource.RLIMIT_CPU, math.ceil(cpu_seconds)),
                        (resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_NOFILE, files)):
        resource.setrlimit(kind, (value, value))


def die_with_parent(parent_alive) -> None:
    """SIGKILL when the parent (the thread that forked this process) ends; ``parent_alive()`` is asked after
    setting it, so that a parent that ended just before is caught too (then this process exits at once)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
    if not parent_alive():
        os._exit(1)


def new_pid_namespace() -> bool:
    """Have this process's next child start a new PID namespace, where it is pid 1 and no pid outside can be named:
    root (CAP_SYS_ADMIN) makes the namespace alone, anyone else with a user namespace first; False where the kernel
    refuses both."""
    unshare = ctypes.CDLL(None, use_errno=True).unshare
    return any(unshare(flags) == 0 for flags in ((CLONE_NEWPID,) if os.geteuid() == 0 else ()) +
               (CLONE_NEWUSER | CLONE_NEWPID,))


def join_pids_group(group: str | None) -> bool:
    """Move this process (and so its future children and threads) into the ``pids`` cgroup folder ``group``
    (made by the zygote, ``pids.max`` set); False where there is none or it cannot be joined."""
    if not group:
        return False
    try:
        with open(os.path.join(group, "cgroup.procs"), "w") as procs:
            procs.write("0")
        return True
    except OSError:
        return False


def leave_network() -> bool:
    """A new user namespace (no capability over the host) and a new network namespace (no interface but a
    downed loopback); False where the kernel refuses."""
    return ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0


def readable_paths(package_root: str) -> tuple[list[str], list[str]]:
    """(Folders and files the worker may read, folders it may only list): the Python installation and every
    ``sys.path`` entry, the package itself, the system's libraries; its checkout's folder is listed, not read."""
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path, os.path.join(package_root, "explain_core")}
    python.discard(package_root)
    readable = sorted({os.path.realpath(p) for p in (*python, *SYSTEM_READABLE) if p and os.path.exists(p)})
    return readable, [os.path.realpath(package_root)]


def restrict_files(package_root: str) -> tuple[bool, bool]:
    """The Landlock rule set of the module docstring: (whether it holds, whether it scopes signals and abstract
    sockets); (False, False) where the kernel has no Landlock."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(LANDLOCK_CREATE, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return False, False
    handled = (1 << 13) - 1 | (abi >= 2) << 13 | (abi >= 3) << 14 | (abi >= 5) << 15
    attr = _RulesetAttr(handled, TCP_BIND_CONNECT if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(attr) if abi >= 6 else _RulesetAttr.scoped.offset if abi >= 4 else 8
    ruleset = libc.syscall(LANDLOCK_CREATE, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return False, False
    readable, listed = readable_paths(package_root)
    for path, rights in [(p, READ_FILE | (READ_DIR if os.path.isdir(p) else 0)) for p in readable] + \
                        [(p, READ_DIR) for p in listed]:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        try:
            rule = _PathBeneath(rights, fd)
            libc.syscall(LANDLOCK_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0)
        finally:
            os.close(fd)
    done = libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 and libc.syscall(LANDLOCK_RESTRICT, ruleset, 0) == 0
    os.close(ruleset)
    return done, done and abi >= 6


def seccomp_module():
    """pyseccomp, imported before the other layers (it looks for libseccomp with a helper program); None where it
    or libseccomp is missing."""
    try:
        import pyseccomp
    except (ImportError, RuntimeError, OSError):
        return None
    return pyseccomp


def install_filter(seccomp) -> bool:
    """The seccomp filter of the module docstring; False without pyseccomp."""
    if seccomp is None:
        return False
    deny = seccomp.ERRNO(errno.EPERM)
    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in REFUSED:
        _rule(flt, deny, name)
    for name, arg in (("open", 1), ("openat", 2)):  # opened for reading only
        for flag in WRITE_FLAGS:
            _rule(flt, seccomp.ERRNO(errno.EACCES), name, seccomp.Arg(arg, seccomp.MASKED_EQ, flag, flag))
    _rule(flt, seccomp.ERRNO(errno.ENOSYS), "openat2")  # flags in a struct: C libraries fall back to openat
    _rule(flt, seccomp.ERRNO(errno.ENOSYS), "clone3")  # likewise to clone, whose flags are checked here
    _rule(flt, deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    _rule(flt, deny, "prlimit64", seccomp.Arg(2, seccomp.NE, 0))  # reading a limit stays possible
    me = os.getpid()
    for name in ("kill", "tgkill"):  # signals to itself only (threads, aborts)
        _rule(flt, deny, name, seccomp.Arg(0, seccomp.NE, me))
    flt.load()
    return True


def _rule(flt, action: int, name: str, *args) -> None:
    try:
        flt.add_rule(action, name, *args)
    except (OSError, ValueError, RuntimeError):  # a call this architecture does not have
        pass


def confine(memory_mb: float, package_root: str, cpu_seconds: float) -> dict:
    """Every layer, in order; which hold (``{"limits": True, "network": …, "files": …, "signal scope": …,
    "seccomp": …}``; the zygote adds its own two, ``pid namespace`` and ``pids cgroup``)."""
    seccomp = seccomp_module()
    set_limits(memory_mb, cpu_seconds)
    network = leave_network()
    files, scoped = restrict_files(package_root)
    return {"limits": True, "network": network, "files": files, "signal scope": scoped,
            "seccomp": install_filter(seccomp)}
