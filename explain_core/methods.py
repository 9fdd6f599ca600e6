"""The built-in methods' plugs (:class:`~explain_core.registry.Method`): SEV, LENS, the linear explanations, LIME and
SHAP, the methods' agreement and the counterfactuals, registered in the order the report lays them out.

Each plug computes from a lazy bundle of the row's results (``results.setup``, ``.query``, ``.params``,
``results.get(name)``: :class:`~explain_core.report.bundle.RowResults`), so a method that reads another's result
(the agreement reads four) asks the bundle, which computes it once; the figures import plotly on first use (an
audit's workers never load it). A new method is one :func:`register` call here or in its own module, beside its
compute: the pages, the report, the command line, the audit and the JSON files loop over
:func:`~explain_core.registry.methods`.
"""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from .analysis import (Agreement, Baselines, LensReport, agreement, row_baselines, row_counterfactuals, row_lens,
                       row_linear, row_sev)
from .counterfactuals import DICE_METHODS, CounterfactualComparison
from .lens import CORRECTIONS, DIRECTIONS, opposite_references
from .lens.search import DEFAULT_BUDGET_ROWS, search_factors
from .linear.compare import LinearExplanation
from .parameters import FLIP_ORDER_NAMES, LINEAR_METHODS
from .references import ASSIGNMENTS, REFERENCE_KINDS
from .registry import AuditColumns, Method, Option, Section, method, methods, register
from .sev.dispatch import METHODS as SEV_METHODS
from .sev.engine import DEFAULT_BUDGET_ROWS as SEV_BUDGET_ROWS, SEVExplanation, hypercube
from .sev.exact_sev import BUDGET_UNIT
from .views.readings import sev_reading
from .vocabulary import METHOD_LABELS

__all__ = ["BUDGET_CONTROL", "cube_drawn", "method", "methods", "register", "row_cube", "smallest_factor"]

BUDGET_CONTROL = "the SEV search budget (sev_budget_rows, among the parameters)"  # what narrows a bracket here


def cube_drawn(setup) -> bool:
    """Whether the SEV figure is the hypercube (few feature groups) or the search by depth (the lattice view).

    Parameters
    ----------
    setup : Setup
        The data, model and reference.

    Returns
    -------
    bool
        The hypercube is drawn.
    """
    from .views.sev import HYPERCUBE_FIGURE_MAX_GROUPS  # the figure modules import plotly

    return len(setup.dataset.groups) <= HYPERCUBE_FIGURE_MAX_GROUPS


def row_cube(results):
    """The row's hypercube of scores (every mix of the row and its reference), the SEV figure's data.

    Parameters
    ----------
    results : RowResults
        The row's results.

    Returns
    -------
    Hypercube
        The hypercube.
    """
    s = results.setup
    return hypercube(s.model, s.dataset.layout, results.query, s.reference_of_label(results.label))


def smallest_factor(lens: LensReport):
    """The smallest τ-minimal factor (highest PS among equally small ones), or None.

    Parameters
    ----------
    lens : LensReport
        The row's LENS report.

    Returns
    -------
    Factor or None
        The factor.
    """
    factors = list(lens.factors.factors)
    return min(factors, key=lambda f: (len(f.groups), -f.ps)) if factors else None


# --- SEV ---------------------------------------------------------------------------------------------------------

def _sev_shown(sev: SEVExplanation) -> str:
    return "restricted" if sev.restricted is not None else "minus"


def _sev_figure(results):
    from .views.sev import hypercube_figure, lattice_figure

    s, sev = results.setup, results.get("sev")
    if cube_drawn(s):
        return hypercube_figure(results.get("cube"), sev, which=_sev_shown(sev), class_names=s.class_names)
    return lattice_figure(sev.result(_sev_shown(sev)), labels_of=s.model.labels_of)


def _sev_contents(results) -> list[str]:
    kinds = "SEV⁻ / SEV⁺" + (" / SEV®" if results.get("sev").restricted is not None else "")
    return [f"{kinds} with their minimal explanations (the paper's tables)", "the plain-language reading",
            "the hypercube" if cube_drawn(results.setup) else "the search by depth (lattice view)"]


