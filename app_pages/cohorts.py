"""Cohorts & fairness: cohorts defined by filters (kept in the session and in saved analyses) compared side by side on
the test rows, group metrics across the protected features and the cohorts (fairlearn), and the error tree whose
leaves become cohorts. The computation is :mod:`explain_core.inspection`'s; the figures
:mod:`explain_core.views.cohorts`'s."""
from dataclasses import replace

import streamlit as st

from explain_core.inspection.cohorts import compare_cohorts
from explain_core.inspection.filters import (LEVEL_OPS, MISCLASSIFIED, MODEL_FILTERS, NUMERIC_OPS, OP_WORDS, Cohort,
                                             Filter, error_words, fitting, levels_of, parse_filter)
from explain_core.inspection.errors import error_tree, leaf_cohort
from explain_core.inspection.fairness import BINS, SEV_BUDGET, fairness_report
from explain_core.report.cohorts import REPORT_KEY, CohortsPart
from explain_core.views.cohorts import (comparison_figure, comparison_text, error_tree_figure, error_tree_text,
                                        fairness_figure, fairness_text, feature_figure, sev_box_figure, sev_text)
from explain_core.vocabulary import plain
from ui import boundary
from ui import callbacks
from ui import shared
from ui import stops

EVERYONE = Cohort("all test rows")
MAX_LEAF_BUTTONS = 8
OP_KEYS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "=": "eq", "!=": "ne", "between": "between", "in": "in",
           "not in": "notin"}  # a comparison in a widget key (and so in the element's CSS class)


@st.cache_data(show_spinner=False, max_entries=8)
def comparison(_setup, key: str, cohorts: tuple, p, budget: int, seed: int, background: int | None,
               restricted: tuple):
    with shared.progress_bar(f"Comparing {len(cohorts)} cohorts (SEV and SHAP of at most {budget} rows each)…") as bar:
        return compare_cohorts(_setup, cohorts, p, budget=budget, seed=seed, shap_background=background, progress=bar)


@st.cache_data(show_spinner=False, max_entries=8)
def fairness(_setup, key: str, protected: tuple, cohorts: tuple, p, budget: int, seed: int):
    with shared.progress_bar(f"Group metrics, and SEV of {budget} test rows…") as bar:
        return fairness_report(_setup, p, protected, cohorts, sev_budget=budget, seed=seed, progress=bar)


@st.cache_data(show_spinner="Fitting the error tree…", max_entries=8)
def errors(_setup, key: str, seed: int):
    return error_tree(_setup, seed=seed)


def kept() -> tuple[Cohort, ...]:
    """The session's cohorts that fit the current data (others stay kept for the data they were made on)."""
    return fitting(st.session_state.get("cohorts", ()), shared.setup().dataset)


def keep(cohort: Cohort, setup_key: str) -> None:
    """Keep ``cohort`` (a cohort of the same name is replaced), if the session still has the setup it was made on."""
    if callbacks.drawn_for(setup_key):
        cohort.check(st.session_state["setup"].dataset)
        others = tuple(c for c in st.session_state.get("cohorts", ()) if c.name != cohort.name)
        st.session_state["cohorts"] = others + (cohort,)


def forget(name: str) -> None:
    st.session_state["cohorts"] = tuple(c for c in st.session_state.get("cohorts", ()) if c.name != name)


def value_key(feature: str, op: str, part: str = "value") -> str:
    """The value widget's key: one per feature and comparison, so a widget never inherits another kind's value."""
    return f"ch_{part}_{feature}_{OP_KEYS[op]}"


def add_filter(setup_key: str, feature: str, op: str, drawn) -> None:
    """The builder's Add: the filter its widgets describe joins the draft (checked against the data). Their state, or
    the value ``drawn`` when it is gone (a page link's click folded into the same rerun: see ``app_pages/home.py``)."""
    if not callbacks.drawn_for(setup_key):
        return
    if op == "between":
        value = (st.session_state.get(value_key(feature, op, "low"), drawn[0]),
                 st.session_state.get(value_key(feature, op, "high"), drawn[1]))
    else:
        value = st.session_state.get(value_key(feature, op), drawn)
    found = Filter(feature, op, value).check(st.session_state["setup"].dataset)
    st.session_state["ch_draft"] = tuple(st.session_state.get("ch_draft", ())) + (found,)


def add_text_filter(setup_key: str) -> None:
    """The typed filter (Enter): parsed and checked, it joins the draft, and the box empties."""
    text = st.session_state.get("ch_text", "").strip()
    if text and callbacks.drawn_for(setup_key):
        found = parse_filter(text, st.session_state["setup"].dataset)
        st.session_state["ch_draft"] = tuple(st.session_state.get("ch_draft", ())) + (found,)
        st.session_state["ch_text"] = ""


def keep_draft(setup_key: str) -> None:
    name = st.session_state.get("ch_name", "").strip() or f"cohort {len(st.session_state.get('cohorts', ())) + 1}"
    keep(Cohort(name, tuple(st.session_state.get("ch_draft", ()))), setup_key)
    st.session_state.update(ch_draft=(), ch_name="")


