"""The layered LENS search for wide data: factors of 0, 1, 2, … groups until the first layer holding a
τ-sufficient factor (Def. 4), within a budget of model rows scored and a memory bound.

Every factor of a layer is applied to every reference. The row of (reference r, factor c) depends only on
c ∩ D_r, the groups of c on which r differs from the input (R2I: r with c at the input's values; I2R: the input
with c at r's values). When c ∩ D_r is smaller than c, that row is the row of the lower factor c ∩ D_r and its
label is read off the lower layer (never scored again); only the pairs with c ⊆ D_r are scored, in chunked
model calls. Identical references are scored once. With ``until="all"`` the search goes on to ``max_size``,
skipping every superset of a factor already accepted (it cannot be τ-minimal): the factors returned are then
Alg. 1's τ-minimal factors of at most ``max_size`` groups in subset order.

The budget counts work, not seconds: before a layer is scored, the rows it needs (the pairs c ⊆ D_r) are
counted, and the layer is scored only when they fit in what is left of ``budget_rows``. So the same inputs give
the same factors on any machine and under any load. When the budget ends before a factor is found, the answer
says so honestly: every factor of at most ``searched_size`` groups was decided and none is sufficient; ``best`` is
the highest PS found.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np
import pandas as pd

from ..errors import IntakeError, check_choice, names_method
from ..vertices import DEFAULT_CHUNK_ROWS, ProgressFn, layer_masks, one_row
from ..intake.data import Dataset
from ..intake.encoding import encoded_model
from ..intake.models import ModelAdapter
from ..limits import limits
from ..results import Explanation
from .context import DIRECTIONS, LensContext, _check_threshold
from .factors import LensResult
from .sampling import _differs, _group_distances, _rows, factor_count, feature_mad

UNTIL = ("first", "all")
MAX_GROUPS = 64  # factors are 64-bit masks
DEFAULT_BUDGET_ROWS = 2_000_000  # model rows; every wide demo row of bench/lens_speed.py needs fewer
DENSE_INDEX_GROUPS = 24  # up to 2^24 factors: a key → column table (64 MB at most); beyond, sorted keys
SEARCH_SAMPLES = 50_000_000  # labels kept (1 byte each) — the search's memory bound


@dataclass(frozen=True, eq=False)
class LensSearch(Explanation):
    """What the layered search found (one direction).

    ``context``: every factor scored, by size (all factors of at most ``searched_size`` groups, less pruned
    supersets with ``until="all"``); ``result``: its τ-minimal factors; ``stopped``: ``found`` (a layer held a
    sufficient factor), ``complete`` (``max_size`` reached), ``budget`` (the next layer needs ``next_rows`` model
    rows, more than what is left of ``budget_rows``) or ``memory`` (the next layer would pass the memory bound);
    ``best``/``best_ps``: the factor with the highest PS scored; ``candidates``: the factors of at most
    ``max_size`` groups, of which ``searched`` were decided (scored, or pruned as supersets of accepted ones).
    """

    context: LensContext
    result: LensResult
    searched_size: int
    max_size: int
    stopped: str
    best: tuple[str, ...]
    best_ps: float
    rows_scored: int
    budget_rows: int | None = None
    next_rows: int = 0
    candidates: int = 0

    method = "LENS (layered search)"
    meta_parameters = ("searched_size", "max_size", "stopped", "rows_scored", "budget_rows", "next_rows",
                       "candidates")

    @property
    def searched(self) -> int:
        """Factors decided: every factor of at most ``searched_size`` groups."""
        return factor_count(len(self.context.groups), self.searched_size) if self.searched_size >= 0 else 0

    @property
    def reach(self) -> str:
        """How far the search went, in words: "searched 1,351 of 1,048,576 candidate factors (up to 3 features)"."""
        size = self.searched_size
        return (f"searched {self.searched:,} of {self.candidates:,} candidate factors (every factor of up to {size} "
                f"feature{'s' if size != 1 else ''}, {self.rows_scored:,} model rows scored)")

    @property
    def message(self) -> str:
        """The outcome in words."""
        n = len(self.result.factors)
        if n:
            size = min(len(f.groups) for f in self.result.factors)
            return (f"{n} τ-minimal factor{'s' if n > 1 else ''} found; the smallest have {size} feature"
                    f"{'s' if size != 1 else ''} (every smaller factor was tested and is not sufficient). LENS "
                    f"{self.reach}.")
        why = {"budget": f"the next size needs {self.next_rows:,} more model rows, over what is left of the search "
                         f"budget of {self.budget_rows or 0:,} rows",
               "memory": "the next size would pass the memory bound",
               "complete": "that is the largest size searched", "found": "the search stopped"}[self.stopped]
        best = ", ".join(self.best) or "∅"
        return (f"No sufficient factor up to size {self.searched_size} ({why}). The best PS found is "
                f"{self.best_ps:.3f}, for {{{best}}}. LENS {self.reach}.")


@dataclass(frozen=True)
class FactorSearch:
    """How :func:`search_factors` searches (and :func:`plan_search` counts its work): the context, τ with the
    test and its correction, the largest factor, where the search stops, and its bounds of work and memory.

    Parameters
    ----------
    direction : str
        The context, ``"r2i"`` or ``"i2r"``.
    tau : float
        The sufficiency threshold τ.
    alpha : float, optional
        The binomial test's level (None: exact mode, PS ≥ τ), as in :meth:`LensContext.minimal_factors`.
    correction : str
        The multiple-testing correction, ``"holm"`` (its family: every factor of at most ``max_size`` groups,
        whether scored or not) or ``"none"``.
    max_size : int, optional
        The largest factor (None: all groups).
    until : str
        ``"first"``: stop at the first layer holding a τ-sufficient factor; ``"all"``: go on to ``max_size``,
        skipping the supersets of factors accepted.
    budget_rows : int, optional
        The model rows scored after size 0 (None: no limit): a layer is scored only when all the rows it needs fit
        in what is left, so the answer never depends on the machine's speed.
    max_samples : int, optional
        The labels kept (references × factors; None: the smaller of ``limits().lens_samples`` × 10 and 5·10⁷).
    """

    direction: str = "r2i"
    tau: float = 0.9
    alpha: float | None = None
    correction: str = "holm"
    max_size: int | None = None
    until: str = "first"
    budget_rows: int | None = DEFAULT_BUDGET_ROWS
    max_samples: int | None = None

    def samples_kept(self) -> int:
        """The labels a search keeps at most (references × factors).

        Returns
        -------
        int
            ``max_samples``, or by default the smaller of ``limits().lens_samples`` × 10 and 5·10⁷.
        """
        return self.max_samples or min(SEARCH_SAMPLES, 10 * limits().lens_samples)


DEFAULT_SEARCH = FactorSearch()
"""R2I, τ = 0.9 in exact mode, every size up to all groups until the first sufficient one, within
:data:`DEFAULT_BUDGET_ROWS` model rows."""


@names_method("LENS search")
def search_factors(model: ModelAdapter, dataset: Dataset, query, references: pd.DataFrame,
                   options: FactorSearch = DEFAULT_SEARCH, *, mad: dict[str, float] | None = None,
                   chunk_rows: int = DEFAULT_CHUNK_ROWS, progress: ProgressFn | None = None) -> LensSearch:
    """Search factors layer by layer (sizes 0 … ``options.max_size``, default all groups) for the τ-minimal ones,
    as ``options`` say (:class:`FactorSearch`: τ, α and the correction as in :meth:`LensContext.minimal_factors`;
    the budget of model rows, which keeps the answer independent of the machine's speed; the memory bound).

    Parameters
    ----------
    model : ModelAdapter
        The model explained.
    dataset : Dataset
        The data: its feature groups are the factors' elements.
    query
        The input row.
    references : pandas.DataFrame
        The reference rows.
    options : FactorSearch
        The context, τ, α with its correction, the largest factor, where to stop, the budget and memory bound.
    mad : dict of str to float, optional
        Cost scale of numeric groups (default, and for groups it leaves out: :func:`feature_mad` over all rows).
    chunk_rows : int
        Rows per model call.
    progress : callable, optional
        ``progress(fraction, message)``.

    Returns
    -------
    LensSearch
        The factors scored, the τ-minimal ones among them, and why and where the search stopped.

    Raises
    ------
    IntakeError
        When the direction, the stop or τ / α is invalid, no reference is given, or the data has more than
        :data:`MAX_GROUPS` feature groups.
    """
    direction, tau, alpha, correction = options.direction, options.tau, options.alpha, options.correction
    until, budget_rows = options.until, options.budget_rows
    layout = dataset.layout
    p = layout.size
    max_size = _checked_search(direction, until, tau, alpha, len(references), p, options.max_size)
    cap = options.samples_kept()
    query = one_row(query)[list(layout.columns)]
    references = references[list(layout.columns)]
    differs = _differs(dataset, query, references)
    distances = _group_distances(dataset, query, references, differs, {**feature_mad(dataset), **(mad or {})})
    same_as = references.groupby(list(layout.columns), dropna=False, sort=False).ngroup().to_numpy()
    first = np.unique(same_as, return_index=True)[1]
    y = int(model.label(query)[0])
    outcome = y if direction == "r2i" else 1 - y
    layers = _Layers(model, layout, query, references.iloc[first], differs[first], direction, y, chunk_rows)

    def context(masks, labels) -> LensContext:
        return LensContext(direction, layout.names, masks, y, outcome, labels[same_as], distances,
                           references.index.to_numpy(), factor_count(p, max_size))

    searched, stopped, accepted, next_rows = -1, "complete", np.zeros((0, p), dtype=bool), 0
    for size in range(max_size + 1):
        if size and layers.kept + len(first) * comb(p, size) > cap:
            stopped = "memory"
            break
        blocks, needed = layers.plan(size, accepted if until == "all" else None)
        if size and budget_rows is not None and layers.scored + needed > budget_rows:
            stopped, next_rows = "budget", needed
            break
        layers.add(size, blocks, budget_rows, progress, max_size)
        searched = size
        ctx = context(layers.masks, layers.labels)
        if not ctx.sufficient(tau, alpha, correction).any():
            continue
        if until == "first":
            stopped = "found"
            break
        found = ctx.minimal_factors(tau, alpha=alpha, correction=correction).factors
        accepted = np.array([np.isin(layout.names, f.groups) for f in found], dtype=bool).reshape(-1, p)
    ctx = context(layers.masks, layers.labels)
    result = ctx.minimal_factors(tau, alpha=alpha, correction=correction)
    best = int(np.argmax(ctx.ps)) if len(ctx.masks) else 0
    if progress:
        progress(1.0, f"LENS search: {stopped} after size {searched}")
    return LensSearch(ctx, result, searched, max_size, stopped,
                      ctx.factor(best) if len(ctx.masks) else (), float(ctx.ps[best]) if len(ctx.masks) else np.nan,
                      layers.scored, budget_rows, next_rows, factor_count(p, max_size))


@dataclass(frozen=True)
class SearchPlan:
    """The most work a layered search would do (no layer holding a sufficient factor), counted before any model
    call: ``rows`` model rows, factors of up to ``size`` groups, then ``stop`` (``budget``, ``memory`` or
    ``complete``, as :attr:`LensSearch.stopped`)."""

    rows: int
    size: int
    stop: str

    @property
    def stop_words(self) -> str:
        """Why it stops there, in words."""
        return {"budget": "the next size would pass the search budget", "memory": "the next size would pass the "
                "memory bound", "complete": "every size is searched"}[self.stop]


def plan_search(dataset: Dataset, query, references: pd.DataFrame,
                options: FactorSearch = DEFAULT_SEARCH) -> SearchPlan:
    """What :func:`search_factors` with these ``options`` scores at most, from the references alone: layer k needs
    C(|D_r|, k) rows per distinct reference r (the factors within the groups where r differs from the input), and
    the search stops before the layer that passes the budget or the memory bound (a page estimates a run's work
    from this before starting it). Of ``options`` it reads the direction, the largest factor, the budget and the
    memory bound."""
    direction, budget_rows, max_size = options.direction, options.budget_rows, options.max_size
    layout = dataset.layout
    p = layout.size
    max_size = p if max_size is None else min(int(max_size), p)
    cap = options.samples_kept()
    query, references = one_row(query)[list(layout.columns)], references[list(layout.columns)]
    same_as = references.groupby(list(layout.columns), dropna=False, sort=False).ngroup().to_numpy()
    first = np.unique(same_as, return_index=True)[1]
    differ = _differs(dataset, query, references.iloc[first]).sum(axis=1).tolist()
    rows, kept = 0, 0
    for size in range(max_size + 1):
        if size and kept + len(first) * comb(p, size) > cap:
            return SearchPlan(rows, size - 1, "memory")
        needed = 0 if direction == "i2r" and size == 0 else sum(comb(d, size) for d in differ)
        if size and budget_rows is not None and rows + needed > budget_rows:
            return SearchPlan(rows, size - 1, "budget")
        rows, kept = rows + needed, kept + len(first) * comb(p, size)
    return SearchPlan(rows, max_size, "complete")


def _checked_search(direction: str, until: str, tau: float, alpha: float | None, references: int, p: int,
                    max_size: int | None) -> int:
    """The largest factor size to search (at most ``p``), once the search's settings are checked."""
    check_choice(direction, DIRECTIONS, "LENS context")
    check_choice(until, UNTIL, "search stop")
    _check_threshold(tau, alpha)
    if references == 0:
        raise IntakeError("No references given; a context needs at least one reference row.")
    if p > MAX_GROUPS:
        raise IntakeError(f"The layered LENS search handles at most {MAX_GROUPS} feature groups, not {p}; group "
                          "related columns into features or restrict the factors' size.")
    return p if max_size is None else min(int(max_size), p)


class _Layers:
    """The scored factors so far (masks by size, labels per distinct reference) and the scoring of a new layer."""

    def __init__(self, model, layout, query, references, differs, direction, input_class, chunk_rows):
        self.model, self.layout, self.direction, self.input_class = model, layout, direction, input_class
        self.chunk_rows = max(1, chunk_rows)
        self.differ_keys = _keys(differs)  # D_r as a bit mask
        self.values = {c: (query[c].to_numpy()[0], references[c].to_numpy()) for c in layout.columns}
        self.encoded = encoded_model(model, layout.groups)  # column-wise preprocessing: mix encoded rows (cf. cube)
        if self.encoded is not None:
            source = layout.source.features if layout.source is not None else None
            self.query_x = self.encoded.encode_rows(query, source, list(model.columns))[0]
            self.references_x = self.encoded.encode_rows(references, source, list(model.columns))
        n = len(references)
        self.masks = np.zeros((0, layout.size), dtype=bool)
        self.labels = np.zeros((n, 0), dtype=np.int8)
        self.keys = np.zeros(0, dtype=np.uint64)  # sorted keys of the scored factors, and their columns
        self.columns = np.zeros(0, dtype=np.intp)
        self.table = np.full(1 << layout.size, -1, dtype=np.int32) if layout.size <= DENSE_INDEX_GROUPS else None
        self.scored = 0

    @property
    def kept(self) -> int:
        return self.labels.size

    def plan(self, size: int, accepted: np.ndarray | None) -> tuple[list[tuple[np.ndarray, np.ndarray]], int]:
        """Layer ``size``'s factors in blocks (masks, keys; supersets of ``accepted`` left out: not minimal) and the
        model rows scoring them needs: the pairs (reference r, factor c) with c ⊆ D_r (less, in I2R, the empty
        factor, which is the input itself)."""
        p, n = self.layout.size, len(self.differ_keys)
        step = max(1, 4 * self.chunk_rows // max(1, n))
        accepted_keys = None if accepted is None or not len(accepted) else _keys(accepted)
        layer_blocks = layer_masks(p, range(p), size, False, step) if size else [np.zeros((1, p), dtype=bool)]
        blocks, needed = [], 0
        for masks in layer_blocks:
            keys = _keys(masks)
            if accepted_keys is not None:
                fresh = ~((keys[:, None] & accepted_keys[None, :]) == accepted_keys[None, :]).any(axis=1)
                masks, keys = masks[fresh], keys[fresh]
            blocks.append((masks, keys))
            needed += int(((keys[None, :] & self.differ_keys[:, None]) == keys[None, :]).sum())
        if self.direction == "i2r" and size == 0:
            needed = 0
        return blocks, needed

    def add(self, size: int, blocks: list[tuple[np.ndarray, np.ndarray]], budget_rows: int | None,
            progress: ProgressFn | None, max_size: int) -> None:
        """Score layer ``size`` (the blocks of :meth:`plan`) and keep its labels."""
        p = self.layout.size
        masks_kept, labels, scored = [], [], 0
        for masks, keys in blocks:
            block, count = self._score(masks, keys)
            masks_kept.append(masks)
            labels.append(block)
            scored += count
            if progress:
                frac = (self.scored + scored) / budget_rows if budget_rows else (size + 0.5) / (max_size + 1)
                progress(min(1.0, frac), f"LENS search: factors of {size} feature{'s' if size != 1 else ''}, "
                                         f"{self.scored + scored:,} model rows scored")
        layer = np.concatenate(masks_kept) if masks_kept else np.zeros((0, p), dtype=bool)
        base = len(self.masks)
        self.masks = np.concatenate([self.masks, layer])
        self.labels = np.concatenate([self.labels, *labels], axis=1)
        if self.table is not None:
            self.table[_keys(layer)] = base + np.arange(len(layer))
        else:
            keys = np.concatenate([self.keys, _keys(layer)])
            columns = np.concatenate([self.columns, base + np.arange(len(layer))])
            order = np.argsort(keys, kind="stable")
            self.keys, self.columns = keys[order], columns[order]
        self.scored += scored

    def _score(self, masks: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, int]:
        """(n, f) labels of the factors ``masks``: pairs with c ⊆ D_r scored, the others read off lower layers."""
        effective = keys[None, :] & self.differ_keys[:, None]  # c ∩ D_r
        new = effective == keys[None, :]
        out = np.empty(effective.shape, dtype=np.int8)
        old = ~new
        if old.any():  # the lower factor c ∩ D_r was scored (it is no superset of an accepted factor, as c is not)
            out[old] = self.labels[np.nonzero(old)[0], self._column(effective[old])]
        if self.direction == "i2r":  # nothing moved: the row is the input itself
            empty = new & (effective == 0)
            out[empty] = self.input_class
            new &= ~empty
        r, j = np.nonzero(new)
        for s in range(0, len(r), self.chunk_rows):
            rs, js = r[s:s + self.chunk_rows], j[s:s + self.chunk_rows]
            keep = masks[js] if self.direction == "r2i" else ~masks[js]  # True: the input's value
            out[rs, js] = self.model.labels_of(self._scores(rs, keep))
        return out, len(r)

    def _column(self, keys: np.ndarray) -> np.ndarray:
        """The column of each scored factor key."""
        if self.table is not None:
            return self.table[keys]
        return self.columns[np.searchsorted(self.keys, keys)]

    def _scores(self, refs: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Scores of the rows mixing the input (where ``keep``) and reference ``refs[i]`` (elsewhere)."""
        if self.encoded is None:
            return self.model.score(_rows(self.layout, self.values, refs, keep))
        X = np.where(keep[:, self.encoded.column_group], self.query_x, self.references_x[refs])
        return self.model.scores_of(self.encoded.estimator, X)


def _keys(masks: np.ndarray) -> np.ndarray:
    """Each Boolean row (≤ 64 groups) as a 64-bit mask: bit g set when group g is in the factor."""
    packed = np.packbits(masks, axis=1, bitorder="little")
    out = np.zeros((len(masks), 8), dtype=np.uint8)
    out[:, :packed.shape[1]] = packed
    return out.view("<u8").ravel()
