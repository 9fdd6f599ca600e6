"""The SEV paper code's German-credit pipeline for Table 1, re-implemented from its description (not copied).

As the authors' Experiments/Code/Experiment0.py runs it (with SEV/Encoder.py ``DataEncoder(standard=True)``,
SEV/SEV.py ``SEVPlot`` / ``sev_cal``):

- the data is UCI ``german.data`` with its A-codes (restored here from the bundled schema's ``source_codes``);
- the encoder is fitted on the negative rows of the WHOLE table (``X_neg``, test rows included): a column with two
  values is binary (one 0/1 column, 1 = the larger value), an object column with more is categorical (one column
  per sorted value, all appended after the other columns), any other is numeric (standardised on ``X_neg``);
- the reference is the median of each standardised numeric column over ``X_neg`` and the mode of the others,
  listed feature by feature but applied by position (so it lands on other columns, the "paper layout");
- the split is ``train_test_split(test_size=0.2)`` (not stratified, unseeded there; seeded by split here, as is
  liblinear);
- the models (``model_loader`` for German): L1 / L2 LR ``liblinear`` with C = 1, MLP one hidden layer of 128
  (early stopping, random_state 42), GBDT 200 trees of depth 3 (random_state 42);
- the queries are the test rows predicted positive; SEV is searched from depth 1 to ``max_depth`` 6, a query
  beyond it counting 7, and the mean is over every query.
"""
from __future__ import annotations

import itertools
import json
from math import comb
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from explain_core.intake.demo_models import make_estimator

DEPTH = 6  # Experiment0.py's --max_depth default
CHUNK_ROWS = 400_000  # model rows per call of the batched search


def coded_frame(data) -> pd.DataFrame:
    """The bundled table with each decoded categorical column mapped back to its source codes (A11, …)."""
    schema = next(d for d in json.loads((Path(__file__).resolve().parent.parent / "data" / "datasets.json")
                                        .read_text()) if d["name"] == data.name)
    frame = data.features.copy()
    for column in schema["columns"]:
        if "source_codes" in column and column["name"] in frame:
            frame[column["name"]] = frame[column["name"]].map({v: k for k, v in column["source_codes"].items()})
    return frame.astype({c: object for c in frame.columns if frame[c].dtype != np.int64})


def encode(frame: pd.DataFrame, negative: np.ndarray):
    """(encoded matrix, group of each encoded column, the reference as the paper's code applies it)."""
    neg = frame[negative]
    inplace, onehot, listed = [], [], []
    for g, c in enumerate(frame.columns):
        values = sorted(neg[c].unique())
        if len(values) == 2:
            col = (frame[c] == values[1]).to_numpy(float)
            inplace.append((g, col))
            listed.append(float(pd.Series(col[negative]).mode()[0]))
        elif frame[c].dtype == object and len(values) > 2:
            onehot += [(g, (frame[c] == v).to_numpy(float)) for v in values]
            listed += [float(v == neg[c].mode()[0]) for v in values]
        elif len(values) > 2:
            x = frame[c].to_numpy(float)
            z = (x - x[negative].mean()) / x[negative].std()
            inplace.append((g, z))
            listed.append(float(np.median(z[negative])))
    columns = inplace + onehot
    return (np.column_stack([col for _, col in columns]), np.array([g for g, _ in columns]), np.array(listed))


def estimator(kind: str, l1_c: float, seed: int):
    """``model_loader("german", kind)`` of Experiment0.py (L1 LR's C settable; liblinear's coordinate descent seeded
    with ``seed`` here, unseeded there)."""
    if kind == "l1_lr":
        return make_estimator("l1_lr", "classification", seed).set_params(C=l1_c)
    return {"l2_lr": lambda: LogisticRegression(solver="liblinear", C=1.0, random_state=seed),
            "mlp": lambda: MLPClassifier(hidden_layer_sizes=(128,), early_stopping=True, random_state=42),
            "gbdt": lambda: GradientBoostingClassifier(max_depth=3, n_estimators=200, random_state=42)}[kind]()


def batched_bfs(label, column_group: np.ndarray, queries: np.ndarray, reference: np.ndarray, kind: str,
                depth: int) -> list:
    """SEV of each encoded query against an encoded reference as ``sev_cal`` searches it: from depth 1 (so SEV⁺ is
    at least 1 even when the reference already has the query's class) to ``depth`` (None beyond), ``label``
    mapping encoded rows to predicted labels; one layer at a time, in chunks of at most CHUNK_ROWS rows."""
    p = int(column_group.max()) + 1
    classes = label(queries)
    out: list = [None] * len(queries)
    for d in range(1, depth + 1):
        todo = [i for i, v in enumerate(out) if v is None]
        if not todo:
            break
        masks = np.zeros((comb(p, d), p), dtype=bool)
        for row, combo in enumerate(itertools.combinations(range(p), d)):
            masks[row, list(combo)] = True
        keep = (~masks if kind == "minus" else masks)[:, column_group]  # True: the query's value
        step = max(1, CHUNK_ROWS // len(masks))
        for start in range(0, len(todo), step):
            part = todo[start:start + step]
            rows = np.where(keep[None], queries[part][:, None, :], reference)
            labels = label(rows.reshape(-1, rows.shape[-1])).reshape(len(part), len(masks))
            hit = (labels != classes[part][:, None]) if kind == "minus" else (labels == classes[part][:, None])
            for i, found in zip(part, hit.any(axis=1)):
                if found:
                    out[i] = d
    return out


def table1_split(data, kind: str, split: int, l1_c: float = 1.0) -> dict:
    """One split of Table 1 as the paper's code computes it: accuracy, AUC, mean SEV⁺ / SEV⁻ (beyond depth = 7)."""
    from sklearn.metrics import roc_auc_score

    y = np.asarray(data.y)
    X, groups, reference = encode(coded_frame(data), y == 0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=split)
    model = estimator(kind, l1_c, split).fit(X_train, y_train)
    label = lambda Z: model.predict_proba(Z)[:, 1] >= 0.5  # noqa: E731  (sev_cal's test, score < 0.5 for SEV⁻)
    queries = X_test[label(X_test)]
    rec = {"acc": float(np.mean(label(X_test) == y_test)), "auc": float(roc_auc_score(y_test, model.predict_proba(
        X_test)[:, 1])), "n": len(queries), "ref_score": float(model.predict_proba(reference[None, :])[0, 1])}
    for sev_kind in ("plus", "minus"):
        found = batched_bfs(label, groups, queries, reference, sev_kind, DEPTH)
        rec[sev_kind] = float(np.mean([DEPTH + 1 if v is None else v for v in found])) if len(queries) else np.nan
        rec[f"{sev_kind}_beyond"] = sum(v is None for v in found)
    return rec
