"""What the sandbox costs an uploaded model (issue 25): SEV of one row (SEV⁻, SEV⁺: ``explain_sev``, the SEV page's
call) with the model in its sandboxed worker, against the very same fitted model in the server's process.

The models: the COMPAS and Adult demo GBDT and L2 logistic regression (uploaded as .skops: a two-step Pipeline, so
hypercube vertices are mixed here as encoded arrays and only the final step scores them in the worker), and an
XGBoost and a LightGBM model in their own file formats (raw columns cross the pipe). Per model: the median over
the first 40 test rows the model predicts positive (each row explained 3 times, the fastest kept), the ratio
sandboxed / in-process (target ≤ 1.2), the model calls per row, and the worker's start (spawn to loaded).

    python bench/sandbox_overhead.py
"""
from __future__ import annotations

import os
import statistics
import time

import numpy as np

from explain_core.analysis import demo_setup
from explain_core.intake.data import make_dataset
from explain_core.intake.sandbox import model as sandboxed
from explain_core.setup import make_setup, model_from_upload
from explain_core.sev.engine import explain_sev

ROWS, REPEATS = 40, 3


def booster_file(setup, library: str) -> tuple[bytes, str, object]:
    """An XGBoost / LightGBM model fitted on the setup's raw numeric columns, as its own file's bytes."""
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
            return open(path, "rb").read(), "m.json", X.columns
    model = lightgbm.LGBMClassifier(n_estimators=100, num_leaves=15, verbose=-1, n_jobs=1).fit(X, y)
    return model.booster_.model_to_string().encode(), "m.txt", X.columns


def per_row(setup, rows) -> float:
    times = []
    for row in rows:
        query = setup.dataset.features.iloc[[int(row)]]
        reference = setup.reference_for(query)
        best = np.inf
        for _ in range(REPEATS):
            start = time.perf_counter()
            explain_sev(setup.model, setup.dataset, query, reference)
            best = min(best, time.perf_counter() - start)
        times.append(best)
    return statistics.median(times)


def calls_per_row(setup, rows) -> float:
    count = [0]
    original = sandboxed.SandboxedModel.request

    def counting(self, request, what):
        count[0] += 1
        return original(self, request, what)
    sandboxed.SandboxedModel.request = counting
    try:
        per_row(setup, rows[:5])
    finally:
        sandboxed.SandboxedModel.request = original
    return count[0] / (5 * REPEATS)


def compare(name: str, local, blob: bytes, filename: str, positive=None) -> None:
    import skops.io  # noqa: F401 — imported before the clock starts, as a running server has it

    start = time.perf_counter()
    trained = model_from_upload(local.dataset, blob, filename, positive_class=positive)
    uploaded = make_setup(local.dataset, trained, reference=local.reference)
    started = time.perf_counter() - start
    rows = [r for r in uploaded.test_rows if uploaded.model.label(uploaded.dataset.features.iloc[[int(r)]])[0] == 1]
    rows = rows[:ROWS]
    per_row(uploaded, rows[:3]), per_row(local, rows[:3])  # warm both (encodings, caches)
    inside, outside = per_row(uploaded, rows), per_row(local, rows)
    print(f"{name:<28} {outside * 1e3:>9.2f} ms {inside * 1e3:>10.2f} ms {inside / outside:>7.2f}× "
          f"{calls_per_row(uploaded, rows):>6.1f} {started:>8.2f} s")


def main() -> None:
    import skops.io as sio

    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} (1, 5, 15 min) on {os.cpu_count()} cores")
    print(f"{'model':<28} {'in process':>12} {'sandboxed':>13} {'ratio':>8} {'calls':>6} {'start':>10}")
    for dataset in ("compas", "adult"):
        for kind in ("gbdt", "l2_lr"):
            local = demo_setup(dataset, kind)
            compare(f"{dataset} {kind} (.skops)", local, sio.dumps(local.model.estimator), f"{kind}.skops", 1)
        base = demo_setup(dataset, "gbdt")
        for library in ("xgboost", "lightgbm"):
            blob, filename, columns = booster_file(base, library)
            data = base.dataset
            frame = data.features[list(columns)].assign(**{str(data.target.name): data.target})
            numeric = make_dataset(frame, str(data.target.name), positive_class=data.positive_class, name=data.name)
            compare(f"{dataset} {library} (.{filename.split('.')[1]})", _in_process(numeric, blob, filename), blob,
                    filename, positive=1)
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} at the end")


def _in_process(dataset, blob: bytes, filename: str):
    """A setup with the booster loaded in this process (what the server did before the sandbox)."""
    from dataclasses import replace

    from explain_core.intake.boosters import load_native
    from explain_core.intake.models import wrap_model

    setup = make_setup(dataset, model_from_upload(dataset, blob, filename, positive_class=1))
    return replace(setup, model=wrap_model(load_native(blob, "." + filename.split(".")[1], filename), dataset,
                                           positive_class=1, name=filename))


if __name__ == "__main__":
    main()
