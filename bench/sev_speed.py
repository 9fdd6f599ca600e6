#!/usr/bin/env python
"""Speed of the SEV engine against the SEV paper's own algorithm (GBDT demo models), measured in full.

For each dataset (COMPAS, German credit, Adult by default) this loads the GBDT demo model, takes the
reference from the training rows and explains every TEST row the model predicts positive (the queries).

The baseline is the paper's algorithm as its code runs it, written plainly here: breadth-first search over feature
groups — by layer, and within a layer in ``itertools.combinations`` order over the groups — with one
``predict_proba`` call per vertex on the encoded numpy row, returning at the FIRST flipping vertex (the query and
the reference are encoded beforehand, outside the timing, as the paper's code works on pre-encoded data). Beside
it, labelled "full layer", the same search finishing the answer's layer to list every minimal explanation. Our
first-flip path (``explanations="first"``) is compared with the first-flip baseline, our full search (the
default, ``explanations="all"``) with the full-layer one, in the same run. Both baselines run IN FULL on the first
``--paper-queries`` queries (every query of the subset to its end; the count is printed) — no time budget, no
extrapolation — and the engine is timed on the same subset. The load average is printed at the start and the end.

Printed per dataset and kind (SEV⁻, SEV⁺):
* SEV values (mean, distribution, not explained) and agreement with the paper's algorithm on the subset (first
  flip: the same value and the same first explanation; full layer: the same value and explanation set);
* one row at a time (the dashboard's path): ``explain_sev`` (SEV⁻ + SEV⁺ of one row) median / p95 / max, beside
  the paper's algorithm on the same rows (SEV⁻ + SEV⁺ per row), for both pairs;
* dataset-wide: ``sev_batch`` on all queries (median of repeats) and on the paper's subset, with the ratio to
  the paper's algorithm on that subset, for both pairs, and the model rows each of our paths scored;
* throughput, honestly: rows the engine actually sent to the model per second, as a share of the model's raw
  rate (``model.score`` on the queries' rows repeated to 65,536, in calls of 32,768, the engine's call size: the
  target), the search and a raw pass timed in turns, and of the final estimator's own rate on the same rows encoded
  (stricter: the engine skips the per-call preprocessing, the estimator alone cannot); the estimator's time for
  the engine's very call sizes; and vertices resolved per second (the BFS's vertices, which the engine may
  resolve without scoring them: shown, never used for a target);
* SEV⁻ alone, one row at a time, in CPU time: ``sev_batch`` of one row (``kind="minus"``) in each mode beside the
  paper's SEV⁻ search in the matching variant, on the same rows and model (median row and total).

Targets (issue 16): one-row median ≤ 3 ms and p95 ≤ 15 ms, faster than the paper's algorithm on the median row;
dataset-wide ≥ 20× the paper's algorithm (on the subset run in full). Issue 54: rows scored ≥ 60% of the model's
raw rate; SEV⁻ alone (first flip) ≥ 1× the paper's first-flip search in CPU time, on the median row and in total.
``--skip-one-row`` leaves out ``explain_sev``'s one-row times (the longest part).
Each speed target is checked for both pairs (first flip against first flip, full against full layer).

Run from the repository root:  python bench/sev_speed.py [--datasets compas adult] [--paper-queries 100]
"""
from __future__ import annotations

import argparse
import copy
import gc
import itertools
import os
import time

import numpy as np

from explain_core import (BFSSearch, SEVParameters, demo_model, explain_sev, load_demo, make_reference,
                          sev_batch)
from explain_core.vertices import DEFAULT_CHUNK_ROWS
from explain_core.intake.encoding import encoded_model
from explain_core.sev import DEFAULT_MAX_DEPTH

KINDS = ("minus", "plus")
LABEL = {"minus": "SEV⁻", "plus": "SEV⁺"}
MODES = {"first": "first flip", "all": "full layer"}  # our explanations= mode → the baseline it is compared with
TARGETS = {"one_row_median": 0.003, "one_row_p95": 0.015, "speedup": 20.0, "throughput": 0.60, "minus_alone": 1.0}


