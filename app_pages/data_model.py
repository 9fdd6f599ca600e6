"""Data & model: choose or upload a dataset, train or upload a model, set the reference and restricted features.

Nothing here touches the session's setup until **Use this setup**: the dataset and model being configured
live in this page's own session keys (``dm_dataset``, ``dm_model``), so a bad file or a failed load shows
its message and leaves the current setup, row and parameters as they were. All computation is
``explain_core``'s; this page only collects choices, caches by content hash and shows results. The two upload
forms (a table, a model file) and the working state they write are in ``ui/uploads.py``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explain_core import IntakeError
from explain_core.analysis import Setup, make_setup
from explain_core.intake.data import Dataset
from explain_core.intake.demos import demo_cards, demo_names
from explain_core.intake.demo_models import DEMO_KINDS, kind_label
from explain_core.intake.trained import TrainedModel
from explain_core.reference import POPULATIONS, STATISTIC_WORDS, STATISTICS, Reference, make_reference
from explain_core.saved.recipe import ModelRecipe
from explain_core.vocabulary import (DEMO_LABELS, TEST_ROWS_WORDS, format_number, format_value, metrics_caveat,
                                           plain)
from ui import boundary
from ui import callbacks
from ui import origins
from ui import shared
from ui import uploads

POPULATION_LABELS = {"opposite": "training rows of the opposite class", "all": "all training rows"}


# --- the page's working state -----------------------------------------------------------------------------------

def model_of(setup: Setup) -> TrainedModel:
    return TrainedModel(setup.model, np.asarray(setup.train_rows), np.asarray(setup.test_rows), dict(setup.metrics),
                        key=setup.model_key, source=setup.source, dataset_key=setup.dataset.key)


def sync_with_session(current: Setup, current_key: str) -> None:
    """Start from the session's setup, and start over when another page switched it to other data or model."""
    base = (current_key, current.model_key)
    if st.session_state.get("dm_base") != base or "dm_dataset" not in st.session_state:
        st.session_state["dm_base"] = base
        uploads.set_working(current.dataset, model_of(current))


def model_words(name: str, source: str) -> str:
    """``**name** (source)``, without repeating the name when the source starts with it (demo models)."""
    rest = source[len(name):] if source.startswith(name) else f" ({source})"
    return f"**{plain(name)}**{plain(rest)}"


def show_metrics(metrics: dict, task: str) -> None:
    names = ([("Train accuracy", "train_accuracy"), ("Test accuracy", "test_accuracy"), ("Train AUC", "train_auc"),
              ("Test AUC", "test_auc")] if task == "classification" else
             [("Train R²", "train_r2"), ("Test R²", "test_r2"), ("Train RMSE", "train_rmse"),
              ("Test RMSE", "test_rmse")])
    for column, (label, key) in zip(st.columns(len(names)), names):
        value = metrics.get(key)
        column.metric(label, "—" if value is None or np.isnan(value) else f"{value:.3f}")
    st.caption(f"Test rows: {TEST_ROWS_WORDS.get(metrics.get('test_rows', 'split'))}.")
    caveat = metrics_caveat(metrics)
    if caveat:
        st.warning(caveat, icon=":material/visibility:")


# --- 1 · Data ---------------------------------------------------------------------------------------------------

def data_section() -> bool:
    """Section 1; True while an uploaded file waits for "Use this data" (sections 2-4 still show the older data)."""
    st.subheader("1 · Data")
    source = st.radio("Data source", ["demo", "upload"], horizontal=True, key="dm_data_source",
                      format_func={"demo": "Bundled demo", "upload": "Upload a CSV or Parquet file"}.get)
    pending = False
    if source == "demo":
        callbacks.applied("dm_build")  # a click on the upload's button, left when the source changed, is dropped
        demo_picker()
    else:
        pending = uploads.upload_form()
    dataset_summary(st.session_state["dm_dataset"], pending)
    return pending


LOAD_DEMO_WORDS = ("**Load demo** puts this demo's data and model in the sections below, to choose its reference and "
                   "restricted features; the other pages keep the session's until **Use this setup** (section 4).")


