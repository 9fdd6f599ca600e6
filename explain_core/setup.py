"""What the analyst chose once (:class:`Setup`: data, model, reference, restricted groups) and every knob of every
method (:class:`Parameters`, with the seeds), and the builders of setups: a bundled demo, a model trained here,
or a model file — each with the one model-key scheme of :func:`~explain_core.intake.demo_models.model_key`.

``Parameters`` splits into one small hashable object per method (``params.sev``, ``params.lens``,
``params.linear``, ``params.baselines``): what each method reads, and the cache key of its results.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from .cache import Memo, memo_field
from .errors import IntakeError, NonFiniteScores, check_between, check_choice, check_count
from .limits import limits, over
from .intake.data import Dataset, find_value, load_demo
from .intake.demo_models import TrainedModel, demo_model, evaluate, model_key, train_model
from .intake.loading import load_model_bytes
from .intake.models import ModelAdapter, default_threshold, wrap_model
from .intake.tables import safe_name
from .lens import CORRECTIONS, DIRECTIONS, default_max_size
from .lens.search import DEFAULT_BUDGET_ROWS
from .reference import Reference, check_restricted, make_reference
from .results import to_jsonable
from .sev.cube import one_row
from .sev.dispatch import METHODS as SEV_METHODS
from .sev.engine import DEFAULT_MAX_DEPTH
from .sev.exact_sev import DEFAULT_BUDGET
from .views.vocabulary import format_significant

if TYPE_CHECKING:
    from .sparse.compare import SparseOrigin

LINEAR_METHODS = {"iht": ("iht",), "exact": ("exact",), "both": ("iht", "exact")}
DEFAULT_DEMO = ("compas", "gbdt")
# the model_key of a setup whose threshold was moved (Setup.with_threshold) ends "|threshold <the model's own>→<new>"
MOVED_THRESHOLD = re.compile(r"\|threshold ([^|:→]+)→([^|:→]+)$")


@dataclass(frozen=True)
class Setup:
    """What the analyst chose once: data, model (with its split and metrics), reference, restricted groups.

    ``model_key`` identifies the model's content (:func:`~explain_core.intake.demo_models.model_key`); ``source``
    says in words where the model came from.
    """

    dataset: Dataset
    model: ModelAdapter
    reference: Reference
    train_rows: np.ndarray
    test_rows: np.ndarray
    metrics: dict
    model_key: str
    source: str
    restricted: tuple[str, ...] = ()
    training: SparseOrigin | None = field(default=None, compare=False, repr=False)  # trained on the Sparser page
    mirrors: Memo = memo_field("references of the other class (reference_of_label)", max_entries=4)
    fits: Memo = memo_field("reference fits of the other kinds of reference (analysis.reference_fits)",
                            max_entries=4)

    @cached_property
    def key(self) -> str:
        """Content hash of the data, model, split and reference (not ``restricted``, which only SEV® reads:
        pass it beside this key where it matters), the cache key of every result."""
        ref = self.reference
        text = json.dumps([self.dataset.content_hash, self.dataset.positive_class, self.model_key,
                           sorted((k, str(v)) for k, v in ref.values.items()), ref.statistic, ref.population,
                           hashlib.sha1(np.asarray(self.train_rows).tobytes()).hexdigest()], default=str)
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    def with_reference(self, reference: Reference) -> "Setup":
        return replace(self, reference=reference)

    def reference_for(self, query: pd.DataFrame) -> Reference:
        """The reference a row is explained against (SEV §3: a typical member of the other class).

        ``reference`` for a row predicted in the class it was built to explain; for a row predicted in the
        other class, the same statistic over the training rows of *that row's* opposite class (SEV is
        symmetric). Custom values apply to ``reference`` only; a reference over all rows serves every row.
        """
        return self.reference_of_label(int(self.model.label(one_row(query))[0]))

    def reference_of_label(self, label: int) -> Reference:
        """:meth:`reference_for` a row the model predicts ``label`` (0/1; a regression's 1: at or above threshold)."""
        ref = self.reference
        if ref.population != "opposite" or label == ref.explain_class:
            return ref
        return self.mirrors.get(label, lambda: make_reference(
            self.dataset, self.train_rows, statistic=ref.statistic, population="opposite", explain_class=label,
            threshold=ref.threshold, rounded=ref.rounded))

    def with_restricted(self, names: Sequence[str]) -> "Setup":
        return replace(self, restricted=check_restricted(self.dataset, names))

    def explainable_classes(self) -> list:
        """The target's classes a multiclass model can be explained for (one against the rest); empty for a
        binary or regression model (including one trained here on positive-vs-rest)."""
        classes = getattr(self.model.estimator, "classes_", None)
        if self.dataset.task != "classification" or classes is None or len(classes) < 3:
            return []
        return [c for c in sorted(pd.unique(self.dataset.target), key=str) if find_value(c, list(classes)) is not None]

    def with_positive_class(self, value) -> "Setup":
        """The same data and multiclass model explained for class ``value`` against the rest: the model's score is
        that class's probability, and the metrics, the reference (same statistic and population, no custom
        values) and the restricted features follow."""
        options = self.explainable_classes()
        match = find_value(value, options)
        if match is None:
            raise IntakeError(f"This model cannot be explained for class {value!r}; choose one of: "
                              f"{', '.join(map(str, options)) or 'none (it is not a multiclass model)'}.")
        dataset = replace(self.dataset, positive_class=match)
        m = self.model
        model = wrap_model(m.estimator, dataset, encoder=m.encoder, threshold=m.threshold, score_kind=m.score_kind,
                           positive_class=find_value(match, list(m.estimator.classes_)), name=m.name)
        reference = make_reference(dataset, self.train_rows, statistic=self.reference.statistic,
                                   population=self.reference.population, rounded=self.reference.rounded)
        return Setup(dataset, model, reference, self.train_rows, self.test_rows,
                     evaluate(model, dataset, self.train_rows, self.test_rows, self.metrics.get("test_rows")),
                     self.model_key, self.source, self.restricted)

    def with_threshold(self, threshold: float) -> "Setup":
        """The same model labelling a row positive at score ≥ ``threshold`` (a classifier at its default threshold:
        its own ``predict``; a regression: prediction ≥ ``threshold``), applied by the adapter (also to an uploaded
        model in its sandbox, not reloaded). ``model_key`` (hence :attr:`key`) names the new threshold; back at
        the model's own threshold it is the original key. The metrics are evaluated again; an opposite-side
        reference of a regression is rebuilt (a classifier's opposite class is the true class: it stays);
        restricted features and custom reference values are kept."""
        t, m, data, ref = float(threshold), self.model, self.dataset, self.reference
        if not np.isfinite(t):
            raise IntakeError(f"The decision threshold must be a finite number, not {threshold}.")
        if t == m.threshold:
            return self
        moved = MOVED_THRESHOLD.search(self.model_key)
        base_key, base = self.model_key[:moved.start()] if moved else self.model_key, self.own_threshold
        model = replace(m, threshold=t, custom_threshold=data.task == "classification"
                        and t != default_threshold(m.score_kind))
        if ref.threshold is not None:  # a regression's reference from the other side of the threshold
            ref = make_reference(data, self.train_rows, statistic=ref.statistic, population=ref.population,
                                 explain_class=ref.explain_class, threshold=t, overrides=ref.overrides,
                                 rounded=ref.rounded)
        key = base_key if t == base else f"{base_key}|threshold {base!r}→{t!r}"
        return Setup(data, model, ref, self.train_rows, self.test_rows,
                     evaluate(model, data, self.train_rows, self.test_rows, self.metrics.get("test_rows")),
                     key, self.source, self.restricted, self.training)

    @property
    def chosen_threshold(self) -> float | None:
        """The threshold :meth:`with_threshold` moved the model to; None when it is the model's own."""
        return self.model.threshold if MOVED_THRESHOLD.search(self.model_key) else None

    @property
    def own_threshold(self) -> float:
        """The model's own threshold (before :meth:`with_threshold`)."""
        moved = MOVED_THRESHOLD.search(self.model_key)
        return float(moved.group(1)) if moved else self.model.threshold

    @property
    def class_names(self) -> tuple[str, str]:
        """Labels 0 and 1 in words (the data card's, else ``<target> = <value>``; below / at or above the threshold
        for a regression)."""
        if self.dataset.task == "classification":
            return self.dataset.class_name(0), self.dataset.class_name(1)
        return "below threshold", "at or above threshold"

    @property
    def score_label(self) -> str:
        """What the model's score is: ``P(recidivated)`` (the data card's short class label), a decision value or a
        prediction."""
        if self.model.score_kind == "proba":
            return f"P({self.dataset.class_name(1, short=True)})"
        return "decision value" if self.model.score_kind == "decision" else "prediction"

    def score_value(self, score: float, digits: int = 2) -> str:
        """The score alone: ``0.73`` (a probability to ``digits`` decimals), else ``digits + 2`` significant digits,
        never in scientific notation (``244900``)."""
        return f"{score:.{digits}f}" if self.model.score_kind == "proba" else format_significant(score, digits + 2)

    def score_text(self, score: float, digits: int = 2) -> str:
        """The model's score in words: ``P(recidivated) = 0.73``, or ``prediction = 244900``."""
        return f"{self.score_label} = {self.score_value(score, digits)}"

    def query(self, row: int) -> pd.DataFrame:
        """Row ``row`` (position in the dataset) as a one-row frame of feature values."""
        if not 0 <= int(row) < len(self.dataset.features):
            raise IntakeError(f"Row {row} is not in the data; choose a row between 0 and "
                              f"{len(self.dataset.features) - 1}.")
        return self.dataset.features.iloc[[int(row)]]

    def summary(self) -> dict:
        """What a reader needs to know about the setup: data, model, metrics, reference, restricted groups."""
        data = self.dataset
        return {"dataset": data.name, "rows": len(data.features), "features": len(data.groups),
                "target": str(data.target.name), "task": data.task, "positive_class": to_jsonable(data.positive_class),
                "model": self.model.name, "model_source": self.source, "model_key": self.model_key,
                "threshold": self.model.threshold, "label_rule": self.model.rule,
                "metrics": to_jsonable(self.metrics), "reference": self.reference.description,
                "reference_values": to_jsonable(self.reference.values), "restricted": list(self.restricted),
                "train_rows": len(self.train_rows), "test_rows": len(self.test_rows)}

    __json__ = summary  # a setup in a JSON export is its summary (never the model)


# ---------------------------------------------------------------------------------------------------
# Building setups (one model-key scheme: training.model_key)

def make_setup(dataset: Dataset, trained: TrainedModel, *, reference: Reference | None = None,
               statistic: str = "mean", population: str = "opposite", restricted: Sequence[str] = ()) -> Setup:
    """A setup from a fitted model; the reference by default: the training rows of the opposite class (for a
    regression, the other side of the model's threshold), mean/mode (SEV §4)."""
    reference = reference or make_reference(dataset, trained.train_rows, statistic=statistic, population=population,
                                            threshold=trained.model.threshold)
    return Setup(dataset, trained.model, reference, np.asarray(trained.train_rows), np.asarray(trained.test_rows),
                 dict(trained.metrics), trained.key, trained.source, check_restricted(dataset, restricted))


def demo_setup(name: str = DEFAULT_DEMO[0], kind: str = DEFAULT_DEMO[1], *, seed: int = 0) -> Setup:
    """A bundled dataset with its demo model (trained once, cached on disk) and the default reference."""
    dataset = load_demo(name)
    return make_setup(dataset, demo_model(dataset, kind, seed=seed))


def trained_setup(dataset: Dataset, kind: str, *, seed: int = 0, restricted: Sequence[str] = ()) -> Setup:
    """A model of ``kind`` trained here on ``dataset`` (seeded split), with the default reference."""
    return make_setup(dataset, train_model(dataset, kind, seed=seed), restricted=restricted)


def model_from_upload(dataset: Dataset, data: bytes, filename: str, *, seed: int = 0, threshold: float | None = None,
                      positive_class=None, trusted: bool | None = None, trusted_types: Sequence[str] = (),
                      by_order: bool = False, unseen: bool = False) -> TrainedModel:
    """A model file's bytes loaded safely (:func:`~explain_core.intake.loading.load_model_bytes`), wrapped for
    ``dataset`` (``by_order``: unnamed inputs are the dataset's columns in order), checked on a few rows, and
    evaluated; keyed by the file's content and the wrapping choices.

    Its test rows (``metrics["test_rows"]``): the dataset's hold-out when it has one; every row when ``unseen``
    (the analyst says the model saw none of them; the seeded split's training rows still build the reference);
    else the seeded split, which the model may have been trained on (``may_be_seen``: pages say so)."""
    name = safe_name(filename, "model")
    estimator = load_model_bytes(data, name, trusted=trusted, trusted_types=trusted_types)
    model = wrap_model(estimator, dataset, threshold=threshold, positive_class=positive_class, name=name,
                       by_order=by_order)
    check_model(model, dataset, name)
    train, test = dataset.split(seed)
    kind = "holdout" if dataset.holdout is not None else "unseen" if unseen else "may_be_seen"
    if kind == "unseen":
        test = np.arange(len(dataset.features))
    digest = hashlib.sha1(bytes(data)).hexdigest()[:16]
    key = model_key("file", digest, f"threshold={threshold}", f"positive={positive_class}", f"order={by_order}",
                    f"test={kind}", seed)
    return TrainedModel(model, train, test, evaluate(model, dataset, train, test, kind), seed, key,
                        f"uploaded {name}", dataset.key)


def check_model(model: ModelAdapter, dataset: Dataset, name: str, rows: int = 20) -> None:
    """Score the first rows at upload time: a model that raises, returns the wrong shape or NaN/inf is refused
    now, with a message naming the problem, not on the first explanation."""
    try:
        model.score(dataset.features.iloc[:rows])
    except NonFiniteScores as exc:
        raise IntakeError(f"{name} returned NaN or infinite scores for {exc.count} of the dataset's first {exc.total} "
                          "rows, so its decisions cannot be explained; check how it handles these values.") from None


def file_setup(dataset: Dataset, path, *, seed: int = 0, trusted: bool | None = None,
               restricted: Sequence[str] = (), by_order: bool = False, unseen: bool = False) -> Setup:
    """A setup from a model file on disk (``.skops``, ``.onnx``, a booster's own file; pickles only in trusted
    mode); ``unseen`` as in :func:`model_from_upload`."""
    path = Path(path)
    trained = model_from_upload(dataset, path.read_bytes(), path.name, seed=seed, trusted=trusted, by_order=by_order,
                                unseen=unseen)
    return make_setup(dataset, replace(trained, source=f"{trained.model.name} (model file)"), restricted=restricted)


# ---------------------------------------------------------------------------------------------------
# Parameters: every knob, and one hashable object per method

@dataclass(frozen=True)
class SEVParameters:
    """What SEV reads: the engine (``auto``, ``bfs``, ``exact``: :mod:`~explain_core.sev.dispatch`), the breadth-first
    search depth, and the exact engine's budget per search (CP-SAT deterministic seconds: the same answer on any
    machine)."""

    max_depth: int = DEFAULT_MAX_DEPTH
    sev_method: str = "auto"
    sev_budget: float = DEFAULT_BUDGET


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
    """What LIME and SHAP read: LIME's samples, SHAP's background rows, the seed."""

    lime_samples: int = 5000
    shap_background: int = 100
    seed: int = 0


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


@dataclass(frozen=True)
class CounterfactualParameters:
    """What DiCE reads: its model-agnostic method (``random`` or ``genetic``), how many counterfactuals, the seed."""

    dice_method: str = "random"
    dice_count: int = 4
    seed: int = 0


def check_reference_parameters(p) -> None:
    """Valid reference kind, τ, k, number of typical cases, credible threshold and DiCE settings."""
    from .counterfactuals import DICE_METHODS
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
        check_choice(self.linear_method, LINEAR_METHODS, "linear method")
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
                ("The SEV search depth", self.max_depth, caps.sev_depth, "search fewer layers.")):
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


def lens_max_size(setup: Setup, params: LensParameters | Parameters) -> int:
    """The largest factor LENS searches: the parameter, or all subsets up to 12 groups and 3 beyond."""
    return default_max_size(len(setup.dataset.groups)) if params.lens_max_size is None else params.lens_max_size
