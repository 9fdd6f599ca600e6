"""LENS: local explanations via necessity and sufficiency (LENS paper, Defs 2-4, Remark 1, Alg. 1).

A *factor* is a set of feature groups (the intervention targets of §5). A *context* (§3, §5) is a
sample of references: in R2I each reference gets the factor's groups set to the input's values, in
I2R the input gets them set to the reference's values. Every (reference × factor) row is one sample
z of the context D̂ (Alg. 1 line 3), so PS(c, y) (Def. 2) is the share of references for which the
intervention on c yields y, and PN(C, y) (Def. 3) the share of all samples reaching y that are
interventions on a factor of C. R2I measures sufficiency for the input's class, I2R for the
opposite class. All rows are built as arrays, each distinct row is scored once, in chunked calls.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import comb
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy.stats import binomtest, median_abs_deviation

from .data import Dataset, GroupLayout
from .errors import IntakeError, check_choice, names_method
from .cube import DEFAULT_CHUNK_ROWS, ProgressFn, layer_masks, one_row
from .limits import limits, over
from .models import ModelAdapter
from .results import Explanation

DIRECTIONS = ("r2i", "i2r")
ORDERS = ("subset", "cost")
DEFAULT_REFERENCES = 100
ALL_SUBSETS_UP_TO = 12  # groups; wider data gets factors of at most DEFAULT_MAX_SIZE groups
DEFAULT_MAX_SIZE = 3
DOMINANCE_BLOCK = 4_000_000  # bytes compared at once when testing the partial order


def default_max_size(p: int) -> int:
    """All subsets for p ≤ 12 groups, otherwise factors of at most 3 groups."""
    return p if p <= ALL_SUBSETS_UP_TO else DEFAULT_MAX_SIZE


def factor_count(p: int, max_size: int) -> int:
    """How many factors (subsets of at most ``max_size`` of p groups, the empty one included) there are."""
    return sum(comb(p, k) for k in range(min(max_size, p) + 1))


def factor_masks(p: int, max_size: int) -> np.ndarray:
    """Every subset of p groups with at most ``max_size`` members, by size (a topological sort of ⊆)."""
    if max_size < 0:
        raise IntakeError(f"The maximum factor size must be 0 or more, not {max_size}.")
    empty = np.zeros((1, p), dtype=bool)
    return np.concatenate([empty, *(masks for k in range(1, min(max_size, p) + 1)
                                    for masks in layer_masks(p, range(p), k, False, 1 << 20))])


@names_method("LENS references")
def opposite_references(model: ModelAdapter, dataset: Dataset, query, rows: Sequence[int] | None = None, *,
                        n: int | None = DEFAULT_REFERENCES, seed: int = 0) -> pd.DataFrame:
    """``n`` rows (seeded; ``None`` = all) of ``rows`` that the model predicts opposite to the query (§5).

    ``rows`` are row positions of ``dataset`` (pass the training rows); default all rows.
    """
    pool = dataset.features if rows is None else dataset.features.iloc[np.asarray(rows)]
    pool = pool[model.label(pool) != model.label(one_row(query))[0]]
    if pool.empty:
        raise IntakeError("No rows are predicted opposite to the query, so there is no reference to contrast it "
                          "with; pass other rows, or use the SEV reference point (reference.as_frame(columns)).")
    if n is None or n >= len(pool):
        return pool
    return pool.iloc[np.sort(np.random.default_rng(seed).choice(len(pool), n, replace=False))]


def feature_mad(dataset: Dataset, rows: Sequence[int] | None = None) -> dict[str, float]:
    """Median absolute deviation of each numeric group over ``rows`` (§5.3 cost scale); 0 becomes 1."""
    frame = dataset.features if rows is None else dataset.features.iloc[np.asarray(rows)]
    out = {}
    for g in dataset.groups:
        if g.kind == "numeric" and len(g.columns) == 1:
            mad = float(median_abs_deviation(frame[g.columns[0]].astype(float), nan_policy="omit"))
            out[g.name] = mad if mad > 0 else 1.0
    return out


# ---------------------------------------------------------------------------------------------------
# Measures and results

@dataclass(frozen=True)
class Measures:
    """Def. 2-3 and Remark 1 for a factor set C, from the confusion matrix of "c(z) = 1" vs "f(z) = y".

    ``ps`` = PS(C, y), ``pn`` = PN(C, y); ``ps_not`` = PS(1−C, 1−y) (negative predictive value),
    ``pn_not`` = PN(1−C, 1−y) (true negative rate). NaN where a denominator is 0.
    """

    ps: float
    pn: float
    ps_not: float
    pn_not: float
    tp: int
    fp: int
    fn: int
    tn: int


@dataclass(frozen=True)
class Factor:
    """One τ-minimal factor (Def. 4): its groups, PS(c, y) = hits / samples, and the test's p-value.

    ``cost`` is the cheapest intervention on these groups that reaches the outcome (§5.3: L1 distance
    scaled by MAD, 1 per changed categorical group), from reference ``reference``; inf / None if none does.
    """

    groups: tuple[str, ...]
    ps: float
    hits: int
    samples: int
    p_value: float | None
    cost: float
    reference: object


@dataclass(frozen=True)
class LensResult(Explanation):
    """Alg. 1's output: τ-minimal factors and the cumulative PN of their upward closure."""

    direction: str
    outcome: int
    tau: float
    alpha: float | None
    order: str
    factors: tuple[Factor, ...]
    cumulative_pn: float

    method = "LENS"
    meta_parameters = ("direction", "tau", "alpha", "order")

    def table(self) -> pd.DataFrame:
        """One row per factor: groups, size, PS, counts, p-value, cost and cheapest reference."""
        return pd.DataFrame({
            "factor": [", ".join(f.groups) or "∅" for f in self.factors],
            "size": [len(f.groups) for f in self.factors],
            "PS": [f.ps for f in self.factors],
            "hits": [f.hits for f in self.factors],
            "samples": [f.samples for f in self.factors],
            "p_value": [f.p_value for f in self.factors],
            "cost": [f.cost for f in self.factors],
            "reference": [f.reference for f in self.factors],
        })


