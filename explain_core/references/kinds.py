"""SEV against each kind of reference, for a setup: what is fitted once per explained class (the population's
coordinates, its density, SEV^F's windows, SEV^©'s typical cases), and the explanations of many rows, batched.

Kinds (:data:`REFERENCE_KINDS`): ``single`` (SEV¹, the setup's own reference), ``flexible`` (SEV^F), ``cluster``
(SEV^©), ``tree`` (SEVᵀ: values seen in training that the model's trees lead to; tree models only, see
:func:`available_kinds`). With ``credible`` set, the first three run the credible search (:mod:`.search`) at that
percentile threshold; SEVᵀ's point is measured for credibility but not gated (its exact search knows no density).
The setup's restricted features are held (SEV®) in every kind.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace

import numpy as np
import pandas as pd

from ..cache import Memo, memo_field
from ..errors import IntakeError, check_choice
from ..intake.encoding import encoded_model
from ..sev.cube import VertexScorer
from ..sev.engine import sev_batch
from ..sev.exact_sev import exact_engine
from ..sev.tree_sev import tree_sev
from ..sev.trees import TreeEnsemble, Unreadable
from .credibility import ReferenceDensity, fit_density
from .flexible import FlexibleWindow, flexible_candidates, flexible_windows
from ..results import Explanation
from .outcome import (KIND_LABELS, ClusterSEV, FlexibleSEV, ReferenceSEV, SingleSEV, TreeKindSEV, from_found,
                      from_sev, measure, spread_seconds, summary_row)
from .prototypes import Prototype, PrototypeSet, fit_prototypes
from .search import Candidates, search
from .space import PopulationSpace, population_rows

REFERENCE_KINDS = {"single": "one reference (SEV¹)", "flexible": "a flexible reference (SEV^F)",
                   "cluster": "typical cases (SEV^©)", "tree": "values seen in training (SEVᵀ, tree models)"}


def available_kinds(setup) -> tuple[str, ...]:
    """The kinds this setup's model allows: SEVᵀ only for a tree model the exact engine reads (read once, kept)."""
    try:
        tree = isinstance(exact_engine(setup.model, setup.dataset.layout).read.structure, TreeEnsemble)
    except Unreadable:
        tree = False
    return tuple(k for k in REFERENCE_KINDS if k != "tree" or tree)


@dataclass
class FittedReferences:
    """One explained class's fitted parts, each fitted on the training rows on first use, with its seconds."""

    setup: object = field(repr=False)
    explain_class: int
    seed: int = 0
    tau: float = 0.2
    k: int = 5
    clusters: int | None = None
    statistic: str = "medoid"
    seconds: dict = field(default_factory=dict)
    _parts: dict = field(default_factory=dict, repr=False)
    _candidates: Memo = memo_field("the searches' candidates (SEV¹, SEV^F, each typical case)", max_entries=32)

    @property
    def reference(self):
        return self.setup.reference_of_label(self.explain_class)

    def _fit(self, name: str, build: Callable):
        if name not in self._parts:
            started = time.perf_counter()
            self._parts[name] = build()
            self.seconds[name] = time.perf_counter() - started
        return self._parts[name]

    @property
    def space(self) -> PopulationSpace:
        s = self.setup
        threshold = s.model.threshold if s.dataset.task == "regression" else None
        return self._fit("space", lambda: PopulationSpace.fit(s.dataset, population_rows(
            s.dataset, s.train_rows, self.explain_class, threshold)))

    @property
    def density(self) -> ReferenceDensity:
        s = self.setup
        return self._fit("density", lambda: fit_density(s.dataset, s.train_rows, explain_class=self.explain_class,
                                                        threshold=self._threshold, seed=self.seed))

    @property
    def windows(self) -> tuple[FlexibleWindow, ...]:
        return self._fit("windows", lambda: flexible_windows(self.setup.dataset, self.space.rows, self.reference,
                                                             tau=self.tau, k=self.k))

    @property
    def prototypes(self) -> PrototypeSet:
        s = self.setup
        return self._fit("prototypes", lambda: fit_prototypes(
            s.model, s.dataset, s.train_rows, explain_class=self.explain_class, threshold=self._threshold,
            clusters=self.clusters, statistic=self.statistic, seed=self.seed))

    def candidates(self, prototype: Prototype | None = None) -> Candidates:
        """SEV¹'s candidates of the setup's reference or of a typical case (kept: their model inputs are too)."""
        reference = self.reference if prototype is None else prototype.reference
        return self._candidates.get(("single", None if prototype is None else prototype.number),
                                    lambda: Candidates.of_reference(self.setup.dataset.layout, reference))

    @property
    def flexible(self) -> Candidates:
        """SEV^F's candidates: the windows' grids (kept)."""
        return self._candidates.get(("flexible",), lambda: flexible_candidates(self.setup.dataset, self.reference,
                                                                              self.windows))

    @property
    def _threshold(self):
        return self.setup.model.threshold if self.setup.dataset.task == "regression" else None


