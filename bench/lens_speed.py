#!/usr/bin/env python
"""Speed of the batched LENS engine against a naive row-by-row evaluation (GBDT demo models).

For German credit and COMPAS this loads the cached GBDT demo model and takes 20 test rows (seeded).
For each input a *full run* is: sample 100 references predicted opposite to the input from the
training rows (seeded), score every (reference × factor) sample of the R2I and I2R contexts over
the default factor space (all subsets for ≤ 12 groups, else all subsets of ≤ 3 groups), and run
Alg. 1 (τ = 0.9, exact mode) in both directions. It prints the median / p95 time per input.

The naive evaluation, written here independently of the engine, builds one row per sample and
calls ``model.label`` on that one-row frame. For reference the script also prints how many distinct
rows the engine scored and how long the model takes to score all samples in one batch without
de-duplication. It is timed on a seeded random subset of the samples
(its labels are checked against the engine's) and EXTRAPOLATED to all samples of an input: the
measured seconds per row times the exact sample count (2 directions × references × factors).

Targets (issue): ≥ 10× faster than naive; a full German run ≤ 2 s (median per input).
Run from the repository root:  python bench/lens_speed.py [--inputs 20] [--naive-rows 300]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explain_core import demo_model, load_demo  # noqa: E402
from explain_core.lens import DIRECTIONS, lens_contexts, opposite_references  # noqa: E402

TARGET_SPEEDUP = 10.0
TARGET_GERMAN_SECONDS = 2.0
TAU = 0.9
T0 = time.perf_counter()


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f}s] {msg}", flush=True)


def full_run(model, data, query, train_rows, n_refs: int, seed: int):
    references = opposite_references(model, data, query, train_rows, n=n_refs, seed=seed)
    contexts = lens_contexts(model, data, query, references)
    results = {d: ctx.minimal_factors(TAU) for d, ctx in contexts.items()}
    return references, contexts, results


def naive_label(model, data, query: dict, reference: dict, moved: set, direction: str) -> int:
    """One sample, one row, one model call: R2I = the reference with ``moved`` groups at the input's values,
    I2R = the input with them at the reference's values."""
    row = {}
    for g in data.groups:
        source = query if (g.name in moved) == (direction == "r2i") else reference
        row.update({c: [source[c]] for c in g.columns})
    return int(model.label(pd.DataFrame(row).astype(data.features.dtypes))[0])


def bench_dataset(name: str, args) -> dict:
    log(f"=== {name}: loading data and GBDT demo model")
    data = load_demo(name)
    trained = demo_model(data, "gbdt")
    model = trained.model
    rng = np.random.default_rng(args.seed)
    inputs = rng.choice(trained.test_rows, size=args.inputs, replace=False)
    times, samples, found = [], [], {d: 0 for d in DIRECTIONS}
    for i, row in enumerate(inputs):
        query = data.features.iloc[[row]]
        seconds, (references, contexts, results) = timed(
            lambda: full_run(model, data, query, trained.train_rows, args.references, args.seed + i))
        times.append(seconds)
        samples.append(sum(ctx.labels.size for ctx in contexts.values()))
        for d, r in results.items():
            found[d] += len(r.factors) > 0
    m = len(contexts["r2i"].masks)
    median = float(np.median(times))
    scored = []
    counted = dataclasses.replace(model)
    counted.score = lambda frame: scored.append(len(frame)) or model.score(frame)
    lens_contexts(counted, data, query, references)
    big = data.features.iloc[np.resize(trained.test_rows, samples[-1])]
    raw_seconds, _ = timed(lambda: model.score(big))
    print(f"  {len(data.groups)} feature groups, {m:,} factors (max size {int(contexts['r2i'].sizes.max())}), "
          f"{args.references} references → {samples[0]:,} samples per input (R2I + I2R)")
    print(f"  full run per input over {len(inputs)} inputs: median {median:.3f} s, "
          f"p95 {np.percentile(times, 95):.3f} s, max {max(times):.3f} s")
    print(f"  inputs with ≥ 1 τ={TAU} factor: R2I {found['r2i']}/{len(inputs)}, I2R {found['i2r']}/{len(inputs)}")
    print(f"  last input: {sum(scored[:-1]):,} distinct rows scored in {len(scored) - 1} model call(s) for "
          f"{samples[-1]:,} samples (+1 call for the input's label); scoring all {samples[-1]:,} samples without "
          f"de-duplication would take {raw_seconds:.3f} s ({samples[-1] / raw_seconds:,.0f} rows/s)")

    # -- naive row-by-row on a random subset of the last input's samples --------------------------
    q = query.iloc[0].to_dict()
    refs = [r.to_dict() for _, r in references.iterrows()]
    picks = [(str(rng.choice(DIRECTIONS)), int(rng.integers(len(refs))), int(rng.integers(m)))
             for _ in range(args.naive_rows)]
    seconds, naive = timed(lambda: [naive_label(model, data, q, refs[r], set(contexts[d].factor(j)), d)
                                    for d, r, j in picks])
    per_row = seconds / len(picks)
    agree = sum(lab == contexts[d].labels[r, j] for lab, (d, r, j) in zip(naive, picks))
    naive_input = per_row * samples[-1]
    speedup = naive_input / median
    print(f"  naive: {len(picks)} one-row model calls in {seconds:.2f} s = {1e3 * per_row:.2f} ms per row; "
          f"labels agree with the engine on {agree}/{len(picks)}")
    print(f"  naive per input EXTRAPOLATED: {1e3 * per_row:.2f} ms × {samples[-1]:,} samples = {naive_input:,.1f} s "
          f"→ batched is {speedup:,.0f}× faster")
    return {"name": name, "median": median, "speedup": speedup, "agree": (agree, len(picks))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["german_credit", "compas"])
    ap.add_argument("--inputs", type=int, default=20, help="test rows timed per dataset (median reported)")
    ap.add_argument("--references", type=int, default=100)
    ap.add_argument("--naive-rows", type=int, default=300, help="samples evaluated row by row (extrapolated)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    outs = [bench_dataset(name, args) for name in args.datasets]

    print(f"\n##### Summary (targets: ≥ {TARGET_SPEEDUP:.0f}× faster than naive; "
          f"German full run ≤ {TARGET_GERMAN_SECONDS:.0f} s)")
    print(f"{'dataset':<15}{'median s/input':>15}{'speedup':>10}{'':>2}{'naive agree':>12}{'time target':>13}")
    verdicts = []
    for o in outs:
        ok_speed = o["speedup"] >= TARGET_SPEEDUP
        ok_time = o["median"] <= TARGET_GERMAN_SECONDS if o["name"] == "german_credit" else None
        verdicts += [ok_speed] + ([ok_time] if ok_time is not None else [])
        time_verdict = "n/a" if ok_time is None else ("PASS" if ok_time else "FAIL")
        print(f"{o['name']:<15}{o['median']:>15.3f}{o['speedup']:>9,.0f}× {'PASS' if ok_speed else 'FAIL':<5}"
              f"{'%d/%d' % o['agree']:>9}{time_verdict:>13}")
    print("all targets: " + ("PASS" if all(verdicts) else "FAIL"))
    print("naive times are extrapolated from the timed subset of rows (see each dataset's block).")
    log("done")


if __name__ == "__main__":
    main()
