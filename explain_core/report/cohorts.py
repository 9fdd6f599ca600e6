"""The report's cohort section, when the analyst compared cohorts on the Cohorts & fairness page: the cohorts side by
side, the fairness summary (group metrics and the two differences per split) and the error tree's worst leaves, with
the same readings and figures as the page (:mod:`explain_core.views.cohorts`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from ..inspection.cohorts import CohortComparison
from ..inspection.errors import ErrorTree
from ..inspection.fairness import FairnessReport
from ..views.cohorts import (comparison_figure, comparison_text, error_tree_text, fairness_figure, fairness_text,
                             sev_text)
from ..views.vocabulary import format_number

if TYPE_CHECKING:
    from .build import RowReport
    from .pdf import Images, Writer

LEAVES_SHOWN = 5
REPORT_KEY = "cohort_report"  # the app's session key of the latest results (the setup's key, a CohortsPart)


@dataclass(frozen=True)
class CohortsPart:
    """What the section shows: any of the cohort comparison, the fairness report and the error tree."""

    comparison: CohortComparison | None = None
    fairness: FairnessReport | None = None
    errors: ErrorTree | None = None

    def contents(self) -> list[str]:
        return [what for what, result in (("the cohorts side by side", self.comparison),
                                          ("fairness group metrics and differences", self.fairness),
                                          ("the error tree's worst leaves", self.errors)) if result is not None]


def cohort_figures(part: CohortsPart) -> dict[str, go.Figure]:
    figures = {}
    if part.comparison is not None:
        figures["cohorts"] = comparison_figure(part.comparison)
    if part.fairness is not None and part.fairness.splits:
        worst = max(part.fairness.splits, key=lambda s: s.odds_difference)
        figures["fairness"] = fairness_figure(part.fairness, worst.split)
    return figures


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
