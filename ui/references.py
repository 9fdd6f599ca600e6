"""Explanations toward references real people resemble ("Improving Decision Sparsity"): the SEV page's section
(pick the kind of reference; each explanation's length, distance and credibility; the typical cases as cards; the
kinds side by side over the flagged rows) and the Compare page's counterfactuals beside DiCE. Not a page.

Fitting (the density of real cases, the typical cases) is one-off per setup and parameters: a shared resource;
explanations are cached by content like every other result (``_shared``).
"""
from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from explain_core.analysis import (CounterfactualParameters, Parameters, ReferenceParameters, dataset_reference_kinds,
                                   reference_fits, row_counterfactuals, row_reference_sev)
from explain_core.counterfactuals import DICE_METHODS
from explain_core.references import available_kinds
from explain_core.sev.readings import SHOWN_FIRST
from explain_core.views.readings import (counterfactual_reading, credibility_text, outcome_text, prototype_title,
                                         reference_reading)
from explain_core.views.references import kinds_figure, points_figure
from explain_core.views.style import chart_name
from explain_core.vocabulary import (ASSIGNMENT_HELP, ASSIGNMENT_LABELS, REFERENCE_KIND_HELP,
                                           REFERENCE_KIND_LABELS, format_number, format_value, plain)
from ui import shared
from ui import stops

CLUSTER_CHOICES = ["auto", *range(1, 13)]
CARDS_PER_ROW = 4


@st.cache_resource(show_spinner="Fitting the density of real cases and the typical cases (once per model)…",
                   max_entries=8)
def fits(_setup, key: str, p: ReferenceParameters):
    return reference_fits(_setup, p)


def _fits(s, p):
    return fits(s, s.key, ReferenceParameters(flex_tau=p.flex_tau, flex_k=p.flex_k, clusters=p.clusters,
                                              cluster_assignment=p.cluster_assignment, seed=p.seed))


@st.cache_data(show_spinner=False, max_entries=128)
def row_result(_setup, key: str, query: pd.DataFrame, p: ReferenceParameters, restricted: tuple[str, ...]):
    return row_reference_sev(_setup, query, p, _fits(_setup, p))


@st.cache_resource(show_spinner=False, max_entries=8)
def kinds_table(_setup, key: str, rows: tuple[int, ...], p: ReferenceParameters, restricted: tuple[str, ...],
                kinds: tuple[str, ...]):
    """One shared (read-only) table per setup and parameters: it holds every row's result, which a per-session copy
    (``cache_data``) would unpickle on every run (~0.3 s on COMPAS)."""
    with shared.progress_bar(f"Every kind of reference on {len(rows)} rows…") as progress:
        return dataset_reference_kinds(_setup, list(rows), p, _fits(_setup, p), kinds=kinds, progress=progress)


@st.cache_data(show_spinner="DiCE's counterfactuals and SEV against each kind of reference…", max_entries=16)
def counterfactuals(_setup, key: str, query: pd.DataFrame, refs: ReferenceParameters, cf: CounterfactualParameters,
                    restricted: tuple[str, ...]):
    return row_counterfactuals(_setup, query, Parameters(**{**vars(refs), **vars(cf)}), _fits(_setup, refs))


def settings(s, p: Parameters) -> Parameters:
    """The kind of reference and its knobs; changes go into the session's parameters."""
    c1, c2 = st.columns([3, 2])
    choices = list(available_kinds(s))  # SEVᵀ for tree models only
    kind = c1.radio("Explain against", choices, index=choices.index(p.reference_kind) if p.reference_kind in choices
                    else 0, horizontal=True, format_func=REFERENCE_KIND_LABELS.get, key="ref_kind",
                    help=" · ".join(f"{REFERENCE_KIND_LABELS[k]}: {REFERENCE_KIND_HELP[k]}" for k in choices))
    credible = c2.toggle("Credible explanations only", value=p.credible is not None, key="ref_credible",
                         help="Accept an explanation only where it lands among real cases of the other class (at "
                              "least the chosen share of them less typical); otherwise the closest plain one is "
                              "shown and flagged.")
    with st.expander("Settings of the references"):
        c1, c2, c3, c4 = st.columns(4)
        tau = c1.slider("SEV^F window τ (quantile rank)", 0.0, 0.5, float(p.flex_tau), 0.05, key="ref_tau")
        k = c2.number_input("SEV^F values per window k", 1, 20, int(p.flex_k), key="ref_k")
        clusters = c3.selectbox("Typical cases K", CLUSTER_CHOICES, index=CLUSTER_CHOICES.index(p.clusters or "auto"),
                                key="ref_clusters", help="auto: 8 when each row takes the typical case it reaches by "
                                                         "the fewest changes; the number with the highest medoid "
                                                         "silhouette when it takes the nearest")
        theta = c4.slider("Credibility threshold", 0.05, 0.9, float(p.credible or 0.1), 0.05, key="ref_theta",
                          disabled=not credible)
        assignment = st.radio("Each row's typical case (SEV^©)", list(ASSIGNMENT_LABELS),
                              index=list(ASSIGNMENT_LABELS).index(p.cluster_assignment), horizontal=True,
                              format_func=ASSIGNMENT_LABELS.get, key="ref_assignment", help=ASSIGNMENT_HELP)
    changes = {"reference_kind": kind, "flex_tau": float(tau), "flex_k": int(k),
               "clusters": None if clusters == "auto" else int(clusters), "cluster_assignment": assignment,
               "credible": float(theta) if credible else None}
    if any(getattr(p, name) != value for name, value in changes.items()):
        p = shared.set_params(**changes)
    return p


