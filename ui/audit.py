"""The SEV page's view of dataset-wide audits (``python -m explain_core audit``) that the server's operator offers in
``EXPLAIN_AUDIT_DIR``: distribution, feature prevalence and the first rows, read from the audit's summary and
partition files, so an audit of millions of rows opens at once."""
import streamlit as st

from explain_core.audit import audit_folders, read_audit
from explain_core.audit.summary import VALUES_ONLY
from explain_core.views.sev import feature_prevalence, sev_histogram
from explain_core.views.style import chart_name
from explain_core.vocabulary import plain
from ui import shared

FIRST_ROWS = 1000


@st.cache_data(show_spinner=False, max_entries=8)
def _audit(folder: str, stamp: float):
    """The audit in ``folder``; ``stamp`` (its summary's modification time) only keys the cache, so a rerun
    of the audit is read afresh."""
    del stamp
    return read_audit(folder)


def section(session_key: str) -> None:
    """The audits offered, if any; nothing at all when the operator offers none."""
    folders = audit_folders()
    if not folders:
        return
    st.subheader("Audits of whole datasets")
    chosen = st.selectbox("Audit", folders, format_func=lambda p: p.name, key="sev_audit",
                          help="Written by `python -m explain_core audit` into the server's audit folder.")
    audit = _audit(str(chosen), (chosen / "summary.json").stat().st_mtime if (chosen / "summary.json").exists() else 0)
    s = audit.summary
    kind = st.radio("Value", audit.kinds, horizontal=True, key="sev_audit_kind",
                    format_func=lambda k: s["kinds"][k]["label"])
    k = s["kinds"][kind]
    with st.container(key="sev_audit_view"):
        done = "" if audit.complete else f" (incomplete: {s['partitions']} of {s['of_partitions']} partitions)"
        mean = f"mean {k['label']} {k['mean']:.2f} over the {k['explained']:,} explained" if k["explained"] else \
            "none explained"
        st.caption(plain(f"{s['rows']:,} rows{done}; {mean}; unexplainable {k['unexplainable_share']:.1%}.")
                   + ("" if audit.manifest["setup"] == session_key else
                      " This audit used another model, data or reference than this session."))
        left, right = st.columns(2)
        counts, prevalence = audit.counts(kind), audit.prevalence(kind)
        histogram = sev_histogram(counts, label=k["label"])
        left.plotly_chart(histogram, width="stretch", key="sev_audit_hist", alt=chart_name(histogram))
        shared.download_buttons(f"audit_{kind}_distribution", counts, key="sev_audit_counts")
        if prevalence is None:
            right.caption(VALUES_ONLY)
        else:
            figure = feature_prevalence(prevalence, s["groups"])
            right.plotly_chart(figure, width="stretch", key="sev_audit_prev", alt=chart_name(figure))
            shared.download_buttons(f"audit_{kind}_prevalence", prevalence, key="sev_audit_prevalence")
        with st.expander(f"The first {FIRST_ROWS:,} audited rows"):
            rows = audit.rows(limit=FIRST_ROWS)
            for column in [c for c in rows.columns if c.endswith("_explanations")]:
                rows[column] = rows[column].map(lambda sets: " | ".join(", ".join(e) for e in sets))
            if "factor" in rows:
                rows["factor"] = rows["factor"].map(lambda f: "none" if f is None else ", ".join(f))
            st.dataframe(rows, width="stretch", height=300)
