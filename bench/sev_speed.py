#!/usr/bin/env python
"""Speed of the batched SEV engine against a naive one-vertex-per-predict BFS (GBDT demo models).

For each dataset (COMPAS, German credit, Adult by default) this loads the cached GBDT demo model,
takes the reference from the training rows, and explains every TEST row the model predicts
positive. It prints:

* the number of queries, mean SEV⁻ / SEV⁺ over the explained queries and how many were not
  explained (beyond the maximum depth, or not explainable at all);
* the time of ``sev(...)`` on one query at a time (median / p95 / max), for SEV⁻ and SEV⁺;
* the dataset-wide time of ``sev_batch`` over all queries (``keep_scores=False``), median of repeats;
* a naive BFS written here, independently of the engine: for each query, for depth 1, 2, ...,
  for every combination of groups, build one row and call ``model.score`` on a one-row frame;
  stop at the first depth with a flip after finishing that layer. It is run on the first queries
  only (count and time budget below) and its dataset-wide time is EXTRAPOLATED: the measured
  seconds per naive vertex times the exact number of vertices the naive BFS would evaluate on all
  queries (known from the SEV values). The naive values are checked against the engine's;
* the model's raw predict throughput (rows/s of ``model.score`` on a large batch of real rows)
  and the batched BFS's effective throughput (hypercube vertices a BFS must evaluate, divided by its
  dataset-wide time). When the model's preprocessing is column-wise the engine encodes the queries
  once and sends mixed encoded rows straight to the final estimator; the estimator's own throughput
  on encoded rows is printed too.

Targets (issue): dataset-wide SEV⁻ and SEV⁺ ≥ 20× faster than the naive BFS, and the batched
BFS at ≥ 50% of the model's raw predict throughput. A summary table with PASS/FAIL ends the run.

Run from the repository root:  python bench/sev_speed.py [--datasets compas adult] [--max-queries 100]
"""
from __future__ import annotations

import argparse
import copy
import gc
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explain_core import demo_model, load_demo, make_reference, sev_batch  # noqa: E402
from explain_core.encoding import encoded_model  # noqa: E402
from explain_core.data import GroupLayout  # noqa: E402
from explain_core.sev import DEFAULT_MAX_DEPTH, sev  # noqa: E402

TARGET_SPEEDUP = 20.0
TARGET_THROUGHPUT = 0.50
KINDS = ("minus", "plus")
LABEL = {"minus": "SEV⁻", "plus": "SEV⁺"}
T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f}s] {msg}", flush=True)


# ---------------------------------------------------------------------------------------------------
# Naive BFS: one vertex, one row, one model call. Independent of explain_core.sev.

class NaiveBFS:
    """SEV⁻/SEV⁺ by plain BFS over feature groups, scoring one vertex per ``model.score`` call."""

    def __init__(self, model, data, reference_values: dict):
        self.model = model
        self.columns = list(data.features.columns)
        self.groups = [g.columns for g in data.groups]
        self.names = [g.name for g in data.groups]
        self.ref = dict(reference_values)
        # text columns keep the dataset's dtype (a missing value must not turn a text column into floats)
        self.text = {c: data.features[c].dtype for c in self.columns
                     if not pd.api.types.is_numeric_dtype(data.features[c])}
        self.calls = 0

    def predict(self, query: dict, keep: frozenset[int]) -> int:
        """Label of the vertex whose groups in ``keep`` take the query's value, the rest the reference's."""
        row = {}
        for gi, cols in enumerate(self.groups):
            src = query if gi in keep else self.ref
            for c in cols:
                row[c] = [src[c]]
        frame = pd.DataFrame(row, columns=self.columns)
        for c, dtype in self.text.items():
            frame[c] = frame[c].astype(dtype)
        self.calls += 1
        return int(self.model.score(frame)[0] > self.model.threshold)

    def sev(self, query: dict, kind: str, max_depth: int, deadline: float = float("inf")):
        """(value or None, sorted explanations as tuples of group names, vertices evaluated).

        Past ``deadline`` (a perf_counter time) the search stops and the value is ``"aborted"``.
        """
        self.calls = 0
        p = len(self.groups)
        everything = frozenset(range(p))
        cls = self.predict(query, everything)
        if kind == "plus" and self.predict(query, frozenset()) == cls:
            return 0, [()], self.calls
        for depth in range(1, min(max_depth, p) + 1):
            hits = []
            for combo in itertools.combinations(range(p), depth):
                keep = everything - set(combo) if kind == "minus" else frozenset(combo)
                label = self.predict(query, keep)
                if (label != cls) if kind == "minus" else (label == cls):
                    hits.append(tuple(self.names[g] for g in combo))
                if time.perf_counter() > deadline:
                    return "aborted", [], self.calls
            if hits:
                return depth, sorted(hits), self.calls
        return None, [], self.calls