register(Method(
    "sev", "SEV", lambda r: row_sev(r.setup, r.query, r.params), "sev", figure=_sev_figure,
    reading=lambda r: sev_reading(r.setup, r.get("sev"), BUDGET_CONTROL),
    section=Section("SEV", _sev_contents, "SEV⁻ / SEV⁺ / SEV® with the minimal explanations (the paper's tables), a "
                                          "plain-language reading and the hypercube."),
    options=(Option("--max-depth", "max_depth", int, "SEV breadth-first search depth"),
             Option("--sev-method", "sev_method", help="SEV engine: exact (tree ensembles and additive models, "
                    "certified at any width), bfs (breadth-first search, any model), auto (exact where it applies on "
                    "wide data; default)", choices=SEV_METHODS),
             Option("--sev-budget", "sev_budget", float,
                    f"the exact SEV engine's budget per search, in {BUDGET_UNIT} (default 10)"),
             Option("--sev-search-budget", "sev_budget_rows", int, "the SEV breadth-first search's model rows per "
                    "row (a count of work, not seconds); a row it leaves open gets a bracket (default "
                    f"{SEV_BUDGET_ROWS:,})", metavar="ROWS")),
    json_type=SEVExplanation))


# --- LENS --------------------------------------------------------------------------------------------------------

def _lens_columns(setup, query: pd.DataFrame, label: int, params, memo: dict) -> dict:
    """The smallest τ-sufficient factor of the chosen context by the layered search (its budget counts model rows,
    so an audit is reproducible and agrees with the app): fewest groups, then highest PS. ``factor_status``:
    ``found``, ``none`` (no factor up to the largest size), ``budget`` (the next layer needs more rows than the
    budget has left) or ``memory`` (the next layer would pass the search's memory bound)."""
    if label not in memo:  # opposite_references depends on the query only through its predicted class
        memo[label] = opposite_references(setup.model, setup.dataset, query, setup.train_rows,
                                          n=params.lens_references, seed=params.seed)
    found = search_factors(setup.model, setup.dataset, query, memo[label], params.factor_search)
    factors = found.result.factors
    if not factors:
        return {"factor": None, "factor_ps": None,
                "factor_status": "none" if found.stopped == "complete" else found.stopped}
    best = min(factors, key=lambda f: (len(f.groups), -f.ps))
    return {"factor": list(best.groups), "factor_ps": best.ps, "factor_status": "found"}


def _pn_figure(results):
    from .views.lens import pn_curve_figure

    return pn_curve_figure(results.get("lens").pn_curve, direction=results.get("lens").direction)


register(Method(
    "lens", "LENS", lambda r: row_lens(r.setup, r.query, r.params), "lens",
    figure=_pn_figure,
    section=Section("LENS", ("τ-minimal factors with PS and p-values", "the cheapest (cost-order) factors",
                             "cumulative PN against τ"),
                    "τ-minimal sufficient factors with PS and p-values, the cheapest factors and the cumulative PN "
                    "curve."),
    options=(Option("--tau", "tau", float, "LENS sufficiency threshold τ"),
             Option("--alpha", "alpha", float, "LENS test level α (default: exact mode)"),
             Option("--lens-correction", "lens_correction", help="LENS multiple-testing correction with --alpha "
                    "(holm: family-wise over the row's factors)", choices=CORRECTIONS),
             Option("--lens-direction", "lens_direction", help="LENS context", choices=DIRECTIONS),
             Option("--lens-references", "lens_references", int, "LENS reference rows"),
             Option("--lens-max-size", "lens_max_size", int, "largest LENS factor"),
             Option("--lens-budget", "lens_budget_rows", int, "LENS's layered search on wide data (more than 12 "
                    "features, no --lens-max-size): the model rows it may score (a count of work, not seconds, so "
                    f"the answer is the same on any machine; default {DEFAULT_BUDGET_ROWS:,})", metavar="ROWS")),
    audit=AuditColumns((("factor", pa.list_(pa.string())), ("factor_ps", pa.float64()),
                        ("factor_status", pa.string())), _lens_columns),
    json_type=LensReport))


# --- linear, LIME and SHAP, the agreement ------------------------------------------------------------------------

def _weights_figure(results):
    """The weights with the methods' display names as columns."""
    from .views.linear import weights_figure

    weights = results.get("linear").weights()
    return weights_figure(weights.rename(columns=lambda m: METHOD_LABELS.get(m, m)))