@dataclass(frozen=True)
class LensContext:
    """The sampled context D̂ of one direction: one sample per (reference r, factor j) (§3, §5).

    ``labels[r, j]``: the model's label of the intervened row (R2I: reference r with factor j's groups
    at the input's values; I2R: the input with them at reference r's values). ``costs[r, j]``: that
    intervention's cost (§5.3). ``outcome``: the class whose sufficiency is measured — the input's
    class for R2I, the opposite class for I2R. ``masks`` (m, p) lists the factors by size.
    """

    direction: str
    groups: tuple[str, ...]
    masks: np.ndarray
    input_class: int
    outcome: int
    labels: np.ndarray
    costs: np.ndarray
    reference_ids: np.ndarray

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

    @cached_property
    def cheapest(self) -> tuple[np.ndarray, np.ndarray]:
        """Per factor: cost of the cheapest intervention reaching the outcome (inf if none), and its reference row."""
        costs = np.where(self.labels == self.outcome, self.costs, np.inf)
        best = costs.argmin(axis=0)
        return costs[best, np.arange(costs.shape[1])], best

    def factor(self, j: int) -> tuple[str, ...]:
        return tuple(self.groups[g] for g in np.flatnonzero(self.masks[j]))

    @cached_property
    def _index(self) -> dict[frozenset, int]:
        return {frozenset(np.flatnonzero(m).tolist()): j for j, m in enumerate(self.masks)}

    def index(self, groups: Iterable[str]) -> int:
        """Position of the factor made of ``groups`` (any order)."""
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
        """
        _check_order(order)
        chosen = np.zeros(len(self.masks), dtype=bool)
        chosen[[self.index(f) for f in factors]] = True
        if upward_closure:
            chosen = self._above(np.flatnonzero(chosen), order)
        tp = int(self.hits[chosen].sum())
        fp = int(chosen.sum()) * self.samples - tp
        fn = int(self.hits[~chosen].sum())
        tn = int((~chosen).sum()) * self.samples - fn
        return Measures(_ratio(tp, tp + fp), _ratio(tp, tp + fn), _ratio(tn, tn + fn), _ratio(tn, tn + fp),
                        tp, fp, fn, tn)

    def minimal_factors(self, tau: float = 0.9, *, alpha: float | None = None, order: str = "subset") -> LensResult:
        """τ-minimal sufficient factors (Def. 4) by Alg. 1 minimalSuffFactors, with their cumulative PN.

        Exact mode (``alpha=None``): PS(c, y) ≥ τ. Sample mode: the one-sided binomial test of
        H0: PS < τ rejects at level ``alpha``. Factors above an accepted one in ``order`` are
        skipped: ``subset`` (⊆), or ``cost`` (⊆ and no cheaper, §5; cost as in :class:`Factor`).
        """
        _check_threshold(tau, alpha)
        _check_order(order)
        passes, p_values = self._passes(tau, alpha)
        accepted = np.empty(0, dtype=np.intp)
        for size in np.unique(self.sizes):  # one layer at a time: a layer holds no factor below another
            layer = np.flatnonzero((self.sizes == size) & passes)
            accepted = np.concatenate([accepted, layer[~self._below(accepted, layer, order)]])
        cost, best = self.cheapest
        ids = self.reference_ids.tolist()
        factors = tuple(Factor(self.factor(j), float(self.ps[j]), int(self.hits[j]), self.samples,
                               None if p_values is None else float(p_values[j]), float(cost[j]),
                               ids[best[j]] if np.isfinite(cost[j]) else None)
                        for j in accepted)
        closure = self._above(accepted, order)
        return LensResult(self.direction, self.outcome, float(tau), alpha, order, factors,
                          _ratio(int(self.hits[closure].sum()), int(self.hits.sum())))

    def pn_curve(self, taus: Sequence[float] | None = None, *, alpha: float | None = None,
                 order: str = "subset") -> pd.DataFrame:
        """Cumulative PN of the τ-minimal factors as τ sweeps ``taus`` (App. B, Fig. 6); default 0.05…1."""
        taus = np.round(np.arange(0.05, 1.0001, 0.05), 2) if taus is None else np.asarray(taus, dtype=float)
        results = [self.minimal_factors(t, alpha=alpha, order=order) for t in taus]
        return pd.DataFrame({"tau": taus, "cumulative_pn": [r.cumulative_pn for r in results],
                             "factors": [len(r.factors) for r in results]})

    def _passes(self, tau: float, alpha: float | None) -> tuple[np.ndarray, np.ndarray | None]:
        """Which factors count as sufficient (Alg. 1 lines 22-30), and the p-values in sample mode."""
        if alpha is None:
            return self.ps >= tau, None
        counts = np.unique(self.hits)  # one test per distinct count: every factor has the same n(c)
        table = np.ones(self.samples + 1)
        table[counts] = [binomtest(int(k), self.samples, tau, alternative="greater").pvalue for k in counts]
        p_values = table[self.hits]
        return p_values <= alpha, p_values

    def _below(self, lower: np.ndarray, upper: np.ndarray, order: str) -> np.ndarray:
        """For each factor in ``upper``: does some factor in ``lower`` precede or equal it in ``order``?"""
        out = np.zeros(len(upper), dtype=bool)
        if len(lower) == 0 or len(upper) == 0:
            return out
        lo, up = np.packbits(self.masks[lower], axis=1), np.packbits(self.masks[upper], axis=1)
        cost = self.cheapest[0]
        step = max(1, DOMINANCE_BLOCK // lo.size)
        for s in range(0, len(up), step):
            block = ~(lo[:, None, :] & ~up[None, s:s + step, :]).any(axis=2)  # lower ⊆ upper
            if order == "cost":
                block &= cost[lower][:, None] <= cost[upper[s:s + step]][None, :]
            out[s:s + step] = block.any(axis=0)
        return out

    def _above(self, chosen: np.ndarray, order: str) -> np.ndarray:
        """Boolean mask of the upward closure of ``chosen`` in ``order`` (Alg. 1 line 10)."""
        return self._below(chosen, np.arange(len(self.masks)), order)


def _ratio(a: int, b: int) -> float:
    return a / b if b else float("nan")


def _check_threshold(tau: float, alpha: float | None) -> None:
    if not 0 <= tau <= 1:
        raise IntakeError(f"τ is a probability threshold in [0, 1], not {tau}.")
    if alpha is not None and not 0 < alpha < 1:
        raise IntakeError(f"The test level α must be in (0, 1), not {alpha}.")


def _check_order(order: str) -> None:
    check_choice(order, ORDERS, "partial order")


# ---------------------------------------------------------------------------------------------------
# Building and scoring the context sample

@names_method("LENS")
def lens_contexts(model: ModelAdapter, dataset: Dataset, query, references: pd.DataFrame, *,
                  directions: Sequence[str] = DIRECTIONS, max_size: int | None = None,
                  mad: dict[str, float] | None = None, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                  progress: ProgressFn | None = None) -> dict[str, LensContext]:
    """Score every (reference × factor) sample of the R2I / I2R contexts of one query (§3, §5).

    ``references``: rows of the dataset's features (see :func:`opposite_references`, or
    ``reference.as_frame(dataset.columns)`` for the single SEV reference point). Factors: all sets of
    at most ``max_size`` groups (default :func:`default_max_size`). ``mad`` sets the cost scale of
    numeric groups (default, and for groups it leaves out: :func:`feature_mad` over all rows). Rows
    identical across references, factors and directions are scored once; at most ``chunk_rows`` rows
    go to one model call.
    """
    if not directions:
        raise IntakeError(f"Choose at least one LENS context among {', '.join(DIRECTIONS)}.")
    for d in directions:
        check_choice(d, DIRECTIONS, "LENS context")
    if len(references) == 0:
        raise IntakeError("No references given; a context needs at least one reference row.")
    layout = dataset.layout
    size = default_max_size(layout.size) if max_size is None else max_size
    check_budget(layout.size, size, len(references), len(directions))
    query = one_row(query)[list(layout.columns)]
    references = references[list(layout.columns)]
    masks = factor_masks(layout.size, size)
    keep = np.concatenate([masks if d == "r2i" else ~masks for d in directions])  # True = input's value
    differs = _differs(dataset, query, references)
    costs = _group_distances(dataset, query, references, differs, {**feature_mad(dataset), **(mad or {})}) \
        @ masks.T.astype(float)
    same_as = references.groupby(list(layout.columns), dropna=False, sort=False).ngroup().to_numpy()
    first = np.unique(same_as, return_index=True)[1]  # identical references are scored once
    labels = _labels(model, layout, query, references.iloc[first], keep, differs[first], chunk_rows, progress)[same_as]
    y = int(model.label(query)[0])
    m = len(masks)
    return {d: LensContext(d, layout.names, masks, y, y if d == "r2i" else 1 - y, labels[:, i * m:(i + 1) * m],
                           costs, references.index.to_numpy()) for i, d in enumerate(directions)}


def largest_factor_size(p: int, references: int, contexts: int = len(DIRECTIONS)) -> int:
    """The largest factor size whose samples (references × factors × contexts) fit the ``lens_samples`` limit."""
    cap = limits().lens_samples
    return max((s for s in range(p + 1) if references * contexts * factor_count(p, s) <= cap), default=0)


def check_budget(p: int, max_size: int, references: int, contexts: int) -> None:
    """Refuse contexts whose samples (references × factors × contexts) pass the ``lens_samples`` limit, before
    any factor is built."""
    samples = references * contexts * factor_count(p, max_size)
    cap = limits().lens_samples
    if samples > cap:
        raise over(f"LENS with factors of up to {max_size} of {p} features, {references} reference rows and "
                   f"{contexts} context(s): the number of samples", samples, cap, "lower the largest factor size "
                   f"(here at most {largest_factor_size(p, references, contexts)} fits) or the number of references.")


def _differs(dataset: Dataset, query: pd.DataFrame, references: pd.DataFrame) -> np.ndarray:
    """(n, p): does reference r differ from the input on group g (NaN equals NaN)?"""
    out = np.zeros((len(references), len(dataset.groups)), dtype=bool)
    for g, group in enumerate(dataset.groups):
        ref, q = references[list(group.columns)].to_numpy(), query[list(group.columns)].to_numpy()
        out[:, g] = ~((ref == q) | (pd.isna(ref) & pd.isna(q))).all(axis=1)
    return out


def _group_distances(dataset: Dataset, query: pd.DataFrame, references: pd.DataFrame, differs: np.ndarray,
                     mad: dict[str, float]) -> np.ndarray:
    """(n, p) cost of moving each group between the input and each reference (§5.3).

    Numeric: |difference| / MAD (1 where a value is missing); any other group: 1 if it differs.
    """
    bad = {k: v for k, v in mad.items() if not (np.isfinite(v) and v > 0)}
    if bad:
        raise IntakeError(f"Cost scales must be positive numbers; got {bad}.")
    out = differs.astype(float)
    for g, group in enumerate(dataset.groups):
        if group.name in mad and group.kind == "numeric" and len(group.columns) == 1:
            col = group.columns[0]
            step = np.abs(references[col].to_numpy(float) - float(query[col].iloc[0])) / mad[group.name]
            out[:, g] = np.where(differs[:, g], np.nan_to_num(step, nan=1.0), 0.0)
    return out


def _labels(model: ModelAdapter, layout: GroupLayout, query: pd.DataFrame, references: pd.DataFrame,
            keep: np.ndarray, differs: np.ndarray, chunk_rows: int, progress: ProgressFn | None) -> np.ndarray:
    """(n, k) model labels of reference r under vertex ``keep[j]``, each distinct row scored once.

    A row only depends on the groups that both keep the input's value and differ from the reference,
    so samples are grouped by (reference, keep & differs) and one representative of each is scored.
    """
    n, k = len(references), len(keep)
    values = {c: (query[c].to_numpy()[0], references[c].to_numpy()) for c in layout.columns}
    out = np.empty((n, k), dtype=np.int8)
    step = max(1, chunk_rows // k)
    for start in range(0, n, step):
        stop = min(n, start + step)
        first, inverse = _distinct(keep[None] & differs[start:stop, None, :])
        rows = _rows(layout, values, start + first // k, keep[first % k])
        scores = np.concatenate([model.score(rows.iloc[s:s + chunk_rows]) for s in range(0, len(rows), chunk_rows)])
        out[start:stop] = model.labels_of(scores)[inverse].reshape(stop - start, k)
        if progress:
            progress(stop / n, f"LENS: {stop} of {n} references scored ({len(rows):,} distinct rows in the last chunk)")
    return out


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For (b, k, p) boolean keys: flat index of one representative per distinct (reference, key), and each
    sample's representative number."""
    b, k, _ = keys.shape
    tag = np.broadcast_to(np.arange(b, dtype=">u4").view(np.uint8).reshape(b, 1, 4), (b, k, 4))
    packed = np.concatenate([tag, np.packbits(keys, axis=2)], axis=2).reshape(b * k, -1)
    flat = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def _rows(layout: GroupLayout, values: dict, ref_of_row: np.ndarray, keep: np.ndarray) -> pd.DataFrame:
    """Model inputs: the input's value where ``keep[i, g]``, else reference ``ref_of_row[i]``'s (cf. sev.mix).
    ``values`` maps each column to (the input's value, the references' values)."""
    return pd.DataFrame({column: np.where(keep[:, g], values[column][0], values[column][1][ref_of_row])
                         for column, g in zip(layout.columns, layout.column_group)})


# ---------------------------------------------------------------------------------------------------
# Curves

def shap_curve(context: LensContext, attribution) -> pd.DataFrame:
    """§5.1, Fig. 2 (I2R: Fig. 7): per size k, the best PS(c, y) of any factor of k groups beside the PS
    of the top-k groups by |attribution| (an :class:`~explain_core.baselines.Attribution`)."""
    if set(attribution.groups) != set(context.groups):
        raise IntakeError("The attribution's groups are not this context's feature groups.")
    rows = []
    for k in range(1, int(context.sizes.max()) + 1):
        layer = np.flatnonzero(context.sizes == k)
        best = layer[np.argmax(context.ps[layer])]
        top = tuple(attribution.order[:k])
        rows.append({"size": k, "lens_ps": float(context.ps[best]), "lens_factor": context.factor(best),
                     "attribution_ps": float(context.ps[context.index(top)]), "attribution_factor": top})
    return pd.DataFrame(rows)