def naive_vertex_count(p: int, kind: str, value, status: str, max_depth: int) -> int:
    """Vertices the naive BFS evaluates for a query with this engine outcome (query vertex included)."""
    depth = value if status == "explained" else (min(max_depth, p) if status == "beyond_depth" else p)
    base = 1 + (kind == "plus")  # the query's own label; SEV⁺ also scores the reference
    return base + sum(math.comb(p, d) for d in range(1, depth + 1))


def bfs_vertices(p: int, kind: str, results, max_depth: int) -> int:
    """Distinct vertices a dataset-wide BFS must score: per query its own vertex and the layers up to its
    SEV (finished), plus the reference once for SEV⁺. The same for any engine (speculative or repeated
    rows an engine scores on top are not counted)."""
    per_query = sum(naive_vertex_count(p, kind, r.value, r.status, max_depth) for r in results)
    return per_query - (len(results) - 1 if kind == "plus" and results else 0)


# ---------------------------------------------------------------------------------------------------

def counting(model):
    """A copy of the adapter whose model calls record their rows and seconds (overhead: one clock read).

    Both entry points are counted: ``score`` (raw rows through the whole pipeline) and ``scores_of``
    (the engine's encoded-space path: encoded rows straight to the final estimator).
    """
    counted = copy.copy(model)
    tally = {"sizes": [], "seconds": []}

    def record(fn):
        def wrapper(*args):
            t = time.perf_counter()
            out = fn(*args)
            tally["seconds"].append(time.perf_counter() - t)
            tally["sizes"].append(len(args[-1]))
            return out
        return wrapper

    counted.score = record(model.score)
    counted.scores_of = record(model.scores_of)
    return counted, tally


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.1f} ms"


def pct(values, q) -> float:
    return float(np.percentile(np.asarray(values), q))


