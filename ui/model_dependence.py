"""The model page's partial dependence, ICE and interactions section (opt-in, like the global views): one feature's
PDP with ICE lines and the chosen row's line, a 2-D PDP for a pair, and the matrix of interactions. Not a page (the
leading underscore): ``app_pages/model_view.py`` calls :func:`section`."""
from __future__ import annotations

import streamlit as st

from explain_core.inspection import interactions, partial_dependence
from explain_core.inspection.dependence import ICE_ROWS, PDP_ROWS
from explain_core.views.dependence import (dependence_figure, dependence_text, feature_label, interaction_figure,
                                           interaction_text)
from ui import shared

NO_PAIR = "(one feature)"


@st.cache_data(show_spinner="Partial dependence of the sampled rows…", max_entries=16)
def dependence(_setup, key: str, groups: tuple[str, ...], query, row: int, seed: int):
    return partial_dependence(_setup, list(groups), query=query, row=row, seed=seed)


@st.cache_data(show_spinner="Interactions of the sampled rows…", max_entries=8)
def pair_strengths(_setup, key: str, seed: int):
    return interactions(_setup, seed=seed)


def section(s, p) -> None:
    """The section, under the model page's global views."""
    st.subheader("How does one feature move the prediction?")
    st.caption(f"Partial dependence: the average {s.score_label} of {PDP_ROWS} test rows (seed {p.seed}) with the "
               f"feature set to each value of its grid (its observed quantiles; a categorical feature's levels as "
               f"bars); the faint lines are {ICE_ROWS} of those rows one by one (ICE), the highlighted one is row "
               f"{shared.row()}. Pick a second feature for the 2-D partial dependence of the pair.")
    if not st.toggle("Compute partial dependence and interactions", key="mv_pdp_toggle",
                     help="Scores the sampled rows at every grid value (one model call), and the interactions of a "
                          "sample: about a second, so opt-in."):
        return
    names = list(s.dataset.group_names)
    left, right = st.columns(2)

    def label(name: str) -> str:
        return name if name == NO_PAIR else feature_label(s.dataset, name)
    group = left.selectbox("Feature", names, key="mv_pdp_feature", format_func=label)
    pair = right.selectbox("With (2-D)", [NO_PAIR] + [n for n in names if n != group], key="mv_pdp_pair",
                           format_func=label)
    groups = (group,) if pair == NO_PAIR else (group, pair)
    result = dependence(s, s.key, groups, shared.query(), shared.row(), p.seed)
    with st.container(key="mv_pdp_views"):
        shared.chart(dependence_figure(result), dependence_text(result), "mv_pdp")
        shared.download_buttons("partial_dependence", result.table(), result, key="mv_pdp")
        st.subheader("Which features act together?")
        found = pair_strengths(s, s.key, p.seed)
        st.caption("SHAP interaction values of the trees (TreeExplainer) on a sample of test rows." if
                   found.method == "SHAP interaction values" else
                   f"H-statistic estimate (Friedman's H from partial dependence on {len(found.rows)} test rows): "
                   "the model is not a tree ensemble shap can read, so the pairs are estimated from the model's "
                   "scores.")
        shared.chart(interaction_figure(found), interaction_text(found), "mv_interactions")
        st.dataframe(found.pairs().head(10), hide_index=True, width="stretch")
        shared.download_buttons("interactions", found.pairs(), found, key="mv_interactions")
