"""SEV: SEV⁻, SEV⁺ and SEV® of the row with every minimal explanation, the hypercube, and dataset-wide views."""
import pandas as pd
import streamlit as st

from explain_core.limits import limits
from explain_core.sev import HYPERCUBE_MAX_GROUPS, METHODS
from explain_core.sev.exact_sev import EXACT_BUDGET_HELP
from explain_core.sev.readings import SHOWN_FIRST, explanation_lines, line_sentence, summary_sentence
from explain_core.sev.summaries import prevalence_table, sev_counts
from explain_core.views.compare import flip_figure
from explain_core.views.sev import (HYPERCUBE_FIGURE_MAX_GROUPS, feature_prevalence, hypercube_figure, lattice_figure,
                                    paths_figure, sev_histogram)
from explain_core.views.style import chart_name
from explain_core.views.summaries import sev_values_text
from explain_core.vocabulary import (SEV_HELP, SEV_METHOD_HELP, SEV_METHOD_LABELS, UNCHANGED, format_value, plain,
                                           text_table)
from explain_core.views.readings import depth_cap_sentence, engine_sentence, tree_sev_sentence
from ui import audit, references, shared, stops

AUTO_WIDE_GROUPS = 12  # wider data: the dataset-wide run is opt-in (it can take minutes)
BUDGETS = (20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000)  # model rows per search
BUDGET_LABEL = "Search budget (model rows)"
EXACT_BUDGETS = (1, 2, 5, 10, 20, 50, 100)  # the exact solver's work per search (EXACT_BUDGET_HELP)
EXACT_LABEL = "Exact solver budget"
EXACT_CONTROL = f"the '{EXACT_LABEL}' control on this page"
BEYOND_PAGE = (f"the budget past this page's largest (the '{EXACT_LABEL}' control is at its top): sev_budget in the "
               "Python library or --sev-budget on the command line")


def show_result(ex, which: str) -> None:
    """One SEV value: the number, its explanations in words (moved features only, strongest first, capped with
    "show all"), and the paper's full table in an expander."""
    result = ex.result(which)
    with st.container(key=f"sev_{which}", border=True):
        st.metric(result.label, result.shown, help=SEV_HELP[which])
        lines = explanation_lines(ex, which, s.model.threshold)
        st.caption(plain(summary_sentence(result, lines, control=f"the '{BUDGET_LABEL}' control on this page",
                                          depth_control="the 'Maximum depth' slider on this page")))
        show_all = len(lines) > SHOWN_FIRST and st.toggle(f"Show all {len(lines)}", key=f"sev_all_{which}")
        shown = lines if show_all else lines[:SHOWN_FIRST]
        if shown:
            st.markdown("\n".join(f"- {plain(line_sentence(line, result, s.class_names, s.score_text))}"
                                   for line in shown))
        if len(shown) < len(lines):
            st.caption(f"… and {len(lines) - len(shown)} more.")
        cap = depth_cap_sentence(result, p.max_depth, len(names) - len(result.restricted))  # why short of the slider
        control = EXACT_CONTROL if p.sev_budget < max(EXACT_BUDGETS) else BEYOND_PAGE  # at its top: past the page
        st.caption(plain(f"{engine_sentence(result, control)} {cap}".strip()))
        with st.expander("Full table (every feature)", key=f"sev_table_{which}", on_change="rerun") as full:
            if not full.open:  # drawn only when opened: the first view of the page stays light
                return
            table = ex.table(which, unchanged=UNCHANGED)
            st.dataframe(text_table(table), width="stretch")
            shared.download_buttons(f"sev_{which}_row{shared.row()}", table, result, key=f"sev_{which}")


def show_tree(tree) -> None:
    """SEVᵀ: the number, the changes in words, the model's score at the point reached, and the point as a table."""
    with st.container(key="sev_tree", border=True):
        st.metric("SEVᵀ", tree.shown, help=SEV_HELP["tree"])
        st.caption(plain(tree_sev_sentence(tree, s.class_names)))
        if tree.score is not None:
            checked = "confirmed" if tree.confirmed else "not confirmed"
            st.caption(f"Checked by the model at that point: {plain(s.score_text(tree.score))} ({checked}). "
                       + {"negative paths": "Found on its tree's leaves.",
                          "one move": "Every single-feature change was scored by the model."}.get(
                              tree.engine, "Found by the exact solver over all its trees."))
        if tree.point:
            with st.expander("The point reached", key="sev_tree_point", on_change="rerun") as opened:
                if not opened.open:  # drawn only when opened
                    return
                table = pd.DataFrame([{"feature": c, "this row": format_value(ex.query[c]),
                                       "changed to": format_value(v)} for c, v in tree.point.items()])
                st.dataframe(text_table(table), width="stretch", hide_index=True)
                shared.download_buttons(f"sev_tree_row{shared.row()}", result=tree, key="sev_tree")


