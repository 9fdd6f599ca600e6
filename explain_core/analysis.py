"""One analysis: a dataset, a model, a reference and restricted features — and every method on one row.

The dashboard's pages and the PDF report both call these functions, so a number in a report is the
number on screen. :class:`~explain_core.setup.Setup` holds what the analyst chose once;
:class:`~explain_core.setup.Parameters` every knob of every method (with the seeds). Each run reads only its
method's part of the parameters (``params.sev``, ``params.lens``, …; a whole ``Parameters`` works too).
Results are the methods' own typed objects (:class:`~explain_core.sev.SEVExplanation`,
:class:`~explain_core.lens.LensResult`, …) gathered in small dataclasses here.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import comb
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from .baselines import Attribution, FlipPath, explain_lime, explain_shap, flip_number
from .counterfactuals import CounterfactualComparison, compare_counterfactuals
from .errors import Unreadable
from .vertices import ProgressFn, one_row
from .vocabulary import count_noun
from .lens import ALL_SUBSETS_UP_TO, ContextOptions, LensContext, LensResult, lens_contexts, opposite_references
from .lens.causal import DEFAULT_SCM, CausalGraph, ScmSettings, causal_contexts, fit_scm
from .lens.causation import CausationOptions, CausationProbabilities, probabilities_of_causation
from .lens.search import LensSearch, SearchPlan, plan_search, search_factors
from .references import KindsTable, ReferenceFits, ReferenceSEV, compare_kinds, explain_kind
from .results import Explanation
from .setup import (DEFAULT_DEMO, LINEAR_METHODS, BaselineParameters, CounterfactualParameters, LensParameters,
                    LinearParameters, Parameters, ReferenceParameters, SEVParameters, Setup, demo_setup, file_setup,
                    UploadChoices, lens_max_size, make_setup, model_from_upload, trained_setup)
from .sev.dispatch import SEVRequest, explain_sev, sev_results
from .sev.engine import SEVExplanation, SEVResult
from .sev.tree_sev import TreeSEVResult, tree_sev

if TYPE_CHECKING:
    from .linear.compare import LinearExplanation

__all__ = ["DEFAULT_DEMO", "LINEAR_METHODS", "ROW_CHOICES", "Agreement", "BaselineParameters", "Baselines",
           "CounterfactualParameters", "DatasetSEV", "LensParameters", "LensReport", "LensSearch", "LinearParameters",
           "Parameters", "ReferenceParameters", "SEVParameters", "Setup", "UploadChoices", "agreement",
           "dataset_reference_kinds", "dataset_sev", "demo_setup", "frame_sev", "file_setup", "flip_numbers",
           "lens_max_size", "lens_report", "linear_space", "linear_sweep", "make_setup", "model_from_upload",
           "predicted_rows", "reference_fits", "row_baselines", "row_counterfactuals", "lens_searches", "row_lens",
           "row_lens_causal", "row_lens_contexts", "row_lens_plan", "row_lens_search", "row_linear",
           "row_reference_sev", "row_sev", "score_of", "trained_setup", "row_tree_sev"]

# ---------------------------------------------------------------------------------------------------
# SEV

def row_sev(setup: Setup, query: pd.DataFrame, params: SEVParameters | Parameters) -> SEVExplanation:
    """SEV⁺, SEV⁻ and (with restricted groups) SEV® of the query (SEV Defs. 3.1-3.3)."""
    return explain_sev(setup.model, setup.dataset, query, setup.reference_for(query), restricted=setup.restricted,
                       options=params)


def row_tree_sev(setup: Setup, query: pd.DataFrame, params: SEVParameters | Parameters) -> TreeSEVResult | None:
    """SEVᵀ of the query (Improving Decision Sparsity §4), each feature's candidate values taken from the training
    rows; None when the model is not a tree model the exact engine reads."""
    try:
        return tree_sev(setup.model, setup.dataset, query, setup.train_rows, restricted=setup.restricted,
                        budget=params.sev_budget)
    except Unreadable:
        return None


@dataclass(frozen=True, eq=False)
class DatasetSEV(Explanation):
    """SEV of every chosen row (one :class:`SEVResult` each), as the dataset-wide view draws it."""

    kind: str
    rows: np.ndarray
    results: tuple[SEVResult, ...]

    method = "SEV (dataset-wide)"
    meta_parameters = ("kind",)

    @property
    def values(self) -> list[int | None]:
        return [r.value if r.explainable else None for r in self.results]


ROW_CHOICES = {"all": None, "predicted-positive": 1, "predicted-negative": 0}  # rows by predicted label, in words
"""Rows by predicted label, in words: every row, or those predicted positive or negative."""


def predicted_rows(setup: Setup, rows: Sequence[int] | None = None, label: int | None = 1) -> np.ndarray:
    """Positions among ``rows`` (default: the test rows) the model predicts ``label`` (None = all)."""
    rows = setup.test_rows if rows is None else np.asarray(rows)
    if label is None:
        return rows
    return rows[setup.model.label(setup.dataset.features.iloc[rows]) == label]


def dataset_sev(setup: Setup, rows: Sequence[int], params: SEVParameters | Parameters, *, kind: str = "minus",
                explanations: str = "all", progress: ProgressFn | None = None) -> DatasetSEV:
    """SEV (``kind`` minus/plus, with the setup's restricted groups for minus) of every row, batched per layer
    for all rows of one predicted class (each class against its :meth:`Setup.reference_for`); ``explanations="first"``
    where only the values are read (:func:`~explain_core.sev.sev_results`)."""
    rows = np.asarray(rows, dtype=int)
    held = setup.restricted if kind == "minus" else ()
    results = frame_sev(setup, setup.dataset.features.iloc[rows], params, kind=kind, restricted=held,
                        explanations=explanations, progress=progress)
    return DatasetSEV(kind, rows, tuple(results))


def frame_sev(setup: Setup, frame: pd.DataFrame, params: SEVParameters | Parameters, *, kind: str,
              restricted: Sequence[str], explanations: str = "all",
              progress: ProgressFn | None = None) -> list[SEVResult]:
    """:func:`~explain_core.sev.sev_results` (the engine, depth and budgets of ``params``; ``explanations`` ``all``
    or ``first``) of every row of ``frame`` (rows of the setup's data or others with its columns, e.g. one partition
    of an audit), one batch per predicted class against its reference."""
    labels = setup.model.label(frame) if len(frame) else np.zeros(0, dtype=int)
    results: list[SEVResult | None] = [None] * len(frame)
    for label in np.unique(labels):
        at = np.flatnonzero(labels == label)
        found = sev_results(setup.model, setup.dataset.layout, frame.iloc[at], setup.reference_of_label(int(label)),
                            SEVRequest(kind=kind, restricted=restricted, keep_scores=False, explanations=explanations),
                            options=params, progress=progress)
        for i, result in zip(at, found):
            results[i] = result
    return results


# ---------------------------------------------------------------------------------------------------
# LIME / SHAP

@dataclass(frozen=True, eq=False)
class Baselines(Explanation):
    """LIME and SHAP of one row per feature group, with their LIME-C / SHAP-C flip paths (SEV §5)."""

    lime: Attribution
    shap: Attribution
    lime_flip: FlipPath
    shap_flip: FlipPath

    method = "LIME and SHAP"


def row_baselines(setup: Setup, query: pd.DataFrame, params: BaselineParameters | Parameters) -> Baselines:
    model, data = setup.model, setup.dataset
    lime = explain_lime(model, data, query, setup.train_rows, seed=params.seed, num_samples=params.lime_samples)
    shap = explain_shap(model, data, query, setup.train_rows, seed=params.seed, background=params.shap_background)
    reference = setup.reference_for(query)
    order = params.flip_order  # absolute (the default) or signed (the paper's): parameters.FLIP_ORDER_NAMES
    return Baselines(lime, shap, flip_number(model, data, query, reference, lime, order=order),
                     flip_number(model, data, query, reference, shap, order=order))


# ---------------------------------------------------------------------------------------------------
# LENS

def flip_numbers(setup: Setup, rows: Sequence[int], params: Parameters,
                 progress: ProgressFn | None = None) -> pd.DataFrame:
    """Per row: SEV⁻ beside LIME-C and SHAP-C, the features aligned to the reference in attribution order
    until the prediction flips (SEV §5; NaN where it never flips / SEV⁻ is not found)."""
    rows = np.asarray(rows, dtype=int)
    minus = dataset_sev(replace(setup, restricted=()), rows, params, explanations="first").values  # values only
    out = []
    for i, r in enumerate(rows):
        b = row_baselines(setup, setup.query(int(r)), params)
        out.append({"row": int(r), "SEV⁻": minus[i], "LIME-C": b.lime_flip.count, "SHAP-C": b.shap_flip.count})
        if progress is not None:
            progress((i + 1) / len(rows), f"LIME and SHAP: {i + 1} of {len(rows)} rows")
    return pd.DataFrame(out, columns=["row", "SEV⁻", "LIME-C", "SHAP-C"]).set_index("row").astype(float)


def _lens_references(setup: Setup, query: pd.DataFrame, params: LensParameters | Parameters) -> pd.DataFrame:
    return opposite_references(setup.model, setup.dataset, query, setup.train_rows, n=params.lens_references,
                               seed=params.seed)


def row_lens_contexts(setup: Setup, query: pd.DataFrame, params: LensParameters | Parameters,
                      progress: ProgressFn | None = None) -> dict[str, LensContext]:
    """Both LENS contexts (R2I, I2R) over ``lens_references`` seeded training rows predicted opposite."""
    return lens_contexts(setup.model, setup.dataset, query, _lens_references(setup, query, params),
                         ContextOptions(max_size=params.lens_max_size), progress=progress)


def row_lens_causal(setup: Setup, query: pd.DataFrame, params: LensParameters | Parameters, graph: CausalGraph,
                    settings: ScmSettings = DEFAULT_SCM, progress: ProgressFn | None = None) -> dict[str, LensContext]:
    """Both LENS contexts with interventions propagated through the SCM of ``graph`` fitted on the training rows
    (LENS §5, App. C.1; fitted and sampled as ``settings`` say), over the same references and factors as
    :func:`row_lens_contexts`."""
    scm = fit_scm(setup.dataset, graph, setup.train_rows, settings, seed=params.seed)
    return causal_contexts(setup.model, setup.dataset, query, _lens_references(setup, query, params), scm,
                           ContextOptions(max_size=params.lens_max_size), seed=params.seed, progress=progress)


def row_causation(setup: Setup, query: pd.DataFrame, params: LensParameters | Parameters, graph: CausalGraph,
                  settings: ScmSettings, factor: Sequence[str]) -> CausationProbabilities:
    """Pearl's PN, PS, PNS of ``factor`` with their Tian–Pearl bounds under the SCM of ``graph`` (fitted as
    :func:`row_lens_causal` fits it), over ``lens_references`` seeded training rows of either prediction."""
    scm = fit_scm(setup.dataset, graph, setup.train_rows, settings, seed=params.seed)
    rng = np.random.default_rng(params.seed)
    rows = rng.choice(setup.train_rows, size=min(params.lens_references, len(setup.train_rows)), replace=False)
    return probabilities_of_causation(setup.model, setup.dataset, query, setup.dataset.features.iloc[np.sort(rows)],
                                      scm, factor, CausationOptions(seed=params.seed))


def lens_searches(setup: Setup, params: LensParameters | Parameters) -> bool:
    """Wide data (more than 12 groups) with no largest factor size chosen: LENS runs the layered search."""
    return len(setup.dataset.groups) > ALL_SUBSETS_UP_TO and params.lens_max_size is None


def row_lens_search(setup: Setup, query: pd.DataFrame, params: LensParameters | Parameters,
                    progress: ProgressFn | None = None) -> LensSearch:
    """The layered search in the chosen context until the first size holding a τ-sufficient factor, within
    ``lens_budget_rows`` model rows scored (issue 26: the same answer on any machine and load)."""
    return search_factors(setup.model, setup.dataset, query, _lens_references(setup, query, params),
                          params.factor_search, progress=progress)


def row_lens_plan(setup: Setup, query: pd.DataFrame, params: LensParameters | Parameters) -> SearchPlan:
    """The most model rows :func:`row_lens_search` would score on this row (:func:`~explain_core.lens.search.
    plan_search`), counted before it runs."""
    return plan_search(setup.dataset, query, _lens_references(setup, query, params), params.factor_search)


def row_lens(setup: Setup, query: pd.DataFrame, params: LensParameters | Parameters,
             progress: ProgressFn | None = None) -> "LensReport":
    """The LENS report of the query: the layered search on wide data (:func:`lens_searches`), else every factor."""
    if lens_searches(setup, params):
        found = row_lens_search(setup, query, params, progress)
        return lens_report(found.context, params, note=found.message)
    return lens_report(row_lens_contexts(setup, query, params, progress)[params.lens_direction], params)


@dataclass(frozen=True, eq=False)
class LensReport(Explanation):
    """The τ-minimal factors of the chosen context in subset order and in cost order, and the PN curve."""

    direction: str
    max_size: int
    factors: LensResult
    recourse: LensResult
    pn_curve: pd.DataFrame
    note: str = ""

    method = "LENS"

    def parameters(self) -> dict:
        return {**self.factors.parameters(), "max_size": self.max_size}


def lens_report(context: LensContext, params: LensParameters | Parameters, note: str = "") -> LensReport:
    """Alg. 1 at (τ, α) in subset order and in cost order (§5.3), and cumulative PN vs τ (App. B); ``note``:
    the layered search's outcome in words, when the context comes from it."""
    test = {"alpha": params.alpha, "correction": params.lens_correction}
    return LensReport(context.direction, int(context.sizes.max()), context.minimal_factors(params.tau, **test),
                      context.minimal_factors(params.tau, order="cost", **test), context.pn_curve(**test), note)


