#!/usr/bin/env python
"""LENS speed, measured honestly (issue 15 §1, §5). Two parts, both run in full; nothing is extrapolated.

``paper``: the LENS paper's German credit setting — the 9 features of the Kaggle version (age, sex, job, housing,
savings, checking, credit amount, duration, purpose; built here from the bundled UCI file, sex read off
``personal_status_sex``), ExtraTrees (max depth 15, random state 0) behind the project's encoder, 100 references
predicted opposite to the input. The baseline is the paper's own algorithm written plainly below: for every subset
and direction, one batched ``predict`` over the references (as in the paper's code), then Alg. 1 in topological
order. Our engine (``lens_contexts`` + ``minimal_factors``) runs on the same model, inputs and references. It prints
per-input medians of both, their ratio, and the τ-minimal factor counts (which must be identical).

``wide``: German credit with all 20 groups, the GBDT demo model, τ = 0.9, R2I, 100 references: the layered search
(``search_factors``, its default budget of 2,000,000 model rows) per input. Targets: a factor or an exhausted budget
for every input, ≥ 98% of inputs with a factor, median ≤ 5 s per input.

Run from the repository root:  python bench/lens_speed.py [--parts paper wide] [--inputs 20 100]
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import ExtraTreesClassifier
from sklearn.pipeline import Pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explain_core import demo_model, load_demo  # noqa: E402
from explain_core.intake.data import make_dataset
from explain_core.intake.encoding import make_encoder
from explain_core.intake.models import wrap_model
from explain_core.lens import lens_contexts, opposite_references  # noqa: E402
from explain_core.lens.search import DEFAULT_BUDGET_ROWS, FactorSearch, search_factors  # noqa: E402

TAU = 0.9
PAPER_COLUMNS = {"age": "age", "sex": None, "job": "job", "housing": "housing", "savings_account": "savings_account",
                 "checking_account_status": "checking_account_status", "credit_amount": "credit_amount",
                 "duration_months": "duration_months", "purpose": "purpose"}


def log(msg: str) -> None:
    print(msg, flush=True)


def nine_feature_german():
    """The Kaggle German credit's 9 features (the paper's data) from the bundled UCI file, and ExtraTrees on them."""
    uci = load_demo("german_credit")
    frame = uci.features[[c for c in PAPER_COLUMNS if c != "sex"]].copy()
    frame.insert(1, "sex", uci.features["personal_status_sex"].str.split(":").str[0].str.strip())
    frame["credit_risk"] = uci.target.to_numpy()
    data = make_dataset(frame, "credit_risk", positive_class="bad", name="german_credit_9")
    train, test = data.split(0)
    pipe = Pipeline([("encode", make_encoder(data)),
                     ("model", ExtraTreesClassifier(max_depth=15, random_state=0))])
    pipe.fit(data.features.iloc[train], data.y[train])
    return data, wrap_model(pipe, data, positive_class=1, name="ExtraTrees (depth 15)"), train, test


def paper_lens(estimator, positive, groups, query: pd.DataFrame, references: pd.DataFrame, tau: float):
    """The paper's algorithm, plainly: per subset and direction one batched predict over the references; then
    Alg. 1 (minimalSuffFactors) in topological order, skipping supersets of accepted factors."""
    names = [g.name for g in groups]
    subsets = [s for k in range(len(names) + 1) for s in itertools.combinations(range(len(names)), k)]
    y = int(estimator.predict(query)[0] == positive)
    out = {}
    for direction in ("r2i", "i2r"):
        outcome = y if direction == "r2i" else 1 - y
        ps = {}
        for s in subsets:
            moved = [c for g in s for c in groups[g].columns]
            if direction == "r2i":  # the references with the subset at the input's values
                batch = references.copy()
                for c in moved:
                    batch[c] = query[c].iloc[0]
            else:  # the input with the subset at each reference's values
                batch = pd.concat([query] * len(references), ignore_index=True)
                for c in moved:
                    batch[c] = references[c].to_numpy()
            ps[s] = float(np.mean((estimator.predict(batch) == positive).astype(int) == outcome))
        cands = []
        for s in subsets:
            if any(set(c) <= set(s) for c in cands):
                continue
            if ps[s] >= tau:
                cands.append(s)
        out[direction] = {frozenset(names[g] for g in s) for s in cands}
    return out


def bench_paper(args) -> dict:
    log("=== paper setting: German credit, 9 features, ExtraTrees (depth 15), 100 references, τ = 0.9, R2I + I2R")
    data, model, train, test = nine_feature_german()
    rng = np.random.default_rng(args.seed)
    inputs = rng.choice(test, size=args.inputs[0], replace=False)
    ours, base, counts, agree = [], [], {"r2i": [], "i2r": []}, 0
    for i, row in enumerate(inputs):
        query = data.features.iloc[[row]]
        refs = opposite_references(model, data, query, train, n=args.references, seed=args.seed + i)
        t = time.perf_counter()
        contexts = lens_contexts(model, data, query, refs)
        found = {d: {frozenset(f.groups) for f in ctx.minimal_factors(TAU).factors} for d, ctx in contexts.items()}
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        theirs = paper_lens(model.estimator, model.positive_class, data.groups, query, refs.reset_index(drop=True), TAU)
        base.append(time.perf_counter() - t)
        agree += found == theirs
        for d in counts:
            counts[d].append(len(found[d]))
        log(f"  input {i + 1:3d}/{len(inputs)} (row {row}): engine {ours[-1]:.3f} s, "
            f"paper's algorithm {base[-1]:.2f} s, "
            f"factors R2I {len(found['r2i'])} I2R {len(found['i2r'])}, identical: {found == theirs}")
    med_ours, med_base = float(np.median(ours)), float(np.median(base))
    log(f"  {len(inputs)} inputs, {len(data.groups)} features, {2 ** len(data.groups)} subsets × 2 directions × "
        f"{args.references} references")
    log(f"  per input, median: engine {med_ours:.3f} s (p95 {np.percentile(ours, 95):.3f}), paper's algorithm "
        f"{med_base:.2f} s (p95 {np.percentile(base, 95):.2f}) → ratio of medians {med_base / med_ours:.1f}×; "
        f"total {sum(base) / sum(ours):.1f}×")
    log(f"  τ-minimal factors per input: R2I median {np.median(counts['r2i']):g} (total {sum(counts['r2i'])}), "
        f"I2R median {np.median(counts['i2r']):g} (total {sum(counts['i2r'])}); "
        f"identical sets on {agree}/{len(inputs)}")
    return {"ratio": med_base / med_ours, "agree": agree, "n": len(inputs)}


def bench_wide(args) -> dict:
    n_inputs = args.inputs[-1]
    log(f"=== wide data: German credit, 20 features, GBDT demo, τ = {TAU}, R2I, {args.references} references, "
        f"layered search, budget {args.budget:,} model rows, {n_inputs} inputs")
    data = load_demo("german_credit")
    trained = demo_model(data, "gbdt")
    model = trained.model
    rng = np.random.default_rng(args.seed)
    inputs = rng.choice(trained.test_rows, size=n_inputs, replace=False)
    times, outcomes, sizes, positives = [], [], [], [0, 0]
    for i, row in enumerate(inputs):
        query = data.features.iloc[[row]]
        refs = opposite_references(model, data, query, trained.train_rows, n=args.references, seed=args.seed + i)
        t = time.perf_counter()
        found = search_factors(model, data, query, refs,
                               FactorSearch(direction="r2i", tau=TAU, budget_rows=args.budget))
        times.append(time.perf_counter() - t)
        outcomes.append(found.stopped)
        label = int(model.label(query)[0])
        if found.result.factors:
            sizes.append(found.searched_size)
            positives[label] += 1
        log(f"  input {i + 1:3d}/{n_inputs} (row {row}, predicted {label}): {times[-1]:.2f} s, {found.stopped}, "
            f"size {found.searched_size}, {len(found.result.factors)} factor(s), {found.rows_scored:,} rows scored")
    with_factor = sum(o == "found" for o in outcomes)
    answered = sum(o in ("found", "budget", "memory", "complete") for o in outcomes)
    labels = model.label(data.features.iloc[inputs])
    median = float(np.median(times))
    log(f"  answered (a factor, or an honest 'none up to size s'): {answered}/{n_inputs}; with a factor: "
        f"{with_factor}/{n_inputs} (predicted positive: {positives[1]}/{int(labels.sum())}); budget exhausted: "
        f"{sum(o == 'budget' for o in outcomes)}; memory bound: {sum(o == 'memory' for o in outcomes)}")
    log(f"  smallest factor size: {dict(sorted(pd.Series(sizes).value_counts().items()))}")
    log(f"  seconds per input: median {median:.2f}, p95 {np.percentile(times, 95):.2f}, max {max(times):.2f}")
    ok = answered == n_inputs and with_factor >= 0.98 * n_inputs and median <= 5.0
    log(f"  targets (100% answered, ≥ 98% with a factor, median ≤ 5 s): {'PASS' if ok else 'FAIL'}")
    return {"ok": ok}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", nargs="+", default=["paper", "wide"], choices=["paper", "wide"])
    ap.add_argument("--inputs", type=int, nargs="+", default=[20, 100],
                    help="inputs of the paper part and of the wide part (one number: both)")
    ap.add_argument("--references", type=int, default=100)
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET_ROWS,
                    help="the layered search's budget per input (model rows scored)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    start = time.perf_counter()
    for part in args.parts:
        {"paper": bench_paper, "wide": bench_wide}[part](args)
    log(f"done in {time.perf_counter() - start:.0f} s (wall clock, this machine's load included)")


if __name__ == "__main__":
    main()