st.title("SEV — sparse explanation values")
shared.row_banner()
s, p = shared.setup(), shared.params()
names = s.dataset.group_names

c1, c2, c4, c5, c3 = st.columns([1, 1, 1, 1, 2])
method = c2.selectbox("Search", METHODS, index=METHODS.index(p.sev_method), format_func=SEV_METHOD_LABELS.get,
                      key="sev_method", help=SEV_METHOD_HELP)
if method != p.sev_method:
    p = shared.set_params(sev_method=method)
depth = c1.slider("Maximum depth", 1, len(names), min(p.max_depth, len(names)), key="sev_depth",
                  help="The breadth-first search stops after this many features changed at once (the exact "
                  "solver has no depth limit).")
restricted = c3.multiselect(
    "Restricted features (held fixed: SEV®)", names, default=list(s.restricted), key="sev_held",
    help=f"Features an explanation may not change, e.g. "
         f"{plain(', '.join(s.dataset.restricted_suggestion)) or 'protected attributes'}.")
budgets = sorted(b for b in {*BUDGETS, p.sev_budget_rows} if b <= limits().sev_search_rows or b == p.sev_budget_rows)
budget_rows = c4.select_slider(
    BUDGET_LABEL, budgets, value=p.sev_budget_rows, format_func=lambda n: f"{n:,}", key="sev_budget_rows",
    help="The breadth-first search stops before a depth whose sets of features would pass this many model rows; a "
         "row it leaves open gets a bracket: the depth it proved, and a real flip a greedy path found.")
exact_budget = c5.select_slider(
    EXACT_LABEL, sorted({*EXACT_BUDGETS, p.sev_budget}), value=p.sev_budget, format_func=lambda b: f"{b:g}",
    key="sev_exact_budget", help=EXACT_BUDGET_HELP + " A search it stops gets a bracket: the bound the solver proved "
    "and the best flip it found, checked by the model.")
if depth != p.max_depth:
    p = shared.set_params(max_depth=int(depth))
if exact_budget != p.sev_budget:
    p = shared.set_params(sev_budget=float(exact_budget))
if budget_rows != p.sev_budget_rows:
    p = shared.set_params(sev_budget_rows=int(budget_rows))
if tuple(restricted) != s.restricted:
    shared.use_setup(s.with_restricted(restricted))
    s = shared.setup()

ex = shared.sev_now(s)
ref_score = float(s.model.score(ex.reference.as_frame(s.dataset.columns))[0])
st.caption(
    f"Each explanation lists only the features it moves, as *value in the row → value at the reference* (SEV⁻, "
    f"SEV®) or *reference → row* (SEV⁺), strongest flip first with the score it reaches. The reference is the "
    f"{plain(ex.reference.description)}; the model gives it {plain(s.score_text(ref_score))}.")
kinds = list(ex.results())
tree = shared.tree_sev_now(s)  # SEVᵀ, beside SEV⁻, for tree models
columns = st.columns([3] * len(kinds) + ([2] if tree is not None else []))  # SEVᵀ's card narrower
for column, which in zip(columns, kinds):
    with column:
        show_result(ex, which)
if tree is not None:
    with columns[-1]:
        show_tree(tree)

st.subheader("The hypercube of moves between the row and the reference")
which = st.radio("Highlight the shortest paths of", kinds, horizontal=True, key="sev_paths",
                 format_func=lambda k: ex.result(k).label)
with st.container(key="sev_cube"):
    if len(names) <= HYPERCUBE_FIGURE_MAX_GROUPS:
        fig = hypercube_figure(shared.cube(s, s.key, shared.query()), ex, which=which, class_names=s.class_names)
        st.caption("Each dot is one vertex: a mix of the row and the reference (x = features at the reference). "
                   "Hover a vertex for its feature values and score; orange edges are the shortest flipping paths.")
    else:
        result = ex.result(which)
        searched = result.engine == "bfs"  # the exact engines evaluate a few vertices, not whole layers
        fig = lattice_figure(result, labels_of=s.model.labels_of, log_y=True) if searched else None
        st.caption(f"With {len(names)} features (> {HYPERCUBE_FIGURE_MAX_GROUPS}) "
                   + ("the cube is summarised by depth (log scale: the few flipping vertices show beside the many "
                      "evaluated), and each" if searched else "each")
                   + " shortest path is drawn as the score after each move, up to the flip.")
        if result.explainable and result.value:
            start = ex.score if result.kind == "minus" else ref_score
            paths = paths_figure(result, names, start, s.model.threshold)
            st.plotly_chart(paths, width="stretch", key="sev_paths_chart", alt=chart_name(paths))
    if fig is not None:
        st.plotly_chart(fig, width="stretch", key="sev_cube_chart", alt=chart_name(fig))
    if len(names) <= HYPERCUBE_MAX_GROUPS:
        cube = shared.cube(s, s.key, shared.query())
        with st.expander(f"All {len(cube.scores)} vertices as a table", key="sev_cube_table",
                         on_change="rerun") as full:
            if full.open:  # drawn only when opened
                table = cube.table()
                st.dataframe(table, width="stretch", height=300)
                shared.download_buttons(f"hypercube_row{shared.row()}", table, key="sev_cube")