# ---------------------------------------------------------------------------------------------------
# Anchored k-sparse linear explanations (torch is imported only when one is asked for)

def row_linear(setup: Setup, query: pd.DataFrame, params: LinearParameters | Parameters) -> "LinearExplanation":
    """The linear explanation of the query (:func:`~explain_core.linear.explain_linear`): the IHT / exact fits of
    (P4) beside LIME (k−1 + intercept) and SHAP (dense and top k−1) on the same sample, PLE §6."""
    from .linear.compare import FittingOptions, explain_linear

    fits = LINEAR_METHODS[params.linear_method]
    options = FittingOptions(methods=fits + ("lime", "shap", "shap_k"), time_limit=params.time_limit)
    return explain_linear(linear_space(setup, query), params.k, params.sigma, params.m, seed=params.seed,
                          solver="exact" if "exact" in fits else "iht", options=options)


def linear_space(setup: Setup, query: pd.DataFrame):
    """The group-literal space of the query: z_j = −1 moves group j to the reference (the SEV hypercube)."""
    from .linear.groups import group_space
    return group_space(setup.model, setup.dataset, query, setup.reference_for(query), rows=setup.train_rows)


def linear_sweep(setup: Setup, query: pd.DataFrame, params: LinearParameters | Parameters, parameter: str,
                 values=None):
    """Relevance (and the other scores) of every method as ``parameter`` (k, sigma or m) varies (PLE Figs. 4-6)."""
    from .linear.compare import FittingOptions, sweep
    options = FittingOptions(methods=LINEAR_METHODS[params.linear_method] + ("lime",), time_limit=params.time_limit)
    return sweep([linear_space(setup, query)], parameter, values, k=params.k, sigma=params.sigma, m=params.m,
                 seed=params.seed, options=options)


