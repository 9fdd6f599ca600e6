"""Partial dependence (PDP) and individual conditional expectation (ICE) of one feature group, and the 2-D partial
dependence of a pair, over a seeded sample of test rows, on the adapter's score (P(positive class), one class against
the rest for a multiclass model, or the prediction of a regression).

The grids are those of :func:`sklearn.inspection.partial_dependence`: a numeric feature's unique values when it has
at most ``grid`` of them, else its observed quantiles between the 5th and 95th percentile (``inverted_cdf``: every
grid value occurs in the data); a categorical or binary feature's levels, a one-hot block's columns (and "none"
when some rows have none of them) as one categorical feature.

The averaging is done here, not by ``sklearn.inspection.partial_dependence(method="brute")``: sklearn calls the
model once per grid value (measured: 20 calls of 300 rows for a 20-value grid), a round trip each to the sandboxed
worker of an uploaded model; it cannot move a one-hot block as one feature; it refuses integer columns (COMPAS's
age) and needs a fitted scikit-learn estimator, where an upload is a proxy. Here every grid value of every
sampled row is scored in one batched adapter call (rows × grid values), on any model the adapter scores;
tests/test_inspection_dependence.py checks the numbers against sklearn's own function and against brute force.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import IntakeError
from ..intake.layout import NO_COLUMN, FeatureGroup
from ..results import Explanation
from ..setup import Setup

PERCENTILES = (0.05, 0.95)  # sklearn's default range of a numeric grid
MAX_LEVELS = 30  # a categorical feature's most frequent levels drawn as bars
PDP_ROWS, ICE_ROWS = 500, 100  # the sample of test rows averaged, and the rows drawn one by one (page and report)


@dataclass(frozen=True, eq=False)
class PartialDependence(Explanation):
    """The average score (``average``: one value per grid value, or a grid × grid surface for a pair) of the rows
    ``rows`` with the feature group(s) set to each grid value; the ICE lines of ``ice_rows`` (their own scores on
    the grid, one line each; none for a pair); the chosen ``row``'s line or surface (``row_ice``), its own values
    and score. ``kinds``: ``numeric`` (a line) or ``categorical`` (bars) per group; ``output``: what the score is
    (``P(recidivated)``, ``prediction``).

    Parameters
    ----------
    groups, kinds : tuple of str
        The feature group(s), and each one's kind.
    grids : tuple of numpy.ndarray
        Each group's grid.
    average : numpy.ndarray
        The partial dependence.
    rows, ice_rows : numpy.ndarray
        The sampled rows, and those with ICE lines.
    ice : numpy.ndarray
        Their lines.
    row : int, optional
        The chosen row's position.
    row_values : tuple
        Its values of the groups.
    row_score : float
        Its score.
    row_ice : numpy.ndarray
        Its line or surface.
    output : str
        What the score is.
    seed : int
        The sample's seed.
    """

    groups: tuple[str, ...]
    kinds: tuple[str, ...]
    grids: tuple[np.ndarray, ...]
    average: np.ndarray
    rows: np.ndarray
    ice_rows: np.ndarray
    ice: np.ndarray
    row: int | None
    row_values: tuple
    row_score: float
    row_ice: np.ndarray
    output: str
    seed: int = 0

    method = "Partial dependence and ICE"
    meta_parameters = ("groups", "output", "seed")

    @property
    def row_name(self) -> str:
        return f"row {self.row}" if self.row is not None else "the chosen row"

    def table(self) -> pd.DataFrame:
        """One line per grid value (a pair: per grid cell): the value(s), the average score, the chosen row's score
        there and, for one feature, each ICE line as a column.

        Returns
        -------
        pandas.DataFrame
            The grid.
        """
        cells = pd.MultiIndex.from_product([range(len(g)) for g in self.grids])
        table = pd.DataFrame({g: grid[cells.codes[i]] for i, (g, grid) in enumerate(zip(self.groups, self.grids))})
        table[f"average {self.output}"] = self.average.ravel()
        table[f"{self.output} of {self.row_name}"] = self.row_ice.ravel()
        if len(self.groups) == 1:
            ice = pd.DataFrame(self.ice.T, columns=[f"ICE row {r}" for r in self.ice_rows])
            table = pd.concat([table, ice], axis=1)
        return table


def sampled_test_rows(setup: Setup, rows: int, seed: int) -> np.ndarray:
    """A seeded sample of at most ``rows`` test rows (dataset positions, sorted)."""
    test = np.asarray(setup.test_rows)
    return np.sort(np.random.default_rng(seed).choice(test, size=min(rows, len(test)), replace=False))


def feature_grid(setup: Setup, group: FeatureGroup, grid: int = 20) -> tuple[str, np.ndarray]:
    """The grid of ``group`` over the dataset's rows (see the module).

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    group : FeatureGroup
        The feature group.
    grid : int
        The most grid values of a numeric group (its observed quantiles).

    Returns
    -------
    tuple of (str, numpy.ndarray)
        ``"numeric"`` or ``"categorical"``, and the grid values.

    Raises
    ------
    IntakeError
        When the group has no values.
    """
    values = pd.Series(group.values_in(setup.dataset.features))
    if group.kind == "numeric" and not group.is_block:
        numbers = values.dropna().to_numpy(dtype=float)
        if len(numbers) == 0:
            raise IntakeError(f"{group.name} has no values to draw its partial dependence over.")
        unique = np.unique(numbers)
        if len(unique) <= grid:
            return "numeric", unique
        return "numeric", np.unique(np.quantile(numbers, np.linspace(*PERCENTILES, grid), method="inverted_cdf"))
    counts = values.value_counts(dropna=False)
    levels = list(counts.index[:MAX_LEVELS])
    if group.is_block:
        order = [*group.columns, NO_COLUMN]
    else:  # the data card's order of the values (education from Preschool to Doctorate), where it gives one
        card = next((c for c in setup.dataset.card.get("columns", []) if c.get("name") == group.name), {})
        order = [level for value in card.get("values", []) for level in levels if str(level) == str(value)]
    ordered = [v for v in order if v in levels] + [v for v in levels if v not in order]
    return "categorical", np.array(ordered, dtype=object)


def moved_rows(frame: pd.DataFrame, changes: Sequence[tuple[FeatureGroup, np.ndarray]]) -> pd.DataFrame:
    """K copies of ``frame`` (K = the length of each change's values), copy k with each group set to its k-th value:
    (K × rows) rows, copy by copy, the columns keeping their dtypes."""
    n, copies = len(frame), len(changes[0][1])
    moved = frame.iloc[np.tile(np.arange(n), copies)].reset_index(drop=True)
    for group, values in changes:
        repeated = np.repeat(np.asarray(values, dtype=object), n)
        if group.is_block:
            for column in group.columns:
                moved[column] = (repeated == column).astype(moved[column].dtype)
        else:
            column = group.columns[0]
            moved[column] = pd.Series(repeated, index=moved.index, dtype=object).astype(moved[column].dtype)
    return moved


def moved_frames(frame: pd.DataFrame, changes: Sequence[Sequence[tuple[FeatureGroup, np.ndarray]]]) -> pd.DataFrame:
    """:func:`moved_rows` of each change list in ``changes``, one after another (the rows of
    ``pd.concat([moved_rows(frame, c) for c in changes])``), built column by column as arrays: one frame, not one per
    change list (the H-statistic's thousands of pairs on wide data)."""
    n = len(frame)
    copies = [len(change[0][1]) for change in changes]
    starts = np.concatenate([[0], np.cumsum(copies)]) * n
    columns = {c: np.tile(frame[c].to_numpy(dtype=object), int(sum(copies))) for c in frame.columns}
    for change, start, stop in zip(changes, starts[:-1], starts[1:]):
        for group, values in change:
            repeated = np.repeat(np.asarray(values, dtype=object), n)
            if group.is_block:
                for column in group.columns:
                    columns[column][start:stop] = repeated == column
            else:
                columns[group.columns[0]][start:stop] = repeated
    moved = pd.DataFrame(columns)
    return moved.astype({c: frame[c].dtype for c in frame.columns}) if len(moved) else frame.iloc[:0].copy()


def grid_scores(setup: Setup, frame: pd.DataFrame, changes: Sequence[tuple[FeatureGroup, np.ndarray]]) -> np.ndarray:
    """(K, rows) scores of :func:`moved_rows`: one adapter call."""
    return setup.model.score(moved_rows(frame, changes)).reshape(len(changes[0][1]), len(frame))


def partial_dependence(setup: Setup, groups: Sequence[str], *, query: pd.DataFrame | None = None,
                       row: int | None = None, rows: int = PDP_ROWS, ice_rows: int = ICE_ROWS, grid: int = 20,
                       seed: int = 0) -> PartialDependence:
    """PDP and ICE of one feature group (``groups = [name]``), or the 2-D PDP of a pair, over a seeded sample of
    ``rows`` test rows (ICE lines kept for the first ``ice_rows`` of them), with the chosen row's own line: the row
    ``query`` (a one-row frame, e.g. edited), else dataset row ``row``. A pair's grid has ``grid // 2`` values per
    numeric feature. All scores in one adapter call.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    groups : sequence of str
        One feature group, or two.
    query : pandas.DataFrame, optional
        The chosen row's values.
    row : int, optional
        The chosen row's position.
    rows, ice_rows, grid : int
        Sampled rows, rows with ICE lines, and grid values.
    seed : int
        The sample's seed.

    Returns
    -------
    PartialDependence
        The averages, the ICE lines and the row's line.

    Raises
    ------
    IntakeError
        When ``groups`` is not one group or a pair of different groups, or names an unknown one.
    """
    if not 1 <= len(groups) <= 2 or len(set(groups)) != len(groups):
        raise IntakeError("Partial dependence is drawn for one feature or for a pair of different features.")
    data = setup.dataset
    chosen = [data.group(name) for name in groups]
    if query is None:
        row = int(setup.test_rows[0]) if row is None else int(row)
        query = setup.query(row)
    sample = sampled_test_rows(setup, rows, seed)
    frame = pd.concat([data.features.iloc[sample], query[data.columns]], ignore_index=True)
    size = grid if len(chosen) == 1 else max(2, grid // 2)
    kinds, grids = zip(*(feature_grid(setup, g, size) for g in chosen))
    cells = np.meshgrid(*[np.arange(len(g)) for g in grids], indexing="ij")
    changes = [(g, values[cell.ravel()]) for g, values, cell in zip(chosen, grids, cells)]
    scores = grid_scores(setup, frame, changes)  # (cells, sample + the row)
    shape = tuple(len(g) for g in grids)
    own = float(setup.model.score(query[data.columns])[0])
    kept = sample[:ice_rows] if len(chosen) == 1 else sample[:0]
    ice = scores[:, :len(kept)].T if len(chosen) == 1 else np.empty((0,))
    return PartialDependence(tuple(groups), tuple(kinds), tuple(grids),
                             scores[:, :-1].mean(axis=1).reshape(shape), sample, kept, ice, row,
                             tuple(g.values_in(query)[0] for g in chosen), own, scores[:, -1].reshape(shape),
                             setup.score_label, seed)
