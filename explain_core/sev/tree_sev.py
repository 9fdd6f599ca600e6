"""Tree-based SEV (SEVᵀ; "Improving Decision Sparsity", NeurIPS 2024, §4; notes §4): the fewest feature groups of
the row to change, each to a value observed in the training data, so that the model predicts the other class.

Each group's candidate values are the training rows' values of it, one per split-threshold interval of the model
(values that send every split on the group the same way are one option; the one nearest the row's value is kept).
For a single tree this is the negative-path algorithm: every leaf of the other class, reachable when each group
takes one of its values, costs the groups whose value must change to satisfy the conditions on its path (distinct
groups are counted, the violated split conditions reported beside, as the notes recommend); the cheapest leaf
wins. For an ensemble, the same question over all trees at once is the CP-SAT model of :mod:`.exact`, with one
option per interval. The point reached is a real mix of observed values, and the model itself confirms it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import Unreadable
from ..vertices import one_row
from ..intake.data import Dataset
from ..intake.models import ModelAdapter
from ..results import Explanation
from .exact import FlipProblem, crosses, flip_problem, solve_flip
from .exact_sev import DEFAULT_BUDGET, exact_engine
from .trees import TreeEnsemble, calibrate

MAX_CANDIDATES = 256  # observed values tried per group (spread over its range by quantiles)
MAX_OPTIONS = 64  # options per group after merging values that every split treats alike


@dataclass(frozen=True, eq=False)
class TreeSEVResult(Explanation):
    """SEVᵀ of one row: ``value`` groups changed (None when nothing reaches the other class), the groups
    (``moved``), the point reached (``point``: column → value, the row's values elsewhere), the model's score
    there and its class, whether the model confirms the flip; ``conditions``: split conditions of the reached
    leaf's path that the row violates (single trees). ``engine``: ``negative paths``, ``cp-sat`` or ``one move``
    (an ensemble that one group's move flips: every such move is scored by the model, so no solver is needed).

    Parameters
    ----------
    value : int, optional
        Groups changed.
    moved : tuple of str
        The groups.
    point : dict
        The point reached.
    score : float, optional
        The model's score there.
    reached_class : int, optional
        The model's class there.
    explained_class : int
        The row's class.
    status : str
        ``"explained"``, ``"unexplainable"`` or ``"limit"``.
    engine : str
        What answered.
    certified : bool
        Whether the model confirms the flip.
    bound : int, optional
        A proven lower bound (status ``limit``).
    conditions : int, optional
        Violated split conditions (single trees).
    """

    value: int | None
    moved: tuple[str, ...]
    point: dict = field(default_factory=dict)
    score: float | None = None
    reached_class: int | None = None
    explained_class: int = 1
    status: str = "explained"
    engine: str = "negative paths"
    certified: bool = True
    bound: int | None = None
    conditions: int | None = None

    method = "SEVᵀ"
    meta_parameters = ("engine",)

    @property
    def confirmed(self) -> bool:
        return self.reached_class is not None and self.reached_class != self.explained_class

    @property
    def shown(self) -> str:
        if self.status == "explained":
            return str(self.value)
        return f"≥ {self.bound or 0}" if self.status == "limit" else "none"


def tree_sev(model: ModelAdapter, dataset: Dataset, query, rows=None, *, restricted: Sequence[str] = (),
             budget: float = DEFAULT_BUDGET) -> TreeSEVResult:
    """SEVᵀ of ``query`` with candidate values from ``rows`` of the dataset (default: all; pass the training rows),
    the ``restricted`` groups held at the row's values; :class:`~.trees.Unreadable` when the model is not a tree
    ensemble this package reads.

    Parameters
    ----------
    model : ModelAdapter
        A tree model.
    dataset : Dataset
        Its data.
    query : pandas.DataFrame or pandas.Series
        The row.
    rows : sequence of int, optional
        Rows whose values are candidates.
    restricted : sequence of str
        Groups held.
    budget : float
        CP-SAT deterministic seconds.

    Returns
    -------
    TreeSEVResult
        The point reached, re-scored by the model.

    Raises
    ------
    Unreadable
        When the model is not a tree ensemble this package reads.
    """
    layout, row = dataset.layout, one_row(query)[list(dataset.layout.columns)]
    read = exact_engine(model, layout).read  # read once per model and layout
    if not isinstance(read.structure, TreeEnsemble):
        raise Unreadable("SEVᵀ needs a tree model")
    source = dataset.features if rows is None else dataset.features.iloc[np.asarray(rows)]
    frame, owner = _candidate_rows(dataset, row, source)
    cal = calibrate(model, read, frame)
    read, X = cal.read, cal.inputs
    c = int(model.labels_of(cal.scores[:1])[0])
    target = 1 - c
    held = {layout.names.index(name) for name in restricted}
    if read.structure.n_trees > 1:  # one move suffices: the candidate rows are every one-group move, scored
        labels = model.labels_of(cal.scores)
        one = _one_move(layout, frame, owner, labels, target, row, held)
        if one is not None:
            g, i = one
            point = {col: _plain(frame[col].iloc[i]) for col in layout.groups[g].columns}
            return TreeSEVResult(1, (layout.names[g],), point, float(cal.scores[i]), int(labels[i]), c,
                                 engine="one move", bound=1)
    need_high = (target == 1) == (read.output.scale > 0)
    option_rows = _options(read.structure, read.feature_group, X, owner, frame, row, layout, held)
    problem = flip_problem(read.structure, read.feature_group, X, option_rows, need_high,
                           read.output.raw_threshold(model.threshold), read.tolerance(model.threshold))
    checked: dict[bytes, tuple[float, int]] = {}

    def rescore(choices) -> np.ndarray:
        points = pd.concat([_point(frame, option_rows, ch, layout) for ch in choices], ignore_index=True)
        scores = model.score(points)
        labels = model.labels_of(scores)
        checked.update({ch.tobytes(): (float(s), int(y)) for ch, s, y in zip(choices, scores, labels)})
        return labels == target

    if read.structure.n_trees == 1:
        choice, conditions, status = _negative_paths(problem, rescore)
        found = _Found(choice, status, "negative paths", None, conditions)
    else:
        outcome = solve_flip(problem, rescore, budget=budget, cap=1, shallow=0)
        found = _Found(outcome.solutions[0] if outcome.solutions else None,
                       {"optimal": "explained", "no flip exists": "unexplainable"}.get(outcome.status, "limit"),
                       "cp-sat", outcome.bound, None)
    return _result(layout, frame, option_rows, checked, c, found)


def _one_move(layout, frame: pd.DataFrame, owner: list[int], labels: np.ndarray, target: int, row: pd.DataFrame,
              held: set[int]) -> tuple[int, int] | None:
    """SEVᵀ = 1 read off the scored candidate rows (each the row with one group at an observed value): the first
    group, in the data's order, with a value the model predicts ``target`` for, and the candidate row of its value
    nearest the row's; None when no single move flips."""
    owner = np.asarray(owner)
    for g, group in enumerate(layout.groups):
        flips = np.flatnonzero((owner == g) & (labels == target))
        if g in held or not len(flips):
            continue
        return g, int(flips[np.argmin(_distance(frame, flips, group.columns, row))])
    return None


def _plain(value):
    """A numpy scalar as the Python value."""
    return value.item() if hasattr(value, "item") else value


def _candidate_rows(dataset: Dataset, row: pd.DataFrame, source: pd.DataFrame) -> tuple[pd.DataFrame, list[int]]:
    """The row itself, then for each group the row with that group set to each candidate value (``owner``: the
    group of each row, −1 for the row itself)."""
    parts, owner = [row], [-1]
    for g, group in enumerate(dataset.layout.groups):
        values = source[list(group.columns)].drop_duplicates()
        if len(values) > MAX_CANDIDATES:
            values = values.sort_values(list(group.columns), kind="stable")
            values = values.iloc[np.unique(np.linspace(0, len(values) - 1, MAX_CANDIDATES).round().astype(int))]
        block = pd.concat([row] * len(values), ignore_index=True)
        for column in group.columns:
            block[column] = values[column].to_numpy()
        parts.append(block)
        owner += [g] * len(values)
    return pd.concat(parts, ignore_index=True), owner


def _options(ens: TreeEnsemble, feature_group: np.ndarray, X: np.ndarray, owner: list[int], frame: pd.DataFrame,
             row: pd.DataFrame, layout, held: set[int] = frozenset()) -> list[list[int]]:
    """Per group: row 0 (the row's own value), then one candidate row per other interval, nearest the row first
    (none for the ``held`` groups: SEV®'s restricted features keep the row's value)."""
    inner = np.flatnonzero(ens.feature >= 0)
    node_group = feature_group[ens.feature[inner]]
    owner = np.asarray(owner)
    options = []
    for g, group in enumerate(layout.groups):
        rows = np.concatenate([[0], np.flatnonzero(owner == g)])
        nodes = inner[node_group == g]
        if len(nodes) == 0 or g in held:
            options.append([0])
            continue
        signature = ens.goes_left(np.broadcast_to(nodes, (len(rows), len(nodes))), X[rows[:, None], ens.feature[nodes]])
        order = np.argsort(_distance(frame, rows, group.columns, row), kind="stable")
        kept, seen = [0], {signature[0].tobytes()}
        for i in order:
            key = signature[i].tobytes()
            if key not in seen and len(kept) < MAX_OPTIONS:
                seen.add(key)
                kept.append(int(rows[i]))
        options.append(kept)
    return options


def _distance(frame: pd.DataFrame, rows: np.ndarray, columns, row: pd.DataFrame) -> np.ndarray:
    """How far each candidate lies from the row's value: |difference| for one numeric column, else 0 (first seen)."""
    values = frame[list(columns)].iloc[rows]
    if len(columns) == 1 and pd.api.types.is_numeric_dtype(values[columns[0]]):
        return np.abs(values[columns[0]].to_numpy(dtype=float) - float(row[columns[0]].iloc[0]))
    return np.zeros(len(rows))


def _point(frame: pd.DataFrame, option_rows: list[list[int]], choice: np.ndarray, layout) -> pd.DataFrame:
    """The raw row with each group at its chosen option (option 0: the row's own value)."""
    point = frame.iloc[[0]].reset_index(drop=True).copy()
    for g, k in enumerate(choice.tolist()):
        if k:
            for column in layout.groups[g].columns:
                point[column] = frame[column].iloc[[option_rows[g][k]]].to_numpy()
    return point


def _negative_paths(problem: FlipProblem, rescore) -> tuple[np.ndarray | None, int | None, str]:
    """Single tree: every leaf that may give the other class and is reachable with observed values, cheapest first
    (distinct groups to change, then violated conditions); the first the model confirms."""
    ens, leaves = problem.ensemble, []

    def walk(node: int, allowed: dict, violated: int) -> None:
        if ens.feature[node] < 0:
            if crosses(problem, np.array([ens.base + ens.value[node]]))[0]:
                moved = {g: m for g, m in allowed.items() if not m & 1}
                leaves.append((len(moved), violated, node, moved))
            return
        g, goes = int(problem.node_group[node]), int(problem.node_left[node])
        mask = allowed.get(g, (1 << int(problem.options[g])) - 1)
        for child, side, query_side in ((ens.left[node], mask & goes, goes & 1),
                                        (ens.right[node], mask & ~goes, not goes & 1)):
            if side:
                walk(int(child), {**allowed, g: side}, violated + (not query_side))

    walk(int(ens.roots[0]), {}, 0)
    for _, violated, _, moved in sorted(leaves, key=lambda leaf: leaf[:3]):
        choice = np.zeros(len(problem.options), dtype=np.int64)
        for g, mask in moved.items():
            choice[g] = (mask & -mask).bit_length() - 1  # the lowest option allowed: the nearest value
        if rescore([choice])[0]:
            return choice, violated, "explained"
    return None, None, "unexplainable"


@dataclass(frozen=True)
class _Found:
    """What the search found: the options chosen (None: no flip found), its status, the engine, the proven bound,
    and the conditions violated (a single tree's negative paths)."""

    choice: np.ndarray | None
    status: str
    engine: str
    bound: int | None
    conditions: int | None


def _result(layout, frame, option_rows, checked, c, found: _Found) -> TreeSEVResult:
    choice, status, engine, conditions = found.choice, found.status, found.engine, found.conditions
    if choice is None:
        return TreeSEVResult(None, (), {}, None, None, c, status, engine, status != "limit", found.bound, None)
    moved = tuple(layout.names[g] for g in np.flatnonzero(choice))
    point = _point(frame, option_rows, choice, layout).iloc[0]
    changed = {col: _plain(point[col]) for g in np.flatnonzero(choice) for col in layout.groups[g].columns}
    score, label = checked[choice.tobytes()]
    return TreeSEVResult(len(moved), moved, changed, score, label, c, status, engine, True, len(moved), conditions)
