"""The Data & model page's uploads: a table (read, its target, task, positive class, column kinds and one-hot
groups) and a model file (skops with its type checks, ONNX, the boosters' files; pickles in trusted mode), plus the
page's working state they write (``dm_dataset``, ``dm_model``). All reading and checking is ``explain_core``'s."""
from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import streamlit as st

from explain_core import IntakeError, UntrustedModelError
from explain_core.analysis import UploadChoices, model_from_upload
from explain_core.intake.data import TASKS, Dataset, infer_kind, infer_task, make_dataset
from explain_core.intake.layout import KINDS, TableChoices
from explain_core.intake.formats import MODEL_SUFFIXES, TRUSTED_ENV
from explain_core.intake.holdout import append_holdout, holdout_by_column
from explain_core.intake.tables import read_table, safe_name
from explain_core.intake.trained import TrainedModel
from explain_core.saved.recipe import DataRecipe, FileRef, ModelRecipe
from explain_core.vocabulary import plain
from ui import boundary
from ui import callbacks
from ui import origins
from ui import shared

DATA_TYPES = ["csv", "parquet", "pq"]
MODEL_TYPES = [suffix.lstrip(".") for suffix in MODEL_SUFFIXES]
MAX_CLASS_OPTIONS = 200
# Widget state that belongs to one dataset: dropped whenever the dataset being configured changes.
PER_DATASET_KEYS = ("dm_reference", "dm_restricted")
PER_FILE_KEYS = ("dm_columns", "dm_onehot", "dm_target")


# --- the page's working state -----------------------------------------------------------------------------------

def set_working(dataset: Dataset, model: TrainedModel | None) -> None:
    """Make ``dataset`` (and ``model``, trained/loaded for it, or None) the one being configured."""
    st.session_state["dm_dataset"] = dataset
    st.session_state["dm_dataset_key"] = dataset.key
    st.session_state["dm_model"] = model
    for key in PER_DATASET_KEYS:
        st.session_state.pop(key, None)


def reset_when_changed(marker: str, value, keys) -> None:
    """Drop widget state in ``keys`` when ``value`` differs from the last run's (before the widgets are drawn)."""
    if st.session_state.get(marker) != value:
        st.session_state[marker] = value
        for key in keys:
            st.session_state.pop(key, None)


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


class ModelUpload(NamedTuple):
    """An uploaded model file and the choices it is loaded with: the dataset's key, the file's content hash and
    name, and the loading choices (:class:`~explain_core.setup.UploadChoices`: the split's seed, the threshold, the
    positive label, the skops types the visitor confirmed, whether unnamed inputs are the dataset's columns in
    order, and whether the model saw none of the rows). Their ``trusted`` is never the visitor's: the operator's
    mode replaces it (:func:`load_cached`)."""

    dataset_key: str
    digest: str
    filename: str
    choices: UploadChoices = UploadChoices()


class UploadKey(NamedTuple):
    """What an uploaded model's load depends on: the cache's key, the upload and the operator's trusted mode (a
    pickle loaded while the operator trusted uploads is not served from the cache once they no longer do)."""

    upload: ModelUpload
    trusted: bool


def load_cached(_dataset: Dataset, _data: bytes, upload: ModelUpload) -> TrainedModel:
    """An uploaded model file (by content hash) loaded with explain_core's safe loader, wrapped and evaluated,
    cached per :class:`UploadKey`. Trusted mode is the operator's (:func:`ui.shared.operator_trusted`), never a
    visitor's choice."""
    # one key per load: no visitor's trust, the confirmed types as a tuple, no positive label ("" or None) as None
    choices = replace(upload.choices, trusted=None, trusted_types=tuple(upload.choices.trusted_types),
                      positive_class=upload.choices.positive_class or None)
    return _loaded(_dataset, _data, UploadKey(upload._replace(choices=choices), shared.operator_trusted()))


@st.cache_resource(show_spinner="Loading the model file…", max_entries=4, ttl="1h")
def _loaded(_dataset: Dataset, _data: bytes, key: UploadKey) -> TrainedModel:
    up = key.upload
    return model_from_upload(_dataset, _data, up.filename, replace(up.choices, trusted=key.trusted))


# --- a table ------------------------------------------------------------------------------------------------------