def demo_picker() -> None:
    names = demo_names()
    current = st.session_state["dm_dataset"].name
    c1, c2, c3 = st.columns([3, 3, 2], vertical_alignment="bottom")
    name = c1.selectbox("Demo dataset", names, key="dm_demo", format_func=lambda n: DEMO_LABELS.get(n, n),
                        index=names.index(current) if current in names else 0,
                        help="Bundled public datasets with a card (source, licence, suggested restricted features).")
    task = demo_cards()[name]["task"]
    kind = c2.selectbox("Its demo model", list(DEMO_KINDS), key="dm_demo_kind",
                        format_func=lambda k: kind_label(k, task),
                        index=list(DEMO_KINDS).index("gbdt"),
                        help="Trained here on a seeded 80/20 split the first time, then cached. You can train "
                             "another model or upload one below.")
    c3.button("Load demo", key="dm_demo_load", icon=":material/play_arrow:", help=LOAD_DEMO_WORDS,
              on_click=boundary.guarded(callbacks.request), args=("dm_demo_load", (name, kind)))
    if callbacks.requested("dm_demo_load", (name, kind)):
        with callbacks.applying("dm_demo_load"):
            demo = shared.remembered_demo(name, kind)
            uploads.set_working(demo.dataset, model_of(demo))
    st.caption(LOAD_DEMO_WORDS)


def dataset_summary(dataset: Dataset, pending: bool = False) -> None:
    task = (dataset.task if dataset.task == "regression"
            else f"classification, positive class **{plain(dataset.positive_class)}**")
    what = f"**{plain(dataset.name)}**: {len(dataset.features):,} rows, {len(dataset.groups)} features, {task}"
    if pending:
        st.warning(f"**The uploaded file is not used yet.** Sections 2–4 below still configure the previous data "
                   f"({what}). Press **Use this data** above to configure the file.", icon=":material/pending:")
    else:
        st.success(f"Dataset {what}.", icon=":material/dataset:")
    with st.expander("Features and their kinds"):
        st.dataframe(pd.DataFrame({"feature": dataset.group_names, "kind": [g.kind for g in dataset.groups],
                                   "columns": [", ".join(map(str, g.columns)) for g in dataset.groups]}),
                     hide_index=True, width="stretch")


# --- 2 · Model --------------------------------------------------------------------------------------------------

def model_section(dataset: Dataset, dkey: str) -> TrainedModel | None:
    st.subheader("2 · Model")
    pending = st.session_state.get("dm_model")
    if pending is not None and pending.dataset_key != dkey:
        pending = None
    mode = st.radio("Model source", ["train", "upload"], horizontal=True, key="dm_model_source",
                    format_func={"train": "Train one here", "upload": "Upload a model file"}.get)
    seed = int(st.number_input("Split seed", min_value=0, value=0, step=1, key="dm_seed",
                               help="Seeds the stratified 80/20 train/test split (and the training). The reference "
                                    "is computed on the training rows; metrics on both."))
    callbacks.applied("dm_load_model" if mode == "train" else "dm_train")  # the other source's click is dropped
    if mode == "train":
        trained = train_form(dataset, dkey, seed)
    else:
        trained = uploads.upload_model_form(dataset, dkey, seed)
    if trained is not None:
        st.session_state["dm_model"] = pending = trained
    if pending is None:
        st.info("No model for this dataset yet: train one or upload one.", icon=":material/model_training:")
        return None
    st.success(f"Model: {model_words(pending.model.name, pending.source)}", icon=":material/model_training:")
    show_metrics(pending.metrics, dataset.task)
    mapping = getattr(pending.model.estimator, "mapping", None)
    if mapping and any(str(c) != str(m) for c, m in mapping.items()):
        with st.expander("How the dataset's columns reach the model's inputs", expanded=True):
            st.caption("The model names (or numbers) its inputs differently from the dataset; they were matched "
                       "as below. Check the pairs before using the model.")
            st.dataframe(pd.DataFrame({"dataset column": list(map(str, mapping)),
                                       "model input": list(map(str, mapping.values()))}),
                         hide_index=True, width="stretch")
    return pending


