"""LENS context samples: references, factors and the model's labels of every (reference × factor) row.

A *factor* is a set of feature groups (the intervention targets of §5). A *context* (§3, §5) is a
sample of references: in R2I each reference gets the factor's groups set to the input's values, in
I2R the input gets them set to the reference's values. Every (reference × factor) row is one sample
z of the context D̂ (Alg. 1 line 3), so PS(c, y) (Def. 2) is the share of references for which the
intervention on c yields y, and PN(C, y) (Def. 3) the share of all samples reaching y that are
interventions on a factor of C. R2I measures sufficiency for the input's class, I2R for the
opposite class. All rows are built as arrays, each distinct row is scored once, in chunked calls.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import comb
from typing import Sequence

import numpy as np
import pandas as pd
from scipy.stats import median_abs_deviation

from ..errors import IntakeError, check_choice, names_method
from ..vertices import DEFAULT_CHUNK_ROWS, ProgressFn, layer_masks, one_row
from ..intake.data import Dataset
from ..intake.layout import GroupLayout
from ..intake.models import ModelAdapter
from ..limits import limits, over
from .context import DIRECTIONS, LensContext

DEFAULT_REFERENCES = 100
"""The default number of reference rows (:func:`opposite_references`'s ``n``)."""
ALL_SUBSETS_UP_TO = 12  # groups; wider data gets factors of at most DEFAULT_MAX_SIZE groups (or the layered search)
"""Up to this many feature groups, LENS's factors are every subset by default."""
DEFAULT_MAX_SIZE = 3
"""On wider data, the default largest factor (groups)."""


def default_max_size(p: int) -> int:
    """All subsets for p ≤ 12 groups, otherwise factors of at most 3 groups.

    Parameters
    ----------
    p : int
        Feature groups.

    Returns
    -------
    int
        The default largest factor size.
    """
    return p if p <= ALL_SUBSETS_UP_TO else DEFAULT_MAX_SIZE


def factor_count(p: int, max_size: int) -> int:
    """How many factors (subsets of at most ``max_size`` of p groups, the empty one included) there are.

    Parameters
    ----------
    p : int
        Feature groups.
    max_size : int
        The largest factor.

    Returns
    -------
    int
        The sum of C(p, k) for k up to ``max_size``.
    """
    return sum(comb(p, k) for k in range(min(max_size, p) + 1))


def factor_masks(p: int, max_size: int) -> np.ndarray:
    """Every subset of p groups with at most ``max_size`` members, by size (a topological sort of ⊆).

    Parameters
    ----------
    p, max_size : int
        As for :func:`factor_count`.

    Returns
    -------
    numpy.ndarray
        (:func:`factor_count`, p) boolean masks, the empty factor first.

    Raises
    ------
    IntakeError
        When ``max_size`` is negative.
    """
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

    Parameters
    ----------
    model, dataset, query
        As for :func:`~explain_core.sev.dispatch.explain_sev` (``query``: the input row).
    rows : sequence of int, optional
        Candidate row positions.
    n : int, optional
        How many references.
    seed : int
        The draw's seed.

    Returns
    -------
    pandas.DataFrame
        The references, in row order.

    Raises
    ------
    IntakeError
        When no row is predicted opposite to the query.
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
    """Median absolute deviation of each numeric group over ``rows`` (§5.3 cost scale); 0 becomes 1.

    Parameters
    ----------
    dataset : Dataset
        The data.
    rows : sequence of int, optional
        Row positions (default: all).

    Returns
    -------
    dict of str to float
        Numeric group → its MAD.
    """
    frame = dataset.features if rows is None else dataset.features.iloc[np.asarray(rows)]
    out = {}
    for g in dataset.groups:
        if g.kind == "numeric" and len(g.columns) == 1:
            mad = float(median_abs_deviation(frame[g.columns[0]].astype(float), nan_policy="omit"))
            out[g.name] = mad if mad > 0 else 1.0
    return out


@dataclass(frozen=True)
class ContextOptions:
    """Which LENS contexts :func:`lens_contexts` (and :func:`~explain_core.lens.causal.causal_contexts`) score and
    how: the directions, the largest factor (None: :func:`default_max_size`), the cost scale of numeric groups
    (default, and for groups it leaves out: :func:`feature_mad` over all rows), the rows per model call.

    Parameters
    ----------
    directions : sequence of str
        ``"r2i"`` and / or ``"i2r"``.
    max_size : int, optional
        The largest factor.
    mad : dict of str to float, optional
        Cost scale of numeric groups.
    chunk_rows : int
        Rows per model call.
    """

    directions: Sequence[str] = DIRECTIONS
    max_size: int | None = None
    mad: dict[str, float] | None = field(default=None, hash=False)
    chunk_rows: int = DEFAULT_CHUNK_ROWS


DEFAULT_CONTEXTS = ContextOptions()
"""Both directions, factors up to :func:`default_max_size`, the data's own cost scale."""


@names_method("LENS")
def lens_contexts(model: ModelAdapter, dataset: Dataset, query, references: pd.DataFrame,
                  options: ContextOptions = DEFAULT_CONTEXTS, *,
                  progress: ProgressFn | None = None) -> dict[str, LensContext]:
    """Score every (reference × factor) sample of the R2I / I2R contexts of one query (§3, §5).

    ``references``: rows of the dataset's features (see :func:`opposite_references`, or
    ``reference.as_frame(dataset.columns)`` for the single SEV reference point). Factors: all sets of
    at most ``options.max_size`` groups (default :func:`default_max_size`). ``options.mad`` sets the cost scale
    of numeric groups (default, and for groups it leaves out: :func:`feature_mad` over all rows). Rows
    identical across references, factors and directions are scored once; at most ``options.chunk_rows`` rows
    go to one model call.

    Parameters
    ----------
    model, dataset, query
        As for :func:`opposite_references`.
    references : pandas.DataFrame
        The reference rows.
    options : ContextOptions
        The directions, the largest factor, the cost scale of numeric groups, the rows per model call.
    progress : callable, optional
        ``progress(fraction, message)``.

    Returns
    -------
    dict of str to LensContext
        One scored context per direction.

    Raises
    ------
    IntakeError
        When no direction or reference is given, a direction is unknown, or the samples pass the ``lens_samples``
        limit.
    """
    directions, max_size, mad, chunk_rows = options.directions, options.max_size, options.mad, options.chunk_rows
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
    distances = _group_distances(dataset, query, references, differs, {**feature_mad(dataset), **(mad or {})})
    same_as = references.groupby(list(layout.columns), dropna=False, sort=False).ngroup().to_numpy()
    first = np.unique(same_as, return_index=True)[1]  # identical references are scored once
    labels = _labels(model, layout, query, references.iloc[first], keep, differs[first], chunk_rows, progress)[same_as]
    y = int(model.label(query)[0])
    m = len(masks)
    return {d: LensContext(d, layout.names, masks, y, y if d == "r2i" else 1 - y, labels[:, i * m:(i + 1) * m],
                           distances, references.index.to_numpy()) for i, d in enumerate(directions)}


def largest_factor_size(p: int, references: int, contexts: int = len(DIRECTIONS)) -> int:
    """The largest factor size whose samples (references × factors × contexts) fit the ``lens_samples`` limit.

    Parameters
    ----------
    p : int
        Feature groups.
    references : int
        Reference rows.
    contexts : int
        Contexts (directions).

    Returns
    -------
    int
        The size (0 when even the empty factor does not fit).
    """
    cap = limits().lens_samples
    return max((s for s in range(p + 1) if references * contexts * factor_count(p, s) <= cap), default=0)


def check_budget(p: int, max_size: int, references: int, contexts: int) -> None:
    """Refuse contexts whose samples (references × factors × contexts) pass the ``lens_samples`` limit, before
    any factor is built.

    Parameters
    ----------
    p, max_size : int
        As for :func:`factor_count`.
    references, contexts : int
        Reference rows, and contexts (directions).

    Raises
    ------
    IntakeError
        When the samples pass the limit; the message says how many references or what factor size fit.
    """
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
