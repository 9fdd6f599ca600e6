"""How long an uploaded model waits for its sandboxed worker (issue 25): a worker spawned as a fresh ``python -I -B``
(the path before the zygote, and the path where there is no ``os.pidfd_open``) against one forked by the server's
zygote (:mod:`explain_core.intake.sandbox.zygote`), taken in turns.

Per start: the worker up and confined (``Worker``), then the COMPAS GBDT demo (``.skops``) loaded in it and one
``predict_proba`` of 5 rows: what an upload or a restart after an idle stop or a crash waits for. Medians of the
wall time and of the worker's own CPU time (read from ``/proc`` before it stops), the ratio in the same run; the
zygote's own start (its first worker) is printed apart.

    python bench/worker_start.py --starts 10
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import skops.io as sio

from explain_core import demo_model, load_demo
from explain_core.intake.sandbox import client, zygote
from explain_core.intake.sandbox.model import ModelFile
from explain_core.limits import limits


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_start(forked: bool, blob: bytes, rows) -> tuple[float, float]:
    """(wall s, worker CPU s) of a worker started, the model loaded and 5 rows scored."""
    client.AVAILABLE = forked  # the spawn path is the one taken where there is no zygote
    started = time.perf_counter()
    worker = client.Worker(limits().model_memory_mb, limits().model_seconds)
    worker.call(ModelFile(blob, ".skops", "gbdt.skops").request(), seconds=60, what="loading")
    worker.call({"op": "call", "stage": "model", "method": "predict_proba", "X": rows}, seconds=60, what="scoring")
    wall = time.perf_counter() - started
    cpu = cpu_seconds(worker.process.pid)
    worker.close()
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=10)
    args = parser.parse_args()
    data = load_demo("compas")
    trained = demo_model(data, "gbdt")
    blob, rows = sio.dumps(trained.model.estimator), data.features.iloc[:5]
    print(f"load average at the start {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    first = one_start(True, blob, rows)
    print(f"zygote's first worker (the zygote's own start included): {first[0]:.2f} s")
    results: dict[bool, list] = {True: [], False: []}
    for _ in range(args.starts):
        for forked in (False, True):
            results[forked].append(one_start(forked, blob, rows))
    for forked, name in ((False, "spawned"), (True, "forked by the zygote")):
        walls, cpus = zip(*results[forked])
        print(f"{name:>22}: wall {statistics.median(walls) * 1000:7.0f} ms, worker CPU "
              f"{statistics.median(cpus) * 1000:6.0f} ms (median of {args.starts})")
    ratio = statistics.median(w for w, _ in results[False]) / statistics.median(w for w, _ in results[True])
    print(f"spawned ÷ forked, wall: {ratio:.1f}×; zygote alive: {zygote._ZYGOTE[0].alive}")
    print(f"load average at the end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
