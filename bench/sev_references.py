#!/usr/bin/env python
"""SEV against references real cases resemble ("Improving Decision Sparsity", issue 28), measured: SEV¹, SEV^F,
SEV^©, their credible searches and DiCE on Adult, COMPAS and German credit with the L2 logistic regression, MLP and
gradient-boosting demo models, on 3 seeded splits (``Dataset.split(seed)``, seeds 0, 1, 2), beside the authors'
released code on the same split, model family and rows.

SEV^© runs with both assignment rules (:data:`explain_core.references.ASSIGNMENTS`): "SEV^©" is the nearest typical
case (the paper's S7, K by the silhouette), "SEV^© (sparsest)" the one each row reaches by the fewest changes (K = 8,
ties by credibility, then distance), each on its own fits (the same density; its typical cases' fitting apart).

Per dataset × model × split, the queries are the first ``--rows`` test rows the model predicts positive. Printed per
method (mean ± SD over the splits): mean SEV (explained rows), median ℓ∞ (rows moving a numeric feature; population
SDs), mean credibility percentile (of the closest explanation, :mod:`explain_core.references.credibility`), share
explained, milliseconds per row batched (the dataset view's path: the median of 3 calls after a first one, which
builds the candidates' model inputs once and is printed apart as "ms first call") and one row at a time (the page's
path, median over the first 30 rows); the one-off fitting (population coordinates, density, windows, typical
cases) apart. DiCE runs on the first ``--dice-rows`` queries (seconds per row). The credible searches use threshold
0.10.

The authors' code (github.com/williamsyy/MultipleSEV at 31bc78a; a checkout named by ``--authors`` or
``MULTIPLESEV_DIR``, never copied into this repository) runs in a venv over this Python's packages plus PaCMAP,
created here under bench/out/multiplesev-venv (not a project dependency), through bench/multiplesev_runner.py, on
the project's own model and query rows with their reference in their column order, IN FULL on the first
``--authors-rows`` queries (default: every query; each searched to its end, no extrapolation); ours is timed on
the same rows too, batched, and each of their values is compared with ours row by row.
Its points are scored with our credibility percentile as well as its own GMM log-density.

Targets (issue 28): SEV^© or SEV^F mean ≤ 1.3 on every dataset/model pair; its ℓ∞ and credibility at least as good
as SEV¹; ≤ 10 ms per row after fitting; ≥ 5× faster per row than the authors' code.

With ``--sparsest-timing`` it only times SEV^© (sparsest), plain and credible, on the first 30 rows per pair (split
``--splits``' first): one row at a time and batched, wall and CPU ms per row; ``--against DIR`` times another checkout
too (DIR: a ``git worktree`` or ``git archive`` of another commit), each in a fresh process, back to back per pair.

Run from the repository root:  python bench/sev_references.py [--datasets compas] [--models l2_lr] [--splits 0]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

# this checkout's explain_core, or (set by --sparsest-timing) the checkout --against names
sys.path.insert(0, os.environ.get("SEV_REFERENCES_CODE") or str(Path(__file__).resolve().parent.parent))

from explain_core import demo_model, load_demo
from explain_core.analysis import make_setup, predicted_rows
from explain_core.counterfactuals import dice_points
from explain_core.references import ReferenceFits, explain_kind, summary_row

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
VENV = OUT / "multiplesev-venv"
PINNED = ["pacmap==0.7.6", "annoy==1.17.3"]  # over this Python's packages: their SEV^© needs PaCMAP
AUTHORS_K_M = {"adult": (7, 3), "compas": (5, 2), "german_credit": (3, 1.01)}  # their per-dataset K / m
KINDS = ("single", "flexible", "cluster", "sparsest")  # "sparsest": SEV^© with the sparsest assignment
LABELS = {"single": "SEV¹", "flexible": "SEV^F", "cluster": "SEV^©", "sparsest": "SEV^© (sparsest)"}
CREDIBLE = 0.10
ONE_ROW = 30
REPEATS = 5  # ours on the authors' rows: the median of this many calls
BATCH_REPEATS = 3  # ours batched: the median of this many calls after the first
COLUMNS = ("mean SEV", "median ℓ∞", "mean credibility", "explained", "ms per row", "ms first call",
           "ms one row")


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def ensure_venv() -> Path | None:
    """The authors' venv (this Python's packages, so it runs the project's model, plus PaCMAP pinned); None with
    the reason printed when it cannot be built."""
    python = VENV / "bin" / "python"
    if python.exists():
        return python
    OUT.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(VENV)], check=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", *PINNED], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        print("authors' venv: pip install of the pinned set failed:\n" + done.stderr[-2000:])
        return None
    return python


def probe_their_requirements(authors: Path) -> list[str]:
    """What their own requirements.txt does on this Python, line by line (pip's dry run, 180 s each), kept in
    bench/out: the first error of each line that fails."""
    cache = OUT / "authors_requirements.txt"
    if cache.exists():
        return cache.read_text().splitlines()
    failures = []
    for line in (authors / "requirements.txt").read_text().split():
        try:
            done = subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "--dry-run", "-q", line],
                                  capture_output=True, text=True, timeout=180, check=False)
        except subprocess.TimeoutExpired:
            failures.append(f"{line}: no resolution within 180 s (pip builds old pinned dependencies from source)")
            continue
        errors = [e for e in done.stderr.splitlines() if e.startswith("ERROR") or "error:" in e.lower()]
        if done.returncode != 0:
            failures.append(f"{line}: {errors[0] if errors else 'exit ' + str(done.returncode)}")
    cache.write_text("\n".join(failures))
    return failures


def ours(setup, rows: np.ndarray, seed: int) -> tuple[dict, dict, dict]:
    """Every kind (plain and credible) batched and one row at a time; the fitting seconds. SEV^© is run with both
    assignments (nearest: the silhouette's K; sparsest: 8 typical cases), each on its own fits."""
    fits = ReferenceFits(setup, seed=seed, assignment="nearest")
    sparse = ReferenceFits(setup, seed=seed, assignment="sparsest")
    started = time.perf_counter()
    part = fits[1]
    fit = {}
    for name in ("space", "density", "windows", "prototypes"):
        getattr(part, name)
        fit[name] = part.seconds[name]
    fit["total"] = time.perf_counter() - started
    for name in ("space", "density", "prototypes"):  # its own fits: the same but the typical cases (K = 8)
        getattr(sparse[1], name)
    fit["prototypes (sparsest)"] = sparse[1].seconds["prototypes"]
    queries = setup.dataset.features.iloc[rows]
    results, found = {}, {}
    for kind in KINDS:
        on, name = (sparse, "cluster") if kind == "sparsest" else (fits, kind)
        for gate in (None, CREDIBLE):
            label = LABELS[kind] + (" (credible)" if gate is not None else "")
            started = time.perf_counter()
            batch = explain_kind(setup, queries, name, on, credible=gate)  # builds the candidates' inputs (kept)
            first = time.perf_counter() - started
            again = [_timed(lambda: explain_kind(setup, queries, name, on, credible=gate))[0]
                     for _ in range(BATCH_REPEATS)]
            one = [_timed(lambda i=i: explain_kind(setup, queries.iloc[[i]], name, on, credible=gate))[0]
                   for i in range(min(ONE_ROW, len(rows)))]
            results[label] = {**summary_row(batch), "ms per row": float(np.median(again)) / len(rows),
                              "ms first call": 1000 * first / len(rows), "ms one row": float(np.median(one))}
            found[label] = batch
    return results, found, {"fits": fits, "fit": fit}


def _timed(call) -> tuple[float, float]:
    """Wall and CPU (``time.process_time``) milliseconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return 1000 * (time.perf_counter() - wall), 1000 * (time.process_time() - cpu)


def sparsest_timing(name: str, kind: str, seed: int) -> dict:
    """SEV^© (sparsest; ``ReferenceFits`` fitted first), plain and credible, on the first ``ONE_ROW`` test rows the
    model predicts positive: one row at a time (median over the rows) and the rows batched (median of 3 calls), wall
    and CPU ms per row, each after one untimed call."""
    data = load_demo(name)
    setup = make_setup(data, demo_model(data, kind, seed=seed))
    queries = setup.dataset.features.iloc[predicted_rows(setup)[:ONE_ROW]]
    fits = ReferenceFits(setup, seed=seed)
    out: dict = {"rows": len(queries)}
    for gate in (None, CREDIBLE):
        def explain(frame):
            return lambda: explain_kind(setup, frame, "cluster", fits, credible=gate)
        explain(queries)()
        explain(queries.iloc[[0]])()
        one = [_timed(explain(queries.iloc[[i]])) for i in range(len(queries))]
        batch = [_timed(explain(queries)) for _ in range(3)]
        out["plain" if gate is None else "credible"] = {
            "one row": np.median(one, axis=0).tolist(), "batched": (np.median(batch, axis=0) / len(queries)).tolist()}
    return out


def timing(args) -> None:
    """``--sparsest-timing``: per dataset × model, this checkout's :func:`sparsest_timing` and, with ``--against``,
    the other checkout's, each in a fresh process, back to back; the load average beside each pair."""
    print(f"load at start: {load()}")
    codes = {"--against": args.against} if args.against else {}
    codes["this checkout"] = str(ROOT.parent)
    for name in args.datasets:
        for kind in args.models:
            found = {}
            for label, code in codes.items():
                done = subprocess.run([sys.executable, __file__, "--timing-json", "--datasets", name, "--models", kind,
                                       "--splits", str(args.splits[0])], capture_output=True, text=True, check=True,
                                      env={**os.environ, "SEV_REFERENCES_CODE": code})
                found[label] = json.loads(done.stdout.splitlines()[-1])
            print(f"\n{name} × {kind}, split {args.splits[0]}, {found['this checkout']['rows']} rows; load {load()}")
            print(f"  {'SEV^© (sparsest)':32s}{'one row: wall / CPU ms':>26s}{'batched: wall / CPU ms per row':>34s}")
            for gate in ("plain", "credible"):
                for label in codes:
                    one, batch = found[label][gate]["one row"], found[label][gate]["batched"]
                    print(f"  {gate + ', ' + label:32s}{one[0]:>16.2f} / {one[1]:7.2f}{batch[0]:>24.2f} / "
                          f"{batch[1]:7.2f}")
                if args.against:
                    old, new = found["--against"][gate], found["this checkout"][gate]
                    print(f"  {gate + ', against / this':32s}{old['one row'][0] / new['one row'][0]:>16.2f}×"
                          f"{old['batched'][0] / new['batched'][0]:>33.2f}× (wall)")
    print(f"\nload at end: {load()}" + (f"; --against: {args.against}" if args.against else ""))


def dice(setup, rows: np.ndarray, fits, seed: int) -> dict:
    values, linf, cred, seconds = [], [], [], []
    for r in rows:
        found = dice_points(setup, setup.query(int(r)), fits[1], seed=seed)
        seconds.append(found.seconds)
        if found.points:
            values.append(np.mean([p.l0 for p in found.points]))
            linf.append(np.mean([p.linf for p in found.points]))
            cred.append(np.mean([p.credibility for p in found.points]))
    return {"mean SEV": float(np.mean(values)) if values else np.nan,
            "median ℓ∞": float(np.median(linf)) if linf else np.nan,
            "mean credibility": float(np.mean(cred)) if cred else np.nan, "explained": len(values) / max(1, len(rows)),
            "ms per row": 1000 * float(np.mean(seconds)), "ms one row": 1000 * float(np.median(seconds))}


def authors(python: Path, checkout: Path, setup, name: str, kind: str, seed: int, rows: np.ndarray,
            fits) -> dict | None:
    """Their code on ``rows`` (the ones their model also predicts positive), with our metrics of their points."""
    OUT.mkdir(parents=True, exist_ok=True)
    stem = OUT / f"authors_{name}_{kind}_{seed}"
    k, m = AUTHORS_K_M[name]
    job = {"dataset": name, "train": setup.train_rows.tolist(), "queries": rows.tolist(), "model": kind,
           "seed": seed, "clusters": k, "m": m}
    Path(f"{stem}.job.json").write_text(json.dumps(job))
    done = subprocess.run([str(python), str(ROOT / "multiplesev_runner.py"), "--authors", str(checkout), "--job",
                           f"{stem}.job.json", "--out", f"{stem}.out.json"], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        print(f"  authors' code failed on {name}/{kind}/{seed}:\n{done.stderr[-1500:]}")
        return None
    raw = json.loads(Path(f"{stem}.out.json").read_text())
    density = fits[1].density
    out = {"rows": raw["rows"], "test_accuracy": raw["test_accuracy"], "fit": raw["fit_seconds"],
           "misplaced by position": raw["misplaced by position"],
           "values": {label: raw[label]["value"] for label in ("SEV¹", "SEV^F", "SEV^©")}}
    for label in ("SEV¹", "SEV^F", "SEV^©"):
        r = raw[label]
        points = pd.DataFrame(r["points"])
        points = points.reindex(columns=setup.dataset.columns).fillna(setup.dataset.features.iloc[raw["rows"]]
                                                                       .reset_index(drop=True))
        linf = [v for v in r["linf"] if v > 0]
        out[label] = {"mean SEV": float(np.mean(r["value"])), "median ℓ∞": float(np.median(linf)) if linf else 0.0,
                      "mean credibility": float(np.mean(density.percentile(points.infer_objects()))),
                      "mean log-density": float(np.mean(r["log_density"])), "explained": 1.0,
                      "ms per row": 1000 * float(np.mean(r["seconds"])),
                      "ms one row": 1000 * float(np.median(r["seconds"]))}
    return out


def run_one(name: str, kind: str, seed: int, args, python, checkout) -> dict:
    data = load_demo(name)
    setup = make_setup(data, demo_model(data, kind, seed=seed))
    rows = predicted_rows(setup)[:args.rows]
    results, found, extra = ours(setup, rows, seed)
    out = {"queries": len(rows), "fit": extra["fit"], "ours": results,
           "accuracy": setup.metrics.get("test_accuracy")}
    out["ours"]["DiCE (random)"] = dice(setup, rows[:args.dice_rows], extra["fits"], seed)
    if python is not None and args.authors_rows != 0:
        theirs = authors(python, checkout, setup, name, kind, seed, rows[:args.authors_rows], extra["fits"])
        if theirs is not None:
            same = np.asarray(theirs["rows"])
            subset = setup.dataset.features.iloc[same]
            timed = {}
            for k in KINDS[:3]:  # the median of REPEATS batched calls (the fits and candidates built before)
                calls = [_timed(lambda k=k: explain_kind(setup, subset, k, extra["fits"]))[0] for _ in range(REPEATS)]
                timed[LABELS[k]] = float(np.median(calls)) / max(1, len(same))
            out["authors"], out["ours_on_authors_rows"] = theirs, timed
            position = {int(r): i for i, r in enumerate(rows)}
            for label in ("SEV¹", "SEV^F", "SEV^©"):  # their value against ours, row by row (the same model)
                mine = [found[label][position[int(r)]] for r in same]
                equal = sum(m.explainable and m.value == v for m, v in zip(mine, theirs["values"][label]))
                theirs[label]["equal to ours"] = [int(equal), len(same)]
    return out


def aggregate(runs: list[dict], side: str, method: str) -> dict:
    values = [r[side][method] for r in runs if side in r and method in r[side]]
    return {c: (float(np.nanmean([v[c] for v in values])), float(np.nanstd([v[c] for v in values])))
            for c in COLUMNS if values and c in values[0]}


def report(name: str, kind: str, runs: list[dict]) -> None:
    print(f"\n{name} × {kind}: {runs[0]['queries']} queries per split, splits {len(runs)}, test accuracy "
          f"{np.mean([r['accuracy'] for r in runs]):.3f}; load {load()}")
    fit = {k: np.mean([r["fit"][k] for r in runs]) for k in runs[0]["fit"]}
    print("  one-off fitting (s): " + ", ".join(f"{k} {v:.2f}" for k, v in fit.items()))
    print(f"  {'method':22s}" + "".join(f"{c:>20s}" for c in COLUMNS))
    for side in ("ours", "authors"):
        for method in (runs[0].get(side) or {}):
            if method in ("rows", "test_accuracy", "fit", "misplaced by position", "values"):
                continue
            agg = aggregate(runs, side, method)
            label = ("authors' " if side == "authors" else "") + method
            print(f"  {label:22s}" + "".join(f"{agg[c][0]:>13.3f} ±{agg[c][1]:5.3f}" if c in agg else f"{'—':>20s}"
                                             for c in COLUMNS))
    if all("authors" in r for r in runs):
        for method in ("SEV¹", "SEV^F", "SEV^©"):
            ratio = [r["authors"][method]["ms per row"] / max(1e-9, r["ours_on_authors_rows"][method]) for r in runs]
            equal = np.sum([r["authors"][method]["equal to ours"] for r in runs], axis=0)
            print(f"  {method}: theirs equals ours on {equal[0]} of {equal[1]} rows; their time / ours per row "
                  f"{np.mean(ratio):.1f}× (their model calls decode to raw rows: not their own speed)")
        other, differ, columns = runs[0]["authors"]["misplaced by position"]
        print(f"  their default reference, by position: {other} of {columns} encoded columns would get another "
              f"column's entry, {differ} of them a different value (passed in column order here)")
    single = aggregate(runs, "ours", "SEV¹")
    met = []
    for method in ("SEV^F", "SEV^©", "SEV^© (sparsest)"):
        agg = aggregate(runs, "ours", method)
        checks = {"mean ≤ 1.3": agg["mean SEV"][0] <= 1.3, "ℓ∞ ≤ SEV¹'s": agg["median ℓ∞"][0] <= single["median ℓ∞"][0],
                  "credibility ≥ SEV¹'s": agg["mean credibility"][0] >= single["mean credibility"][0],
                  "≤ 10 ms per row": agg["ms per row"][0] <= 10}
        met += [method] if all(checks.values()) else []
        print(f"  targets, {method}: " + "; ".join(f"{k}: {v}" for k, v in checks.items()))
    print(f"  every target met by: {', '.join(met) or 'none'}")


def markdown(everything: dict) -> str:
    """The saved results as one markdown table (mean over the splits)."""
    lines = ["| data × model | method | mean SEV | median ℓ∞ (SD) | credibility | ms / row (batch) | ms (one row) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for pair, runs in everything.items():
        for side in ("ours", "authors"):
            for method in (runs[0].get(side) or {}):
                if method in ("rows", "test_accuracy", "fit", "misplaced by position", "values"):
                    continue
                agg = aggregate(runs, side, method)
                label = ("authors' " if side == "authors" else "") + method
                cells = [f"{agg[c][0]:.3f}" if c in ("mean SEV", "median ℓ∞", "mean credibility") else
                         f"{agg[c][0]:.2f}" for c in ("mean SEV", "median ℓ∞", "mean credibility", "ms per row",
                                                      "ms one row")]
                lines.append(f"| {pair} | {label} | " + " | ".join(cells) + " |")
    lines += ["", "| data × model | rows | authors' SEV¹ / ours, ms per row | SEV^F | SEV^© |",
              "| --- | --- | --- | --- | --- |"]
    for pair, runs in everything.items():
        if all("authors" in r for r in runs):
            cells = []
            for method in ("SEV¹", "SEV^F", "SEV^©"):
                theirs = np.mean([r["authors"][method]["ms per row"] for r in runs])
                mine = np.mean([r["ours_on_authors_rows"][method] for r in runs])
                cells.append(f"{theirs:.2f} / {mine:.2f} = {theirs / mine:.1f}×")
            lines.append(f"| {pair} | {len(runs[0]['authors']['rows'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["adult", "compas", "german_credit"])
    parser.add_argument("--models", nargs="+", default=["l2_lr", "mlp", "gbdt"])
    parser.add_argument("--splits", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--dice-rows", type=int, default=20)
    parser.add_argument("--authors-rows", type=int, default=None,
                        help="the authors' code on the first N queries (default: every query; 0: not run)")
    parser.add_argument("--authors", default=os.environ.get("MULTIPLESEV_DIR"))
    parser.add_argument("--markdown", action="store_true", help="print the saved results as a table and stop")
    parser.add_argument("--append", action="store_true", help="add to the saved results instead of replacing them")
    parser.add_argument("--sparsest-timing", action="store_true",
                        help="only time SEV^© (sparsest) one row at a time and batched (module docstring)")
    parser.add_argument("--against", help="with --sparsest-timing: another checkout to time too, back to back")
    parser.add_argument("--timing-json", action="store_true", help=argparse.SUPPRESS)  # one pair, for timing()
    args = parser.parse_args()
    if args.timing_json:
        print(json.dumps(sparsest_timing(args.datasets[0], args.models[0], args.splits[0])))
        return
    if args.sparsest_timing:
        timing(args)
        return
    if args.markdown:
        print(markdown(json.loads((OUT / "sev_references.json").read_text())))
        return
    print(f"load at start: {load()}")
    checkout = Path(args.authors) if args.authors else None
    python = ensure_venv() if checkout is not None and args.authors_rows != 0 else None
    if checkout is None:
        print("authors' code: not run (give --authors PATH or MULTIPLESEV_DIR: a checkout of williamsyy/MultipleSEV)")
    elif python is not None:
        print("authors' requirements.txt on this Python (dry run):\n  " + "\n  ".join(probe_their_requirements(checkout)
                                                                                   or ["installs"]))
        print(f"authors' venv: {VENV}: this Python's packages (the project's model runs in it) and "
              f"{' '.join(PINNED)}")
    saved = OUT / "sev_references.json"
    everything = json.loads(saved.read_text()) if args.append and saved.exists() else {}
    for name in args.datasets:
        for kind in args.models:
            runs = [run_one(name, kind, seed, args, python, checkout) for seed in args.splits]
            everything[f"{name}/{kind}"] = runs
            report(name, kind, runs)
            OUT.mkdir(parents=True, exist_ok=True)
            (OUT / "sev_references.json").write_text(json.dumps(everything, default=str, indent=1))
    print(f"\nload at end: {load()}")


if __name__ == "__main__":
    main()
