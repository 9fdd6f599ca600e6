"""Sparse Explanation Values (SEV paper, Defs 1-4) by batched breadth-first search on the SEV hypercube.

A vertex is a Boolean vector b over the feature groups: b_g = 1 keeps the query's value of group g,
b_g = 0 takes the reference's. SEV⁻ (Def. 3) is the fewest groups moved from the query to the
reference that flip the prediction; SEV® (Def. 4) the same with restricted groups held at the query;
SEV⁺ (Def. 2) the fewest groups moved from the reference to the query that reach the query's class.
Each BFS layer (all vertices at one depth) is evaluated in one batched model call (chunked), and a
dataset-wide run evaluates that layer for all unresolved queries at once. ``explanations="all"`` scores the whole
layer at the answer's depth, to list every minimal explanation; ``"first"`` stops each query at its first flipping
vertex, as the SEV paper's own code does: the same value, one explanation.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from math import comb
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import IntakeError, check_choice, names_method
from ..vertices import DEFAULT_CHUNK_ROWS, ProgressFn, VertexScorer, layer_masks, one_row
from ..intake.data import Dataset
from ..intake.layout import GroupLayout
from ..intake.models import ModelAdapter
from ..reference import Reference
from .bracket import close
from .cube import HYPERCUBE_MAX_GROUPS, Hypercube, hypercube
from .outcomes import SEV_RESULTS, SEVExplanation, SEVResult

__all__ = ["BRACKET_ROWS", "DEFAULT_BFS", "DEFAULT_BUDGET_ROWS", "DEFAULT_MAX_DEPTH", "EXPLANATIONS",
           "HYPERCUBE_MAX_GROUPS", "KINDS", "MAX_LAYER_VERTICES", "SEV_RESULTS", "BFSSearch", "Hypercube",
           "SEVExplanation", "SEVResult", "check_held",
           "explain_sev", "hypercube", "searched_depth", "sev", "sev_batch"]  # the results and the hypercube live in
# .outcomes and .cube; their importers read them here as before

DEFAULT_MAX_DEPTH = 6
"""The SEV search's default deepest layer (groups moved at once)."""
DEFAULT_BUDGET_ROWS = 200_000
"""Model rows one search may score per query (the bracket's path included)."""
BRACKET_ROWS = 1_000_000  # the greedy path's rows where a search has no budget
MAX_LAYER_VERTICES = 2_000_000  # one layer per query; deeper layers of wide data are cut off (status beyond_depth)
KINDS = ("minus", "plus")
EXPLANATIONS = ("all", "first")  # every minimal explanation, or the first flipping vertex only (the value is the same)


@dataclass(frozen=True)
class BFSSearch:
    """What one breadth-first search reads: which SEV (``kind``), the groups held (``restricted``, SEV® Def. 4),
    how deep it goes and in what model calls, what it keeps and lists, its budget of model rows per query, and
    whether a query it leaves open gets a bracket (:func:`.bracket.close`: a greedy path's real flip as the upper
    bound, within what the budget left).

    Parameters
    ----------
    kind : str
        ``"minus"`` or ``"plus"``.
    restricted : sequence of str
        Groups held at the query (SEV®; ``minus`` only).
    max_depth : int
        The deepest layer searched.
    chunk_rows : int
        Rows per model call.
    keep_scores : bool
        Keep the vertices evaluated.
    explanations : str
        ``"all"`` lists every minimal explanation; ``"first"`` stops each query at its first flipping vertex (the
        SEV paper's code; the same value, ``first_flip`` set).
    budget_rows : int, optional
        Model rows scored per query (None: no budget): a layer that would pass it is not searched.
    bracket : bool
        Give a query left open a bracket (a real flip as its upper bound).
    """

    kind: str = "minus"
    restricted: Sequence[str] = ()
    max_depth: int = DEFAULT_MAX_DEPTH
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    keep_scores: bool = True
    explanations: str = "all"
    budget_rows: int | None = None
    bracket: bool = False


DEFAULT_BFS = BFSSearch()
"""SEV⁻, nothing held, to :data:`DEFAULT_MAX_DEPTH` groups, every minimal explanation and the vertices kept, no budget
and no bracket."""


