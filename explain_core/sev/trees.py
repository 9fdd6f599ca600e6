"""A model's internals as validated plain data: a :class:`TreeEnsemble` (or a :class:`LinearModel`), the
:class:`Output` that turns its raw output into the adapter's score, and the feature group of each of its inputs.

:func:`read_model` asks the model for its structure through ``ModelAdapter.introspect`` (:mod:`.readers`), checks
every array (shapes, finite thresholds and values, indices in range, trees that are trees, sizes under the limits
below) — in the sandboxed case it comes from a hostile process — and maps each input to its group.
:func:`calibrate` then reads the final estimator's inputs for a few raw rows, fixes the constant offset (a booster's
base score, a gradient boosting's initial estimate) and checks that the structure reproduces the model's own raw
output and scores on those rows; a model that fails any check is left to the breadth-first search.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..errors import Unreadable
from ..intake.layout import GroupLayout
from ..intake.models import ModelAdapter
from .readers import read_inputs, read_structure
from .network import Network, network_from_plain

MAX_NODES = 5_000_000
MAX_TREES = 100_000
MAX_TREE_DEPTH = 64
MAX_FEATURES = 1_000_000
RULES = ("le32", "le64", "lt32")  # float32(x) <= t (scikit-learn, CatBoost), x <= t (LightGBM, HistGB), XGBoost's <
LINKS = ("identity", "sigmoid")
ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (1e-35f): |x| at or below it is read as 0
RELATIVE_TOLERANCE = 1e-6  # of the margin's scale: the band within which the model itself decides (re-scoring)


@dataclass(frozen=True)
class Output:
    """score = link(scale · raw + shift), link ``identity`` or ``sigmoid``."""

    link: str
    scale: float
    shift: float

    def score(self, raw: np.ndarray) -> np.ndarray:
        z = self.scale * np.asarray(raw, dtype=float) + self.shift
        return z if self.link == "identity" else 1.0 / (1.0 + np.exp(-z))

    def raw_threshold(self, threshold: float) -> float:
        """The raw output at which the score equals ``threshold`` (the score is monotone in the raw output)."""
        if self.link == "sigmoid":
            if not 0.0 < threshold < 1.0:
                raise Unreadable(f"a probability threshold of {threshold} is never crossed")
            threshold = float(np.log(threshold) - np.log1p(-threshold))
        return (threshold - self.shift) / self.scale

    def raw_band(self, threshold: float) -> float:
        """How far the raw output may sit from :meth:`raw_threshold` and still round across it in the model's float
        arithmetic (the sigmoid evaluated in float32, as XGBoost does)."""
        slope = 1.0 if self.link == "identity" else 1.0 / max(threshold * (1 - threshold), 1e-12)
        return 1e-6 * slope / abs(self.scale)


@dataclass(frozen=True)
class TreeEnsemble:
    """Every tree's nodes in flat arrays (global indices; ``feature`` −1 and children −1 at leaves). A row goes left
    at node n when ``rule`` holds for its value of ``feature[n]``; a missing value goes by ``missing_left``. LightGBM's
    nodes (``missing_kind`` 1, 2, 3: its missing types None, Zero, NaN) read |x| ≤ 1e-35f as 0; None reads NaN as 0,
    Zero sends NaN and 0 by ``missing_left``, NaN sends NaN by it. The raw
    output is ``base`` plus the sum of the reached leaves' ``value``."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing_left: np.ndarray
    missing_kind: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    rule: str
    n_features: int
    base: float = 0.0

    @property
    def n_trees(self) -> int:
        return len(self.roots)

    def goes_left(self, nodes: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Whether value ``x`` goes left at each node of ``nodes`` (arrays of one shape), in the library's
        arithmetic."""
        kind = self.missing_kind[nodes]
        nan = np.isnan(x)
        lightgbm = kind > 0  # LightGBM reads |x| <= its zero threshold as 0, and NaN as 0 unless missing_type is NaN
        x = np.where(lightgbm & ((np.abs(x) <= ZERO) | (nan & (kind != 3))), 0.0, x)
        t = self.threshold[nodes]
        with np.errstate(invalid="ignore"):
            if self.rule == "le32":
                test = x.astype(np.float32).astype(np.float64) <= t
            elif self.rule == "lt32":
                test = x.astype(np.float32) < t.astype(np.float32)
            else:
                test = x <= t
        default = (nan & ((kind == 0) | (kind == 3))) | ((kind == 2) & (x == 0.0))
        return np.where(default, self.missing_left[nodes], test)

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """(rows, trees) the leaf each row reaches in each tree."""
        X = np.asarray(X, dtype=np.float64)
        node = np.broadcast_to(self.roots, (len(X), self.n_trees)).copy()
        rows = np.arange(len(X))[:, None]
        for _ in range(MAX_TREE_DEPTH + 1):
            f = self.feature[node]
            inner = f >= 0
            if not inner.any():
                return node
            left = self.goes_left(node, X[rows, np.maximum(f, 0)])
            node = np.where(inner, np.where(left, self.left[node], self.right[node]), node)
        raise Unreadable("a tree is deeper than its validation allowed")

    def raw(self, X: np.ndarray) -> np.ndarray:
        return self.base + self.value[self.leaves(X)].sum(axis=1)

    def scale(self) -> float:
        """The margin's scale: |base| + the largest |leaf value| of every tree, summed."""
        leaf = self.feature < 0
        owner = np.repeat(np.arange(self.n_trees), np.diff(np.append(self.roots, len(self.feature))))
        biggest = np.zeros(self.n_trees)
        np.maximum.at(biggest, owner[leaf], np.abs(self.value[leaf]))
        return abs(self.base) + float(biggest.sum())


@dataclass(frozen=True)
class LinearModel:
    """raw = coef · x + base."""

    coef: np.ndarray
    base: float

    @property
    def n_features(self) -> int:
        return len(self.coef)

    def raw(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=np.float64) @ self.coef + self.base

    def scale(self) -> float:
        return abs(self.base) + float(np.abs(self.coef).sum())


@dataclass(frozen=True)
class ReadModel:
    """A model read for the exact engines: its structure, its output, each input's group, and the family."""

    structure: TreeEnsemble | LinearModel | Network
    output: Output
    feature_group: np.ndarray
    family: str

    def tolerance(self, threshold: float) -> float:
        """The raw-output band around the threshold inside which the model's own score decides (re-scoring)."""
        return RELATIVE_TOLERANCE * (1.0 + self.structure.scale()) + self.output.raw_band(threshold)


def read_model(model: ModelAdapter, layout: GroupLayout) -> ReadModel:
    """The model's structure, validated, with each input mapped to its group; :class:`Unreadable` otherwise."""
    try:
        data = model.introspect(read_structure, [str(c) for c in model.columns])
    except Exception as exc:  # noqa: BLE001 — whatever the model (or its worker) raised, the BFS still works
        raise Unreadable(f"reading its structure failed ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("supported") is not True:
        reason = data.get("reason") if isinstance(data, dict) else None
        raise Unreadable(str(reason)[:300] if reason else "its structure could not be read")
    structure = {"linear": linear_from_plain, "network": _network}.get(data.get("kind"), ensemble_from_plain)(data)
    sources = data.get("sources")
    if not isinstance(sources, list) or len(sources) != structure.n_features:
        raise Unreadable("its inputs cannot be traced to the data's columns")
    group_of = dict(zip(layout.columns, layout.column_group))
    if not all(isinstance(s, str) and s in group_of for s in sources):
        raise Unreadable("some of its inputs do not come from one column of the data")
    return ReadModel(structure, _output(model, data), np.array([group_of[s] for s in sources], dtype=np.int64),
                     str(data.get("family", "")))


def _output(model: ModelAdapter, data: dict) -> Output:
    """The adapter's score as a function of the raw output (orientation: the positive class's side)."""
    a, b = _numbers(data.get("affine"), 2, "affine")
    link, family = data.get("link"), data.get("family")
    if link not in LINKS:
        raise Unreadable("its output link is unknown")
    if model.task == "regression":
        if model.score_kind != "predict" or link != "identity":
            raise Unreadable("its regression output is not its prediction")
        return Output("identity", a, b)
    classes = data.get("classes")
    if not isinstance(classes, list) or len(classes) != 2 or model.score_kind not in ("proba", "decision"):
        raise Unreadable("it is not a binary classifier scored by its probability or decision value")
    sign = 1.0 if model._positive_index() == 1 else -1.0
    if model.score_kind == "decision":
        if family not in ("boosted", "hist", "linear"):
            raise Unreadable("its decision value is not its raw output")
        return Output("identity", sign, 0.0)
    if link == "identity":  # a tree or forest: the raw output is P(classes_[1])
        if family not in ("tree", "forest"):
            raise Unreadable("its probability is not modelled")
        return Output("identity", sign, 0.0 if sign > 0 else 1.0)
    return Output("sigmoid", sign, 0.0)


def _network(data: dict) -> Network:
    try:
        return network_from_plain(data)
    except ValueError as exc:
        raise Unreadable(str(exc)) from None


def _numbers(value, n: int, what: str) -> list[float]:
    if not isinstance(value, list) or len(value) != n or not all(isinstance(v, (int, float)) for v in value):
        raise Unreadable(f"its {what} is malformed")
    out = [float(v) for v in value]
    if not all(np.isfinite(out)) or out[0] == 0:
        raise Unreadable(f"its {what} is not finite")
    return out


def _array(data: dict, key: str, dtype, n: int | None = None) -> np.ndarray:
    value = data.get(key)
    if not isinstance(value, np.ndarray) or value.ndim != 1 or (n is not None and len(value) != n):
        raise Unreadable(f"its {key} array is malformed")
    if value.dtype.kind not in ("b", "i", "u", "f"):
        raise Unreadable(f"its {key} array is not numeric")
    return value.astype(dtype)


def linear_from_plain(data: dict) -> LinearModel:
    coef = _array(data, "coef", np.float64)
    if len(coef) > MAX_FEATURES or not np.isfinite(coef).all():
        raise Unreadable("its coefficients are not finite or too many")
    intercept = data.get("intercept")
    if not isinstance(intercept, (int, float)) or not np.isfinite(intercept):
        raise Unreadable("its intercept is not finite")
    return LinearModel(coef, float(intercept))


def ensemble_from_plain(data: dict) -> TreeEnsemble:
    """The trees of :func:`~.readers.read_structure`, checked: every tree a tree (children after their parent, one
    parent each), features and children in range, thresholds that are numbers, finite leaf values, within the size
    limits."""
    sizes = _array(data, "sizes", np.int64)
    n = int(sizes.sum()) if len(sizes) else 0
    if not 0 < len(sizes) <= MAX_TREES or (sizes < 1).any() or n > MAX_NODES:
        raise Unreadable(f"it reports {len(sizes)} trees of {n} nodes (at most {MAX_TREES} trees, {MAX_NODES} nodes)")
    arrays = {k: _array(data, k, t, n) for k, t in (("feature", np.int64), ("threshold", np.float64),
                                                   ("left", np.int64), ("right", np.int64), ("missing_left", bool),
                                                   ("missing_kind", np.int8), ("value", np.float64))}
    n_features = data.get("n_features")
    if data.get("rule") not in RULES or not isinstance(n_features, int) or not 0 < n_features <= MAX_FEATURES:
        raise Unreadable("its split rule or number of inputs is malformed")
    roots = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    _check_trees(arrays, sizes, roots, n_features)
    offset = np.repeat(roots, sizes)
    inner = arrays["feature"] >= 0
    for side in ("left", "right"):
        arrays[side] = np.where(inner, arrays[side] + offset, -1)
    arrays["threshold"] = np.where(inner, arrays["threshold"], 0.0)
    arrays["value"] = np.where(inner, 0.0, arrays["value"])
    return TreeEnsemble(**arrays, roots=roots, rule=data["rule"], n_features=n_features)


def _check_trees(a: dict, sizes: np.ndarray, roots: np.ndarray, n_features: int) -> None:
    local = np.arange(len(a["feature"])) - np.repeat(roots, sizes)
    size = np.repeat(sizes, sizes)
    inner = a["feature"] >= 0
    if (a["feature"] >= n_features).any() or (a["feature"] < -1).any():
        raise Unreadable("a split names an input the model does not have")
    children = np.concatenate([a["left"][inner], a["right"][inner]])
    if ((children <= np.tile(local[inner], 2)) | (children >= np.tile(size[inner], 2))).any():
        raise Unreadable("a tree's children are out of range (each child must follow its parent)")
    if ((a["left"][~inner] != -1) | (a["right"][~inner] != -1)).any():
        raise Unreadable("a leaf has children")
    parents = np.zeros(len(local), dtype=np.int64)
    children = np.concatenate([a["left"][inner], a["right"][inner]])
    np.add.at(parents, children + np.tile(np.repeat(roots, sizes)[inner], 2), 1)
    if (parents[local > 0] != 1).any() or (parents[local == 0] != 0).any():
        raise Unreadable("a tree's nodes do not form a tree")
    # a threshold may be ±inf (scikit-learn's split of missing from present values), never NaN
    if np.isnan(a["threshold"][inner]).any() or not np.isfinite(a["value"][~inner]).all():
        raise Unreadable("a threshold is NaN or a leaf value is not finite")
    if not np.isin(a["missing_kind"], (0, 1, 2, 3)).all():
        raise Unreadable("a missing-value rule is unknown")
    parent = np.full(len(local), -1, dtype=np.int64)
    offset = np.repeat(roots, sizes)
    for side in ("left", "right"):
        parent[a[side][inner] + offset[inner]] = np.flatnonzero(inner)
    depth = np.zeros(len(local), dtype=np.int64)
    for _ in range(MAX_TREE_DEPTH + 1):  # one level settles per pass
        deeper = np.where(parent >= 0, depth[np.maximum(parent, 0)] + 1, 0)
        if (deeper == depth).all():
            return
        depth = deeper
    raise Unreadable(f"a tree is deeper than {MAX_TREE_DEPTH}")


@dataclass(frozen=True)
class Calibrated:
    """A read model with its offset fixed on some raw rows, those rows as the final estimator's inputs, and the
    model's scores of them."""

    read: ReadModel
    inputs: np.ndarray
    scores: np.ndarray


def calibrate(model: ModelAdapter, read: ReadModel, rows: pd.DataFrame) -> Calibrated:
    """Fix the structure's constant offset on ``rows`` and check that it then gives the model's raw output and its
    scores on every one of them (within the tolerance); :class:`Unreadable` otherwise."""
    try:
        data = model.introspect(read_inputs, rows, [str(c) for c in model.columns])
    except Exception as exc:  # noqa: BLE001 — as in read_model
        raise Unreadable(f"reading its inputs failed ({type(exc).__name__})") from None
    X, raw = (data.get("inputs"), data.get("raw")) if isinstance(data, dict) else (None, None)
    if not (isinstance(X, np.ndarray) and isinstance(raw, np.ndarray) and X.dtype.kind == "f" and raw.dtype.kind == "f"
            and X.shape == (len(rows), read.structure.n_features) and raw.shape == (len(rows),)
            and np.isfinite(raw).all() and not np.isinf(X).any()):
        raise Unreadable("its inputs or raw outputs for these rows are malformed")
    structure = replace(read.structure, base=0.0)
    offsets = raw - structure.raw(X)
    base = float(np.median(offsets))
    structure = replace(structure, base=base)
    read = replace(read, structure=structure)
    tol = read.tolerance(model.threshold)
    if np.abs(offsets - base).max() > tol:
        raise Unreadable("the trees read from it do not reproduce its raw output")
    mine, theirs = read.output.score(structure.raw(X)), model.score(rows)
    if np.abs(mine - theirs).max() > 1e-6 * (1 + np.abs(theirs).max()):
        raise Unreadable("its scores do not follow from its raw output as modelled")
    return Calibrated(read, X, theirs)