def python_value(value):
    """A numpy scalar as the Python value (for widget options)."""
    return value.item() if isinstance(value, np.generic) else value


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
    reset_when_changed("dm_file_for", (digest, name), PER_FILE_KEYS)
    st.caption(f"**{plain(name)}**: {len(frame):,} rows × {len(frame.columns)} columns. First rows:")
    st.dataframe(frame.head(5), hide_index=True)
    target, task, positive = target_choices(frame, digest)
    drop, kinds = column_choices(frame, target)
    groups = onehot_editor([c for c in frame.columns if c != target])
    marking = holdout_choices(frame, target)
    st.button("Use this data", key="dm_build", type="primary", icon=":material/check:",
              help="Build the dataset from these choices; a model is then trained or uploaded for it.",
              on_click=boundary.guarded(callbacks.request), args=("dm_build", (digest, name)))
    if callbacks.requested("dm_build", (digest, name)):
        with callbacks.applying("dm_build"):
            build(file, name, digest, frame, (target, task, positive, drop, kinds, groups, marking))
    return st.session_state.get("dm_built_from") != (digest, name)


def build(file, name: str, digest: str, frame: pd.DataFrame, choices: tuple) -> None:
    """"Use this data": the dataset built from the form's ``choices`` (target, task, positive class, columns dropped,
    kinds, one-hot groups, hold-out marking) becomes the one configured; a refused choice shows its message."""
    target, task, positive, drop, kinds, groups, marking = choices
    try:
        table, held_out = marked_rows(frame, marking)
        shape = TableChoices(kinds=kinds, onehot_groups=onehot_groups(groups),
                             drop=drop + ([marking[1]] if marking[0] == "column" else []), holdout=held_out)
        made = dict(task=task, positive_class=positive, name=Path(name).stem, choices=shape)
        dataset = make_dataset(table, target, **made)
    except IntakeError as exc:
        st.error(plain(exc), icon=":material/error:")
        return
    set_working(dataset, None)
    data, kept = saved_table(file.getvalue(), name, table, marking)
    origins.remember_data(dataset, DataRecipe.upload(FileRef.of(data, kept), target, **made), data)
    st.session_state["dm_built_from"] = (digest, name)


def target_choices(frame: pd.DataFrame, digest: str):
    """The target column, the task (inferred from it) and, for a classification, the positive class."""
    columns = list(frame.columns)
    c1, c2, c3 = st.columns(3)
    target = c1.selectbox("Target column", columns, index=len(columns) - 1, key="dm_target",
                          help="The outcome the model predicts; every other column is a feature unless dropped.")
    inferred = infer_task(frame[target])
    # A new target sets the task and class afresh. Set, not dropped: the browser shows a value set here, but keeps
    # showing (and sends back) its own value for a dropped one.
    changed = st.session_state.get("dm_target_for") != (digest, target)
    st.session_state["dm_target_for"] = (digest, target)
    if changed or "dm_task" not in st.session_state:
        st.session_state["dm_task"] = inferred
    task = c2.selectbox("Task", TASKS, key="dm_task",
                        help=f"Inferred from the target: **{inferred}** (two values or text → classification).")
    positive = None
    if task == "classification":  # the classes only then: a regression target may hold millions of values
        classes = [python_value(v) for v in sorted(pd.unique(frame[target].dropna()), key=str)]
        shown = classes[:MAX_CLASS_OPTIONS]
        if changed or st.session_state.get("dm_positive") not in shown:
            st.session_state["dm_positive"] = shown[-1] if len(shown) == 2 else None
        positive = c3.selectbox(
            "Positive class", shown, format_func=str, key="dm_positive", placeholder="Choose the class to explain",
            help="The class explanations are about (the model's 'yes'); with more than two classes it is "
                 "explained against all the others." + (f" Only the first {MAX_CLASS_OPTIONS} of {len(classes)} "
                                                        "values are listed." if len(classes) > len(shown) else ""))
    return target, task, positive


def column_choices(frame: pd.DataFrame, target) -> tuple[list, dict]:
    """The columns editor: the columns dropped and the kinds changed from the inferred ones."""
    columns = list(frame.columns)
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
    drop = [c for c, d in zip(columns, edited["drop"]) if bool(d) and c != target]
    kinds = {c: k for c, k, i in zip(columns, edited["kind"], edited["inferred kind"])
             if c != target and c not in drop and k and k != i}
    return drop, kinds


HOLDOUT_LABELS = {"none": "Not marked", "column": "A column of this table marks them",
                  "file": "They are in a second file"}


