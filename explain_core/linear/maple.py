"""MAPLE (Plumb, Molitor & Talwalkar 2018), the PLE paper's dense baseline (Table 2), in the Boolean space.

No maintained package implements it (PyPI's ``maple`` is an unrelated server framework), so it is written here from
the paper and its authors' reference code, at the defaults the PLE paper kept: a random forest regressor (200 trees,
``min_samples_leaf=10``, ``max_features=0.5``) fitted on the model's outputs at the training points; the supervised
neighbourhood of a point x weights training point i by the average over trees of 1[i shares x's leaf] / leaf size
(:func:`neighbourhood_weights`); DStump feature selection — features ranked by the score of the trees' root splits
(the reference code adds the root's impurity for each tree whose root splits on the feature), the number kept the
one with the lowest validation RMSE of the local models; the local model a ridge regression (α = 0.001) weighted
by the neighbourhood (the code's weights sum over trees rather than average, which at this α is the same fit with
α scaled by the number of trees: kept). In the PLE protocol every explainer gets the same sample of D_{x,σ}:
MAPLE fits its forest on two thirds of it and picks the number of features on the last third (the reference
experiments' 50 / 25 train / validation proportion). The features are the sample's z ∈ {−1, +1}^{d−1}, so the
ridge's intercept and coefficients are w directly: w has a weight on every kept literal (no sparsity budget) and
nothing anchors w·x to f(x).
"""
from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from sklearn.ensemble import RandomForestRegressor

from .space import Sample

N_ESTIMATORS = 200
MIN_SAMPLES_LEAF = 10
MAX_FEATURES = 0.5
REGULARIZATION = 0.001
VALIDATION_SHARE = 1 / 3


def fit_forest(X: np.ndarray, y: np.ndarray, seed: int = 0) -> RandomForestRegressor:
    return RandomForestRegressor(n_estimators=N_ESTIMATORS, min_samples_leaf=MIN_SAMPLES_LEAF,
                                 max_features=MAX_FEATURES, random_state=seed, n_jobs=1).fit(X, y)


def neighbourhood_weights(train_leaves: np.ndarray, leaves: np.ndarray) -> np.ndarray:
    """(q, n): for each of q points (their leaf per tree, ``leaves`` (q, T)) the weight of every training point
    (``train_leaves`` (n, T)): the mean over trees of 1[same leaf] / that leaf's number of training points."""
    leaves = np.atleast_2d(leaves)
    n, trees = train_leaves.shape
    width = int(max(train_leaves.max(), leaves.max())) + 1
    codes = (train_leaves + np.arange(trees) * width).ravel()  # (tree, leaf) as one column index
    _, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    train = csr_matrix((1 / counts[inverse], (np.repeat(np.arange(n), trees), codes)), shape=(n, trees * width))
    query = csr_matrix((np.ones(leaves.size), (np.repeat(np.arange(len(leaves)), trees),
                                               (leaves + np.arange(trees) * width).ravel())),
                       shape=(len(leaves), trees * width))
    return (query @ train.T).toarray() / trees


def root_scores(forest: RandomForestRegressor, d: int) -> np.ndarray:
    """DStump's score per feature as the reference code computes it: the root node's impurity, summed over the
    trees whose root splits on that feature."""
    scores = np.zeros(d)
    for tree in forest.estimators_:
        feature = tree.tree_.feature[0]
        if feature >= 0:
            scores[feature] += tree.tree_.impurity[0]
    return scores


def weighted_ridge(X: np.ndarray, y: np.ndarray, weights: np.ndarray,
                   alpha: float = REGULARIZATION) -> tuple[float, np.ndarray]:
    """min Σ weights_i (y_i − b − x_i·β)² + α‖β‖² (the intercept b unpenalised, as scikit-learn's Ridge)."""
    total = weights.sum()
    mean_x, mean_y = weights @ X / total, float(weights @ y / total)
    Xc = X - mean_x
    beta = np.linalg.solve((Xc * weights[:, None]).T @ Xc + alpha * np.eye(X.shape[1]),
                           (Xc * weights[:, None]).T @ (y - mean_y))
    return mean_y - float(mean_x @ beta), beta


