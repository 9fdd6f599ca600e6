"""The result of SEV against each kind of reference ("Improving Decision Sparsity"): one typed result per kind —
:class:`SingleSEV` (SEV¹, one reference), :class:`FlexibleSEV` (SEV^F), :class:`ClusterSEV` (SEV^©),
:class:`TreeKindSEV` (SEVᵀ, tree models) — each with
the row, the reference it was explained against and every minimal explanation as a :class:`~.space.Destination`
(where it takes the row, its ℓ0 / ℓ∞ / ℓ1 and credibility), closest first; and the helpers that turn the engines'
outputs into them.

Every metric of a result is read off its **first** explanation, the closest (smallest ℓ∞, then ℓ1): the one the
analyst is shown first (the paper's ℓ∞ takes the closest minimal explanation, its credibility the first found;
here both are the same explanation).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..vertices import VertexScorer
from ..intake.layout import GroupLayout
from ..reference import Reference
from ..results import Explanation
from ..sev.engine import SEVResult
from .credibility import ReferenceDensity
from .prototypes import ASSIGNMENTS
from .search import Candidates, Found
from .space import Destination, PopulationSpace

KIND_LABELS = {"single": "SEV¹", "flexible": "SEV^F", "cluster": "SEV^©", "tree": "SEVᵀ"}
"""Each kind of reference's short label (SEV¹, SEV^F, SEV^©, SEVᵀ)."""
RULE_LABELS = {"nearest": "nearest typical case, the paper's rule", "sparsest": "sparsest of {cases} typical cases"}
"""SEV^©'s assignment rules (:data:`~.prototypes.ASSIGNMENTS`) as its label says them (``cases``: how many)."""


def kind_label(kind: str, credible: float | None = None, assignment: str | None = None, cases: int = 0) -> str:
    """A kind's label as results and tables name it: SEV^© with the rule that answered, e.g. "SEV^© (sparsest of
    8 typical cases)" or "SEV^© (nearest typical case, the paper's rule)"; "(credible)" after a credible search.

    Parameters
    ----------
    kind : str
        A key of :data:`KIND_LABELS`.
    credible : float, optional
        The credibility threshold (None: the plain search).
    assignment : str, optional
        SEV^©'s assignment rule (None: no rule named).
    cases : int
        How many typical cases the sparsest rule chose among.

    Returns
    -------
    str
        The label.
    """
    label = KIND_LABELS[kind]
    if kind == "cluster" and assignment is not None:
        label += f" ({RULE_LABELS[assignment].format(cases=cases)})"
    return label + (" (credible)" if credible is not None else "")


@dataclass(frozen=True, eq=False)
class ReferenceSEV(Explanation):
    """SEV⁻ (SEV® with restricted groups) of one row against one kind of reference.

    ``status``: ``explained``, ``beyond_depth`` or ``unexplainable`` (as :class:`~explain_core.sev.SEVResult`);
    ``credible``: None without the credible search, True when the explanations passed its threshold, False when
    none did and the plain ones are shown (the fallback); ``seconds``: the search and its metrics for this row
    (a batch's time shared out evenly), the one-off fitting apart.

    Parameters
    ----------
    value : int, optional
        The SEV (None when not explained).
    status : str
        How the search ended.
    explained_class : int
        The row's predicted class.
    max_depth : int
        The depth searched.
    query : pandas.Series
        The row.
    reference : Reference
        The reference (of a typical case, the case's).
    destinations : tuple of Destination
        Every minimal explanation, closest first.
    restricted : tuple of str
        Groups held (SEV®).
    credible : bool, optional
        The credible search's verdict.
    threshold : float, optional
        The credibility threshold.
    seconds : float
        The row's search time.
    """

    value: int | None
    status: str
    explained_class: int
    max_depth: int
    query: pd.Series
    reference: Reference
    destinations: tuple[Destination, ...]
    restricted: tuple[str, ...] = ()
    credible: bool | None = None
    threshold: float | None = None
    seconds: float = 0.0

    kind = "single"
    meta_parameters = ("max_depth", "restricted", "threshold")

    @property
    def method(self) -> str:
        return kind_label(self.kind, self.threshold)

    @property
    def explainable(self) -> bool:
        return self.status == "explained"

    @property
    def shown(self) -> str:
        if self.explainable:
            return str(self.value)
        return {"beyond_depth": f"> {self.max_depth}", "limit": "not proven"}.get(self.status, "none")

    @property
    def first(self) -> Destination | None:
        """The explanation every metric reads: the closest."""
        return self.destinations[0] if self.destinations else None

    def table(self) -> pd.DataFrame:
        """One row per explanation: its features, ℓ0, ℓ∞, ℓ1, credibility and the model's score there.

        Returns
        -------
        pandas.DataFrame
            The explanations, closest first.
        """
        return pd.DataFrame([{"features": ", ".join(d.groups), "ℓ0": d.l0, "ℓ∞ (SD)": d.linf, "ℓ1 (SD)": d.l1,
                              "credibility": d.credibility, "score": d.score} for d in self.destinations],
                            columns=["features", "ℓ0", "ℓ∞ (SD)", "ℓ1 (SD)", "credibility", "score"])


