#!/usr/bin/env python
"""SEV paper, Table 1: mean SEV⁺ / SEV⁻ of the four reference classifiers on German credit, 10 splits.

For split s = 0..9 and each demo model kind (L1 LR with C = 1 as the paper's code, L2 LR, MLP, GBDT; App. B
settings), the model is trained with ``train_model(data, kind, seed=s)`` (the stratified 80/20 split also uses
seed s; no disk cache), the reference is built from that split's training rows (mean / mode over the training
rows of the negative class), and SEV⁺ and SEV⁻ are computed by ``sev_batch`` for every TEST row the model
predicts positive, with the maximum depth set to the number of feature groups (exact: a query is then either
explained or provably unexplainable). Per split we average over the queries that have an explanation; the
table shows mean ± sd (ddof=1) of those split averages, as in the paper, beside the paper's Table 1.

A second column, "paper layout", recomputes SEV with the reference as the paper's code applies it. Its
``DataEncoder`` lists the reference vector feature by feature (each categorical feature's one-hot values in
place), while its ``transform`` moves every categorical feature's one-hot columns to the end: the vector is
applied by position, so on German credit most encoded columns receive another column's reference value (and
the one-hot columns fractional or doubled values). That reference is computed here in the same encoded space
(our encoder's columns renamed into the paper's two orders) and the SEV searched by a plain batched BFS to
depth 6 (the paper's default) from depth 1, as the paper's ``sev_cal`` does (it never reports 0); the table
says which of the two reproduces the paper's Table 1.

Run from the repository root:  python bench/sev_table1.py [--splits 10] [--kinds l1_lr gbdt]
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
from math import comb
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explain_core import load_demo, make_reference, sev_batch  # noqa: E402
from explain_core.intake.data import GroupLayout
from explain_core.intake.demo_models import train_model
from explain_core.intake.encoding import encoded_model

PAPER_LAYOUT_DEPTH = 6

KINDS = ("l1_lr", "l2_lr", "mlp", "gbdt")
TITLE = {"l1_lr": "L1 LR", "l2_lr": "L2 LR", "mlp": "MLP", "gbdt": "GBDT"}
# SEV paper (Sun et al.), Table 1, German credit: mean ± sd over 10 splits
PAPER = {
    "l1_lr": {"acc": (0.74, 0.02), "auc": (0.77, 0.03), "plus": (1.00, 0.00), "minus": (1.29, 0.14)},
    "l2_lr": {"acc": (0.73, 0.03), "auc": (0.76, 0.03), "plus": (1.00, 0.00), "minus": (1.74, 0.16)},
    "mlp": {"acc": (0.76, 0.03), "auc": (0.77, 0.08), "plus": (1.04, 0.08), "minus": (1.58, 0.22)},
    "gbdt": {"acc": (0.75, 0.03), "auc": (0.78, 0.02), "plus": (1.10, 0.24), "minus": (1.58, 0.22)},
}
T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:7.1f}s] {msg}", flush=True)


def mean_sd(values) -> tuple[float, float]:
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if len(v) == 0:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def fmt(pair) -> str:
    return f"{pair[0]:.2f} ± {pair[1]:.2f}"


def staged_sev(model, layout, queries, reference, kind, depth, args):
    """``sev_batch`` to ``--first-depth``, then to ``depth`` for the queries left beyond it when that costs at
    most ``--vertex-budget`` more vertices (a query with no flip at all costs the whole 2^p hypercube). Values only:
    each search stops at its first flip (``explanations="first"``, the paper's code; the same values)."""
    first = min(depth, args.first_depth)
    res = sev_batch(model, layout, queries, reference, kind=kind, max_depth=first, keep_scores=False,
                    explanations="first")
    left = [i for i, r in enumerate(res) if r.status == "beyond_depth"]
    if left and depth > first:
        cost = len(left) * sum(comb(layout.size, d) for d in range(first + 1, depth + 1))
        if cost <= args.vertex_budget:
            deeper = sev_batch(model, layout, queries.iloc[left], reference, kind=kind, max_depth=depth,
                               keep_scores=False, explanations="first")
            for i, r in zip(left, deeper):
                res[i] = r
        else:
            log(f"  {kind}: {len(left)} queries beyond depth {first}; going to depth {depth} would cost "
                f"{cost:,} vertices > budget {args.vertex_budget:,}: left as beyond depth")
    return res


def paper_layout_reference(data, split, reference) -> np.ndarray:
    """Our encoded reference, applied by position as the paper's code does (see the module docstring)."""
    correct = split.encode(reference.as_frame(data.columns))[0]
    groups = split.column_group
    categorical = [i for i, g in enumerate(data.groups) if g.kind == "categorical"]
    listed = [j for g in range(len(data.groups)) for j in np.flatnonzero(groups == g)]  # feature by feature
    applied = ([j for g in range(len(data.groups)) if g not in categorical for j in np.flatnonzero(groups == g)]
               + [j for g in categorical for j in np.flatnonzero(groups == g)])  # categorical one-hots last
    out = np.empty_like(correct)
    out[applied] = correct[listed]
    return out


def batched_bfs(model, split, queries: np.ndarray, reference: np.ndarray, p: int, kind: str, depth: int) -> list:
    """SEV of each encoded query against an encoded reference as the paper's ``sev_cal`` searches it: from
    depth 1 (so SEV⁺ is at least 1 even when the reference already has the query's class), one model call per
    layer here (None beyond ``depth``)."""
    score = lambda X: model.scores_of(split.estimator, X) > model.threshold  # noqa: E731
    classes = score(queries)
    out: list = [None] * len(queries)
    for d in range(1, depth + 1):
        todo = [i for i, v in enumerate(out) if v is None]
        if not todo:
            break
        masks = np.zeros((comb(p, d), p), dtype=bool)
        for row, combo in enumerate(itertools.combinations(range(p), d)):
            masks[row, list(combo)] = True
        keep = ~masks if kind == "minus" else masks  # True: the query's value
        rows = np.where(keep[None, :, split.column_group], queries[todo][:, None, :], reference)
        labels = score(rows.reshape(-1, rows.shape[-1])).reshape(len(todo), len(masks))
        hit = (labels != classes[todo][:, None]) if kind == "minus" else (labels == classes[todo][:, None])
        for i, found in zip(todo, hit.any(axis=1)):
            if found:
                out[i] = d
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--max-depth", type=int, default=0, help="BFS depth limit (0 = number of groups: exact)")
    ap.add_argument("--first-depth", type=int, default=8,
                    help="first pass depth; queries beyond it are searched to --max-depth within --vertex-budget")
    ap.add_argument("--vertex-budget", type=int, default=5_000_000,
                    help="most extra vertices per model/split/kind for the exact second pass")
    args = ap.parse_args()

    data = load_demo("german_credit")
    layout = GroupLayout.of(data)
    depth = args.max_depth or layout.size
    print(f"German credit: {len(data.features)} rows, {layout.size} feature groups, positive class "
          f"{data.positive_class!r}; {args.splits} splits (seed = split index), max depth {depth}"
          f"{' (= number of groups, exact)' if depth >= layout.size else ''}", flush=True)

    rows = {k: [] for k in args.kinds}  # per split: dict of metrics
    for s in range(args.splits):
        for kind in args.kinds:
            t = time.perf_counter()
            trained = train_model(data, kind, seed=s)
            t_fit = time.perf_counter() - t
            model = trained.model
            reference = make_reference(data, trained.train_rows)
            test = data.features.iloc[trained.test_rows]
            queries = test[model.label(test) == 1]
            scores = model.score(test)
            ref_score = float(model.score(reference.as_frame(data.columns))[0])
            rec = {"acc": trained.metrics["test_accuracy"], "auc": trained.metrics["test_auc"], "n": len(queries),
                   "constant": bool(np.ptp(scores) == 0), "ref_score": ref_score}
            t = time.perf_counter()
            split = encoded_model(model, data.groups)
            paper_reference = paper_layout_reference(data, split, reference)
            rec["paper_ref_score"] = float(model.scores_of(split.estimator, paper_reference[None, :])[0])
            for sev_kind in ("plus", "minus") if len(queries) else ():
                res = staged_sev(model, layout, queries, reference, sev_kind, depth, args)
                vals = [r.value for r in res if r.explainable]
                rec[sev_kind] = float(np.mean(vals)) if vals else float("nan")
                laid = [v for v in batched_bfs(model, split, split.encode(queries), paper_reference, layout.size,
                                               sev_kind, PAPER_LAYOUT_DEPTH) if v is not None]
                rec[f"{sev_kind}_layout"] = float(np.mean(laid)) if laid else float("nan")
                rec[f"{sev_kind}_beyond"] = sum(r.status == "beyond_depth" for r in res)
                rec[f"{sev_kind}_unexpl"] = sum(r.status == "unexplainable" for r in res)
                rec[f"{sev_kind}_max"] = max(vals) if vals else None
                rec[f"{sev_kind}_searched"] = min((r.max_depth for r in res), default=depth)
            rows[kind].append(rec)
            if not len(queries):
                what = (f"the model is constant (every test score {scores[0]:.3f}, threshold {model.threshold})"
                        if rec["constant"] else f"no test score above the threshold {model.threshold}")
                log(f"split {s} {TITLE[kind]:<5}: acc {rec['acc']:.3f} AUC {rec['auc']:.3f}, NO test row predicted "
                    f"positive — {what}; SEV undefined for this split; fit {t_fit:.1f}s")
                continue
            not_expl = "".join(f", {k} not explained: {rec[f'{k}_beyond']} beyond depth {rec[f'{k}_searched']} / "
                               f"{rec[f'{k}_unexpl']} unexplainable" for k in ("plus", "minus")
                               if rec[f"{k}_beyond"] or rec[f"{k}_unexpl"])
            log(f"split {s} {TITLE[kind]:<5}: acc {rec['acc']:.3f} AUC {rec['auc']:.3f}, {rec['n']:3d} queries, "
                f"ref score {ref_score:.3f} (paper layout {rec['paper_ref_score']:.3f}), SEV⁺ {rec['plus']:.3f} "
                f"(max {rec['plus_max']}), SEV⁻ {rec['minus']:.3f} (max {rec['minus_max']}); paper layout SEV⁺ "
                f"{rec['plus_layout']:.3f}, SEV⁻ {rec['minus_layout']:.3f}{not_expl}; fit {t_fit:.1f}s, "
                f"SEV {time.perf_counter() - t:.1f}s")

    print(f"\n##### Table 1 (German credit), mean ± sd over {args.splits} splits — ours, ours with the paper code's "
          "reference layout, and the paper")
    header = f"{'':<24}" + "".join(f"{TITLE[k]:^42}" for k in args.kinds)
    print(header)
    print(f"{'':<24}" + "".join(f"{'ours':>13} {'paper layout':>13} {'paper':>13} " for _ in args.kinds))
    print("-" * len(header))
    for key, label in (("acc", "Test accuracy"), ("auc", "Test AUC"), ("plus", "SEV⁺"), ("minus", "SEV⁻"),
                       ("ref", "reference's score")):
        line = f"{label:<24}"
        for k in args.kinds:
            ours = mean_sd(r.get(key, np.nan) for r in rows[k]) if key != "ref" else mean_sd(
                r.get("ref_score", np.nan) for r in rows[k])
            laid = (mean_sd(r.get(f"{key}_layout", np.nan) for r in rows[k]) if key in ("plus", "minus") else
                    mean_sd(r.get("paper_ref_score", np.nan) for r in rows[k]) if key == "ref" else ours)
            paper = fmt(PAPER[k][key]) if key in PAPER[k] else ""
            line += f"{fmt(ours):>13} {fmt(laid):>13} {paper:>13} "
        print(line)
    line = f"{'queries / split (mean)':<24}"
    for k in args.kinds:
        line += f"{np.mean([r['n'] for r in rows[k]]):>13.1f} {'':>13} {'':>13} "
    print(line)
    line = f"{'splits with SEV':<24}"
    for k in args.kinds:
        line += f"{sum(r['n'] > 0 for r in rows[k]):>10} of {len(rows[k]):<2}{'':>13} {'':>13} "
    print(line)
    for sev_kind, label in (("plus", "SEV⁺"), ("minus", "SEV⁻")):
        line = f"{label + ' not explained':<24}"
        for k in args.kinds:
            beyond = sum(r.get(f"{sev_kind}_beyond", 0) for r in rows[k])
            unexpl = sum(r.get(f"{sev_kind}_unexpl", 0) for r in rows[k])
            line += f"{f'{beyond}+{unexpl}':>13} {'':>13} {'':>13} "
        print(line)
    print("\n'splits with SEV': splits where at least one test row is predicted positive (SEV means are over those "
          "splits only; a split without queries has no SEV).\n'not explained' (summed over splits) = "
          "beyond depth + unexplainable: no flip within the depth searched / nowhere on the hypercube; "
          "such queries are left out of the means.")
    distance = {}
    for which, suffix in (("ours", ""), ("paper layout", "_layout")):
        distance[which] = np.mean([abs(mean_sd(r.get(f"{key}{suffix}", np.nan) for r in rows[k])[0] - PAPER[k][key][0])
                                   for k in args.kinds for key in ("plus", "minus")])
    closer = min(distance, key=distance.get)
    scores = {w: np.mean([mean_sd(r.get(key, np.nan) for r in rows[k])[0] for k in args.kinds])
              for w, key in (("ours", "ref_score"), ("paper layout", "paper_ref_score"))}
    plus = {w: np.mean([mean_sd(r.get(f"plus{suffix}", np.nan) for r in rows[k])[0] for k in args.kinds])
            for w, suffix in (("ours", ""), ("paper layout", "_layout"))}
    print(f"\nWhich reproduces Table 1: the {closer.upper()} column (mean |difference| from the paper's SEV⁺/SEV⁻: "
          + ", ".join(f"{w} {d:.2f}" for w, d in distance.items()) + "). Why: the reference's score (P(bad credit)) "
          f"averages {scores['paper layout']:.2f} in the paper layout against {scores['ours']:.2f} for ours; a "
          "reference scored near or above the threshold already has the queries' class, so the paper code's "
          f"search from depth 1 stops at once (SEV⁺ {plus['paper layout']:.2f} on average, the paper's ≈ 1), while "
          f"ours, the typical good-credit applicant of SEV §3, is predicted negative (SEV⁺ {plus['ours']:.2f}).")
    constant = {k: sum(r["constant"] for r in rows[k]) for k in args.kinds}
    for k, c in constant.items():
        if c:
            print(f"NOTE: {TITLE[k]} is a constant model (every test score equal) in {c} of {len(rows[k])} splits.")
    log("done")


if __name__ == "__main__":
    main()