def _validation_rmse(X, y, train_leaves, order, X_val, y_val, val_leaves, trees: int) -> np.ndarray:
    """RMSE on the validation points of the local models that keep the 1, 2, …, d best-ranked features. With
    L the Cholesky factor of a point's weighted centred Gram (+ αI), the model on the first r features predicts
    ȳ + Σ_{i≤r} t_i s_i, t = L⁻¹(x − x̄) and s = L⁻¹Xᵀw(y − ȳ): leading blocks of triangular solves are the
    solves of the leading blocks, so every r costs two solves in all (the Grams of a chunk of points in one
    product with the rows' outer products)."""
    n, d = X.shape
    Xo, Vo = X[:, order], X_val[:, order]
    outer = (Xo[:, :, None] * Xo[:, None, :]).reshape(n, d * d)
    squared = np.zeros(d)
    step = max(1, 20_000_000 // (8 * d * d))
    for start in range(0, len(X_val), step):
        chunk = slice(start, start + step)
        w = neighbourhood_weights(train_leaves, val_leaves[chunk]) * trees
        total = w.sum(axis=1)[:, None]
        mean_x, mean_y = w @ Xo / total, (w @ y)[:, None] / total
        gram = (w @ outer).reshape(-1, d, d) - total[:, :, None] * mean_x[:, :, None] * mean_x[:, None, :]
        moment = w @ (Xo * y[:, None]) - total * mean_x * mean_y
        factor = np.linalg.cholesky(gram + REGULARIZATION * np.eye(d))
        s, t = (np.linalg.solve(factor, b[:, :, None])[:, :, 0] for b in (moment, Vo[chunk] - mean_x))
        squared += ((mean_y + np.cumsum(t * s, axis=1) - y_val[chunk, None]) ** 2).sum(axis=0)
    return np.sqrt(squared / len(X_val))


def maple(X: np.ndarray, y: np.ndarray, X_val: np.ndarray, y_val: np.ndarray, x: np.ndarray, *,
          seed: int = 0) -> tuple[float, np.ndarray, float]:
    """MAPLE's local linear model at ``x`` from training points (X, y) and validation points (X_val, y_val) of
    the model's outputs: its intercept, its coefficient per feature (0 where DStump dropped it) and the chosen
    number of features' validation RMSE."""
    forest = fit_forest(X, y, seed)
    train_leaves = forest.apply(X)
    order = np.argsort(-root_scores(forest, X.shape[1]), kind="stable")
    rmse = _validation_rmse(X, y, train_leaves, order, X_val, y_val, forest.apply(X_val), N_ESTIMATORS)
    keep = order[:int(np.argmin(rmse)) + 1]
    weights = neighbourhood_weights(train_leaves, forest.apply(np.asarray(x, dtype=float)[None]))[0] * N_ESTIMATORS
    intercept, beta = weighted_ridge(X[:, keep], y, weights)
    coef = np.zeros(X.shape[1])
    coef[keep] = beta
    return intercept, coef, float(rmse.min())


def maple_fit(sample: Sample, *, seed: int = 0) -> tuple[np.ndarray, str]:
    """MAPLE on the PLE sample (two thirds to fit, one third to choose the features) as w in z-space, and a note
    of the literals it kept."""
    features = sample.Z[:, 1:].astype(float)
    if features.shape[1] == 0:
        return np.array([float(sample.y.mean())]), "no literal"
    cut = len(features) - max(1, int(round(len(features) * VALIDATION_SHARE)))
    intercept, coef, rmse = maple(features[:cut], sample.y[:cut], features[cut:], sample.y[cut:], sample.x[1:],
                                  seed=seed)
    kept = int(np.count_nonzero(coef))
    return np.r_[intercept, coef], f"{kept} of {len(coef)} literals kept (validation RMSE {rmse:.4f})"
