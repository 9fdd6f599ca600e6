"""Explanation explorer — minimal app: SEV⁻ / SEV⁺ of one COMPAS row under the demo GBDT model.

Run with ``streamlit run app.py``. All computation lives in ``explain_core``; this file only loads
the demo, lets the user pick a test row predicted positive, and shows the paper-style tables.
"""
from __future__ import annotations

import numbers

import pandas as pd
import streamlit as st

from explain_core import IntakeError, demo_model, explain_sev, load_demo, make_reference
from explain_core.sev import DEFAULT_MAX_DEPTH

DATASET, MODEL_KIND = "compas", "gbdt"
UNCHANGED = "—"

st.set_page_config(page_title="Explanation explorer · SEV", layout="wide")


@st.cache_resource(show_spinner="Loading the COMPAS demo and its gradient-boosting model…")
def load_demo_model():
    """The COMPAS demo, its GBDT model (trained once, then cached on disk) and the reference."""
    data = load_demo(DATASET)
    trained = demo_model(data, MODEL_KIND)
    reference = make_reference(data, trained.train_rows)
    return data, trained, reference


@st.cache_data(show_spinner=False)
def positive_test_rows() -> pd.Series:
    """P(recid) of every test row the model predicts positive, indexed by dataset row."""
    data, trained, _ = load_demo_model()
    rows = trained.test_rows
    scores = pd.Series(trained.model.score(data.features.iloc[rows]), index=rows)
    return scores[trained.model.labels_of(scores.to_numpy()) == 1]


@st.cache_data(show_spinner=False)
def reference_score() -> float:
    data, trained, reference = load_demo_model()
    return float(trained.model.score(reference.as_frame(data.columns))[0])


@st.cache_data(show_spinner="Searching for the sparsest explanations…")
def explain_row(row: int, restricted: tuple[str, ...], depth: int):
    data, trained, reference = load_demo_model()
    return explain_sev(trained.model, data, data.features.iloc[[row]], reference,
                       restricted=restricted, max_depth=depth)


def show_value(value) -> str:
    """One table cell as text: numbers rounded to 2 decimals (whole numbers without decimals)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        return str(value)
    if isinstance(value, numbers.Integral) or float(value).is_integer():
        return str(int(value))
    return f"{float(value):.2f}"


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The paper's table with every cell as text, so mixed columns render cleanly."""
    return table.map(show_value).astype(str)


def metric_value(result) -> str:
    if result.status == "explained":
        return str(result.value)
    return f"> {result.max_depth}" if result.status == "beyond_depth" else "none"


HELP = {
    "minus": "SEV⁻: the fewest features of the query that, set to the reference's values, flip the "
             "prediction to negative.",
    "plus": "SEV⁺: the fewest features that, moved from the reference to the query's values, already give "
            "the query's positive prediction.",
    "restricted": "SEV®: SEV⁻ with the restricted features held at the query's values.",
}


def show_result(ex, which: str) -> None:
    result = getattr(ex, which)
    with st.container(key=f"sev_{which}", border=True):
        st.metric(result.label, metric_value(result), help=HELP[which])
        st.caption(result.message)
        st.dataframe(display_table(ex.table(which, unchanged=UNCHANGED)), width="stretch")


st.title("Explanation explorer")
st.write(
    "Why does a model flag this person as likely to reoffend? **Sparse Explanation Values** (SEV) answer with "
    "the fewest features that matter: **SEV⁻** is the smallest number of this person's features that, "
    "replaced by those of a typical non-reoffender (the *reference*), flip the model's prediction to "
    "negative; **SEV⁺** is the smallest number of features that, moved from the reference to this person's "
    "values, already produce the positive prediction. Pick a test row of the COMPAS data that the "
    "gradient-boosting model predicts positive, and read each minimal explanation as a row of the table."
)

try:
    data, trained, reference = load_demo_model()
    scores = positive_test_rows()
except IntakeError as exc:
    st.error(str(exc))
    st.stop()

metrics = trained.metrics
m1, m2, m3 = st.columns(3)
m1.metric("Model", "Gradient boosting", help=trained.model.name)
m2.metric("Test accuracy", f"{metrics['test_accuracy']:.3f}")
m3.metric("Test AUC", f"{metrics['test_auc']:.3f}")

if scores.empty:
    st.warning("The model predicts no test row positive, so there is nothing to explain.")
    st.stop()

c1, c2, c3 = st.columns([2, 2, 1])
row = c1.selectbox(
    f"Test row predicted positive ({len(scores)} rows)", list(scores.index), key="row",
    format_func=lambda r: f"row {r} · P(recid)={scores[r]:.2f}",
)
suggested = ", ".join(data.restricted_suggestion) or "protected attributes"
restricted = c2.multiselect(
    "Restricted features (held fixed: SEV®)", data.group_names, default=[], key="restricted",
    help=f"Features an explanation may not change, e.g. {suggested}. With any chosen, SEV® is shown too.",
)
depth = c3.slider("Maximum depth", 1, len(data.group_names), DEFAULT_MAX_DEPTH, key="depth",
                  help="The search stops after this many features changed at once.")

try:
    ex = explain_row(int(row), tuple(n for n in data.group_names if n in restricted), int(depth))
except IntakeError as exc:
    st.error(str(exc))
    st.stop()

st.caption(
    f"Each table starts from the **query** (row {row}, P(recid) = {ex.score:.2f}) or the **reference** and lists "
    f"one minimal explanation per row, showing only the features it changes; **{UNCHANGED}** means the feature keeps "
    f"its value from the table's first row (the query for SEV⁻ and SEV®, the reference for SEV⁺). The reference is a typical non-reoffender: the {reference.description} "
    f"(no two-year recidivism) among the training rows, with numeric means shown to 2 decimals; the model gives "
    f"it P(recid) = {reference_score():.2f}."
)

for which in ["minus", "plus"] + (["restricted"] if ex.restricted is not None else []):
    show_result(ex, which)