def fit_references(setup, label: int, *, tau: float = 0.2, k: int = 5, clusters: int | None = None,
                   statistic: str = "medoid", seed: int = 0) -> FittedReferences:
    """The fitted parts for rows the model predicts ``label`` (explained against the other class)."""
    return FittedReferences(setup, int(label), seed, tau, k, clusters, statistic)


class ReferenceFits(dict):
    """Each predicted class's :class:`FittedReferences`, made on first use with the same options."""

    def __init__(self, setup, **options):
        super().__init__()
        self.setup, self.options = setup, options

    def __missing__(self, label: int) -> FittedReferences:
        self[label] = fit_references(self.setup, label, **self.options)
        return self[label]

    @property
    def seconds(self) -> dict:
        """Fitting seconds per part, summed over the classes fitted so far."""
        out: dict[str, float] = {}
        for fitted in self.values():
            for name, value in fitted.seconds.items():
                out[name] = out.get(name, 0.0) + value
        return out


def explain_kind(setup, queries: pd.DataFrame, kind: str, fitted: dict[int, FittedReferences], *,
                 max_depth: int = 6, credible: float | None = None) -> list[ReferenceSEV]:
    """SEV of every row of ``queries`` against the ``kind`` of reference, one batch per predicted class
    (``fitted`` maps each class to its :class:`FittedReferences`, missing classes are fitted here)."""
    check_choice(kind, REFERENCE_KINDS, "reference kind")
    if kind not in available_kinds(setup):
        raise IntakeError("SEVᵀ needs a tree model (a tree ensemble whose trees this app reads); this model is not "
                          "one. Choose another kind of reference.")
    labels = _labels(setup, queries) if len(queries) else np.zeros(0, dtype=int)
    out: list[ReferenceSEV | None] = [None] * len(queries)
    for label in np.unique(labels):
        at = np.flatnonzero(labels == label)
        if isinstance(fitted, ReferenceFits) or int(label) in fitted:
            part = fitted[int(label)]
        else:
            part = fitted.setdefault(int(label), fit_references(setup, int(label)))
        found = _EXPLAINERS[kind](setup, _rows(queries, at), part, max_depth, credible)
        for i, result in zip(at, found):
            out[i] = result
    return out


def _rows(queries: pd.DataFrame, at: np.ndarray) -> pd.DataFrame:
    """The rows at positions ``at`` (ascending): the frame itself when they are all of its rows (no copy)."""
    return queries if len(at) == len(queries) else queries.iloc[at]


def _labels(setup, queries: pd.DataFrame) -> np.ndarray:
    """The model's labels, read off the dataset's encoded rows when the model's encoding is traced (no
    preprocessing call for rows of the data)."""
    model, layout = setup.model, setup.dataset.layout
    encoded = encoded_model(model, layout.groups)
    if encoded is None:
        return model.label(queries)
    X = encoded.encode_rows(queries, setup.dataset.features, list(model.columns))
    return model.labels_of(model.scores_of(encoded.estimator, X))


def _common(setup, fitted: FittedReferences, credible: float | None) -> dict:
    return {"restricted": tuple(setup.restricted), "threshold": credible}



def _single(setup, queries, fitted, max_depth, credible) -> list[SingleSEV]:
    ref, density, space = fitted.reference, fitted.density, fitted.space
    started = time.perf_counter()
    if credible is None:
        scorer = VertexScorer(setup.model, setup.dataset.layout, queries, ref)
        results = sev_batch(setup.model, setup.dataset.layout, queries, ref, kind="minus",
                            restricted=setup.restricted, max_depth=max_depth, keep_scores=False, scorer=scorer)
        moves = from_sev(setup.dataset.layout, results, ref, scorer)
        plain = [(r.value, r.status, r.explained_class, r.max_depth, None) for r in results]
    else:
        candidates = fitted.candidates()
        results = _search(setup, queries, candidates, fitted, max_depth, credible)
        moves = [from_found(f, setup.dataset.layout, candidates) for f in results]
        plain = [(f.value, f.status, f.explained_class, f.max_depth, f.credible) for f in results]
    out = _measured(setup, queries, moves, space, density)
    seconds = spread_seconds(time.perf_counter() - started, len(queries))
    return [SingleSEV(v, st, c, d, q, ref, dest, credible=cr, seconds=seconds, **_common(setup, fitted, credible))
            for (v, st, c, d, cr), (q, dest) in zip(plain, out)]


def _flexible(setup, queries, fitted, max_depth, credible) -> list[FlexibleSEV]:
    ref, density, space = fitted.reference, fitted.density, fitted.space
    candidates = fitted.flexible
    started = time.perf_counter()
    found = _search(setup, queries, candidates, fitted, max_depth, credible)
    out = _measured(setup, queries, [from_found(f, setup.dataset.layout, candidates) for f in found], space, density)
    seconds = spread_seconds(time.perf_counter() - started, len(queries))
    return [FlexibleSEV(f.value, f.status, f.explained_class, f.max_depth, q, ref, dest, credible=f.credible,
                        seconds=seconds, tau=fitted.tau, k=fitted.k, **_common(setup, fitted, credible))
            for f, (q, dest) in zip(found, out)]


