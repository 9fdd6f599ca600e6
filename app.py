"""Explanation explorer — entry point: navigation, the session's defaults and the page error boundary.

Run with ``streamlit run app.py``. Streamlit imports this file once to start the server (``app``, an ``st.App``
whose start-up imports what the pages use and loads the default demo, so the first visitor does not wait for
it); every visit then runs it as the script (``__main__``), which draws the navigation and the chosen page. Each
page in ``pages/`` is a thin view over ``explain_core``; the
session (dataset, model, reference, restricted features, row, parameters) lives in ``st.session_state``
(see ``pages/_shared.py``) and follows the analyst from page to page.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st

from explain_core import ExplainError
from explain_core.views.vocabulary import plain

log = logging.getLogger("explain_explorer")
SIDEBAR_ROWS = 1000  # rows offered by the sidebar's switcher
ICON = Path(__file__).parent / "static" / "favicon.svg"  # served by this server (a material icon is fetched online)
# Charts follow the theme (Streamlit's plotly theme), whose axis text is a fixed grey of 3.7:1 on white: axis,
# legend and annotation text take the theme's own text colour instead (≥ 4.5:1 in both themes, WCAG AA).
# (Bar labels are drawn outside their bars, on the background, so they too.) A slider's value, drawn in the primary
# colour (which must also carry white button labels, so cannot reach 4.5:1 on the dark background), likewise.
CHART_TEXT_CSS = ("<style>.stPlotlyChart :is(.xtick, .ytick, .g-xtitle, .g-ytitle, .legendtext, .annotation-text, "
                  ".legendtitletext, .cbtitle, .cbaxis) text, .stPlotlyChart :is(text.legendtext, text.bartext, "
                  ".annotation-text) {fill: currentColor !important} [data-testid=stSliderThumbValue] "
                  "{color: inherit !important}</style>")


def pages() -> dict:
    """The navigation's sections (``st.Page`` objects belong to a script run)."""
    return {
        "Start": [st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
                  st.Page("pages/data_model.py", title="Data & model", icon=":material/dataset:"),
                  st.Page("pages/pick_row.py", title="Pick a row", icon=":material/table_rows:"),
                  st.Page("pages/model_view.py", title="The model", icon=":material/monitoring:")],
        "Explain": [st.Page("pages/sev.py", title="SEV", icon=":material/hub:"),
                    st.Page("pages/lens.py", title="LENS", icon=":material/rule:"),
                    st.Page("pages/linear.py", title="Linear", icon=":material/bar_chart:"),
                    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
                    st.Page("pages/report.py", title="Report", icon=":material/picture_as_pdf:")],
        "Improve": [st.Page("pages/sparser_model.py", title="Sparser model", icon=":material/compress:")],
    }


def sidebar_summary() -> None:
    """The setup in one line and a row switcher that works from every page."""
    s = shared.setup()
    scores = shared.row_scores(s, s.key)["score"]
    rows = [int(r) for r in shared.flagged_rows(s)[:SIDEBAR_ROWS]]
    if shared.row() not in rows:
        rows.insert(0, shared.row())
    with st.sidebar:
        st.caption(f"**{plain(s.dataset.name)}** · {plain(s.model.name)}  \nrestricted: "
                   f"{plain(', '.join(s.restricted)) or 'none'}")
        classes = s.explainable_classes()
        if classes:  # a multiclass model: one class against the rest, chosen here on every page
            st.session_state["sidebar_class"] = s.dataset.positive_class
            st.selectbox("Explain class", classes, key="sidebar_class", format_func=str,
                         on_change=lambda: shared.use_setup(s.with_positive_class(st.session_state["sidebar_class"])),
                         help="The model predicts several classes; explanations are for this one against the rest.")
        st.session_state["sidebar_row"] = shared.row()
        st.selectbox(f"Row · {s.score_label}", rows, key="sidebar_row",
                     format_func=lambda r: f"row {r} · {s.score_value(scores[r])}",
                     on_change=lambda: shared.choose_row(st.session_state["sidebar_row"]),
                     help=f"The first {SIDEBAR_ROWS} test rows the model predicts positive (and the chosen row); "
                          "any row can be chosen on the Pick a row page.")


def main() -> None:
    """One script run: the navigation and the chosen page (its own browser title), inside the error boundary."""
    st.set_page_config(page_icon=ICON, layout="wide")  # before the navigation: no page's material icon as favicon
    page = st.navigation(pages())
    st.set_page_config(page_title=f"{page.title} · Explanation explorer")
    st.html(CHART_TEXT_CSS)
    try:
        shared.ensure_session()
        sidebar_summary()
        page.run()
    except ExplainError as exc:  # a bad input, choice or result: the message says what is wrong and how to fix it
        st.error(plain(exc), icon=":material/error:")
    except Exception:  # anything else: a short reference instead of a traceback (full trace in the server log)
        ref = uuid.uuid4().hex[:8]
        log.exception("page %s failed (reference %s)", page.title, ref)
        st.error(f"Something went wrong while drawing this page. Your data and choices are kept; try another "
                 f"setting or page. If it happens again, report reference **{ref}**.", icon=":material/error:")


@asynccontextmanager
async def warm_start(_app):
    """The server's start-up (the lifespan of ``st.App``): the imports and the default demo, once per process."""
    from pages._shared import warm_up

    await asyncio.to_thread(warm_up)
    yield


if __name__ == "__main__":  # a visit's script run
    from pages import _shared as shared  # its caches need Streamlit's runtime, which a script run has

    main()
else:  # ``streamlit run app.py`` imports the file to find the server
    app = st.App(__file__, lifespan=warm_start)