@dataclass(frozen=True, eq=False)
class SingleSEV(ReferenceSEV):
    """SEV¹: against the setup's one reference (the other class's mean / mode, or one real row).

    Parameters
    ----------
    value, status, explained_class, max_depth, query, reference, destinations, restricted, credible, threshold, seconds
        As :class:`ReferenceSEV`.
    """

    kind = "single"


@dataclass(frozen=True, eq=False)
class FlexibleSEV(ReferenceSEV):
    """SEV^F: each numeric reference value may move within ±``tau`` quantile rank (``k`` values tried).

    Parameters
    ----------
    value, status, explained_class, max_depth, query, reference, destinations, restricted, credible, threshold, seconds
        As :class:`ReferenceSEV`.
    tau : float
        The window's half-width in quantile rank.
    k : int
        Values tried per window.
    """

    tau: float = 0.2
    k: int = 5

    kind = "flexible"
    meta_parameters = ("max_depth", "restricted", "threshold", "tau", "k")


@dataclass(frozen=True, eq=False)
class ClusterSEV(ReferenceSEV):
    """SEV^©: against the typical case (prototype) the row is assigned to: ``prototype`` (1-based), at mixed
    distance ``assigned_distance``, by the ``assignment`` rule (:data:`~.prototypes.ASSIGNMENTS`, in words
    :attr:`assignment_rule`).

    Parameters
    ----------
    value, status, explained_class, max_depth, query, reference, destinations, restricted, credible, threshold, seconds
        As :class:`ReferenceSEV`.
    prototype : int
        The typical case's number (1-based).
    assigned_distance : float
        The row's mixed distance to it.
    assignment : str
        The assignment rule's key.
    cases : int
        How many typical cases the rule chose among.
    """

    prototype: int = 0
    assigned_distance: float = 0.0
    assignment: str = "nearest"
    cases: int = 0

    kind = "cluster"
    meta_parameters = ("max_depth", "restricted", "threshold", "prototype", "assignment", "cases")

    @property
    def method(self) -> str:
        """SEV^© and the rule that answered (:func:`kind_label`)."""
        return kind_label(self.kind, self.threshold, self.assignment, self.cases)

    @property
    def assignment_rule(self) -> str:
        return ASSIGNMENTS[self.assignment]


@dataclass(frozen=True, eq=False)
class TreeKindSEV(ReferenceSEV):
    """SEVᵀ (§4) as a kind: the groups move to values observed in the training rows, the point the model's own
    trees lead to (:func:`~explain_core.sev.tree_sev`), not to a reference; ``reference`` is the setup's, shown
    beside. ``status`` ``limit``: the solver's budget ran out. It has no credible search (its point is measured).

    Parameters
    ----------
    value, status, explained_class, max_depth, query, reference, destinations, restricted, credible, threshold, seconds
        As :class:`ReferenceSEV`.
    engine : str
        What answered (``cp-sat``, ``negative paths``, ``one move``).
    """

    engine: str = "cp-sat"

    kind = "tree"
    meta_parameters = ("restricted", "engine")


