"""Boolean-model mode (PLE paper §6.1, the paper's tables): every attribute becomes indicator literals
(:class:`BooleanEncoder`) and a demo MLP is trained on that encoding (:func:`boolean_model`), so every z of the
hypercube (:mod:`explain_core.linear.space`) is a valid model input.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.preprocessing import KBinsDiscretizer

from ..cache import cache_dir, held, write_atomic
from ..intake.data import Dataset
from ..intake.layout import FeatureGroup
from ..intake.demo_models import load_own_skops
from .space import BIAS, K_BINS, LiteralSpace, TargetScale


@dataclass(frozen=True)
class Literal:
    """One indicator: ``attribute`` in [low, high) (``bin``), equal to ``value`` (``value``), or none of
    the ``others`` listed (``other``)."""

    attribute: str
    kind: str
    name: str
    low: float = -np.inf
    high: float = np.inf
    value: Any = None
    others: tuple = ()


@dataclass(frozen=True)
class BooleanEncoder:
    """Indicator literals of a dataset's attributes (§6.1), fitted on training rows; bias first."""

    groups: tuple[FeatureGroup, ...]
    literals: tuple[Literal, ...]
    medians: tuple[tuple[str, float], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return (BIAS,) + tuple(lit.name for lit in self.literals)

    @property
    def dropped(self) -> tuple[str, ...]:
        """Attributes without a literal (constant, or numeric with repeated quantile edges)."""
        kept = {lit.attribute for lit in self.literals}
        return tuple(g.name for g in self.groups if g.name not in kept)

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        """(n, d) int8 matrix in {−1,+1}: column 0 the bias, column j whether literal j holds."""
        values = {g.name: _attribute_values(frame, g, dict(self.medians)) for g in self.groups}
        cols = [np.ones(len(frame), dtype=bool)] + [_holds(lit, values[lit.attribute]) for lit in self.literals]
        return np.where(np.column_stack(cols), 1, -1).astype(np.int8)


def _attribute_values(frame: pd.DataFrame, group: FeatureGroup, medians: dict) -> pd.Series:
    """One value per row: the number (NaN → training median), the category ("missing" for NaN), or
    the active column of a one-hot block ("none" if no column is 1)."""
    if group.is_block:
        return pd.Series(group.values_in(frame))
    column = frame[group.columns[0]].reset_index(drop=True)
    if group.name in medians:
        return column.astype(float).fillna(medians[group.name])
    return column.astype(object).where(column.notna(), "missing")


def _holds(lit: Literal, values: pd.Series) -> np.ndarray:
    if lit.kind == "bin":
        v = values.to_numpy(dtype=float)
        return (v >= lit.low) & (v < lit.high)
    if lit.kind == "value":
        return (values == lit.value).to_numpy()
    return ~values.isin(list(lit.others)).to_numpy()


def fit_boolean_encoder(dataset: Dataset, rows: Sequence[int] | None = None, K: int = K_BINS) -> BooleanEncoder:
    """§6.1 encoding fitted on ``rows``: ≤ K distinct values → one-hot; numeric > K → K quantile bins
    (dropped if the edges repeat); categorical > K → the K−1 most frequent plus "other"; constants dropped."""
    frame = dataset.features if rows is None else dataset.features.iloc[np.asarray(rows)]
    medians = tuple((g.name, float(frame[g.columns[0]].median())) for g in dataset.groups
                    if g.kind == "numeric" and len(g.columns) == 1)
    literals = []
    for group in dataset.groups:
        values = _attribute_values(frame, group, dict(medians))
        literals += _group_literals(group, values, dict(medians), K)
    return BooleanEncoder(tuple(dataset.groups), tuple(literals), medians)


def _group_literals(group: FeatureGroup, values: pd.Series, medians: dict, K: int) -> list[Literal]:
    counts = values.value_counts(sort=True)
    if len(counts) <= 1:
        return []
    if len(counts) <= K:
        return [Literal(group.name, "value", f"{group.name} = {_fmt(v)}", value=v)
                for v in sorted(counts.index, key=_sort_key)]
    if group.name in medians:
        return _bin_literals(group.name, values.to_numpy(dtype=float), K)
    top = tuple(counts.index[:K - 1])
    return ([Literal(group.name, "value", f"{group.name} = {_fmt(v)}", value=v) for v in top]
            + [Literal(group.name, "other", f"{group.name} = other", others=top)])


def _bin_literals(name: str, values: np.ndarray, K: int) -> list[Literal]:
    binner = KBinsDiscretizer(n_bins=K, encode="ordinal", strategy="quantile",
                              quantile_method="averaged_inverted_cdf", subsample=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "bins whose width are too small are removed"
        binner.fit(values.reshape(-1, 1))
    edges = binner.bin_edges_[0]
    if len(edges) != K + 1:  # §6.1: quantile edges not all distinct → attribute discarded
        return []
    inner = edges[1:-1]
    lows, highs = np.r_[-np.inf, inner], np.r_[inner, np.inf]
    names = ([f"{name} < {_fmt(inner[0])}"] + [f"{name} in [{_fmt(a)}, {_fmt(b)})" for a, b in zip(inner, inner[1:])]
             + [f"{name} ≥ {_fmt(inner[-1])}"])
    return [Literal(name, "bin", n, low=lo, high=hi) for n, lo, hi in zip(names, lows, highs)]


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{v:.4g}"
    return str(v.item() if isinstance(v, np.generic) else v)


def _sort_key(v):
    number = isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))
    return (0, float(v), "") if number else (1, 0.0, str(v))


