"""Readings: each method's result in one plain sentence, in the data card's words (SEV, its engines and SEVᵀ,
LENS, the linear explanations, the other kinds of reference and counterfactuals). Pages and the PDF report both
read a result through here, so it reads the same on screen and on paper; the labels and number formats they use
are :mod:`explain_core.vocabulary`'s."""
from __future__ import annotations

import math
from math import comb
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..sev.bracket import bracket_words
from ..sev import engine as sev_engine
from ..sev.readings import explanation_lines
from ..vocabulary import METHOD_LABELS, count_noun, format_number, format_value, join_words

if TYPE_CHECKING:
    from ..analysis import LensReport
    from ..lens import LensContext
    from ..linear.compare import LinearExplanation
    from ..setup import Setup
    from ..sev.engine import SEVExplanation


# ---------------------------------------------------------------------------------------------------
# Readings: a result in one plain sentence

EXACT_CONTROL = "the exact solver budget (sev_budget, among the parameters)"  # what certifies an exact bracket

def outcome_text(setup: "Setup", label: int) -> str:
    """A class in words: the dataset card's label where it has one (:meth:`~explain_core.intake.data.Dataset.
    class_name`), a regression's side of its threshold."""
    name = setup.class_names[int(label)]
    if setup.dataset.task != "classification":
        return f"{setup.dataset.target.name} {name} ({format_number(setup.model.threshold)})"
    return name


def decision_sentence(setup: "Setup", where: str, score: float) -> str:
    """What the model decided for a row, in one sentence: "For row 16 the model predicts <class>: <score> (decision
    threshold 0.5)." (the PDF's first page and Home)."""
    label = int(setup.model.labels_of(np.array([score]))[0])
    return (f"For {where} the model predicts {outcome_text(setup, label)}: {setup.score_text(score, digits=3)} "
            f"(decision threshold {format_number(setup.model.threshold)}).")


def sev_reading(setup: "Setup", ex: "SEVExplanation", control: str = "the SEV search budget",
                exact_control: str = EXACT_CONTROL) -> str:
    """One plain-language sentence for the row's SEV⁻ (SEV® when features are restricted); a bracket names
    ``control`` (the breadth-first search's) or ``exact_control`` (the exact solver's), the setting that narrows it
    where the sentence is read."""
    which = "restricted" if ex.restricted is not None else "minus"
    result = ex.result(which)
    ref = setup.dataset.layout.values(ex.reference.values)
    other = outcome_text(setup, 1 - result.explained_class)
    held = (f" (with {join_words(result.restricted)} held at this row's values)" if result.restricted else "")
    if result.status == "explained":  # strongest flip first, as the SEV page and the report list them
        firsts = [[m.group for m in line.moves] for line in explanation_lines(ex, which, setup.model.threshold)]
        if result.value == 1:
            names = [e[0] for e in firsts]
            text = (f"Changing {names[0]} to the reference value ({format_value(ref[names[0]])}) alone flips the "
                    f"prediction to {other}{held}")
            extra = [f"{n} alone (to {format_value(ref[n])})" for n in names[1:3]]
            if extra:
                text += "; so does changing " + " or ".join(extra)
            if len(names) > 3:
                text += f", and {len(names) - 3} other single feature{'s' if len(names) > 4 else ''}"
            return text + "."
        first = firsts[0]
        text = (f"Changing {join_words(first)} together to their reference values "
                f"({', '.join(format_value(ref[g]) for g in first)}) flips the prediction to {other}{held}; "
                "no single feature does")
        if len(firsts) > 1:
            n = len(firsts) - 1
            text += (f", and {n} other set of {result.value} features also does" if n == 1 else
                     f", and {n} other sets of {result.value} features also do")
        return text + "."
    if result.reference_class == result.explained_class:
        same = outcome_text(setup, result.explained_class)
        return (f"The reference itself is predicted {same}, so moving features to it cannot flip the prediction; "
                "use a reference built from the other class.")
    if result.status == "limit" and result.engine == "bfs":
        return f"{result.label} {bracket_words(result, control)}."
    if result.status == "limit":
        return (f"The exact solver ran out of budget: at least {count_noun(result.bound or 0, 'feature')} must "
                "move to flip the "
                f"prediction{held}" + (f", and {result.value} are enough" if result.value is not None else "")
                + f"; raise {exact_control} to narrow it.")
    if result.status == "beyond_depth":
        return (f"No set of up to {result.max_depth} feature{'s' if result.max_depth > 1 else ''} moved to the "
                f"reference values flips the prediction{held} (larger sets were not searched).")
    return f"Even moving every feature{held} to the reference values does not flip the prediction."


