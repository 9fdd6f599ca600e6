"""What the sandbox costs an uploaded model (issue 25): SEV of one row (SEV⁻, SEV⁺: ``explain_sev``, the SEV page's
call) with the model in its sandboxed worker, against the very same fitted model in the server's process.

The models: the COMPAS and Adult demo GBDT and L2 logistic regression (uploaded as .skops: a two-step Pipeline, so
hypercube vertices are mixed here as encoded arrays and only the final step scores them in the worker), and an
XGBoost and a LightGBM model in their own file formats (they read the raw columns as one float matrix, so
vertices cross compact too; in process they are split the same way). Per model: the median over
the first 40 test rows the model predicts positive (each row explained 5 times on each side, in turns, the fastest
kept), the ratio sandboxed / in-process (target ≤ 1.2), the worker requests per row, and the worker's start
(spawn to loaded). Below the table, the floor any process boundary costs on this machine: a pipe's round trip
between two Python processes, and a model call made after a pause (the worker sleeps between requests; its caches
and its core cool down) against one made in a tight loop.

    python bench/sandbox_overhead.py            # every model, 40 rows
    python bench/sandbox_overhead.py --quick    # COMPAS's three models, 15 rows, no floor: for before/after runs,
                                                # e.g. this file with PYTHONPATH at an older checkout, then at this one
    python bench/sandbox_overhead.py --quick --loads 0,4,8   # the same under N busy background processes each

``--loads`` (issue 54): for each N, N background processes each spinning on a seeded numpy computation (a server
with N busy analysts) run while both sides are timed; the ratio at each N is printed in the same run, with the load
average measured during it.
"""
from __future__ import annotations

import os
import statistics
import time

import numpy as np

from explain_core.analysis import demo_setup
from explain_core.intake.data import make_dataset
from explain_core.intake.sandbox import model as sandboxed
from explain_core.setup import UploadChoices, make_setup, model_from_upload
from explain_core.sev.engine import explain_sev

ROWS, REPEATS = 40, 5


def booster_file(setup, library: str) -> tuple[bytes, str, object, object]:
    """An XGBoost / LightGBM model fitted on the setup's raw numeric columns, as its own file's bytes, with its
    columns and the fitted scikit-learn model."""
    import tempfile

    import lightgbm
    import xgboost

    data = setup.dataset
    X = data.features.select_dtypes("number")
    y = data.y
    if library == "xgboost":
        model = xgboost.XGBClassifier(n_estimators=100, max_depth=4, n_jobs=1).fit(X, y)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "m.json")
            model.get_booster().save_model(path)
            return open(path, "rb").read(), "m.json", X.columns, model
    model = lightgbm.LGBMClassifier(n_estimators=100, num_leaves=15, verbose=-1, n_jobs=1).fit(X, y)
    return model.booster_.model_to_string().encode(), "m.txt", X.columns, model


def timed(setup, query, reference) -> float:
    start = time.perf_counter()
    explain_sev(setup.model, setup.dataset, query, reference)
    return time.perf_counter() - start


def paired(local, uploaded, rows) -> tuple[float, float]:
    """Median over rows of the fastest of REPEATS explanations, in process and sandboxed, taken in turns row by
    row (the machine's speed drifts: the two sides see the same drift)."""
    inside, outside = [], []
    for row in rows:
        query = local.dataset.features.iloc[[int(row)]]
        pair = (local.reference_for(query), uploaded.reference_for(query))
        best = [np.inf, np.inf]
        for _ in range(REPEATS):
            for side, setup in enumerate((local, uploaded)):
                best[side] = min(best[side], timed(setup, query, pair[side]))
        outside.append(best[0])
        inside.append(best[1])
    return statistics.median(outside), statistics.median(inside)


def calls_per_row(setup, rows) -> float:
    """Worker requests of one explanation (SEV⁻ and SEV⁺; the reference is read before counting)."""
    count = [0]
    original = sandboxed.SandboxedModel.request

    def counting(self, request, what, *bound):
        count[0] += 1
        return original(self, request, what, *bound)
    queries = [setup.dataset.features.iloc[[int(row)]] for row in rows]
    references = [setup.reference_for(query) for query in queries]
    sandboxed.SandboxedModel.request = counting
    try:
        for query, reference in zip(queries, references):
            timed(setup, query, reference)
    finally:
        sandboxed.SandboxedModel.request = original
    return count[0] / len(rows)


def compare(name: str, local, blob: bytes, filename: str, positive=None) -> None:
    import skops.io  # noqa: F401 — imported before the clock starts, as a running server has it

    start = time.perf_counter()
    trained = model_from_upload(local.dataset, blob, filename, UploadChoices(positive_class=positive))
    uploaded = make_setup(local.dataset, trained, reference=local.reference)
    started = time.perf_counter() - start
    rows = [r for r in uploaded.test_rows if uploaded.model.label(uploaded.dataset.features.iloc[[int(r)]])[0] == 1]
    rows = rows[:ROWS]
    paired(local, uploaded, rows[:3])  # warm both (encodings, caches)
    outside, inside = paired(local, uploaded, rows)
    print(f"{name:<28} {outside * 1e3:>9.2f} ms {inside * 1e3:>10.2f} ms {inside / outside:>7.2f}× "
          f"{calls_per_row(uploaded, rows):>6.1f} {started:>8.2f} s")


