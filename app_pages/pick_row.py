"""Pick a row: a filterable table of rows with the model's prediction, and a what-if editor."""
import functools
import hashlib

import numpy as np
import pandas as pd
import streamlit as st

from explain_core.errors import IntakeError
from explain_core.reference import custom_value
from explain_core.vocabulary import format_value, plain
from ui import boundary
from ui import callbacks
from ui import shared

MAX_SHOWN = 2000
HEADER_BUDGET = 60  # characters of feature headers shown by default beside the row's own columns


def columns_that_fit(columns) -> list:
    """The first feature columns whose headers fit in :data:`HEADER_BUDGET` characters (at least one)."""
    shown, used = [], 0
    for column in columns:
        used += max(len(str(column)), 6) + 3
        if shown and used > HEADER_BUDGET:
            break
        shown.append(column)
    return shown

st.title("Pick a row")
s = shared.setup()
data = s.dataset
scores = shared.row_scores(s, s.key)
classification = data.task == "classification"

truth = s.model.labels_of(data.y) if not classification else np.asarray(data.y).astype(int)
wrong = truth != scores["predicted"].to_numpy()
with st.container(border=True):
    f1, f2 = st.columns([1, 2])
    split = f1.segmented_control("Rows", ["test", "train", "all"], default="test", key="pick_split")
    labels = {"all": "any", **({1: data.class_name(1, short=True), 0: data.class_name(0, short=True)}
                               if classification else dict(enumerate(s.class_names)))}
    predicted = f2.segmented_control("Prediction", ["all", 1, 0], default=1 if classification else "all",
                                     key="pick_predicted", format_func=labels.get, disabled=not classification)
    f3, f4 = st.columns([1, 2])
    outcome = f3.segmented_control(
        "Against the truth", ["all", "wrong", "right"], default="all", key="pick_outcome",
        format_func={"all": "any", "wrong": "misclassified", "right": "correct"}.get,
        help="Misclassified: the model's label differs from the true one"
        + ("" if classification else " (at or above / below the threshold)") + ".")
    low, high = float(scores["score"].min()), float(scores["score"].max())
    score_format = "%.3f" if max(abs(low), abs(high)) < 1000 else "%.0f"  # plain numbers, never 2.45e+05
    score_range = f4.slider("Score", low, high, (low, high), key="pick_score", format=score_format) if high > low \
        else (low, high)

keep = np.ones(len(scores), dtype=bool)
if split in ("test", "train"):
    keep &= (scores["split"] == split).to_numpy()
if classification and predicted in (0, 1):
    keep &= (scores["predicted"] == predicted).to_numpy()
if outcome in ("wrong", "right"):
    keep &= wrong if outcome == "wrong" else ~wrong
keep &= scores["score"].between(*score_range).to_numpy()
positions = np.flatnonzero(keep)
# the classes in the filter's words (a regression's side of the threshold); a regression's truth is its value
named = np.array([labels[0], labels[1]], dtype=object)
table = pd.concat([scores.iloc[positions][["score"]],
                   pd.DataFrame({"predicted": named[scores["predicted"].to_numpy()[positions]],
                                 "true": (named[truth[positions]] if classification
                                          else data.target.to_numpy()[positions]),
                                 "misclassified": wrong[positions]},
                                index=scores.index[positions]),
                   scores.iloc[positions][["split"]], data.features.iloc[positions]], axis=1)
table.index.name = "row"
shown_columns = st.multiselect("Feature columns shown", data.columns, default=columns_that_fit(data.columns),
                               key="pick_columns", help="The table shows these features (so it fits the page); the "
                                                        "CSV holds every column.")
st.caption(f"{len(positions):,} of {len(scores):,} rows match" +
           (f"; the first {MAX_SHOWN:,} are listed" if len(positions) > MAX_SHOWN else "") +
           ". Click a row's left edge to choose it, or type its number.")


def on_pick(key: str, shown: np.ndarray, setup_key: str) -> None:
    """A row clicked in table ``key``, which listed the rows ``shown`` of setup ``setup_key``."""
    chosen = st.session_state[key].selection.rows
    if chosen and callbacks.drawn_for(setup_key) and 0 <= chosen[0] < len(shown):
        shared.choose_row(int(shown[chosen[0]]))


def apply_whatif(setup_key: str, edited_row: int, changes: dict | None) -> None:
    """Explain the edited values of ``edited_row`` (``changes``), or the original row again (None)."""
    if callbacks.drawn_for(setup_key, edited_row):
        st.session_state["whatif"] = changes
        if changes is None:
            st.session_state.pop(f"pick_whatif_{setup_key}_{edited_row}", None)