# ---------------------------------------------------------------------------------------------------
# Agreement across methods

@dataclass(frozen=True, eq=False)
class Agreement(Explanation):
    """Feature × method: does the method name the feature? ``named`` maps method → the groups it names,
    ``rules`` says in words how each method's set was read off its result."""

    groups: tuple[str, ...]
    named: dict[str, tuple[str, ...]]
    rules: dict[str, str] = field(default_factory=dict)

    method = "agreement across methods"

    def matrix(self) -> pd.DataFrame:
        return pd.DataFrame({m: [g in set(named) for g in self.groups] for m, named in self.named.items()},
                            index=list(self.groups))

    def counts(self) -> pd.Series:
        """How many methods name each feature."""
        return self.matrix().sum(axis=1).rename("methods naming it")

    def most_named(self) -> tuple[tuple[str, ...], int, int] | None:
        """(The features named by the most methods, how many name them, how many methods there are); None when no
        method names any feature."""
        counts = self.counts()
        if not len(counts) or counts.max() == 0:
            return None
        return tuple(counts[counts == counts.max()].index), int(counts.max()), len(self.named)

    def verdict(self) -> str:
        """The agreement in one line: "Named by most methods: age, prior_offense_count — 7 of 7"."""
        found = self.most_named()
        if found is None:
            return "No method names a feature for this row."
        names, count, total = found
        return f"Named by most methods: {', '.join(names)} — {count} of {total}."


