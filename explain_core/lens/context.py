"""LENS measures on a scored context sample: PS/PN (Defs 2-3, Remark 1), τ-minimal factors (Def. 4, Alg. 1) and
cumulative PN against τ (App. B). The results they return are :mod:`explain_core.lens.factors`; best-subset vs top-k
attribution PS (§5.1, Fig. 2) is :mod:`explain_core.lens.attribution`."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..errors import IntakeError, check_choice
from ..results import ValueEquality
from .factors import Factor, LensResult, Measures
from .stats import CORRECTIONS, passes

DIRECTIONS = ("r2i", "i2r")
"""The LENS contexts: reference-to-input (``r2i``) and input-to-reference (``i2r``)."""
ORDERS = ("subset", "cost")
"""Which factors a sufficient one makes non-minimal: its supersets (``subset``), or those no cheaper (``cost``)."""
COST_BLOCK = 4_000_000  # bytes of intervention costs computed at once


@dataclass(frozen=True, eq=False)
class LensContext(ValueEquality):
    """The sampled context D̂ of one direction: one sample per (reference r, factor j) (§3, §5).

    ``labels[r, j]``: the model's label of the intervened row (R2I: reference r with factor j's groups
    at the input's values; I2R: the input with them at reference r's values). ``distances[r, g]``: the
    cost of moving group g between the input and reference r (§5.3); an intervention's cost is the sum over
    its groups (:attr:`costs`). ``outcome``: the class whose sufficiency is measured — the input's class for
    R2I, the opposite class for I2R. ``masks`` (m, p) lists the factors by size. ``family``: how many
    factors the search space holds (Holm's family in the sample mode; default m — a layered search that
    stopped early scored fewer than its space).

    Parameters
    ----------
    direction : str
        ``"r2i"`` or ``"i2r"``.
    groups : tuple of str
        The feature groups.
    masks : numpy.ndarray
        (m, p) boolean: the factors.
    input_class, outcome : int
        The input's predicted class, and the class measured.
    labels : numpy.ndarray
        (references, m) labels of the intervened rows.
    distances : numpy.ndarray
        (references, p) cost of moving each group.
    reference_ids : numpy.ndarray
        The references' row labels.
    family : int, optional
        The factors in the search space.
    """

    direction: str
    groups: tuple[str, ...]
    masks: np.ndarray
    input_class: int
    outcome: int
    labels: np.ndarray
    distances: np.ndarray
    reference_ids: np.ndarray
    family: int | None = None

    @property
    def samples(self) -> int:
        """n(c): references per factor (every factor is applied to every reference)."""
        return len(self.labels)

    @cached_property
    def hits(self) -> np.ndarray:
        """n(c & y) per factor (Alg. 1 line 5)."""
        return (self.labels == self.outcome).sum(axis=0)

    @property
    def ps(self) -> np.ndarray:
        """PS(c, y) of every factor (Def. 2; Alg. 1 probSuff)."""
        return self.hits / self.samples

    @cached_property
    def sizes(self) -> np.ndarray:
        return self.masks.sum(axis=1)

    @property
    def costs(self) -> np.ndarray:
        """(n, m): the cost of every intervention (§5.3)."""
        return self.distances @ self.masks.T.astype(float)

    @cached_property
    def cheapest(self) -> tuple[np.ndarray, np.ndarray]:
        """Per factor: cost of the cheapest intervention reaching the outcome (inf if none), and its reference row."""
        return self.cheapest_of(np.arange(len(self.masks)))

    def cheapest_of(self, factors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:attr:`cheapest` of the factors at positions ``factors`` only (computed in blocks of factors).

        Parameters
        ----------
        factors : numpy.ndarray
            Factor positions.

        Returns
        -------
        tuple of numpy.ndarray
            Each factor's cheapest cost, and the reference that gives it.
        """
        cost, best = np.empty(len(factors)), np.empty(len(factors), dtype=np.intp)
        step = max(1, COST_BLOCK // (8 * max(1, self.samples)))
        for s in range(0, len(factors), step):
            at = factors[s:s + step]
            block = self.distances @ self.masks[at].T.astype(float)
            block[self.labels[:, at] != self.outcome] = np.inf
            best[s:s + step] = block.argmin(axis=0)
            cost[s:s + step] = block[best[s:s + step], np.arange(block.shape[1])]
        return cost, best

    def factor(self, j: int) -> tuple[str, ...]:
        """The groups of the factor at position ``j``.

        Parameters
        ----------
        j : int
            A factor's position.

        Returns
        -------
        tuple of str
            Its groups, in layout order.
        """
        return tuple(self.groups[g] for g in np.flatnonzero(self.masks[j]))

    @cached_property
    def _index(self) -> dict[frozenset, int]:
        return {frozenset(np.flatnonzero(m).tolist()): j for j, m in enumerate(self.masks)}

    def index(self, groups: Iterable[str]) -> int:
        """Position of the factor made of ``groups`` (any order).

        Parameters
        ----------
        groups : iterable of str
            The factor's groups.

        Returns
        -------
        int
            Its position.

        Raises
        ------
        IntakeError
            When a group is unknown, or the factor is larger than this context's largest.
        """
        groups = list(groups)
        unknown = [g for g in groups if g not in self.groups]
        if unknown:
            raise IntakeError(f"Unknown feature groups {', '.join(map(str, unknown))}; "
                              f"choose from {', '.join(self.groups)}.")
        key = frozenset(self.groups.index(g) for g in groups)
        if key not in self._index:
            raise IntakeError(f"No factor {{{', '.join(groups)}}} in this context: factors have at most "
                              f"{int(self.sizes.max())} groups; rebuild the context with a larger max_size.")
        return self._index[key]

    def measures(self, factors: Iterable[Iterable[str]], *, upward_closure: bool = False,
                 order: str = "subset") -> Measures:
        """PS(C, y), PN(C, y) and Remark 1's PS(1−C, 1−y), PN(1−C, 1−y) of the factor set C (Defs 2-3).

        A single factor c is ``[groups]``. ``upward_closure`` expands C to every factor above one of
        its members in ``order`` (Alg. 1 probNec).

        Parameters
        ----------
        factors : iterable of iterable of str
            The factor set C.
        upward_closure : bool
            Expand C upward.
        order : str
            ``"subset"`` or ``"cost"``.

        Returns
        -------
        Measures
            The four measures and their confusion matrix.

        Raises
        ------
        IntakeError
            When a factor is not in the context, or ``order`` is unknown.
        """
        _check_order(order)
        chosen = np.zeros(len(self.masks), dtype=bool)
        chosen[[self.index(f) for f in factors]] = True
        if upward_closure:
            chosen = self._sweep(self._order_cost(order), lambda layer, dominated: chosen[layer])[1]
        tp = int(self.hits[chosen].sum())
        fp = int(chosen.sum()) * self.samples - tp
        fn = int(self.hits[~chosen].sum())
        tn = int((~chosen).sum()) * self.samples - fn
        return Measures(_ratio(tp, tp + fp), _ratio(tp, tp + fn), _ratio(tn, tn + fn), _ratio(tn, tn + fp),
                        tp, fp, fn, tn)

    def minimal_factors(self, tau: float = 0.9, *, alpha: float | None = None, order: str = "subset",
                        correction: str = "holm", family: int | None = None) -> LensResult:
        """τ-minimal sufficient factors (Def. 4) by Alg. 1 minimalSuffFactors, with their cumulative PN.

        Exact mode (``alpha=None``): PS(c, y) ≥ τ. Sample mode: the one-sided binomial test of
        H0: PS < τ rejects at level ``alpha`` (:mod:`.stats`), with Holm's correction over ``family``
        factors (default: the factors of this context) or none. Factors above an accepted one in ``order``
        are skipped: ``subset`` (⊆), or ``cost`` (⊆ and no cheaper, §5; cost as in :class:`Factor`).

        Parameters
        ----------
        tau : float
            The sufficiency threshold.
        alpha : float, optional
            The test's level (None: exact mode).
        order : str
            ``"subset"`` or ``"cost"``.
        correction : str
            ``"holm"`` or ``"none"``.
        family : int, optional
            Holm's family size.

        Returns
        -------
        LensResult
            The factors and their cumulative PN.

        Raises
        ------
        IntakeError
            When ``tau``, ``alpha``, ``order`` or ``correction`` is not valid.
        """
        _check_threshold(tau, alpha)
        _check_order(order)
        check_choice(correction, CORRECTIONS, "multiple-testing correction")
        family = family or self.family or len(self.masks)
        sufficient, p_values = self._passes(tau, alpha, correction, family)
        rank = self._order_cost(order)
        picked, closure = self._sweep(rank, lambda layer, dominated: sufficient[layer] & ~dominated)
        accepted = np.flatnonzero(picked)
        cost, best = self.cheapest_of(accepted)
        ids = self.reference_ids.tolist()
        factors = tuple(Factor(self.factor(j), float(self.ps[j]), int(self.hits[j]), self.samples,
                               None if p_values is None else float(p_values[j]), float(c), ids[b] if np.isfinite(c)
                               else None) for j, c, b in zip(accepted, cost, best))
        return LensResult(self.direction, self.outcome, float(tau), alpha, order, factors,
                          _ratio(int(self.hits[closure].sum()), int(self.hits.sum())), self.samples, correction,
                          int(family))

    def pn_curve(self, taus: Sequence[float] | None = None, *, alpha: float | None = None,
                 order: str = "subset", correction: str = "holm", family: int | None = None) -> pd.DataFrame:
        """Cumulative PN of the τ-minimal factors as τ sweeps ``taus`` (App. B, Fig. 6); default 0.05…1.

        Parameters
        ----------
        taus : sequence of float, optional
            The thresholds.
        alpha, order, correction, family
            As in :meth:`minimal_factors`.

        Returns
        -------
        pandas.DataFrame
            ``tau``, ``cumulative_pn`` and the factors' count per threshold.

        Raises
        ------
        IntakeError
            As :meth:`minimal_factors`.
        """
        taus = np.round(np.arange(0.05, 1.0001, 0.05), 2) if taus is None else np.asarray(taus, dtype=float)
        results = [self.minimal_factors(t, alpha=alpha, order=order, correction=correction, family=family)
                   for t in taus]
        return pd.DataFrame({"tau": taus, "cumulative_pn": [r.cumulative_pn for r in results],
                             "factors": [len(r.factors) for r in results]})

    def sufficient(self, tau: float, alpha: float | None = None, correction: str = "holm") -> np.ndarray:
        """Which factors pass the rule (PS ≥ τ, or the test at α), before minimality.

        Parameters
        ----------
        tau : float
            The sufficiency threshold.
        alpha : float, optional
            The test's level.
        correction : str
            ``"holm"`` or ``"none"``.

        Returns
        -------
        numpy.ndarray
            One boolean per factor.
        """
        return self._passes(tau, alpha, correction, self.family or len(self.masks))[0]

    def _passes(self, tau: float, alpha: float | None, correction: str,
                family: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Which factors count as sufficient (Alg. 1 lines 22-30), and the p-values in sample mode."""
        if alpha is None:
            return self.ps >= tau, None
        return passes(self.hits, self.samples, tau, alpha, correction, family)

    @cached_property
    def _subsets(self) -> np.ndarray:
        """(m, largest size): the positions of each factor's subsets with one group fewer (−1: none, or absent)."""
        packed = np.packbits(self.masks, axis=1)
        keys = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
        order = np.argsort(keys, kind="stable")
        out = np.full((len(self.masks), max(1, int(self.sizes.max(initial=0)))), -1, dtype=np.intp)
        for k in np.unique(self.sizes[self.sizes > 0]):
            rows = np.flatnonzero(self.sizes == k)
            members = np.nonzero(self.masks[rows])[1].reshape(len(rows), k)
            for t in range(k):
                sub = self.masks[rows].copy()
                sub[np.arange(len(rows)), members[:, t]] = False
                packed = np.ascontiguousarray(np.packbits(sub, axis=1))
                wanted = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
                at = np.minimum(np.searchsorted(keys[order], wanted), len(keys) - 1)
                out[rows, t] = np.where(keys[order][at] == wanted, order[at], -1)
        return out

    def _order_cost(self, order: str) -> np.ndarray:
        """What the partial order compares besides ⊆: the cheapest cost (``cost``), or nothing (0, ``subset``)."""
        return self.cheapest[0] if order == "cost" else np.zeros(len(self.masks))

    def _sweep(self, cost: np.ndarray, pick) -> tuple[np.ndarray, np.ndarray]:
        """Alg. 1's walk up the partial order, layer by layer (the masks must hold every subset of each factor).

        ``dominated[j]``: a picked factor a ⊊ j has cost[a] ≤ cost[j] — read off the subsets with one group fewer,
        which carry the least cost of a picked factor inside them; ``pick(layer, dominated)`` says which factors of
        the layer are picked. Returns the picked factors and the upward closure of the picked set (Alg. 1 line 10).
        """
        picked = np.zeros(len(self.masks), dtype=bool)
        inside = np.zeros(len(self.masks), dtype=bool)  # some picked factor ⊆ j …
        least = np.full(len(self.masks), np.inf)  # … and the least cost of one
        closure = np.zeros(len(self.masks), dtype=bool)
        subsets = self._subsets
        for size in np.unique(self.sizes):
            layer = np.flatnonzero(self.sizes == size)
            below = subsets[layer, :size] if size else np.full((len(layer), 0), -1)
            has = (below >= 0) & inside[np.maximum(below, 0)]
            strict = np.where(has, least[np.maximum(below, 0)], np.inf).min(axis=1, initial=np.inf)
            dominated = has.any(axis=1) & (strict <= cost[layer])
            picked[layer] = pick(layer, dominated)
            inside[layer] = has.any(axis=1) | picked[layer]
            least[layer] = np.where(picked[layer], np.minimum(strict, cost[layer]), strict)
            closure[layer] = dominated | picked[layer]
        return picked, closure


def _ratio(a: int, b: int) -> float:
    return a / b if b else float("nan")


def _check_threshold(tau: float, alpha: float | None) -> None:
    if not 0 <= tau <= 1:
        raise IntakeError(f"τ is a probability threshold in [0, 1], not {tau}.")
    if alpha is not None and not 0 < alpha < 1:
        raise IntakeError(f"The test level α must be in (0, 1), not {alpha}.")


def _check_order(order: str) -> None:
    check_choice(order, ORDERS, "partial order")
