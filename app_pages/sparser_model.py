"""Sparser model: train a model whose decisions have shorter explanations (SEV paper §4) and compare it with the
base model on the test rows; make it the session's model or download it."""
import streamlit as st

from explain_core.intake.demo_models import DEMO_KINDS
from explain_core.intake.onnx_export import onnx_bytes
from explain_core.sparse.compare import KIND_LABELS
from explain_core.sparse.families import DEFAULTS_NOTE
from explain_core.sparse.losses import OBJECTIVES
from explain_core.sparse.training import (TRAINABLE_KINDS, TrainingSettings, base_setup, skops_bytes, sparse_setup,
                                          train_sparse)
from explain_core.views.sparse import history_figure, prevalence_figure, sev_distributions, sev_sankey
from explain_core.views.style import chart_name
from explain_core.views.summaries import history_text, sankey_text
from explain_core.vocabulary import plain
from ui import shared
from ui import stops

SESSION = "session"
OBJECTIVE_HELP = {
    "all_opt_plus": "shorter SEV⁺: one feature of the row, moved onto the reference, should already give the "
                    "positive prediction",
    "all_opt_minus": "shorter SEV⁻: one feature set to the reference's value should flip the positive prediction",
    "all_opt_restricted": "shorter SEV®: as All-Opt⁻, with the restricted features held fixed",
    "vol_opt": "shorter SEV⁺ for a linear model, by shrinking the region where more than one feature is needed",
    "all_opt_cluster": "shorter SEV^©: one feature set to the row's typical case (of the other class) should flip "
                       "the positive prediction",
    "all_opt_flexible": "shorter SEV^F: one feature set to the reference or to its flexible version should flip "
                        "the positive prediction",
}


@st.cache_resource(show_spinner="Training the base model…", max_entries=8)
def base_model(_setup, key: str, kind: str):
    return base_setup(_setup, kind)


st.title("Sparser model")
st.markdown("Is there an **equally accurate model whose decisions can be explained with one feature**? Train one "
            "from a base model, then compare accuracy and explanation lengths on the test rows before and after.")
s, p = shared.setup(), shared.params()
if s.dataset.task != "classification" or s.explainable_classes():
    st.info("Training for sparse explanations works on two-class classification: load a binary classification "
            "dataset (e.g. COMPAS, Adult, German credit) on the Home or Data & model page.", icon=":material/info:")
    st.stop()
origin = s.training.result.settings.label if s.training is not None else None
if origin:
    st.info(f"The session's model was trained on this page ({plain(origin)}).", icon=":material/info:")

with st.form("sparse_form"):
    c1, c2 = st.columns(2)
    kind = c1.selectbox("Base model", [SESSION, *TRAINABLE_KINDS], key="sparse_base",
                        format_func=lambda k: f"the session's model ({s.model.name})" if k == SESSION
                        else DEMO_KINDS[k])
    objective = c2.selectbox("Objective", list(OBJECTIVES), key="sparse_objective", format_func=OBJECTIVES.get,
                             help="; ".join(f"{OBJECTIVES[k]}: {v}" for k, v in OBJECTIVE_HELP.items()))
    defaults = f"Empty: the model's default ({DEFAULTS_NOTE})."
    c1, c2, c3 = st.columns(3)
    strength = c1.number_input("λ (weight of the SEV term)", 0.0, 100.0, None, 0.01, key="sparse_lambda",
                               placeholder="the model's default", help=defaults)
    warmup = c2.number_input("Warm-up epochs (accuracy only)", 0, 500, None, key="sparse_warmup",
                             placeholder="the model's default", help=defaults)
    epochs = c3.number_input("Epochs with the SEV term", 0, 500, None, key="sparse_epochs",
                             placeholder="the model's default", help=defaults)
    with st.expander("More settings"):
        c1, c2, c3, c4, c5 = st.columns(5)
        pos_base = c1.number_input("C₂ (keep the reference negative)", 0.0, 100.0, 1.0, 0.1, key="sparse_c2")
        theta = c2.number_input("θ margin", 0.0, 0.5, 0.05, 0.01, key="sparse_theta")
        batch = c3.number_input("Batch size", 1, 4096, 128, key="sparse_batch")
        rate = c4.number_input("Learning rate", 0.0001, 1.0, None, format="%.4f", key="sparse_lr",
                               placeholder="the model's default", help="Adam's step. " + defaults)
        seed = c5.number_input("Seed", 0, 2**31 - 1, p.seed, key="sparse_seed")
    run = st.form_submit_button("Train", icon=":material/model_training:")

if run:
    settings = TrainingSettings(objective=objective, strength=strength, pos_base_strength=float(pos_base),
                                theta=float(theta), warmup_epochs=warmup, sev_epochs=epochs, batch_size=int(batch),
                                learning_rate=rate, seed=int(seed),
                                restricted=s.restricted if objective == "all_opt_restricted" else ())
    base = s if kind == SESSION else base_model(s, s.key, kind)
    with stops.stoppable(f"training {OBJECTIVES[objective]}", None), \
            shared.progress_bar(f"Training {OBJECTIVES[objective]}…") as progress:
        result = train_sparse(base, settings, progress=progress)
    st.session_state["sparse_run"] = (base, sparse_setup(base, result))
    st.rerun()  # the page from the top, with the trained model

if "sparse_run" not in st.session_state:
    st.caption(f"Choose a base model and an objective, then train. Batches of 128 and Adam; the defaults: "
               f"{DEFAULTS_NOTE}.")
    st.stop()