def train_form(dataset: Dataset, dkey: str, seed: int) -> TrainedModel | None:
    kinds = list(DEMO_KINDS)
    c1, c2 = st.columns([3, 2], vertical_alignment="bottom")
    kind = c1.selectbox("Model to train", kinds, index=kinds.index("gbdt"), key="dm_train_kind",
                        format_func=lambda k: kind_label(k, dataset.task),
                        help="The SEV paper's settings: L2 logistic regression C = 0.01, L1 C = 1 (ridge/lasso for "
                             "regression), gradient boosting 200 trees of depth 3, MLP 128-128 with early stopping; "
                             "XGBoost and LightGBM with the same 200 trees of depth 3.")
    c2.button("Train", key="dm_train", icon=":material/model_training:",
              on_click=boundary.guarded(callbacks.request), args=("dm_train", (dkey, kind, seed)))
    if not callbacks.requested("dm_train", (dkey, kind, seed)):
        return None
    label = kind_label(kind, dataset.task)
    try:
        with callbacks.applying("dm_train"), st.status(f"Training {label} on {dataset.name}…",
                                                       expanded=True) as status:
            st.write(f"Encoding {len(dataset.groups)} features and fitting on the 80/20 split (seed {seed})…")
            trained = shared.trained(dataset, dkey, kind, seed)
            origins.remember_model(trained.key, ModelRecipe("trained", kind, seed))
            st.session_state["dm_model"] = trained
            status.update(label=f"Trained {label} on {dataset.name}", state="complete", expanded=False)
    except IntakeError as exc:
        st.error(plain(exc), icon=":material/error:")
        return None
    return trained


# --- 3 · Reference and restricted features ------------------------------------------------------------------------

def reference_section(dataset: Dataset, dkey: str, model: TrainedModel, current: Setup, current_key: str):
    st.subheader("3 · Reference and restricted features")
    same_data = dkey == current_key
    c1, c2 = st.columns(2)
    statistic = c1.selectbox("Reference values", STATISTICS, key="dm_statistic", format_func=STATISTIC_WORDS.get,
                             help="The mean or median of each numeric feature and the most common value of each "
                                  "binary/categorical one (SEV §3), or a real row: the one nearest to the median "
                                  "profile, so every value is one a real case has.")
    rounded = c1.checkbox("Round whole-valued features (counts, ages) to whole values", key="dm_rounded",
                          value=True, disabled=statistic == "nearest_row",
                          help="A numeric feature whose training values are all whole numbers takes the whole "
                               "number nearest to its mean or median (a half rounds up): a mean of 1.98 prior "
                               "offences reads 2, so explanations move to values a real case can have.")
    threshold = model.model.threshold
    labels = POPULATION_LABELS if dataset.task == "classification" else {
        "opposite": f"training rows on the other side of the threshold ({format_number(threshold)})",
        "all": "all training rows"}
    population = c2.selectbox(
        "Computed over", POPULATIONS, key="dm_population", format_func=labels.get,
        help="The other side: the typical case the model does *not* flag, so explanations say what moves a "
             "flagged row there (SEV's default; for a regression, the training rows whose target is on the other "
             "side of the model's threshold).")
    try:
        base = make_reference(dataset, model.train_rows, statistic=statistic, population=population,
                              threshold=threshold, rounded=rounded)
    except IntakeError as exc:
        st.error(plain(exc), icon=":material/error:")
        reference = None
    else:
        reference = reference_editor(dataset, model, base, current, same_data)

    suggestion, paper = dataset.restricted_suggestion, dataset.sev_paper_restricted
    default = [n for n in current.restricted if n in dataset.group_names] if same_data else []
    restricted = st.multiselect(
        "Restricted features", dataset.group_names, default=default, key="dm_restricted",
        help="Features an explanation may not change (SEV®), e.g. protected attributes. "
             + (f"The dataset card suggests: {plain(', '.join(suggestion))}." if suggestion
                else "No suggestion on file.")
             + (f" The SEV paper (App. F) holds: {plain(', '.join(paper))}." if paper and paper != suggestion
                else ""))
    return reference, tuple(restricted)


