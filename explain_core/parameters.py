"""Every knob of every method, with the seeds (:class:`Parameters`), each checked against its range and the
operator's limits when made; ``Parameters`` splits into one small hashable object per method (``params.sev``,
``params.lens``, ``params.linear``, ``params.baselines``, …): what each method reads, and the cache key of its
results."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np

from .counterfactuals import DICE_METHODS, CounterfactualParameters
from .errors import IntakeError, check_between, check_choice, check_count
from .lens import CORRECTIONS, DIRECTIONS
from .lens.search import DEFAULT_BUDGET_ROWS, FactorSearch
from .limits import limits, over
from .sev.dispatch import METHODS as SEV_METHODS
from .sev.dispatch import SEVParameters
from .sev.engine import DEFAULT_MAX_DEPTH

LINEAR_METHODS = {"iht": ("iht",), "exact": ("exact",), "both": ("iht", "exact")}

@dataclass(frozen=True)
class LensParameters:
    """What LENS reads: context, references (seeded), τ, α (None = exact mode) with its multiple-testing
    correction, the largest factor, and the layered search's budget (model rows scored, wide data)."""

    lens_direction: str = "r2i"
    lens_references: int = 100
    tau: float = 0.9
    alpha: float | None = None
    lens_max_size: int | None = None
    seed: int = 0
    lens_correction: str = "holm"
    lens_budget_rows: int = DEFAULT_BUDGET_ROWS

    @property
    def factor_search(self) -> FactorSearch:
        """The layered search's settings from these: the context, τ, α with its correction, the largest factor and
        the budget (the search's own defaults for the rest).

        Returns
        -------
        FactorSearch
            What :func:`~explain_core.lens.search.search_factors` and :func:`~explain_core.lens.search.plan_search`
            read.
        """
        return FactorSearch(direction=self.lens_direction, tau=self.tau, alpha=self.alpha,
                            correction=self.lens_correction, max_size=self.lens_max_size,
                            budget_rows=self.lens_budget_rows)


@dataclass(frozen=True)
class LinearParameters:
    """What the linear explanations read: σ, k, m, the method(s), the exact fit's time limit, the seed."""

    sigma: float = 1.0
    k: int = 5
    m: int = 5000
    linear_method: str = "both"
    time_limit: float = 10.0
    seed: int = 0


@dataclass(frozen=True)
class BaselineParameters:
    """What LIME and SHAP read: LIME's samples, SHAP's background rows, the seed, and the order LIME-C / SHAP-C
    align features in (:data:`FLIP_ORDER_NAMES`)."""

    lime_samples: int = 5000
    shap_background: int = 100
    seed: int = 0
    flip_order: str = "absolute"


FLIP_ORDER_NAMES = {"absolute": "by |attribution|, the product's default (SEV §5.4: from the most important feature)",
                    "signed": "by attribution toward the predicted class, the paper's ordering (the authors' LIME "
                              "ranked by signed weight; bench/sev_fig4.py)"}
"""LIME-C / SHAP-C's orders (:data:`~explain_core.baselines.FLIP_ORDERS`), each named."""


@dataclass(frozen=True)
class ReferenceParameters:
    """What SEV against other kinds of reference reads ("Improving Decision Sparsity"), the depth and the seed."""

    reference_kind: str = "single"  # single, flexible (SEV^F), cluster (SEV^©) or tree (SEVᵀ)
    flex_tau: float = 0.2  # SEV^F's window half-width τ (quantile rank)
    flex_k: int = 5  # SEV^F's values per window
    clusters: int | None = None  # SEV^©'s typical cases; None: by the assignment's rule
    cluster_assignment: str = "sparsest"  # SEV^©: nearest or sparsest (explain_core.references.ASSIGNMENTS)
    credible: float | None = None  # the credible search's percentile threshold; None: off
    max_depth: int = DEFAULT_MAX_DEPTH
    seed: int = 0


def check_reference_parameters(p) -> None:
    """Valid reference kind, τ, k, number of typical cases, credible threshold and DiCE settings."""
    from .references import ASSIGNMENTS, REFERENCE_KINDS, check_flexible

    check_choice(p.reference_kind, REFERENCE_KINDS, "reference kind")
    check_choice(p.cluster_assignment, ASSIGNMENTS, "typical-case assignment")
    check_choice(p.dice_method, DICE_METHODS, "DiCE method")
    check_flexible(p.flex_tau, p.flex_k)
    for what, count in (("The number of typical cases", p.clusters), ("The number of DiCE counterfactuals",
                                                                       p.dice_count)):
        if count is not None:
            check_count(count, 1, what)
            check_between(count, what, 1, 20)
    if p.credible is not None:
        check_between(p.credible, "The credible threshold", 0, 1, below=True)


