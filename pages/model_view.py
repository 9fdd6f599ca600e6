"""Model & global view: how good the model is on its test rows (ROC/PR, confusion at the threshold, calibration,
class balance) and what drives it over many rows (mean |SHAP|, beeswarm, dependence) beside SEV's prevalence."""
import streamlit as st

from explain_core.limits import limits
from explain_core.views.global_shap import (beeswarm_figure, dependence_figure, global_shap, group_values,
                                            importance_figure)
from explain_core.views.model import (balance_figure, calibration_figure, confusion_figure, model_performance,
                                      pr_figure, roc_figure)
from explain_core.views.sev import feature_prevalence
from explain_core.views.vocabulary import format_number, plain
from pages import _shared as shared

SHAP_ROWS = 200


@st.cache_data(show_spinner="Scoring the test rows…", max_entries=8)
def performance(_setup, key: str):
    return model_performance(_setup)


@st.cache_data(show_spinner=False, max_entries=8)
def shap_sample(_setup, key: str, rows: int, seed: int, background: int):
    with st.spinner(f"SHAP values of {rows} test rows…"):
        return global_shap(_setup, rows=rows, seed=seed, background=background)


st.title("The model as a whole")
s, p = shared.setup(), shared.params()
perf = performance(s, s.key)
st.markdown(f"**{plain(s.model.name)}** on {len(perf.y):,} test rows of **{plain(s.dataset.name)}**"
            + (f": AUC {perf.auc:.3f}, average precision {perf.average_precision:.3f}" if perf.auc is not None else "")
            + f"; at the threshold {format_number(perf.threshold)} it gets "
              f"{(perf.confusion.to_numpy().trace() / len(perf.y)):.1%} of them right.")

st.subheader("How good is it?")
with st.container(key="mv_performance"):
    c1, c2 = st.columns(2)
    c1.plotly_chart(roc_figure(perf), width="stretch", key="mv_roc")
    c2.plotly_chart(pr_figure(perf), width="stretch", key="mv_pr")
    c3, c4, c5 = st.columns(3)
    c3.plotly_chart(confusion_figure(perf), width="stretch", key="mv_confusion")
    c4.plotly_chart(calibration_figure(perf), width="stretch", key="mv_calibration")
    c5.plotly_chart(balance_figure(perf), width="stretch", key="mv_balance")

st.subheader("What drives it over many rows?")
st.caption(f"SHAP values of {SHAP_ROWS} test rows drawn with seed {p.seed} (the same explainer and background as "
           "the row's SHAP on Compare), beside SEV's view: how often each feature is part of a row's minimal "
           "explanation over the flagged test rows.")
if st.toggle("Compute the global views", key="mv_global",
             help="SHAP of a sample of rows and SEV of every flagged row: seconds on large data, so opt-in."):
    gs = shap_sample(s, s.key, SHAP_ROWS, p.seed, p.shap_background)
    features = group_values(s, gs.rows)
    with st.container(key="mv_global_views"):
        left, right = st.columns(2)
        left.plotly_chart(importance_figure(gs), width="stretch", key="mv_importance")
        flagged = tuple(int(r) for r in shared.flagged_rows(s)[:limits().sev_rows])
        wide = shared.dataset_wide_sev(s, s.key, flagged, p.sev, "minus", s.restricted)
        right.plotly_chart(feature_prevalence(wide.results, s.dataset.group_names), width="stretch",
                           key="mv_prevalence")
        st.plotly_chart(beeswarm_figure(gs, features), width="stretch", key="mv_beeswarm")
        group = st.selectbox("Dependence plot of", list(gs.importance().index), key="mv_dependence_feature")
        st.plotly_chart(dependence_figure(gs, features, group), width="stretch", key="mv_dependence")
