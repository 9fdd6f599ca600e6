"""LENS runs the analyst starts (issue 52): on wide data a layered search planned to score more than
:data:`AUTO_ROWS` model rows does not start by itself; the page shows the work it would do, counted before any model
call (:func:`~explain_core.analysis.row_lens_plan`), on a button ("Find factors — about N model rows"), unless its
first layers within that bound already hold a factor; the run then has its progress bar and Stop button
(:func:`ui.shared.lens_context`).

Not a page (the leading underscore).
"""
from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from explain_core.analysis import LensParameters, Setup, lens_searches, row_lens_plan
from explain_core.lens.search import SearchPlan
from ui import shared, stops
from ui.boundary import guarded

AUTO_ROWS = 200_000  # a search planned to score more model rows (seconds in a sandboxed worker) waits for a click
# unless its first layers, within this many rows, hold a factor
ASKED = "lens_asked"  # session key: the run keys of the searches the analyst asked for


@st.cache_data(show_spinner=False, max_entries=16)
def plan(_setup: Setup, key: str, query: pd.DataFrame, p: LensParameters) -> SearchPlan:
    """The most model rows the layered search would score on this row (no model call)."""
    return row_lens_plan(_setup, query, p)


def run_key(s: Setup, query: pd.DataFrame, p: LensParameters) -> str:
    """The key of this row's LENS run (the Stop button's)."""
    return stops.run_key("lens", s.key, query, shared.lens_basis(s, p))


def waiting(s: Setup, query: pd.DataFrame, p: LensParameters) -> SearchPlan | None:
    """The plan of a long layered search the analyst has not asked for yet; None where LENS runs by itself: the
    plan fits in :data:`AUTO_ROWS`, the analyst asked, or a first pass within :data:`AUTO_ROWS` rows finds a factor
    (then the whole search stops at the same layer, with the same answer)."""
    if not lens_searches(s, p):
        return None
    found = plan(s, s.key, query, p)
    if found.rows <= AUTO_ROWS or run_key(s, query, p) in st.session_state.get(ASKED, ()):
        return None
    if shared.lens_search(s, s.key, query, replace(p, lens_budget_rows=AUTO_ROWS)).result.factors:
        return None
    return found


def ask(key: str) -> None:
    """The button's callback: this run may start (remembered for the session)."""
    asked = st.session_state.setdefault(ASKED, [])
    if key not in asked:
        asked.append(key)


def offer(s: Setup, query: pd.DataFrame, p: LensParameters, found: SearchPlan, *, where: str = "lens") -> None:
    """What the search would do, and the button that starts it."""
    n = len(s.dataset.groups)
    st.markdown(f"**LENS has not searched this row yet: with {n} features the search is long.**")
    st.caption(f"It tries factors of 0, 1, 2, … features on {p.lens_references:,} references until a size holds a "
               f"sufficient factor: at most {found.rows:,} model rows, factors of up to {found.size} features (then "
               f"{found.stop_words}). A search of more than {AUTO_ROWS:,} rows starts only when asked; it shows its "
               "progress and can be stopped.")
    st.button(f"Find factors — about {found.rows:,} model rows", key=f"{where}_find", type="primary",
              icon=":material/play_arrow:", on_click=guarded(ask), args=(run_key(s, query, p),))
