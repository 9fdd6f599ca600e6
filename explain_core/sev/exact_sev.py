"""SEV⁻, SEV⁺ and SEV® (SEV Defs. 2-4) of tree ensembles, additive models and ReLU networks by the exact engines.

A vertex takes, for each group, the query's value or the reference's, so each input of the final estimator has two
candidate values: the query row and the reference row, encoded once by the model's own preprocessing. The search
starts at the query (SEV⁻, SEV®) or the reference (SEV⁺); groups whose two values are equal, and restricted groups,
do not move. The model is solved by sorting when it is additive for this query (:mod:`.additive`), a network by
its mixed-integer model (:mod:`.relu`), else by CP-SAT (:mod:`.exact`); every explanation is the model's own (each
vertex is re-scored by the model: through its own split into encoder and final step, as the breadth-first search
scores vertices (:class:`~explain_core.vertices.VertexScorer`: the rows encoded once, vertices mixed as arrays, no
data frame of the data's columns per call), or through ``model.score`` where it has no such split).
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..cache import Memo, memo_field
from ..errors import Unreadable
from ..vertices import VertexScorer, first_layer_masks, mix
from ..intake.encoding import encoded_model
from ..intake.layout import GroupLayout
from ..intake.models import ModelAdapter
from ..reference import Reference
from .additive import additive_of_linear, additive_of_trees, solve_sorted
from .engine import SEVResult, check_held
from .exact import FlipOutcome, flip_problem, solve_flip
from .network import Network
from .relu import ReluProblem, solve_relu
from .relu_mip import NODES_PER_BUDGET
from .trees import Calibrated, LinearModel, ReadModel, calibrate, read_model

DEFAULT_BUDGET = 10.0  # the exact solver's work per search (BUDGET_UNIT)
BUDGET_UNIT = (f"CP-SAT deterministic seconds on tree ensembles, {NODES_PER_BUDGET} "
               "branch-and-bound nodes a unit on ReLU networks")
"""What one unit of the exact engine's budget is; the same answer on any machine. The default (10) lets a page settle
within seconds: on digits' 64-pixel MLP, 200 HiGHS nodes take about 4 s at load 2.6, and a row whose proof needs
thousands of nodes (SEV⁻ 9: 4,464) shows the bracket the root proved (7–9) with the flip found."""
EXACT_BUDGET_HELP = f"The exact solver's work per search: {BUDGET_UNIT} (the same answer on any machine)."
MAX_EXPLANATIONS = 256  # minimal explanations listed per search
SHALLOW_VERTICES = 2_000  # the first layers are evaluated on the trees directly while they hold this many vertices
PATH_GROUPS = 8  # the vertices along each path are scored for explanations of at most this many groups (the figure)
PATHS_SCORED = 8
STATUS = {"optimal": "explained", "no flip exists": "unexplainable", "limit reached": "limit"}
ENGINES = {"sort": "additive", "layers": "tree layers", "cp-sat": "cp-sat",  # SEVResult.engine of each solver
           "network layers": "network layers", "mip": "mip"}
BUDGET_WORDS = {"mip": "The MIP solver's budget ({:,.0f} branch-and-bound nodes)"}  # CP-SAT's otherwise


@dataclass(frozen=True)
class ExactEngine:
    """A model read once for a layout (its trees or coefficients, validated, each input's group)."""

    model: ModelAdapter
    layout: GroupLayout
    read: ReadModel
    checked: Memo = memo_field("references whose first layer of moves was checked")


def exact_engine(model: ModelAdapter, layout: GroupLayout) -> ExactEngine:
    """The model read for the exact engines (kept on the adapter); :class:`~.trees.Unreadable` says why not."""
    def read() -> ExactEngine | str:
        try:
            return ExactEngine(model, layout, read_model(model, layout))
        except Unreadable as exc:
            return str(exc)

    found = model.structures.get(tuple(layout.groups), read)
    if isinstance(found, str):
        raise Unreadable(found)
    return found


@dataclass(frozen=True)
class Prepared:
    """Queries and a reference read for the exact engines: their final-estimator inputs (calibrated), the model's
    scores, each query's class and the reference's."""

    cal: Calibrated
    queries: pd.DataFrame
    classes: np.ndarray
    reference_class: int
    scorer: VertexScorer | None = None  # vertices scored as arrays by the model's own split (None: as raw rows)

    @property
    def query_scores(self) -> np.ndarray:
        return self.cal.scores[:len(self.queries)]


def prepare(engine: ExactEngine, queries: pd.DataFrame, reference: Reference) -> Prepared:
    """The queries and the reference encoded and scored in one call, with the read model checked on them (and, the
    first time the engine meets this reference, on the first layer of moves of the first query: that mixing the
    encoded rows is encoding the mixed rows); :class:`~.trees.Unreadable` when the read model does not reproduce
    the model there (the caller falls back to the BFS)."""
    layout, model = engine.layout, engine.model
    columns = list(layout.columns)
    queries = queries[columns]
    key = tuple(sorted((c, repr(v)) for c, v in reference.values.items()))
    parts = [queries, vertex_rows(layout, queries.iloc[:1], reference, np.zeros((1, layout.size), bool))]
    if key not in engine.checked:
        parts.append(vertex_rows(layout, queries.iloc[:1], reference, first_layer_masks(layout.size)))
    cal = calibrate(model, engine.read, pd.concat(parts, ignore_index=True))
    engine.checked.get(key, lambda: True)
    classes = model.labels_of(cal.scores[:len(queries)])
    scorer = VertexScorer(model, layout, queries, reference) if encoded_model(model, layout.groups) else None
    return Prepared(cal, queries, classes, int(model.labels_of(cal.scores[len(queries):len(queries) + 1])[0]),
                    scorer)


@dataclass(frozen=True)
class ExactSearch:
    """What one exact search reads: which SEV (``kind``), the groups held (``restricted``), the solver's budget
    (:data:`BUDGET_UNIT`), the minimal explanations listed at most (``cap``), whether the vertices scored
    are kept (``keep_scores``: the paths figure), and ``shallow`` and ``cleared`` (see :func:`~.exact.solve_flip`)."""

    kind: str = "minus"
    restricted: Sequence[str] = ()
    budget: float = DEFAULT_BUDGET
    cap: int = MAX_EXPLANATIONS
    keep_scores: bool = True
    shallow: int = SHALLOW_VERTICES
    cleared: int = 0


def exact_sev_batch(engine: ExactEngine, queries: pd.DataFrame, reference: Reference,
                    search: ExactSearch = ExactSearch(), *, prepared: Prepared | None = None,
                    progress=None) -> list[SEVResult]:
    """SEV of every query (each for its own predicted class), one exact search each, as ``search`` says
    (:func:`prepare` them once to share the work between searches)."""
    check_held(engine.layout, search.kind, search.restricted)
    if len(queries) == 0:
        return []
    prepared = prepared or prepare(engine, queries, reference)
    out = []
    for i in range(len(prepared.queries)):
        out.append(_one(engine, prepared, i, reference, search))
        if progress:
            progress((i + 1) / len(prepared.queries), f"{search.kind}: {i + 1} of {len(prepared.queries)} rows solved")
    return out


def _one(engine: ExactEngine, prepared: Prepared, i: int, reference: Reference, search: ExactSearch) -> SEVResult:
    layout, cal, model = engine.layout, prepared.cal, engine.model
    kind, budget, cap, layers = search.kind, search.budget, search.cap, (search.shallow, search.cleared)
    read, query, c = cal.read, prepared.queries.iloc[[i]], int(prepared.classes[i])
    xq, xr = cal.inputs[i], cal.inputs[len(prepared.queries)]
    p, minus = layout.size, kind == "minus"
    same = np.ones(p, dtype=bool)
    np.logical_and.at(same, read.feature_group, xq == xr)
    held = np.isin(np.array(layout.names, dtype=object), list(search.restricted))
    movable = ~same & ~held
    start, other = (xq, xr) if minus else (xr, xq)
    target = 1 - c if minus else c
    need_high = (target == 1) == (read.output.scale > 0)
    threshold = model.threshold
    raw_star, tol = read.output.raw_threshold(threshold), read.tolerance(threshold)
    seen: list[tuple[np.ndarray, np.ndarray]] = []

    def masks_of(choices) -> np.ndarray:  # True = the query's value
        return np.array([(ch == 0) if minus else (ch == 1) for ch in choices], dtype=bool).reshape(-1, p)

    def rescore(choices) -> np.ndarray:
        masks = masks_of(choices)
        scores = prepared.scorer.scores(np.array([i]), masks)[0] if prepared.scorer is not None else \
            model.score(vertex_rows(layout, query, reference, masks))
        seen.append((masks, scores))
        return model.labels_of(scores) == target

    structure = read.structure
    if isinstance(structure, Network):
        problem = ReluProblem(structure, read.feature_group, start, other, np.where(movable, 2, 1), need_high,
                              raw_star, tol)
        outcome = solve_relu(problem, rescore, budget=budget, cap=cap, shallow=layers[0], cleared=layers[1])
    elif isinstance(structure, LinearModel):
        add = additive_of_linear(structure.coef, structure.base, start, other, read.feature_group, movable)
        outcome = solve_sorted(add, need_high, raw_star, tol, rescore, cap=cap)
    else:
        problem = flip_problem(structure, read.feature_group, np.vstack([start, other]),
                               [[0, 1] if m else [0] for m in movable], need_high, raw_star, tol)
        add = additive_of_trees(problem)
        if add is not None:
            outcome = solve_sorted(add, need_high, raw_star, tol, rescore, cap=cap)
        else:
            outcome = solve_flip(problem, rescore, budget=budget, list_budget=budget, cap=cap, shallow=layers[0],
                                 cleared=layers[1])
    explanations = sorted(tuple(int(g) for g in np.flatnonzero(ch)) for ch in outcome.solutions)
    if search.keep_scores and outcome.value:
        _score_paths(explanations, p, masks_of, rescore)
    return _result(search, outcome, explanations, layout, c, prepared.reference_class,
                   seen if search.keep_scores else [], int(p - held.sum()))


def vertex_rows(layout: GroupLayout, query: pd.DataFrame, reference: Reference, masks: np.ndarray) -> pd.DataFrame:
    """The raw rows of one query's vertices (mask True = the query's value):
    :func:`~explain_core.vertices.mix`, as one array operation when every value is a number."""
    columns = list(layout.columns)
    values = [reference.values[c] for c in columns]
    numeric = all(pd.api.types.is_numeric_dtype(t) for t in query.dtypes) and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values)
    if not numeric:
        return mix(layout, query, reference, masks)
    at_reference = masks[:, np.asarray(layout.column_group)]
    rows = np.where(at_reference, query[columns].to_numpy(float)[0], np.array(values, float))
    return pd.DataFrame(rows, columns=columns)


