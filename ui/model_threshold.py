"""The model page's decision threshold: a threshold control with the confusion matrix and the metrics at the chosen
value (:func:`~explain_core.inspection.threshold.threshold_sweep`), and "Apply to every page", which makes the
setup with that threshold (:meth:`~explain_core.setup.Setup.with_threshold`) the session's, so every page and cache
follows it (their keys change with it). The buttons are keyed by the setup they were drawn for: a click a browser
sent for an older setup is not applied to the newer one."""
from __future__ import annotations

import streamlit as st

from explain_core.inspection.threshold import threshold_sweep
from explain_core.setup import Setup
from explain_core.views.style import chart_name
from explain_core.views.threshold import sweep_confusion_figure, sweep_figure, sweep_text
from explain_core.vocabulary import plain
from ui import origins
from ui import second_model as second
from ui import shared


@st.cache_data(show_spinner="Scoring the test rows at each threshold…", max_entries=16)
def sweep(_setup: Setup, key: str, chosen: float):
    return threshold_sweep(_setup, also=(chosen,))


def use_threshold(s: Setup, threshold: float) -> None:
    """The session's setup with ``threshold``: its data and model keep their recipes (saved analyses restore it)."""
    moved = s.with_threshold(threshold)
    model = origins.origins_of(s)[1]
    if model is not None:
        origins.remember_model(moved.model_key, model)
    shared.use_setup(moved, origin_of=s)


def threshold_control(s: Setup, low: float, high: float) -> float:
    """The threshold chosen (the one in use until changed), within the observed scores."""
    step = 0.01 if s.model.score_kind == "proba" else max((high - low) / 100, 1e-6)
    value = min(max(float(s.model.threshold), low), high)
    words = ("A regression's row is positive when its prediction is at or above this value."
             if s.dataset.task != "classification" else
             "A row is predicted positive when its score is at or above this value (at the model's own threshold, "
             "the model's own prediction).")
    return float(st.columns([1, 2])[0].number_input(
        f"Decision threshold on the {plain(s.score_label)}", min_value=low, max_value=high, value=value, step=step,
        format="%.4g", key=f"mt_threshold_{s.key}", help=words))


def threshold_section(s: Setup) -> None:
    """The threshold control, its confusion matrix and metrics, the metrics-against-threshold chart and Apply."""
    st.subheader("The decision threshold")
    grid = sweep(s, s.key, float(s.model.threshold)).thresholds
    chosen = threshold_control(s, float(min(grid.min(), s.model.threshold)), float(max(grid.max(),
                                                                                          s.model.threshold)))
    result = sweep(s, s.key, chosen)
    line = result.at(chosen)
    with st.container(key="mt_metrics", horizontal=True):
        for name in ("accuracy", "precision", "recall (TPR)", "FPR", "F1", "selection rate"):
            now = result.at(result.current)[name]
            st.metric(name, f"{line[name]:.3f}", None if chosen == result.current else f"{line[name] - now:+.3f}",
                      delta_color="off")
    st.caption(plain(sweep_text(result, chosen)))
    left, right = st.columns(2)  # as the page's other charts: room for the confusion matrix's title
    left.plotly_chart(sweep_figure(result, chosen), width="stretch", key="mt_sweep", alt=sweep_text(result, chosen))
    confusion = sweep_confusion_figure(result, chosen)
    right.plotly_chart(confusion, width="stretch", key="mt_confusion", alt=chart_name(confusion))
    buttons = st.container(horizontal=True, vertical_alignment="center")
    if chosen == s.model.threshold:  # nothing to apply (a disabled button's text would not reach 4.5:1)
        buttons.caption("This is the threshold every page uses; choose another to apply it.")
    elif buttons.button("Apply to every page", key=f"mt_apply_{s.key}", icon=":material/done_all:", type="primary",
                        help="Every explanation on every page then labels rows with this threshold."):
        use_threshold(s, chosen)
        st.rerun()
    own = s.chosen_threshold is not None
    if own and buttons.button("Back to the model's own threshold", key=f"mt_reset_{s.key}", icon=":material/undo:"):
        use_threshold(s, s.own_threshold)
        st.rerun()
    shared.download_buttons("threshold_sweep", result.table(), result, key="mt_sweep")


def threshold_and_second_model(s: Setup) -> None:
    """The model page's sections of this module and of ``ui/second_model.py``."""
    threshold_section(s)
    second.second_model_section(s)
