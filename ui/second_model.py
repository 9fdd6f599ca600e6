"""A second model beside the session's, on the same data and split (:mod:`explain_core.inspection.two_models`):
a demo kind (the demo's own cached model on a bundled dataset, else trained here), a model file (the data page's
sandboxed loading) or the Sparser model page's result. Session key ``second_model``: (the session's setup key it
was aligned for, the aligned second setup), kept in saved analyses by its recipe (``ui/origins.py``);
realigned when the session's setup changes (another class or threshold), dropped with a message when it no
longer fits. The model page shows both models' metrics and where they
disagree; Compare shows the row's SEV and SHAP under both."""
from __future__ import annotations

import hashlib

import streamlit as st

from explain_core import IntakeError
from explain_core.inspection.two_models import aligned_second, compare_models
from explain_core.intake.demo_models import DEMO_KINDS, kind_label
from explain_core.intake.tables import safe_name
from explain_core.saved.recipe import FileRef, ModelRecipe
from explain_core.setup import Parameters, Setup, UploadChoices, make_setup
from explain_core.views.compare import attribution_figure
from explain_core.views.style import chart_name
from explain_core.vocabulary import plain
from ui import origins
from ui import shared
from ui import uploads

SECOND = "second_model"
SOURCES = {"demo": "a demo kind of model", "file": "a model file", "sparse": "the Sparser model page's result"}


@st.cache_data(show_spinner="Comparing the two models on the test rows…", max_entries=16)
def comparison(_first: Setup, key: str, _second: Setup, second_key: str, row: int | None, p: Parameters):
    """:func:`compare_models`, keyed by both setups, the row and the parameters (only SEV's and SHAP's matter)."""
    return compare_models(_first, _second, row, Parameters(**vars(p.sev), **vars(p.baselines)))


def second_model(s: Setup) -> Setup | None:
    """The session's second model aligned with ``s``; None when there is none (or it no longer fits: said once)."""
    kept = st.session_state.get(SECOND)
    if kept is None:
        return None
    if kept[0] != s.key:
        try:
            kept = (s.key, aligned_second(s, kept[1]))
        except IntakeError as exc:
            st.session_state.pop(SECOND)
            st.warning(f"The second model was dropped: {plain(exc)}", icon=":material/warning:")
            return None
        st.session_state[SECOND] = kept
    return kept[1]


def build_second(s: Setup, source: str, kind: str | None, upload) -> Setup | None:
    """The chosen second model as a setup (trained, loaded or the Sparser page's), or None with the reason shown."""
    data_recipe, model_recipe = origins.origins_of(s)
    seed = getattr(model_recipe, "seed", 0)
    if source == "demo":
        if getattr(data_recipe, "demo", None) and seed == 0:  # the demo's own model, cached on disk
            built = shared.demo(data_recipe.demo, kind)
            origins.remember_model(built.model_key, ModelRecipe("demo", kind))
            return built
        built = make_setup(s.dataset, shared.trained(s.dataset, s.dataset.key, kind, seed))
        origins.remember_model(built.model_key, ModelRecipe("trained", kind, seed))
        return built
    if source == "file":
        data, name = upload.getvalue(), safe_name(upload.name, "model")
        upload = uploads.ModelUpload(s.dataset.key, hashlib.sha1(data).hexdigest(), name, UploadChoices(seed=seed))
        trained = uploads.load_cached(s.dataset, data, upload)
        origins.remember_model(trained.key, ModelRecipe("file", seed=seed, file=FileRef.of(data, name)), data)
        return make_setup(s.dataset, trained)
    run = st.session_state.get("sparse_run")
    if run is None:
        st.info("No model has been trained on the Sparser model page in this session yet.", icon=":material/info:")
        return None
    return run[1]


def choose_second(s: Setup) -> None:
    """The form that picks the second model; it becomes the session's second model once it fits."""
    with st.form(f"second_form_{s.key}", border=False):
        c1, c2 = st.columns(2)
        source = c1.radio("Compare with", list(SOURCES), format_func=SOURCES.get, key="second_source")
        kind = c2.selectbox("Demo kind", list(DEMO_KINDS), format_func=lambda k: kind_label(k, s.dataset.task),
                            key="second_kind")
        upload = c2.file_uploader("Model file", type=uploads.MODEL_TYPES, key="second_file",
                                  help="Loaded as on the Data & model page: in a sandboxed worker, allow-listed.")
        go = st.form_submit_button("Use as the second model", icon=":material/compare:")
    if not go:
        return
    if source == "file" and upload is None:
        st.warning("Choose a model file first.", icon=":material/upload_file:")
        return
    try:
        built = build_second(s, source, kind, upload)
        if built is not None:
            st.session_state[SECOND] = (s.key, aligned_second(s, built))
    except IntakeError as exc:
        st.error(plain(exc), icon=":material/error:")


def second_model_section(s: Setup) -> None:
    """The model page's "Second model": choose one, then both models' metrics and the rows where they disagree."""
    st.subheader("Second model")
    choose_second(s)
    second = second_model(s)
    if second is None:
        st.caption("Pick a second model of this dataset to see both on the same test rows.")
        return
    compared = comparison(s, s.key, second, second.key, None, shared.params())
    names = compared.names
    st.markdown(f"Model 1: **{plain(names[0])}** ({plain(compared.rules[0])}) · model 2: **{plain(names[1])}** "
                f"({plain(compared.rules[1])}). They predict differently on **{len(compared.disagree):,}** of the "
                f"{len(compared.rows):,} test rows ({compared.disagreement_share:.1%}).")
    left, right = st.columns([1, 2])
    with left, st.container(key="second_metrics"):
        st.dataframe(compared.metrics_table().style.format("{:.3f}"), width="stretch")
    with right, st.container(key="second_disagree"):
        table = compared.disagreements()
        st.dataframe(table, width="stretch", height=280)
    shared.download_buttons("two_models", table, compared, key="second", what="rows they disagree on")
    if st.button("Remove the second model", key=f"second_remove_{s.key}", icon=":material/close:"):
        st.session_state.pop(SECOND, None)
        st.rerun()


def second_model_row(s: Setup) -> None:
    """Compare's block: the row's SEV and SHAP under the session's model and the second one (when there is one)."""
    second = second_model(s)
    if second is None:
        return
    st.subheader("The row under both models")
    compared = comparison(s, s.key, second, second.key, shared.row(), shared.params())
    for i, (ex, name) in enumerate(zip(compared.sev, compared.names)):
        found = (", ".join(ex.minus.explanations[0]) if ex.minus.explanations else "none found")
        st.markdown(f"Model {i + 1} (**{plain(name)}**) predicts **{plain(s.class_names[ex.explained_class])}**"
                    f" ({plain(s.score_text(ex.score))}): SEV⁻ = {ex.minus.shown}, moving {plain(found)}.")
    shaps = {f"model {i + 1} SHAP": shap.values for i, shap in enumerate(compared.shap)}
    figure = attribution_figure(compared.shap[0].groups, shaps, units={k: shap.output for k, shap in
                                                                   zip(shaps, compared.shap)},
                                title="SHAP of the row under each model")
    st.plotly_chart(figure, width="stretch", key="cmp_second_shap", alt=chart_name(figure))
    st.caption("Of the dataset row itself (what-if edits are not applied here); each model against its own "
               "reference of the other class.")
    shared.download_buttons(f"two_models_row{shared.row()}", compared.row_table(), compared, key="cmp_second")