def measure(queries: pd.DataFrame, moves: Sequence[Sequence[tuple]], space: PopulationSpace,
            density: ReferenceDensity | None) -> list[tuple[Destination, ...]]:
    """Each row's moves (groups moved, column → value, the model's score there) as measured :class:`Destination` s,
    closest first; every point of every row is measured and rated in one batch."""
    owner = np.array([i for i, row_moves in enumerate(moves) for _ in row_moves], dtype=int)
    if len(owner) == 0:
        return [() for _ in moves]
    flat = [m for row_moves in moves for m in row_moves]
    base = {c: values[owner] for c, values in space.arrays(queries).items()}
    points = {c: values.copy() for c, values in base.items()}
    for j, (_, values, _) in enumerate(flat):
        for column, value in values.items():
            points[column][j] = value
    l0, linf, l1 = space.distances(base, points)
    cred = density.percentile(points) if density is not None else np.full(len(points), np.nan)
    out: list[list[Destination]] = [[] for _ in moves]
    for j, (groups, values, score) in enumerate(flat):
        out[owner[j]].append(Destination(tuple(groups), dict(values), float(score), int(l0[j]), float(linf[j]),
                                         float(l1[j]), None if np.isnan(cred[j]) else float(cred[j])))
    return [tuple(sorted(d, key=lambda x: (x.linf, x.l1))) for d in out]


def from_sev(layout: GroupLayout, results: Sequence[SEVResult], reference: Reference,
             scorer: VertexScorer) -> list[list[tuple]]:
    """The moves of SEV engine results: each minimal explanation's groups set to the reference's values, with the
    model's score there (``scorer``, the search's vertex scorer: one batched call for every explanation of every
    row)."""
    groups = {g.name: g for g in layout.groups}
    index = {name: i for i, name in enumerate(layout.names)}
    sets = [[e for e in r.explanations if e] for r in results]
    owner = np.array([i for i, row in enumerate(sets) for _ in row], dtype=int)
    if len(owner) == 0:
        return [[] for _ in results]
    masks = np.ones((len(owner), layout.size), dtype=bool)
    for j, e in enumerate(e for row in sets for e in row):
        masks[j, [index[g] for g in e]] = False
    fresh = owner[None, :] == np.arange(len(results))[:, None]
    scores = scorer.scores(np.arange(len(results)), masks, fresh)
    flat = iter(range(len(owner)))
    return [[(tuple(e), {c: reference.values[c] for name in e for c in groups[name].columns},
              float(scores[i, next(flat)])) for e in row] for i, row in enumerate(sets)]


def from_found(found: Found, layout: GroupLayout, candidates: Candidates) -> list[tuple]:
    """The moves of a search result: each flip's groups set to the candidate values it chose, with its score."""
    moves = []
    for flip in found.flips:
        values = {}
        for g, c in zip(flip.groups, flip.choice):
            values.update(candidates.values[g][c])
        moves.append((tuple(layout.names[g] for g in flip.groups), values, flip.score))
    return moves


def spread_seconds(seconds: float, count: int) -> float:
    """A batch's time per row."""
    return float(seconds) / max(1, count)


def summary_row(results: Sequence[ReferenceSEV]) -> dict:
    """The paper's table columns for one kind over many rows: mean SEV (explained rows), median ℓ∞ (rows with a
    numeric move, as the paper; NaN where no explanation moves a number), mean credibility, share explained,
    milliseconds per row.

    Parameters
    ----------
    results : sequence of ReferenceSEV
        One kind's results over many rows.

    Returns
    -------
    dict
        ``rows``, ``explained`` (share), ``mean SEV``, ``median ℓ∞``, ``mean credibility`` and ``ms per row``.
    """
    explained = [r for r in results if r.explainable and r.first is not None]
    linf = [r.first.linf for r in explained if r.first.linf > 0]
    cred = [r.first.credibility for r in explained if r.first.credibility is not None]
    return {"rows": len(results), "explained": len(explained) / max(1, len(results)),
            "mean SEV": float(np.mean([r.value for r in explained])) if explained else float("nan"),
            "median ℓ∞": float(np.median(linf)) if linf else float("nan"),
            "mean credibility": float(np.mean(cred)) if cred else float("nan"),
            "ms per row": 1000 * float(np.mean([r.seconds for r in results])) if results else float("nan")}