def engine_sentence(result, exact_control: str = EXACT_CONTROL) -> str:
    """How an SEV value was found and whether it is proven, in words (an :class:`~explain_core.sev.SEVResult`); an
    exact search stopped by its budget names ``exact_control``, the setting that raises it."""
    if result.status == "limit" and result.engine == "bfs":
        text = (f"Breadth-first search up to {count_noun(result.max_depth, 'feature')} ({result.rows or 0:,} model "
                "rows): every smaller set was tried, so the lower bound is proven; the upper bound is the flip a "
                "greedy path found, checked by the model." if result.upper is not None else
                f"Breadth-first search up to {count_noun(result.max_depth, 'feature')}, then a greedy path that "
                "found no flip within the budget.")
    elif result.status == "limit":
        upper = f" and at most {result.value}" if result.value is not None else ""
        text = (f"The exact solver's budget ran out: the value is at least {result.bound or 0}{upper}, not proven "
                f"(raise {exact_control} to certify it).")
    elif result.engine == "bfs":
        text = ("Breadth-first search of the hypercube: every smaller set of features was tried, so the value is "
                "exact." if result.status != "beyond_depth" else
                f"Breadth-first search up to {count_noun(result.max_depth, 'feature')}: larger sets were not tried.")
    else:
        how = {"cp-sat": "by the exact solver (OR-Tools CP-SAT) on the model's own trees",
               "tree layers": "by trying every smaller set of features on the model's own trees",
               "additive": "by sorting the features' effects (the model is additive here)",
               "mip": "by the exact solver (HiGHS, a mixed-integer model of the network's own weights)",
               "network layers": "by trying every smaller set of features on the network's own weights"}[result.engine]
        text = f"Proven minimal {how}; each explanation was re-checked by the model itself."
        if result.status == "unexplainable":
            text = f"Proven {how}: no set of movable features flips the prediction."
    if result.first_flip and not result.complete:
        text += " The search stopped at the first flipping set of features: other minimal explanations may exist."
    elif not result.complete and result.engine == "bfs":  # a bracket's greedy path: one flip of that size
        text += " The greedy path's flip is listed; other minimal explanations of that size may exist."
    elif result.status == "limit":  # the solver's best flip, if any: not proven minimal
        text += " The flip it found is listed, checked by the model; a smaller one may exist." if result.explanations \
            else ""
    elif not result.complete:
        shown = len(result.explanations)
        text += (" One minimal explanation is listed" if shown == 1 else
                 f" The first {shown} minimal explanations are listed") + \
            "; the search for others stopped at its limit, so there may be more."
    return f"{text} {result.note}" if result.note else text


def depth_cap_sentence(result, requested: int, movable: int) -> str:
    """Why the breadth-first search of an SEV ``result`` stopped short of the ``requested`` depth (the page's
    slider), in words, or "" where it did not: the next depth alone would hold more mixes of the row and the
    reference than one depth may score per row (:data:`~explain_core.sev.engine.MAX_LAYER_VERTICES`), with
    ``movable`` features free to move."""
    searched = result.max_depth
    if result.engine != "bfs" or result.status not in ("beyond_depth", "limit") or searched >= min(requested, movable):
        return ""
    deeper = searched + 1
    if comb(movable, deeper) <= sev_engine.MAX_LAYER_VERTICES:  # the budget of model rows stopped it: the bracket says
        return ""
    return (f"Searched to depth {searched}, not the {requested} the depth slider asks for: depth {deeper} alone would "
            f"score {comb(movable, deeper):,} mixes of the row and the reference ({deeper} of the {movable} movable "
            f"features), more than the {sev_engine.MAX_LAYER_VERTICES:,} one depth may score per row. Holding "
            "features fixed (restricted features) lets the search go deeper.")


def tree_sev_sentence(result, class_names) -> str:
    """SEVᵀ in words: which features change to which values, and what the model then predicts."""
    if result.value is None:
        if result.status == "limit":
            return f"The exact solver's budget ran out before it found SEVᵀ (at least {result.bound or 0})."
        return "No change of features to values seen in the training data makes the model predict the other class."
    changes = ", ".join(f"{column} → {format_value(value)}" for column, value in result.point.items())
    conditions = (f" (the row violates {result.conditions} split condition{'s' if result.conditions != 1 else ''} "
                  "on the path to that leaf)" if result.conditions is not None else "")
    reached = class_names[result.reached_class] if result.reached_class is not None else "the other class"
    return f"Changing {changes} makes the model predict {reached}{conditions}."