def holdout_choices(frame: pd.DataFrame, target) -> tuple:
    """Which rows a model was not trained on (its honest test rows): ``("none",)``, ``("column", column, value)``
    or ``("file", name, bytes)``."""
    st.markdown("**Test rows** (optional): the rows the model was *not* trained on, so its test metrics are honest. "
                "Unmarked, a model trained here is tested on a seeded 80/20 split it never saw; an uploaded model on "
                "that same split, which it may have seen.")
    how = st.radio("Hold-out rows", list(HOLDOUT_LABELS), format_func=HOLDOUT_LABELS.get, horizontal=True,
                   key="dm_holdout", label_visibility="collapsed")
    if how == "column":
        c1, c2 = st.columns(2)
        columns = [c for c in frame.columns if c != target]
        column = c1.selectbox("Column that marks them (left out of the features)", columns, key="dm_holdout_column",
                              index=next((i for i, c in enumerate(columns) if str(c).lower() in HOLDOUT_NAMES), 0))
        values = [python_value(v) for v in sorted(pd.unique(frame[column].dropna()), key=str)][:MAX_CLASS_OPTIONS]
        value = c2.selectbox("Value of the held-out rows", values, key="dm_holdout_value", format_func=str,
                             index=next((i for i, v in enumerate(values) if str(v).lower() in ("test", "1", "true")),
                                        0))
        return ("column", column, value)
    if how == "file":
        held = st.file_uploader("Held-out rows: a CSV or Parquet file with the same columns", type=DATA_TYPES,
                                key="dm_holdout_file")
        return ("file", safe_name(held.name), held.getvalue()) if held is not None else ("none",)
    return ("none",)


HOLDOUT_NAMES = ("split", "set", "subset", "fold", "is_test", "test")


def marked_rows(frame: pd.DataFrame, marking: tuple) -> tuple[pd.DataFrame, np.ndarray | None]:
    """The table to build the dataset from (with a hold-out file's rows appended) and the held-out positions."""
    if marking[0] == "column":
        return frame, holdout_by_column(frame, marking[1], marking[2])
    if marking[0] == "file":
        held = read_table(marking[2], filename=marking[1], max_mb=shared.upload_limit_mb())
        return append_holdout(frame, held, marking[1])
    return frame, None


def saved_table(data: bytes, name: str, table: pd.DataFrame, marking: tuple) -> tuple[bytes, str]:
    """The file a saved analysis keeps of the table: the upload itself, or, with a second file of hold-out rows
    appended, the table both made (as Parquet, which keeps every column's type)."""
    if marking[0] != "file":
        return data, name
    return table.to_parquet(index=False), f"{Path(name).stem}.parquet"


def onehot_editor(features: list) -> pd.DataFrame:
    """The one-hot groups editor (a row per group: its name and its 0/1 columns)."""
    st.markdown("**One-hot groups** (optional): columns already one-hot encoded that form one feature, "
                "e.g. `purpose` = `purpose_car`, `purpose_tv`, ….")
    return st.data_editor(
        pd.DataFrame({"group": pd.Series(dtype="object"), "columns": pd.Series(dtype="object")}),
        key="dm_onehot", num_rows="dynamic", width="stretch",
        column_config={"group": st.column_config.TextColumn("group", help="The feature's name"),
                       "columns": st.column_config.MultiselectColumn(
                           "columns", options=[str(c) for c in features],
                           help="Its 0/1 columns (at most one 1 per row)")})


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


# --- a model file -------------------------------------------------------------------------------------------------

def trust_notice() -> None:
    """What loads and what is refused: trusted mode (the operator's) or the vetted formats."""
    if shared.operator_trusted():
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


def model_file_choices(dataset: Dataset):
    """The model file, whether its inputs are the columns in order, its threshold and its positive label."""
    file = st.file_uploader("Model file", type=MODEL_TYPES, key="dm_model_file",
                            help="A fitted model trained on this dataset's columns: a scikit-learn Pipeline or "
                                 "estimator, XGBoost, LightGBM or CatBoost (skops.io.dump, or the booster's "
                                 "save_model), or an ONNX export from any framework.")
    by_order = st.checkbox(
        f"Its inputs are this dataset's {len(dataset.columns)} feature columns, in this order (only for a model "
        "that records no column names, e.g. fitted on a numpy array or a single-tensor ONNX)", key="dm_by_order",
        help="In order: " + plain(", ".join(map(str, dataset.columns[:40])))
             + (" …" if len(dataset.columns) > 40 else ""))
    if dataset.holdout is not None:
        st.caption(f"Test metrics on the {len(dataset.holdout):,} rows marked as held out (section 1).")
        unseen = False
    else:
        unseen = st.checkbox("None of this table's rows was used to train this model", key="dm_unseen",
                             help="Then every row is a test row for the metrics. Unticked, the metrics use the app's "
                                  "own 80/20 split, and the model may have been trained on some of its test rows.")
    c1, c2 = st.columns(2)
    threshold = c1.number_input(
        "Decision threshold (optional)", value=None, key="dm_threshold", format="%.3f", placeholder="default",
        help="A classifier's row is 'positive' when its score is at or above this threshold (≥). Empty: the "
             "model's own prediction (its predict, ties included: 0.5 on probabilities, 0 on decision values); for a "
             "regression, at or above the training median.")
    label = c2.text_input(
        "The model's label for the positive class (optional)", key="dm_model_positive", max_chars=200,
        help="Only when the model was trained on a recoded target, e.g. 1 for a 0/1 target whose 1 means the "
             "dataset's positive class. Empty: the dataset's positive class itself.").strip()
    return file, by_order, threshold, label, unseen


