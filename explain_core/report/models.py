"""The report's part on the decision threshold and a second model: the threshold in the header facts when it was
moved on The model page, and a short table of the two models side by side
(:class:`~explain_core.inspection.two_models.ModelComparison`) when the session has a second model."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..inspection.threshold import threshold_sweep
from ..views.vocabulary import fmt_metric, format_number

if TYPE_CHECKING:
    from ..setup import Setup
    from .build import RowReport
    from .pdf import Writer


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
