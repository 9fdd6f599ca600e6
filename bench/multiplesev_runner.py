"""Runs the authors' released code ("Improving Decision Sparsity", github.com/williamsyy/MultipleSEV, commit
31bc78a) on rows chosen by bench/sev_references.py. Not part of the project: it runs INSIDE the bench's own venv
(bench/out/multiplesev-venv, pinned, created by sev_references.py), imports the authors' modules from a checkout
named by --authors (never copied here), and writes one JSON of raw results.

Protocol, as their Experiment 1 scripts (``Experiment 1 Original.py``, ``… Flexible.py``, ``… Cluster.py``): their
DataEncoder(standard=True) fitted on every negative row of the data (their A1: test rows included), their model
family refitted on their encoding of OUR training rows with OUR hyperparameters (their code needs a model on its own
encoding), then per query row their model predicts positive: ``sev_cal(x, mode="minus")`` timed alone (SEV¹ =
FlexibleSEV(tol=0, k=1), SEV^F = FlexibleSEV(tol=0.2, k=5), SEV^© = ClusterSEV(K, m) with the PaCMAP embedding of
the queries computed beforehand, untimed, as theirs), ``sev_explain`` for ℓ∞ (the closest minimal explanation,
their rule: changes of exactly 0 or ±1 skipped), and their GMM log-density of the returned point. Each returned
point is also decoded to raw values so the bench scores it with the project's credibility percentile.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pandas as pd


def family(kind: str, seed: int):
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    return {"l2_lr": lambda: LogisticRegression(C=0.01, max_iter=1000, random_state=seed),
            "gbdt": lambda: GradientBoostingClassifier(n_estimators=200, max_depth=3, random_state=seed),
            "mlp": lambda: MLPClassifier(hidden_layer_sizes=(128, 128), activation="relu", early_stopping=True,
                                         max_iter=500, random_state=seed)}[kind]()


def decode(encoder, point: np.ndarray, columns) -> dict:
    """An encoded point back to raw values (numbers unstandardised, one-hot columns to their category)."""
    values = dict(zip(columns, point))
    raw = {}
    for feature, kind in encoder.columns_types.items():
        if kind == "numerical":
            scaler = encoder.numerical_standard_encoder[feature]
            raw[feature] = float(scaler.inverse_transform([[values[feature]]])[0, 0])
        elif kind == "binary":
            raw[feature] = encoder.columns_labelencoder[feature].inverse_transform([[round(values[feature])]])[0, 0]
        elif kind == "category":
            cats = list(encoder.columns_labelencoder[feature].categories_[0])
            raw[feature] = cats[int(np.argmax([values[f"{feature}={c}"] for c in cats]))]
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in raw.items()}


def closest_linf(explanations) -> float:
    """Their ℓ∞: per minimal explanation, max |change| over changes that are not exactly 0 or ±1; the smallest."""
    parts = [e[0][(e[0] != 0) & (e[0] != 1) & (e[0] != -1)] for e in explanations]
    return float(np.min([np.max(np.abs(p)) if len(p) else 0.0 for p in parts])) if parts else 0.0


def run_method(name, sev, X_query, encoder, columns, gmm, emb=None) -> dict:
    out = {"value": [], "linf": [], "log_density": [], "seconds": [], "points": []}
    for i, xi in enumerate(X_query):
        if emb is None:
            started = time.perf_counter()
            value, diff, _ = sev.sev_cal(xi, mode="minus")
            out["seconds"].append(time.perf_counter() - started)
            explanations = sev.sev_explain(xi, value, mode="minus")
        else:
            row = xi.reshape(1, -1)
            started = time.perf_counter()
            value, diff = sev.sev_cal(row, emb[i].reshape(1, -1), mode="minus")
            out["seconds"].append(time.perf_counter() - started)
            explanations = sev.sev_explain(row, emb[i].reshape(1, -1), value, mode="minus")
        point = (xi + np.asarray(diff).reshape(-1)).reshape(1, -1)
        out["value"].append(int(value))
        out["linf"].append(closest_linf(explanations))
        out["log_density"].append(float(gmm.score_samples(point)[0]))
        out["points"].append(decode(encoder, point[0], columns))
    print(f"  {name}: {len(X_query)} rows, mean SEV {np.mean(out['value']):.3f}", file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--authors", required=True, help="checkout of williamsyy/MultipleSEV (its SEV/ folder)")
    parser.add_argument("--job", required=True, help="JSON written by sev_references.py")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    sys.path.insert(0, f"{args.authors}/SEV")
    from ClusterSEV import ClusterSEV
    from Encoder import DataEncoder
    from FlexibleSEV import FlexibleSEV
    from sklearn.mixture import GaussianMixture

    with open(args.job) as handle:
        job = json.load(handle)
    X = pd.read_csv(job["csv"])
    y = np.asarray(job["y"])
    train = np.asarray(job["train"])
    for c in X.columns:  # missing values: training median / mode (the project's demo pipelines do the same)
        fill = X[c].iloc[train].median() if pd.api.types.is_numeric_dtype(X[c]) else X[c].iloc[train].mode()[0]
        X[c] = X[c].fillna(fill)
    X_neg = X[y == 0]
    X = X[[c for c in X.columns if X_neg[c].nunique() > 1]]  # their loader drops columns constant on negatives
    X_neg = X[y == 0]
    encoder = DataEncoder(standard=True)
    encoder.fit(X_neg)
    encoded, encoded_neg = encoder.transform(X), encoder.transform(X_neg)
    model = family(job["model"], job["seed"]).fit(encoded.iloc[train], y[train])
    queries = np.asarray(job["queries"])
    positive = queries[model.predict(encoded.iloc[queries]) == 1]
    X_query = encoded.iloc[positive].to_numpy(dtype=float)
    gmm = GaussianMixture(n_components=job["clusters"], random_state=42).fit(encoded_neg)
    columns = list(encoded.columns)
    result = {"rows": positive.tolist(), "test_accuracy": float(model.score(encoded.iloc[job["test"]],
                                                                               y[job["test"]]))}
    started = time.perf_counter()
    single = FlexibleSEV(model, encoder, encoded.columns, encoded_neg, tol=0, k=1)
    flexible = FlexibleSEV(model, encoder, encoded.columns, encoded_neg, tol=0.2, k=5)
    fit_flexible = time.perf_counter() - started
    result["SEV¹"] = run_method("SEV¹", single, X_query, encoder, columns, gmm)
    result["SEV^F"] = run_method("SEV^F", flexible, X_query, encoder, columns, gmm)
    started = time.perf_counter()
    cluster = ClusterSEV(model, encoder, encoded.columns, encoded_neg, n_clusters=job["clusters"], m=job["m"])
    emb = cluster.embedding.transform(X_query, encoded_neg)
    result["fit_seconds"] = {"flexible": fit_flexible,
                             "cluster (PaCMAP + fuzzy c-means)": time.perf_counter() - started}
    result["SEV^©"] = run_method("SEV^©", cluster, X_query, encoder, columns, gmm, emb)
    with open(args.out, "w") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main()