st.subheader("Dataset-wide")
flagged_all = shared.flagged_rows(s)
flagged = tuple(int(r) for r in flagged_all[:limits().sev_rows])  # the server's bound on one dataset-wide run
kind = st.radio("Value", ["minus", "plus"], horizontal=True, key="sev_wide_kind",
                format_func=lambda k: {"minus": "SEV⁻ (SEV® with restricted features)", "plus": "SEV⁺"}[k])
run_wide = st.toggle("Compute the dataset-wide view", value=len(names) <= AUTO_WIDE_GROUPS,
                     key=f"sev_wide_on_{s.key}",
                     help=f"SEV of every flagged test row: on by default up to {AUTO_WIDE_GROUPS} features, where it "
                          "takes seconds; on wider data turn it on when needed (a progress bar follows the run).")
if not run_wide:
    st.caption(f"{len(flagged):,} test rows would be explained with {len(names)} features each: turn the view on "
               "to compute it.")
else:
    restricted = s.restricted if kind == "minus" else ()
    with stops.stoppable(f"SEV of {len(flagged):,} rows", stops.run_key("sev_wide", s.key, flagged, p.sev, kind,
                                                                         restricted),
                         turn_off={f"sev_wide_on_{s.key}": False}):
        wide = shared.dataset_wide_sev(s, s.key, flagged, p.sev, kind, restricted)
    label = wide.results[0].label if wide.results else "SEV"
    with st.container(key="sev_wide"):
        left, right = st.columns(2)
        shared.chart(sev_histogram(wide.values, label=label), sev_values_text(wide.values, label), "sev_hist", left)
        prevalence = feature_prevalence(wide.results, names)
        right.plotly_chart(prevalence, width="stretch", key="sev_prev", alt=chart_name(prevalence))
        counts = sev_counts(wide.values)
        explained = [v for v in wide.values if v is not None]
        more = (f" (the first {len(flagged):,} of {len(flagged_all):,}: this server's limit)"
                if len(flagged) < len(flagged_all) else "")
        st.caption(f"{len(wide.values)} test rows predicted {plain(s.dataset.class_name(1))}{more}; mean {label} "
                   f"{sum(explained) / max(1, len(explained)):.2f} over the {len(explained)} explained.")
        with st.container(horizontal=True):
            shared.download_buttons(f"sev_{kind}_distribution", counts, key="sev_wide_counts", what=f"{label} counts")
            shared.download_buttons(f"sev_{kind}_prevalence", prevalence_table(wide.results, names),
                                    key="sev_wide_prev", what="Feature prevalence")

references.section(s)  # SEV^F, SEV^© and credibility ("Improving Decision Sparsity")

audit.section(s.key)  # audits of whole datasets, when the server offers some (EXPLAIN_AUDIT_DIR)

st.subheader("LIME-C and SHAP-C: how many features until the prediction flips")
st.caption("Align features to the reference one by one in LIME's (or SHAP's) order of importance and count how "
           "many it takes to flip the prediction (SEV paper §5). SEV⁻ is the fewest possible, so it is never more.")
with st.form("sev_flip_form"):
    n = st.slider("Rows (the first flagged test rows)", 5, max(5, min(200, len(flagged))), min(20, len(flagged)),
                  key="sev_flip_n")
    run = st.form_submit_button("Compute flip numbers", icon=":material/play_arrow:")
if run or st.session_state.get("sev_flip_done") == (s.key, n):
    st.session_state["sev_flip_done"] = (s.key, n)
    with stops.stoppable(f"LIME-C and SHAP-C of {n} rows", stops.run_key("flips", s.key, flagged[:n], p.sev,
                                                                          p.baselines),
                         forget=("sev_flip_done",)):
        table = shared.flips(s, s.key, flagged[:n], p.sev, p.baselines)
    with st.container(key="sev_flips"):
        words = " ".join(sev_values_text(table[method], method, "never flip") for method in table.columns)
        shared.chart(flip_figure(table), words, "sev_flip_chart")
        means = table.mean()
        cols = st.columns(3)
        for col, method in zip(cols, table.columns):
            col.metric(f"mean {method}", f"{means[method]:.2f}",
                       help=f"{int(table[method].isna().sum())} rows never flip")
        shared.download_buttons("flip_numbers", table, key="sev_flips")
