"""The report's cohort part, when the analyst compared cohorts on the Cohorts & fairness page: the cohorts side by
side, the fairness summary (group metrics and the two differences per split) and the error tree's worst leaves, with
the same figures as the page (:mod:`explain_core.views.cohorts`); its section is
:func:`~.model_sections.cohorts_section`."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from ..inspection.cohorts import CohortComparison
from ..inspection.errors import ErrorTree
from ..inspection.fairness import FairnessReport
from ..views.cohorts import comparison_figure, fairness_figure

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