def agreement(groups: Sequence[str], *, sev: SEVExplanation | None = None, lens: LensResult | None = None,
              linear: "LinearExplanation | None" = None, baselines: Baselines | None = None, top: int = 3) -> Agreement:
    """Which groups each available method names for the row.

    SEV: every group in some minimal explanation (SEV⁻, SEV⁺, SEV®); LENS: the groups of the smallest
    τ-minimal factors; linear: the groups in the support of each fitted w; LIME/SHAP: the ``top``
    groups by |attribution| (with a non-zero value).
    """
    named, rules = {}, {}
    if sev is not None:
        for result in sev.results().values():
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


# ---------------------------------------------------------------------------------------------------
# SEV against other kinds of reference, and counterfactuals side by side ("Improving Decision Sparsity")

def reference_fits(setup: Setup, params: ReferenceParameters | Parameters) -> ReferenceFits:
    """Each predicted class's population coordinates, density, SEV^F windows and typical cases, fitted on the
    training rows on first use and kept with the setup (one-off: the explanations are milliseconds)."""
    key = (params.flex_tau, params.flex_k, params.clusters, params.cluster_assignment, params.seed)
    return setup.fits.get(key, lambda: ReferenceFits(setup, tau=params.flex_tau, k=params.flex_k,
                                                     clusters=params.clusters, seed=params.seed,
                                                     assignment=params.cluster_assignment))