def drop_filter(position: int, drawn: Filter) -> None:
    """A draft filter's ×: removed if the draft still has it where it was drawn (a quick second click does nothing)."""
    draft = tuple(st.session_state.get("ch_draft", ()))
    if position < len(draft) and draft[position] == drawn:
        st.session_state["ch_draft"] = draft[:position] + draft[position + 1:]


def clear_draft() -> None:
    st.session_state["ch_draft"] = ()


def value_widgets(s, feature: str, op: str):
    """The value of the filter being built, drawn and returned: a number (two for between), a level (several for
    in), or yes / a class."""
    key = value_key(feature, op)
    if feature == MISCLASSIFIED:
        return st.selectbox("Value", [1, 0], key=key, format_func=lambda v: "yes" if v else "no")
    if feature in MODEL_FILTERS:
        return st.selectbox("Class", [1, 0], key=key, format_func=lambda v: s.class_names[v])
    if s.dataset.group(feature).kind == "numeric":
        column = s.dataset.features[s.dataset.group(feature).columns[0]]
        if op == "between":
            return (st.number_input("From", value=float(column.min()), key=value_key(feature, op, "low")),
                    st.number_input("To", value=float(column.max()), key=value_key(feature, op, "high")))
        return st.number_input("Value", value=float(column.median()), key=key)
    if op in ("in", "not in"):
        return st.multiselect("Values", levels_of(s.dataset, feature), key=key)
    return st.selectbox("Value", levels_of(s.dataset, feature), key=key)


def builder(s) -> None:
    """Filters one by one (feature, comparison, value), then a name and Keep."""
    st.subheader("Define a cohort")
    options = [*MODEL_FILTERS, *s.dataset.group_names]
    with st.container(key="ch_builder", horizontal=True, vertical_alignment="bottom"):
        feature = st.selectbox("Feature", options, key="ch_feature", format_func=lambda f: MODEL_FILTERS.get(f, f))
        if feature in MODEL_FILTERS:
            op = "="
        else:
            ops = NUMERIC_OPS if s.dataset.group(feature).kind == "numeric" else LEVEL_OPS
            op = st.selectbox("Comparison", ops, key="ch_op", format_func=lambda o: OP_WORDS.get(o, o))
        drawn = value_widgets(s, feature, op)
        st.button("Add filter", key="ch_add", icon=":material/add:", on_click=boundary.guarded(add_filter),
                  args=(s.key, feature, op, drawn))
    st.text_input("Or type a filter and press Enter", key="ch_text", on_change=boundary.guarded(add_text_filter),
                  args=(s.key,), placeholder="e.g. age < 25 · age between 18 and 25 · sex = Female · misclassified")
    draft = st.session_state.get("ch_draft", ())
    if draft and not fitting([Cohort("draft", draft)], s.dataset):  # drafted on other data
        st.session_state["ch_draft"] = draft = ()
    if not draft:
        st.markdown("Filters: none yet (every test row)")
    with st.container(key="ch_draft_filters", horizontal=True, vertical_alignment="center"):
        for i, f in enumerate(draft):
            st.button(f.text(s), key=f"ch_drop_{i}", icon=":material/close:", on_click=boundary.guarded(drop_filter),
                      args=(i, f), help="Remove this filter")
    with st.container(horizontal=True, vertical_alignment="bottom"):
        st.text_input("Name", key="ch_name", placeholder="e.g. young and misclassified", max_chars=60)
        st.button("Keep this cohort", key="ch_keep", icon=":material/bookmark_add:",
                  on_click=boundary.guarded(keep_draft), args=(s.key,))
        st.button("Clear filters", key="ch_clear", on_click=boundary.guarded(clear_draft))


def kept_list(s) -> None:
    for i, cohort in enumerate(kept()):
        with st.container(horizontal=True, vertical_alignment="center", key=f"ch_kept_{i}"):
            st.markdown(f"**{plain(cohort.name)}**: {plain(cohort.text(s))} — {len(cohort.rows(s)):,} test rows")
            st.button("Remove", key=f"ch_forget_{i}", icon=":material/delete:",
                      on_click=boundary.guarded(forget), args=(cohort.name,))


def for_report(s, **results) -> None:
    """Keep the latest results for the Report page's cohort section (:data:`REPORT_KEY`: the setup's key and a
    :class:`~explain_core.report.cohorts.CohortsPart`)."""
    key, part = st.session_state.get(REPORT_KEY, (None, CohortsPart()))
    st.session_state[REPORT_KEY] = (s.key, replace(part if key == s.key else CohortsPart(), **results))


