"""Running one function per item with a :class:`~explain_core.setup.Setup`, here or on a Dask cluster.

On a cluster the setup (model, reference, the rows it was built from) is sent to each worker once by a worker plugin
(a worker that restarts gets it again from the scheduler), never with a task; each task names a module-level
function and its small arguments. The plugin also sets the worker for numeric work while it is held (the allocator's
thresholds, Dask's sampling profiler paused); a LocalCluster started here imports the audit's code as its workers
start. In one process the same function is called in order. Audits
(:mod:`.run`) and the report command's fan-out (:func:`~explain_core.report.batch_reports`) both use it.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Callable, Iterator

import dask
import psutil
from distributed.diagnostics.plugin import WorkerPlugin

from ..allocator import GLIBC_MMAP_CEILING, hold_thresholds
from ..setup import Setup

_SETUP_PLUGIN = "explain-core-setup"
WORKER_PRELOAD = ("explain_core.audit.run",)  # what a partition's task imports (about 2 s), imported as a worker starts
PROFILER_CALLBACKS = ("profile", "profile-cycle")  # Dask's sampling profiler: the task thread's stack every 10 ms
ALLOCATOR_HEADROOM = 1 << 30  # a worker keeps Dask's trimming unless its memory limit leaves this much room


def undo_nanny_trim_threshold() -> bool:
    """Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also turns off glibc's rising mmap
    threshold: every array above 128 KiB is mapped and unmapped again, and a partition took 60× the page faults and
    1.6–1.7× the CPU of one process. Set the two thresholds where glibc's own rule would have taken them (32 MiB,
    twice that for trimming). True when they were set (Linux with glibc and the nanny's setting)."""
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        return False
    return hold_thresholds(GLIBC_MMAP_CEILING, 2 * GLIBC_MMAP_CEILING)


def pause_profiler(worker) -> list:
    """Stop Dask's sampling profiler on ``worker`` (it walks the running task's stack every 10 ms under the GIL: a
    partition took 8–14 % longer in a worker than in one process with it, 1–5 % without; ``bench/audit_scale.py``).
    Returns the callbacks stopped, to start again."""
    running = [worker.periodic_callbacks[name] for name in PROFILER_CALLBACKS
               if name in worker.periodic_callbacks and worker.periodic_callbacks[name].is_running()]
    for callback in running:
        callback.stop()
    return running


class _SetupPlugin(WorkerPlugin):
    """Holds the setup on every worker, whose allocator it first sets for numeric work, and pauses the worker's
    profiler while it is held."""

    def __init__(self, setup: Setup):
        self.held = setup
        self.paused: list = []

    def setup(self, worker) -> None:
        if _has_headroom(worker):
            undo_nanny_trim_threshold()
        self.paused = pause_profiler(worker)

    def teardown(self, worker) -> None:
        for callback in self.paused:
            callback.start()


def _has_headroom(worker) -> bool:
    """True when the worker has no memory limit, or one at least :data:`ALLOCATOR_HEADROOM` above its resident
    memory: freed memory kept for reuse must not reach Dask's pause threshold (80% of the limit)."""
    limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)
    if not limit:
        return True
    return limit - psutil.Process().memory_info().rss >= ALLOCATOR_HEADROOM


def local_cluster(workers: int | None = None, memory_limit: str | int = "auto"):
    """A LocalCluster of ``workers`` one-thread worker processes (default one per core; ``memory_limit`` each, as
    Dask reads it) that import this package's audit code as they start (:data:`WORKER_PRELOAD`): part of the
    cluster's start, not of the first partition each worker computes. Workers of a running cluster take
    ``dask worker --preload explain_core.audit.run``."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=workers or os.cpu_count(), threads_per_worker=1, processes=True,
                        dashboard_address=None, preload=list(WORKER_PRELOAD), memory_limit=memory_limit)


def _with_held_setup(fn: Callable, *args):
    """``fn(setup, *args)`` on a worker, with the setup its plugin holds."""
    from distributed import get_worker
    return fn(get_worker().plugins[_SETUP_PLUGIN].held, *args)


class Executor:
    """Context manager over where the work runs: ``scheduler`` None or ``"single"`` = this process, ``"local"`` = a
    LocalCluster of ``workers`` processes (default one per core) started and stopped here, any other value = the
    address of a running scheduler; or an existing ``client``."""

    def __init__(self, client=None, scheduler: str | None = None, workers: int | None = None):
        self.client, self.scheduler, self.workers = client, scheduler, workers
        self.owned = None

    def __enter__(self) -> "Executor":
        if self.client is None and self.scheduler not in (None, "single"):
            from distributed import Client
            if self.scheduler == "local":
                self.owned = local_cluster(self.workers)
            self.client = Client(self.owned or self.scheduler)
        workers = 0 if self.client is None else len(self.client.scheduler_info().get("workers", {}))
        self.name = "single process" if self.client is None else f"Dask cluster ({workers} workers)"
        return self

    def __exit__(self, *exc) -> None:
        if self.owned is not None:
            self.client.close()
            self.owned.close()

    def compute(self, values: list) -> list:
        """Delayed values, computed."""
        if self.client is None:
            return list(dask.compute(*values, scheduler="synchronous"))
        return self.client.gather(self.client.compute(values))

    def stream(self, setup: Setup, fn: Callable, items: dict, progress: bool = False,
               unit: str = "items") -> Iterator[tuple]:
        """(key, ``fn(setup, *items[key])``) for every key, as they finish (delayed arguments are computed first,
        on the worker). ``progress``: Dask's bar on a cluster, a counter here."""
        if self.client is None:
            for n, (key, args) in enumerate(items.items(), 1):
                yield key, fn(setup, *dask.compute(*args, scheduler="synchronous"))
                if progress:
                    print(f"\r{unit}: {n} of {len(items)}", end="\n" if n == len(items) else "", file=sys.stderr,
                          flush=True)
            return
        from distributed import as_completed

        self.client.register_plugin(_SetupPlugin(setup), name=_SETUP_PLUGIN)
        futures = self.client.compute([dask.delayed(_with_held_setup, pure=False)(fn, *args)
                                       for args in items.values()])
        keys = {f.key: key for f, key in zip(futures, items)}
        if progress and futures:
            from distributed import progress as bar
            threading.Thread(target=bar, args=(futures,), kwargs={"notebook": False}, daemon=True).start()
        try:
            for future in as_completed(futures):
                yield keys[future.key], future.result()
                future.release()
        finally:
            for future in futures:
                future.cancel()
            self.client.unregister_worker_plugin(_SETUP_PLUGIN)
