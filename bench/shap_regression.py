#!/usr/bin/env python
"""SHAP of the California housing demos (regressors on a standardised target): the exact explainers beside the
permutation estimate they replaced.

For the GBDT and the ridge demo (a ``TransformedTargetRegressor`` with a ``StandardScaler``), ``explain_shap`` takes
SHAP's TreeExplainer / LinearExplainer of the inner regressor, scaled back to dollars; before, it took SHAP's
PermutationExplainer of the pipeline's predictions (``baselines._permutation_shap``, still the path of the MLP demo).
Both run here on the same rows against the same seeded 100-row background: the median seconds per row (after one
warm-up row each, so shap's import and numba's kernels are not counted), the ratio, and how far the permutation
estimate lies from the exact values (the largest |difference| over the rows, in dollars and as a share of the
target's standard deviation). The load average (1, 5, 15 min) is printed at the start and the end.

Run from the repository root:  python bench/shap_regression.py [--rows 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def timed(run, rows) -> tuple[float, np.ndarray]:
    """Median seconds per row of ``run(row)`` over ``rows[1:]`` (``rows[0]`` warms up), and their values."""
    run(rows[0])
    times, values = [], []
    for row in rows[1:]:
        start = time.perf_counter()
        values.append(run(row))
        times.append(time.perf_counter() - start)
    return statistics.median(times), np.array(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20, help="test rows explained (default 20)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from explain_core.analysis import demo_setup
    from explain_core.baselines import _permutation_shap, explain_shap

    print("load average at the start: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    for kind in ("gbdt", "l2_lr"):
        setup = demo_setup("california_housing", kind)
        data, model = setup.dataset, setup.model
        rows = [int(r) for r in setup.test_rows[: args.rows + 1]]
        background = data.features.iloc[np.random.default_rng(0).choice(np.asarray(setup.train_rows), 100,
                                                                        replace=False)]
        query = lambda row: data.features.iloc[[row]]  # noqa: E731
        exact_s, exact = timed(lambda row: explain_shap(model, data, query(row), setup.train_rows).values, rows)
        name = explain_shap(model, data, query(rows[0]), setup.train_rows).explainer.split(" (")[0]
        perm_s, perm = timed(lambda row: _permutation_shap(model, data, query(row)[data.columns], background, 0)[0][0],
                             rows)
        gap = np.abs(perm - exact).max()
        print(f"california_housing · {model.name}: {name} {exact_s * 1000:.1f} ms per row, PermutationExplainer "
              f"{perm_s * 1000:.1f} ms ({perm_s / exact_s:.1f}×; medians of {len(rows) - 1} rows); the permutation "
              f"estimate's largest gap from the exact values ${gap:,.0f} ({gap / data.y.std():.2%} of the target's "
              "standard deviation)")
    print("load average at the end: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
