"""Explanation explorer — entry point: navigation, the session's defaults and the page error boundary.

Run with ``streamlit run app.py``. Streamlit imports this file once to start the server (``app``, an ``st.App``
whose start-up imports what the pages use and loads the default demo, so the first visitor does not wait for
it); every visit then runs it as the script (``__main__``), which draws the navigation and the chosen page. Each
page in ``app_pages/`` is a thin view over ``explain_core``, drawn with the helpers in ``ui/``; the
session (dataset, model, reference, restricted features, row, parameters) lives in ``st.session_state``
(see ``ui/shared.py``) and follows the analyst from page to page.
"""
from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st

from explain_core.vocabulary import plain

SIDEBAR_ROWS = 1000  # rows offered by the sidebar's switcher
ICON = Path(__file__).parent / "static" / "favicon.svg"  # served by this server (a material icon is fetched online)
# Charts follow the theme (Streamlit's plotly theme), whose axis text is a fixed grey of 3.7:1 on white: axis,
# legend and annotation text take the theme's own text colour instead (≥ 4.5:1 in both themes, WCAG AA).
# (Bar labels are drawn outside their bars, on the background, so they too.) A slider's value, drawn in the primary
# colour (which must also carry white button labels, so cannot reach 4.5:1 on the dark background), likewise.
# Captions: Streamlit draws them in the text colour at 60% (4.30:1 from the pixels on white); at 80% they stay
# lighter than the text and measure ≥ 4.5:1 in both themes (tests/test_browser_accessibility.py, from the pixels).
# A segmented control's chosen option: the text colour on its primary tint (the primary colour measured 3.8:1 there
# in the dark theme, axe's color-contrast); the tint and the border still mark it.
CHART_TEXT_CSS = ("<style>.stPlotlyChart :is(.xtick, .ytick, .g-xtitle, .g-ytitle, .legendtext, .annotation-text, "
                  ".legendtitletext, .cbtitle, .cbaxis) text, .stPlotlyChart :is(text.legendtext, text.bartext, "
                  ".annotation-text) {fill: currentColor !important} [data-testid=stSliderThumbValue] "
                  "{color: inherit !important} [data-testid=stCaptionContainer] {color: inherit !important; "
                  "opacity: 0.8} div[aria-label] > [data-selected=true] {color: inherit !important}</style>")


def pages() -> dict:
    """The navigation's sections (``st.Page`` objects belong to a script run)."""
    return {
        "Start": [st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
                  st.Page("app_pages/data_model.py", title="Data & model", icon=":material/dataset:"),
                  st.Page("app_pages/pick_row.py", title="Pick a row", icon=":material/table_rows:"),
                  st.Page("app_pages/model_view.py", title="The model", icon=":material/monitoring:"),
                  st.Page("app_pages/cohorts.py", title="Cohorts & fairness", icon=":material/groups:")],
        "Explain": [st.Page("app_pages/sev.py", title="SEV", icon=":material/hub:"),
                    st.Page("app_pages/lens.py", title="LENS", icon=":material/rule:"),
                    st.Page("app_pages/linear.py", title="Linear", icon=":material/bar_chart:"),
                    st.Page("app_pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
                    st.Page("app_pages/report.py", title="Report", icon=":material/picture_as_pdf:")],
        "Improve": [st.Page("app_pages/sparser_model.py", title="Sparser model", icon=":material/compress:")],
    }


def sidebar_summary() -> None:
    """The setup in one line and a row switcher that works from every page.

    Each switcher's key names the setup (and row) it was drawn for, and its callback gets them as arguments: a
    choice reaches the session only when made on what the session still shows, so a click sent by a browser that
    had not yet drawn a newer setup (or row) is ignored instead of applied to it."""
    s, row = shared.setup(), shared.row()
    scores = shared.row_scores(s, s.key)["score"]
    rows = [int(r) for r in shared.flagged_rows(s)[:SIDEBAR_ROWS]]
    if row not in rows:
        rows.insert(0, row)
    with st.sidebar:
        st.caption(f"**{plain(s.dataset.name)}** · {plain(s.model.name)}  \nrestricted: "
                   f"{plain(', '.join(s.restricted)) or 'none'}  \nlabel: {plain(s.model.rule)}")
        classes = s.explainable_classes()
        if classes:  # a multiclass model: one class against the rest, chosen here on every page
            key = f"sidebar_class_{s.key}"
            with st.container(key="sidebar_class"):
                chosen = next((i for i, c in enumerate(classes) if str(c) == str(s.dataset.positive_class)), 0)
                st.selectbox("Explain class", classes, index=chosen, key=key,
                             format_func=str, on_change=boundary.guarded(choose_class), args=(key, s.key),
                             help="The model predicts several classes; explanations are for this one against the "
                                  "rest.")
        key = f"sidebar_row_{s.key}_{row}"
        with st.container(key="sidebar_row"):
            st.selectbox(f"Row · {s.score_label}", rows, index=rows.index(row), key=key,
                         format_func=lambda r: f"row {r} · {s.score_value(scores[r])}",
                         on_change=boundary.guarded(callbacks.choose_row_from), args=(key, s.key, row),
                         help=f"The first {SIDEBAR_ROWS} test rows the model predicts positive (and the chosen row); "
                              "any row can be chosen on the Pick a row page.")


def choose_class(key: str, drawn_for: str) -> None:
    """The sidebar's class switcher changed: explain that class, if the session still has the setup it showed."""
    s = st.session_state["setup"]
    if callbacks.drawn_for(drawn_for) and st.session_state.get(key) in s.explainable_classes():
        shared.use_setup(s.with_positive_class(st.session_state[key]), origin_of=s)


def main() -> None:
    """One script run: the navigation and the chosen page (its own browser title), inside the error boundary."""
    streamlit_runtime.keep_callbacks_whole()  # once per process: before this session's next run's callbacks
    st.set_page_config(page_icon=ICON, layout="wide")  # before the navigation: no page's material icon as favicon
    page = st.navigation(pages())
    st.set_page_config(page_title=f"{page.title} · Explanation explorer")
    st.html(CHART_TEXT_CSS)
    try:
        saved.begin()  # a new session: the analysis its URL names (a reload, a shared link)
        shared.ensure_session()
        callbacks.apply_requested_demo()
        saved.autosave()  # what the callbacks changed
        boundary.show_callback_failure()
        stops.show_stop_notice()
        callbacks.follow_go_to(page.title)
        sidebar_summary()
        saved.save_panel()
        page.run()
        saved.autosave()  # what the page changed
    except stops.RunStopped as stopped:  # a long run the analyst stopped, met again: say so, offer to run it
        stops.stopped_notice(stopped)
    except Exception as exc:  # noqa: BLE001 — the page's error boundary: a message, never a traceback
        st.error(boundary.failure_message(exc, f"page {page.title}"), icon=":material/error:")


@asynccontextmanager
async def warm_start(_app):
    """The server's start-up (the lifespan of ``st.App``): the imports and the default demo, once per process."""
    from ui.start import warm_up

    await asyncio.to_thread(warm_up)
    yield


if __name__ == "__main__":  # a visit's script run
    from ui import boundary  # their caches need Streamlit's runtime, which a script run has
    from ui import callbacks
    from ui import saved
    from ui import shared
    from ui import stops
    from ui import streamlit_runtime

    main()
else:  # ``streamlit run app.py`` imports the file to find the server
    app = st.App(__file__, lifespan=warm_start)
