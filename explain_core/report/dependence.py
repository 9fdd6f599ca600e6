"""The report's partial dependence section: how one feature moves the model's score over a sample of test rows,
with this row's own line (ICE) highlighted. A report has no analyst to pick the feature, so it takes the first
feature of the row's minimal SEV explanation (the one the reading leads with), or, without an SEV section or
explanation, the feature with the largest mean |SHAP| over 100 test rows (as the model page's importance chart).
Below it, the model's strongest feature interactions over the model page's sample (its matrix's top pairs)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ..inspection.dependence import PartialDependence, partial_dependence
from ..inspection.interactions import SHAP_METHOD, Interactions, interactions
from ..sev.engine import SEVExplanation
from ..sev.readings import explanation_lines
from ..views.dependence import dependence_text, interaction_text
from ..views.global_shap import global_shap
from ..views.vocabulary import format_number, format_value

if TYPE_CHECKING:
    from ..setup import Setup
    from .build import RowReport
    from .pdf import Images, Writer

SHAP_RANKING_ROWS = 100
PAIRS_SHOWN = 5
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
