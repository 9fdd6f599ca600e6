"""Runs the authors' released code ("Improving Decision Sparsity", github.com/williamsyy/MultipleSEV, commit
31bc78a) on the project's own model and rows, as their paper defines SEV¹ / SEV^F / SEV^©. Not part of the project:
it runs inside the bench's venv (bench/out/multiplesev-venv: this Python's packages plus PaCMAP, which their SEV^©
needs; created by sev_references.py), imports the authors' modules from a checkout named by --authors (never copied
here), and writes one JSON of raw results.

What runs: the project's demo model of the job (``demo_model(dataset, kind, seed)``: the same fitted model, split
and query rows as the bench's own methods), called through :class:`OurModel`, which decodes their encoded rows
back to raw rows (the decoding is checked on every query row). Their DataEncoder(standard=True) is fitted on every
negative row of the data (their Experiment-1 protocol, their A1: test rows included). Their reference is passed in
THEIR encoded column order (``overall_mean=``): built without it, FlexibleSEV lays the per-feature means out feature
by feature while their encoder puts the one-hot columns last, so the reference is applied by position and most
columns get another column's value (the count is printed); :func:`column_reference` builds it by name and asserts
each value sits in its own column. Per query row: ``sev_cal(x, mode="minus")`` timed alone (SEV¹ =
FlexibleSEV(tol=0, k=1), SEV^F = FlexibleSEV(tol=0.2, k=5), SEV^© = ClusterSEV(K, m) with the PaCMAP embedding of
the queries computed beforehand, untimed, as theirs), ``sev_explain`` for ℓ∞ (the closest minimal explanation,
their rule: changes of exactly 0 or ±1 skipped), and their GMM log-density of the returned point, which is also
decoded to raw values so the bench scores it with the project's credibility percentile. Their timings include
:class:`OurModel`'s decoding (a DataFrame per model call), so they are not their code's own speed.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pandas as pd


class OurModel:
    """The project's model behind the interface their code calls (``predict`` / ``predict_proba`` on rows of their
    encoding): each call decodes the rows to raw feature rows and asks the project's model adapter."""

    def __init__(self, setup, encoder, columns):
        self.setup, self.encoder, self.columns = setup, encoder, list(columns)

    def raw(self, rows) -> pd.DataFrame:
        """Rows of their encoding back to raw rows: numbers unstandardised (rounded where the column holds
        integers), binaries to their value, one-hot blocks to the category of their largest column."""
        frame = pd.DataFrame(np.asarray(rows, dtype=float).reshape(-1, len(self.columns)), columns=self.columns)
        features = self.setup.dataset.features
        raw = {}
        for feature in features.columns:
            kind = self.encoder.columns_types.get(feature, "constant")
            if kind == "numerical":
                values = self.encoder.numerical_standard_encoder[feature].inverse_transform(frame[[feature]])[:, 0]
                raw[feature] = np.rint(values) if pd.api.types.is_integer_dtype(features[feature]) else values
            elif kind == "binary":
                codes = np.rint(frame[[feature]].to_numpy()).clip(0, 1)
                raw[feature] = self.encoder.columns_labelencoder[feature].inverse_transform(codes)[:, 0]
            elif kind == "category":
                cats = np.asarray(self.encoder.columns_labelencoder[feature].categories_[0], dtype=object)
                raw[feature] = cats[np.argmax(frame[[f"{feature}={c}" for c in cats]].to_numpy(), axis=1)]
            else:  # constant on the negatives (dropped by their encoder): the query keeps its value
                raw[feature] = np.repeat(features[feature].dropna().iloc[0], len(frame))
        return pd.DataFrame(raw).astype(features.dtypes.to_dict())

    def predict(self, rows) -> np.ndarray:
        return self.setup.model.label(self.raw(rows))

    def predict_proba(self, rows) -> np.ndarray:
        score = self.setup.model.score(self.raw(rows))
        return np.column_stack([1 - score, score])


def column_reference(sev, encoder, columns) -> np.ndarray:
    """Their reference (``sev.data_mean``, per feature) laid out in their encoded column order, by name."""
    columns = list(columns)
    reference = np.zeros(len(columns))
    for feature in encoder.original_columns:
        kind = encoder.columns_types[feature]
        if kind == "category":
            cats = encoder.columns_labelencoder[feature].categories_[0]
            reference[[columns.index(f"{feature}={c}") for c in cats]] = sev.data_mean[feature]
        else:
            reference[columns.index(feature)] = sev.data_mean[feature]
    return reference


def check_in_place(sev, encoder) -> None:
    """Assert that every feature's reference value sits in that feature's own encoded columns."""
    for index, feature in enumerate(encoder.original_columns):
        own = sev.overall_mean[sev.data_map[index] == 1]
        assert np.allclose(own, np.ravel(sev.data_mean[feature])), f"reference of {feature} not in its columns"