@dataclass(frozen=True)
class Parameters(CounterfactualParameters, ReferenceParameters, BaselineParameters, LinearParameters, LensParameters,
                 SEVParameters):
    """Every knob of every method, with the seeds: the report prints these to make each number reproducible.

    The fields are those of the per-method parts (one ``seed`` shared by all): ``alpha`` None = LENS exact mode
    (PS ≥ τ), else the binomial test at level α with ``lens_correction`` ``holm`` (family-wise per input) or
    ``none``; ``lens_max_size`` None = all subsets up to 12 groups, else the layered search within
    ``lens_budget_rows`` model rows scored (LENS; the same answer on any machine); ``linear_method`` is ``iht``,
    ``exact`` or ``both``. ``sev``, ``lens``, ``linear`` and ``baselines`` are the parts each method reads
    (hashable cache keys).
    """

    def __post_init__(self):
        check_choice(self.lens_direction, DIRECTIONS, "LENS context")
        check_choice(self.lens_correction, CORRECTIONS, "multiple-testing correction")
        if not (isinstance(self.lens_budget_rows, (int, np.integer)) and self.lens_budget_rows > 0):
            raise IntakeError("The LENS search budget must be a positive whole number of model rows, not "
                              f"{self.lens_budget_rows!r}.")
        if not (isinstance(self.sev_budget_rows, (int, np.integer)) and self.sev_budget_rows > 0):
            raise IntakeError("The SEV search budget must be a positive whole number of model rows, not "
                              f"{self.sev_budget_rows!r}.")
        check_choice(self.linear_method, LINEAR_METHODS, "linear method")
        check_choice(self.flip_order, FLIP_ORDER_NAMES, "LIME-C / SHAP-C order")
        check_choice(self.sev_method, SEV_METHODS, "SEV method")
        if not self.sev_budget > 0:
            raise IntakeError(f"The exact SEV budget must be a positive number of seconds, not {self.sev_budget}.")
        self._check_ranges()
        self._check_bounds(limits())

    def _check_ranges(self) -> None:
        """Each knob's own range, each refused with a message that names it (NaN is in no range)."""
        for what, value, least in (("k", self.k, 1), ("m", self.m, 10), ("The SEV search depth", self.max_depth, 1),
                                   ("The number of LENS references", self.lens_references, 1),
                                   ("The number of LIME samples", self.lime_samples, 10),
                                   ("The number of SHAP background rows", self.shap_background, 1)):
            check_count(value, least, what)
        check_between(self.sigma, "σ", 0)
        check_between(self.tau, "τ", 0, 1, above=True)
        if self.alpha is not None:
            check_between(self.alpha, "The test level α", 0, 1, above=True, below=True)
        check_between(self.time_limit, "The exact linear fit's time limit (s)", 0, above=True)

    def _check_bounds(self, caps) -> None:
        """Every knob that sets an amount of work within the operator's limits (each a clear message)."""
        for what, value, limit, fix in (
                ("The number of LIME samples", self.lime_samples, caps.linear_samples, "use fewer samples."),
                ("The number of SHAP background rows", self.shap_background, caps.shap_background,
                 "use fewer background rows."),
                ("The number of linear samples m", self.m, caps.linear_samples, "use a smaller m."),
                ("The number of LENS references", self.lens_references, caps.lens_samples, "use fewer references."),
                ("The exact linear fit's time limit (s)", self.time_limit, caps.run_seconds, "use a shorter limit."),
                ("The LENS search budget (model rows)", self.lens_budget_rows, caps.lens_rows,
                 "use a smaller budget."),
                ("The SEV search depth", self.max_depth, caps.sev_depth, "search fewer layers."),
                ("The SEV search budget (model rows)", self.sev_budget_rows, caps.sev_search_rows,
                 "use a smaller budget.")):
            if value > limit:
                raise over(what, value, limit, fix)
        check_reference_parameters(self)

    def _part(self, kind):
        return kind(**{f.name: getattr(self, f.name) for f in fields(kind)})

    @property
    def sev(self) -> SEVParameters:
        return self._part(SEVParameters)

    @property
    def lens(self) -> LensParameters:
        return self._part(LensParameters)

    @property
    def linear(self) -> LinearParameters:
        return self._part(LinearParameters)

    @property
    def baselines(self) -> BaselineParameters:
        return self._part(BaselineParameters)

    @property
    def references(self) -> ReferenceParameters:
        return self._part(ReferenceParameters)

    @property
    def counterfactuals(self) -> CounterfactualParameters:
        return self._part(CounterfactualParameters)

    def as_dict(self) -> dict:
        return asdict(self)
