"""Data & model: choose or upload a dataset, train or upload a model, set the reference and restricted features.

Nothing here touches the session's setup until **Use this setup**: the dataset and model being configured
live in this page's own session keys (``dm_dataset``, ``dm_model``), so a bad file or a failed load shows
its message and leaves the current setup, row and parameters as they were. All computation is
``explain_core``'s; this page only collects choices, caches by content hash and shows results.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from explain_core import IntakeError, UntrustedModelError
from explain_core.analysis import Setup, make_setup, model_from_upload
from explain_core.intake.data import KINDS, TASKS, Dataset, demo_names, infer_kind, infer_task, make_dataset
from explain_core.intake.demo_models import DEMO_KINDS, TrainedModel, train_model
from explain_core.intake.loading import MODEL_SUFFIXES, TRUSTED_ENV
from explain_core.intake.tables import read_table, safe_name
from explain_core.reference import POPULATIONS, STATISTIC_WORDS, STATISTICS, Reference, make_reference
from explain_core.views.vocabulary import DEMO_LABELS, format_value, plain
from pages import _shared as shared

DATA_TYPES = ["csv", "parquet", "pq"]
MODEL_TYPES = [suffix.lstrip(".") for suffix in MODEL_SUFFIXES]
MAX_CLASS_OPTIONS = 200
POPULATION_LABELS = {"opposite": "training rows of the opposite class", "all": "all training rows"}
# Widget state that belongs to one dataset: dropped whenever the dataset being configured changes.
PER_DATASET_KEYS = ("dm_reference", "dm_restricted")
PER_FILE_KEYS = ("dm_columns", "dm_onehot", "dm_target")
PER_TARGET_KEYS = ("dm_task", "dm_positive")


# --- content hashes and cached work -------------------------------------------------------------------------

def digest_of(file) -> str:
    """sha1 of an upload's bytes, computed once per uploaded file (large files are not rehashed every rerun)."""
    known = st.session_state.setdefault("dm_digests", {})
    if file.file_id not in known:
        if len(known) >= 16:
            known.clear()
        known[file.file_id] = hashlib.sha1(file.getvalue()).hexdigest()
    return known[file.file_id]


def read_upload(data: bytes, digest: str, filename: str) -> pd.DataFrame:
    """The uploaded table, read once per file in this session (kept in the session, so it is freed when the visitor
    leaves); an unreadable file raises IntakeError. The size limit is the app's own (server.maxUploadSize)."""
    kept = st.session_state.get("dm_table")
    if kept is None or kept[0] != digest:
        with st.spinner("Reading the file…"):
            frame = read_table(data, filename=filename, max_mb=shared.upload_limit_mb())
        st.session_state["dm_table"] = kept = (digest, frame)
    return kept[1]


@st.cache_resource(show_spinner=False, max_entries=8, ttl="1h")
def train_cached(_dataset: Dataset, key: str, kind: str, seed: int) -> TrainedModel:
    """A model trained here, shared by sessions with the same data, configuration, kind and seed."""
    return train_model(_dataset, kind, seed=seed)


@st.cache_resource(show_spinner="Loading the model file…", max_entries=4, ttl="1h")
def load_cached(_dataset: Dataset, _data: bytes, dataset_key: str, digest: str, filename: str, seed: int,
                threshold: float | None, positive: str, trusted_types: tuple[str, ...], by_order: bool) -> TrainedModel:
    """An uploaded model file (by content hash) loaded with explain_core's safe loader, wrapped and evaluated.
    Trusted mode is the operator's (:func:`pages._shared.operator_trusted`), never a visitor's choice."""
    return model_from_upload(_dataset, _data, filename, seed=seed, threshold=threshold, positive_class=positive or None,
                             trusted=shared.operator_trusted(), trusted_types=trusted_types, by_order=by_order)


# --- the page's working state -----------------------------------------------------------------------------------

def model_of(setup: Setup) -> TrainedModel:
    return TrainedModel(setup.model, np.asarray(setup.train_rows), np.asarray(setup.test_rows), dict(setup.metrics),
                        key=setup.model_key, source=setup.source, dataset_key=setup.dataset.key)