class PaperBFS:
    """The SEV paper's search: BFS over groups, one ``predict_proba`` per vertex on the encoded numpy row, by layer
    and within a layer in ``itertools.combinations`` order; it stops at the first flipping vertex (the paper's code)
    or, with ``full_layer``, finishes that layer to list every minimal explanation."""

    def __init__(self, model, split, names, reference_row: np.ndarray):
        self.estimator, self.model, self.names = split.estimator, model, names
        self.column_group = split.column_group
        self.reference = reference_row
        self.positive = list(split.estimator.classes_).index(model.positive_class)
        self.calls = 0

    def label(self, query: np.ndarray, keep: np.ndarray) -> int:
        """The label of the vertex whose groups in ``keep`` (bool per group) hold the query's values."""
        row = np.where(keep[self.column_group], query, self.reference)
        self.calls += 1
        return int(self.estimator.predict_proba(row[None, :])[0, self.positive] > self.model.threshold)

    def sev(self, query: np.ndarray, kind: str, max_depth: int, full_layer: bool = False):
        """(value or None, explanations as tuples of group names: the first flipping vertex, or with ``full_layer``
        every flipping vertex of the answer's layer, sorted)."""
        p = len(self.names)
        everything = np.ones(p, dtype=bool)
        cls = self.label(query, everything)
        if kind == "plus" and self.label(query, ~everything) == cls:
            return 0, [()]
        for depth in range(1, min(max_depth, p) + 1):
            hits = []
            for combo in itertools.combinations(range(p), depth):
                keep = everything.copy() if kind == "minus" else ~everything
                keep[list(combo)] = kind != "minus"
                flipped = self.label(query, keep)
                if (flipped != cls) if kind == "minus" else (flipped == cls):
                    hits.append(tuple(self.names[g] for g in combo))
                    if not full_layer:
                        return depth, hits
            if hits:
                return depth, sorted(hits)
        return None, []


def counting(model):
    """A copy of the adapter that records how many rows each model call scores."""
    counted, sizes = copy.copy(model), []

    def record(fn):
        def wrapper(*args):
            sizes.append(len(args[-1]))
            return fn(*args)
        return wrapper

    counted.score, counted.scores_of = record(model.score), record(model.scores_of)
    return counted, sizes


def bfs_vertices(p: int, results) -> int:
    """Vertices a BFS resolves: per query, the layers up to its SEV (or the depth searched)."""
    from math import comb
    return sum(sum(comb(p, d) for d in range(1, (r.value if r.explainable else r.max_depth) + 1)) for r in results)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        times.append(timed(fn)[0])
    return float(np.median(times))


def load_text() -> str:
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg()) + " (1, 5, 15 min)"


def one_row_times(model, data, subset, encoded, reference, paper, args) -> dict:
    """Per row (SEV⁻ + SEV⁺): ``explain_sev`` in each mode and the paper's algorithm in the matching variant, the
    modes interleaved row by row (after a warm-up pass of both over the first rows) so neither pays the other's
    warm-up or drift."""
    def ours(i: int, mode: str) -> float:
        return timed(lambda: explain_sev(model, data, subset.iloc[[i]], reference, explanations=mode,
                                         options=SEVParameters(max_depth=args.max_depth)))[0]

    def theirs(i: int, mode: str) -> float:
        return timed(lambda: [paper.sev(encoded[i], kind, args.max_depth, mode == "all") for kind in KINDS])[0]

    for i in range(min(5, len(subset))):
        for mode in MODES:
            ours(i, mode)
    gc.collect()
    times = {(who, mode): [] for who in (ours, theirs) for mode in MODES}
    for who in (ours, theirs):
        for i in range(len(subset)):
            for mode in MODES:
                times[who, mode].append(who(i, mode))
    out = {}
    for mode, variant in MODES.items():
        mine, paper_rows = times[ours, mode], times[theirs, mode]
        out[mode] = {"median": float(np.median(mine)), "p95": float(np.percentile(mine, 95)),
                     "paper_median": float(np.median(paper_rows))}
        print(f"  one row (SEV⁻ + SEV⁺), {variant}, first {len(subset)} queries: explain_sev(explanations={mode!r}) "
              f"median {1e3 * np.median(mine):.2f} ms, p95 {1e3 * np.percentile(mine, 95):.2f} ms, max "
              f"{1e3 * max(mine):.1f} ms; the paper's algorithm ({variant}) median {1e3 * np.median(paper_rows):.2f} "
              f"ms, p95 {1e3 * np.percentile(paper_rows, 95):.2f} ms → {np.median(paper_rows) / np.median(mine):.1f}× "
              "on the median row")
    return out


