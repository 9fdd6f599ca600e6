#!/usr/bin/env python
"""SEV paper, Tables 4-9 (App. C) and §5.5: models trained for sparse explanations on Adult and COMPAS.

For split s = 0..S−1 and each base kind (L2 LR, MLP 128-128, GBDT 200 trees depth 3; App. B settings), the demo
model of that split (``demo_model(data, kind, seed=s)``: stratified 80/20 split seeded by s, cached on disk) is the
base; the reference is the mean / mode of the split's training rows of the negative class. Each objective
(All-Opt⁺, All-Opt⁻, Vol-Opt for LR; All-Opt® with age and sex restricted on COMPAS) is trained from it with
``train_sparse`` at the library's defaults for the model's family unless told otherwise: for LR and GBDT the full
App. B schedule (70 warm-up epochs of BCE, 30 with the SEV term and ℓ_Pos_base, Adam at learning rate 0.1, λ = 1;
Vol-Opt λ = 0.01, the paper's authors' setting for Adult, and ε = 0.01, eq. 5 over one axis per feature group); for
the MLP the fine-tuning schedule (its own learning rate 0.001, no warm-up, 15 epochs with the SEV term, λ = 0.1);
All-Opt® λ = 3 for every model. All: batches of 128, C₂ = 1, θ = 0.05, seed s; ``--warmup``, ``--epochs``,
``--lr`` and ``--strength`` override the defaults for every run. Each run prints the settings it used. Then, on the
split's test rows: accuracy and AUC; mean SEV⁺ and SEV⁻ (and SEV®) over the test rows each model predicts
positive that have an explanation within depth 6 (the app's default); the share with no SEV⁻ (SEV®) explanation;
the share of test rows predicted positive; the reference's score; the change in test accuracy from the base model
of the same split (points). Rows show mean ± sd (ddof=1) over the splits, beside the paper's
Tables 4-9 (10 splits), and for the linear models the share of zero coefficients beside Table 2 (``--kinds l1_lr``
runs the L1 LR base alone). "train s" is the wall time of ``train_sparse`` (encoding, precomputation and every
epoch); the SEV evaluation is not included.

Run from the repository root:  python bench/sev_training.py [--splits 3] [--datasets adult compas]
[--kinds l2_lr mlp gbdt] [--objectives vol_opt] [--warmup 70 --epochs 30 --lr 0.1] [--strength 1]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explain_core.intake.demos import load_demo
from explain_core.intake.demo_models import demo_model
from explain_core.setup import Parameters, make_setup  # noqa: E402
from explain_core.sparse.compare import model_sparsity
from explain_core.sparse.families import DEFAULTS_NOTE
from explain_core.sparse.losses import DEFAULT_EPS
from explain_core.sparse.training import TrainingSettings, sparse_setup, train_sparse

TITLE = {"l2_lr": "L2 LR", "l1_lr": "L1 LR", "mlp": "MLP", "gbdt": "GBDT"}
OBJECTIVES = {"l2_lr": ("all_opt_plus", "all_opt_minus", "vol_opt"), "l1_lr": (),
              "mlp": ("all_opt_plus", "all_opt_minus"),
              "gbdt": ("all_opt_plus", "all_opt_minus")}
LABEL = {"base": "base", "all_opt_plus": "All-Opt⁺", "all_opt_minus": "All-Opt⁻", "vol_opt": "Vol-Opt",
         "all_opt_restricted": "All-Opt®"}
RESTRICTED = {"compas": ("age", "sex")}
# SEV paper, Table 2 (Adult): the share of zero coefficients of each linear model
PAPER_ZEROS = {("adult", "l1_lr", "base"): .879, ("adult", "l2_lr", "base"): .0009,
               ("adult", "l2_lr", "all_opt_plus"): 0.0, ("adult", "l2_lr", "vol_opt"): 0.0}
# SEV paper, Tables 4-9: train acc, train AUC, test acc, test AUC, mean SEV⁺, mean SEV⁻ (None = blank)
PAPER = {
    ("adult", "l2_lr", "base"): (.85, .90, .85, .90, 2.27, 1.18),
    ("adult", "l2_lr", "all_opt_plus"): (.85, .90, .85, .90, 1.10, None),
    ("adult", "l2_lr", "all_opt_minus"): (.85, .90, .84, .90, None, 1.03),
    ("adult", "l2_lr", "vol_opt"): (.84, .90, .84, .89, 1.01, None),
    ("adult", "mlp", "base"): (.87, .93, .86, .92, 2.97, 1.21),
    ("adult", "mlp", "all_opt_plus"): (.86, .92, .84, .90, 1.01, None),
    ("adult", "mlp", "all_opt_minus"): (.86, .92, .85, .93, None, 1.03),
    ("adult", "gbdt", "base"): (.88, .93, .87, .93, 2.66, 1.21),
    ("adult", "gbdt", "all_opt_plus"): (.88, .93, .87, .90, 1.03, None),
    ("adult", "gbdt", "all_opt_minus"): (.87, .93, .85, .91, None, 1.00),
    ("compas", "l2_lr", "base"): (.68, .73, .68, .73, 1.04, 1.25),
    ("compas", "l2_lr", "all_opt_plus"): (.67, .72, .66, .71, 1.03, None),
    ("compas", "l2_lr", "all_opt_minus"): (.65, .72, .65, .72, None, 1.05),
    ("compas", "l2_lr", "vol_opt"): (.65, .72, .65, .71, 1.03, None),
    ("compas", "mlp", "base"): (.68, .74, .68, .73, 1.01, 1.53),
    ("compas", "mlp", "all_opt_plus"): (.68, .73, .68, .73, 1.00, None),
    ("compas", "mlp", "all_opt_minus"): (.68, .73, .68, .74, None, 1.24),
    ("compas", "gbdt", "base"): (.70, .76, .68, .73, 1.12, 1.13),
    ("compas", "gbdt", "all_opt_plus"): (.70, .76, .66, .70, 1.01, None),
    ("compas", "gbdt", "all_opt_minus"): (.70, .77, .66, .70, None, 1.01),
}
COLUMNS = ("train_accuracy", "train_auc", "test_accuracy", "test_auc", "plus", "minus", "restricted", "unexplained",
           "positive", "reference", "zeros", "seconds")
HEAD = ("train acc", "train AUC", "test acc", "test AUC", "SEV⁺", "SEV⁻", "SEV®", "no expl.", "pos. share",
        "g(ref)", "zero coef.", "train s", "Δ test acc")


def measure(setup, params, seconds=float("nan")) -> dict:
    m = model_sparsity(setup, params)
    last = "restricted" if "restricted" in m.sev else "minus"
    return {**{k: m.metrics[k] for k in COLUMNS[:4]}, "plus": m.mean("plus"), "minus": m.mean("minus"),
            "restricted": m.mean("restricted") if "restricted" in m.sev else float("nan"),
            "unexplained": m.unexplained_share(last), "positive": m.positive_share, "reference": m.reference_score,
            "zeros": float("nan") if m.zero_coefficients is None else m.zero_coefficients, "seconds": seconds}


def schedule(s: TrainingSettings) -> str:
    return f"λ {s.strength:g}, lr {s.learning_rate:g}, {s.warmup_epochs} + {s.sev_epochs} epochs"


def cell(values) -> str:
    values = np.array([v for v in values if np.isfinite(v)])
    if len(values) == 0:
        return "—"
    return f"{values.mean():.2f}±{values.std(ddof=1):.2f}" if len(values) > 1 else f"{values.mean():.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--datasets", nargs="+", default=["adult", "compas"])
    ap.add_argument("--kinds", nargs="+", default=list(TITLE), choices=list(TITLE))
    ap.add_argument("--warmup", type=int, default=None, help="warm-up epochs (default: the library's)")
    ap.add_argument("--epochs", type=int, default=None, help="epochs with the SEV term (default: the library's)")
    ap.add_argument("--lr", type=float, default=None, help="Adam's learning rate (default: the library's)")
    ap.add_argument("--objectives", nargs="+", default=list(LABEL)[1:], choices=list(LABEL)[1:])
    ap.add_argument("--strength", type=float, default=None, help="λ for every objective (default: the library's)")
    args = ap.parse_args()
    params = Parameters().sev
    overrides = {k: v for k, v in (("warmup", args.warmup), ("epochs", args.epochs), ("lr", args.lr),
                                   ("λ", args.strength)) if v is not None}
    print(f"torch {torch.__version__} on {'CUDA' if torch.cuda.is_available() else 'CPU'}; {args.splits} splits; "
          f"batch 128, Adam, C₂ = 1, θ = 0.05, Vol-Opt ε = {DEFAULT_EPS:g}; defaults: {DEFAULTS_NOTE}; overrides: "
          f"{overrides or 'none'}; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for name in args.datasets:
        data = load_demo(name)
        for kind in args.kinds:
            rows: dict[str, list[dict]] = {}
            objectives = [o for o in OBJECTIVES[kind] + (("all_opt_restricted",) if name in RESTRICTED else ())
                          if o in args.objectives]
            for split in range(args.splits):
                base = make_setup(data, demo_model(data, kind, seed=split), restricted=RESTRICTED.get(name, ()))
                rows.setdefault("base", []).append(measure(base, params))
                for objective in objectives:
                    settings = TrainingSettings(objective=objective, warmup_epochs=args.warmup, sev_epochs=args.epochs,
                                                restricted=RESTRICTED.get(name, ()) if "restricted" in objective
                                                else (), seed=split, strength=args.strength,
                                                learning_rate=args.lr)
                    started = time.perf_counter()
                    result = train_sparse(base, settings)
                    seconds = time.perf_counter() - started
                    run, before = measure(sparse_setup(base, result), params, seconds), rows["base"][-1]
                    rows.setdefault(objective, []).append(run)
                    print(f"  {name} {TITLE[kind]} split {split} {LABEL[objective]}: SEV⁺ {before['plus']:.2f} → "
                          f"{run['plus']:.2f}, SEV⁻ {before['minus']:.2f} → {run['minus']:.2f}, test acc "
                          f"{before['test_accuracy']:.4f} → {run['test_accuracy']:.4f} "
                          f"(Δ {100 * (run['test_accuracy'] - before['test_accuracy']):+.2f} pt), no explanation "
                          f"{before['unexplained']:.1%} → {run['unexplained']:.1%}, "
                          f"{seconds:.1f} s (load {os.getloadavg()[0]:.2f}); {schedule(result.settings)}", flush=True)
            print(f"\n{name} · {TITLE[kind]} (mean ± sd over {args.splits} splits; paper: 10 splits)")
            print(f"{'':10s}" + "".join(f"{h:>13s}" for h in HEAD))
            for objective, runs in rows.items():
                change = [100 * (r["test_accuracy"] - b["test_accuracy"]) for r, b in zip(runs, rows["base"])]
                print(f"{LABEL[objective]:10s}" + "".join(f"{cell([r[c] for r in runs]):>13s}" for c in COLUMNS)
                      + (f"  {cell(change):>11s} pt" if objective != "base" else ""))
                paper = PAPER.get((name, kind, objective))
                if paper:
                    print(f"{'  paper':10s}" + "".join(f"{'—' if v is None else f'{v:.2f}':>13s}" for v in paper))
                if (name, kind, objective) in PAPER_ZEROS:
                    ours, paper_zeros = np.nanmean([r["zeros"] for r in runs]), PAPER_ZEROS[name, kind, objective]
                    verdict = "reproduced" if abs(ours - paper_zeros) <= 0.05 else "open"
                    print(f"{'  paper':10s} Table 2: zero coefficients {paper_zeros:.2%}, ours {ours:.2%}: {verdict}")
            print(flush=True)


if __name__ == "__main__":
    main()