def set_working(dataset: Dataset, model: TrainedModel | None) -> None:
    """Make ``dataset`` (and ``model``, trained/loaded for it, or None) the one being configured."""
    st.session_state["dm_dataset"] = dataset
    st.session_state["dm_dataset_key"] = dataset.key
    st.session_state["dm_model"] = model
    for key in PER_DATASET_KEYS:
        st.session_state.pop(key, None)


def sync_with_session(current: Setup, current_key: str) -> None:
    """Start from the session's setup, and start over when another page switched it to other data or model."""
    base = (current_key, current.model_key)
    if st.session_state.get("dm_base") != base or "dm_dataset" not in st.session_state:
        st.session_state["dm_base"] = base
        set_working(current.dataset, model_of(current))


def reset_when_changed(marker: str, value, keys) -> None:
    """Drop widget state in ``keys`` when ``value`` differs from the last run's (before the widgets are drawn)."""
    if st.session_state.get(marker) != value:
        st.session_state[marker] = value
        for key in keys:
            st.session_state.pop(key, None)


def python_value(value):
    """A numpy scalar as the Python value (for widget options)."""
    return value.item() if isinstance(value, np.generic) else value


def model_words(name: str, source: str) -> str:
    """``**name** (source)``, without repeating the name when the source starts with it (demo models)."""
    rest = source[len(name):] if source.startswith(name) else f" ({source})"
    return f"**{plain(name)}**{plain(rest)}"


def show_metrics(metrics: dict, task: str) -> None:
    names = ([("Train accuracy", "train_accuracy"), ("Test accuracy", "test_accuracy"), ("Train AUC", "train_auc"),
              ("Test AUC", "test_auc")] if task == "classification" else
             [("Train R²", "train_r2"), ("Test R²", "test_r2"), ("Train RMSE", "train_rmse"), ("Test RMSE", "test_rmse")])
    for column, (label, key) in zip(st.columns(len(names)), names):
        column.metric(label, f"{metrics.get(key, float('nan')):.3f}")


# --- 1 · Data ---------------------------------------------------------------------------------------------------

def data_section() -> bool:
    """Section 1; True while an uploaded file waits for "Use this data" (sections 2-4 still show the older data)."""
    st.subheader("1 · Data")
    source = st.radio("Data source", ["demo", "upload"], horizontal=True, key="dm_data_source",
                      format_func={"demo": "Bundled demo", "upload": "Upload a CSV or Parquet file"}.get)
    pending = False
    if source == "demo":
        demo_picker()
    else:
        pending = upload_form()
    dataset_summary(st.session_state["dm_dataset"], pending)
    return pending


def demo_picker() -> None:
    names = demo_names()
    current = st.session_state["dm_dataset"].name
    c1, c2, c3 = st.columns([3, 3, 2], vertical_alignment="bottom")
    name = c1.selectbox("Demo dataset", names, key="dm_demo", format_func=lambda n: DEMO_LABELS.get(n, n),
                        index=names.index(current) if current in names else 0,
                        help="Bundled public datasets with a card (source, licence, suggested restricted features).")
    kind = c2.selectbox("Its demo model", list(DEMO_KINDS), key="dm_demo_kind", format_func=DEMO_KINDS.get,
                        index=list(DEMO_KINDS).index("gbdt"),
                        help="Trained here on a seeded 80/20 split the first time, then cached. You can train "
                             "another model or upload one below.")
    if c3.button("Load demo", key="dm_demo_load", icon=":material/play_arrow:"):
        demo = shared.demo(name, kind)
        set_working(demo.dataset, model_of(demo))