def minus_alone(model, layout, subset, encoded, reference, paper, args) -> dict:
    """SEV⁻ alone, one row at a time, in CPU time (``time.process_time``): ``sev_batch`` of the row's one-row frame
    (sliced beforehand, as the paper's rows are encoded beforehand) in each mode beside the paper's SEV⁻ search in
    the matching variant on the same rows, interleaved row by row after a warm-up; each row's time is the mean of
    ``--cpu-repeats`` runs (process_time ticks coarser than one row)."""
    rows = [subset.iloc[[i]] for i in range(len(subset))]

    def ours(i: int, mode: str) -> None:
        sev_batch(model, layout, rows[i], reference,
                  BFSSearch(kind="minus", max_depth=args.max_depth, explanations=mode))

    def theirs(i: int, mode: str) -> None:
        paper.sev(encoded[i], "minus", args.max_depth, mode == "all")

    def cpu(fn, i: int, mode: str) -> float:
        start = time.process_time()
        for _ in range(args.cpu_repeats):
            fn(i, mode)
        return (time.process_time() - start) / args.cpu_repeats

    for i in range(min(5, len(rows))):
        for mode in MODES:
            ours(i, mode), theirs(i, mode)
    gc.collect()
    times = {(who, mode): [] for who in (ours, theirs) for mode in MODES}
    for i in range(len(rows)):
        for mode in MODES:
            for who in (ours, theirs):
                times[who, mode].append(cpu(who, i, mode))
    out = {}
    for mode, variant in MODES.items():
        mine, base = np.array(times[ours, mode]), np.array(times[theirs, mode])
        out[mode] = (float(np.median(base) / np.median(mine)), float(base.sum() / mine.sum()))
        print(f"  SEV⁻ alone, one row, CPU, {variant}, first {len(rows)} queries: sev_batch(explanations={mode!r}) "
              f"median {1e3 * np.median(mine):.2f} ms (total {mine.sum():.3f} s); the paper's SEV⁻ ({variant}) median "
              f"{1e3 * np.median(base):.2f} ms (total {base.sum():.3f} s) → {out[mode][0]:.2f}× on the median row, "
              f"{out[mode][1]:.2f}× in total")
    return out


def dataset_wide(model, layout, queries, subset, encoded, reference, paper, kind: str, args) -> dict:
    """``sev_batch`` on all queries and on the subset in each mode, the paper's algorithm (matching variant) on the
    subset in full, agreement, model rows scored."""
    out = {}
    for mode, variant in MODES.items():
        def run(rows, on=model):
            return sev_batch(on, layout, rows, reference,
                             BFSSearch(kind=kind, max_depth=args.max_depth, keep_scores=False, explanations=mode))
        results = run(queries)
        counted, sizes = counting(model)
        run(queries, counted)
        whole = median_time(lambda: run(queries), args.repeats)
        part = median_time(lambda: run(subset), args.repeats)
        found = []
        paper_time = median_time(lambda: found.append([paper.sev(row, kind, args.max_depth, mode == "all")
                                                       for row in encoded]), 1)
        agree = sum((r.value if r.explainable else None, sorted(r.explanations)) == (v, sorted(e))
                    for r, (v, e) in zip(results, found[0]))
        out[mode] = {"speedup": paper_time / part, "whole": whole, "results": results, "sizes": sizes}
        print(f"    {variant}: agreement with the paper's algorithm ({variant}) {agree}/{len(encoded)}; all "
              f"{len(queries)} queries {whole:.3f} s ({1e3 * whole / len(queries):.2f} ms per query), "
              f"{sum(sizes):,} model rows in {len(sizes)} calls; the subset of {len(encoded)} (run in full): engine "
              f"{part:.3f} s, paper's algorithm {paper_time:.2f} s → {paper_time / part:,.0f}×")
    return out


