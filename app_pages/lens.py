"""LENS: the τ-minimal sufficient factors of the chosen row, their cumulative PN, LENS vs top-k SHAP, recourse.

A thin view: every number comes from ``explain_core`` through the cached functions of ``ui/shared.py``
(``lens_context`` for the scored context — both exhaustive contexts up to 12 features, the layered search beyond —,
``lens_result`` for the report at (direction, τ, α), ``baselines`` for SHAP).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explain_core.analysis import LensParameters
from explain_core.errors import IntakeError
from explain_core.lens import (ALL_SUBSETS_UP_TO, AttributionCurve, LensResult, default_max_size, largest_factor_size,
                               shap_curve)
from explain_core.lens.causal import GERMAN_GRAPHS, CausalGraph, ScmSettings, differences
from explain_core.limits import limits
from explain_core.views.lens import dag_figure, pn_curve_figure, ps_by_size_figure
from explain_core.views.readings import lens_reading
from explain_core.views.summaries import causation_text, dag_text, pn_curve_text, ps_by_size_text
from explain_core.vocabulary import DIRECTION_LABELS, format_number, format_value, plain
from ui import lens_runs, shared, stops
from ui.boundary import guarded

DIRECTION_HELP = (
    "**R2I** (reference → input): each reference row (a training row the model predicts opposite to this one) "
    "gets the factor's features set to *this row's* values. A factor is sufficient when that alone makes the model "
    "give *this row's* prediction — what in the row is enough for its outcome.\n\n"
    "**I2R** (input → reference): this row gets the factor's features set to *a reference's* values. A factor is "
    "sufficient when that alone flips the prediction to the opposite class — which changes are enough to change "
    "the outcome (recourse).")
MODE_LABELS = {"exact": "Exact: PS ≥ τ", "test": "Binomial test at level α"}
LABELS = {"direction": "Context", "references": "References", "tau": "τ (sufficiency threshold)",
          "budget": "Search budget (model rows)", "max_size": "Largest factor (features)"}
FACTOR_COLUMNS = {"PS": st.column_config.NumberColumn("PS", format="%.3f", help="Probability of sufficiency: "
                                                      "share of references for which the intervention reaches "
                                                      "the outcome"),
                  "p-value": st.column_config.NumberColumn("p-value", format="%.4f",
                                                           help="One-sided binomial test of H0: PS < τ"),
                  "cost": st.column_config.NumberColumn("cost", format="%.3f", help="Cheapest intervention "
                                                        "reaching the outcome: |Δ| / MAD per numeric feature, "
                                                        "1 per changed categorical feature"),
                  "cheapest reference": st.column_config.NumberColumn("cheapest reference", format="%d",
                                                                      help="Dataset row of the reference that "
                                                                      "achieves that cost")}


def factor_view(result: LensResult, exact: bool) -> pd.DataFrame:
    """The τ-minimal factors as shown: factor, size, PS, hits / samples, p-value (test mode), cost, reference."""
    table = result.table()
    view = pd.DataFrame({"factor": table["factor"], "size": table["size"], "PS": table["PS"],
                         "hits / samples": [f"{h} / {n}" for h, n in zip(table["hits"], table["samples"])]})
    if not exact:
        view["p-value"] = table["p_value"].astype(float)
    view["cost"] = table["cost"].astype(float)
    view["cheapest reference"] = pd.array([None if r is None else int(r) for r in table["reference"]], dtype="Int64")
    return view


def recourse_view(s, query: pd.DataFrame, result: LensResult) -> pd.DataFrame:
    """Factors with a finite cost, cheapest first, with the reference achieving it and what changes."""
    factors = sorted((f for f in result.factors if np.isfinite(f.cost)), key=lambda f: f.cost)
    data = s.dataset
    here_values = query.iloc[0].to_dict()
    rows = []
    for f in factors:
        changes = []
        there_values = data.features.loc[f.reference].to_dict()
        for name in f.groups:
            here = format_value(data.group(name).value_of(here_values))
            there = format_value(data.group(name).value_of(there_values))
            changes.append(f"{name}: {here} → {there}" if here != there else f"{name}: {here} (same)")
        rows.append({"factor": ", ".join(f.groups), "size": len(f.groups), "cost": f.cost, "PS": f.ps,
                     "reference": int(f.reference), "this row → reference": "; ".join(changes)})
    return pd.DataFrame(rows, columns=["factor", "size", "cost", "PS", "reference", "this row → reference"])


def change(**values) -> None:
    """A next-step button's callback: new LENS parameters, and the form's widgets set to them."""
    shared.set_params(**values)
    widgets = {"tau": "lens_tau", "lens_budget_rows": "lens_budget", "lens_max_size": "lens_max_size"}
    st.session_state.update({widgets[k]: v for k, v in values.items() if k in widgets and v is not None})


def next_steps(s, query, p, context) -> None:
    """No factor reaches τ (the answer above says so once, with the best factor): why the search stopped where it
    did, and the next step as buttons — larger factors within the row budget, or τ lowered to the best PS."""
    wide = shared.lens_searches(s, p.lens)
    steps, why = [], ""
    if wide:
        found = shared.lens_search(s, s.key, query, p.lens)
        size = found.searched_size + 1
        if found.stopped == "budget" and found.rows_scored + found.next_rows <= limits().lens_rows:
            budget = found.rows_scored + found.next_rows
            steps.append((f"Search factors of {size} features (budget {budget:,} model rows)",
                          {"lens_budget_rows": int(budget)}))
        why = {"budget": f"factors of {size} features need {found.next_rows:,} more model rows than the "
                         f"**{LABELS['budget']}** allows",
               "memory": f"factors of {size} features would pass the server's memory bound (fewer "
                         f"**{LABELS['references']}** make room)",
               "complete": "every size was searched", "found": ""}[found.stopped]
    elif (size := int(context.sizes.max()) + 1) <= min(len(s.dataset.groups), largest_factor_size(
            len(s.dataset.groups), p.lens_references)):
        steps.append((f"Search factors of up to {size} features", {"lens_max_size": size}))
    best = float(np.nanmax(context.ps)) if len(context.masks) else 0.0
    if 0 < best < p.tau:
        lower = np.floor(best * 100) / 100
        steps.append((f"Lower τ to {lower:g} (the best PS found)", {"tau": float(lower)}))
    st.caption((f"The search stopped where it did because {why}." if why else "") +
               f" Next: one of the buttons, or under **Settings** change **{LABELS['tau']}**, "
               f"**{LABELS['references']}** or **{LABELS['direction']}**.")
    with st.container(horizontal=True):
        for i, (label, values) in enumerate(steps):
            st.button(label, key=f"lens_next_{i}", icon=":material/arrow_forward:",
                      on_click=guarded(change), kwargs=values)


def settings_form(s, p):
    """The LENS parameters (folded under the answer); the parameters in use after an Apply."""
    n_groups = len(s.dataset.groups)
    default_size = default_max_size(n_groups)
    fits = max(1, largest_factor_size(n_groups, p.lens_references))  # within the server's lens_samples limit
    with st.form("lens_form"):
        c1, c2, c3 = st.columns(3)
        direction = c1.radio(LABELS["direction"], list(DIRECTION_LABELS), format_func=DIRECTION_LABELS.get,
                             key="lens_direction", index=list(DIRECTION_LABELS).index(p.lens_direction),
                             help=DIRECTION_HELP)
        references = c1.number_input(LABELS["references"], min_value=1, max_value=5000, step=10,
                                     value=int(p.lens_references), key="lens_references",
                                     help="Training rows predicted opposite to this row, drawn with the seed. Every "
                                          "factor is applied to every reference: PS is a share of these rows.")
        tau = c2.slider(LABELS["tau"], 0.0, 1.0, float(p.tau), step=0.01, key="lens_tau",
                        help="A factor is sufficient when its probability of sufficiency reaches τ.")
        mode = c2.radio("Rule", list(MODE_LABELS), format_func=MODE_LABELS.get, key="lens_mode",
                        index=0 if p.alpha is None else 1, horizontal=True,
                        help="Exact: accept a factor when its sample PS ≥ τ. Test: accept it when the one-sided "
                             "binomial test rejects H0: PS < τ at level α (accounts for the number of references).")
        alpha = c2.number_input("α (test mode only)", min_value=0.001, max_value=0.5, step=0.01, format="%.3f",
                                value=float(p.alpha if p.alpha is not None else 0.05), key="lens_alpha")
        holm = c2.checkbox("Holm correction (test mode)", value=p.lens_correction == "holm", key="lens_holm",
                           help="On: the chance of listing any factor whose true PS is below τ is at most α for "
                                "this row. Off: each factor is tested at α on its own, so with many factors some "
                                "may pass by chance.")
        budget, max_size = p.lens_budget_rows, default_size
        if n_groups > ALL_SUBSETS_UP_TO:  # the layered search: sizes 0, 1, 2, … until one holds a sufficient factor
            budget = c3.number_input(LABELS["budget"], min_value=1000, max_value=limits().lens_rows, step=100_000,
                                     value=int(min(p.lens_budget_rows, limits().lens_rows)), key="lens_budget",
                                     help=f"{n_groups} features: LENS tries factors of 0, 1, 2, … features and stops "
                                          "at the first size holding a sufficient factor, or before a size whose "
                                          "rows would pass this many model rows scored. A count of work, not time: "
                                          "the same answer on any server.")
        else:
            max_size = c3.number_input(LABELS["max_size"], min_value=1, max_value=fits, step=1,
                                       value=int(min(fits, p.lens_max_size or default_size)), key="lens_max_size",
                                       help=f"Largest factor searched. Default: all subsets (here {default_size} of "
                                            f"{n_groups}). With {p.lens_references} references this server allows up "
                                            f"to {fits}.")
        seed = c3.number_input("Seed", min_value=0, step=1, value=int(p.seed), key="lens_seed",
                               help="Draws the references (shared by every method's randomness).")
        if st.form_submit_button("Apply", key="lens_submit", type="primary", icon=":material/play_arrow:"):
            p = shared.set_params(lens_direction=direction, lens_references=int(references), tau=float(tau),
                                  alpha=None if mode == "exact" else float(alpha),
                                  lens_max_size=None if int(max_size) == default_size else int(max_size),
                                  lens_correction="holm" if holm else "none", lens_budget_rows=int(budget),
                                  seed=int(seed))
    return p


def reach_text(s, query, p, context) -> str:
    """How much of the space of factors was searched: "searched N of M candidate factors (…)"."""
    if shared.lens_searches(s, p.lens):
        return shared.lens_search(s, s.key, query, p.lens).reach
    p_groups = len(s.dataset.groups)
    size = int(context.sizes.max())
    return (f"searched {len(context.masks):,} of {2 ** p_groups:,} candidate factors (every set of up to {size} "
            f"feature{'s' if size != 1 else ''}, each applied to {context.samples:,} references)")


st.title("LENS: sufficient factors")
shared.row_banner()
s = shared.setup()
p = shared.params()
wide = len(s.dataset.groups) > ALL_SUBSETS_UP_TO
answer = st.container(key="lens_answer")
with st.expander("Settings: context, τ, references, " + ("search budget" if wide else "largest factor")
                 + ", seed", icon=":material/tune:"):
    p = settings_form(s, p)

exact = p.alpha is None
query = shared.query()
if (plan := lens_runs.waiting(s, query, p.lens)) is not None:  # a long search starts only when asked (issue 52)
    with answer:
        lens_runs.offer(s, query, p.lens, plan)
    st.stop()
context = shared.lens_context(s, s.key, query, p.lens)
report = shared.lens_now()
factors = report.factors
outcome = (s.dataset.class_name(context.outcome) if s.dataset.task == "classification" else
           f"prediction {'at or above' if context.outcome == 1 else 'below'} {format_number(s.model.threshold)}")
reach = reach_text(s, query, p, context)

with answer:
    st.markdown(f"**{plain(lens_reading(s, report, context))}**")
    st.caption(f"LENS {plain(reach)}. A *factor* is a set of features; it is **sufficient** when applying it to the "
               f"reference rows gives the outcome in at least τ = {p.tau:g} of them (LENS, Watson et al., Defs 2-4 "
               "and Alg. 1). Change the context, τ or the references under **Settings**.")
    if not factors.factors:
        next_steps(s, query, p, context)

with st.container(key="lens_summary"):
    c = st.columns(4)
    c[0].metric("τ-minimal factors", len(factors.factors),
                help=f"Factors with PS ≥ τ none of whose subsets passes ({'exact' if exact else 'test'} mode)")
    c[1].metric("Cumulative PN", "—" if np.isnan(factors.cumulative_pn) else f"{factors.cumulative_pn:.3f}",
                help="Share of all samples reaching the outcome that are interventions on one of these factors or "
                     "a superset of one (probability of necessity of the factor set, Def. 3)")
    c[2].metric("References (samples per factor)", context.samples)
    c[3].metric("Factors searched", f"{len(context.masks):,}",
                help=f"Every set of at most {report.max_size} features, of the {2 ** len(s.dataset.groups):,} "
                     f"candidate factors; {reach}")
    if report.note and factors.factors:  # with none, the answer above says so once, with what to change
        st.info(report.note, icon=":material/search:")
    if not exact:
        st.caption(factors.error_rate)
        if factors.limit:
            st.warning(factors.limit, icon=":material/warning:")
    which = "this row’s prediction" if report.direction == "r2i" else "the opposite of this row’s prediction"
    st.caption(f"{report.direction.upper()}: sufficiency for the outcome **{plain(outcome)}** ({which})."
               f" Rule: {'PS ≥ τ' if exact else f'binomial test of PS > τ at α = {p.alpha:g}'}, τ = {p.tau:g}.")

st.subheader("τ-minimal sufficient factors")
with st.container(key="lens_factors"):
    if factors.factors:
        st.dataframe(factor_view(factors, exact), hide_index=True, column_config=FACTOR_COLUMNS,
                     key="lens_factors_table")
        n = len(factors.factors)
        st.caption(f"Cumulative PN of {'this factor' if n == 1 else f'these {n} factors'} and every factor "
                   f"containing {'it' if n == 1 else 'one of them'}: **{factors.cumulative_pn:.3f}**.")
        shared.download_buttons("lens_factors", factors.table(), factors, key="lens_factors")
    else:
        st.info("No τ-minimal factor to list: see the answer and what to change at the top of the page.",
                icon=":material/info:")

st.subheader("Cumulative PN against τ")
with st.container(key="lens_curve"):
    figure = pn_curve_figure(report.pn_curve, direction=report.direction)
    figure.add_vline(x=p.tau, line_dash="dot", line_color="grey", annotation_text=f"τ = {p.tau:g}")
    st.plotly_chart(figure, key="lens_curve_chart", alt=pn_curve_text(report.pn_curve, p.tau))
    st.caption(plain(pn_curve_text(report.pn_curve, p.tau)))
    st.caption("How much of the outcome the τ-minimal factors account for as τ rises (LENS App. B): "
               "strict thresholds keep fewer, more reliable factors.")
    shared.download_buttons("lens_pn_curve", report.pn_curve, report, key="lens_pn_curve")

st.subheader("PS by cardinality: LENS vs top-k SHAP")
with st.container(key="lens_ps_by_size"):
    shap = shared.baselines_now().shap
    curve = shap_curve(context, shap)
    st.plotly_chart(ps_by_size_figure(curve), key="lens_ps_by_size_chart", alt=ps_by_size_text(curve))
    st.caption(plain(ps_by_size_text(curve)))
    st.caption("For each k: the best PS of any factor of k features (LENS) beside the PS of the k features SHAP "
               "ranks highest (LENS §5.1, Fig. 2). LENS is at least as high by construction; the gap shows what "
               "ranking features by attribution misses.")
    table = curve.assign(lens_factor=curve["lens_factor"].map(", ".join),
                         attribution_factor=curve["attribution_factor"].map(", ".join))
    with st.expander("Table"):
        st.dataframe(table, hide_index=True, key="lens_ps_by_size_table")
    shared.download_buttons("lens_ps_by_size", table, AttributionCurve(report.direction, shap.method, curve),
                            key="lens_ps_by_size")

st.subheader("Recourse: factors by cost")
with st.container(key="lens_recourse"):
    recourse = recourse_view(s, query, report.recourse)
    if len(recourse):
        st.caption("τ-minimal factors in cost order (a factor is skipped when a subset of it is at most as "
                   "expensive), cheapest first, with the reference row that achieves the cost"
                   + (". In I2R these are changes to this row that reach the opposite outcome."
                      if report.direction == "i2r" else
                      ". In R2I the cost is how far the reference moves towards this row; switch to I2R for "
                      "changes to this row."))
        st.dataframe(recourse, hide_index=True, key="lens_recourse_table",
                     column_config={"cost": FACTOR_COLUMNS["cost"], "PS": FACTOR_COLUMNS["PS"]})
        shared.download_buttons("lens_recourse", recourse, report.recourse, key="lens_recourse")
    elif report.recourse.factors:
        st.info("No sufficient factor reaches the outcome from any reference at a finite cost.",
                icon=":material/info:")
    else:
        st.info("No τ-minimal factor, so no recourse to list: see the top of the page.", icon=":material/info:")

SCM_CHOICES = {"classifier": ("Categorical features", {"logistic": "logistic regression (smooth in the parents)",
                                                         "forest": "random forest (the paper's App. C.1)"}),
               "noise": ("Numeric features' noise", {"gaussian": "a fresh Gaussian draw (App. C.1)",
                                                     "abduction": "the row's own (counterfactual)"}),
               "propagate": ("Effects reach", {"descendants": "the descendants of a changed feature (App. C.1)",
                                               "later": "every later feature (the authors' code)"})}


def causal_form(names: list[str]) -> None:
    """The graph (a preset for German credit, editable) and how the SCM is fitted and sampled."""
    graphs = {label: make() for label, make in GERMAN_GRAPHS.items()}
    presets = {label: g for label, g in graphs.items() if {n for e in g.edges for n in e} <= set(names)}
    preset = st.radio("Start from", [*presets, "an empty graph"], horizontal=True, key="lens_graph_preset",
                      help="German credit: the SCM the LENS authors fitted for their Table 4, or the paper's "
                           "Fig. 5 read layer by layer (each node caused by every node of the layer above).")
    default = presets[preset].text() if preset in presets else ""
    with st.form("lens_causal_form"):
        text = st.text_area("Causal graph: one `parent -> child` per line, with the feature names", height=160,
                            value=default, key=f"lens_graph_text_{preset}",
                            help="Edit freely: the graph must be acyclic, each node one feature.")
        columns = st.columns(len(SCM_CHOICES))
        chosen = {field: column.selectbox(label, list(options), format_func=options.get, key=f"lens_scm_{field}")
                  for column, (field, (label, options)) in zip(columns, SCM_CHOICES.items())}
        if st.form_submit_button("Compare with the causal context", key="lens_causal_submit"):
            st.session_state["lens_graph"] = (text, ScmSettings(**chosen))


def causation_expander(s, query, base: LensParameters, chosen, table: pd.DataFrame) -> None:
    """Pearl's PN, PS, PNS of one factor under the same causal graph, with their Tian–Pearl bounds."""
    with st.expander("Pearl's probabilities of causation (PN, PS, PNS) for one factor"):
        names = [f for f in table["factor"] if f != "∅"] or list(s.dataset.group_names)
        factor = st.selectbox("Factor", names, key="lens_causation_factor")
        result = shared.causation(s, s.key, query, base, *chosen, tuple(factor.split(", ")))
        if s.dataset.task == "classification":
            outcome, other = s.dataset.class_name(result.outcome), s.dataset.class_name(1 - result.outcome)
        else:
            outcome, other = "this row's side of the threshold", "the other side"
        st.markdown(plain(causation_text(result, outcome, other)))
        st.caption(f"Over {result.units} seeded training rows, x: the factor at this row's values, x′: at another "
                   "row's, y: this row's prediction. The SCM column is counterfactual simulation "
                   f"({SCM_CHOICES['noise'][1][result.noise]} as numeric noise); the bounds are Tian & Pearl's "
                   "from the observed P(x, y) and the SCM's interventional P(yₓ), P(yₓ′) alone. LENS over the "
                   f"same rows: R2I PS(c, y) = P(yₓ) = {result.lens_sufficiency:.3f}, I2R PS(1 − c, y′) of this "
                   f"row = {result.lens_necessity:.3f} (LENS Prop. 4: these equal PS and PN when R2I's rows are "
                   "those at (x′, y′) and I2R's inputs those at (x, y)).")
        st.dataframe(result.table(), hide_index=True, key="lens_causation_table")
        shared.download_buttons("lens_causation", result.table(), result=result, key="lens_causation")