def section(s) -> None:
    """The SEV page's section: one kind of reference for the row, its typical cases, the kinds side by side. Tables
    are drawn when their expanders open (the page's first view stays light)."""
    st.subheader("Explanations toward references real cases resemble")
    p = settings(s, shared.params())
    result = row_result(s, s.key, shared.query(), p.references, s.restricted)
    with st.container(key="ref_result", border=True):
        st.markdown(f"**{plain(result.method)}**: {plain(reference_reading(s, result))}")
        c1, c2, c3 = st.columns(3)
        c1.metric(f"{result.method} (features changed)", result.shown)
        first = result.first
        c2.metric("largest numeric change ℓ∞", "—" if first is None else f"{format_number(first.linf)} SD",
                  help="in standard deviations of the other class's training rows")
        c3.metric("credibility", "—" if first is None or first.credibility is None else f"{first.credibility:.0%}",
                  help=credibility_text(None if first is None else first.credibility))
        table = explanation_table(s, result)
        st.markdown("\n".join(f"- {plain(line['changes'])} · ℓ∞ {format_number(line['ℓ∞ (SD)'])} SD · credibility "
                               + ("—" if line["credibility"] is None else f"{line['credibility']:.0%}")
                               for line in table.head(SHOWN_FIRST).to_dict("records")))
        if len(table) > SHOWN_FIRST:
            st.caption(f"… and {len(table) - SHOWN_FIRST} more explanations of the same length.")
        with st.expander("Every explanation as a table", key="ref_table", on_change="rerun") as full:
            if full.open:
                st.dataframe(table, width="stretch", hide_index=True)
                shared.download_buttons(f"sev_{result.kind}_row{shared.row()}", table, result, key="ref_row")
    fitted = _fits(s, p.references)[result.explained_class]
    if result.kind == "cluster":
        prototype_cards(s, fitted.prototypes, result)
    elif result.kind == "flexible":
        with st.expander("The flexible windows (SEV^F)", key="ref_windows", on_change="rerun") as shown:
            if shown.open:
                st.dataframe(pd.DataFrame([{"feature": w.group, "reference": w.reference, "quantile rank": w.rank,
                                            "window": f"{format_value(w.low)} … {format_value(w.high)}",
                                            "values tried": ", ".join(format_value(v) for v in w.values)}
                                           for w in fitted.windows]), width="stretch", hide_index=True)
    dataset_view(s, p)


def explanation_table(s, result) -> pd.DataFrame:
    """One line per explanation of the result: the changes in words and the shared metrics."""
    row = result.query.to_dict()
    lines = []
    for d in result.destinations:
        moved = {**row, **d.values}
        lines.append({"changes": ", ".join(f"{g} {format_value(s.dataset.group(g).value_of(row))} → "
                                           f"{format_value(s.dataset.group(g).value_of(moved))}" for g in d.groups),
                      "features changed": d.l0, "ℓ∞ (SD)": round(d.linf, 3), "ℓ1 (SD)": round(d.l1, 3),
                      "credibility": None if d.credibility is None else round(d.credibility, 3),
                      "score there": round(d.score, 4)})
    return pd.DataFrame(lines, columns=["changes", "features changed", "ℓ∞ (SD)", "ℓ1 (SD)", "credibility",
                                        "score there"])


def prototype_cards(s, prototypes, result) -> None:
    """Each typical case as a card (the row's own first), with the assignment rule the result used."""
    assigned = result.prototype
    st.caption(f"{plain(prototypes.rule)}. This row is explained against the {plain(result.assignment_rule)}.")
    ordered = sorted(prototypes.prototypes, key=lambda q: q.number != assigned)
    row = s.dataset.layout.values(shared.query().iloc[0].to_dict())
    for start in range(0, len(ordered), CARDS_PER_ROW):
        for column, proto in zip(st.columns(CARDS_PER_ROW), ordered[start:start + CARDS_PER_ROW]):
            with column.container(border=True, key=f"ref_card_{proto.number}"):
                mine = " — this row's" if proto.number == assigned else ""
                st.markdown(f"**{plain(prototype_title(s, proto.number, prototypes.explain_class))}**{mine}")
                where = f"training row {proto.row}" if proto.row is not None else "median profile"
                st.caption(f"{where}; stands for {proto.members:,} training cases ({proto.share:.0%}); the model "
                           f"gives it {plain(s.score_text(proto.score))}"
                           + ("" if proto.valid else " — not usable: not predicted in that class"))
                values = s.dataset.layout.values(proto.reference.values)
                differ = [g for g in values if format_value(values[g]) != format_value(row[g])]
                st.markdown("\n".join(f"- {plain(g)}: {plain(format_value(values[g]))}" for g in differ[:6])
                            or "- the same values as this row")
                if len(differ) > 6:
                    st.caption(f"… and {len(differ) - 6} more features that differ from this row.")
    shared.download_buttons("typical_cases", None, prototypes, key="ref_cards")


