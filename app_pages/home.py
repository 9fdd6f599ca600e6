"""Home: what the tool does, the current session, and where to start."""
import streamlit as st

from explain_core.intake.demos import demo_cards, demo_names
from explain_core.intake.demo_models import DEMO_KINDS, kind_label
from explain_core.intake.formats import MODEL_FORMATS
from explain_core.views.readings import decision_sentence, outcome_text
from explain_core.vocabulary import DEMO_LABELS, plain
from ui import boundary
from ui import callbacks
from ui import saved
from ui import shared


def load_demo(drawn_demo: str, drawn_kind: str) -> None:
    """“Load demo” (a callback: it runs before the page does, so a click on another page right after it is not
    lost): the chosen demo becomes the session's, then Pick a row. The choosers' state, or what they showed when it
    is gone: a page link's click folded into the same rerun has Streamlit drop the state of Home's widgets first."""
    callbacks.request_demo(st.session_state.get("home_demo", drawn_demo), st.session_state.get("home_kind", drawn_kind))
    callbacks.go_to("app_pages/pick_row.py", leaving="Home")


st.title("Explanation explorer")
st.markdown(
    "Pick a row and a model, and this tool tells you **why the model decided as it did**. "
    "**SEV** finds the fewest features that, set to a reference, flip the decision; **LENS** finds the sets of "
    "features that are sufficient for it, with their probabilities; **anchored k-sparse linear explanations** fit "
    "the model around the row with at most k weights and a certificate of optimality. "
    "**LIME** and **SHAP** sit beside them, so every method can be compared on the same row."
)

s = shared.setup()
st.subheader("Current session")
metrics = s.metrics
c = st.columns([1.3, 2.6, 1, 1, 0.8])  # the model's name is the longest value: room for it in full
c[0].metric("Dataset", plain(s.dataset.name),
            help=f"{len(s.dataset.features):,} rows, {len(s.dataset.groups)} features")
c[1].metric("Model", plain(s.model.name.split(" on ")[0]), help=plain(s.source))
if s.dataset.task == "classification":
    c[2].metric("Test accuracy", f"{metrics.get('test_accuracy', float('nan')):.3f}")
    c[3].metric("Test AUC", f"{metrics.get('test_auc', float('nan')):.3f}")
else:
    c[2].metric("Test R²", f"{metrics.get('test_r2', float('nan')):.3f}")
    c[3].metric("Test RMSE", f"{metrics.get('test_rmse', float('nan')):.3g}")
c[4].metric("Row", shared.row())
mirror = (" Rows predicted in the reference's own class are explained against the same statistic over the other "
          "class." if s.reference.population == "opposite" else "")
st.caption(f"Reference: {plain(s.reference.description)}.{mirror} Restricted features: "
           f"{plain(', '.join(s.restricted)) or 'none'}.")
with st.container(key="home_decision"):  # the row's decision first, and the way to its explanation
    row, edited = shared.row(), " (with its what-if edits)" if st.session_state.get("whatif") else ""
    st.markdown(f"**{plain(decision_sentence(s, f'row {row}{edited}', shared.current_score()))}**")
    outcome = plain(outcome_text(s, shared.current_label()))
    st.page_link("app_pages/sev.py", icon=":material/hub:",
                 label=f"Why does the model predict {outcome} for row {row}? → SEV")

st.subheader("Start")
left, right = st.columns(2)
with left, st.container(border=True):
    st.markdown("**From a demo**: a bundled dataset with a model trained here.")
    name = st.selectbox("Demo dataset", demo_names(), key="home_demo", format_func=lambda n: DEMO_LABELS.get(n, n),
                        index=demo_names().index(s.dataset.name) if s.dataset.name in demo_names() else 0)
    task = demo_cards()[name]["task"]
    kind = st.selectbox("Model", list(DEMO_KINDS), key="home_kind", format_func=lambda k: kind_label(k, task),
                        index=list(DEMO_KINDS).index("gbdt"))
    st.button("Load demo", key="home_load", type="primary", icon=":material/play_arrow:",
              on_click=boundary.guarded(load_demo), args=(name, kind))
with right, st.container(border=True):
    st.markdown(f"**From your files**: a CSV or Parquet table, and a model ({plain(MODEL_FORMATS)}) or one trained "
                "here.")
    if st.button("Upload data and model", key="home_upload", icon=":material/upload:"):
        callbacks.switch_page("app_pages/data_model.py")

saved.saved_list()