def throughput(model, layout, queries, reference, kind: str, full: dict, args) -> float:
    """Rows the full search sent to the model per second as a share of the model's raw rate (``model.score`` on
    the queries' rows repeated to ``--raw-rows``, in calls of the engine's 32,768): the search and a raw pass are
    timed in turns, ``--repeats`` pairs, so that the load drifts alike on both sides; the share is the median of the
    pairs' shares. Printed with the estimator's own rate on the same encoded rows (stricter) and the BFS vertices
    resolved."""
    split = encoded_model(model, layout.groups)
    raw = queries.iloc[np.resize(np.arange(len(queries)), args.raw_rows)]
    big = split.encode(raw)
    chunks = range(0, args.raw_rows, DEFAULT_CHUNK_ROWS)  # calls of the engine's own size, the fastest per row
    scored, sizes = sum(full["sizes"]), full["sizes"]
    pairs = []
    for _ in range(args.repeats):
        gc.collect()
        search = timed(lambda: sev_batch(model, layout, queries, reference,
                                         BFSSearch(kind=kind, max_depth=args.max_depth, keep_scores=False)))[0]
        model_pass = timed(lambda: [model.score(raw.iloc[a:a + DEFAULT_CHUNK_ROWS]) for a in chunks])[0]
        estimator_pass = timed(lambda: [model.scores_of(split.estimator, big[a:a + DEFAULT_CHUNK_ROWS])
                                        for a in chunks])[0]
        pairs.append((scored / search, args.raw_rows / model_pass, args.raw_rows / estimator_pass))
    rate, model_rate, estimator_rate = np.median(pairs, axis=0)
    share = float(np.median([r / m for r, m, _ in pairs]))
    strict = float(np.median([r / e for r, _, e in pairs]))
    same_calls = median_time(lambda: [model.scores_of(split.estimator, big[:m]) for m in sizes], args.repeats)
    vertices = bfs_vertices(layout.size, full["results"])
    print(f"    throughput (full search, {args.repeats} pairs in turns): {scored:,} rows sent to the model in "
          f"{len(sizes)} calls ({', '.join(f'{m:,}' for m in sizes[:6])}{', …' if len(sizes) > 6 else ''}) at "
          f"{rate:,.0f} rows/s = {100 * share:.0f}% of the model's raw {model_rate:,.0f} rows/s ({100 * strict:.0f}% "
          f"of the estimator's own {estimator_rate:,.0f} rows/s on encoded rows; the estimator alone needs "
          f"{same_calls:.3f} s for these call sizes); {vertices:,} BFS vertices resolved = "
          f"{vertices * rate / scored:,.0f} vertices/s (a vertex moving a group whose value equals the reference's is "
          f"resolved without scoring); {load_text()}")
    return share


