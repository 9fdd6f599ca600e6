"""What the analyst chose once (:class:`Setup`: data, model, reference, restricted groups), and the builders of
setups: a bundled demo, a model trained here, or a model file — each with the one model-key scheme of
:func:`~explain_core.intake.demo_models.model_key`. Every knob of every method (:class:`Parameters`) lives in
:mod:`~explain_core.parameters` and is importable from here too.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np
import pandas as pd

from .cache import Memo, memo_field
from .errors import IntakeError, NonFiniteScores
from .intake.data import Dataset, find_value
from .intake.demos import load_demo
from .intake.demo_models import demo_model, train_model
from .intake.loading import load_model_bytes
from .intake.models import ModelAdapter, default_threshold, wrap_model
from .intake.tables import safe_name
from .intake.trained import TrainedModel, evaluate, model_key
from .lens import default_max_size
# the parameters, also importable from here as before they had their own module
from .vertices import ProgressFn, one_row
from .parameters import LINEAR_METHODS as LINEAR_METHODS
from .parameters import BaselineParameters as BaselineParameters
from .parameters import CounterfactualParameters as CounterfactualParameters
from .parameters import LensParameters as LensParameters
from .parameters import LinearParameters as LinearParameters
from .parameters import Parameters as Parameters
from .parameters import ReferenceParameters as ReferenceParameters
from .parameters import SEVParameters as SEVParameters
from .parameters import check_reference_parameters as check_reference_parameters
from .reference import Reference, check_restricted, make_reference
from .results import to_jsonable
from .vocabulary import format_number, format_significant


DEFAULT_DEMO = ("compas", "gbdt")
# the model_key of a setup whose threshold was moved (Setup.with_threshold) ends "|threshold <the model's own>→<new>"
MOVED_THRESHOLD = re.compile(r"\|threshold ([^|:→]+)→([^|:→]+)$")


class TrainingOrigin(Protocol):
    """Where a model trained for sparse explanations came from (``Setup.training``), as its readers use it: the
    training run's ``result`` and the ``base`` setup, and the before/after comparison for given SEV parameters.
    Implemented by :class:`explain_core.sparse.training.SparseOrigin`, which lives above this module."""

    result: Any
    base: Setup

    def comparison(self, after: Setup, params: SEVParameters, progress: ProgressFn | None = None) -> Any:
        """The base and ``after`` side by side (a :class:`~explain_core.sparse.compare.SparsityComparison`)."""


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
    training: TrainingOrigin | None = field(default=None, compare=False, repr=False)  # trained on the Sparser page
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
        for a regression, with its value)."""
        if self.dataset.task == "classification":
            return self.dataset.class_name(0), self.dataset.class_name(1)
        threshold = format_number(self.model.threshold)
        return f"below {threshold}", f"at or above {threshold}"

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


@dataclass(frozen=True)
class UploadChoices:
    """The choices a model file is loaded with (:func:`model_from_upload`): the split's seed, the decision threshold,
    the positive label, the trust given to its contents, how its inputs meet the dataset's columns and whether it
    saw any of the rows.

    Parameters
    ----------
    seed : int
        The seed of the dataset's train/test split.
    threshold : float, optional
        The decision threshold; None: the model's own.
    positive_class : object, optional
        The model's label for the dataset's positive class (a model trained on a recoded target); None: the same
        label as the dataset's.
    trusted : bool, optional
        Trusted mode (pickles load, unvetted skops types load when loading them runs no code); None: the
        environment's setting (:data:`~explain_core.intake.formats.TRUSTED_ENV`).
    trusted_types : sequence of str
        The unvetted skops types the analyst confirmed.
    by_order : bool
        Unnamed inputs are the dataset's columns in order.
    unseen : bool
        The model saw none of the dataset's rows: every row is a test row.
    """

    seed: int = 0
    threshold: float | None = None
    positive_class: Any = None
    trusted: bool | None = None
    trusted_types: Sequence[str] = ()
    by_order: bool = False
    unseen: bool = False


def model_from_upload(dataset: Dataset, data: bytes, filename: str,
                      choices: UploadChoices = UploadChoices()) -> TrainedModel:
    """A model file's bytes loaded safely (:func:`~explain_core.intake.loading.load_model_bytes`), wrapped for
    ``dataset`` (``by_order``: unnamed inputs are the dataset's columns in order), checked on a few rows, and
    evaluated; keyed by the file's content and the wrapping choices.

    Its test rows (``metrics["test_rows"]``): the dataset's hold-out when it has one; every row when ``unseen``
    (the analyst says the model saw none of them; the seeded split's training rows still build the reference);
    else the seeded split, which the model may have been trained on (``may_be_seen``: pages say so).

    Parameters
    ----------
    dataset : Dataset
        The dataset the model explains.
    data : bytes
        The file's content.
    filename : str
        The file's name (its suffix says the format).
    choices : UploadChoices
        How it is loaded: seed, threshold, positive label, trust, column order, unseen rows.

    Returns
    -------
    TrainedModel
        The wrapped model with its split, metrics and key.

    Raises
    ------
    IntakeError
        A file that cannot be loaded safely, or a model that fails on the dataset's first rows.
    """
    c = choices
    name = safe_name(filename, "model")
    estimator = load_model_bytes(data, name, trusted=c.trusted, trusted_types=c.trusted_types)
    model = wrap_model(estimator, dataset, threshold=c.threshold, positive_class=c.positive_class, name=name,
                       by_order=c.by_order)
    check_model(model, dataset, name)
    train, test = dataset.split(c.seed)
    kind = "holdout" if dataset.holdout is not None else "unseen" if c.unseen else "may_be_seen"
    if kind == "unseen":
        test = np.arange(len(dataset.features))
    digest = hashlib.sha1(bytes(data)).hexdigest()[:16]
    key = model_key("file", digest, f"threshold={c.threshold}", f"positive={c.positive_class}",
                    f"order={c.by_order}", f"test={kind}", c.seed)
    return TrainedModel(model, train, test, evaluate(model, dataset, train, test, kind), c.seed, key,
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
    trained = model_from_upload(dataset, path.read_bytes(), path.name,
                                UploadChoices(seed=seed, trusted=trusted, by_order=by_order, unseen=unseen))
    return make_setup(dataset, replace(trained, source=f"{trained.model.name} (model file)"), restricted=restricted)


def lens_max_size(setup: Setup, params: LensParameters | Parameters) -> int:
    """The largest factor LENS searches: the parameter, or all subsets up to 12 groups and 3 beyond."""
    return default_max_size(len(setup.dataset.groups)) if params.lens_max_size is None else params.lens_max_size