def upload_form() -> bool:
    """The upload and its column choices; True while the file is not yet the dataset being configured."""
    limit = shared.upload_limit_mb()
    file = st.file_uploader("CSV or Parquet file", type=DATA_TYPES, key="dm_upload",
                            help=f"One row per case, one column per feature plus the target; a header row. "
                                 f"Up to {limit:g} MB (the server's upload limit).")
    if file is None:
        st.caption("Upload a table to configure it; until then the dataset below stays in use.")
        return False
    digest = digest_of(file)
    name = safe_name(file.name)
    try:
        frame = read_upload(file.getvalue(), digest, name)
    except IntakeError as exc:
        st.error(plain(exc), icon=":material/error:")
        return False
    reset_when_changed("dm_file_for", (digest, name), PER_FILE_KEYS + PER_TARGET_KEYS)
    columns = list(frame.columns)
    st.caption(f"**{plain(name)}**: {len(frame):,} rows × {len(columns)} columns. First rows:")
    st.dataframe(frame.head(5), hide_index=True)

    c1, c2, c3 = st.columns(3)
    target = c1.selectbox("Target column", columns, index=len(columns) - 1, key="dm_target",
                          help="The outcome the model predicts; every other column is a feature unless dropped.")
    reset_when_changed("dm_target_for", (digest, target), PER_TARGET_KEYS)
    inferred = infer_task(frame[target])
    task = c2.selectbox("Task", TASKS, index=TASKS.index(inferred), key="dm_task",
                        help=f"Inferred from the target: **{inferred}** (two values or text → classification).")
    positive = None
    if task == "classification":
        classes = [python_value(v) for v in sorted(pd.unique(frame[target].dropna()), key=str)]
        shown = classes[:MAX_CLASS_OPTIONS]
        positive = c3.selectbox(
            "Positive class", shown, index=len(shown) - 1 if len(shown) == 2 else None, format_func=str,
            key="dm_positive", placeholder="Choose the class to explain",
            help="The class explanations are about (the model's 'yes'); with more than two classes it is "
                 "explained against all the others." + (f" Only the first {MAX_CLASS_OPTIONS} of {len(classes)} "
                                                        "values are listed." if len(classes) > len(shown) else ""))

    st.markdown("**Columns**: change a feature's kind, or drop columns that are not features (ids, weights, leaks).")
    table = pd.DataFrame({"role": ["target" if c == target else "feature" for c in columns],
                          "inferred kind": [infer_kind(frame[c]) for c in columns]},
                         index=pd.Index([str(c) for c in columns], name="column"))
    table["kind"] = table["inferred kind"]
    table["drop"] = False
    edited = st.data_editor(
        table, key="dm_columns", disabled=["role", "inferred kind"], width="stretch",
        column_config={"kind": st.column_config.SelectboxColumn("kind", options=list(KINDS), required=True,
                                                                help="numeric, binary (two values) or categorical"),
                       "drop": st.column_config.CheckboxColumn("drop", help="Leave this column out of the dataset")})
    features = [c for c in columns if c != target]
    drop = [c for c, d in zip(columns, edited["drop"]) if bool(d) and c != target]
    kinds = {c: k for c, k, i in zip(columns, edited["kind"], edited["inferred kind"])
             if c != target and c not in drop and k and k != i}

    st.markdown("**One-hot groups** (optional): columns already one-hot encoded that form one feature, "
                "e.g. `purpose` = `purpose_car`, `purpose_tv`, ….")
    groups = st.data_editor(
        pd.DataFrame({"group": pd.Series(dtype="object"), "columns": pd.Series(dtype="object")}),
        key="dm_onehot", num_rows="dynamic", width="stretch",
        column_config={"group": st.column_config.TextColumn("group", help="The feature's name"),
                       "columns": st.column_config.MultiselectColumn(
                           "columns", options=[str(c) for c in features],
                           help="Its 0/1 columns (at most one 1 per row)")})

    if st.button("Use this data", key="dm_build", type="primary", icon=":material/check:",
                 help="Build the dataset from these choices; a model is then trained or uploaded for it."):
        try:
            dataset = make_dataset(frame, target, task=task, positive_class=positive, kinds=kinds,
                                   onehot_groups=onehot_groups(groups), drop=drop, name=Path(name).stem)
        except IntakeError as exc:
            st.error(plain(exc), icon=":material/error:")
        else:
            set_working(dataset, None)
            st.session_state["dm_built_from"] = (digest, name)
    return st.session_state.get("dm_built_from") != (digest, name)