def misplaced(sev, encoder, columns, reference: np.ndarray) -> list[int]:
    """Their default (positional) reference against ours in column order: how many encoded columns get another
    column's entry (their layout, feature by feature with each one-hot block in place, against their encoder's
    columns, one-hot blocks last), how many of those get a different value, and how many columns there are."""
    laid = []
    for feature in encoder.original_columns:
        cats = (encoder.columns_labelencoder[feature].categories_[0]
                if encoder.columns_types[feature] == "category" else None)
        laid += [feature] if cats is None else [f"{feature}={c}" for c in cats]
    other = sum(a != b for a, b in zip(laid, columns))
    return [int(other), int(np.sum(~np.isclose(sev.overall_mean, reference))), len(columns)]


def closest_linf(explanations) -> float:
    """Their ℓ∞: per minimal explanation, max |change| over changes that are not exactly 0 or ±1; the smallest."""
    parts = [e[0][(e[0] != 0) & (e[0] != 1) & (e[0] != -1)] for e in explanations]
    return float(np.min([np.max(np.abs(p)) if len(p) else 0.0 for p in parts])) if parts else 0.0


def run_method(name, sev, X_query, model: OurModel, gmm, emb=None) -> dict:
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
        raw = model.raw(point).iloc[0]
        out["points"].append({k: (v.item() if isinstance(v, np.generic) else v) for k, v in raw.items()})
    print(f"  {name}: {len(X_query)} rows, mean SEV {np.mean(out['value']):.3f}", file=sys.stderr, flush=True)
    return out


def encoded_data(setup):
    """Their encoder fitted on every negative row (missing values filled with the training median / mode, text
    columns as object, which their encoder needs to see categories); the encoded rows and negatives."""
    from Encoder import DataEncoder

    X = setup.dataset.features.copy()
    y = np.asarray(setup.dataset.y)
    train = setup.train_rows
    for c in X.columns:
        numeric = pd.api.types.is_numeric_dtype(X[c])
        X[c] = X[c].fillna(X[c].iloc[train].median() if numeric else X[c].iloc[train].mode()[0])
        X[c] = X[c] if numeric else X[c].astype(object)
    encoder = DataEncoder(standard=True)
    encoder.fit(X[y == 0])
    return encoder, encoder.transform(X), encoder.transform(X[y == 0]), X


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--authors", required=True, help="checkout of williamsyy/MultipleSEV (its SEV/ folder)")
    parser.add_argument("--job", required=True, help="JSON written by sev_references.py")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    sys.path.insert(0, f"{args.authors}/SEV")
    from ClusterSEV import ClusterSEV
    from FlexibleSEV import FlexibleSEV
    from sklearn.mixture import GaussianMixture

    from explain_core import demo_model, load_demo
    from explain_core.analysis import make_setup

    with open(args.job) as handle:
        job = json.load(handle)
    data = load_demo(job["dataset"])
    setup = make_setup(data, demo_model(data, job["model"], seed=job["seed"]))
    assert np.array_equal(setup.train_rows, job["train"]), "not the bench's split"
    encoder, encoded, encoded_neg, filled = encoded_data(setup)
    columns = list(encoded.columns)
    model = OurModel(setup, encoder, columns)
    queries = np.asarray(job["queries"])
    X_query = encoded.iloc[queries].to_numpy(dtype=float)
    pd.testing.assert_frame_equal(model.raw(X_query), filled.iloc[queries].reset_index(drop=True),
                                  check_dtype=False, check_exact=False)  # the decoding round-trips every query
    positive = queries[model.predict(X_query) == 1]
    X_query = encoded.iloc[positive].to_numpy(dtype=float)
    gmm = GaussianMixture(n_components=job["clusters"], random_state=42).fit(encoded_neg)
    result = {"rows": positive.tolist(), "test_accuracy": setup.metrics.get("test_accuracy")}
    started = time.perf_counter()
    default = FlexibleSEV(model, encoder, encoded.columns, encoded_neg, tol=0, k=1)
    reference = column_reference(default, encoder, columns)
    result["misplaced by position"] = misplaced(default, encoder, columns, reference)
    single = FlexibleSEV(model, encoder, encoded.columns, encoded_neg, tol=0, k=1, overall_mean=reference)
    flexible = FlexibleSEV(model, encoder, encoded.columns, encoded_neg, tol=0.2, k=5, overall_mean=reference)
    for sev in (single, flexible):
        check_in_place(sev, encoder)
    fit_flexible = time.perf_counter() - started
    result["SEV¹"] = run_method("SEV¹", single, X_query, model, gmm)
    result["SEV^F"] = run_method("SEV^F", flexible, X_query, model, gmm)
    started = time.perf_counter()
    cluster = ClusterSEV(model, encoder, encoded.columns, encoded_neg, n_clusters=job["clusters"], m=job["m"])
    emb = cluster.embedding.transform(X_query, encoded_neg)
    result["fit_seconds"] = {"flexible": fit_flexible,
                             "cluster (PaCMAP + fuzzy c-means)": time.perf_counter() - started}
    result["SEV^©"] = run_method("SEV^©", cluster, X_query, model, gmm, emb)
    with open(args.out, "w") as handle:
        json.dump(result, handle, default=float)


if __name__ == "__main__":
    main()