before, after = st.session_state["sparse_run"]
if before.dataset.key != s.dataset.key:
    st.info("The last trained model belongs to another dataset; train again.", icon=":material/info:")
    st.stop()
result = after.training.result
with stops.stoppable("the SEV of the trained model's test rows (its training is not kept either)",
                     stops.run_key("sparse_compare", after.key, p.sev), forget=("sparse_run",)), \
        shared.progress_bar("SEV of every positive test row, before and after…") as progress:
    compared = after.training.comparison(after, p.sev, progress)
table = compared.table()
st.subheader(f"{plain(result.settings.label)} (λ = {result.settings.strength:g}) from {plain(result.base_name)}")
shortfall = compared.shortfall(result.settings.objective, result.settings.strength)
if shortfall is None:
    st.success(plain(compared.headline()), icon=":material/insights:")
else:
    st.warning(plain(f"This run did not give a better model, so the session keeps {result.base_name}: {shortfall}"),
               icon=":material/warning:")
if after.model.labels_of([compared.after.reference_score])[0] == 1:  # the model's own rule (≥ a custom threshold)
    st.warning("The trained model predicts the reference itself positive, so SEV⁺ is 0 and SEV⁻ finds no path: "
               "raise C₂ (under More settings) to keep the reference negative, and train again.",
               icon=":material/warning:")
if compared.after.positive_share < compared.before.positive_share / 2:
    st.warning(f"The trained model predicts {plain(s.dataset.class_name(1))} for far fewer test rows "
               f"({compared.before.positive_share:.0%} → {compared.after.positive_share:.0%}): short explanations "
               "bought by predicting the negative class, which the paper warns of. Lower λ or the learning rate, "
               "and train again.", icon=":material/warning:")
t = result.settings
st.caption(f"Trained in {result.seconds:.1f} s on {result.device}: {t.warmup_epochs} warm-up epochs and {t.sev_epochs} "
           f"with the SEV term, learning rate {t.learning_rate:g}. Mean SEV is over the test rows each model predicts "
           f"{plain(s.dataset.class_name(1))}, against the same reference.")
with st.container(key="sparse_table"):
    st.dataframe(table.style.format("{:.3f}"), width="stretch")
    shared.download_buttons("sparse_before_after", table, compared, key="sparse_table", context={"training": result})

kind = st.radio("Explanations shown", list(compared.kinds), horizontal=True, key="sparse_kind",
                format_func=KIND_LABELS.get)
label = KIND_LABELS[kind]
left, right = st.columns(2)
distributions = sev_distributions({"before": compared.before.sev[kind].values,
                                   "after": compared.after.sev[kind].values}, label=label)
left.plotly_chart(distributions, width="stretch", key="sparse_dist", alt=chart_name(distributions))
moves = compared.transitions(kind)
shared.chart(sev_sankey(moves, label=label), sankey_text(moves, label=label), "sparse_sankey", right)
prevalence = prevalence_figure(compared.prevalence(kind), label=label)
st.plotly_chart(prevalence, width="stretch", key="sparse_prev", alt=chart_name(prevalence))

c1, c2, c3 = st.columns(3)
if c1.button("Use this model for the session", icon=":material/swap_horiz:", key="sparse_use",
             disabled=s.model_key == after.model_key or shortfall is not None,
             help=None if shortfall is None else "Not better than the base model (see above)."):
    shared.use_setup(after)
    st.rerun()
c2.download_button("Download the model (.skops)", data=lambda: skops_bytes(after), file_name="sparser_model.skops",
                   mime="application/octet-stream", key="sparse_download", icon=":material/download:",
                   help="scikit-learn's Pipeline (encoder and model), for skops.io.load or this app's upload.")
c3.download_button("Download the model (.onnx)", data=lambda: onnx_bytes(after), file_name="sparser_model.onnx",
                   mime="application/octet-stream", key="sparse_download_onnx", icon=":material/download:",
                   help="One input per raw column (numbers as float32, text as strings), for onnxruntime or "
                        "this app's upload; written when you click.")
with st.expander("Training history"):
    shared.chart(history_figure(result.history), history_text(result.history), "sparse_history")
with st.expander("The objectives in the paper's notation"):
    st.markdown(
        "Training minimises BCE + λ·ℓ_SEV + C₂·ℓ_Pos_base (eq. 9), the SEV terms after the warm-up. "
        "All-Opt⁺ (eq. 6): −1/n⁺ Σᵢ min(maxⱼ g(eⱼ⊙xᵢ + (1−eⱼ)⊙x̃), T); All-Opt⁻ (eq. 7): "
        "1/n⁺ Σᵢ max(minⱼ g((1−eⱼ)⊙xᵢ + eⱼ⊙x̃), T), and All-Opt® over the unrestricted features only; "
        "All-Opt^© / All-Opt^F (Improving Decision Sparsity, S12): 1/n⁺ Σᵢ [max(min_{m,j} g(xᵢ with group j at "
        "reference m), T − θ) − (T − θ)], the references m being the row's typical case (©) or the reference and "
        "its flexible version r^F (F); ℓ_Pos_base keeps the worst of them negative. "
        "Vol-Opt (eq. 5, linear models): 1/G Σ_g log |g_ref(β)/s_g(β)|, one axis per feature group, s_g the "
        "root mean square of the group's step β_g·(x_g − x̃_g) over the training rows (|β_j| times a constant for "
        "a numeric feature); ℓ_Pos_base (eq. 8): max(g(x̃), T − θ). "
        "j runs over feature groups (a categorical feature moves as one); gradient boosting keeps its trees and "
        "learns one weight per tree.")
