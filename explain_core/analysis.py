"""One analysis: a dataset, a model, a reference and restricted features — and every method on one row.

The dashboard's pages and the PDF report both call these functions, so a number in a report is the
number on screen. ``Setup`` holds what the analyst chose once; ``Parameters`` every knob of every
method (with the seeds), enough to reproduce each result. Results are the methods' own typed objects
(:class:`~explain_core.sev.SEVExplanation`, :class:`~explain_core.lens.LensResult`, …) gathered in
small dataclasses here.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Sequence

import numpy as np
import pandas as pd

from .baselines import Attribution, FlipPath, explain_lime, explain_shap, flip_number
from .data import Dataset, IntakeError, load_demo
from .lens import DIRECTIONS, LensContext, LensResult, default_max_size, lens_contexts, opposite_references
from .models import ModelAdapter, TrainedModel, data_hash, demo_model
from .reference import Reference, check_restricted, make_reference
from .sev import DEFAULT_MAX_DEPTH, GroupLayout, ProgressFn, SEVExplanation, SEVResult, explain_sev, one_row, sev_batch

LINEAR_METHODS = {"iht": ("iht",), "exact": ("exact",), "both": ("iht", "exact")}
DEFAULT_DEMO = ("compas", "gbdt")


@dataclass(frozen=True)
class Setup:
    """What the analyst chose once: data, model (with its split and metrics), reference, restricted groups.

    ``model_key`` identifies the model's content (a demo's name, kind and seed, or an upload's hash);
    ``source`` says in words where the model came from.
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
    _mirrors: dict = field(default_factory=dict, compare=False, repr=False)  # reference_for's memo

    @cached_property
    def key(self) -> str:
        """Content hash of the data, model, split and reference (not ``restricted``, which only SEV® reads:
        pass it beside this key where it matters), the cache key of every result."""
        ref = self.reference
        text = json.dumps([data_hash(self.dataset), self.dataset.positive_class, self.model_key,
                           sorted((k, str(v)) for k, v in ref.values.items()), ref.statistic, ref.population,
                           hashlib.sha1(np.asarray(self.train_rows).tobytes()).hexdigest()], default=str)
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    def with_reference(self, reference: Reference) -> "Setup":
        return replace(self, reference=reference, _mirrors={})

    def reference_for(self, query: pd.DataFrame) -> Reference:
        """The reference a row is explained against (SEV §3: a typical member of the other class).

        ``reference`` for a row predicted in the class it was built to explain; for a row predicted in the
        other class, the same statistic over the training rows of *that row's* opposite class (SEV is
        symmetric). Custom values apply to ``reference`` only; a reference over all rows serves every row.
        """
        return self.reference_of_label(int(self.model.label(one_row(query))[0]))

    def reference_of_label(self, label: int) -> Reference:
        """:meth:`reference_for` a row the model predicts ``label`` (0/1)."""
        ref = self.reference
        if self.dataset.task != "classification" or ref.population != "opposite" or label == ref.explain_class:
            return ref
        if label not in self._mirrors:
            self._mirrors[label] = make_reference(self.dataset, self.train_rows, statistic=ref.statistic,
                                                  population="opposite", explain_class=label)
        return self._mirrors[label]

    def with_restricted(self, names: Sequence[str]) -> "Setup":
        return replace(self, restricted=check_restricted(self.dataset, names))

    @property
    def class_names(self) -> tuple[str, str]:
        """Labels 0 and 1 in words (``<target> = <value>``; below/above the threshold for regression)."""
        if self.dataset.task == "classification":
            return self.dataset.class_name(0), self.dataset.class_name(1)
        return "below threshold", "above threshold"

    def score_text(self, score: float, digits: int = 2) -> str:
        """The model's score in words: ``P(<target> = <positive>) = 0.73``, or the decision value / prediction."""
        if self.model.score_kind == "proba":
            return f"P({self.dataset.class_name(1)}) = {score:.{digits}f}"
        kind = "decision value" if self.model.score_kind == "decision" else "prediction"
        return f"{kind} = {score:.{digits + 2}g}"

    def query(self, row: int) -> pd.DataFrame:
        """Row ``row`` (position in the dataset) as a one-row frame of feature values."""
        if not 0 <= int(row) < len(self.dataset.features):
            raise IntakeError(f"Row {row} is not in the data; choose a row between 0 and {len(self.dataset.features) - 1}.")
        return self.dataset.features.iloc[[int(row)]]


