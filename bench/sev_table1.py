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
says which column reproduces the paper's Table 1.

A third column, "authors' code" (``--no-authors-build`` leaves it out), is the whole pipeline as the authors'
Experiment0.py builds it (their encoding of the coded UCI table fitted on every negative row, their positional
median reference, an unstratified split, their ``model_loader``: L1 / L2 LR liblinear with C = 1, …; see
``sev_paper_code``), with ``--l1-c`` to try another C for L1 LR. Their Experiment0.py fits German's L1 LR with
C = 1 (SEV⁻ 1.75 against the table's 1.29); the same authors' follow-up code ("Improving Decision Sparsity",
williamsyy/MultipleSEV at 31bc78a, ``Experiments/Experiment 1 Original.py`` l. 57–65 and its Flexible / Cluster
siblings) fits German's L1 and L2 LR with C = 0.1 (``FOLLOWUP_C``), which ``--l1-c 0.1`` runs: the verdict
line says whether that C reproduces the table.

Run from the repository root:  python bench/sev_table1.py [--splits 10] [--kinds l1_lr gbdt] [--l1-c 0.1]
"""
from __future__ import annotations

import argparse
import sys
import time
from math import comb
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explain_core import BFSSearch, load_demo, make_reference, sev_batch  # noqa: E402
from explain_core.intake.layout import GroupLayout
from explain_core.intake.demo_models import train_model
from explain_core.intake.encoding import encoded_model
from sev_paper_code import DEPTH as PAPER_LAYOUT_DEPTH
from sev_paper_code import batched_bfs, table1_split

KINDS = ("l1_lr", "l2_lr", "mlp", "gbdt")
TITLE = {"l1_lr": "L1 LR", "l2_lr": "L2 LR", "mlp": "MLP", "gbdt": "GBDT"}
# SEV paper (Sun et al.), Table 1, German credit: mean ± sd over 10 splits
PAPER = {
    "l1_lr": {"acc": (0.74, 0.02), "auc": (0.77, 0.03), "plus": (1.00, 0.00), "minus": (1.29, 0.14)},
    "l2_lr": {"acc": (0.73, 0.03), "auc": (0.76, 0.03), "plus": (1.00, 0.00), "minus": (1.74, 0.16)},
    "mlp": {"acc": (0.76, 0.03), "auc": (0.77, 0.08), "plus": (1.04, 0.08), "minus": (1.58, 0.22)},
    "gbdt": {"acc": (0.75, 0.03), "auc": (0.78, 0.02), "plus": (1.10, 0.24), "minus": (1.58, 0.22)},
}
FOLLOWUP_C = 0.1  # German's L1 / L2 LR in the authors' follow-up code (MultipleSEV, Experiment 1 *.py)
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
    res = sev_batch(model, layout, queries, reference,
                    BFSSearch(kind=kind, max_depth=first, keep_scores=False, explanations="first"))
    left = [i for i, r in enumerate(res) if r.status == "beyond_depth"]
    if left and depth > first:
        cost = len(left) * sum(comb(layout.size, d) for d in range(first + 1, depth + 1))
        if cost <= args.vertex_budget:
            deeper = sev_batch(model, layout, queries.iloc[left], reference,
                               BFSSearch(kind=kind, max_depth=depth, keep_scores=False, explanations="first"))
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


def ours_split(data, layout, kind: str, s: int, depth: int, args) -> dict:
    """One split of our Table 1: the demo model, our reference, exact SEV; and the paper layout of our reference."""
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
           "constant": bool(np.ptp(scores) == 0), "ref_score": ref_score, "t_fit": t_fit,
           "threshold": model.threshold}
    split = encoded_model(model, data.groups)
    paper_reference = paper_layout_reference(data, split, reference)
    rec["paper_ref_score"] = float(model.scores_of(split.estimator, paper_reference[None, :])[0])
    label = lambda X: model.scores_of(split.estimator, X) > model.threshold  # noqa: E731
    for sev_kind in ("plus", "minus") if len(queries) else ():
        res = staged_sev(model, layout, queries, reference, sev_kind, depth, args)
        vals = [r.value for r in res if r.explainable]
        rec[sev_kind] = float(np.mean(vals)) if vals else float("nan")
        laid = [v for v in batched_bfs(label, split.column_group, split.encode(queries), paper_reference, sev_kind,
                                       PAPER_LAYOUT_DEPTH) if v is not None]
        rec[f"{sev_kind}_layout"] = float(np.mean(laid)) if laid else float("nan")
        rec[f"{sev_kind}_beyond"] = sum(r.status == "beyond_depth" for r in res)
        rec[f"{sev_kind}_unexpl"] = sum(r.status == "unexplainable" for r in res)
        rec[f"{sev_kind}_max"] = max(vals) if vals else None
        rec[f"{sev_kind}_searched"] = min((r.max_depth for r in res), default=depth)
    rec["t_sev"] = time.perf_counter() - t - t_fit
    return rec


def log_split(s: int, kind: str, rec: dict) -> None:
    if not rec["n"]:
        what = ("the model is constant" if rec["constant"] else f"no test score above the threshold {rec['threshold']}")
        log(f"split {s} {TITLE[kind]:<5}: acc {rec['acc']:.3f} AUC {rec['auc']:.3f}, NO test row predicted "
            f"positive — {what}; SEV undefined for this split; fit {rec['t_fit']:.1f}s")
        return
    not_expl = "".join(f", {k} not explained: {rec[f'{k}_beyond']} beyond depth {rec[f'{k}_searched']} / "
                       f"{rec[f'{k}_unexpl']} unexplainable" for k in ("plus", "minus")
                       if rec[f"{k}_beyond"] or rec[f"{k}_unexpl"])
    authors = rec.get("authors")
    extra = (f"; authors' code: acc {authors['acc']:.3f}, {authors['n']} queries, SEV⁺ {authors['plus']:.3f}, "
             f"SEV⁻ {authors['minus']:.3f}" if authors else "")
    log(f"split {s} {TITLE[kind]:<5}: acc {rec['acc']:.3f} AUC {rec['auc']:.3f}, {rec['n']:3d} queries, "
        f"ref score {rec['ref_score']:.3f} (paper layout {rec['paper_ref_score']:.3f}), SEV⁺ {rec['plus']:.3f} "
        f"(max {rec['plus_max']}), SEV⁻ {rec['minus']:.3f} (max {rec['minus_max']}); paper layout SEV⁺ "
        f"{rec['plus_layout']:.3f}, SEV⁻ {rec['minus_layout']:.3f}{not_expl}{extra}; fit {rec['t_fit']:.1f}s, "
        f"SEV {rec['t_sev']:.1f}s")


def column(rows: list, key: str, which: str) -> tuple[float, float]:
    """mean ± sd over splits of one Table 1 entry in one column (ours, paper layout or authors' code)."""
    if which == "authors' code":
        return mean_sd(r.get("authors", {}).get(key, np.nan) for r in rows)
    if which == "paper layout" and key in ("plus", "minus", "ref_score"):
        key = "paper_ref_score" if key == "ref_score" else f"{key}_layout"
    return mean_sd(r.get(key, np.nan) for r in rows)


def print_table(rows: dict, kinds, columns, splits: int) -> None:
    print(f"\n##### Table 1 (German credit), mean ± sd over {splits} splits — " + ", ".join(columns)
          + ", and the paper")
    width = 14 * (len(columns) + 1)
    header = f"{'':<24}" + "".join(f"{TITLE[k]:^{width}}" for k in kinds)
    print(header)
    print(f"{'':<24}" + "".join("".join(f"{c:>13} " for c in (*columns, "paper")) for _ in kinds))
    print("-" * len(header))
    for key, label in (("acc", "Test accuracy"), ("auc", "Test AUC"), ("plus", "SEV⁺"), ("minus", "SEV⁻"),
                       ("ref_score", "reference's score")):
        line = f"{label:<24}"
        for k in kinds:
            paper = fmt(PAPER[k][key]) if key in PAPER[k] else ""
            line += "".join(f"{fmt(column(rows[k], key, c)):>13} " for c in columns) + f"{paper:>13} "
        print(line)
    print(f"{'queries / split (mean)':<24}" + "".join("".join(f"{column(rows[k], 'n', c)[0]:>13.1f} " for c in columns)
                                                       + " " * 14 for k in kinds))
    for label, value in (("splits with SEV", lambda rs: f"{sum(r['n'] > 0 for r in rs)} of {len(rs)}"),
                         ("SEV⁺ not explained", lambda rs: not_explained(rs, "plus")),
                         ("SEV⁻ not explained", lambda rs: not_explained(rs, "minus"))):
        print(f"{label:<24}" + "".join(f"{value(rows[k]):>13} " + " " * 14 * len(columns) for k in kinds))
    if "authors' code" in columns:
        beyond = {TITLE[k]: sum(r["authors"][f"{m}_beyond"] for r in rows[k] for m in ("plus", "minus")) for k in kinds}
        print(f"authors' code: queries beyond depth {PAPER_LAYOUT_DEPTH} (counted {PAPER_LAYOUT_DEPTH + 1}, as "
              f"SEVPlot does), summed over splits and both kinds: {beyond}")
    print("\n'splits with SEV': splits where at least one test row is predicted positive (SEV means are over those "
          "splits only; a split without queries has no SEV).\n'not explained' (summed over splits) = "
          "beyond depth + unexplainable: no flip within the depth searched / nowhere on the hypercube; "
          "such queries are left out of the means.")


def not_explained(rows: list, kind: str) -> str:
    return f"{sum(r.get(f'{kind}_beyond', 0) for r in rows)}+{sum(r.get(f'{kind}_unexpl', 0) for r in rows)}"


def print_verdict(rows: dict, kinds, columns, l1_c: float) -> None:
    distance = {c: np.mean([abs(column(rows[k], key, c)[0] - PAPER[k][key][0]) for k in kinds
                            for key in ("plus", "minus")]) for c in columns}
    closer = min(distance, key=distance.get)
    scores = {c: np.mean([column(rows[k], "ref_score", c)[0] for k in kinds]) for c in ("ours", "paper layout")}
    plus = {c: np.mean([column(rows[k], "plus", c)[0] for k in kinds]) for c in ("ours", "paper layout")}
    print(f"\nWhich reproduces Table 1: the {closer.upper()} column (mean |difference| from the paper's SEV⁺/SEV⁻: "
          + ", ".join(f"{w} {d:.2f}" for w, d in distance.items()) + "). Why: the reference's score (P(bad credit)) "
          f"averages {scores['paper layout']:.2f} in the paper layout against {scores['ours']:.2f} for ours; a "
          "reference scored near or above the threshold already has the queries' class, so the paper code's "
          f"search from depth 1 stops at once (SEV⁺ {plus['paper layout']:.2f} on average, the paper's ≈ 1), while "
          f"ours, the typical good-credit applicant of SEV §3, is predicted negative (SEV⁺ {plus['ours']:.2f}).")
    best = "authors' code" if "authors' code" in columns else closer
    for k in kinds:
        cells = [(label, column(rows[k], key, best)[0], PAPER[k][key]) for key, label in (("plus", "SEV⁺"),
                                                                                          ("minus", "SEV⁻"))]
        print(f"{TITLE[k]} ({best}): " + "; ".join(
            f"{label} {got:.2f} vs {paper[0]:.2f} ± {paper[1]:.2f}: "
            + ("reproduced (within the paper's sd)" if abs(got - paper[0]) <= max(paper[1], 0.05) else "NOT reproduced")
            for label, got, paper in cells))
    if "l1_lr" in kinds and best == "authors' code":
        print(f"L1 LR's C in the authors' build: {l1_c:g} (Experiment0.py: 1; their follow-up code on German: "
              f"{FOLLOWUP_C:g}" + ("" if l1_c == FOLLOWUP_C else f"; --l1-c {FOLLOWUP_C:g} runs that") + ")")
    for k in kinds:
        c = sum(r["constant"] for r in rows[k])
        if c:
            print(f"NOTE: {TITLE[k]} is a constant model (every test score equal) in {c} of {len(rows[k])} splits.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--max-depth", type=int, default=0, help="BFS depth limit (0 = number of groups: exact)")
    ap.add_argument("--first-depth", type=int, default=8,
                    help="first pass depth; queries beyond it are searched to --max-depth within --vertex-budget")
    ap.add_argument("--vertex-budget", type=int, default=5_000_000,
                    help="most extra vertices per model/split/kind for the exact second pass")
    ap.add_argument("--authors-build", action=argparse.BooleanOptionalAction, default=True,
                    help="a column with the whole pipeline as the authors' Experiment0.py builds it (default: on)")
    ap.add_argument("--l1-c", type=float, default=1.0,
                    help=f"C of L1 LR in the authors' build (their code: 1; their follow-up code: {FOLLOWUP_C})")
    args = ap.parse_args()

    data = load_demo("german_credit")
    layout = GroupLayout.of(data)
    depth = args.max_depth or layout.size
    print(f"German credit: {len(data.features)} rows, {layout.size} feature groups, positive class "
          f"{data.positive_class!r}; {args.splits} splits (seed = split index), max depth {depth}"
          f"{' (= number of groups, exact)' if depth >= layout.size else ''}"
          f"{f'; authors build with L1 C = {args.l1_c:g}' if args.authors_build else ''}", flush=True)
    rows = {k: [] for k in args.kinds}  # per split: dict of metrics
    for s in range(args.splits):
        for kind in args.kinds:
            rec = ours_split(data, layout, kind, s, depth, args)
            if args.authors_build:
                rec["authors"] = table1_split(data, kind, s, args.l1_c)
            rows[kind].append(rec)
            log_split(s, kind, rec)
    columns = ("ours", "paper layout", *(("authors' code",) if args.authors_build else ()))
    print_table(rows, args.kinds, columns, args.splits)
    print_verdict(rows, args.kinds, columns, args.l1_c)
    log("done")


if __name__ == "__main__":
    main()