def onehot_groups(table: pd.DataFrame) -> dict[str, list[str]]:
    """The one-hot editor's rows as ``{group: [columns]}`` (empty rows skipped)."""
    out: dict[str, list[str]] = {}
    for name, columns in zip(table["group"], table["columns"]):
        name = "" if name is None or (isinstance(name, float) and np.isnan(name)) else str(name).strip()
        if isinstance(columns, str):
            columns = [c.strip() for c in columns.strip("[]").replace('"', "").split(",") if c.strip()]
        columns = [] if columns is None or (isinstance(columns, float) and np.isnan(columns)) else list(columns)
        if not name and not columns:
            continue
        if not name or not columns:
            raise IntakeError(f"One-hot group {name or '(no name)'!r} needs a name and at least one column; "
                              "fill in both or delete the row.")
        if name in out:
            raise IntakeError(f"One-hot group {name!r} is declared twice; give each group a unique name.")
        out[name] = [str(c) for c in columns]
    return out


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
    if mode == "train":
        trained = train_form(dataset, dkey, seed)
    else:
        trained = upload_model_form(dataset, dkey, seed)
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
                        format_func=DEMO_KINDS.get,
                        help="The SEV paper's settings: L2 logistic regression C = 0.01, L1 C = 1 (ridge/lasso for "
                             "regression), gradient boosting 200 trees of depth 3, MLP 128-128 with early stopping; "
                             "XGBoost and LightGBM with the same 200 trees of depth 3.")
    if not c2.button("Train", key="dm_train", icon=":material/model_training:"):
        return None
    label = DEMO_KINDS[kind]
    try:
        with st.status(f"Training {label} on {dataset.name}…", expanded=True) as status:
            st.write(f"Encoding {len(dataset.groups)} features and fitting on the 80/20 split (seed {seed})…")
            trained = train_cached(dataset, dkey, kind, seed)
            status.update(label=f"Trained {label} on {dataset.name}", state="complete", expanded=False)
    except IntakeError as exc:
        st.error(plain(exc), icon=":material/error:")
        return None
    return trained


def upload_model_form(dataset: Dataset, dkey: str, seed: int) -> TrainedModel | None:
    trusted = shared.operator_trusted()
    if trusted:
        st.warning(f"Trusted mode is on for this server ({TRUSTED_ENV}=1 or `trusted_models` in its secrets): pickle "
                   "files (`.joblib`, `.pkl`, `.pickle`) load, and loading one runs any code it contains — inside "
                   "the model's sandboxed worker process.", icon=":material/warning:")
    else:
        st.caption(":material/shield: Every uploaded model is loaded and run in its own sandboxed worker process (no "
                   "network, no files but the Python libraries, time and memory limits), never in the server. "
                   "`.skops` files load when every class and function in them is a vetted scikit-learn, numpy, "
                   "scipy, XGBoost, LightGBM or CatBoost part; a class off the list can be confirmed when building "
                   "it runs no code, and anything the file would call is refused. `.onnx` files and the boosters' "
                   "own files (XGBoost `.json` / `.ubj`, LightGBM `.txt`, CatBoost `.cbm`) hold no code. Pickle "
                   "files are refused: only the server's operator can allow them (trusted mode, "
                   f"{TRUSTED_ENV}=1 when starting the server).")
    file = st.file_uploader("Model file", type=MODEL_TYPES, key="dm_model_file",
                            help="A fitted model trained on this dataset's columns: a scikit-learn Pipeline or "
                                 "estimator, XGBoost, LightGBM or CatBoost (skops.io.dump, or the booster's "
                                 "save_model), or an ONNX export from any framework.")
    by_order = st.checkbox(
        f"Its inputs are this dataset's {len(dataset.columns)} feature columns, in this order (only for a model "
        "that records no column names, e.g. fitted on a numpy array or a single-tensor ONNX)", key="dm_by_order",
        help="In order: " + plain(", ".join(map(str, dataset.columns[:40])))
             + (" …" if len(dataset.columns) > 40 else ""))
    c1, c2 = st.columns(2)
    threshold = c1.number_input(
        "Decision threshold (optional)", value=None, key="dm_threshold", format="%.3f", placeholder="default",
        help="A classifier's row is 'positive' when its score is at or above this threshold (≥). Empty: the "
             "model's own prediction (its predict, ties included: 0.5 on probabilities, 0 on decision values); for a "
             "regression, above the training median.")
    label = c2.text_input(
        "The model's label for the positive class (optional)", key="dm_model_positive", max_chars=200,
        help="Only when the model was trained on a recoded target, e.g. 1 for a 0/1 target whose 1 means the "
             "dataset's positive class. Empty: the dataset's positive class itself.").strip()
    if file is None:
        return None
    data, digest, name = file.getvalue(), digest_of(file), safe_name(file.name, "model")
    pending = st.session_state.get("dm_untrusted")
    confirmed: tuple[str, ...] = st.session_state.setdefault("dm_confirmed_types", {}).get(digest, ())
    if pending and pending[0] == digest and st.session_state.get("dm_trust_types"):
        confirmed = pending[1]
    result = None
    if st.button("Load model", key="dm_load_model", type="primary", icon=":material/upload_file:"):
        try:
            result = load_cached(dataset, data, dkey, digest, name, seed, threshold, label, confirmed, by_order)
        except UntrustedModelError as exc:
            st.session_state["dm_untrusted"] = (digest, exc.types, exc.checks) if exc.types else None
            st.error(plain(exc), icon=":material/gpp_bad:")
            show_type_checks(exc.checks)
        except IntakeError as exc:
            st.error(plain(exc), icon=":material/error:")
        else:
            if confirmed:  # trusted once for this file's content: not asked again in this session
                st.session_state["dm_confirmed_types"][digest] = confirmed
                st.session_state.pop("dm_untrusted", None)
    pending = st.session_state.get("dm_untrusted")
    if result is None and pending and pending[0] == digest:
        st.checkbox(f"I trust the author of {plain(name)}: load it with these {len(pending[1])} unvetted types "
                    "allowed (each runs its own code whenever the model is used, inside the sandbox)",
                    key="dm_trust_types",
                    help="Only classes whose loading runs no code can be confirmed; functions, and anything the "
                         "file calls while loading, are refused in every case. Tick this, then press Load model "
                         "again.")
    return result