register(Method(
    "linear", "Linear", lambda r: row_linear(r.setup, r.query, r.params), "linear", figure=_weights_figure,
    section=Section("Linear", ("weights of IHT / exact / LIME / SHAP side by side",
                               "fidelity, relevance, anchoring gap, optimality status", "weights chart"),
                    "Weights of IHT, the exact fit, LIME and SHAP side by side with fidelity, relevance, anchoring "
                    "gap and optimality status."),
    options=(Option("--sigma", "sigma", float, "linear: concentration σ"),
             Option("-k", "k", int, "linear: sparsity budget k"), Option("-m", "m", int, "linear: samples m"),
             Option("--linear-method", "linear_method", help="linear: IHT, the certified exact fit, or both",
                    choices=tuple(LINEAR_METHODS)),
             Option("--time-limit", "time_limit", float, "exact linear fit time limit (s)")),
    json_type=LinearExplanation))


def _flip_columns(setup, query: pd.DataFrame, label: int, params, memo: dict) -> dict:
    """LIME-C and SHAP-C (SEV §5.4): the features LIME's and SHAP's rankings move before the prediction flips."""
    flips = row_baselines(setup, query, params)
    return {"lime_c": flips.lime_flip.count, "shap_c": flips.shap_flip.count}


register(Method(
    "baselines", "LIME and SHAP", lambda r: row_baselines(r.setup, r.query, r.params), "baselines",
    options=(Option("--lime-samples", "lime_samples", int, "LIME's samples"),
             Option("--shap-background", "shap_background", int, "SHAP's background rows"),
             Option("--flip-order", "flip_order", str, "LIME-C / SHAP-C order: absolute (default) or signed (the "
                    "paper's)", choices=tuple(sorted(FLIP_ORDER_NAMES)))),
    audit=AuditColumns((("lime_c", pa.int16()), ("shap_c", pa.int16())), _flip_columns),
    json_type=Baselines))


def _agreement_figure(results):
    from .views.compare import agreement_figure

    return agreement_figure(results.get("agreement").matrix())


def _agreement(results) -> Agreement:
    return agreement(results.setup.dataset.group_names, sev=results.get("sev"), lens=results.get("lens").factors,
                     linear=results.get("linear"), baselines=results.get("baselines"))


register(Method(
    "agreement", "Agreement", _agreement, figure=_agreement_figure,
    section=Section("Agreement", ("feature × method matrix", "how each method's set was read"),
                    "Which features each method names for this row (LIME and SHAP are computed for it)."),
    json_type=Agreement))


# --- counterfactuals ---------------------------------------------------------------------------------------------

def _points_figure(results):
    from .views.references import points_figure

    return points_figure({m.method: m.points for m in results.get("counterfactuals").methods})


register(Method(
    "counterfactuals", "Counterfactuals", lambda r: row_counterfactuals(r.setup, r.query, r.params), "counterfactuals",
    figure=_points_figure,
    section=Section("Counterfactuals", ("SEV against one reference, a flexible one and typical cases beside DiCE's "
                                        "counterfactuals", "ℓ0, ℓ∞, ℓ1, credibility and seconds for every method",
                                        "where each point lands"),
                    "SEV against one reference, a flexible one and typical cases beside DiCE's counterfactuals, "
                    "with ℓ0, ℓ∞, ℓ1, credibility and seconds for each."),
    options=(Option("--reference-kind", "reference_kind", help="SEV's kind of reference: single, flexible (SEV^F) or "
                    "cluster (SEV^©)", choices=REFERENCE_KINDS),
             Option("--flex-tau", "flex_tau", float, "SEV^F: each window's half-width τ (quantile rank)"),
             Option("--flex-k", "flex_k", int, "SEV^F: values tried in each window"),
             Option("--clusters", "clusters", int, "SEV^©: typical cases (default: by the assignment)"),
             Option("--cluster-assignment", "cluster_assignment", help="SEV^©: each row's typical case, the nearest "
                    "or the one reached by the fewest changes", choices=ASSIGNMENTS),
             Option("--credible", "credible", float, "credible search: the percentile threshold"),
             Option("--dice-method", "dice_method", help="DiCE's method", choices=DICE_METHODS),
             Option("--dice-count", "dice_count", int, "DiCE's counterfactuals")),
    json_type=CounterfactualComparison))