def setup_from_trained(dataset: Dataset, trained: TrainedModel, model_key: str, source: str, *,
                       statistic: str = "mean", population: str = "opposite",
                       restricted: Sequence[str] = ()) -> Setup:
    """A setup with the default reference: the training rows of the opposite class, mean/mode (SEV §4)."""
    reference = make_reference(dataset, trained.train_rows, statistic=statistic, population=population)
    return Setup(dataset, trained.model, reference, np.asarray(trained.train_rows), np.asarray(trained.test_rows),
                 dict(trained.metrics), model_key, source, check_restricted(dataset, restricted))


def demo_setup(name: str = DEFAULT_DEMO[0], kind: str = DEFAULT_DEMO[1], *, seed: int = 0) -> Setup:
    """A bundled dataset with its demo model (trained once, cached on disk) and the default reference."""
    dataset = load_demo(name)
    trained = demo_model(dataset, kind, seed=seed)
    return setup_from_trained(dataset, trained, f"demo:{name}:{kind}:{seed}", f"{trained.model.name} (demo, seed {seed})")


@dataclass(frozen=True)
class Parameters:
    """Every knob of every method, with the seeds: the report prints these to make each number reproducible.

    ``alpha`` None = LENS exact mode (PS ≥ τ), else the binomial test at level α; ``lens_max_size`` None
    = all subsets up to 12 groups, else ≤ 3 (LENS); ``linear_method`` is ``iht``, ``exact`` or ``both``.
    """

    max_depth: int = DEFAULT_MAX_DEPTH
    lens_direction: str = "r2i"
    lens_references: int = 100
    tau: float = 0.9
    alpha: float | None = None
    lens_max_size: int | None = None
    sigma: float = 1.0
    k: int = 5
    m: int = 5000
    linear_method: str = "both"
    time_limit: float = 10.0
    lime_samples: int = 5000
    shap_background: int = 100
    seed: int = 0

    def __post_init__(self):
        if self.lens_direction not in DIRECTIONS:
            raise IntakeError(f"The LENS context must be one of {DIRECTIONS}, not {self.lens_direction!r}.")
        if self.linear_method not in LINEAR_METHODS:
            raise IntakeError(f"The linear method must be one of {tuple(LINEAR_METHODS)}, not {self.linear_method!r}.")
        if self.k < 1 or self.m < 10 or self.sigma < 0 or self.max_depth < 1 or self.lens_references < 1:
            raise IntakeError("k, max depth and the number of references must be at least 1, m at least 10 and σ ≥ 0.")

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------------
# SEV

def row_sev(setup: Setup, query: pd.DataFrame, params: Parameters) -> SEVExplanation:
    """SEV⁺, SEV⁻ and (with restricted groups) SEV® of the query (SEV Defs. 3.1-3.3)."""
    return explain_sev(setup.model, setup.dataset, query, setup.reference_for(query), restricted=setup.restricted,
                       max_depth=params.max_depth)


@dataclass(frozen=True)
class DatasetSEV:
    """SEV of every chosen row (one :class:`SEVResult` each), as the dataset-wide view draws it."""

    kind: str
    rows: np.ndarray
    results: tuple[SEVResult, ...]

    @property
    def values(self) -> list[int | None]:
        return [r.value if r.explainable else None for r in self.results]


def predicted_rows(setup: Setup, rows: Sequence[int] | None = None, label: int | None = 1) -> np.ndarray:
    """Positions among ``rows`` (default: the test rows) the model predicts ``label`` (None = all)."""
    rows = setup.test_rows if rows is None else np.asarray(rows)
    if label is None:
        return rows
    return rows[setup.model.label(setup.dataset.features.iloc[rows]) == label]


def dataset_sev(setup: Setup, rows: Sequence[int], params: Parameters, *, kind: str = "minus",
                progress: ProgressFn | None = None) -> DatasetSEV:
    """SEV (``kind`` minus/plus, with the setup's restricted groups for minus) of every row, batched per layer
    for all rows of one predicted class (each class against its :meth:`Setup.reference_for`)."""
    rows = np.asarray(rows, dtype=int)
    frame = setup.dataset.features.iloc[rows]
    labels = setup.model.label(frame) if len(rows) else np.zeros(0, dtype=int)
    held = setup.restricted if kind == "minus" else ()
    results: list[SEVResult | None] = [None] * len(rows)
    for label in np.unique(labels):
        at = np.flatnonzero(labels == label)
        found = sev_batch(setup.model, GroupLayout.of(setup.dataset), frame.iloc[at],
                          setup.reference_for(frame.iloc[at[:1]]), kind=kind, restricted=held,
                          max_depth=params.max_depth, keep_scores=False, progress=progress)
        for i, result in zip(at, found):
            results[i] = result
    return DatasetSEV(kind, rows, tuple(results))