def _busy(seed: int) -> None:
    """One background process's work: seeded matrix products until it is stopped (or its parent is gone)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((64, 64))
    parent = os.getppid()
    while os.getppid() == parent:
        for _ in range(100):
            a = np.tanh(a @ a.T / 64.0 + rng.standard_normal((64, 64)) * 1e-3)


def loaded(count: int) -> list:
    """``count`` background processes running :func:`_busy` (seeds 0 … count-1), one thread each."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_busy, args=(seed,), daemon=True) for seed in range(count)]
    for worker in workers:
        worker.start()
    time.sleep(5.0 if count else 0.0)  # the load average follows; the processes are running at once
    return workers


ECHO = "import os\nwhile True:\n    b = os.read(0, 65536)\n    if not b: break\n    os.write(1, b)"


def floor() -> None:
    """The process boundary's own cost here: a pipe round trip, and a model call after a pause."""
    import select
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    trips = []
    for _ in range(3000):
        start = time.perf_counter()
        os.write(child.stdin.fileno(), b"12345678")
        select.select([child.stdout.fileno()], [], [], 1.0)
        os.read(child.stdout.fileno(), 64)
        trips.append(time.perf_counter() - start)
    child.stdin.close()
    child.wait()
    setup = demo_setup("compas", "gbdt")
    final, X = setup.model.estimator[-1], setup.model.estimator[0].transform(setup.dataset.features.iloc[:58])

    def call_after(pause: float) -> float:
        times = []
        for _ in range(1000):
            time.sleep(pause)
            start = time.perf_counter()
            final.predict_proba(X)
            times.append(time.perf_counter() - start)
        return statistics.median(times)
    print(f"floor: pipe round trip {statistics.median(trips) * 1e6:.0f} µs; COMPAS GBDT on 58 rows "
          f"{call_after(0) * 1e6:.0f} µs in a loop, {call_after(0.0005) * 1e6:.0f} µs after a 0.5 ms pause")


def main() -> None:
    import sys

    import skops.io as sio

    global ROWS
    args = sys.argv[1:]
    quick = "--quick" in args
    ROWS = 15 if quick else ROWS
    loads = [int(n) for n in args[args.index("--loads") + 1].split(",")] if "--loads" in args else [0]
    import explain_core

    print(f"explain_core from {os.path.dirname(explain_core.__file__)}")
    for count in loads:
        background = loaded(count)
        try:
            print(f"\n{count} background processes; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
                  f"(1, 5, 15 min) on {os.cpu_count()} cores")
            models(quick, sio)
        finally:
            for worker in background:
                worker.terminate()
                worker.join()
    if not quick:
        floor()
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} at the end")


def models(quick: bool, sio) -> None:
    """The table: each model in process and sandboxed."""
    print(f"{'model':<28} {'in process':>12} {'sandboxed':>13} {'ratio':>8} {'calls':>6} {'start':>10}")
    for dataset in ("compas",) if quick else ("compas", "adult"):
        for kind in ("gbdt", "l2_lr"):
            local = demo_setup(dataset, kind)
            compare(f"{dataset} {kind} (.skops)", local, sio.dumps(local.model.estimator), f"{kind}.skops", 1)
        base = demo_setup(dataset, "gbdt")
        for library in ("xgboost",) if quick else ("xgboost", "lightgbm"):
            blob, filename, columns, fitted = booster_file(base, library)
            data = base.dataset
            frame = data.features[list(columns)].assign(**{str(data.target.name): data.target})
            numeric = make_dataset(frame, str(data.target.name), positive_class=data.positive_class, name=data.name)
            local = _in_process(numeric, blob, filename)
            compare(f"{dataset} {library} (.{filename.split('.')[1]})", local, blob, filename, positive=1)
            if library == "xgboost":  # the scikit-learn model itself wrapped in process, against its booster uploaded
                compare(f"{dataset} XGBClassifier wrapped", _wrapped(local, fitted), blob, filename, positive=1)
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} after the table")


def _in_process(dataset, blob: bytes, filename: str):
    """A setup with the booster loaded in this process, split as in its worker (the raw columns as floats, fed
    compact), so that the ratio is the sandbox's cost alone."""
    from dataclasses import replace

    from explain_core.intake.boosters import load_native
    from explain_core.intake.models import wrap_model

    setup = make_setup(dataset, model_from_upload(dataset, blob, filename, UploadChoices(positive_class=1)))
    return replace(setup, model=wrap_model(load_native(blob, "." + filename.split(".")[1], filename), dataset,
                                           positive_class=1, name=filename))


def _wrapped(setup, fitted):
    """The setup with the fitted scikit-learn model wrapped in process as a user's own model is."""
    from dataclasses import replace

    from explain_core.intake.models import wrap_model

    return replace(setup, model=wrap_model(fitted, setup.dataset, positive_class=1, name="XGBClassifier"))


if __name__ == "__main__":
    main()
