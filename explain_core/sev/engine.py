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
from ..intake.data import Dataset, GroupLayout
from ..intake.models import ModelAdapter
from ..reference import Reference
from ..results import Explanation, ValueEquality
from .bracket import bracket_words, close

DEFAULT_MAX_DEPTH = 6
"""The SEV search's default deepest layer (groups moved at once)."""
DEFAULT_BUDGET_ROWS = 200_000
"""Model rows one search may score per query (the bracket's path included)."""
BRACKET_ROWS = 1_000_000  # the greedy path's rows where a search has no budget
MAX_LAYER_VERTICES = 2_000_000  # one layer per query; deeper layers of wide data are cut off (status beyond_depth)
HYPERCUBE_MAX_GROUPS = 12
"""The most feature groups whose full hypercube (2^p vertices) :func:`hypercube` scores."""
KINDS = ("minus", "plus")
EXPLANATIONS = ("all", "first")  # every minimal explanation, or the first flipping vertex only (the value is the same)
SEV_RESULTS = ("minus", "plus", "restricted")  # the results an SEVExplanation holds, by name (SEV⁻, SEV⁺, SEV®)


@dataclass(frozen=True, eq=False)
class SEVResult(Explanation):
    """One SEV value for one query, with every minimal explanation and the vertices evaluated.

    ``explanations`` lists, for each flipping vertex at the minimal depth, the groups that moved
    (to the reference for ``minus``, to the query's value for ``plus``). ``status`` is
    ``explained``, ``beyond_depth`` (nothing flips up to ``max_depth``, the depth searched: the
    requested depth, or less where a layer would exceed ``MAX_LAYER_VERTICES``), ``unexplainable``
    (nothing flips even when every movable group moves) or ``limit`` (an exact engine's budget ran out:
    ``value``, when set, is the fewest moves found, ``bound`` a proven lower bound).

    A BFS stopped by its depth or its budget (``budget_rows``: model rows per query) leaves the row open
    (``beyond_depth``) or, bracketed (:mod:`.bracket`), as ``limit`` with ``bound`` the proved lower bound and
    ``value`` the size of a real flip found by a greedy path (``explained`` when the two meet): :attr:`lower` and
    :attr:`upper` read the bracket of any status. ``rows`` counts the model rows the search scored per query,
    ``next_rows`` those the first layer not searched would have needed (a cap applied: ``budget_rows`` set when it
    was the budget, else the layer limit :data:`MAX_LAYER_VERTICES`).

    ``engine`` names what answered (``bfs``, ``cp-sat``, ``additive``: :mod:`.dispatch`); ``certified`` says the
    value (or "nothing flips") is proven; ``complete`` that every minimal explanation is listed (the exact engines
    cap the list); ``first_flip`` that the BFS stopped at the first flipping vertex (``explanations="first"``): the
    value is exact, ``explanations`` holds that vertex only; ``note`` says in words why an engine was chosen or what
    it could not do.

    Parameters
    ----------
    kind : str
        ``"minus"`` or ``"plus"`` (SEV® is ``"minus"`` with ``restricted`` groups).
    value : int, optional
        The SEV.
    explanations : tuple of tuple of str
        The minimal explanations.
    status : str
        How the search ended.
    explained_class, max_depth : int
        The query's class, and the depth searched.
    restricted : tuple of str
        Groups held.
    reference_class : int, optional
        The reference's predicted class.
    vertex_masks, vertex_scores : numpy.ndarray, optional
        The vertices evaluated and their scores (``keep_scores``).
    engine : str
        What answered.
    certified : bool, optional
        Whether the value is proven.
    bound : int, optional
        A proven lower bound (status ``limit``).
    complete, first_flip : bool
        Every minimal explanation listed; the search stopped at its first flip.
    note : str
        The engine's note.
    rows, budget_rows, next_rows : int, optional
        Model rows the search scored per query, its budget, and what the first layer not searched would have needed.
    """

    kind: str
    value: int | None
    explanations: tuple[tuple[str, ...], ...]
    status: str
    explained_class: int
    max_depth: int
    restricted: tuple[str, ...] = ()
    reference_class: int | None = None
    vertex_masks: np.ndarray | None = None  # (m, p) bool, True = query value
    vertex_scores: np.ndarray | None = None  # (m,) model score of each evaluated vertex
    engine: str = "bfs"
    certified: bool | None = None  # None: filled in from the status (the BFS proves what it reports, within depth)
    bound: int | None = None
    complete: bool = True
    first_flip: bool = False
    note: str = ""
    rows: int | None = None
    budget_rows: int | None = None
    next_rows: int | None = None

    meta_parameters = ("kind", "max_depth", "restricted")

    def __post_init__(self):
        if self.certified is None:
            object.__setattr__(self, "certified", self.status in ("explained", "unexplainable"))

    @property
    def method(self) -> str:
        return self.label

    @property
    def explainable(self) -> bool:
        return self.status == "explained"

    @property
    def label(self) -> str:
        return {"plus": "SEV⁺", "minus": "SEV®" if self.restricted else "SEV⁻"}[self.kind]

    @property
    def shown(self) -> str:
        """The value as the app and reports show it: ``> d`` when nothing flips within depth d, ``none`` when
        nothing flips at all."""
        if self.status == "explained":
            return str(self.value)
        if self.status == "limit":
            return f"{self.bound or 0}–{self.value}" if self.value is not None else f"≥ {self.bound or 0}"
        return f"> {self.max_depth}" if self.status == "beyond_depth" else "none"

    @property
    def lower(self) -> int | None:
        """The proved lower bound: the value when found, else the depth every smaller set was tried to, + 1 (None
        when nothing flips at all)."""
        if self.status == "explained":
            return self.value
        if self.status == "limit":
            return self.bound or 0
        return self.max_depth + 1 if self.status == "beyond_depth" else None

    @property
    def upper(self) -> int | None:
        """The size of a real flip (checked by the model), or None when none was found."""
        return self.value if self.status in ("explained", "limit") else None

    def paths(self) -> list[tuple[str, ...]]:
        """Every shortest hypercube path, as the order in which groups move (each explanation's orderings).

        Returns
        -------
        list of tuple of str
            The paths.
        """
        return [order for groups in self.explanations for order in itertools.permutations(groups)]

    @property
    def message(self) -> str:
        """A one-line reading of the outcome."""
        if self.value == 0:
            return f"{self.label} = 0: the reference itself is already predicted in the query's class"
        if self.status == "explained":
            n = len(self.explanations)
            listed = ", the first found: the search stopped there" if self.first_flip else \
                "" if self.complete else ", the first found: more exist"
            return f"{self.label} = {self.value} ({n} minimal explanation{'s' if n != 1 else ''}{listed})"
        if self.reference_class == self.explained_class and self.kind == "minus":
            return (f"{self.label}: not found — the reference is itself predicted in the query's class; "
                    "use a reference built from the other class")
        if self.status == "beyond_depth":
            return f"{self.label}: no explanation within depth {self.max_depth} (deeper layers were not searched)"
        if self.status == "limit" and self.engine == "bfs":
            return f"{self.label} {bracket_words(self)}"
        if self.status == "limit":
            if self.value is not None:
                return (f"{self.label}: between {self.bound or 0} and {self.value} — the solver's budget ran out "
                        "before it proved the minimum")
            return f"{self.label}: at least {self.bound or 0} — the solver's budget ran out before any flip was found"
        held = f" with {', '.join(self.restricted)} held fixed" if self.restricted else ""
        return f"{self.label}: not explainable — moving every feature{held} does not flip the prediction"


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
        for part in np.array_split(searching, max(1, -(-len(searching) * len(masks) // chunk_rows))):
            # a vertex that moves a group whose query and reference values are equal is the same point as
            # a vertex of an earlier layer, which did not flip: it is skipped
            fresh = (scorer.same[part].astype(np.uint8) @ moved.T.astype(np.uint8)) == 0
            scores = scorer.scores(part, masks, fresh)
            flipped = fresh & search.flipped(part, model.labels_of(scores))
            for row, qi in enumerate(part):
                search.see(qi, masks[fresh[row]], scores[row][fresh[row]])
            rows, vertices = np.nonzero(flipped)
            for qi, j in zip(part[rows].tolist(), vertices.tolist()):
                if search.first and qi in flips:
                    continue
                if j not in moved_names:
                    moved_names[j] = tuple(itertools.compress(search.names, moved[j]))
                flips.setdefault(qi, []).append(moved_names[j])
        if search.first:
            searching = np.setdiff1d(searching, list(flips), assume_unique=True)
            if len(searching) == 0:
                break
    return flips


def _results(search: _Search, status_if_missing: str, **common) -> list[SEVResult]:
    """One :class:`SEVResult` per query from the finished search."""
    def result(i: int) -> SEVResult:
        depth, hits = search.found.get(i, (None, ()))
        masks, scores = search.seen_masks[i], search.seen_scores[i]
        return SEVResult(value=depth, explanations=tuple(hits), explained_class=int(search.classes[i]),
                         status="explained" if i in search.found else status_if_missing,
                         complete=not (search.first and depth), first_flip=search.first,
                         vertex_masks=np.concatenate(masks) if masks else None,
                         vertex_scores=np.concatenate(scores) if scores else None, **common)
    return [result(i) for i in range(len(search.classes))]


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
def sev_batch(model: ModelAdapter, layout: GroupLayout, queries: pd.DataFrame, reference: Reference, *,
              kind: str = "minus", restricted: Sequence[str] = (), max_depth: int = DEFAULT_MAX_DEPTH,
              chunk_rows: int = DEFAULT_CHUNK_ROWS, keep_scores: bool = True, explanations: str = "all",
              progress: ProgressFn | None = None, scorer: VertexScorer | None = None,
              budget_rows: int | None = None, bracket: bool = False) -> list[SEVResult]:
    """SEV of many queries by one BFS: each layer is evaluated for all unresolved queries together.

    Each query is explained for its own predicted class. ``restricted`` applies to ``minus`` (SEV®).
    ``explanations``: ``all`` lists every minimal explanation; ``first`` stops each query at its first flipping
    vertex (the SEV paper's code; same value, ``first_flip`` set). A ``scorer`` built for these queries and this
    reference can be passed to share its encoding. ``budget_rows`` (None: no budget) caps the model rows scored per
    query: a layer that would pass it is not searched. With ``bracket`` a query left open gets a bracket
    (:func:`.bracket.close`: a greedy path's real flip as the upper bound) within what the budget left.

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
    kind : str
        ``"minus"`` or ``"plus"``.
    restricted : sequence of str
        Groups held (SEV®).
    max_depth : int
        The deepest layer searched.
    chunk_rows : int
        Rows per model call.
    keep_scores : bool
        Keep the vertices evaluated.
    explanations : str
        ``"all"`` or ``"first"``.
    progress : callable, optional
        ``progress(fraction, message)``.
    scorer : VertexScorer, optional
        A scorer to share.
    budget_rows : int, optional
        Model rows per query (None: no budget).
    bracket : bool
        Give a query left open a bracket (a real flip as its upper bound).

    Returns
    -------
    list of SEVResult
        One result per query, in order.

    Raises
    ------
    IntakeError
        When ``kind``, ``explanations`` or a restricted group is not valid.
    """
    check_choice(explanations, EXPLANATIONS, "SEV explanations")
    check_held(layout, kind, restricted)
    n = len(queries)
    if n == 0:
        return []
    scorer = scorer or VertexScorer(model, layout, queries, reference, chunk_rows)
    search = _Search(kind, layout.names, model.labels_of(scorer.query_scores), keep_scores, explanations == "first")
    reference_class = int(model.labels_of([scorer.reference_score])[0])
    movable = [i for i in range(layout.size) if layout.names[i] not in set(restricted)]
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
        pending = np.setdiff1d(pending, list(flips), assume_unique=True)
        rows.append(rows[-1] + comb(len(movable), depth))
        if progress:
            progress(1 - len(pending) / n, f"{kind}: depth {depth} done, {len(pending)} of {n} queries left")
    status_if_missing = "unexplainable" if searched == len(movable) else "beyond_depth"
    results = _results(search, status_if_missing, kind=kind, max_depth=searched, restricted=tuple(restricted),
                       reference_class=reference_class, next_rows=cut,
                       budget_rows=budget_rows if by_budget else None)
    results = [replace(r, rows=rows[min(r.value, len(rows) - 1)] if r.value is not None else rows[-1])
               for r in results]
    if not bracket:
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
    return sev_batch(model, layout, one_row(query), reference, kind=kind, restricted=restricted,
                     max_depth=max_depth)[0]


@dataclass(frozen=True, eq=False)
class Hypercube(ValueEquality):
    """Scores of all 2^p vertices; row v has mask bits (v >> g) & 1 (1 = query value of group g).

    Parameters
    ----------
    names : tuple of str
        The feature groups.
    masks : numpy.ndarray
        (2^p, p) boolean vertex masks.
    scores, labels : numpy.ndarray
        Each vertex's score and label.
    """

    names: tuple[str, ...]
    masks: np.ndarray
    scores: np.ndarray
    labels: np.ndarray

    @property
    def depth_from_query(self) -> np.ndarray:
        return (~self.masks).sum(axis=1)

    def table(self) -> pd.DataFrame:
        """One row per vertex, by depth: the groups at the reference, the depth, the score and the label.

        Returns
        -------
        pandas.DataFrame
            The vertices.
        """
        moved = [", ".join(n for n, keep in zip(self.names, mask) if not keep) or "(none: the query)"
                 for mask in self.masks]
        table = pd.DataFrame({"at the reference": moved, "depth": self.depth_from_query, "score": self.scores,
                              "label": self.labels})
        return table.sort_values("depth", kind="stable").reset_index(drop=True)


@names_method("the SEV hypercube")
def hypercube(model: ModelAdapter, layout: GroupLayout, query, reference: Reference) -> Hypercube:
    """Every vertex of the SEV hypercube (Def. 1) scored in one batched call; p ≤ 12 groups.

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

    Returns
    -------
    Hypercube
        The 2^p vertices with their scores and labels.

    Raises
    ------
    IntakeError
        When there are more than :data:`HYPERCUBE_MAX_GROUPS` groups.
    """
    p = layout.size
    if p > HYPERCUBE_MAX_GROUPS:
        raise IntakeError(f"The full hypercube has 2^{p} vertices; it is computed for at most {HYPERCUBE_MAX_GROUPS} "
                          "feature groups (the SEV search itself has no such limit).")
    codes = np.arange(2 ** p)
    masks = ((codes[:, None] >> np.arange(p)) & 1).astype(bool)
    scores = VertexScorer(model, layout, one_row(query), reference).scores(np.array([0]), masks)[0]
    return Hypercube(layout.names, masks, scores, model.labels_of(scores))


@dataclass(frozen=True, eq=False)
class SEVExplanation(Explanation):
    """SEV⁺, SEV⁻ and (with restricted groups) SEV® of one query, with what a table needs.

    Parameters
    ----------
    query : pandas.Series
        The row.
    reference : Reference
        The reference.
    layout : GroupLayout
        The feature groups.
    score : float
        The model's score of the row.
    explained_class : int
        Its predicted class.
    plus, minus : SEVResult
        SEV⁺ and SEV⁻.
    restricted : SEVResult, optional
        SEV®.
    """

    query: pd.Series
    reference: Reference
    layout: GroupLayout
    score: float
    explained_class: int
    plus: SEVResult
    minus: SEVResult
    restricted: SEVResult | None

    method = "SEV"
    meta_parameters = ("held", "searched_depth")

    @property
    def held(self) -> tuple[str, ...]:
        """The restricted groups of SEV® (empty without)."""
        return self.restricted.restricted if self.restricted is not None else ()

    @property
    def searched_depth(self) -> int:
        return self.minus.max_depth

    def result(self, which: str) -> SEVResult:
        """The result named ``which``: ``minus`` (SEV⁻), ``plus`` (SEV⁺) or ``restricted`` (SEV®); an
        :class:`IntakeError` for another name, or for ``restricted`` when no features were restricted.

        Parameters
        ----------
        which : str
            ``"minus"``, ``"plus"`` or ``"restricted"``.

        Returns
        -------
        SEVResult
            The result.

        Raises
        ------
        IntakeError
            For another name, or ``restricted`` without restricted features.
        """
        check_choice(which, SEV_RESULTS, "SEV result")
        result = getattr(self, which)
        if result is None:
            raise IntakeError("No SEV® here: pass restricted features to explain_sev.")
        return result

    def results(self) -> dict[str, SEVResult]:
        """The results this explanation holds, by name, in the order SEV⁻, SEV⁺, SEV® (SEV® only when computed).

        Returns
        -------
        dict of str to SEVResult
            The results.
        """
        return {which: getattr(self, which) for which in SEV_RESULTS if getattr(self, which) is not None}

    def table(self, which: str = "minus", unchanged: str = "—") -> pd.DataFrame:
        """The paper's table (Fig. 1c/1d): query, one row per explanation (moved groups only), reference.

        Parameters
        ----------
        which : str
            ``"minus"``, ``"plus"`` or ``"restricted"``.
        unchanged : str
            What an unmoved group's cell shows.

        Returns
        -------
        pandas.DataFrame
            The table.

        Raises
        ------
        IntakeError
            As :meth:`result`.
        """
        result = self.result(which)
        query_row = self.layout.values(self.query.to_dict())
        ref_row = self.layout.values(self.reference.values)
        moved_to = ref_row if result.kind == "minus" else query_row
        start, end = (("Query", query_row), ("Reference", ref_row))[::1 if result.kind == "minus" else -1]
        rows, index = [start[1]], [start[0]]  # from the search's start (SEV⁺: the reference), explanations 1, 2, …
        for i, groups in enumerate((e for e in result.explanations if e), 1):
            rows.append({g: (moved_to[g] if g in groups else unchanged) for g in self.layout.names})
            index.append(f"Explanation {i}")
        rows.append(end[1])
        index.append(end[0])
        return pd.DataFrame(rows, index=index, columns=list(self.layout.names))


@names_method("SEV")
def explain_sev(model: ModelAdapter, dataset: Dataset, query, reference: Reference, *,
                restricted: Sequence[str] = (), max_depth: int = DEFAULT_MAX_DEPTH,
                explanations: str = "all", budget_rows: int | None = None,
                bracket: bool = False) -> SEVExplanation:
    """SEV⁺, SEV⁻ and SEV® (when ``restricted`` is given) of one query row of ``dataset`` (``explanations``,
    ``budget_rows`` and ``bracket``: see :func:`sev_batch`)."""
    layout = dataset.layout
    row = one_row(query)
    scorer = VertexScorer(model, layout, row, reference, first_layers=True)  # one scoring for all three searches

    def search(kind: str, held: Sequence[str] = ()) -> SEVResult:
        return sev_batch(model, layout, row, reference, kind=kind, restricted=held, max_depth=max_depth,
                         explanations=explanations, scorer=scorer, budget_rows=budget_rows, bracket=bracket)[0]

    minus, plus = search("minus"), search("plus")
    held = search("minus", restricted) if restricted else None
    return SEVExplanation(row.iloc[0].rename(0), reference, layout, float(scorer.query_scores[0]),
                          minus.explained_class, plus, minus, held)