def _score_paths(explanations: list[tuple[int, ...]], p: int, masks_of, rescore) -> None:
    """Score every vertex on the shortest paths of the first explanations (what the paths figure draws)."""
    subsets = {tuple(s) for e in explanations[:PATHS_SCORED] if len(e) <= PATH_GROUPS
               for r in range(1, len(e)) for s in itertools.combinations(e, r)}
    if subsets:
        choices = [np.isin(np.arange(p), s).astype(np.int64) for s in sorted(subsets)]
        rescore(choices)


def _result(search: ExactSearch, outcome: FlipOutcome, explanations, layout: GroupLayout, c: int,
            reference_class: int, seen, movable: int) -> SEVResult:
    names, name, budget = layout.names, outcome.solver, search.budget
    note = ""
    if outcome.status == "limit reached":
        spent = BUDGET_WORDS.get(name, "CP-SAT's budget ({:g} deterministic seconds)").format(
            budget * NODES_PER_BUDGET if name == "mip" else budget)
        note = f"{spent} ran out; the minimum is at least {outcome.bound}."
    named = tuple(tuple(names[g] for g in e) for e in explanations)
    return SEVResult(kind=search.kind, value=outcome.value, explanations=named, status=STATUS[outcome.status],
                     explained_class=c, max_depth=movable, restricted=tuple(search.restricted),
                     reference_class=reference_class,
                     vertex_masks=np.concatenate([m for m, _ in seen]) if seen else None,
                     vertex_scores=np.concatenate([s for _, s in seen]) if seen else None,
                     engine=ENGINES[name], certified=outcome.status != "limit reached", bound=outcome.bound,
                     complete=outcome.complete, note=note)
