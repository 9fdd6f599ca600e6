#!/usr/bin/env python
"""Speed of the exact SEV engines (issue 27) against the breadth-first search, in one run.

1. **Demos (p ≤ 12)**: the COMPAS GBDT, XGBoost and LightGBM demo models; SEV⁻ of the test rows each predicts
   positive, one row at a time and dataset-wide, by the BFS (full depth) and by the exact engine (``method="exact"``):
   medians and the ratio, so ``auto`` keeps the faster one there.
2. **Wide models**: XGBoost and LightGBM, 200 trees of depth 4-6, on synthetic data with known structure (100 and
   300 features, the label a noisy sum of 40 of them plus an interaction) and on scikit-learn's 30-feature
   breast-cancer data. Per row, SEV⁻ certified (the minimum proven, one explanation: ``cap=1``) and SEV⁻ with every
   minimal explanation listed (up to 256, within a further budget): median, p95, the share certified, the share
   within 10 s; and the BFS on the same rows (its default depth 6 and layer cap), with what it answers.
3. **By SEV⁻ value** (``--hard-rows``): the issue's scale point, a 150-feature 200-tree depth-5 XGBoost, on its most
   confident positive rows (the longest explanations): time to certify by value.
4. **Dataset-wide on Dask** (``--dask-rows``): an audit (SEV⁻ and SEV⁺ of every row, ``method="auto"``) of rows of
   the 100-feature XGBoost data on a LocalCluster of 2 workers.

The machine is shared: the load average (``uptime``) is printed beside every section.

5. **Additive at p = 1,000** (``--additive-rows``, issue 54): SEV⁻ of an L2 logistic regression on 1,000 features
   by the additive engine against a plain CP-SAT model of it (row by row in turns, equal values asserted), wall and
   CPU time, with ``--background 0,8`` busy processes (the engine's wall ÷ CPU under load).

Run from the repository root:  python bench/sev_exact.py [--rows 40] [--bfs-rows 10] [--dask-rows 10000]
    python bench/sev_exact.py --skip-demos --skip-wide --hard-rows 0 --additive-rows 20 --background 0,8
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's explain_core

from explain_core import BFSSearch, demo_model, load_demo, make_reference, sev_batch
from explain_core.intake.data import make_dataset
from explain_core.intake.models import wrap_model
from explain_core.intake.trained import TrainedModel
from explain_core.sev import SEVParameters, SEVRequest, sev_results
from explain_core.sev.exact_sev import ExactSearch, exact_engine, exact_sev_batch

LIMIT_S = 10.0


def load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def quantiles(times) -> str:
    return f"median {np.median(times):.3f} s, p95 {np.percentile(times, 95):.3f} s"


def demos(rows: int) -> None:
    print(f"\n## Demos (COMPAS, p ≤ 12): SEV⁻ of {rows} test rows predicted positive — {load()}")
    data = load_demo("compas")
    for kind in ("gbdt", "xgb", "lgbm"):
        trained = demo_model(data, kind)
        model, layout = trained.model, data.layout
        reference = make_reference(data, trained.train_rows)
        test = trained.test_rows[model.label(data.features.iloc[trained.test_rows]) == 1][:rows]
        queries = data.features.iloc[test]
        timing = {}
        for method in ("bfs", "exact"):
            sev_results(model, layout, queries.iloc[:2], reference,
                        options=SEVParameters(sev_method=method, max_depth=layout.size))  # warm
            one = []
            for i in range(len(queries)):
                began = time.perf_counter()
                sev_results(model, layout, queries.iloc[[i]], reference,
                            options=SEVParameters(sev_method=method, max_depth=layout.size))
                one.append(time.perf_counter() - began)
            began = time.perf_counter()
            found = sev_results(model, layout, queries, reference, SEVRequest(keep_scores=False),
                                options=SEVParameters(sev_method=method, max_depth=layout.size))
            timing[method] = (np.median(one), time.perf_counter() - began, [r.value for r in found])
        same = timing["bfs"][2] == timing["exact"][2]
        print(f"{kind:5s} one row: BFS {timing['bfs'][0] * 1e3:.1f} ms, exact {timing['exact'][0] * 1e3:.1f} ms "
              f"({timing['exact'][0] / timing['bfs'][0]:.1f}× the BFS) | dataset-wide: BFS {timing['bfs'][1]:.3f} s, "
              f"exact {timing['exact'][1]:.3f} s ({timing['exact'][1] / timing['bfs'][1]:.1f}×) | same values: {same}")
    print("auto keeps the BFS up to 12 features (AUTO_BFS_GROUPS) where it is the faster one.")


def synthetic(p: int, seed: int = 0, n: int = 6000):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    w = np.zeros(p)
    w[:40] = rng.uniform(0.3, 1.0, size=40)
    y = (X @ w + X[:, 40] * X[:, 41] + rng.normal(size=n) * 0.5 > 0).astype(int)
    return pd.DataFrame(X, columns=[f"x{j}" for j in range(p)]).assign(y=y), 42


def breast_cancer():
    from sklearn.datasets import load_breast_cancer

    raw = load_breast_cancer(as_frame=True)
    frame = raw.frame.rename(columns=lambda c: c.replace(" ", "_"))
    return frame.rename(columns={"target": "y"}), None


def booster(library: str, depth: int):
    if library == "xgb":
        import xgboost

        return xgboost.XGBClassifier(n_estimators=200, max_depth=depth, learning_rate=0.1, n_jobs=1, random_state=0)
    import lightgbm

    return lightgbm.LGBMClassifier(n_estimators=200, max_depth=depth, num_leaves=2 ** depth, learning_rate=0.1,
                                   n_jobs=1, verbose=-1, random_state=0)


def fitted(frame: pd.DataFrame, library: str, depth: int):
    data = make_dataset(frame, "y")
    train, test = data.split(0)
    est = booster(library, depth).fit(data.features.iloc[train], data.y[train])
    model = wrap_model(est, data)
    return data, model, train, test


def wide(rows: int, bfs_rows: int) -> None:
    print(f"\n## Wide models: SEV⁻ of {rows} test rows predicted positive, 200 trees each — {load()}")
    print("| model | rows | certified: median / p95 | certified | ≤ 10 s | all listed: median / p95 | list complete "
          "| BFS (depth 6): s per row | BFS answers |")
    print("|---|---|---|---|---|---|---|---|---|")
    cases = [("synthetic 100", synthetic(100), "xgb", 4), ("synthetic 100", synthetic(100), "lgbm", 6),
             ("synthetic 300", synthetic(300), "xgb", 6), ("synthetic 300", synthetic(300), "lgbm", 4),
             ("breast cancer 30", breast_cancer(), "xgb", 5), ("breast cancer 30", breast_cancer(), "lgbm", 5)]
    for name, (frame, informative), library, depth in cases:
        data, model, train, test = fitted(frame, library, depth)
        reference = make_reference(data, train)
        queries = data.features.iloc[test[model.label(data.features.iloc[test]) == 1][:rows]]
        engine = exact_engine(model, data.layout)
        certify, listing, certified, listed, values, pure = [], [], 0, 0, [], 0
        for i in range(len(queries)):
            began = time.perf_counter()
            first = exact_sev_batch(engine, queries.iloc[[i]], reference, ExactSearch(cap=1, keep_scores=False))[0]
            certify.append(time.perf_counter() - began)
            certified += first.certified and certify[-1] <= LIMIT_S
            began = time.perf_counter()
            full = exact_sev_batch(engine, queries.iloc[[i]], reference, ExactSearch(keep_scores=False))[0]
            listing.append(time.perf_counter() - began)
            listed += full.complete
            values.append(first.value)
            if informative:
                pure += all(int(g[1:]) < informative for e in full.explanations for g in e)
        bfs_queries = queries.iloc[:bfs_rows]
        began = time.perf_counter()
        bfs = sev_batch(model, data.layout, bfs_queries, reference, BFSSearch(keep_scores=False))
        bfs_s = (time.perf_counter() - began) / max(1, len(bfs_queries))
        answers = pd.Series([r.shown for r in bfs]).value_counts().to_dict()
        exact_values = pd.Series([str(v) for v in values]).value_counts().to_dict()
        print(f"| {name}, {library} depth {depth} | {len(queries)} | {quantiles(certify)} | "
              f"{sum(r is not None for r in values)}/{len(values)} ({certified / len(values):.0%} certified ≤ 10 s) | "
              f"{np.mean(np.array(certify) <= LIMIT_S):.0%} | {quantiles(listing)} | {listed / len(values):.0%} | "
              f"{bfs_s:.2f} ({len(bfs_queries)} rows) | {answers} |")
        carried = f" explanations inside the 42 features that carry the label: {pure}/{len(values)} rows |"
        print(f"|   exact SEV⁻ values | {exact_values} |" + (carried if informative else ""))
    print(load())


def hard_rows(rows: int) -> None:
    """The issue's scale point: a 150-feature, 200-tree depth-5 XGBoost, its most confident positive test rows (the
    longest explanations), time to certify SEV⁻ by its value."""
    print(f"\n## By SEV⁻ value: 150 features, XGBoost 200 trees depth 5, the {rows} most confident positive test "
          f"rows — {load()}")
    frame, _ = synthetic(150)
    data, model, train, test = fitted(frame, "xgb", 5)
    reference = make_reference(data, train)
    scores = model.score(data.features.iloc[test])
    queries = data.features.iloc[test[np.argsort(-scores)[:rows]]]
    engine = exact_engine(model, data.layout)
    by_value: dict = {}
    for i in range(len(queries)):
        began = time.perf_counter()
        result = exact_sev_batch(engine, queries.iloc[[i]], reference, ExactSearch(cap=1, keep_scores=False))[0]
        by_value.setdefault(result.shown, []).append(time.perf_counter() - began)
    print("| SEV⁻ | rows | certified: median | max |\n|---|---|---|---|")
    for value in sorted(by_value, key=lambda v: (len(v), v)):
        times = by_value[value]
        print(f"| {value} | {len(times)} | {np.median(times):.3f} s | {max(times):.3f} s |")
    print(load())


def dask_audit(rows: int) -> None:
    from explain_core.audit import run_audit
    from explain_core.setup import Parameters, make_setup

    print(f"\n## Dataset-wide on Dask: an audit of {rows:,} rows (SEV⁻ and SEV⁺, method auto) — {load()}")
    frame, _ = synthetic(100)
    data, model, train, test = fitted(frame, "xgb", 4)
    trained = TrainedModel(model, train, test, {}, 0, "bench:synthetic100:xgb4", "bench model", data.key)
    setup = make_setup(data, trained)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.parquet"
        extra, _ = synthetic(100, seed=1, n=rows)
        extra.drop(columns="y").to_parquet(path, row_group_size=max(1, rows // 20))  # a partition per row group
        began = time.perf_counter()
        run = run_audit(setup, path, Path(folder) / "out", Parameters(), scheduler="local")
        seconds = time.perf_counter() - began
        table = pd.read_parquet(Path(folder) / "out" / "parts")
    engines = table["sev_minus_engine"].value_counts().to_dict()
    print(f"{len(table):,} rows in {seconds:.0f} s on {run.executor} ({len(table) / seconds:.1f} rows/s); SEV⁻ "
          f"engines {engines}; SEV⁻ status {table['sev_minus_status'].value_counts().to_dict()} — {load()}")


def additive_data(p: int = 1000, n: int = 3000, seed: int = 0):
    """A p-feature logistic regression behind a StandardScaler (the label a noisy sum of 60 features), its dataset,
    the test rows it predicts positive and the default reference."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    w = np.zeros(p)
    w[:60] = rng.standard_normal(60)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(p)])
    frame["y"] = (X @ w + 0.5 * rng.standard_normal(n) > 0).astype(int)
    data = make_dataset(frame, "y")
    train = np.arange(2 * n // 3)
    estimator = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(
        frame.drop(columns="y").iloc[train], frame["y"].iloc[train])
    model = wrap_model(estimator, data)
    test = np.arange(len(train), n)
    positive = test[model.label(data.features.iloc[test]) == 1]
    return data, model, positive, make_reference(data, train)


def plain_cp_sat(model, data, query: pd.DataFrame, reference) -> int | None:
    """The anchor: SEV⁻ of one row as a plain CP-SAT model of the logistic regression — the row and the reference
    through the model's own scaler (a data frame of every column), one Boolean per feature, the weighted moves to
    cover the gap to the threshold (integer coefficients, 10⁻⁶ of the gap), fewest moves, one worker; the answer
    checked by the model on its raw row."""
    from ortools.sat.python import cp_model

    columns = list(data.layout.columns)
    scaler, logistic = model.estimator[0], model.estimator[-1]
    x = scaler.transform(pd.concat([query[columns], reference.as_frame(columns)], ignore_index=True))
    coef, base = logistic.coef_[0], float(logistic.intercept_[0])
    delta = coef * (x[1] - x[0])
    gap = float(coef @ x[0] + base)  # the query is positive: the moves must bring the raw output below 0
    scale = 1e6 / max(abs(gap), 1e-12)
    cp = cp_model.CpModel()
    z = [cp.new_bool_var(f"z{j}") for j in range(len(delta))]
    cp.add(sum(int(round(d * scale)) * v for d, v in zip(delta, z) if round(d * scale)) <= -int(round(gap * scale)) - 1)
    cp.minimize(sum(z))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    if solver.solve(cp) not in (cp_model.OPTIMAL,):
        return None
    moved = np.array([solver.boolean_value(v) for v in z])
    row = query[columns].copy()
    row.iloc[0, moved] = [reference.values[c] for c in np.array(columns)[moved]]
    return int(moved.sum()) if model.label(row)[0] == 0 else None


def additive_wide(rows: int, background: int) -> None:
    """The additive engine at p = 1,000 (issue 54) against the plain CP-SAT model, row by row in turns: wall and
    CPU seconds of each, and the engine's wall ÷ CPU, with ``background`` busy processes running."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sandbox_overhead import loaded

    data, model, positive, reference = additive_data()
    engine = exact_engine(model, data.layout)
    workers = loaded(background)
    try:
        print(f"\n## The additive engine at p = 1,000 (L2 logistic regression behind a scaler), {rows} rows, "
              f"{background} background processes — {load()}")
        times = {"engine": [], "plain": []}
        for r in positive[:rows + 2]:
            query = data.features.iloc[[int(r)]]
            for side in ("engine", "plain"):
                wall, cpu = time.perf_counter(), time.process_time()
                if side == "engine":
                    value = exact_sev_batch(engine, query, reference, ExactSearch(cap=1))[0].value
                else:
                    anchor = plain_cp_sat(model, data, query, reference)
                times[side].append((time.perf_counter() - wall, time.process_time() - cpu))
            assert value == anchor, (r, value, anchor)
        for side in times:
            times[side] = np.array(times[side][2:])  # the first two rows warm both
        e, a = np.median(times["engine"], axis=0), np.median(times["plain"], axis=0)
        print(f"engine {e[0]:.4f} s wall, {e[1]:.4f} s CPU a row (median); plain CP-SAT {a[0]:.4f} s wall, "
              f"{a[1]:.4f} s CPU; plain ÷ engine {a[0] / e[0]:.2f}× wall, {a[1] / e[1]:.2f}× CPU; engine wall ÷ CPU "
              f"{np.sum(times['engine'][:, 0]) / np.sum(times['engine'][:, 1]):.2f} (plain "
              f"{np.sum(times['plain'][:, 0]) / np.sum(times['plain'][:, 1]):.2f}) — {load()}")
    finally:
        for worker in workers:
            worker.terminate()
            worker.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=40, help="rows explained per model (default 40)")
    parser.add_argument("--bfs-rows", type=int, default=10, help="of those, rows the BFS runs on (default 10)")
    parser.add_argument("--dask-rows", type=int, default=0, help="rows of the Dask audit (default 0: skipped)")
    parser.add_argument("--skip-demos", action="store_true")
    parser.add_argument("--skip-wide", action="store_true")
    parser.add_argument("--hard-rows", type=int, default=40,
                        help="most confident rows of the 150-feature model (0: skip)")
    parser.add_argument("--additive-rows", type=int, default=0, help="rows of the p = 1,000 additive bench (0: skip)")
    parser.add_argument("--background", default="0", help="busy background processes for it, e.g. 0,8")
    args = parser.parse_args()
    print(f"bench/sev_exact.py — {load()}")
    with threadpool_limits(1):
        for count in [int(n) for n in args.background.split(",")] if args.additive_rows else []:
            additive_wide(args.additive_rows, count)
        if not args.skip_demos:
            demos(args.rows)
        if not args.skip_wide:
            wide(args.rows, args.bfs_rows)
        if args.hard_rows:
            hard_rows(args.hard_rows)
    if args.dask_rows:
        dask_audit(args.dask_rows)


if __name__ == "__main__":
    main()