def reference_editor(dataset: Dataset, model: TrainedModel, base: Reference, current: Setup,
                     same_data: bool) -> Reference | None:
    """The computed reference with an editable column of custom values; None (and the message) when one is refused."""
    custom = ({str(k): format_value(v) for k, v in current.reference.overrides.items()} if same_data else {})
    table = pd.DataFrame(
        {"kind": [g.kind for g in dataset.groups],
         "computed": [reference_text(dataset, g, base) for g in dataset.groups],
         "custom": [custom.get(g.name) for g in dataset.groups]},
        index=pd.Index(dataset.group_names, name="feature")).astype({"custom": "object"})
    st.markdown("**Reference values**: type a custom value to replace the computed one (for a one-hot group, "
                "the name of the column that is 1).")
    edited = st.data_editor(table, key="dm_reference", disabled=["kind", "computed"], width="stretch", placeholder="—",
                            column_config={"custom": st.column_config.TextColumn(
                                "custom", help="Empty: use the computed value")})
    overrides = {feature: str(value).strip() for feature, value in edited["custom"].items()
                 if value is not None and not (isinstance(value, float) and np.isnan(value)) and str(value).strip()}
    if not overrides:
        reference = base
    else:
        try:
            reference = make_reference(dataset, model.train_rows, statistic=base.statistic,
                                       population=base.population, threshold=model.model.threshold,
                                       overrides=overrides, rounded=base.rounded)
        except IntakeError as exc:
            st.error(plain(exc), icon=":material/error:")
            return None
    st.caption(f"**Reference in use after “Use this setup”**: {plain(reference.description)}.")
    return reference


def reference_text(dataset: Dataset, group, reference: Reference) -> str:
    return format_value(group.value_of(reference.values))


# --- 4 · Use ------------------------------------------------------------------------------------------------------

def use_section(dataset: Dataset, dkey: str, model: TrainedModel, reference: Reference, restricted: tuple[str, ...],
                current: Setup, current_key: str, pending_upload: bool = False) -> None:
    st.subheader("4 · Use")
    same = dkey == current_key and model.key == current.model_key
    what = ("the session's dataset and model with this reference and these restricted features" if same else
            f"**{plain(dataset.name)}** with {model_words(model.model.name, model.source)}")
    st.markdown(f"This replaces the session's setup with {what}. "
                f"Restricted: {plain(', '.join(restricted)) or 'none'}.")
    if pending_upload:
        st.caption("Disabled while the uploaded file waits for **Use this data** (section 1).")
    st.button("Use this setup", key="dm_use", type="primary", icon=":material/done_all:", disabled=pending_upload,
              help="Makes the data, model, reference and restricted features above the session's: every page then "
                   "explains with them.",
              on_click=boundary.guarded(use_setup), args=(dataset, dkey, model, reference, restricted, current,
                                                       current_key))


def use_setup(dataset: Dataset, dkey: str, model: TrainedModel, reference: Reference, restricted: tuple[str, ...],
              current: Setup, current_key: str) -> None:
    """“Use this setup” (a callback with what the page showed, so a click right after it is not lost): the
    configured data, model, reference and restricted features become the session's."""
    if dkey == current_key and model.key == current.model_key:
        new = current.with_reference(reference).with_restricted(restricted)
    else:
        new = make_setup(dataset, model, reference=reference, restricted=restricted)
    shared.use_setup(new)
    if dkey != current_key:
        st.session_state["row"] = shared.default_row(new)
    st.session_state["dm_base"] = (dkey, new.model_key)
    st.session_state["dm_flash"] = (f"Now using **{plain(new.dataset.name)}** · {plain(new.model.name)} · reference: "
                                    f"{plain(new.reference.description)} · restricted: "
                                    f"{plain(', '.join(new.restricted)) or 'none'}.")


# --- page ---------------------------------------------------------------------------------------------------------

st.title("Data & model")
current = shared.setup()
current_key = current.dataset.key
sync_with_session(current, current_key)
st.caption(f"In use now: **{plain(current.dataset.name)}** · {model_words(current.model.name, current.source)}. "
           "Nothing here changes it until you press **Use this setup** at the bottom.")
flash = st.session_state.pop("dm_flash", None)
if flash:
    st.success(flash, icon=":material/check_circle:")
    st.page_link("app_pages/pick_row.py", label="Pick a row to explain", icon=":material/table_rows:")

pending_upload = data_section()
dataset = st.session_state["dm_dataset"]
dkey = st.session_state["dm_dataset_key"]
with st.container(key="dm_below"):
    model = model_section(dataset, dkey)
    if model is not None:
        reference, restricted = reference_section(dataset, dkey, model, current, current_key)
        if reference is not None:
            use_section(dataset, dkey, model, reference, restricted, current, current_key, pending_upload)