def row_reference_sev(setup: Setup, query: pd.DataFrame, params: ReferenceParameters | Parameters,
                      fits: ReferenceFits | None = None) -> ReferenceSEV:
    """SEV⁻ (SEV® with the setup's restricted features) of the row against ``params.reference_kind``, with every
    explanation's distance and credibility."""
    fits = reference_fits(setup, params) if fits is None else fits
    return explain_kind(setup, one_row(query), params.reference_kind, fits, max_depth=params.max_depth,
                        credible=params.credible)[0]


def dataset_reference_kinds(setup: Setup, rows: Sequence[int], params: ReferenceParameters | Parameters,
                            fits: ReferenceFits | None = None, kinds: Sequence[str] | None = None,
                            progress: ProgressFn | None = None) -> KindsTable:
    """Every kind of reference the model allows, or ``kinds``, on the same rows (with ``params.credible``, the
    credible searches too)."""
    fits = reference_fits(setup, params) if fits is None else fits
    return compare_kinds(setup, rows, fits, kinds=kinds, max_depth=params.max_depth, credible=params.credible,
                         progress=progress)


def budget_depth(setup: Setup, params: Parameters) -> tuple[int, str]:
    """The depth a reference search may reach within ``params.sev_budget_rows``: ``params.max_depth``, or less where
    the sets of features up to the next depth (one vertex each against one reference) would pass the budget; with
    what a search left open at that depth reads, in words ('' when the budget does not bind)."""
    movable = sum(name not in set(setup.restricted) for name in setup.dataset.layout.names)
    sets = 0
    for depth in range(1, min(params.max_depth, movable) + 1):
        sets += comb(movable, depth)
        if sets > params.sev_budget_rows and depth > 1:
            return depth - 1, (f"no explanation of up to {count_noun(depth - 1, 'feature')}: the "
                               f"{comb(movable, depth):,} sets of {depth} would pass the SEV search budget of "
                               f"{params.sev_budget_rows:,} model rows per search — raise it to search deeper")
    return params.max_depth, ""


def row_counterfactuals(setup: Setup, query: pd.DataFrame, params: Parameters,
                        fits: ReferenceFits | None = None) -> CounterfactualComparison:
    """SEV against each kind of reference beside DiCE's counterfactuals, with the shared metrics; each search within
    the SEV search budget (:func:`budget_depth`: a row left open there says so in its note)."""
    fits = reference_fits(setup, params) if fits is None else fits
    depth, stopped = budget_depth(setup, params)
    return compare_counterfactuals(setup, one_row(query), fitted=fits, max_depth=depth, credible=params.credible,
                                   dice=params, left_open=stopped)