def lens_reading(setup: "Setup", report: "LensReport", context: "LensContext") -> str:
    """LENS's answer in one plain sentence (PS of Def. 2 as a share of the reference rows): the τ-minimal factor
    with the fewest features (then the highest PS) of ``report``, or, when none reaches τ, the best PS that
    ``context`` (the scored factors) holds."""
    result = report.factors
    outcome, n = outcome_text(setup, result.outcome), result.samples
    rows = f"{n:,} reference row{'s' if n != 1 else ''} (training rows the model predicts the other way)"
    if not result.factors:
        best = int(np.argmax(context.ps)) if len(context.masks) else None
        text = (f"No set of up to {report.max_size} feature{'s' if report.max_size != 1 else ''} is enough for "
                f"the prediction {outcome} in at least {result.tau:.0%} of the {rows}")
        if best is not None and context.factor(best):
            text += (f"; the closest, {join_words(context.factor(best))}, is enough in "
                     f"{_share(context.ps[best])} of them")
        return text + "."
    best = min(result.factors, key=lambda f: (len(f.groups), -f.ps))
    names = join_words(best.groups)
    if not best.groups:
        text = f"Even with nothing changed, the prediction is {outcome} in {_share(best.ps)} of the {rows}"
    elif report.direction == "r2i":
        text = (f"Setting {names} to this row's values is enough for the prediction {outcome} in "
                f"{_share(best.ps)} of the {rows}")
    else:
        text = (f"Giving this row a reference row's {names} is enough to change the prediction to {outcome} in "
                f"{_share(best.ps)} of the {rows}")
    others = len(result.factors) - 1
    if others:
        text += (f"; {others} other set{'s' if others > 1 else ''} of features "
                 f"{'are' if others > 1 else 'is'} also enough (τ = {result.tau:g})")
    return text + "."


def _share(ps: float) -> str:
    """A share as a whole percentage, never "100%" for less than all (99.6% reads "99.6%")."""
    text = f"{ps:.0%}"
    return f"{ps:.1%}" if text in ("100%", "0%") and 0 < ps < 1 else text


def lemma4_sentence(coverage: dict[str, str], k: int, sigma: float) -> str:
    """Which explainers the relevance bound R ≤ (1 + e^−σ)^k·F (PLE Lemma 4) covers on this row, read off each
    w (``Comparison.bound_coverage``), so the caption never contradicts the table."""
    def named(verdict: str) -> str:
        return join_words([METHOD_LABELS.get(m, m) for m, v in coverage.items() if v == verdict])

    factor = (1 + math.exp(-sigma)) ** k
    parts = [f"Guarantee (PLE Lemma 4): for an anchored explanation with at most k = {k} weights, the relevance "
             f"error is at most {factor:.3g} × the fidelity error (the bound column)"]
    if named("covered"):
        parts.append(f"it covers {named('covered')} here")
    if named("not anchored"):
        parts.append(f"not {named('not anchored')}, which miss the model's output at this row (gap above 0)")
    if named("more than k weights"):
        parts.append(f"nor {named('more than k weights')}, with more than {k} weights")
    return "; ".join(parts) + "."


def linear_reading(setup: "Setup", linear: "LinearExplanation", methods: Sequence[str]) -> str:
    """The linear explanations in plain words (page and report): how well the best k-weight rule among ``methods``
    (a tie goes to the certified exact fit) reproduces the model near the row, and how often the model answers
    otherwise among variations the rule cannot tell from the row (PLE's fidelity F and relevance R). The features
    named are the rule's own weighted terms (:meth:`~explain_core.linear.compare.LinearExplanation.
    support_groups`), as its chart and the PDF's summary name them."""
    comparison = linear.comparison
    best = min((r for r in comparison.results if r.method in methods),
               key=lambda r: (round(r.scores.fidelity, 12), r.method != "exact"))
    used = linear.support_groups(best.method)
    text = (f"How well does a rule that uses at most {comparison.k - 1} features (plus a baseline) reproduce the "
            f"model near this row? Nearby variations move some features to the reference value (σ = "
            f"{comparison.sigma:g}: the larger, the closer to this row). The best rule here "
            f"({METHOD_LABELS.get(best.method, best.method)}) uses {join_words(used) or 'no feature'}; its fidelity "
            f"error is {best.scores.fidelity:.3f} (0 = it reproduces the model on every nearby variation).")
    rel = best.scores.relevance
    if rel is not None and setup.dataset.task == "classification":  # f = ±1: R is the chance of another answer
        text += (f" Among variations it cannot tell from this row, the model gives another answer "
                 f"{rel.value:.1%} of the time (relevance error).")
    elif rel is not None:
        text += f" Among variations it cannot tell from this row, the relevance error is {rel.value:.3f}."
    return text