class _Search:
    """The state of one batched BFS over many queries: what each query has seen and, once found, its flips."""

    def __init__(self, kind: str, names: tuple[str, ...], classes: np.ndarray, keep_scores: bool, first: bool):
        self.kind, self.names, self.classes, self.keep_scores, self.first = kind, names, classes, keep_scores, first
        self.seen_masks: list[list[np.ndarray]] = [[] for _ in classes]
        self.seen_scores: list[list[np.ndarray]] = [[] for _ in classes]
        self.found: dict[int, tuple[int, list[tuple[str, ...]]]] = {}  # query → (depth, moved groups of each flip)

    def see(self, qi: int, masks: np.ndarray, scores: np.ndarray) -> None:
        if self.keep_scores:
            self.seen_masks[qi].append(masks)
            self.seen_scores[qi].append(scores)

    def pending(self) -> np.ndarray:
        return np.array([i for i in range(len(self.classes)) if i not in self.found], dtype=np.intp)

    def flipped(self, part: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Which scored vertices of the queries ``part`` reach the goal: leave the query's class (``minus``) or
        reach it (``plus``)."""
        own = self.classes[part, None]
        return (labels != own) if self.kind == "minus" else (labels == own)


def searched_depth(movable: int, max_depth: int) -> int:
    """The depth the BFS searches: ``max_depth`` (at most every movable group), less where a layer would exceed
    ``MAX_LAYER_VERTICES``."""
    depths = range(1, min(max_depth, movable) + 1)
    return sum(1 for _ in itertools.takewhile(lambda d: comb(movable, d) <= MAX_LAYER_VERTICES, depths))


def _plus_origin(search: _Search, scorer: VertexScorer, reference_class: int, p: int) -> None:
    """SEV⁺'s depth 0: the reference itself, a value 0 for the queries whose class it already has."""
    origin = np.zeros((1, p), dtype=bool)
    for qi in range(len(search.classes)):
        search.see(qi, origin, np.array([scorer.reference_score]))
        if reference_class == search.classes[qi]:
            search.found[qi] = (0, [()])


def _without(queries: np.ndarray, found) -> np.ndarray:
    """``queries`` (sorted, distinct) less those in ``found``, in order."""
    if not found:
        return queries
    out = np.ones(int(queries.max()) + 1 if len(queries) else 0, dtype=bool)
    out[[qi for qi in found if qi < len(out)]] = False
    return queries[out[queries]]


def _fresh(same: np.ndarray, moved: np.ndarray) -> np.ndarray:
    """(queries, vertices): True where no moved group has equal query and reference values. A vertex moving such a
    group is the same point as a vertex of an earlier layer, which did not flip: it is skipped."""
    return (same.astype(np.uint8) @ moved.T.astype(np.uint8)) == 0


def _parts(queries: np.ndarray, count: int) -> list[np.ndarray]:
    """``queries`` in ``count`` (at least one) parts of near-equal size, in order."""
    return [queries] if count <= 1 else np.array_split(queries, count)


def _first_layer_ahead(scorer: VertexScorer, kind: str, movable: list[int]) -> None:
    """The search's first layer scored in the scorer's first call, with the queries and the reference (one model
    call fewer: every query searches it, bar SEV⁺'s queries of the reference's class)."""
    start = kind == "minus"
    masks = next(layer_masks(scorer.layout.size, movable, 1, start, len(movable)))
    scorer.ahead(masks, _fresh(scorer.same, masks != start))


def _collect(flips: dict, search: _Search, part: np.ndarray, flipped: np.ndarray, moved: np.ndarray,
             moved_names: dict[int, tuple[str, ...]]) -> None:
    """Add each query's flipping vertices of one scored block to ``flips`` (the moved groups' names, in
    combinations order; with ``search.first`` the block's first only: a query leaves the layer once it has one)."""
    rows, vertices = np.nonzero(flipped)  # row-major: each query's vertices together, in order
    if len(rows) == 0:
        return
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    ends = starts + 1 if search.first else np.append(starts[1:], len(rows))
    vertices = vertices.tolist()
    for qi, a, b in zip(part[rows[starts]].tolist(), starts.tolist(), ends.tolist()):
        found = flips.setdefault(qi, [])
        for j in vertices[a:b]:
            if j not in moved_names:
                moved_names[j] = tuple(itertools.compress(search.names, moved[j]))
            found.append(moved_names[j])


def _search_layer(search: _Search, model: ModelAdapter, scorer: VertexScorer, pending: np.ndarray,
                  movable: list[int], depth: int, chunk_rows: int) -> dict[int, list[tuple[str, ...]]]:
    """One BFS layer (SEV Def. 1's vertices at one depth) for the ``pending`` queries, in chunks of about
    ``chunk_rows`` model rows: the moved groups of every flipping vertex, per query. With ``search.first`` a query
    keeps only its first flipping vertex (combinations order) and leaves the layer's later chunks, whose vertex
    count follows the queries still searching."""
    start = search.kind == "minus"  # minus starts at the query (all True), plus at the reference (all False)
    flips: dict[int, list[tuple[str, ...]]] = {}
    searching = pending
    chunk = (lambda: max(1, chunk_rows // max(1, len(searching)))) if search.first else max(1, chunk_rows)
    for masks in layer_masks(len(search.names), movable, depth, start, chunk):
        moved = masks != start
        moved_names: dict[int, tuple[str, ...]] = {}
        for part in _parts(searching, -(-len(searching) * len(masks) // chunk_rows)):
            # a vertex that moves a group whose query and reference values are equal is the same point as
            # a vertex of an earlier layer, which did not flip: it is skipped
            fresh = _fresh(scorer.same[part], moved)
            scores = scorer.scores(part, masks, fresh)
            flipped = fresh & search.flipped(part, model.labels_of(scores))
            if search.keep_scores:
                for row, qi in enumerate(part):
                    search.see(qi, masks[fresh[row]], scores[row][fresh[row]])
            _collect(flips, search, part, flipped, moved, moved_names)
        if search.first:
            searching = _without(searching, flips)
            if len(searching) == 0:
                break
    return flips


def _results(search: _Search, status_if_missing: str, rows: list[int], **common) -> list[SEVResult]:
    """One :class:`SEVResult` per query from the finished search (``rows``: the model rows scored per query up
    to each depth)."""
    base = SEVResult.defaults(first_flip=search.first, vertex_masks=None, vertex_scores=None, **common)
    explained = dict(base, status="explained", certified=True)
    missing = dict(base, value=None, explanations=(), status=status_if_missing, complete=True, rows=rows[-1],
                   certified=status_if_missing in ("explained", "unexplainable"))
    last = len(rows) - 1
    at_depth = [dict(explained, value=d, complete=not (search.first and d), rows=rows[min(d, last)])
                for d in range(max([d for d, _ in search.found.values()], default=0) + 1)]  # a query's fields by SEV
    out = []
    for i, cls in enumerate(search.classes.tolist()):
        found = search.found.get(i)
        values = missing.copy() if found is None else at_depth[found[0]].copy()
        if found is not None:
            values["explanations"] = tuple(found[1])
        values["explained_class"] = cls
        if search.seen_masks[i]:
            values.update(vertex_masks=np.concatenate(search.seen_masks[i]),
                          vertex_scores=np.concatenate(search.seen_scores[i]))
        out.append(SEVResult.of_fields(values))
    return out


def check_held(layout: GroupLayout, kind: str, restricted: Sequence[str]) -> None:
    """An :class:`IntakeError` for an unknown SEV kind, for restricted groups (SEV® Def. 4) that are not the
    layout's, or for restricted groups with SEV⁺."""
    check_choice(kind, KINDS, "SEV kind")
    names = set(layout.names)
    unknown = [str(n) for n in restricted if n not in names]
    if unknown:
        raise IntakeError(f"Unknown restricted features: {', '.join(unknown)}; choose from {', '.join(layout.names)}.")
    if restricted and kind == "plus":
        raise IntakeError("Restricted features apply to SEV⁻ (SEV®), not to SEV⁺.")


@names_method("SEV")
def sev_batch(model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame, reference: Reference,
              options: BFSSearch = DEFAULT_BFS, *, progress: ProgressFn | None = None,
              scorer: VertexScorer | None = None) -> list[SEVResult]:
    """SEV of many queries by one BFS, as ``options`` say (:class:`BFSSearch`): each layer is evaluated for all
    unresolved queries together.

    Each query is explained for its own predicted class. ``options.restricted`` applies to ``minus`` (SEV®). A
    ``scorer`` built for these queries and this reference can be passed to share its encoding.

    Parameters
    ----------
    model : ModelAdapter
        The model.
    layout : GroupLayout
        The feature groups.
    queries : pandas.DataFrame
        The rows.
    reference : Reference
        The reference.
    options : BFSSearch
        Which SEV, the groups held, the depth, rows per model call, what is kept and listed, the budget of model
        rows per query and whether a query left open gets a bracket.
    progress : callable, optional
        ``progress(fraction, message)``.
    scorer : VertexScorer, optional
        A scorer to share.

    Returns
    -------
    list of SEVResult
        One result per query, in order.

    Raises
    ------
    IntakeError
        When ``kind``, ``explanations`` or a restricted group is not valid.
    """
    kind, restricted, max_depth, chunk_rows = options.kind, options.restricted, options.max_depth, options.chunk_rows
    keep_scores, explanations, budget_rows = options.keep_scores, options.explanations, options.budget_rows
    check_choice(explanations, EXPLANATIONS, "SEV explanations")
    check_held(layout, kind, restricted)
    n = len(queries)
    if n == 0:
        return []
    held = set(restricted)
    movable = [i for i, name in enumerate(layout.names) if name not in held]
    if scorer is None:
        scorer = VertexScorer(model, layout, queries, reference, chunk_rows)
        if movable and max_depth >= 1 and (budget_rows is None or len(movable) <= budget_rows):
            _first_layer_ahead(scorer, kind, movable)
    search = _Search(kind, layout.names, model.labels_of(scorer.query_scores), keep_scores, explanations == "first")
    reference_class = int(model.labels_of([scorer.reference_score])[0])
    searched = searched_depth(len(movable), max_depth)
    cut = comb(len(movable), searched + 1) if searched < min(max_depth, len(movable)) else None
    if kind == "plus":
        _plus_origin(search, scorer, reference_class, layout.size)
    pending, rows, by_budget = search.pending(), [0], False
    for depth in range(1, searched + 1):
        if len(pending) == 0:
            break
        if budget_rows is not None and rows[-1] + comb(len(movable), depth) > budget_rows:
            searched, cut, by_budget = depth - 1, comb(len(movable), depth), True
            break
        flips = _search_layer(search, model, scorer, pending, movable, depth, chunk_rows)
        search.found.update({qi: (depth, hits) for qi, hits in flips.items()})
        pending = _without(pending, flips)
        rows.append(rows[-1] + comb(len(movable), depth))
        if progress:
            progress(1 - len(pending) / n, f"{kind}: depth {depth} done, {len(pending)} of {n} queries left")
    status_if_missing = "unexplainable" if searched == len(movable) else "beyond_depth"
    results = _results(search, status_if_missing, rows, kind=kind, max_depth=searched, restricted=tuple(restricted),
                       reference_class=reference_class, next_rows=cut,
                       budget_rows=budget_rows if by_budget else None)
    if not options.bracket:
        return results
    left = (budget_rows if budget_rows is not None else BRACKET_ROWS) - rows[-1]
    return [close(r, scorer, qi, movable, left, keep_scores) if r.status == "beyond_depth" else r
            for qi, r in enumerate(results)]


def sev(model: ModelAdapter, layout: GroupLayout, query: pd.DataFrame | pd.Series, reference: Reference, *,
        kind: str = "minus", restricted: Sequence[str] = (), max_depth: int = DEFAULT_MAX_DEPTH) -> SEVResult:
    """SEV⁻ / SEV® / SEV⁺ of one query (a one-row frame or a Series): :func:`sev_batch` of that row.

    Parameters
    ----------
    model : ModelAdapter
        The model.
    layout : GroupLayout
        The feature groups.
    query : pandas.DataFrame or pandas.Series
        The row.
    reference : Reference
        The reference.
    kind : str
        ``"minus"`` or ``"plus"``.
    restricted : sequence of str
        Groups held (SEV®).
    max_depth : int
        The deepest layer searched.

    Returns
    -------
    SEVResult
        The row's SEV.

    Raises
    ------
    IntakeError
        As :func:`sev_batch`.
    """
    return sev_batch(model, layout, one_row(query), reference,
                     BFSSearch(kind=kind, restricted=restricted, max_depth=max_depth))[0]



@names_method("SEV")
def explain_sev(model: ModelAdapter, dataset: Dataset, query, reference: Reference,
                options: BFSSearch = DEFAULT_BFS) -> SEVExplanation:
    """SEV⁺, SEV⁻ and SEV® (when ``options.restricted`` is given) of one query row of ``dataset``, each by
    :func:`sev_batch` as ``options`` say (its ``kind`` aside: all three are searched).

    Parameters
    ----------
    model, dataset, query, reference
        As for :func:`~explain_core.sev.dispatch.explain_sev`.
    options : BFSSearch
        The groups SEV® holds, the depth, what is kept and listed, the budget and the bracket (``kind`` is not read).

    Returns
    -------
    SEVExplanation
        SEV⁺, SEV⁻ and SEV®.

    Raises
    ------
    IntakeError
        As :func:`sev_batch`.
    """
    layout = dataset.layout
    row = one_row(query)
    scorer = VertexScorer(model, layout, row, reference, options.chunk_rows, first_layers=True)  # one for all three

    def search(kind: str, held: Sequence[str] = ()) -> SEVResult:
        return sev_batch(model, layout, row, reference, replace(options, kind=kind, restricted=held), scorer=scorer)[0]

    minus, plus = search("minus"), search("plus")
    held = search("minus", options.restricted) if options.restricted else None
    return SEVExplanation(row.iloc[0].rename(0), reference, layout, float(scorer.query_scores[0]),
                          minus.explained_class, plus, minus, held)
