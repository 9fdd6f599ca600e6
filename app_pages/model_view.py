"""Model & global view: how good the model is on its test rows (ROC/PR, confusion at the threshold, calibration,
class balance) and what drives it over many rows (mean |SHAP|, beeswarm, dependence) beside SEV's prevalence."""
import streamlit as st

from explain_core.inspection.global_shap import global_shap, group_values
from explain_core.inspection.performance import model_performance
from explain_core.limits import limits
from explain_core.sev.summaries import prevalence_table
from explain_core.views.global_shap import beeswarm_figure, dependence_figure, importance_figure
from explain_core.views.model import balance_figure, calibration_figure, confusion_figure, pr_figure, roc_figure
from explain_core.views.sev import feature_prevalence
from explain_core.views.summaries import (balance_text, beeswarm_text, calibration_text, confusion_text,
                                         dependence_text, importance_text, pr_text, prevalence_text, roc_text)
from explain_core.vocabulary import format_number, metrics_caveat, plain
from ui import model_dependence, model_threshold, shared, stops

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

if metrics_caveat(s.metrics):
    st.warning(metrics_caveat(s.metrics), icon=":material/visibility:")
st.subheader("How good is it?")
with st.container(key="mv_performance"):
    charts = [(roc_figure, roc_text, "mv_roc"), (pr_figure, pr_text, "mv_pr"),
              (confusion_figure, confusion_text, "mv_confusion"),
              (calibration_figure, calibration_text, "mv_calibration"), (balance_figure, balance_text, "mv_balance")]
    for start in range(0, len(charts), 2):  # two per line: room for the class names and the matrix's cells
        for column, (figure, words, key) in zip(st.columns(2), charts[start:start + 2]):
            shared.chart(figure(perf), words(perf), key, column)

model_threshold.threshold_and_second_model(s)  # the decision threshold; a second model beside this one

st.subheader("What drives it over many rows?")
st.caption(f"SHAP values of {SHAP_ROWS} test rows drawn with seed {p.seed} (the same explainer and background as "
           "the row's SHAP on Compare), beside SEV's view: how often each feature is part of a row's minimal "
           "explanation over the flagged test rows.")
if st.toggle("Compute the global views", key="mv_global",
             help="SHAP of a sample of rows and SEV of every flagged row: seconds on large data, so opt-in."):
    flagged = tuple(int(r) for r in shared.flagged_rows(s)[:limits().sev_rows])
    with stops.stoppable(f"SHAP of {SHAP_ROWS} rows and SEV of {len(flagged):,}",
                         stops.run_key("mv_global", s.key, SHAP_ROWS, p.seed, p.shap_background, flagged, p.sev,
                                       s.restricted), turn_off={"mv_global": False}):
        gs = shap_sample(s, s.key, SHAP_ROWS, p.seed, p.shap_background)
        wide = shared.dataset_wide_sev(s, s.key, flagged, p.sev, "minus", s.restricted)
    features = group_values(s, gs.rows)
    with st.container(key="mv_global_views"):
        left, right = st.columns(2)
        shared.chart(importance_figure(gs), importance_text(gs), "mv_importance", left)
        shared.chart(feature_prevalence(wide.results, s.dataset.group_names),
                     prevalence_text(prevalence_table(wide.results, s.dataset.group_names), "SEV⁻"), "mv_prevalence",
                     right)
        shared.chart(beeswarm_figure(gs, features), beeswarm_text(gs, features), "mv_beeswarm", st.container())
        group = st.selectbox("Dependence plot of", list(gs.importance().index), key="mv_dependence_feature")
        shared.chart(dependence_figure(gs, features, group), dependence_text(gs, features, group),
                     "mv_dependence", st.container())

model_dependence.section(s, p)
