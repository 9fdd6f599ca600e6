"""The numbers behind the dataset-wide SEV views, as pandas DataFrames: queries per SEV value
(:func:`sev_counts`), groups per minimal explanation (:func:`prevalence_table`) and the search by depth
(:func:`lattice_counts`). No plotting library is imported here (an audit worker needs only these)."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..errors import check_choice
from .engine import Hypercube, SEVResult

NOT_EXPLAINED = "not explained"
""":func:`sev_counts`'s label for the queries with no SEV value."""


def lattice_counts(source: Hypercube | SEVResult, *, labels_of: Callable[[np.ndarray], np.ndarray] | None = None,
                   kind: str = "minus") -> pd.DataFrame:
    """Per searched depth: vertices evaluated and how many flip (columns ``depth``, ``evaluated``, ``flipped``).

    ``source`` is an :class:`SEVResult` computed with scores kept (its ``vertex_masks``/``vertex_scores``) —
    then ``labels_of`` (the model's rule, ``ModelAdapter.labels_of``) is required: a vertex's label is
    ``labels_of(score)``, and it flips when that label differs from ``result.explained_class`` (SEV⁻/SEV®)
    or equals it (SEV⁺). Depth counts groups moved from the search's start (the query for SEV⁻/SEV®, the
    reference for SEV⁺); the depths listed are those the search reached. Or ``source`` is a
    :class:`Hypercube` (every vertex; its labels are used, ``labels_of`` is ignored) with ``kind`` ``minus``
    or ``plus`` choosing the start and the flip rule.

    Parameters
    ----------
    source : Hypercube or SEVResult
        What was searched.
    labels_of : callable, optional
        The model's labelling rule.
    kind : str
        ``"minus"`` or ``"plus"`` (a hypercube only).

    Returns
    -------
    pandas.DataFrame
        One line per depth.

    Raises
    ------
    IntakeError
        When ``kind`` is unknown.
    """
    if isinstance(source, Hypercube):
        check_choice(kind, ("minus", "plus"), "SEV kind")
        masks, labels = np.asarray(source.masks, dtype=bool), np.asarray(source.labels).astype(int)
        query_label = int(labels[np.flatnonzero(masks.all(axis=1))[0]])
        depths = range(0, masks.shape[1] + 1)
        explained_class = query_label
    elif isinstance(source, SEVResult):
        if source.vertex_masks is None or source.vertex_scores is None:
            raise ValueError("this SEV result kept no vertex scores (computed with keep_scores=False)")
        if labels_of is None:
            raise ValueError("labels_of (the model's labelling rule) is needed to label an SEVResult's vertices")
        kind, explained_class = source.kind, source.explained_class
        masks = np.asarray(source.vertex_masks, dtype=bool)
        labels = np.asarray(labels_of(np.asarray(source.vertex_scores, dtype=float))).astype(int)
        last = source.value if source.value is not None else source.max_depth
        depths = range(0 if kind == "plus" else 1, last + 1)
    else:
        raise TypeError(f"expected a Hypercube or an SEVResult, not {type(source).__name__}")
    depth = (~masks).sum(axis=1) if kind == "minus" else masks.sum(axis=1)
    flips = labels != explained_class if kind == "minus" else labels == explained_class
    return pd.DataFrame({"depth": list(depths),
                         "evaluated": [int((depth == d).sum()) for d in depths],
                         "flipped": [int((flips & (depth == d)).sum()) for d in depths]})


def sev_counts(values: Sequence[int | None]) -> pd.DataFrame:
    """Queries per SEV value: columns ``sev`` (each integer from the smallest to the largest seen, then
    ``"not explained"`` for None), ``count`` and ``share`` (of all queries; 0 when there are none).

    Parameters
    ----------
    values : sequence of int or None
        The SEV values.

    Returns
    -------
    pandas.DataFrame
        ``sev``, ``count`` and ``share``.
    """
    ints = [int(v) for v in values if v is not None]
    missing = sum(v is None for v in values)
    levels: list = list(range(min(ints), max(ints) + 1)) if ints else []
    counts = [ints.count(v) for v in levels] + [missing]
    total = len(ints) + missing
    return pd.DataFrame({"sev": levels + [NOT_EXPLAINED], "count": counts,
                         "share": [c / total if total else 0.0 for c in counts]})


def prevalence_table(results: Sequence[SEVResult], group_names: Sequence[str]) -> pd.DataFrame:
    """Per group (in ``group_names`` order): ``count`` of explained queries with a minimal explanation that
    uses it (once per query) and ``share`` of the explained queries. ``attrs`` holds ``explained``/``queries``.

    Parameters
    ----------
    results : sequence of SEVResult
        Many queries' results.
    group_names : sequence of str
        The feature groups.

    Returns
    -------
    pandas.DataFrame
        ``count`` and ``share`` per group.
    """
    names = list(group_names)
    explained = [r for r in results if r.explainable]
    used: dict[str, int] = dict.fromkeys(names, 0)
    for r in explained:
        groups = {g for e in r.explanations for g in e}
        unknown = groups - set(names)
        if unknown:
            raise ValueError(f"explanations use groups not in group_names: {sorted(unknown)}")
        for g in groups:
            used[g] += 1
    table = pd.DataFrame({"group": names, "count": [used[g] for g in names],
                          "share": [used[g] / len(explained) if explained else 0.0 for g in names]})
    table.attrs.update(explained=len(explained), queries=len(results))
    return table