def show_type_checks(checks) -> None:
    """The verdict on each type of a refused skops file: its name, what it really is, and why."""
    if checks:
        st.dataframe(pd.DataFrame({"type in the file": [c.name for c in checks],
                                   "what it really is": [c.resolved for c in checks],
                                   "verdict": [c.verdict for c in checks], "why": [c.reason for c in checks]}),
                     hide_index=True, width="stretch", key="dm_type_checks")


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
                          disabled=statistic == "nearest_row",
                          help="A mean of 1.98 prior offences reads 2: explanations then move to values a real "
                               "case can have.")
    threshold = model.model.threshold
    labels = POPULATION_LABELS if dataset.task == "classification" else {
        "opposite": f"training rows on the other side of the threshold ({threshold:.4g})", "all": "all training rows"}
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

    suggestion = dataset.restricted_suggestion
    default = [n for n in current.restricted if n in dataset.group_names] if same_data else []
    restricted = st.multiselect(
        "Restricted features", dataset.group_names, default=default, key="dm_restricted",
        help="Features an explanation may not change (SEV®), e.g. protected attributes. "
             + (f"The dataset card suggests: {plain(', '.join(suggestion))}." if suggestion else "No suggestion on file."))
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
    if not st.button("Use this setup", key="dm_use", type="primary", icon=":material/done_all:",
                     disabled=pending_upload):
        return
    try:
        if same:
            new = current.with_reference(reference).with_restricted(restricted)
        else:
            new = make_setup(dataset, model, reference=reference, restricted=restricted)
    except IntakeError as exc:
        st.error(plain(exc), icon=":material/error:")
        return
    shared.use_setup(new)
    if dkey != current_key:
        st.session_state["row"] = shared.default_row(new)
    st.session_state["dm_base"] = (dkey, new.model_key)
    st.session_state["dm_flash"] = (f"Now using **{plain(new.dataset.name)}** · {plain(new.model.name)} · reference: "
                                    f"{plain(new.reference.description)} · restricted: "
                                    f"{plain(', '.join(new.restricted)) or 'none'}.")
    st.rerun()


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
    st.page_link("pages/pick_row.py", label="Pick a row to explain", icon=":material/table_rows:")

pending_upload = data_section()
dataset = st.session_state["dm_dataset"]
dkey = st.session_state["dm_dataset_key"]
with st.container(key="dm_below"):
    model = model_section(dataset, dkey)
    if model is not None:
        reference, restricted = reference_section(dataset, dkey, model, current, current_key)
        if reference is not None:
            use_section(dataset, dkey, model, reference, restricted, current, current_key, pending_upload)
