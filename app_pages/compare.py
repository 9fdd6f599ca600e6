"""Compare: one row, every method in one view, and which features each method names."""
import pandas as pd
import streamlit as st

from explain_core.analysis import agreement
from explain_core.sev.readings import explanation_lines, summary_sentence
from explain_core.views.compare import agreement_figure, attribution_figure, waterfall_figure
from explain_core.views.summaries import agreement_text, attribution_text, waterfall_text
from explain_core.vocabulary import count_noun, plain
from ui import lens_runs, references, second_model, shared, stops

CARD_LINES = 3  # SEV explanations listed per value in the card

def method_outcomes(ex, lens, lin) -> str:
    """What each method found, in one line (the banner is true per method)."""
    sev = f"SEV⁻ = {ex.minus.shown}, SEV⁺ = {ex.plus.shown}"
    factors = lens.factors.factors if lens is not None else ()
    lens_found = ("LENS: not run yet (a long search, on its button)" if lens is None else
                  f"LENS: a factor of {min(len(f.groups) for f in factors)}" if factors else
                  "LENS: no factor reaches the threshold τ")
    support = lin.support_groups(lin.weights().columns[0]) if len(lin.weights().columns) else ()
    linear = f"linear: {count_noun(len(support), 'feature')}"
    return f"{sev} · {lens_found} · {linear} · LIME and SHAP: attributions computed"


st.title("Compare every method on this row")
shared.row_banner()
s, p = shared.setup(), shared.params()

with st.status("Explaining the row with every method…", expanded=False) as status:
    status.update(label="SEV…")
    ex = shared.sev_now(s)
    status.update(label="LIME and SHAP…")
    base = shared.baselines_now(s)
    status.update(label="LENS…")
    waiting = lens_runs.waiting(s, shared.query(), p.lens)  # a long search starts only when asked (issue 52)
    try:
        lens = shared.lens_now(s) if waiting is None else None
    except stops.RunStopped:  # the analyst stopped it (stopped_notice below says so): not an error
        status.update(label="Stopped at LENS", state="complete")
        raise
    status.update(label="Linear explanations…")
    lin = shared.linear_now(s)
    status.update(label=plain(method_outcomes(ex, lens, lin)), state="complete")

top = st.slider("LIME / SHAP: features counted as named (top by |attribution|)", 1, len(s.dataset.groups),
                min(3, len(s.dataset.groups)), key="cmp_top")
agree = agreement(s.dataset.group_names, sev=ex, lens=lens.factors if lens is not None else None, linear=lin,
                  baselines=base, top=top)
st.success(plain(agree.verdict()), icon=":material/how_to_vote:")


def listing(groups) -> str:
    return plain(", ".join(groups)) if groups else "—"


c1, c2, c3 = st.columns(3)


def sev_card(which: str) -> None:
    """One SEV value with its first explanations in words (moved features only), the rest counted."""
    result = ex.result(which)
    lines = explanation_lines(ex, which, s.model.threshold)
    if result.status == "limit" and result.engine == "bfs":  # a bracket: say it, and what narrows it
        st.markdown(f"{result.label} = {result.shown}: " + plain(summary_sentence(
            result, lines, control="the 'Search budget (model rows)' control on the SEV page")))
    else:
        st.markdown(f"{result.label} = {result.shown}" + ("" if lines else f": {plain(result.message)}"))
    if lines:
        st.markdown("\n".join(f"- {plain(line.changes)}" for line in lines[:CARD_LINES]))
    if len(lines) > CARD_LINES:
        st.caption(f"… and {len(lines) - CARD_LINES} more minimal explanations (all on the SEV page).")


with c1.container(border=True, key="cmp_sev"):
    st.markdown("**SEV** — minimal explanations (features moved: row → reference for SEV⁻/SEV®, "
                "reference → row for SEV⁺)")
    for which in ex.results():
        sev_card(which)
with c2.container(border=True, key="cmp_lens"):
    st.markdown(f"**LENS** ({p.lens_direction.upper()}, τ = {p.tau:g}) — τ-minimal factors")
    factors = lens.factors.factors if lens is not None else ()
    if lens is None:
        lens_runs.offer(s, shared.query(), p.lens, waiting, where="cmp")
    elif factors:
        smallest = min(len(f.groups) for f in factors)
        for f in [f for f in factors if len(f.groups) == smallest][:8]:
            st.markdown(f"{plain('{' + ', '.join(f.groups) + '}')} · PS = {f.ps:.2f}")
        st.caption(f"{count_noun(len(factors), 'τ-minimal factor')} in all; cumulative PN "
                   f"{lens.factors.cumulative_pn:.2f}.")
    else:
        st.markdown(f"No factor reaches PS ≥ {p.tau:g}.")
with c3.container(border=True, key="cmp_linear"):
    st.markdown(f"**Linear** (k = {p.k}, σ = {p.sigma:g}) — support")
    for method in ("iht", "exact"):
        if method in lin.weights().columns:
            st.markdown(f"{method.upper() if method == 'iht' else 'Exact'}: {listing(lin.support_groups(method))}")
    st.markdown(f"LIME top {top}: {listing(agree.named['LIME'])}")
    st.markdown(f"SHAP top {top}: {listing(agree.named['SHAP'])}")

left, right = st.columns([3, 2])
with left, st.container(key="cmp_agreement"):
    shared.chart(agreement_figure(agree.matrix()), agreement_text(agree.matrix()), "cmp_agreement_chart")
    st.caption(" · ".join(f"**{plain(m)}**: {plain(rule)}" for m, rule in agree.rules.items()))
with right:
    attributions = {"LIME": base.lime.values, "SHAP": base.shap.values}
    shared.chart(attribution_figure(base.lime.groups, attributions,
                                    units={"LIME": base.lime.output, "SHAP": base.shap.output}),
                 attribution_text(base.lime.groups, attributions), "cmp_attribution_chart")
    st.caption(plain(f"LIME explains the {base.lime.output}; SHAP the {base.shap.output} ({base.shap.explainer}): "
                     "different units, so each has its own axis."))

with st.container(key="cmp_waterfall"):
    shared.chart(waterfall_figure(base.shap.groups, base.shap.values, base.shap.base_value,
                                  output=base.shap.output),
                 waterfall_text(base.shap.groups, base.shap.values, base.shap.base_value), "cmp_waterfall_chart")
    st.caption(plain(f"How SHAP's values add up: from the model's average output over SHAP's background data to "
                     f"this row's output, the features with the largest |SHAP value| first ({base.shap.output})."))

table = pd.concat([agree.matrix(), agree.counts()], axis=1)
table.index.name = "feature"
st.dataframe(table, width="stretch", key="cmp_table")
shared.download_buttons(f"agreement_row{shared.row()}", table, agree, key="cmp")

references.counterfactual_section(s)  # DiCE beside SEV's explanations, with the same metrics
second_model.second_model_row(s)  # the row's SEV and SHAP under the second model too, when there is one