# Each widget's key names what it was drawn for (the setup, the rows listed, the row), and its callback checks it:
# a click sent by a browser that had not drawn a newer state yet is not applied to that state.
shown = positions[:MAX_SHOWN]
table_key = f"pick_table_{s.key}_{hashlib.sha1(shown.tobytes()).hexdigest()[:12]}"
with st.container(key="pick_table"):
    st.dataframe(table.head(MAX_SHOWN), key=table_key, selection_mode="single-row", width="stretch", height=320,
                 on_select=functools.partial(boundary.guarded(on_pick), table_key, shown, s.key),
                 column_order=["score", "predicted", "true", "misclassified", "split", *shown_columns],
                 column_config={"score": st.column_config.NumberColumn(format=score_format),
                                "misclassified": st.column_config.CheckboxColumn("wrong", width="small",
                                                                                 help="misclassified")})
shared.download_buttons("rows", table)
row = shared.row()
number_key = f"pick_number_{s.key}_{row}"
with st.container(key="pick_number"):
    st.number_input("Row number", 0, len(data.features) - 1, value=row, step=1, key=number_key,
                    on_change=boundary.guarded(callbacks.choose_row_from), args=(number_key, s.key, row))
score = float(scores["score"].iloc[row])
st.success(f"**Row {row}** is chosen ({scores['split'].iloc[row]} row, {plain(s.score_text(score))}); "
           "it follows you to every page.", icon=":material/check_circle:")

def what_if_editor(original: pd.DataFrame, current: pd.DataFrame, row: int) -> pd.DataFrame:
    """One line per feature (so it never scrolls sideways): its value in the row and an editable value; returns
    the row with the edited values, each read as its column's type (a value that is not one keeps the original,
    with a message)."""
    lines = pd.DataFrame({"this row": [format_value(v) for v in original.iloc[0]],
                          "what if": [format_value(v) for v in current.iloc[0]]},
                         index=pd.Index([str(c) for c in original.columns], name="feature"))
    table = st.data_editor(lines, key=f"pick_whatif_{s.key}_{row}", width="stretch", disabled=["this row"],
                           num_rows="fixed", height=min(40 + 35 * len(lines), 420),
                           column_config={"what if": st.column_config.TextColumn(
                               "what if", help="Type a new value: a number for a numeric feature, one of the "
                                               "feature's values otherwise")})
    out = current.copy()
    for column, text, shown in zip(original.columns, table["what if"], lines["what if"]):
        if str(text).strip() == shown:  # untouched: the exact value, not its rounded display
            continue
        try:
            value = typed_value(original[column], text)
        except IntakeError as exc:
            st.warning(plain(f"{exc} The original value of {column} is kept."), icon=":material/edit_off:")
            continue
        out[column] = pd.Series([value], index=out.index, dtype=original[column].dtype)
    return out


def typed_value(column: pd.Series, text):
    """``text`` as a value of ``column`` (:func:`~explain_core.reference.custom_value`'s rule: a number for a
    numeric column, an occurring value otherwise; empty = missing)."""
    text = "" if text is None else str(text).strip()
    if text in ("", "missing"):
        return np.nan if pd.api.types.is_numeric_dtype(column) else None
    value = custom_value(data, column.name, text)[column.name]
    if pd.api.types.is_integer_dtype(column) and not float(value).is_integer():
        raise IntakeError(f"{text!r} is not a whole number, as every value of {column.name} is.")
    return value


st.subheader("What if?")
st.caption("Change any value and see the model's new prediction. *Explain the edited row* makes every page explain "
           "the edited values instead of the original row.")
original = s.query(row)
edited = what_if_editor(original, shared.query(), row)
new_score = float(s.model.score(edited)[0])
changes = {c: edited[c].iloc[0] for c in data.columns
           if not (pd.isna(edited[c].iloc[0]) and pd.isna(original[c].iloc[0]))
           and edited[c].iloc[0] != original[c].iloc[0]}
c1, c2, c3 = st.columns([2, 1, 1])
c1.metric("Prediction of the edited values", plain(s.score_text(new_score)),
          delta=f"{new_score - score:+.3f}" if changes else None)
c2.button("Explain the edited row", key="pick_whatif_apply", disabled=not changes, type="primary",
          on_click=boundary.guarded(apply_whatif), args=(s.key, row, changes))
c3.button("Back to the original row", key="pick_whatif_reset", disabled=not st.session_state.get("whatif"),
          on_click=boundary.guarded(apply_whatif), args=(s.key, row, None))
if st.session_state.get("whatif"):
    st.info("Explaining the edited row: " + plain(", ".join(f"{k} = {v}" for k, v in
                                                            st.session_state["whatif"].items())))
