#!/usr/bin/env python
"""Speed of the exact SEV engine of ReLU networks (issue 52, item 1) against a plain MIP of the same network, in one
run.

Cases (scikit-learn's bundled data, never downloaded; each MLP behind a StandardScaler, fitted on 70 % of the rows):
digits 3 vs 8 (64 pixels) × MLP with one hidden layer of 64; breast cancer (30 features) × MLP with one hidden layer
of 64; breast cancer × MLP with two hidden layers (32, 16). The reference is the library's default (the mean of the
training rows of the other class, whole-valued features rounded); the rows are test rows the model predicts
positive. For each row, SEV⁻ certified (the minimum proven, one explanation: ``cap=1``) by

- **engine**: ``exact_sev_batch`` (first layers on the network, greedy incumbent, the tuned MIP);
- **auto**: ``sev_results(method="auto")`` (the BFS's first layers, then the engine), what the pages run;
- **anchor SCIP**: the straightforward model of the same network as the issue describes it (one binary per feature
  group and per hidden unit, interval-arithmetic big-M bounds, the fewest moved groups such that the logit crosses the
  threshold; no incumbent, no layers) in SCIP (one thread, seed 0), each answer re-checked by the model;
- **anchor HiGHS**: the same straightforward model in HiGHS — the stronger anchor here (SCIP's root cut rounds
  cost it seconds on these models), so the engine's speed-up is read against it too.

Printed: the share certified, median and worst seconds a row, and each anchor / engine ratio of medians (all measured
in this run, row by row, on the same machine state); the load average beside every case (the machine is shared).

Run from the repository root:  python bench/sev_relu.py [--rows 20] [--budget 500] [--anchors scip highs]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's explain_core

from explain_core import make_reference
from explain_core.intake.data import make_dataset
from explain_core.intake.models import wrap_model
from explain_core.sev import SEVParameters, SEVRequest, sev_results
from explain_core.sev.exact_sev import ExactSearch, exact_engine, exact_sev_batch, prepare, vertex_rows
from explain_core.sev.relu import ReluProblem
from explain_core.sev.relu_mip import prove


def load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def case(name: str):
    """The dataset, the fitted model, the training rows and the test rows."""
    if name.startswith("digits"):
        bunch = load_digits()
        keep = np.isin(bunch.target, [3, 8])
        X, y = bunch.data[keep], (bunch.target[keep] == 8).astype(int)
        columns = [f"pixel_{i}" for i in range(X.shape[1])]
    else:
        bunch = load_breast_cancer()
        X, y, columns = bunch.data, 1 - bunch.target, [str(c) for c in bunch.feature_names]  # 1 = malignant
    frame = pd.DataFrame(X, columns=columns).assign(y=y)
    data = make_dataset(frame, "y")
    train, test = train_test_split(np.arange(len(frame)), test_size=0.3, random_state=0, stratify=y)
    hidden = (32, 16) if name.endswith("2 layers") else (64,)
    net = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=hidden, max_iter=1000, random_state=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net.fit(data.features.iloc[train], np.asarray(data.y)[train])
    return data, wrap_model(net, data), train, test


def anchor(engine, prepared, i: int, reference, budget: float, solver: str):
    """The plain MIP of row ``i``'s SEV⁻ problem (as the engine poses it) in ``solver``, each solution re-checked by
    the model."""
    model, layout, cal = engine.model, engine.layout, prepared.cal
    read, c = cal.read, int(prepared.classes[i])
    xq, xr = cal.inputs[i], cal.inputs[len(prepared.queries)]
    same = np.ones(layout.size, dtype=bool)
    np.logical_and.at(same, read.feature_group, xq == xr)
    raw_star, tol = read.output.raw_threshold(model.threshold), read.tolerance(model.threshold)
    problem = ReluProblem(read.structure, read.feature_group, xq, xr, np.where(same, 1, 2),
                          (1 - c == 1) == (read.output.scale > 0), raw_star, tol)

    def rescore(choices):
        masks = np.array([ch == 0 for ch in choices], dtype=bool).reshape(-1, layout.size)
        rows = vertex_rows(layout, prepared.queries.iloc[[i]], reference, masks)
        return model.labels_of(model.score(rows)) == 1 - c

    return prove(problem, rescore, None, 0, budget, True, solver)


def run(name: str, rows: int, budget: float, verbose: bool, anchors: list[str]) -> None:
    data, model, train, test = case(name)
    reference = make_reference(data, train)
    queries = data.features.iloc[test]
    queries = queries[model.label(queries) == 1].iloc[:rows].reset_index(drop=True)
    engine = exact_engine(model, data.layout)
    prepared = prepare(engine, queries, reference)
    print(f"\n## {name}: {data.layout.size} groups, {len(queries)} test rows predicted positive — {load()}")
    times = {"engine": [], "auto": [], **{f"anchor {s}": [] for s in anchors}}
    certified = {k: 0 for k in times}
    values = []
    for i in range(len(queries)):
        row = queries.iloc[[i]]
        t = time.perf_counter()
        ours = exact_sev_batch(engine, row, reference, ExactSearch(budget=budget, cap=1, keep_scores=False))[0]
        times["engine"].append(time.perf_counter() - t)
        t = time.perf_counter()
        auto = sev_results(model, data.layout, row, reference, SEVRequest(explanations="first", keep_scores=False),
                           options=SEVParameters(sev_budget=budget))[0]
        times["auto"].append(time.perf_counter() - t)
        certified["engine"] += ours.certified
        certified["auto"] += auto.certified and auto.status != "beyond_depth"
        for solver in anchors:
            t = time.perf_counter()
            plain = anchor(engine, prepared, i, reference, budget, solver)
            times[f"anchor {solver}"].append(time.perf_counter() - t)
            certified[f"anchor {solver}"] += plain.status != "limit reached"
            if ours.certified and plain.status != "limit reached":
                assert ours.value == plain.value == (auto.value if auto.certified else ours.value), (i, ours, plain)
        values.append(ours.value)
        if verbose:
            print(f"  row {i}: SEV⁻ {ours.value} ({ours.engine}, certified {ours.certified}); "
                  + ", ".join(f"{k} {ts[-1]:.2f} s" for k, ts in times.items()), flush=True)
    print(f"SEV⁻ values: {values}")
    for key, ts in times.items():
        print(f"{key:>12}: certified {certified[key]}/{len(queries)} ({100 * certified[key] / len(queries):.0f} %), "
              f"median {np.median(ts):.3f} s, worst {np.max(ts):.3f} s a row")
    for solver in anchors:
        ts = np.median(times[f"anchor {solver}"])
        print(f"anchor {solver} / engine (medians): {ts / np.median(times['engine']):.1f}×; "
              f"anchor {solver} / auto: {ts / np.median(times['auto']):.1f}×")
    print(load())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--budget", type=float, default=500.0,
                        help="the exact budget per search, for the engine and the anchors alike (default 500 = 10,000 "
                             "branch-and-bound nodes, enough to certify every row here; the library's default, 10, "
                             "is 200 nodes: a hard row gets its bracket)")
    parser.add_argument("--verbose", action="store_true", help="one line a row")
    parser.add_argument("--anchors", nargs="*", default=["scip", "highs"], choices=["scip", "highs"])
    parser.add_argument("--cases", nargs="*", default=["digits 3 vs 8", "breast cancer", "breast cancer 2 layers"])
    args = parser.parse_args()
    with threadpool_limits(1):
        for name in args.cases:
            run(name, args.rows, args.budget, args.verbose, args.anchors)


if __name__ == "__main__":
    main()
