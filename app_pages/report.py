"""Report: choose the sections, preview what the PDF holds, and download it (built on click).

The report uses this session's cached results (``ui/shared.py``), so its numbers are the ones the other
pages show; :mod:`explain_core.report` assembles and writes it (no Streamlit there).
"""
from __future__ import annotations

import streamlit as st

from explain_core.inspection.filters import fitting
from explain_core.registry import method
from explain_core.report import (RowResults, build_row_report, plotly_export_available, report_sections, section_title,
                                 write_pdf)
from explain_core.report.cohorts import REPORT_KEY
from explain_core.report.dependence import report_dependence
from explain_core.views.style import chart_name
from explain_core.vocabulary import plain
from ui import lens_runs, model_dependence, references, second_model, shared

SECTIONS_PER_ROW = 4  # seven checkboxes in one row cut their labels at 1280×800 ("Counte…", "Depen…")
OWN_HELP = {  # the report's own sections; a method's help is its plug's (explain_core.methods)
    "dependence": "Partial dependence and ICE of the row's leading feature (the first of its SEV explanation, else "
                  "the largest mean |SHAP|), this row's line highlighted.",
    "appendix": "Definitions in two lines each and the papers they come from.",
}


def section_help(name: str) -> str:
    return OWN_HELP.get(name) or method(name).section.help


def figure_tab(name: str) -> str:
    return "Partial dependence" if name == "dependence" else method(name).label


@st.cache_data(show_spinner=False, max_entries=16)
def report_pdp(_setup, key: str, query, row: int, feature: str | None, seed: int):
    return report_dependence(_setup, query, row, feature, seed)


RENDERER_LABELS = {"auto": "Automatic", "plotly": "Plotly static export (Chromium)",
                   "matplotlib": "Matplotlib (no browser needed)"}


def kept_cohorts() -> tuple:
    """The session's cohorts on this data: the cohort section is in the report only when there are some."""
    return fitting(st.session_state.get("cohorts", ()), shared.setup().dataset)


st.title("Report")
shared.row_banner()
s, p = shared.setup(), shared.params()
st.caption("An A4 PDF of this decision for a reader who never opened the app: title and date, the data, the model "
           "and its test metrics, the row, the reference and every parameter, then each method with the numbers and "
           "figures these pages show, and the definitions.")

st.subheader("Sections")
columns = st.columns(SECTIONS_PER_ROW)
chosen = [name for i, name in enumerate(report_sections())
          if columns[i % SECTIONS_PER_ROW].checkbox(section_title(name), value=True, key=f"report_section_{name}",
                                                    help=section_help(name))]

waiting = lens_runs.waiting(s, shared.query(), p.lens) if {"lens", "agreement"} & set(chosen) else None
if waiting is not None:  # a long LENS search starts only when asked (issue 52): its sections wait for it
    with st.container(border=True, key="report_lens_waits"):
        lens_runs.offer(s, shared.query(), p.lens, waiting, where="report")
        st.caption("Until it has run, the report leaves out the LENS and Agreement sections.")
    chosen = [name for name in chosen if name not in ("lens", "agreement")]
with st.spinner("Computing the explanations the report needs…"):
    query, row = shared.query(), shared.row()
    cohort_key, cohort_part = st.session_state.get(REPORT_KEY, (None, None))  # the Cohorts & fairness page's
    second = second_model.second_model(s)
    compared = None if st.session_state.get("whatif") else row  # the comparison explains dataset rows only
    supply = {  # this session's cached results (ui/shared.py): the report reads only what its sections show
        "sev": lambda: shared.sev_now(s), "lens": lambda: shared.lens_now(s), "linear": lambda: shared.linear_now(s),
        "baselines": lambda: shared.baselines_now(s), "cube": lambda: shared.cube(s, s.key, query),
        "counterfactuals": lambda: references.counterfactuals(s, s.key, query, p.references, p.counterfactuals,
                                                              s.restricted),
        "dependence": lambda feature: report_pdp(s, s.key, query, row, feature, p.seed),
        "interactions": lambda: model_dependence.pair_strengths(s, s.key, p.seed),  # the model page's
        "cohorts": cohort_part if cohort_key == s.key and kept_cohorts() else None,
        "models": lambda: None if second is None else second_model.comparison(s, s.key, second, second.key,
                                                                              compared, p)}
    report = build_row_report(RowResults(s, query, p, position=row, supply=supply), chosen,
                              edited=bool(st.session_state.get("whatif")))

left, right = st.columns([2, 3], vertical_alignment="bottom")
options = ["auto", "plotly", "matplotlib"] if plotly_export_available() else ["matplotlib"]
renderer = right.selectbox("Figures drawn with", options, format_func=RENDERER_LABELS.get, key="report_renderer",
                           help="Both draw the same data; without a browser on the server the figures are re-plotted "
                                "with matplotlib. The report's text is the same either way.")
left.download_button(
    "Build and download the PDF", data=lambda r=report, how=renderer: write_pdf(r, image_renderer=how),
    file_name=report.file_name, mime="application/pdf", key="report_download", type="primary",
    icon=":material/picture_as_pdf:", on_click="ignore",
    help="The PDF is built when you click (a few seconds); the button shows a spinner meanwhile.")

st.subheader("Preview")
h = report.headline
values = [("SEV⁻", h.sev_minus), ("SEV⁺", h.sev_plus)] if report.sev is not None else []
if report.sev is not None and report.sev.restricted is not None:
    values.append(("SEV®", h.sev_restricted))
facts = [("Prediction", f"{h.prediction} ({s.score_text(report.score, digits=3)})")]
if report.lens is not None:
    facts.append(("Smallest LENS factor", h.lens_smallest_factor + (f" (PS = {h.lens_ps})" if h.lens_ps else "")))
if report.linear is not None:
    facts.append((f"Linear support ({h.linear_method})", ", ".join(h.linear_support) or "bias only"))
with st.container(key="report_headline"):
    if values:
        for column, (label, value) in zip(st.columns(max(4, len(values))), values):
            column.metric(label, value)
    st.markdown("\n".join(f"- **{plain(label)}**: {plain(value)}" for label, value in facts))
    if report.reading:
        st.markdown(f"**{plain(report.reading)}**")

with st.container(key="report_contents", border=True):
    st.markdown("**Contents of the PDF**")
    for title, items in report.contents():
        st.markdown(f"- **{plain(title)}**: {plain('; '.join(items))}")

figures = [name for name in report.sections if name in report.figures]
if figures:
    st.caption("The report's figures (the same data as the pages' charts):")
    for tab, name in zip(st.tabs([figure_tab(n) for n in figures]), figures):
        with tab:
            st.plotly_chart(report.figures[name], width="stretch", key=f"report_figure_{name}",
                            alt=chart_name(report.figures[name]))
