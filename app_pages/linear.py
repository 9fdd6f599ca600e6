"""Anchored k-sparse linear explanations (PLE): IHT and the certified exact fit beside LIME and SHAP on one sample.

A thin view: the fits come from ``explain_core.analysis.row_linear`` through ``ui/shared.linear``; the sweeps
from ``explain_core.analysis.linear_sweep`` through :func:`sweep` below (cached per setup, row and parameters).
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import streamlit as st

from explain_core.analysis import LINEAR_METHODS, LinearParameters, linear_sweep
from explain_core.errors import IntakeError
from explain_core.limits import limits
from explain_core.linear.compare import SWEEP_GRIDS, Sweep
from explain_core.linear.guarantees import SampleGuidance
from explain_core.views.linear import folded_weights, sample_guidance_text, sweep_figure, weights_figure
from explain_core.views.readings import lemma4_sentence, linear_reading
from explain_core.views.summaries import sweep_text, weights_text
from explain_core.vocabulary import (LINEAR_CHOICE_LABELS, METHOD_LABELS, METRIC_COLUMNS, SWEEP_LABELS,
                                           format_significant, join_words, plain)
from ui import shared
from ui import stops

MAX_SWEEP_VALUES = 12
MAX_TIME_LIMIT = 120.0


def f_description(s, query: pd.DataFrame) -> str:
    """What f is in this literal space (classification: ±1 agreement with the row's label)."""
    if s.dataset.task == "classification":
        name = s.dataset.class_name(int(s.model.label(query)[0]))
        return (f"**f(z) = +1 when the model predicts this row's class (*{plain(name)}*) at z, −1 otherwise**, "
                "so f(x) = +1. "
                "Fidelity and relevance are then error rates: (f − w·z)²/4 is 1 for a wrong sign of ±2 and "
                "relevance R is the probability that f(z) ≠ f(x) among z that w cannot tell from x.")
    return ("**f(z) is the model's prediction at z rescaled to [−1, +1]** by the training target's range "
            "(clipped). Fidelity and relevance are mean (f − w·z)²/4 and (f(z) − f(x))²/4.")


def bold_lead(text: str) -> str:
    """The reading's first sentence (its question) in bold."""
    question, _, rest = text.partition("? ")
    return f"**{question}?** {rest}" if rest else text


def parse_values(text: str, parameter: str, d: int) -> tuple:
    """The sweep's values: comma-separated numbers (blank = the default grid), checked for the parameter."""
    if not text.strip():
        values = SWEEP_GRIDS[parameter]
        return tuple(v for v in values if v <= d) if parameter == "k" else tuple(values)
    try:
        values = [float(v) for v in re.split(r"[,\s;]+", text.strip()) if v]
    except ValueError:
        example = ", ".join(map(str, SWEEP_GRIDS[parameter][:4]))
        raise IntakeError(f"Write the values as numbers separated by commas, e.g. {example}.") from None
    if len(values) > MAX_SWEEP_VALUES:
        raise IntakeError(f"A sweep takes at most {MAX_SWEEP_VALUES} values (each is a fresh fit); not {len(values)}.")
    if parameter in ("k", "m"):
        if any(v != int(v) for v in values):
            raise IntakeError(f"{parameter} takes whole numbers.")
        values = [int(v) for v in values]
    low, high = {"k": (1, d), "m": (10, limits().linear_samples), "sigma": (0.0, 50.0)}[parameter]
    bad = [v for v in values if not low <= v <= high]
    if bad:
        raise IntakeError(f"{parameter} must lie in [{low:g}, {high:g}] here; not {', '.join(map(str, bad))}.")
    return tuple(dict.fromkeys(values))


@st.cache_data(show_spinner=False, max_entries=16)
def sweep(_setup, key: str, query: pd.DataFrame, parameter: str, values: tuple, params: LinearParameters) -> Sweep:
    """``analysis.linear_sweep`` one value at a time (same rows as one call), with a progress bar."""
    tables = []
    with shared.progress_bar(f"Sweeping {parameter} over {len(values)} values…") as progress:
        for i, value in enumerate(values):
            tables.append(linear_sweep(_setup, query, params, parameter, [value]).table)
            progress((i + 1) / len(values), f"{parameter} = {value} done ({i + 1} of {len(values)})")
    return Sweep(parameter, tuple(values), pd.concat(tables, ignore_index=True))


def metrics_view(table: pd.DataFrame) -> pd.DataFrame:
    """The metrics one per row and the explainers one per column (five columns fit any page), numbers as text:
    4 decimals, the optimality gap in percent, "—" where a metric does not apply."""
    def cell(column: str, value) -> str:
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return "—"
        if column == "gap":
            return f"{float(value):.2%}"
        if column == "support_size":
            return str(int(value))
        return f"{value:.4f}" if isinstance(value, (float, np.floating)) else str(value)
    main = [c for c in table.columns if c not in ("max_abs_weight", "seconds", "detail")]
    view = pd.DataFrame({METHOD_LABELS.get(m, m): [cell(c, table.loc[m, c]) for c in main] for m in table.index},
                        index=pd.Index([METRIC_COLUMNS.get(c, c) for c in main], name="metric"))
    return view


def basis(s, query: pd.DataFrame, p: LinearParameters) -> tuple:
    """What a sweep depends on besides its own parameter: setup, row values and the linear parameters."""
    return (s.key, query.to_json(), p)


st.title("Anchored k-sparse linear explanations")
shared.row_banner()
s = shared.setup()
p = shared.params()
d = len(s.dataset.groups) + 1

with st.form("lin_form"):
    c1, c2, c3 = st.columns(3)
    sigma = c1.number_input("σ (locality)", min_value=0.0, max_value=50.0, step=0.25, value=float(p.sigma),
                            key="lin_sigma",
                            help="Neighbourhood D_{x,σ} ∝ exp(−σ/2·‖z − x‖₁): each literal is flipped "
                                 "independently with probability 1/(1 + e^σ). σ = 0 is uniform; larger σ is "
                                 "more local.")
    k = c1.number_input("k (sparsity, bias included)", min_value=1, max_value=d, step=1, value=int(min(p.k, d)),
                        key="lin_k", help="At most k non-zero weights, the bias counting as one (LIME gets k − 1 "
                        "features plus its intercept).")
    m = c2.number_input("m (samples)", min_value=10, max_value=limits().linear_samples, step=1000,
                        value=int(min(p.m, limits().linear_samples)), key="lin_m",
                        help="Size of the shared sample every explainer is fitted on (a fresh one of the same size "
                             "scores them).")
    method = c2.radio("Method", list(LINEAR_CHOICE_LABELS), format_func=LINEAR_CHOICE_LABELS.get, key="lin_method",
                      index=list(LINEAR_CHOICE_LABELS).index(p.linear_method), horizontal=True,
                      help="IHT: iterative hard thresholding, polynomial time. Exact: the empirical problem (P4) "
                           "solved to certified optimality (or the best found within the time limit, with its gap).")
    time_limit = c3.number_input("Time limit of the exact fit (s)", min_value=0.1, max_value=MAX_TIME_LIMIT, step=1.0,
                                 value=float(p.time_limit), key="lin_time_limit")
    seed = c3.number_input("Seed", min_value=0, step=1, value=int(p.seed), key="lin_seed",
                           help="Seeds the samples (shared by every method's randomness).")
    if st.form_submit_button("Fit", key="lin_submit", type="primary", icon=":material/play_arrow:"):
        p = shared.set_params(sigma=float(sigma), k=int(k), m=int(m), linear_method=method,
                              time_limit=float(time_limit), seed=int(seed))

query = shared.query()
with st.spinner("Fitting every explainer on one sample…"):
    report = shared.linear_now()
comparison = report.comparison
fitted = LINEAR_METHODS[p.linear_method]

with st.container(key="lin_space"):
    st.markdown(bold_lead(plain(linear_reading(s, report, fitted))))
    with st.expander("How it is computed (the paper's notation)"):
        example = next((n for n in report.names[1:]), "keeps <feature> = <value>")
        st.markdown(
            f"Each feature becomes a **literal** “keeps ⟨feature⟩ = ⟨this row's value⟩”, e.g. *{plain(example)}*. "
            "At this row every literal is true (x_j = +1); **z_j = −1 moves that feature to the reference value** "
            f"({plain(s.reference_of_label(shared.current_label()).description)}), so the corners of "
            f"{{−1, +1}}^{len(report.names)} are the SEV hypercube plus a bias literal that is always +1. An "
            "explanation is a weight vector w with at most k non-zero weights, **anchored**: w·x = f(x).")
        still = [g for g in s.dataset.group_names if g not in report.groups]
        if still:
            st.markdown(f"{plain(join_words(still))} {'has' if len(still) == 1 else 'have'} the reference's value at "
                        "this row, so moving them changes nothing: they have no literal (a weight on one could only "
                        "fit the sample's noise).")
        st.markdown(f_description(s, query))
        st.markdown("Fidelity error F(w) = E[¼(w·z − f(z))²] over D_{x,σ} (F̂: the same mean over the fitting "
                    "sample); relevance error R(w) = E[¼(f(z) − f(x))² | w·z = w·x]; Lemma 4: R ≤ (1 + e^−σ)^k · F "
                    "for every anchored k-sparse w.")
        st.markdown(plain(sample_guidance_text(SampleGuidance(comparison.m, comparison.k, len(report.names),
                                                              comparison.sigma, delta=0.05, epsilon=0.1))))

st.subheader("Weights")
with st.container(key="lin_weights"):
    weights = report.weights()
    shown = folded_weights(weights)
    st.plotly_chart(weights_figure(shown.rename(columns=METHOD_LABELS),
                                   title=f"Weights of each explainer (k = {comparison.k}, σ = {comparison.sigma:g})"),
                    key="lin_weights_chart", alt=weights_text(shown))
    st.caption(plain(weights_text(shown)))
    st.caption("A positive weight: keeping that value pushes f towards this row's outcome. Drawn: the literals a "
               f"k-sparse explainer uses (at most k = {comparison.k} each); dense SHAP's other weights are summed on "
               "the *others* line (every weight is in the CSV). SEV-style reading: the support is the set of "
               "features the explanation needs.")
    shared.download_buttons("linear_weights", weights, report, key="lin_weights")

with st.container(key="lin_highlights"):
    results = {r.method: r for r in comparison.results}
    for name in fitted:
        r = results[name]
        c = st.columns(4)
        rel = r.scores.relevance
        c[0].metric(f"{METHOD_LABELS[name]}: fidelity F", f"{r.scores.fidelity:.4f}",
                    help="Mean (f(z) − w·z)²/4 on a fresh sample of D_{x,σ}")
        c[1].metric(f"{METHOD_LABELS[name]}: relevance R", "—" if rel is None else f"{rel.value:.4f}",
                    help="E[(f(z) − f(x))²/4 | w·z = w·x] (Def. 1)" + ("" if rel is None else f", {rel.method}"))
        gap = r.scores.anchoring_gap
        c[2].metric(f"{METHOD_LABELS[name]}: anchoring gap", "0" if gap < 1e-12 else format_significant(gap, 2),
                    help="|w·x − f(x)|: 0 when the explanation reproduces the prediction at this row")
        if name == "exact":
            value = "optimal" if r.status == "optimal" else f"gap {r.gap:.2%}"
            c[3].metric("exact (MIP): certificate", value, help=f"{r.detail}: optimal = no k-sparse anchored w "
                        "has a lower F̂ on this sample")
        elif "exact" in results:
            diff = r.scores.empirical_fidelity - results["exact"].scores.empirical_fidelity
            same = abs(diff) <= 1e-9
            c[3].metric("IHT: certificate", "none", delta="same fit as the exact one" if same else
                        f"fit error {'+' if diff > 0 else ''}{format_significant(diff, 2)} vs the exact fit",
                        delta_color="off" if same else "inverse",
                        delta_arrow="off" if same else "auto",
                        help="IHT carries no certificate; its F̂ beside the exact fit's on the same sample shows "
                             "how close it came")
        else:
            c[3].metric("IHT: certificate", "none", help="IHT carries no certificate: fit the exact method to get one")

st.subheader("Metrics of every explainer")
with st.container(key="lin_metrics"):
    table = comparison.table()
    st.dataframe(metrics_view(table), key="lin_metrics_table", width="stretch")
    st.caption(plain(lemma4_sentence(comparison.bound_coverage(), comparison.k, comparison.sigma))
               + " Seconds, largest weight and each fit's details are in the CSV.")
    shared.download_buttons("linear_metrics", table, comparison, key="lin_metrics")

st.subheader("Sweeps")
st.caption("Relevance of each explainer as one parameter varies, the other two held at the values above "
           "(PLE Figs. 4-6). Every point is a fresh fit; blank values use the default grid.")
with st.form("lin_sweep_form"):
    c1, c2 = st.columns([1, 2])
    parameter = c1.selectbox("Parameter", list(SWEEP_LABELS), format_func=SWEEP_LABELS.get,
                             key="lin_sweep_parameter")
    text = c2.text_input("Values", key="lin_sweep_values", placeholder="default grid",
                         help="Default grids: " + "; ".join(f"{k}: {', '.join(map(str, v))}"
                                                             for k, v in SWEEP_GRIDS.items()))
    if st.form_submit_button("Run the sweep", key="lin_sweep_run", icon=":material/show_chart:"):
        try:
            st.session_state["lin_sweep_request"] = {"parameter": parameter,
                                                     "values": parse_values(text, parameter, d),
                                                     "basis": basis(s, query, p.linear)}
        except IntakeError as exc:
            st.error(plain(exc), icon=":material/error:")

request = st.session_state.get("lin_sweep_request")
if request is not None:
    with st.container(key="lin_sweep"):
        if request["basis"] != basis(s, query, p.linear):
            st.info("The row or the parameters changed since this sweep: run it again.", icon=":material/info:")
        else:
            args = request["parameter"], request["values"], p.linear
            with stops.stoppable(f"the sweep of {SWEEP_LABELS[args[0]]}", stops.run_key("sweep", s.key, query, *args),
                                 forget=("lin_sweep_request",)):
                result = sweep(s, s.key, query, *args)
            summary = result.summary("relevance")
            shown = summary.assign(method=summary["method"].map(lambda v: METHOD_LABELS.get(v, v)))
            st.plotly_chart(sweep_figure(shown, result.parameter), key="lin_sweep_chart",
                            alt=sweep_text(shown, result.parameter))
            st.caption(plain(sweep_text(shown, result.parameter)))
            with st.expander("Table"):
                st.dataframe(shown, hide_index=True, key="lin_sweep_table")
            shared.download_buttons(f"linear_sweep_{result.parameter}", result.table, result, key="lin_sweep")
