"""The report's sections on the model over many rows: the decision threshold in the header facts when it was moved
on The model page, a short table of two models side by side
(:class:`~explain_core.inspection.two_models.ModelComparison`) when the session has a second model, partial
dependence with the model's strongest interactions (:mod:`.dependence`), and the cohorts, fairness and error tree
compared on the Cohorts & fairness page (:mod:`.cohorts`), with the same readings as the pages."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..inspection.interactions import SHAP_METHOD, Interactions
from ..inspection.threshold import threshold_sweep
from ..registry import method
from ..views.cohorts import comparison_text, error_tree_text, fairness_text, sev_text
from ..views.dependence import dependence_text, interaction_text
from ..vocabulary import fmt_metric, format_number, format_value
from .dependence import SHAP_RANKING_ROWS, sev_feature

if TYPE_CHECKING:
    from ..setup import Setup
    from .build import RowReport
    from .writer import Images, Writer


def threshold_fact(setup: Setup) -> list[list[str]]:
    """The header facts "Decision threshold" and its confusion counts on the test rows when it was moved from the
    model's own (else nothing)."""
    if setup.chosen_threshold is None:
        return []
    at = threshold_sweep(setup, points=2).at(setup.model.threshold).astype(float)  # the model page's confusion
    tp, fp, fn, tn = (int(at[c]) for c in ("TP", "FP", "FN", "TN"))
    return [["Decision threshold", f"{format_number(setup.model.threshold)}, chosen on The model page (the model's "
                                   f"own: {format_number(setup.own_threshold)}); label 1 by {setup.model.rule}"],
            ["Test rows at it", f"{tp:,} true positives, {fp:,} false positives, {fn:,} false negatives, {tn:,} true "
                                f"negatives (positive: {setup.class_names[1]})"]]


def two_models_table(w: Writer, r: RowReport) -> None:
    """Both models' test metrics, how often they disagree, and this row under each (SEV⁻, its first explanation)."""
    c = r.models
    w.h2("A second model beside this one")
    w.text(f"Model 2 is {c.names[1]} ({c.rules[1]}), on the same data and split: the two predict differently on "
           f"{len(c.disagree):,} of the {len(c.rows):,} test rows ({c.disagreement_share:.1%}).")
    rows = [[name, fmt_metric(c.metrics[0].get(name)), fmt_metric(c.metrics[1].get(name))]
            for name in c.metrics[0] if name in c.metrics[1]]
    if c.sev is not None:
        rows += [["this row: prediction", *(r.setup.class_names[ex.explained_class] for ex in c.sev)],
                 ["this row: SEV⁻", *(ex.minus.shown for ex in c.sev)],
                 ["this row: first SEV⁻ explanation",
                  *(", ".join(ex.minus.explanations[0]) if ex.minus.explanations else "none" for ex in c.sev)]]
    w.table(["Quantity", f"Model 1: {c.names[0]}", f"Model 2: {c.names[1]}"], rows, widths=(60, 60, 60))
LEAVES_SHOWN = 5


def _cell(value, percent: bool = False) -> str:
    if value is None or value != value:
        return "n/a"
    return f"{value:.0%}" if percent else format_number(round(float(value), 3))


