#!/usr/bin/env python
"""Speed of the Cohorts & fairness views on Adult (gradient boosting, 6,513 test rows), as the page computes them.

Timed, each as a median of ``--repeats`` runs (the demo model trained / read from its cache first, untimed):

* **comparison of two cohorts** (``compare_cohorts``: "age < 30" and "misclassified", the page's default budget of
  100 rows per cohort for SEV⁻ with every explanation, SEV⁺ first flip and mean |SHAP|);
* **fairness** over the data card's protected features (``fairness_report``: age (binned), sex, race, native
  country; the SEV share over 200 test rows);
* **error tree** (``error_tree``: depth 3 on every test row).

The load average (``os.getloadavg``) is printed at the start and the end. Target (issue 30): ≤ 2 s each on this
2-core machine.

Run from the repository root:  PYTHONPATH=$PWD python bench/cohort_speed.py [--repeats 5] [--budget 100]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from explain_core.analysis import Parameters, demo_setup
from explain_core.inspection.cohorts import compare_cohorts
from explain_core.inspection.filters import MISCLASSIFIED, Cohort, Filter
from explain_core.inspection.errors import error_tree
from explain_core.inspection.fairness import SEV_BUDGET, fairness_report

TARGET_S = 2.0


def median_seconds(run, repeats: int) -> tuple[float, float, float]:
    """(median, min, max) seconds of ``repeats`` calls of ``run``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), min(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=int, default=100, help="rows per cohort for SEV and SHAP")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    setup = demo_setup("adult", "gbdt")
    sev = Parameters().sev
    cohorts = [Cohort("under 30", (Filter("age", "<", 30),)), Cohort("misclassified", (Filter(MISCLASSIFIED, "=", 1),))]
    runs = {"comparison of two cohorts": lambda: compare_cohorts(setup, cohorts, sev, budget=args.budget),
            "fairness over the protected features": lambda: fairness_report(setup, sev, sev_budget=SEV_BUDGET),
            "error tree": lambda: error_tree(setup)}
    print(f"Adult, {setup.model.name}: {len(setup.test_rows):,} test rows; protected "
          f"{', '.join(setup.dataset.restricted_suggestion)}; budget {args.budget} rows per cohort; "
          f"{args.repeats} repeats")
    for name, run in runs.items():
        run()  # warm: imports, SHAP's explainer, the tree reader
        med, low, high = median_seconds(run, args.repeats)
        verdict = "ok" if med <= TARGET_S else "MISSED"
        print(f"{name}: median {med:.2f} s (min {low:.2f}, max {high:.2f}) — target ≤ {TARGET_S:g} s: {verdict}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