# ---------------------------------------------------------------------------------------------------
# LIME / SHAP

@dataclass(frozen=True)
class Baselines:
    """LIME and SHAP of one row per feature group, with their LIME-C / SHAP-C flip paths (SEV §5)."""

    lime: Attribution
    shap: Attribution
    lime_flip: FlipPath
    shap_flip: FlipPath


def row_baselines(setup: Setup, query: pd.DataFrame, params: Parameters) -> Baselines:
    model, data = setup.model, setup.dataset
    lime = explain_lime(model, data, query, setup.train_rows, seed=params.seed, num_samples=params.lime_samples)
    shap = explain_shap(model, data, query, setup.train_rows, seed=params.seed, background=params.shap_background)
    reference = setup.reference_for(query)
    return Baselines(lime, shap, flip_number(model, data, query, reference, lime),
                     flip_number(model, data, query, reference, shap))


# ---------------------------------------------------------------------------------------------------
# LENS

def flip_numbers(setup: Setup, rows: Sequence[int], params: Parameters,
                 progress: ProgressFn | None = None) -> pd.DataFrame:
    """Per row: SEV⁻ beside LIME-C and SHAP-C, the features aligned to the reference in attribution order
    until the prediction flips (SEV §5; NaN where it never flips / SEV⁻ is not found)."""
    rows = np.asarray(rows, dtype=int)
    minus = dataset_sev(replace(setup, restricted=()), rows, params).values
    out = []
    for i, r in enumerate(rows):
        b = row_baselines(setup, setup.query(int(r)), params)
        out.append({"row": int(r), "SEV⁻": minus[i], "LIME-C": b.lime_flip.count, "SHAP-C": b.shap_flip.count})
        if progress is not None:
            progress((i + 1) / len(rows), f"LIME and SHAP: {i + 1} of {len(rows)} rows")
    return pd.DataFrame(out, columns=["row", "SEV⁻", "LIME-C", "SHAP-C"]).set_index("row").astype(float)


def row_lens_contexts(setup: Setup, query: pd.DataFrame, params: Parameters,
                      progress: ProgressFn | None = None) -> dict[str, LensContext]:
    """Both LENS contexts (R2I, I2R) over ``lens_references`` seeded training rows predicted opposite."""
    refs = opposite_references(setup.model, setup.dataset, query, setup.train_rows, n=params.lens_references,
                               seed=params.seed)
    return lens_contexts(setup.model, setup.dataset, query, refs, max_size=params.lens_max_size, progress=progress)


@dataclass(frozen=True)
class LensReport:
    """The τ-minimal factors of the chosen context in subset order and in cost order, and the PN curve."""

    direction: str
    max_size: int
    factors: LensResult
    recourse: LensResult
    pn_curve: pd.DataFrame


def lens_report(context: LensContext, params: Parameters) -> LensReport:
    """Alg. 1 at (τ, α) in subset order and in cost order (§5.3), and cumulative PN vs τ (App. B)."""
    return LensReport(context.direction, int(context.sizes.max()),
                      context.minimal_factors(params.tau, alpha=params.alpha),
                      context.minimal_factors(params.tau, alpha=params.alpha, order="cost"),
                      context.pn_curve(alpha=params.alpha))


def lens_max_size(setup: Setup, params: Parameters) -> int:
    return default_max_size(len(setup.dataset.groups)) if params.lens_max_size is None else params.lens_max_size


# ---------------------------------------------------------------------------------------------------
# Anchored k-sparse linear explanations (torch is imported only when one is asked for)

@dataclass(frozen=True)
class LinearReport:
    """Every linear explainer fitted on one shared sample of D_{x,σ} in the group-literal space.

    ``names`` are the literals (0 = bias, j = "keeps <group j> = <value>"); ``comparison`` holds each
    method's w and scores (fidelity, relevance, anchoring gap, Lemma 4 bound, exact-fit status).
    """

    names: tuple[str, ...]
    groups: tuple[str, ...]
    fx: float
    comparison: object  # linear_compare.Comparison

    def weights(self) -> pd.DataFrame:
        """One row per literal, one column per method: the fitted weights side by side."""
        return pd.DataFrame({r.method: r.w for r in self.comparison.results}, index=list(self.names))

    def support_groups(self, method: str) -> tuple[str, ...]:
        """The feature groups whose literal has a non-zero weight in ``method``'s w (bias excluded)."""
        w = next(r.w for r in self.comparison.results if r.method == method)
        return tuple(self.groups[j - 1] for j in np.flatnonzero(np.abs(w) > 1e-12) if j > 0)


