#!/usr/bin/env python
"""Which structural equation for a categorical node of the causal LENS context (issue 29): held-out log loss of
logistic regression and of the LENS paper's random forest (App. C.1), node by node, on the bundled German credit
with the LENS authors' graph, over 80/20 splits. The lower the better; ``ScmSettings`` takes the better as default.

Run from the repository root:  python bench/lens_scm.py [--splits 3]
"""
from __future__ import annotations

import argparse
import os
import warnings

import numpy as np
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

from explain_core import load_demo
from explain_core.lens.causal import CLASSIFIERS, ScmSettings, fit_scm, german_graph


def held_out_losses(data, train, test, classifier: str, seed: int) -> dict[str, float]:
    """Each categorical node's log loss on the test rows (probabilities clipped at 1e-6, renormalised)."""
    scm = fit_scm(data, german_graph(), train, ScmSettings(classifier=classifier), seed=seed)
    rows = data.features.iloc[test]
    out = {}
    for node, equation in scm.equations.items():
        if equation.kind == "classifier":
            parents = rows[[scm.columns[p] for p in equation.parents]].set_axis(list(equation.parents), axis=1)
            proba = np.clip(equation.estimator.predict_proba(parents), 1e-6, 1)
            codes = equation.labels.get_indexer(rows[scm.columns[node]])
            known = codes >= 0  # a level never seen in training has no code
            out[node] = log_loss(codes[known], proba[known] / proba[known].sum(axis=1, keepdims=True),
                                 labels=equation.estimator.classes_)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=3)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    print(f"bench/lens_scm.py — load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    data = load_demo("german_credit")
    for seed in range(args.splits):
        train, test = train_test_split(np.arange(len(data.features)), test_size=0.2, random_state=seed)
        for classifier in CLASSIFIERS:
            losses = held_out_losses(data, train, test, classifier, seed)
            print(f"split {seed} {classifier:8s} " + " | ".join(f"{n} {v:.3f}" for n, v in losses.items()))


if __name__ == "__main__":
    main()
