#!/usr/bin/env python
"""Speed of the model page's partial dependence and interactions section (issue 30) on Adult.

For each model kind (GBDT: SHAP interaction values of its trees; MLP: the H-statistic estimate from partial
dependence; ``upload``: the GBDT demo model uploaded as a .skops file, so every call goes to its sandboxed worker)
this times, with the page's budgets, the PDP + ICE of one feature (500 test rows × its grid, 100 ICE
lines, the chosen row's line: one adapter call), the 2-D PDP of a pair, and the interaction matrix (200 test rows
for SHAP; the H-statistic on ≤ 40 rows, ≤ 150,000 model rows). Each is run ``--repeats`` times after a warm-up
(the first call imports shap and builds the explainer) and its median printed, with the load average at the start
and the end. Target: each ≤ 2 s on this 2-core machine.

Run from the repository root:  PYTHONPATH=$PWD python bench/dependence_speed.py [--kinds gbdt mlp] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from explain_core.analysis import demo_setup
from explain_core.inspection import interactions, partial_dependence

TARGET_SECONDS = 2.0


def median_seconds(function, repeats: int) -> float:
    function()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def uploaded_gbdt(dataset: str):
    """The GBDT demo model written as .skops and uploaded: scored and read in its sandboxed worker."""
    import skops.io as sio

    from explain_core.setup import UploadChoices, make_setup, model_from_upload

    demo = demo_setup(dataset, "gbdt")
    return make_setup(demo.dataset, model_from_upload(demo.dataset, sio.dumps(demo.model.estimator), "gbdt.skops",
                                                      UploadChoices(positive_class=demo.model.positive_class)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--kinds", nargs="+", default=["gbdt", "mlp", "upload"])
    parser.add_argument("--feature", default="age")
    parser.add_argument("--pair", default="hours_per_week")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"load average at the start: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    verdicts = []
    for kind in args.kinds:
        setup = uploaded_gbdt(args.dataset) if kind == "upload" else demo_setup(args.dataset, kind)
        row = int(setup.test_rows[0])
        jobs = {f"PDP + ICE of {args.feature}": lambda: partial_dependence(setup, [args.feature], row=row),
                f"2-D PDP of {args.feature} × {args.pair}":
                    lambda: partial_dependence(setup, [args.feature, args.pair], row=row),
                "interaction matrix": lambda: interactions(setup)}
        method = interactions(setup).method
        for name, job in jobs.items():
            seconds = median_seconds(job, args.repeats)
            verdicts.append(seconds <= TARGET_SECONDS)
            extra = f" ({method})" if name == "interaction matrix" else ""
            print(f"{args.dataset} {kind:5s} {name}{extra}: median {seconds:.3f} s over {args.repeats} runs "
                  f"({'within' if seconds <= TARGET_SECONDS else 'OVER'} the {TARGET_SECONDS:g} s target)")
    print(f"load average at the end: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print("verdict:", "every median within target" if all(verdicts) else "some medians over target")


if __name__ == "__main__":
    main()