def bench_dataset(name: str, args) -> dict:
    log(f"=== {name}: loading data and GBDT demo model")
    data = load_demo(name)
    trained = demo_model(data, "gbdt")
    model = trained.model
    reference = make_reference(data, trained.train_rows)
    layout = GroupLayout.of(data)
    p = layout.size
    test = data.features.iloc[trained.test_rows]
    queries = test[model.label(test) == 1]
    if args.max_queries:
        queries = queries.iloc[: args.max_queries]
    queries = queries.reset_index(drop=True)
    n = len(queries)
    print(f"\n##### {name}: {len(data.features)} rows, {p} feature groups, {len(test)} test rows, "
          f"{n} predicted positive (the queries); test acc {trained.metrics.get('test_accuracy', float('nan')):.3f}, "
          f"AUC {trained.metrics.get('test_auc', float('nan')):.3f}; max depth {args.max_depth}", flush=True)
    out = {"name": name, "n": n, "p": p}

    # -- dataset-wide results and exact vertex counts (first, untimed run) ------------------------
    results, rows_scored, calls = {}, {}, {}
    for kind in KINDS:
        counted, tally = counting(model)
        results[kind] = sev_batch(counted, layout, queries, reference, kind=kind, max_depth=args.max_depth,
                                  keep_scores=False)
        rows_scored[kind], calls[kind] = sum(tally["sizes"]), len(tally["sizes"])
    needed = {kind: bfs_vertices(p, kind, results[kind], args.max_depth) for kind in KINDS}
    for kind in KINDS:
        res = results[kind]
        vals = [r.value for r in res if r.explainable]
        beyond = sum(r.status == "beyond_depth" for r in res)
        unexpl = sum(r.status == "unexplainable" for r in res)
        dist = pd.Series(vals).value_counts().sort_index().to_dict() if vals else {}
        mean = float(np.mean(vals)) if vals else float("nan")
        print(f"  {LABEL[kind]}: mean {mean:.3f} over {len(vals)} explained; not explained: {beyond} beyond depth "
              f"{args.max_depth}, {unexpl} unexplainable; distribution {dist}; "
              f"BFS vertices {needed[kind]:,}; the engine scored {rows_scored[kind]:,} rows in {calls[kind]} model calls")
        out[f"mean_{kind}"] = mean
        out[f"unexplained_{kind}"] = beyond + unexpl

    # -- single-query latency of sev(...) -------------------------------------------------------
    m = min(n, args.per_query_max) if args.per_query_max else n
    log(f"{name}: timing sev() one query at a time on the first {m} of {n} queries")
    per_query = {}
    for kind in KINDS:
        times, mismatches = [], 0
        for i in range(m):
            dt, r = timed(lambda: sev(model, layout, queries.iloc[[i]], reference, kind=kind, max_depth=args.max_depth))
            times.append(dt)
            ref_r = results[kind][i]
            mismatches += (r.value, r.status, sorted(r.explanations)) != (ref_r.value, ref_r.status, sorted(ref_r.explanations))
        per_query[kind] = times
        print(f"  sev() single query {LABEL[kind]} ({m} queries): median {fmt_ms(np.median(times))}, "
              f"p95 {fmt_ms(pct(times, 95))}, max {fmt_ms(max(times))}; "
              f"same result as sev_batch: {m - mismatches}/{m}")
        out[f"q_median_{kind}"] = float(np.median(times))

    # -- dataset-wide batched time and raw predict throughput, interleaved -----------------------
    big = test.iloc[np.resize(np.arange(len(test)), args.raw_rows)].reset_index(drop=True)
    log(f"{name}: {args.repeats} rounds of [raw score on {len(big):,} real rows, sev_batch SEV⁻, sev_batch SEV⁺]")
    raw_t, raw_small_t, runs = [], [], {k: [] for k in KINDS}
    small = [big.iloc[i:i + 20_000] for i in range(0, len(big), 20_000)]
    for rep in range(args.repeats):
        gc.collect()  # start each round with empty GC generations (a full collection costs ~0.1 s here)
        dt, _ = timed(lambda: model.score(big))
        raw_t.append(dt)
        raw_small_t.append(timed(lambda: [model.score(b) for b in small])[0])
        for kind in KINDS:
            counted, tally = counting(model)
            dt, _ = timed(lambda: sev_batch(counted, layout, queries, reference, kind=kind, max_depth=args.max_depth,
                                            keep_scores=False))
            runs[kind].append((dt, tally))
    raw_tp = len(big) / float(np.median(raw_t))
    raw_small_tp = len(big) / float(np.median(raw_small_t))
    print(f"  raw model.score throughput: {raw_tp:,.0f} rows/s in one call of {len(big):,} real rows (median of "
          f"{args.repeats}: {', '.join(f'{t:.2f}s' for t in raw_t)}); {raw_small_tp:,.0f} rows/s in calls of 20,000 rows")
    split = encoded_model(model, data.groups)
    if split is not None:
        encoded_big = split.encode(big)
        est_t = float(np.median([timed(lambda: model.scores_of(split.estimator, encoded_big))[0]
                                 for _ in range(args.repeats)]))
        print(f"  the engine scores vertices in the encoded space (column-wise preprocessing): the final estimator "
              f"alone runs {len(big) / est_t:,.0f} rows/s on {len(big):,} encoded rows — preprocessing is "
              f"{100 * (1 - est_t / float(np.median(raw_t))):.0f}% of the raw model.score time")
    for kind in KINDS:
        times = [t for t, _ in runs[kind]]
        t = float(np.median(times))
        t_med, tally = sorted(runs[kind], key=lambda r: r[0])[len(times) // 2]
        in_score = sum(tally["seconds"])
        # the same call sizes on real rows: what the model alone needs for this batching
        same_sizes = sum(timed(lambda: model.scores_of(split.estimator, encoded_big[:k]) if split
                               else model.score(big.iloc[:k]))[0] for k in tally["sizes"])
        tp = needed[kind] / t
        out[f"batch_{kind}"] = t
        out[f"tp_ratio_{kind}"] = tp / raw_tp
        print(f"  sev_batch {LABEL[kind]} dataset-wide: {t:.3f} s median ({', '.join(f'{x:.3f}' for x in times)}); "
              f"{needed[kind]:,} BFS vertices → {tp:,.0f} vertices/s = {100 * tp / raw_tp:.0f}% of the raw "
              f"throughput ({100 * tp / raw_small_tp:.0f}% of the 20k-row-call rate); "
              f"{1e3 * t / max(n, 1):.2f} ms per query amortised")
        print(f"    where the time goes (median run, {t_med:.3f} s): {len(tally['sizes'])} model calls "
              f"(rows {tally['sizes']}) take {in_score:.3f} s = {100 * in_score / t_med:.0f}%; engine outside the "
              f"model {t_med - in_score:.3f} s = {100 * (t_med - in_score) / t_med:.0f}%; the same call sizes on "
              f"real rows take {same_sizes:.3f} s; at the raw large-batch rate they would take "
              f"{sum(tally['sizes']) / raw_tp:.3f} s")

    # -- naive BFS on the first queries, extrapolated --------------------------------------------
    naive = NaiveBFS(model, data, reference.values)
    records = [queries.iloc[i].to_dict() for i in range(min(n, args.naive_queries))]
    for kind in KINDS:
        log(f"{name}: naive BFS {LABEL[kind]} on up to {len(records)} queries (budget {args.naive_budget:.0f}s)")
        spent, vertices, done, agree_val, agree_expl, count_ok, q_times, aborted = 0.0, 0, 0, 0, 0, 0, [], 0
        deadline = time.perf_counter() + args.naive_budget
        for i, record in enumerate(records):
            if time.perf_counter() >= deadline:
                break
            dt, (value, expl, nv) = timed(lambda: naive.sev(record, kind, args.max_depth, deadline))
            spent += dt
            vertices += nv
            if value == "aborted":  # its predicts count for the per-vertex time; no result to compare
                aborted = 1
                break
            done += 1
            q_times.append(dt)
            r = results[kind][i]
            agree_val += value == r.value
            agree_expl += expl == sorted(r.explanations)
            count_ok += nv == naive_vertex_count(p, kind, r.value, r.status, args.max_depth)
        per_vertex = spent / max(vertices, 1)
        all_vertices = sum(naive_vertex_count(p, kind, r.value, r.status, args.max_depth) for r in results[kind])
        est_total = spent if done == n else per_vertex * all_vertices  # measured when every query ran
        est_by_query = float(np.mean(q_times)) * n if q_times else float("nan")
        batched = out[f"batch_{kind}"]
        sample_batched = sum(per_query[kind][:done]) if 0 < done <= len(per_query[kind]) else float("nan")
        out[f"naive_total_{kind}"] = est_total
        out[f"speedup_{kind}"] = est_total / batched
        out[f"naive_done_{kind}"] = done
        out[f"agree_{kind}"] = (agree_val, agree_expl, done)
        print(f"  naive {LABEL[kind]}: ran {done} of {n} queries ({'SUBSET, extrapolated' if done < n else 'all queries'})"
              f"{' + 1 stopped at the time budget' if aborted else ''} "
              f"in {spent:.1f}s: {vertices:,} one-row predicts, {1e3 * per_vertex:.2f} ms per vertex, "
              f"median {fmt_ms(np.median(q_times)) if q_times else 'n/a'} per query "
              + (f"(sev() on the same {done} queries: {sample_batched:.2f}s in all → "
                 f"{sum(q_times) / sample_batched:.0f}× single-query speedup)" if np.isfinite(sample_batched) else ""))
        print(f"    agreement with the engine on these {done} queries: SEV value {agree_val}/{done}, "
              f"explanation sets {agree_expl}/{done}; naive vertex count matches the formula {count_ok}/{done}")
        how = (f"EXTRAPOLATED: {per_vertex * 1e3:.2f} ms/vertex × {all_vertices:,} vertices (exact, from the SEV values)"
               if done < n else "MEASURED (all queries ran)")
        print(f"    naive dataset-wide {how} = {est_total:,.1f} s "
              f"[cross-check, mean per query × {n} queries = {est_by_query:,.1f} s]; "
              f"batched {batched:.3f} s → speedup {est_total / batched:,.0f}×")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["compas", "german_credit", "adult"])
    ap.add_argument("--max-queries", type=int, default=0, help="use only the first N positive test rows (0 = all)")
    ap.add_argument("--per-query-max", type=int, default=200,
                    help="time sev() one query at a time on the first N queries (0 = all)")
    ap.add_argument("--naive-queries", type=int, default=50, help="run the naive BFS on at most the first N queries")
    ap.add_argument("--naive-budget", type=float, default=20.0,
                    help="seconds per dataset and kind for the naive BFS (stops after the query that crosses it)")
    ap.add_argument("--repeats", type=int, default=5, help="repeats of the dataset-wide and raw timings (median)")
    ap.add_argument("--raw-rows", type=int, default=200_000, help="rows for the raw predict throughput")
    ap.add_argument("--max-depth", type=int, default=DEFAULT_MAX_DEPTH)
    args = ap.parse_args()

    outs = [bench_dataset(name, args) for name in args.datasets]

    print("\n##### Summary (targets: dataset-wide speedup vs naive BFS ≥ "
          f"{TARGET_SPEEDUP:.0f}×, batched throughput ≥ {100 * TARGET_THROUGHPUT:.0f}% of raw predict)")
    header = (f"{'dataset':<14}{'kind':<6}{'queries':>8}{'mean SEV':>9}{'unexpl':>7}{'sev() med':>11}"
              f"{'batched s':>10}{'naive s (est)':>14}{'speedup':>9}{'':>2}{'thru/raw':>9}{'':>2}{'naive agree':>12}")
    print(header)
    print("-" * len(header))
    verdicts = []
    for o in outs:
        for kind in KINDS:
            sp, tr = o[f"speedup_{kind}"], o[f"tp_ratio_{kind}"]
            ok_sp, ok_tr = sp >= TARGET_SPEEDUP, tr >= TARGET_THROUGHPUT
            verdicts += [ok_sp, ok_tr]
            av, ae, done = o[f"agree_{kind}"]
            print(f"{o['name']:<14}{LABEL[kind]:<6}{o['n']:>8}{o[f'mean_{kind}']:>9.3f}{o[f'unexplained_{kind}']:>7}"
                  f"{1e3 * o[f'q_median_{kind}']:>9.1f}ms{o[f'batch_{kind}']:>10.3f}{o[f'naive_total_{kind}']:>14.1f}"
                  f"{sp:>8.0f}× {'PASS' if ok_sp else 'FAIL':<5}{100 * tr:>5.0f}% {'PASS' if ok_tr else 'FAIL':<5}"
                  f"{f'{av}/{done}':>8}")
    print(f"\nspeedup target (≥{TARGET_SPEEDUP:.0f}×): "
          + ("PASS on all rows" if all(verdicts[0::2]) else f"FAIL on {verdicts[0::2].count(False)} row(s)"))
    print(f"throughput target (≥{100 * TARGET_THROUGHPUT:.0f}% of raw): "
          + ("PASS on all rows" if all(verdicts[1::2]) else f"FAIL on {verdicts[1::2].count(False)} row(s)"))
    print("naive times are extrapolated from a subset where 'naive agree' shows fewer than all queries; "
          "see each dataset's block.")
    log("done")


if __name__ == "__main__":
    main()