def row_linear(setup: Setup, query: pd.DataFrame, params: Parameters) -> LinearReport:
    """IHT / exact fits of (P4) beside LIME (k−1 + intercept) and SHAP (dense and top k−1), PLE §6."""
    from .linear_compare import compare

    space = linear_space(setup, query)
    methods = LINEAR_METHODS[params.linear_method] + ("lime", "shap", "shap_k")
    comp = compare(space, params.k, params.sigma, params.m, seed=params.seed, methods=methods,
                   time_limit=params.time_limit)
    return LinearReport(space.names, tuple(setup.dataset.group_names), comp.fx, comp)


def linear_space(setup: Setup, query: pd.DataFrame):
    """The group-literal space of the query: z_j = −1 moves group j to the reference (the SEV hypercube)."""
    from .linear_space import group_space
    return group_space(setup.model, setup.dataset, query, setup.reference_for(query), rows=setup.train_rows)


def linear_sweep(setup: Setup, query: pd.DataFrame, params: Parameters, parameter: str, values=None):
    """Relevance (and the other scores) of every method as ``parameter`` (k, sigma or m) varies (PLE Figs. 4-6)."""
    from .linear_compare import sweep
    return sweep([linear_space(setup, query)], parameter, values, k=params.k, sigma=params.sigma, m=params.m,
                 seed=params.seed, methods=LINEAR_METHODS[params.linear_method] + ("lime",),
                 time_limit=params.time_limit)


# ---------------------------------------------------------------------------------------------------
# Agreement across methods

@dataclass(frozen=True)
class Agreement:
    """Feature × method: does the method name the feature? ``named`` maps method → the groups it names,
    ``rules`` says in words how each method's set was read off its result."""

    groups: tuple[str, ...]
    named: dict[str, tuple[str, ...]]
    rules: dict[str, str] = field(default_factory=dict)

    def matrix(self) -> pd.DataFrame:
        return pd.DataFrame({m: [g in set(named) for g in self.groups] for m, named in self.named.items()},
                            index=list(self.groups))

    def counts(self) -> pd.Series:
        """How many methods name each feature."""
        return self.matrix().sum(axis=1).rename("methods naming it")


def agreement(groups: Sequence[str], *, sev: SEVExplanation | None = None, lens: LensResult | None = None,
              linear: LinearReport | None = None, baselines: Baselines | None = None, top: int = 3) -> Agreement:
    """Which groups each available method names for the row.

    SEV: every group in some minimal explanation (SEV⁻, SEV⁺, SEV®); LENS: the groups of the smallest
    τ-minimal factors; linear: the groups in the support of each fitted w; LIME/SHAP: the ``top``
    groups by |attribution| (with a non-zero value).
    """
    named, rules = {}, {}
    if sev is not None:
        for which in ("minus", "plus", "restricted"):
            result = getattr(sev, which)
            if result is not None:
                named[result.label] = _union(result.explanations)
                rules[result.label] = "in some minimal explanation"
    if lens is not None:
        smallest = min((len(f.groups) for f in lens.factors), default=0)
        named[f"LENS {lens.direction.upper()}"] = _union(f.groups for f in lens.factors if len(f.groups) == smallest)
        rules[f"LENS {lens.direction.upper()}"] = f"in a smallest τ-minimal factor (τ = {lens.tau:g})"
    if linear is not None:
        for r in linear.comparison.results:
            if r.method in ("iht", "exact"):
                label = f"Linear {r.method.upper() if r.method == 'iht' else 'exact'}"
                named[label] = linear.support_groups(r.method)
                rules[label] = f"literal in the k = {linear.comparison.k} support"
    if baselines is not None:
        for att in (baselines.lime, baselines.shap):
            nonzero = [g for g, v in zip(att.groups, att.values) if abs(v) > 0]
            named[att.method] = tuple(g for g in att.order[:top] if g in nonzero)
            rules[att.method] = f"top {top} by |attribution|"
    return Agreement(tuple(groups), named, rules)


def _union(sets) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for groups in sets:
        seen.update(dict.fromkeys(groups))
    return tuple(seen)


def score_of(setup: Setup, query: pd.DataFrame) -> float:
    return float(setup.model.score(one_row(query))[0])