st.subheader("Causal context: changes that propagate")
with st.container(key="lens_causal"):
    st.caption("Above, a factor changes its features and nothing else. With a causal graph, changing a feature also "
               "changes what it causes: effects flow down the arrows through equations fitted on the training rows "
               "(LENS §5 and App. C). Below: which τ-minimal factors differ once effects propagate.")
    names = list(s.dataset.group_names)
    causal_form(names)
    if (chosen := st.session_state.get("lens_graph")) is not None:
        try:
            graph, settings = CausalGraph.parse(chosen[0]), chosen[1]
            depth = graph.layers(names)
            if not graph.edges:
                raise IntakeError("The graph has no edge, so nothing propagates and the causal answer is the one "
                                  "above; add at least one line 'parent -> child'.")
            base = LensParameters(lens_references=p.lens_references, lens_max_size=p.lens_max_size, seed=p.seed)
            with stops.stoppable("the causal context", stops.run_key("lens_causal", s.key, query, base, *chosen),
                                 forget=("lens_graph",)):
                causal = shared.lens_causal(s, s.key, query, base, *chosen)[p.lens_direction]
                independent = shared.lens(s, s.key, query, base)[p.lens_direction]
            table = differences(independent, causal, p.tau, alpha=p.alpha, correction=p.lens_correction)
        except IntakeError as exc:
            st.error(plain(exc), icon=":material/error:")
        else:
            causal_factors = table.loc[table["minimal in"] != "independent", "factor"]
            causal_groups = {g for f in causal_factors for g in f.split(", ")}
            st.plotly_chart(dag_figure(graph.edges, depth, highlight=sorted(causal_groups)), key="lens_dag_chart",
                            alt=dag_text(graph.edges, sorted(causal_groups)))
            st.caption(plain(dag_text(graph.edges, sorted(causal_groups))))
            changed = int((table["minimal in"] != "both").sum())
            st.caption(f"{changed} of {len(table)} τ-minimal factors (factors of up to {int(causal.sizes.max())} "
                       f"features, {p.lens_direction.upper()}, τ = {p.tau:g}) differ between the independent and the "
                       f"causal context; features of causal factors are orange in the graph. Equations: "
                       f"{SCM_CHOICES['classifier'][1][settings.classifier]} for categorical features, "
                       f"{SCM_CHOICES['noise'][1][settings.noise]} as numeric noise; effects reach "
                       f"{SCM_CHOICES['propagate'][1][settings.propagate]}.")
            st.dataframe(table, hide_index=True, key="lens_causal_table",
                         column_config={"PS independent": FACTOR_COLUMNS["PS"], "PS causal": FACTOR_COLUMNS["PS"]})
            shared.download_buttons("lens_causal", table, key="lens_causal")
            causation_expander(s, query, base, chosen, table)
