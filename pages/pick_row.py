"""Pick a row: a filterable table of rows with the model's prediction, and a what-if editor."""
import numpy as np
import pandas as pd
import streamlit as st

from explain_core.views.vocabulary import plain
from pages import _shared as shared

MAX_SHOWN = 2000

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
    labels = {"all": "any", 1: f"predicted {plain(data.class_value(1))}",
              0: f"predicted {plain(data.class_value(0))}"}
    predicted = f2.segmented_control("Prediction", ["all", 1, 0], default=1 if classification else "all",
                                     key="pick_predicted", format_func=labels.get, disabled=not classification)
    f3, f4 = st.columns([1, 2])
    outcome = f3.segmented_control(
        "Against the truth", ["all", "wrong", "right"], default="all", key="pick_outcome",
        format_func={"all": "any", "wrong": "misclassified", "right": "correct"}.get,
        help="Misclassified: the model's label differs from the true one" + ("" if classification else
                                                                            " (above / below the threshold)") + ".")
    low, high = float(scores["score"].min()), float(scores["score"].max())
    score_range = f4.slider("Score", low, high, (low, high), key="pick_score", format="%.3g") if high > low \
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
table = pd.concat([scores.iloc[positions][["score", "predicted"]],
                   pd.DataFrame({"true": data.target.to_numpy()[positions], "misclassified": wrong[positions]},
                                index=scores.index[positions]),
                   scores.iloc[positions][["split"]], data.features.iloc[positions]], axis=1)
table.index.name = "row"
st.caption(f"{len(positions):,} of {len(scores):,} rows match" +
           (f"; the first {MAX_SHOWN:,} are listed" if len(positions) > MAX_SHOWN else "") +
           ". Click a row's left edge to choose it, or type its number.")


def on_pick() -> None:
    chosen = st.session_state["pick_table"].selection.rows
    if chosen:
        shared.choose_row(int(st.session_state["pick_positions"][chosen[0]]))
        st.session_state["pick_number"] = shared.row()


def on_type() -> None:
    shared.choose_row(int(st.session_state["pick_number"]))


st.session_state["pick_positions"] = positions[:MAX_SHOWN]
st.dataframe(table.head(MAX_SHOWN), key="pick_table", on_select=on_pick, selection_mode="single-row",
             width="stretch", height=320, column_config={"score": st.column_config.NumberColumn(format="%.3f")})
shared.download_buttons("rows", table)
st.session_state.setdefault("pick_number", shared.row())
st.number_input("Row number", 0, len(data.features) - 1, step=1, key="pick_number", on_change=on_type)

row = shared.row()
score = float(scores["score"].iloc[row])
st.success(f"**Row {row}** is chosen ({scores['split'].iloc[row]} row, {plain(s.score_text(score))}); "
           "it follows you to every page.", icon=":material/check_circle:")

st.subheader("What if?")
st.caption("Change any value and see the model's new prediction. *Explain the edited row* makes every page explain "
           "the edited values instead of the original row.")
original = s.query(row)
edited = st.data_editor(shared.query(), key=f"pick_whatif_{row}", width="stretch", hide_index=True,
                        num_rows="fixed")
new_score = float(s.model.score(edited)[0])
changes = {c: edited[c].iloc[0] for c in data.columns
           if not (pd.isna(edited[c].iloc[0]) and pd.isna(original[c].iloc[0]))
           and edited[c].iloc[0] != original[c].iloc[0]}
c1, c2, c3 = st.columns([2, 1, 1])
c1.metric("Prediction of the edited values", plain(s.score_text(new_score)),
          delta=f"{new_score - score:+.3f}" if changes else None)
if c2.button("Explain the edited row", key="pick_whatif_apply", disabled=not changes, type="primary"):
    st.session_state["whatif"] = changes
    st.rerun()
if c3.button("Back to the original row", key="pick_whatif_reset", disabled=not st.session_state.get("whatif")):
    st.session_state["whatif"] = None
    st.session_state.pop(f"pick_whatif_{row}", None)
    st.rerun()
if st.session_state.get("whatif"):
    st.info("Explaining the edited row: " + plain(", ".join(f"{k} = {v}" for k, v in
                                                            st.session_state["whatif"].items())))