@dataclass(frozen=True, eq=False)
class BooleanModel:
    """A demo model trained on the Boolean encoding itself (§6.1 'Models'), so any z is a valid input.

    ``predict_f(Z)`` gives the raw f: +1 for the positive class / the rescaled regression output.
    ``test_loss`` is the mean ¼(y − ŷ)² on the test rows (the error rate for classifiers).
    """

    dataset_name: str
    task: str
    encoder: BooleanEncoder
    estimator: Any
    scale: TargetScale
    train_rows: np.ndarray
    test_rows: np.ndarray
    test_loss: float

    def predict_f(self, Z: np.ndarray) -> np.ndarray:
        inputs = np.asarray(Z[:, 1:], dtype=np.float32)
        if self.task == "classification":
            return np.where(self.estimator.predict(inputs) == 1, 1.0, -1.0)
        return np.clip(self.estimator.predict(inputs), -1.0, 1.0)

    def space(self, row: pd.DataFrame) -> LiteralSpace:
        """The literal space of one query row (the first row of ``row``)."""
        x = self.encoder.transform(row.iloc[:1])[0]
        fx = self.predict_f(x[None, :])[0]
        target = self.scale
        if self.task == "classification":
            target = TargetScale("classification", classes=self.scale.classes[::1 if fx > 0 else -1])
        sign = fx if self.task == "classification" else 1.0
        return LiteralSpace(self.encoder.names, x, lambda Z, seed: sign * self.predict_f(Z), target, "boolean")


def _estimator(task: str, seed: int):
    """§6.1: MLPClassifier defaults; MLPRegressor 150-100-50, up to 500 iterations."""
    if task == "classification":
        return MLPClassifier(random_state=seed)
    return MLPRegressor(hidden_layer_sizes=(150, 100, 50), max_iter=500, random_state=seed)


def boolean_model(dataset: Dataset, *, seed: int = 0, K: int = K_BINS, cache: bool = True) -> BooleanModel:
    """Encode ``dataset`` (§6.1, ``K`` bins/values), train the paper's MLP on the training split, cache it.

    Parameters
    ----------
    dataset : Dataset
        The data.
    seed : int
        The split's and the MLP's seed.
    K : int
        Bins / values per attribute.
    cache : bool
        Keep the trained MLP in the disk cache.

    Returns
    -------
    BooleanModel
        The encoder, MLP and split; ``.space(row)`` gives a row's :class:`LiteralSpace`.
    """
    train, test = dataset.split(seed)
    encoder = fit_boolean_encoder(dataset, train, K)
    Z = encoder.transform(dataset.features)
    y = dataset.y
    if dataset.task == "classification":
        others = [c for c in pd.unique(dataset.target) if c != dataset.positive_class]
        scale = TargetScale("classification", classes=(dataset.positive_class, others[0] if len(others) == 1
                                                       else f"not {dataset.positive_class}"))
        target = y
    else:
        scale = TargetScale("regression", float(y[train].min()), float(y[train].max()))
        target = scale.to_f(y)
    estimator = _fit_cached(dataset, Z[train, 1:].astype(np.float32), target[train], seed, K, cache)
    model = BooleanModel(dataset.name, dataset.task, encoder, estimator, scale, train, test, 0.0)
    f_test = model.predict_f(Z[test])
    y_test = np.where(target[test] == 1, 1.0, -1.0) if dataset.task == "classification" else target[test]
    return BooleanModel(dataset.name, dataset.task, encoder, estimator, scale, train, test,
                        float(np.mean((f_test - y_test) ** 2) / 4))


def _fit_cached(dataset: Dataset, X: np.ndarray, y: np.ndarray, seed: int, K: int, cache: bool):
    key = f"{dataset.name}-boolean-mlp-{seed}-K{K}-sk{sklearn.__version__}-{dataset.content_hash}"
    path = cache_dir() / f"{key}.skops"
    if not cache:
        return _fit(dataset.task, seed, X, y)
    with held(path):  # fitted once: a process arriving meanwhile waits, then loads it
        if path.exists():
            return load_own_skops(path)
        estimator = _fit(dataset.task, seed, X, y)
        import skops.io as sio

        write_atomic(path, lambda tmp: sio.dump(estimator, tmp))
        return estimator


def _fit(task: str, seed: int, X: np.ndarray, y: np.ndarray):
    estimator = _estimator(task, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # §6.1 caps the iterations on purpose
        estimator.fit(X, y)
    return estimator