def cohorts_section(w: "Writer", r: "RowReport", number: int, images: "Images") -> None:
    part = r.cohorts
    w.h1(f"{number}. Cohorts and fairness (test rows)")
    if part.comparison is not None:
        c = part.comparison
        w.text(comparison_text(c), size=10, style="B")
        w.text(f"{sev_text(c)} SEV and SHAP on at most {c.budget} test rows of each cohort (seed {c.seed}); wrong "
               f"means {c.error}.", size=9)
        rows = [[t["cohort"], t["filters"], int(t["test rows"]), _cell(t["error rate"], True), _cell(t["AUC"]),
                 _cell(t["unexplainable share"], True)] for _, t in c.table().iterrows()]
        w.table(["Cohort", "Filters", "Rows", "Wrong", "AUC", "Unexplainable"], rows,
                widths=(34, 70, 16, 18, 16, 26), align=("LEFT", "LEFT") + ("RIGHT",) * 4, size=7.5)
        images.draw(w, "cohorts")
    if part.fairness is not None:
        f = part.fairness
        w.text(fairness_text(f), size=10, style="B")
        rows = [[d["split"], _cell(d["demographic parity difference"]), _cell(d["equalised odds difference"]),
                 d["binning"] or "by value"] for _, d in f.differences().iterrows()]
        if rows:
            w.table(["Split", "Demographic parity diff.", "Equalised odds diff.", "Groups"], rows,
                    widths=(40, 36, 36, 68), align=("LEFT", "RIGHT", "RIGHT", "LEFT"), size=7.5)
        images.draw(w, "fairness")
    if part.errors is not None:
        tree = part.errors
        w.text(error_tree_text(tree), size=10, style="B")
        rows = [[leaf.rule, leaf.size, _cell(leaf.error_rate, True), _cell(leaf.error_share, True)]
                for leaf in tree.leaves[:LEAVES_SHOWN]]
        w.table(["Leaf rule", "Rows", "Wrong", "Share of errors"], rows, widths=(120, 18, 18, 24),
                align=("LEFT", "RIGHT", "RIGHT", "RIGHT"), size=7.5)
        w.note(f"A decision tree of depth {tree.max_depth} (leaves of at least {tree.min_samples_leaf} rows, seed "
               f"{tree.seed}) fitted on the test rows to predict whether the model is wrong: {tree.error}.")
PAIRS_SHOWN = 5


def dependence_section(w: Writer, r: RowReport, number: int, images: Images) -> None:
    result = r.dependence
    group = result.groups[0]
    w.h1(f"{number}. Partial dependence — how {group} moves the score")
    w.text(dependence_text(result), size=10, style="B")
    leading = sev_feature(r.sev, r.setup.model.threshold)
    why = ("the first feature of this row's minimal SEV explanation" if group == leading
           else f"the feature with the largest mean |SHAP| over {SHAP_RANKING_ROWS} test rows")
    w.text(f"Feature: {group}, {why}. The average is over {len(result.rows)} test rows drawn with seed {result.seed}, "
           f"each with {group} set to every value of the grid (its observed quantiles, or its levels); the faint "
           f"lines are {len(result.ice_rows)} of those rows one by one (ICE), the highlighted line is this row.",
           size=9)
    rows = [[format_value(v), format_number(a), format_number(o)]
            for v, a, o in zip(result.grids[0], result.average, result.row_ice)]
    w.table([group, f"average {result.output}", f"{result.output} of this row"], rows, widths=(60, 60, 60),
            align=("LEFT", "RIGHT", "RIGHT"), size=8)
    images.draw(w, "dependence", f"Partial dependence of {result.output} on {group}, with this row's ICE line.")
    if r.interactions is not None:
        interactions_part(w, r.interactions)


def interactions_part(w: Writer, found: Interactions) -> None:
    """The strongest pairs: the reading, the top pairs and how they were measured."""
    w.h2("Which features act together")
    w.text(interaction_text(found), size=10, style="B")
    rows = [[f, other, format_number(v)] for f, other, v in found.pairs().head(PAIRS_SHOWN).itertuples(index=False)]
    w.table(["Feature", "With", found.measure], rows, widths=(60, 60, 60), align=("LEFT", "LEFT", "RIGHT"), size=8)
    w.note(f"{found.explainer}: mean |SHAP interaction value| of each pair on the trees' output ({found.output})."
           if found.method == SHAP_METHOD else
           f"{found.explainer} (an estimate: the model is not a tree ensemble shap reads); 0 = the pair's effects "
           "add up, 1 = their joint effect is all interaction.")


def method_section(w: Writer, r: RowReport, name: str, number: int, images: Images) -> None:
    """The section of a registered method the report has no layout of its own for: its title, its reading, its
    contents and its figure."""
    m = method(name)
    w.h1(f"{number}. {m.section.title}")
    if m.reading is not None:
        w.text(m.reading(r.results), size=10, style="B")
    contents = m.section.contents(r.results) if callable(m.section.contents) else m.section.contents
    if contents:
        w.note("This section holds " + "; ".join(contents) + ".")
    if m.figure is not None:
        images.draw(w, name, f"{m.label}: {m.section.title}.")