# ---------------------------------------------------------------------------------------------------
# Other kinds of reference, credibility, counterfactuals ("Improving Decision Sparsity")

def credibility_text(value: float | None) -> str:
    """A credibility percentile in words."""
    if value is None or not math.isfinite(value):
        return "credibility not computed"
    return f"more typical than {value:.0%} of the real cases of that class"


def prototype_title(setup: Setup, number: int, explain_class: int = 1) -> str:
    """"Typical case #3 of <the other class> (<its card label>)"."""
    return f"Typical case #{number} of {outcome_text(setup, 1 - explain_class)}"


def reference_reading(setup: Setup, result) -> str:
    """A :class:`~explain_core.references.ReferenceSEV` in one plain sentence: what its closest explanation changes,
    how far (numeric features, in standard deviations) and how credible the point it reaches is."""
    other = outcome_text(setup, 1 - result.explained_class)
    against = {"single": "the reference", "flexible": "values near the reference",
               "cluster": f"typical case #{getattr(result, 'prototype', 0)}",
               "tree": "values seen in the training rows"}[result.kind]
    first = result.first
    if first is None:
        if result.status == "limit":
            return "The exact solver's budget ran out before it found the fewest features to change."
        if result.status == "beyond_depth":
            return (f"No set of up to {count_noun(result.max_depth, 'feature')} moved to {against} flips the "
                    "prediction (larger "
                    "sets were not searched).")
        return f"Even moving every feature to {against} does not flip the prediction."
    row = result.query.to_dict()
    group = setup.dataset.group
    changes = join_words([f"{g} from {format_value(group(g).value_of(row))} to "
                          f"{format_value(group(g).value_of({**row, **first.values}))}" for g in first.groups])
    text = (f"Changing {changes} ({against}) flips the prediction to {other}; the largest numeric change is "
            f"{format_number(first.linf)} standard deviations, and the point reached is "
            f"{credibility_text(first.credibility)}.")
    if result.credible is False:
        text += (f" No explanation of this length, or one feature longer, lands where at least {result.threshold:.0%} "
                 "of real cases are less typical; this is the closest one of the shortest length.")
    return text


def counterfactual_reading(summary: pd.DataFrame) -> str:
    """A :meth:`~explain_core.counterfactuals.CounterfactualComparison.summary` in one sentence: the sparsest SEV
    kind and how DiCE's points compare."""
    sev = summary[~summary.index.str.startswith("DiCE")].dropna(subset=["ℓ0"])
    dice = summary[summary.index.str.startswith("DiCE")]
    parts = []
    if len(sev):
        best = sev.sort_values(["ℓ0", "ℓ∞ (SD)"]).iloc[0]
        parts.append(f"{best.name} changes {count_noun(best['ℓ0'], 'feature')}, the largest numeric change "
                     f"{best['ℓ∞ (SD)']:.2f} standard deviations, and lands where it is "
                     f"{credibility_text(best['credibility'])}")
    if len(dice) and dice["points"].iloc[0] > 0:
        d = dice.iloc[0]
        one = d["points"] == 1
        parts.append(f"DiCE's {count_noun(d['points'], 'counterfactual')} {'changes' if one else 'change'} "
                     f"{d['ℓ0']:.1f} features{'' if one else ' on average'}, with a largest numeric change of "
                     f"{d['ℓ∞ (SD)']:.2f} standard deviations, and {'is' if one else 'are'} "
                     f"{credibility_text(d['credibility'])}{'' if one else ' on average'}")
    elif len(dice):
        parts.append(f"DiCE found no counterfactual ({dice['note'].iloc[0]})")
    return "; ".join(parts) + "." if parts else "No method found a counterfactual for this row."