def _cluster(setup, queries, fitted, max_depth, credible) -> list[ClusterSEV]:
    """SEV¹ of each row against its assigned typical case: one batch per prototype."""
    prototypes = fitted.prototypes
    started = time.perf_counter()
    assigned, distance = prototypes.assign(queries)
    out: list[ClusterSEV | None] = [None] * len(queries)
    for k in np.unique(assigned):
        at = np.flatnonzero(assigned == k)
        proto = prototypes.prototypes[k]
        for i, r in zip(at, _single(setup, _rows(queries, at), _Proxy(fitted, proto), max_depth, credible)):
            out[i] = ClusterSEV(**{f.name: getattr(r, f.name) for f in fields(r)}, prototype=proto.number,
                                assigned_distance=float(distance[i]))
    seconds = spread_seconds(time.perf_counter() - started, len(queries))
    return [replace(r, seconds=seconds) for r in out]


def _tree(setup, queries, fitted, max_depth, credible) -> list[TreeKindSEV]:
    """SEVᵀ of each row (one exact search a row, candidate values from the training rows), measured as the other
    kinds; ``max_depth`` does not bound it and ``credible`` does not gate it."""
    started = time.perf_counter()
    found = [tree_sev(setup.model, setup.dataset, queries.iloc[[i]], setup.train_rows, restricted=setup.restricted)
             for i in range(len(queries))]
    moves = [[(t.moved, t.point, t.score)] if t.status == "explained" else [] for t in found]
    out = _measured(setup, queries, moves, fitted.space, fitted.density)
    seconds = spread_seconds(time.perf_counter() - started, len(queries))
    return [TreeKindSEV(t.value, t.status, t.explained_class, setup.dataset.layout.size, q, fitted.reference, dest,
                        seconds=seconds, engine=t.engine, restricted=tuple(setup.restricted))
            for t, (q, dest) in zip(found, out)]


class _Proxy:
    """The fitted parts of a class with a typical case in place of the setup's reference."""

    def __init__(self, fitted: FittedReferences, prototype: Prototype):
        self.space, self.density, self.reference = fitted.space, fitted.density, prototype.reference
        self.explain_class = fitted.explain_class
        self._fitted, self._prototype = fitted, prototype

    def candidates(self) -> Candidates:
        return self._fitted.candidates(self._prototype)


def _search(setup, queries, candidates, fitted, max_depth, credible):
    """:func:`~.search.search` of rows the model predicts ``fitted.explain_class`` (as :func:`explain_kind` groups
    them)."""
    return search(setup.model, setup.dataset.layout, queries, candidates, fitted.space, restricted=setup.restricted,
                  max_depth=max_depth, density=fitted.density, threshold=credible,
                  classes=np.full(len(queries), fitted.explain_class))


def _measured(setup, queries: pd.DataFrame, moves: Sequence[list], space, density) -> list[tuple[pd.Series, tuple]]:
    """Each row as a Series with its moves measured (:func:`~.outcome.measure`), in one batch."""
    measured = measure(queries, moves, space, density)
    return [(queries.iloc[i], measured[i]) for i in range(len(queries))]


@dataclass(frozen=True)
class KindsTable(Explanation):
    """The kinds side by side over many rows (the paper's tables): per kind, mean SEV, median ℓ∞, mean credibility,
    share explained and milliseconds per row; the one-off fitting seconds apart."""

    rows: np.ndarray
    table: pd.DataFrame
    fit_seconds: dict
    credible: float | None = None
    results: dict | None = field(default=None, repr=False, compare=False)

    method = "SEV against each kind of reference (dataset-wide)"
    meta_parameters = ("credible",)


def compare_kinds(setup, rows: Sequence[int], fitted: ReferenceFits, *, kinds: Sequence[str] | None = None,
                  max_depth: int = 6, credible: float | None = None, progress=None) -> KindsTable:
    """Every kind the model allows (:func:`available_kinds`; and, with ``credible``, each credible search too) on
    the same rows."""
    rows = np.asarray(rows, dtype=int)
    queries = setup.dataset.features.iloc[rows]
    kinds = available_kinds(setup) if kinds is None else kinds
    gated = [kind for kind in kinds if kind != "tree"] if credible is not None else []
    runs = [(kind, None) for kind in kinds] + [(kind, credible) for kind in gated]
    lines, results = [], {}
    for i, (kind, gate) in enumerate(runs):
        found = explain_kind(setup, queries, kind, fitted, max_depth=max_depth, credible=gate)
        label = KIND_LABELS[kind] + (" (credible)" if gate is not None else "")
        results[label] = tuple(found)
        lines.append({"kind": label, **summary_row(found)})
        if progress is not None:
            progress((i + 1) / len(runs), f"{label}: {len(rows)} rows done")
    table = pd.DataFrame(lines).set_index("kind") if lines else pd.DataFrame()
    return KindsTable(rows, table, fitted.seconds, credible, results)


_EXPLAINERS = {"single": _single, "flexible": _flexible, "cluster": _cluster, "tree": _tree}
