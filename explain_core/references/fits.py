"""What SEV against each kind of reference fits once per explained class ("Improving Decision Sparsity"): the
population's coordinates, its density, SEV^F's windows and candidates, SEV^©'s typical cases, each fitted on the
training rows on first use and timed (:class:`FittedReferences`, one class; :class:`ReferenceFits`, every class).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..cache import Memo, memo_field
from ..errors import check_choice
from .credibility import ReferenceDensity, fit_density
from .flexible import FlexibleWindow, flexible_candidates, flexible_windows
from .prototypes import ASSIGNMENTS, DEFAULT_ASSIGNMENT, Clustering, Prototype, PrototypeSet, fit_prototypes
from .search import Candidates
from .space import PopulationSpace, population_rows


@dataclass
class FittedReferences:
    """One explained class's fitted parts, each fitted on the training rows on first use, with its seconds.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    explain_class : int
        The predicted class explained.
    seed : int
        The fits' seed.
    tau, k
        SEV^F's window.
    clusters : int, optional
        SEV^©'s K.
    statistic : str
        The typical cases' statistic.
    assignment : str
        The typical-case assignment (:data:`~.prototypes.ASSIGNMENTS`).
    seconds : dict
        Fitting seconds per part.
    """

    setup: object = field(repr=False)
    explain_class: int
    seed: int = 0
    tau: float = 0.2
    k: int = 5
    clusters: int | None = None
    statistic: str = "medoid"
    assignment: str = DEFAULT_ASSIGNMENT
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
        clustering = Clustering(clusters=self.clusters, statistic=self.statistic, seed=self.seed,
                                assignment=self.assignment)
        return self._fit("prototypes", lambda: fit_prototypes(
            s.model, s.dataset, s.train_rows, explain_class=self.explain_class, threshold=self._threshold,
            clustering=clustering))

    def candidates(self, prototype: Prototype | None = None) -> Candidates:
        """SEV¹'s candidates of the setup's reference or of a typical case (kept: their model inputs are too).

        Parameters
        ----------
        prototype : Prototype, optional
            A typical case (None: the setup's reference).

        Returns
        -------
        Candidates
            Its candidates.
        """
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
                   statistic: str = "medoid", seed: int = 0, assignment: str = DEFAULT_ASSIGNMENT) -> FittedReferences:
    """The fitted parts for rows the model predicts ``label`` (explained against the other class); SEV^©'s rows
    are assigned their typical case by ``assignment`` (:data:`~.prototypes.ASSIGNMENTS`), which also sets how many
    typical cases ``clusters=None`` fits (:func:`~.prototypes.fit_prototypes`).

    Parameters
    ----------
    setup, tau, k, clusters, statistic, seed
        As :class:`FittedReferences`.
    label : int
        The predicted class explained (``explain_class``).
    assignment : str
        ``"nearest"`` or ``"sparsest"``.

    Returns
    -------
    FittedReferences
        The parts, each fitted on first use.

    Raises
    ------
    IntakeError
        When ``assignment`` is unknown.
    """
    check_choice(assignment, ASSIGNMENTS, "typical-case assignment")
    return FittedReferences(setup, int(label), seed, tau, k, clusters, statistic, assignment)


class ReferenceFits(dict):
    """Each predicted class's :class:`FittedReferences`, made on first use with the same options.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    **options
        :func:`fit_references`'s options.
    """

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
