"""The report's partial dependence part: how one feature moves the model's score over a sample of test rows,
with this row's own line (ICE) highlighted. A report has no analyst to pick the feature, so it takes the first
feature of the row's minimal SEV explanation (the one the reading leads with), or, without an SEV section or
explanation, the feature with the largest mean |SHAP| over 100 test rows (as the model page's importance chart).
Below it, the model's strongest feature interactions over the model page's sample (its matrix's top pairs). The
section that writes them is :func:`~.model_sections.dependence_section`."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ..inspection.dependence import PartialDependence, partial_dependence
from ..inspection.global_shap import global_shap
from ..inspection.interactions import Interactions, interactions
from ..sev.engine import SEVExplanation
from ..sev.readings import explanation_lines

if TYPE_CHECKING:
    from ..setup import Setup

SHAP_RANKING_ROWS = 100
CONTENTS = ("Partial dependence", ["how the row's leading feature moves the score on average and for this row "
                                   "(PDP and ICE)", "the grid values with both scores",
                                   "the strongest feature interactions"])


def sev_feature(sev: SEVExplanation | None, threshold: float) -> str | None:
    """The first feature of the row's strongest minimal SEV explanation (SEV® when features are restricted, else
    SEV⁻: the one the report's reading leads with; ``threshold``: the model's), if any."""
    if sev is None:
        return None
    lines = explanation_lines(sev, "minus" if sev.restricted is None else "restricted", threshold)
    return lines[0].moves[0].group if lines else None


def report_dependence(setup: Setup, query: pd.DataFrame, row: int | None, feature: str | None,
                      seed: int = 0) -> PartialDependence:
    """PDP and ICE of ``feature`` (:func:`sev_feature`; None: the largest mean |SHAP|) for the row ``query``, over
    the model page's sample (the same rows and numbers as its chart)."""
    group = feature or global_shap(setup, rows=SHAP_RANKING_ROWS, seed=seed).importance().index[0]
    return partial_dependence(setup, [group], query=query, row=row, seed=seed)


def report_interactions(setup: Setup, seed: int = 0) -> Interactions:
    """The interactions of :func:`~explain_core.inspection.interactions.interactions`'s default sample (the model
    page's): the same for every row of the setup."""
    return interactions(setup, seed=seed)
