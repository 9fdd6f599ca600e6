"""SEV explanations in words: each minimal explanation as the short list of groups it moves, with their values
before → after, strongest flip first (SEV Defs. 2-4 read for an analyst).

Pages and reports show these lines before any table: with 30 features a table of one column per feature hides
the one or two that moved, a sentence does not. No Streamlit here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..vocabulary import format_value, join_words
from .bracket import bracket_words
from .engine import SEVExplanation, SEVResult

SHOWN_FIRST = 5  # explanations listed before "show all"


@dataclass(frozen=True)
class Move:
    """One group of an explanation: its value before and after the move (formatted for reading)."""

    group: str
    before: str
    after: str

    @property
    def text(self) -> str:
        return f"{self.group} {self.before} → {self.after}"


@dataclass(frozen=True)
class ExplanationLine:
    """One minimal explanation: the moves, and the model's score at the vertex they reach (None if not kept)."""

    moves: tuple[Move, ...]
    score: float | None

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(m.group for m in self.moves)

    @property
    def changes(self) -> str:
        """``age 31 → 36.65, prior_offense_count 5 → 1.98``."""
        return ", ".join(m.text for m in self.moves)


def explanation_lines(ex: SEVExplanation, which: str, threshold: float) -> list[ExplanationLine]:
    """Every minimal explanation of ``ex``'s ``which`` result (``minus``, ``plus``, ``restricted``) as moved groups
    only, strongest flip first: sorted by how far the reached vertex's score lies beyond ``threshold`` (the model's)
    on the flipped side, ties in the search's order. SEV⁻/SEV® move groups from the row's values to the
    reference's; SEV⁺ from the reference's to the row's. An empty explanation (SEV⁺ = 0) gives no line."""
    result = ex.result(which)
    names = list(ex.layout.names)
    row = ex.layout.values(ex.query.to_dict())
    ref = ex.layout.values(ex.reference.values)
    before, after = (row, ref) if result.kind == "minus" else (ref, row)
    lines = []
    for groups in (e for e in result.explanations if e):
        moves = tuple(Move(g, format_value(before[g]), format_value(after[g])) for g in names if g in groups)
        lines.append(ExplanationLine(moves, _vertex_score(result, names, groups)))
    beyond = 1.0 if _reached_label(result) == 1 else -1.0  # the side of the threshold the flip reaches
    return sorted(lines, key=lambda line: -np.inf if line.score is None else -beyond * (line.score - threshold))


def _reached_label(result: SEVResult) -> int:
    """The label at an explanation's vertex: the other class for SEV⁻/SEV®, the row's own for SEV⁺."""
    return 1 - result.explained_class if result.kind == "minus" else result.explained_class


def _vertex_score(result: SEVResult, names: list[str], groups) -> float | None:
    """The score the search recorded at the vertex that moves exactly ``groups`` (None when scores were not kept)."""
    if result.vertex_masks is None or result.vertex_scores is None:
        return None
    moved = np.isin(names, list(groups))
    mask = ~moved if result.kind == "minus" else moved  # True = the row's value
    hits = np.flatnonzero((np.asarray(result.vertex_masks, dtype=bool) == mask).all(axis=1))
    return float(result.vertex_scores[hits[0]]) if len(hits) else None


def outcome_words(result: SEVResult, class_names) -> str:
    """What an explanation achieves, in words: "flip the prediction to …" / "give the row's prediction, …"."""
    if result.kind == "minus":
        return f"flips the prediction to {class_names[1 - result.explained_class]}"
    return f"already gives the reference the row's prediction, {class_names[result.explained_class]}"


def line_sentence(line: ExplanationLine, result: SEVResult, class_names, score_text=None) -> str:
    """``age 31 → 36.65, prior_offense_count 5 → 1.98 flips the prediction to …`` (with the score reached when
    ``score_text`` — the setup's score formatter — is given). Plain text: escape it for markdown."""
    score = f" ({score_text(line.score)})" if score_text and line.score is not None else ""
    return f"{line.changes} {outcome_words(result, class_names)}{score}"


def summary_sentence(result: SEVResult, lines: list[ExplanationLine], control: str = "the search budget",
                     depth_control: str = "the maximum depth") -> str:
    """One line above the list: how many features and how many alternative explanations; for a bracket (the
    breadth-first search stopped by ``control`` or ``depth_control``, named as the reader finds them), the bracket
    and how to narrow it."""
    if result.status == "limit" and result.engine == "bfs":
        return f"{result.label} {bracket_words(result, control, depth_control)}."
    if not lines:
        return result.message
    n = len(lines)
    what = "feature" if result.value == 1 else "features"
    if result.kind == "minus":
        verb = f"Moving {result.value} {what} of this row to the reference is enough"
    else:
        verb = f"Moving {result.value} {what} of the reference to this row's values is enough"
    alternatives = "one way" if n == 1 else f"{n} different ways, strongest first"
    held = f", with {join_words(result.restricted)} held fixed" if result.restricted else ""
    return f"{verb}{held}: {alternatives}."
