"""SEV^F, SEV with a flexible reference ("Improving Decision Sparsity", notes §2).

A single reference can sit close to the decision boundary. SEV^F lets each numeric reference value move within a
window of the reference population: for group j with reference value r_j at quantile rank q_j of the population,
W_j(τ) = [Q_j(max(q_j − τ, 0)), Q_j(min(q_j + τ, 1))] (S1); binary and categorical values stay. The value is the
box minimum (S2): SEV^F(x) = min over r′ ∈ ∏ W_j of SEV⁻(x; r′). A vertex only uses the moved groups' reference
values, so the box minimum is the smallest set S for which *some* choice of values in ∏_{j∈S} W_j flips the
prediction; it is searched exactly over a grid of each window: r_j itself and ``k`` evenly spaced values across
W_j (as the released code's grid), each snapped to the nearest value a real case of the population has (the
window's ends are empirical quantiles taken as observed values, so the snapped grid stays inside the window).

Decisions against the released code (notes §2): the flexible values are tried at every size, size 1 included (D1);
each moved set takes its own best values instead of one adjusted reference built coordinate by coordinate (D2, and
O3: we compute the paper's definition S2, on the grid); the search compares the model's label, by its own threshold
(D4); the plain reference value is always a candidate, so SEV^F ≤ SEV¹ on every row, and τ = 0 is SEV¹ exactly (P1).
Of the flips of one moved set the closest is kept (smallest ℓ∞ in population SDs, then ℓ1) among those landing at
least as credibly as the plain reference's values for that set, when those flip too, and as the row's closest
plain flip of that size, when there is one: flexibility shortens and brings explanations closer without landing
them where fewer real cases lie. Where SEV^F equals SEV¹, its shown (closest) explanation is never farther nor less
credible than SEV¹'s.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import IntakeError
from ..intake.data import Dataset
from ..reference import Reference
from .search import Candidates

DEFAULT_TAU = 0.2
"""SEV^F's default window: ±0.2 in quantile rank around the reference's value."""
DEFAULT_K = 5
"""SEV^F's default number of values tried per window."""


@dataclass(frozen=True)
class FlexibleWindow:
    """One numeric group's window: the reference value, its quantile rank in the population, the window's ends
    and the values tried (the reference value first).

    Parameters
    ----------
    group : str
        The numeric group.
    reference : float
        The reference's value.
    rank : float
        Its quantile rank in the population.
    low, high : float
        The window's ends.
    values : tuple of float
        The grid of values tried, the reference's first.
    """

    group: str
    reference: float
    rank: float
    low: float
    high: float
    values: tuple[float, ...]


def check_flexible(tau: float, k: int) -> None:
    """Check SEV^F's settings.

    Parameters
    ----------
    tau : float
        The window's half-width in quantile rank, between 0 and 0.5.
    k : int
        Values tried per window, between 1 and 20.

    Raises
    ------
    IntakeError
        When either is out of its range.
    """
    if not 0 <= tau <= 0.5 or not 1 <= k <= 20:
        raise IntakeError(f"SEV^F needs τ between 0 and 0.5 and k between 1 and 20 (got τ = {tau}, k = {k}).")


def flexible_windows(dataset: Dataset, population: Sequence[int], reference: Reference, *,
                     tau: float = DEFAULT_TAU, k: int = DEFAULT_K) -> tuple[FlexibleWindow, ...]:
    """The window of every numeric group (S1) over the population rows, with its grid of values.

    Parameters
    ----------
    dataset : Dataset
        The data.
    population : sequence of int
        The reference population's rows.
    reference : Reference
        The plain reference.
    tau : float
        The window's half-width in quantile rank.
    k : int
        Evenly spaced values per window, each snapped to a value a real case has.

    Returns
    -------
    tuple of FlexibleWindow
        One window per numeric group.

    Raises
    ------
    IntakeError
        When ``tau`` or ``k`` is out of range.
    """
    check_flexible(tau, k)
    frame = dataset.features.iloc[np.asarray(population, dtype=int)]
    windows = []
    for g in dataset.groups:
        if g.kind != "numeric" or g.is_block:
            continue
        x = frame[g.columns[0]].to_numpy(dtype=float)
        x = np.sort(x[np.isfinite(x)])
        r = float(reference.values[g.columns[0]])
        if len(x) == 0 or not np.isfinite(r):
            windows.append(FlexibleWindow(g.name, r, float("nan"), r, r, (r,)))
            continue
        rank = float(np.mean(x < r))
        low, high = (float(np.quantile(x, max(rank - tau, 0.0), method="inverted_cdf")),
                     float(np.quantile(x, min(rank + tau, 1.0), method="inverted_cdf")))
        grid = _snap(np.linspace(low, high, k), x) if tau > 0 else []
        values = (r, *[v for v in dict.fromkeys(grid) if v != r])
        windows.append(FlexibleWindow(g.name, r, rank, low, high, tuple(float(v) for v in values)))
    return tuple(windows)


def _snap(values: np.ndarray, observed: np.ndarray) -> list[float]:
    """Each value replaced by the nearest value in ``observed`` (sorted): a value some real case has."""
    at = np.clip(np.searchsorted(observed, values), 1, len(observed) - 1) if len(observed) > 1 else None
    if at is None:
        return [float(observed[0])] * len(values)
    left, right = observed[at - 1], observed[at]
    return [float(lo if abs(v - lo) <= abs(hi - v) else hi) for v, lo, hi in zip(values, left, right)]


def flexible_candidates(dataset: Dataset, reference: Reference,
                        windows: Sequence[FlexibleWindow]) -> Candidates:
    """The search's candidates: a numeric group's window grid, every other group's reference value.

    Parameters
    ----------
    dataset : Dataset
        The data.
    reference : Reference
        The plain reference.
    windows : sequence of FlexibleWindow
        The numeric groups' windows.

    Returns
    -------
    Candidates
        The values each group may move to.
    """
    grid = {w.group: w.values for w in windows}
    values = []
    for g in dataset.groups:
        if g.name in grid:
            values.append(tuple({g.columns[0]: v} for v in grid[g.name]))
        else:
            values.append(({c: reference.values[c] for c in g.columns},))
    return Candidates(tuple(values))