def upload_model_form(dataset: Dataset, dkey: str, seed: int) -> TrainedModel | None:
    """The model upload; the loaded model, or None (with the message, and the types to confirm if any)."""
    trust_notice()
    file, by_order, threshold, label, unseen = model_file_choices(dataset)
    if file is None:
        return None
    data, digest, name = file.getvalue(), digest_of(file), safe_name(file.name, "model")
    pending = st.session_state.get("dm_untrusted")
    confirmed: tuple[str, ...] = st.session_state.setdefault("dm_confirmed_types", {}).get(digest, ())
    if pending and pending[0] == digest and st.session_state.get("dm_trust_types"):
        confirmed = pending[1]
    result = None
    st.button("Load model", key="dm_load_model", type="primary", icon=":material/upload_file:",
              on_click=boundary.guarded(callbacks.request), args=("dm_load_model", digest))
    if callbacks.requested("dm_load_model", digest):
        with callbacks.applying("dm_load_model"):
            result = load_model(dataset, dkey, (data, digest, name), (seed, threshold, label, confirmed, by_order,
                                                                      unseen))
    pending = st.session_state.get("dm_untrusted")
    if result is None and pending and pending[0] == digest:
        st.checkbox(f"I trust the author of {plain(name)}: load it with these {len(pending[1])} unvetted types "
                    "allowed (each runs its own code whenever the model is used, inside the sandbox)",
                    key="dm_trust_types",
                    help="Only classes whose loading runs no code can be confirmed; functions, and anything the "
                         "file calls while loading, are refused in every case. Tick this, then press Load model "
                         "again.")
    return result


def load_model(dataset: Dataset, dkey: str, file: tuple, choices: tuple) -> TrainedModel | None:
    """"Load model": the ``file`` (its bytes, hash and name) loaded with the form's ``choices`` (seed, threshold,
    positive label, confirmed types, by order, unseen) becomes the model configured; else None and the message."""
    data, digest, name = file
    seed, threshold, label, confirmed, by_order, unseen = choices
    try:
        result = load_cached(dataset, data, ModelUpload(dkey, digest, name, UploadChoices(
            seed=seed, threshold=threshold, positive_class=label or None, trusted_types=confirmed, by_order=by_order,
            unseen=unseen)))
    except UntrustedModelError as exc:
        st.session_state["dm_untrusted"] = (digest, exc.types, exc.checks) if exc.types else None
        st.error(plain(exc), icon=":material/gpp_bad:")
        show_type_checks(exc.checks)
        return None
    except IntakeError as exc:
        st.error(plain(exc), icon=":material/error:")
        return None
    origins.remember_model(result.key, ModelRecipe("file", seed=seed, file=FileRef.of(data, name),
                                                   threshold=threshold, positive=label or None,
                                                   trusted_types=tuple(confirmed), by_order=by_order), data)
    if confirmed:  # trusted once for this file's content: not asked again in this session
        st.session_state["dm_confirmed_types"][digest] = confirmed
        st.session_state.pop("dm_untrusted", None)
    st.session_state["dm_model"] = result
    return result


def show_type_checks(checks) -> None:
    """The verdict on each type of a refused skops file: its name, what it really is, and why."""
    if checks:
        st.dataframe(pd.DataFrame({"type in the file": [c.name for c in checks],
                                   "what it really is": [c.resolved for c in checks],
                                   "verdict": [c.verdict for c in checks], "why": [c.reason for c in checks]}),
                     hide_index=True, width="stretch", key="dm_type_checks")