def bench_dataset(name: str, args) -> dict:
    data = load_demo(name)
    trained = demo_model(data, "gbdt")
    model, layout = trained.model, data.layout
    reference = make_reference(data, trained.train_rows)
    test = data.features.iloc[trained.test_rows]
    queries = test[model.label(test) == 1]
    n, p = len(queries), layout.size
    split = encoded_model(model, data.groups)
    print(f"\n##### {name}: {len(data.features):,} rows, {p} feature groups, {n} test rows predicted positive "
          f"(the queries); GBDT test AUC {trained.metrics['test_auc']:.3f}; max depth {args.max_depth}")
    explain_sev(model, data, queries.iloc[[0]], reference)  # the dataset's rows are encoded once per model
    subset = queries.iloc[:min(n, args.paper_queries)]
    encoded = split.encode(subset)
    paper = PaperBFS(model, split, list(layout.names), split.encode(reference.as_frame(model.columns))[0])
    one_row = None if args.skip_one_row else one_row_times(model, data, subset, encoded, reference, paper, args)
    out = {"name": name, "n": n, "one_row": one_row,
           "minus_alone": minus_alone(model, layout, subset, encoded, reference, paper, args)}
    for kind in KINDS:
        wide = dataset_wide(model, layout, queries, subset, encoded, reference, paper, kind, args)
        values = [r.value for r in wide["all"]["results"] if r.explainable]
        print(f"  {LABEL[kind]}: mean {np.mean(values):.3f} over {len(values)} explained, {n - len(values)} not "
              "explained")
        out[kind] = {mode: wide[mode]["speedup"] for mode in MODES}
        out[kind]["throughput"] = throughput(model, layout, queries, reference, kind, wide["all"], args)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["compas", "german_credit", "adult"])
    ap.add_argument("--paper-queries", type=int, default=100,
                    help="run the paper's algorithm in full on the first N queries (and time one row at a time there)")
    ap.add_argument("--repeats", type=int, default=7, help="repeats of the engine's timings (median)")
    ap.add_argument("--raw-rows", type=int, default=65_536, help="rows of each raw pass of the model's throughput")
    ap.add_argument("--max-depth", type=int, default=DEFAULT_MAX_DEPTH)
    ap.add_argument("--cpu-repeats", type=int, default=5, help="runs of each row for the SEV⁻-alone CPU times")
    ap.add_argument("--skip-one-row", action="store_true", help="leave out explain_sev's one-row times")
    args = ap.parse_args()
    print(f"start: {load_text()}")
    outs = [bench_dataset(name, args) for name in args.datasets]
    print(f"\nend: {load_text()}")

    print("\n##### Summary, medians (targets: one row median ≤ 3 ms, p95 ≤ 15 ms and faster than the paper's "
          "algorithm; dataset-wide ≥ 20× the paper's algorithm; rows scored ≥ 60% of the model's raw rate)")
    print(f"{'dataset':<15}{'pair':<12}{'one-row med':>12}{'p95':>9}{'paper med':>11}{'ratio':>7}  "
          f"{'SEV⁻ ×':>8}{'SEV⁺ ×':>8}  verdict")
    for o in outs:
        for mode, variant in MODES.items():
            if o["one_row"] is None:
                print(f"{o['name']:<15}{variant:<12}{'(one row skipped)':>51}  {o['minus'][mode]:>7,.0f}×"
                      f"{o['plus'][mode]:>7,.0f}×")
                continue
            row = o["one_row"][mode]
            checks = [row["median"] <= TARGETS["one_row_median"], row["p95"] <= TARGETS["one_row_p95"],
                      row["median"] < row["paper_median"]]
            checks += [o[k][mode] >= TARGETS["speedup"] for k in KINDS]
            print(f"{o['name']:<15}{variant:<12}{1e3 * row['median']:>10.2f}ms{1e3 * row['p95']:>7.2f}ms"
                  f"{1e3 * row['paper_median']:>9.2f}ms{row['paper_median'] / row['median']:>6.1f}×  "
                  f"{o['minus'][mode]:>7,.0f}×{o['plus'][mode]:>7,.0f}×  {'PASS' if all(checks) else 'MISS'}")
    for o in outs:
        shares = [o[k]["throughput"] for k in KINDS]
        print(f"{o['name']:<15}rows scored (full search): SEV⁻ {100 * shares[0]:.0f}%, SEV⁺ {100 * shares[1]:.0f}% of "
              f"the model's raw rate  {'PASS' if min(shares) >= TARGETS['throughput'] else 'MISS'}")
    for o in outs:
        first, full = o["minus_alone"]["first"], o["minus_alone"]["all"]
        print(f"{o['name']:<15}SEV⁻ alone, one row, CPU: first flip {first[0]:.2f}× (median row) / {first[1]:.2f}× "
              f"(total), full layer {full[0]:.2f}× / {full[1]:.2f}× the paper's  "
              f"{'PASS' if min(first) >= TARGETS['minus_alone'] else 'MISS'}")


if __name__ == "__main__":
    main()
