"""A bracket for every row the breadth-first search leaves open (issue 52): SEV lies between the depth the search
proved (every smaller set of groups was scored and none flips: depth searched + 1) and the size of a real flip,
found by a greedy search on the hypercube (SEV Def. 1) and checked by the model.

The search starts at the search's start vertex (the query for SEV⁻ / SEV®, the reference for SEV⁺) and moves one
group more at each step, one batched model call per step, keeping the few paths (:data:`BEAM`) whose scores lie
furthest towards the side of the threshold the search wants, until the label flips; then it drops, one call per
pass, any moved group whose return keeps the flip (the strongest such first), so the flip it reports is minimal
on its own path. Every vertex is scored by the model; the work counts model rows, within what the search's budget
left. When the flip's size equals the proved lower bound, the value is proved.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..vertices import VertexScorer

BEAM = 4  # paths the upper bound's search keeps at each step


def bracket_words(result, control: str = "the search budget",
                  depth_control: str = "the maximum depth") -> str:
    """A bracketed value (an :class:`~explain_core.sev.SEVResult`) in words, after its label: "is between 5 and 7:
    the search was stopped at 43,744 model rows … — raise ``control`` to narrow it" (``control`` /
    ``depth_control``: the settings that widen the search, named as the reader finds them)."""
    lower, upper = result.lower, result.upper
    head = (f"is at least {lower}: no flip was found within the budget" if upper is None else
            f"is {lower} (proved)" if upper == lower else f"is between {lower} and {upper}")
    depth, rows = result.max_depth, result.rows or 0
    if result.next_rows is None:
        why = (f"every set of up to {depth} features was tried, the maximum depth — raise {depth_control} "
               "to narrow it")
    elif result.budget_rows is not None:
        why = (f"the search was stopped at {rows:,} model rows: sets of {depth + 1} features alone need "
               f"{result.next_rows:,} more, over the budget of {result.budget_rows:,} — raise {control} to narrow it")
    else:
        why = f"sets of {depth + 1} features number {result.next_rows:,}, more than one layer of the search may hold"
    found = "" if upper is None else f"; the {upper} features of a greedy path flip it, checked by the model"
    return f"{head}: {why}{found}"


def _toward(kind: str, own: int) -> float:
    """+1 where the search wants the score up (towards the positive label), -1 where down."""
    wants_positive = (own == 0) if kind == "minus" else (own == 1)
    return 1.0 if wants_positive else -1.0


class _Path:
    """One query's greedy path: its vertex, the rows it scored, and every vertex it scored (with the scores)."""

    def __init__(self, scorer: VertexScorer, qi: int, kind: str, own: int, budget: int):
        self.scorer, self.qi, self.kind, self.own, self.budget = scorer, qi, kind, own, budget
        self.start = kind == "minus"
        self.rows, self.masks, self.scores = 0, [], []
        self.sign = _toward(kind, own)

    def score(self, masks: np.ndarray) -> np.ndarray | None:
        """The model's scores of ``masks`` (one call), or None when they would pass the budget."""
        if self.rows + len(masks) > self.budget:
            return None
        scores = self.scorer.scores(np.array([self.qi]), masks)[0]
        self.rows += len(masks)
        self.masks.append(masks)
        self.scores.append(scores)
        return scores

    def reached(self, scores: np.ndarray) -> np.ndarray:
        labels = self.scorer.model.labels_of(scores)
        return (labels != self.own) if self.kind == "minus" else (labels == self.own)

    def climb(self, candidates: list[int]) -> np.ndarray | None:
        """A beam of :data:`BEAM` paths: each step moves one more group on every path (one model call for all their
        next vertices), keeps the vertices whose scores lie furthest towards the wanted side, and ends at the
        first step where some vertex flips the label (the strongest flip): that vertex, or None."""
        movable = np.zeros(self.scorer.layout.size, dtype=bool)
        movable[candidates] = True
        beam = np.full((1, len(movable)), self.start)
        while True:
            parent, group = np.nonzero(movable & (beam == self.start))
            if len(parent) == 0:
                return None
            masks = beam[parent]  # the strongest path's next vertices first
            masks[np.arange(len(parent)), group] = not self.start
            _, first = np.unique(masks, axis=0, return_index=True)  # a set reached along two paths: scored once
            # the strongest path's moves always; the others' within half of what the budget leaves (later steps)
            take = max(int((parent == 0).sum()), (self.budget - self.rows) // 2)
            masks = masks[np.sort(first)][:take]
            scores = self.score(masks)
            if scores is None:
                return None
            flips = np.flatnonzero(self.reached(scores))
            if len(flips):
                return masks[flips[np.argmax(self.sign * scores[flips])]]
            beam = masks[np.argsort(-self.sign * scores, kind="stable")[:BEAM]]

    def prune(self, vertex: np.ndarray) -> np.ndarray:
        """Return moved groups to the start while the label stays flipped (the strongest remaining flip first)."""
        while True:
            moved = np.flatnonzero(vertex != self.start)
            if len(moved) <= 1:
                return vertex
            masks = np.repeat(vertex[None], len(moved), axis=0)
            masks[np.arange(len(moved)), moved] = self.start
            scores = self.score(masks)
            if scores is None:
                return vertex
            kept = np.flatnonzero(self.reached(scores))
            if len(kept) == 0:
                return vertex
            vertex = masks[kept[np.argmax(self.sign * scores[kept])]]


def close(result, scorer: VertexScorer, qi: int, movable: list[int], budget: int, keep_scores: bool = True):
    """``result`` (an open :class:`~explain_core.sev.SEVResult`: status ``beyond_depth``) bracketed: ``explained``
    (proved) when the greedy path's flip has the size of the proved lower bound, else ``limit`` with ``value`` the
    path's flip size (None when the path found none within ``budget`` model rows) and ``bound`` the lower bound."""
    path = _Path(scorer, qi, result.kind, result.explained_class, budget)
    vertex = path.climb([g for g in movable if not scorer.same[qi, g]])
    if vertex is not None:
        vertex = path.prune(vertex)
    lower = result.max_depth + 1
    rows = (result.rows or 0) + path.rows
    fields = dict(rows=rows, bound=lower, certified=False, status="limit", value=None)
    if vertex is not None:
        moved = tuple(n for n, m in zip(scorer.layout.names, vertex) if m != path.start)
        proved = len(moved) == lower
        fields.update(value=len(moved), explanations=(moved,), complete=False,
                      status="explained" if proved else "limit", certified=proved)
    if keep_scores and path.masks:
        masks = [m for m in (result.vertex_masks,) if m is not None] + path.masks
        scores = [s for s in (result.vertex_scores,) if s is not None] + path.scores
        fields.update(vertex_masks=np.concatenate(masks), vertex_scores=np.concatenate(scores))
    return replace(result, **fields)
