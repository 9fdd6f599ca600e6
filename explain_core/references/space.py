"""The reference population's own coordinates ("Improving Decision Sparsity", §1, §8): where every explanation,
prototype and counterfactual is measured, whatever the model's own encoding.

The population is the training rows of the class an explanation moves towards (the negatives when explaining
positive rows). Numeric groups are measured in that population's standard deviations; every other group
(binary, categorical, a declared one-hot block) in "changed or not". From that:

- ℓ0 of a point = the feature groups it changes; ℓ∞ / ℓ1 = the largest / summed change of a numeric group, in
  population standard deviations (categorical changes are counted by ℓ0 only, as the paper's ℓ∞ skips 0/±1 steps);
- the mixed distance of two rows = ℓ1 over numeric groups plus one per changed other group (a Gower-style
  distance: the one the prototypes are clustered and assigned with);
- the encoding the density model of :mod:`.credibility` is fitted on: standardised numbers, one column per
  category value.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..intake.data import Dataset
from ..intake.layout import FeatureGroup
from ..reference import _opposite_rows

Columns = dict  # column → one array of values (rows in order): a table without a DataFrame


@dataclass(frozen=True)
class Destination:
    """Where one explanation (or counterfactual) takes the row: the groups it changes, the raw values they take
    (column → value), the model's score there, ℓ0 / ℓ∞ / ℓ1 (population SDs) and the credibility percentile
    (None when no density model was given).

    Parameters
    ----------
    groups : tuple of str
        The groups changed.
    values : dict
        Column → the value it takes.
    score : float
        The model's score there.
    l0 : int
        Groups changed.
    linf, l1 : float
        Largest and summed change, in population standard deviations (1 per other group changed).
    credibility : float, optional
        The credibility percentile.
    """

    groups: tuple[str, ...]
    values: dict
    score: float
    l0: int
    linf: float
    l1: float
    credibility: float | None = None


def population_rows(dataset: Dataset, rows: Sequence[int], explain_class: int = 1,
                    threshold: float | None = None) -> np.ndarray:
    """The reference population among ``rows`` (pass the training rows): the rows of the class opposite to
    ``explain_class`` by their true label (for a regression, the other side of ``threshold``).

    Parameters
    ----------
    dataset : Dataset
        The data.
    rows : sequence of int
        Candidate row positions.
    explain_class : int
        The class explained (the population is the other).
    threshold : float, optional
        A regression's threshold.

    Returns
    -------
    numpy.ndarray
        The population's row positions.
    """
    return _opposite_rows(dataset, np.asarray(rows, dtype=int), explain_class, threshold)


@dataclass(frozen=True)
class PopulationSpace:
    """Coordinates of the population ``rows`` of ``dataset``: per numeric group its mean and standard deviation
    (0 → 1), per other single-column group its observed values (one encoded column each).

    Parameters
    ----------
    dataset : Dataset
        The data.
    rows : numpy.ndarray
        The population's row positions.
    means, scales : dict
        Per numeric group, its mean and standard deviation.
    categories : dict
        Per other single-column group, its observed values.
    """

    dataset: Dataset = field(repr=False, compare=False)
    rows: np.ndarray
    means: dict
    scales: dict
    categories: dict

    @classmethod
    def fit(cls, dataset: Dataset, rows: Sequence[int]) -> PopulationSpace:
        """The coordinates of the population ``rows`` of ``dataset``.

        Parameters
        ----------
        dataset : Dataset
            The data.
        rows : sequence of int
            The population's rows.

        Returns
        -------
        PopulationSpace
            Their means, standard deviations and observed values.
        """
        rows = np.asarray(rows, dtype=int)
        frame = dataset.features.iloc[rows]
        means, scales, categories = {}, {}, {}
        for g in dataset.groups:
            if _numeric(g):
                x = frame[g.columns[0]].to_numpy(dtype=float)
                means[g.name] = float(np.nanmean(x)) if np.isfinite(x).any() else 0.0
                sd = float(np.nanstd(x)) if np.isfinite(x).any() else 0.0
                scales[g.name] = sd if sd > 0 else 1.0
            elif not g.is_block:
                categories[g.name] = tuple(pd.unique(frame[g.columns[0]].dropna()))
        return cls(dataset, rows, means, scales, categories)

    @property
    def groups(self) -> tuple[FeatureGroup, ...]:
        return tuple(self.dataset.groups)

    @property
    def numeric(self) -> tuple[FeatureGroup, ...]:
        return tuple(g for g in self.groups if _numeric(g))

    def arrays(self, frame: pd.DataFrame | Columns) -> Columns:
        """The columns the measures read, each as one array: a numeric group's and a block's columns as floats,
        every other column as objects. Columns (e.g. :func:`~.outcome.measure`'s points) are returned as they are.

        Parameters
        ----------
        frame : pandas.DataFrame or dict of str to numpy.ndarray
            Rows, or columns already as arrays.

        Returns
        -------
        dict of str to numpy.ndarray
            Column → its array.
        """
        if isinstance(frame, dict):
            return frame
        if len(frame) == 1:  # one row: read as a row, much faster than column by column
            row = dict(zip(frame.columns, frame.iloc[0].to_numpy(dtype=object)))
            return {c: _floats(np.array([row[c]], dtype=object)) if _as_float(g) else np.array([row[c]], dtype=object)
                    for g in self.groups for c in g.columns}
        return {c: frame[c].to_numpy(dtype=float if _as_float(g) else object) for g in self.groups for c in g.columns}

    def standardised(self, frame: pd.DataFrame | Columns) -> np.ndarray:
        """(n, numeric groups) values in population SDs from the mean (missing → the mean).

        Parameters
        ----------
        frame
            Rows, as for :meth:`arrays`.

        Returns
        -------
        numpy.ndarray
            The standardised values.
        """
        frame = self.arrays(frame)
        out = [(frame[g.columns[0]] - self.means[g.name]) / self.scales[g.name] for g in self.numeric]
        return np.nan_to_num(np.column_stack(out), nan=0.0) if out else np.zeros((_length(frame), 0))

    def encode(self, frame: pd.DataFrame | Columns) -> np.ndarray:
        """The density model's coordinates, group by group in layout order (:meth:`group_columns`): a numeric
        group standardised, a categorical or binary one as one 0/1 column per observed value, a declared one-hot
        block as it is.

        Parameters
        ----------
        frame
            Rows, as for :meth:`arrays`.

        Returns
        -------
        numpy.ndarray
            (n, columns) coordinates.
        """
        frame = self.arrays(frame)
        standard = self.standardised(frame)
        parts, k = [], 0
        for g in self.groups:
            if _numeric(g):
                parts.append(standard[:, k:k + 1])
                k += 1
            elif g.is_block:
                parts.append(np.column_stack([frame[c] for c in g.columns]))
            else:
                values = frame[g.columns[0]]
                parts.append(np.column_stack([values == c for c in self.categories[g.name]]).astype(float)
                             if self.categories[g.name] else np.zeros((len(values), 0)))
        return np.hstack(parts) if parts else np.zeros((_length(frame), 0))

    def group_columns(self) -> np.ndarray:
        """The group (index in layout order) of each column of :meth:`encode`.

        Returns
        -------
        numpy.ndarray
            One group index per column.
        """
        widths = [1 if _numeric(g) else len(g.columns) if g.is_block else len(self.categories[g.name])
                  for g in self.groups]
        return np.repeat(np.arange(len(widths)), widths)

    def changed(self, queries: pd.DataFrame | Columns, points: pd.DataFrame | Columns) -> np.ndarray:
        """(n, groups) bool: does point i change group g of query i (one query row broadcasts)?

        Parameters
        ----------
        queries, points : pandas.DataFrame or dict of str to numpy.ndarray
            The rows compared.

        Returns
        -------
        numpy.ndarray
            (n, groups) booleans.
        """
        queries, points = self.arrays(queries), self.arrays(points)
        return np.column_stack([~same_values(_values(queries, g), _values(points, g)) for g in self.groups])

    def steps(self, queries: pd.DataFrame | Columns, points: pd.DataFrame | Columns) -> np.ndarray:
        """(n, numeric groups) |point − query| in population SDs (missing → the mean).

        Parameters
        ----------
        queries, points
            As for :meth:`changed`.

        Returns
        -------
        numpy.ndarray
            (n, numeric groups) steps.
        """
        return np.abs(self.standardised(points) - self.standardised(queries))

    def distances(self, queries: pd.DataFrame | Columns,
                  points: pd.DataFrame | Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """ℓ0 (groups changed), ℓ∞ and ℓ1 (numeric groups, population SDs) of each point from its query.

        Parameters
        ----------
        queries, points
            As for :meth:`changed`.

        Returns
        -------
        tuple of numpy.ndarray
            ℓ0, ℓ∞ and ℓ1 per point.
        """
        queries, points = self.arrays(queries), self.arrays(points)
        steps = self.steps(queries, points)
        l0 = self.changed(queries, points).sum(axis=1)
        linf = steps.max(axis=1, initial=0.0)
        return l0.astype(int), linf, steps.sum(axis=1)

    def mixed(self, a: pd.DataFrame | Columns, b: pd.DataFrame | Columns) -> np.ndarray:
        """(len(a), len(b)) mixed distances: ℓ1 over numeric groups in population SDs + 1 per changed other
        group.

        Parameters
        ----------
        a, b
            The rows compared, as :meth:`arrays` takes them.

        Returns
        -------
        numpy.ndarray
            The distances.
        """
        a, b = self.arrays(a), self.arrays(b)
        za, zb = self.standardised(a), self.standardised(b)
        out = np.zeros((len(za), len(zb)))
        for j in range(za.shape[1]):
            out += np.abs(za[:, j, None] - zb[None, :, j])
        for g in self.groups:
            if _numeric(g):
                continue
            codes = _codes(np.concatenate([_keys(a, g), _keys(b, g)]))
            out += codes[:len(za), None] != codes[None, len(za):]
        return out


def _numeric(group: FeatureGroup) -> bool:
    return group.kind == "numeric" and not group.is_block


def _as_float(group: FeatureGroup) -> bool:
    """Are the group's columns read as numbers (a numeric group, a one-hot block)?"""
    return group.kind == "numeric" or group.is_block


def _floats(values: np.ndarray) -> np.ndarray:
    """Objects as floats, every missing value (None, NaN, pd.NA) NaN: what ``Series.to_numpy(dtype=float)`` gives."""
    return np.where(pd.isna(values), np.nan, values).astype(float)


def _length(frame: Columns) -> int:
    return len(next(iter(frame.values()))) if frame else 0


def _values(frame: Columns, group: FeatureGroup) -> np.ndarray:
    """A group's values per row: the column, or a one-hot block's active column."""
    if group.is_block:
        return group.active_columns(np.column_stack([frame[c] for c in group.columns]))
    return frame[group.columns[0]]


def _keys(frame: Columns, group: FeatureGroup) -> np.ndarray:
    """Hashable per-row keys of a group's value (missing as one key)."""
    values = _values(frame, group)
    return np.where(pd.isna(values), "\0missing", values).astype(object)


def _codes(keys: np.ndarray) -> np.ndarray:
    """One integer per distinct key, in order of first appearance (keys equal by Python's ``==``, as factorize)."""
    seen: dict = {}
    return np.array([seen.setdefault(k, len(seen)) for k in keys.tolist()], dtype=np.intp)


def same_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise equality with broadcasting, missing equal to missing, 1 equal to 1.0."""
    a, b = np.broadcast_arrays(a, b)
    missing_a, missing_b = pd.isna(a), pd.isna(b)
    both = ~missing_a & ~missing_b
    out = missing_a & missing_b
    out[both] = (a[both] == b[both]).astype(bool)
    return out