def comparison_section(s, p, cohorts) -> None:
    st.subheader("Cohorts side by side")
    budget = st.number_input("Rows per cohort for SEV and SHAP", 10, 2000, 100, step=10, key="ch_budget",
                             help="A seeded sample of at most this many test rows of each cohort (a budget in rows).")
    st.caption(f"Accuracy and AUC on every test row of each cohort; SEV and mean |SHAP| on at most {budget} of its "
               f"test rows drawn with seed {p.seed}. Wrong means {error_words(s)}.")
    with_shap = st.checkbox("with mean |SHAP|", value=True, key="ch_shap",
                            help="SHAP of each sample: fast for tree models, minutes for models only SHAP's "
                                 "permutation explainer reads.")
    if not st.toggle("Compare the cohorts", key="ch_compare", help="SEV and SHAP of each cohort's sample: seconds."):
        return
    background = p.shap_background if with_shap else None
    args = (EVERYONE, *cohorts), p.sev, int(budget), p.seed, background, s.restricted
    with stops.stoppable("the comparison of the cohorts", stops.run_key("cohorts", s.key, *args),
                         turn_off={"ch_compare": False}):
        result = comparison(s, s.key, *args)
    for_report(s, comparison=result)
    st.dataframe(result.table(), hide_index=True, key="ch_table")
    shared.download_buttons("cohort_comparison", result.table(), result, key="ch_comparison")
    with st.container(key="ch_comparison_charts"):
        shared.chart(comparison_figure(result), comparison_text(result), "ch_metrics")
        shared.chart(sev_box_figure(result), sev_text(result), "ch_sev")
    left, right = st.columns(2)
    if with_shap:
        with left:
            shared.chart(feature_figure(result, "shap"), "Mean |SHAP| of each feature over each cohort's sample.",
                         "ch_shap_chart")
    with right:
        shared.chart(feature_figure(result, "prevalence"),
                     "How often each feature is in a row's minimal SEV explanation.", "ch_prevalence")


def fairness_section(s, p, cohorts) -> None:
    st.subheader("Fairness across groups")
    default = list(s.restricted or s.dataset.restricted_suggestion)
    protected = st.multiselect("Protected features", s.dataset.group_names, default=default, key=f"ch_prot_{s.key}",
                               help="By default the setup's restricted features, else the data card's suggestion.")
    st.caption(f"fairlearn's MetricFrame on the test rows, per group of each protected feature (a numeric one in "
               f"{BINS} quantile bins) and of each cohort against the rest; the share of rows whose unrestricted SEV⁻ "
               f"explanation uses a protected feature on at most {SEV_BUDGET} test rows (seed {p.seed}).")
    if not st.toggle("Compute the group metrics", key="ch_fair"):
        return
    args = tuple(protected), tuple(cohorts), p.sev, SEV_BUDGET, p.seed
    with stops.stoppable("the group metrics", stops.run_key("fairness", s.key, *args), turn_off={"ch_fair": False}):
        report = fairness(s, s.key, *args)
    for_report(s, fairness=report)
    if not report.splits:
        st.caption(plain(fairness_text(report)))
    else:
        split = st.selectbox("Groups of", [x.split for x in report.splits], key="ch_split")
        shared.chart(fairness_figure(report, split), fairness_text(report), "ch_fairness")
        st.dataframe(report.differences(), hide_index=True, key="ch_differences")
    shared.download_buttons("fairness", report.table(), report, key="ch_fairness_dl")


def errors_section(s, p) -> None:
    st.subheader("Where is the model wrong?")
    tree = errors(s, s.key, p.seed)
    for_report(s, errors=tree)
    st.caption(f"A decision tree of depth {tree.max_depth} (leaves of at least {tree.min_samples_leaf} rows, seed "
               f"{tree.seed}) fitted on the test rows' features to predict whether the model is wrong ("
               f"{plain(tree.error)}), as Microsoft's Error Analysis does.")
    with st.container(key="ch_tree_chart"):
        shared.chart(error_tree_figure(tree), error_tree_text(tree), "ch_tree")
    st.dataframe(tree.table(), hide_index=True, key="ch_leaves")
    shared.download_buttons("error_tree", tree.table(), tree, key="ch_tree_dl")
    with st.container(key="ch_leaf_buttons", horizontal=True):
        for leaf in tree.leaves[:MAX_LEAF_BUTTONS]:
            st.button(f"Cohort from leaf {leaf.node}", key=f"ch_leaf_{leaf.node}", icon=":material/call_split:",
                      on_click=boundary.guarded(keep), args=(leaf_cohort(tree, leaf.node), s.key),
                      help=f"{leaf.rule}: {leaf.size} rows, {leaf.error_rate:.0%} wrong")


def first_cohorts(s) -> tuple[Cohort, ...]:
    """Before any cohort is kept: the rows the model gets wrong beside those it gets right (a first comparison)."""
    wrong, right = (Filter(MISCLASSIFIED, "=", value) for value in (1, 0))
    st.info(f"No cohort kept yet, so the comparison starts with the {plain(wrong.text(s))} test rows beside the "
            f"{plain(right.text(s))} ones: turn on **Compare the cohorts** below. Build your own cohorts with the "
            "form above.", icon=":material/lightbulb:")
    return Cohort(wrong.text(s), (wrong,)), Cohort(right.text(s), (right,))


st.title("Cohorts & fairness")
s, p = shared.setup(), shared.params()
builder(s)
kept_list(s)
cohorts = kept()
comparison_section(s, p, cohorts or first_cohorts(s))  # the group metrics take only the analyst's own cohorts
fairness_section(s, p, cohorts)
errors_section(s, p)
