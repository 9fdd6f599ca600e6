"""Any-model mode of the Boolean hypercube (see :mod:`.space`): one literal per feature group of one row, "keeps
the row's value"; z_j = −1 replaces the group's value by the reference value (``replace="reference"``: the SEV
hypercube) or by a seeded draw from training rows whose value lies in another quantile bin (``replace="draw"``)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import check_choice
from ..vertices import mix
from ..intake.data import Dataset
from ..intake.models import ModelAdapter
from ..reference import Reference
from .boolean import _attribute_values, _fmt
from .space import BIAS, K_BINS, LiteralSpace, TargetScale

REPLACE_MODES = ("reference", "draw")


def group_space(model: ModelAdapter, dataset: Dataset, row: pd.DataFrame, reference: Reference, *,
                replace: str = "reference", rows: Sequence[int] | None = None, K: int = K_BINS) -> LiteralSpace:
    """Literals "keeps <group> = <value>" of one query row for any model.

    z_j = −1 replaces group j by the reference value (``replace="reference"``: the SEV hypercube,
    deterministic) or by the value of a training row drawn at random (seeded per call) among those
    whose value lies in a different quantile bin (``K`` bins) or category (``replace="draw"``; a group
    where no such row exists keeps the reference value). ``rows`` are the training rows (for draws
    and the regression range); default all rows. With ``replace="reference"`` a group whose value is the
    reference's has no literal: replacing it moves nothing, so a weight on it could only fit the sample's noise
    (unless the row is the reference, where every group keeps its literal).

    Parameters
    ----------
    model, dataset, reference
        As for :func:`~explain_core.sev.dispatch.explain_sev`.
    row : pandas.DataFrame
        The query row.
    replace : str
        ``"reference"`` or ``"draw"``.
    rows : sequence of int, optional
        Training rows.
    K : int
        Quantile bins.

    Returns
    -------
    LiteralSpace
        The row's literals and f.

    Raises
    ------
    IntakeError
        When ``replace`` is unknown.
    """
    check_choice(replace, REPLACE_MODES, "replacement mode")
    layout = dataset.layout
    query = row.iloc[:1].reset_index(drop=True)
    rows = np.arange(len(dataset.features)) if rows is None else np.asarray(rows)
    values = layout.values(query.iloc[0].to_dict())
    moving = [i for i, g in enumerate(dataset.groups)
              if replace != "reference" or not _at_reference(g, query, reference)] or list(range(layout.size))
    groups = [dataset.groups[i] for i in moving]
    names = (BIAS,) + tuple(f"keeps {g.name} = {_fmt(values[g.name])}" for g in groups)
    x = np.ones(len(names), dtype=np.int8)
    donors = _donors(dataset, query, rows, K) if replace == "draw" else None
    train = dataset.features.iloc[rows].reset_index(drop=True)

    def inputs(Z: np.ndarray, seed: int) -> pd.DataFrame:
        keep = np.ones((len(Z), layout.size), dtype=bool)
        keep[:, moving] = np.asarray(Z)[:, 1:] > 0
        frame = mix(layout, query, reference, keep)
        return frame if donors is None else _draw(frame, keep, dataset.groups, donors, train, seed)

    if dataset.task == "classification":
        own = model.label(query)[0]
        target = TargetScale("classification", classes=_class_pair(dataset, own))
        f = lambda Z, seed: np.where(model.label(inputs(Z, seed)) == own, 1.0, -1.0)  # noqa: E731
    else:
        y = dataset.y[rows]
        target = TargetScale("regression", float(y.min()), float(y.max()))
        f = lambda Z, seed: target.to_f(model.score(inputs(Z, seed)))  # noqa: E731
    return LiteralSpace(names, x, f, target, replace, deterministic=replace == "reference",
                        groups=tuple(g.name for g in groups))


def _at_reference(group, query: pd.DataFrame, reference: Reference) -> bool:
    """Every column of ``group`` holds the reference's value in the one-row ``query`` (missing equals missing)."""
    def same(a, b) -> bool:
        if pd.isna(a) or pd.isna(b):  # NaN, None or pd.NA: equal only to another missing value
            return bool(pd.isna(a) and pd.isna(b))
        return bool(a == b)
    return all(same(query[c].iloc[0], reference.values[c]) for c in group.columns)


def _class_pair(dataset: Dataset, own_label: int) -> tuple:
    others = [c for c in pd.unique(dataset.target) if c != dataset.positive_class]
    negative = others[0] if len(others) == 1 else f"not {dataset.positive_class}"
    return (dataset.positive_class, negative) if own_label == 1 else (negative, dataset.positive_class)


def _donors(dataset: Dataset, query: pd.DataFrame, rows: np.ndarray, K: int) -> list[np.ndarray]:
    """For each group, the positions (within ``rows``) whose value is in another quantile bin (numeric,
    ``K`` bins over ``rows``) or another category / active column than the query's."""
    frame = dataset.features.iloc[rows]
    out = []
    for group in dataset.groups:
        if group.kind == "numeric" and len(group.columns) == 1:
            v = frame[group.columns[0]].to_numpy(dtype=float)
            edges = np.unique(np.nanquantile(v, np.linspace(0, 1, K + 1)[1:-1]))
            own = np.searchsorted(edges, float(query[group.columns[0]].iloc[0]), side="right")
            out.append(np.flatnonzero((np.searchsorted(edges, v, side="right") != own) & ~np.isnan(v)))
        else:
            values = _attribute_values(frame, group, {}).astype(str).to_numpy()
            own = str(_attribute_values(query, group, {}).iloc[0])
            out.append(np.flatnonzero(values != own))
    return out


def _draw(frame: pd.DataFrame, keep: np.ndarray, groups, donors, train: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Replace every dropped group (keep False) by the value of a seeded random donor row."""
    rng = np.random.default_rng(seed)
    frame = frame.copy()
    for j, group in enumerate(groups):
        hit = np.flatnonzero(~keep[:, j])
        if len(hit) == 0 or len(donors[j]) == 0:
            continue
        picks = rng.choice(donors[j], size=len(hit))
        for column in group.columns:
            values = frame[column].to_numpy().copy()
            values[hit] = train[column].to_numpy()[picks]
            frame[column] = values
    return frame
