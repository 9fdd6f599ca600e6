#!/usr/bin/env python
"""Seconds for the decision-threshold and two-model views (issue 30) on Adult's GBDT demo model.

Timed, each as the median of ``--repeats`` runs (a different threshold each run, so nothing is reused):

* **sweep**: ``threshold_sweep`` (one scoring of the test rows, 41 quantiles + the current threshold, every count);
* **with_threshold**: ``Setup.with_threshold`` (the adapter, the key, the metrics on train and test rows; Adult is a
  classification, whose opposite-class reference is the true class, so the reference is kept);
* **with_threshold, regression**: the same on California housing's GBDT, where the opposite-side reference is rebuilt;
* **two models**: ``compare_models`` of the GBDT and the L2 logistic regression on Adult's test rows, with one row's
  SEV and SHAP under both (a different row each run). The second model is loaded before timing: training it (once,
  then cached on disk) is not counted.

The load average (1, 5, 15 min) is printed at the start and the end. Target (issue 30): ≤ 2 s each.

Run from the repository root:  python bench/threshold_speed.py [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

TARGET_S = 2.0


def median_seconds(run, arguments) -> float:
    times = []
    for argument in arguments:
        start = time.perf_counter()
        run(argument)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per median (default 5)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from explain_core.analysis import Parameters, demo_setup
    from explain_core.inspection.threshold import threshold_sweep
    from explain_core.inspection.two_models import compare_models

    print("load average at the start: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    adult, second = demo_setup("adult", "gbdt"), demo_setup("adult", "l2_lr")
    housing = demo_setup("california_housing", "gbdt")
    thresholds = [0.2 + 0.1 * i for i in range(args.repeats)]
    cuts = [housing.model.threshold * (0.8 + 0.1 * i) for i in range(args.repeats)]
    rows = [int(r) for r in adult.test_rows[: args.repeats]]
    print(f"adult · {adult.model.name} · {len(adult.test_rows):,} test rows of {len(adult.dataset.features):,}; "
          f"second model {second.model.name}; medians of {args.repeats} runs\n")
    figures = {
        "sweep": median_seconds(lambda t: threshold_sweep(adult, also=(t,)), thresholds),
        "with_threshold (metrics; reference kept)": median_seconds(adult.with_threshold, thresholds),
        "with_threshold, regression (metrics + reference)": median_seconds(housing.with_threshold, cuts),
        "two models (metrics, disagreements, one row's SEV + SHAP)":
            median_seconds(lambda r: compare_models(adult, second, r, Parameters()), rows),
    }
    for name, seconds in figures.items():
        print(f"{name:<60} {seconds:6.3f} s  {'ok' if seconds <= TARGET_S else 'OVER'} (target ≤ {TARGET_S:g} s)")
    print("\nload average at the end: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    over = [name for name, seconds in figures.items() if seconds > TARGET_S]
    print("verdict: " + ("every view within the target" if not over else f"over the target: {', '.join(over)}"))
    return 0 if not over else 1


if __name__ == "__main__":
    raise SystemExit(main())