def dataset_view(s, p: Parameters) -> None:
    names = s.dataset.group_names
    flagged = tuple(int(r) for r in shared.flagged_rows(s)[:1000])
    on = st.toggle("Compare the kinds over the flagged test rows", value=False, key=f"ref_wide_{s.key}",
                   help="Every kind (and the credible searches when switched on) on the same rows: the paper's "
                        "tables.")
    kinds = available_kinds(s)
    if on and "tree" in kinds and not st.checkbox(
            "With SEVᵀ", value=False, key=f"ref_wide_tree_{s.key}",
            help="SEVᵀ runs one exact search per row (the other kinds share batched model calls), so over many rows "
                 "it is the slowest kind; on the row above it is always offered."):
        kinds = tuple(k for k in kinds if k != "tree")
    if not on:
        st.caption(f"{len(flagged):,} flagged test rows would each be explained against every kind of reference "
                   f"({len(names)} features): turn the comparison on to compute it (seconds on narrow data; the "
                   "row's own explanations above need none of it).")
        return
    if not flagged:
        return
    params = replace(p.references, reference_kind="single")
    with stops.stoppable(f"every kind of reference on {len(flagged):,} rows",
                         stops.run_key("ref_kinds", s.key, flagged, params, s.restricted, kinds),
                         turn_off={f"ref_wide_{s.key}": False}):
        table = kinds_table(s, s.key, flagged, params, s.restricted, kinds)
    with st.container(key="ref_kinds"):
        kinds = kinds_figure(table.table)
        st.plotly_chart(kinds, width="stretch", key="ref_kinds_chart", alt=chart_name(kinds))
        fit = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in table.fit_seconds.items())
        st.caption(f"{len(flagged)} test rows predicted {plain(s.dataset.class_name(1))}; mean SEV over the explained "
                   f"rows, median ℓ∞ over those moving a numeric feature, credibility of the closest explanation; "
                   f"milliseconds per row after the one-off fitting ({plain(fit)}).")
        with st.expander("The kinds as a table", key="ref_kinds_table", on_change="rerun") as full:
            if full.open:
                st.dataframe(table.table.rename(columns={"explained": "share explained"}).style.format("{:.3f}"),
                             width="stretch")
                shared.download_buttons("reference_kinds", table.table, table, key="ref_kinds")


def counterfactual_section(s) -> None:
    """The Compare page's counterfactuals: SEV's explanations beside DiCE's, with the same metrics."""
    st.subheader("Counterfactuals side by side: SEV's explanations and DiCE")
    p = shared.params()
    c1, c2 = st.columns(2)
    method = c1.selectbox("DiCE method", list(DICE_METHODS), index=list(DICE_METHODS).index(p.dice_method),
                          format_func=DICE_METHODS.get, key="cmp_dice_method")
    count = c2.number_input("DiCE counterfactuals", 1, 10, int(p.dice_count), key="cmp_dice_count")
    if (method, count) != (p.dice_method, p.dice_count):
        p = shared.set_params(dice_method=method, dice_count=int(count))
    compared = counterfactuals(s, s.key, shared.query(), p.references, p.counterfactuals, s.restricted)
    summary = compared.summary()
    with st.container(key="cmp_counterfactuals"):
        st.markdown(plain(counterfactual_reading(summary)))
        st.table(summary.style.format({c: "{:.3f}" for c in summary.columns if c != "note"} | {"points": "{:.0f}"},
                                      na_rep="—"))
        points = points_figure({m.method: m.points for m in compared.methods})
        st.plotly_chart(points, width="stretch", key="cmp_points_chart", alt=chart_name(points))
        held = f"; {', '.join(s.restricted)} held fixed by every method" if s.restricted else ""
        st.caption(plain(f"ℓ0 = features changed, ℓ∞ / ℓ1 = numeric changes in standard deviations of the other "
                         f"class's training rows, credibility = the share of real cases of "
                         f"{outcome_text(s, 0 if shared.current_label() == 1 else 1)} less typical than the point"
                         f"{held}. SEV: its closest explanation; DiCE: the mean over its counterfactuals."))
        with st.expander("Every point", key="cmp_cf_points", on_change="rerun") as full:
            if full.open:  # drawn only when opened
                st.dataframe(compared.table(), width="stretch", hide_index=True)
                shared.download_buttons(f"counterfactuals_row{shared.row()}", compared.table(), compared,
                                        key="cmp_cf")
