"""The server's start-up (app.py's lifespan), once per process, before any visitor: the imports the pages draw with
and the default demo with its first flagged row, loaded into the shared caches. The explainers' libraries (shap,
lime, OR-Tools' MathOpt) are not imported here: each is imported where it runs, on a page's first use (issue 55:
shap and its numba alone hold about 109 MB of a server's resident memory, for ~1.5 s on a first LENS, Linear or
Compare visit).
"""
from __future__ import annotations

import importlib
import logging

import streamlit as st

from explain_core.analysis import DEFAULT_DEMO, Parameters, Setup
from ui import references, shared

# Never imported at start-up (tests/test_cold_start.py): each holds tens of MB for the process's life (shap with numba
# and llvmlite about 109 MB), paid only where a page first explains with it.
LAZY_MODULES = ("shap", "numba", "llvmlite", "lime", "ortools.math_opt", "torch")


def warm_up() -> None:
    """The server's start-up (app.py's lifespan), once per process, before any visitor: import what the pages
    draw with and load the default demo into the shared cache, so the first visit only computes its row (the
    default row's slowest part is computed here too, :func:`warm_default_row`). Not the explainers' libraries
    (:data:`LAZY_MODULES`): a first LENS, Linear or Compare visit imports shap and lime itself."""
    for figures in ("sev", "lens", "linear", "compare"):  # plotly and the figures of every explanation page
        importlib.import_module(f"explain_core.views.{figures}")
    logging.disable(logging.WARNING)  # no "missing ScriptRunContext" warnings: there is no visitor to draw for yet
    try:
        warm_default_row(shared.demo(*DEFAULT_DEMO))
        st.empty()  # Streamlit's first element in a process inspects the whole call stack once (~0.2 s here)
    finally:
        logging.disable(logging.NOTSET)


def warm_default_row(s: Setup) -> None:
    """What a first visit draws for the default demo's first flagged row beyond its SEV: the sidebar's scores of
    every row and the row's explanation toward real cases (its density fit is 0.5 s of a first visit's 3 s)."""
    query = s.query(int(shared.flagged_rows(s)[0]))
    references.row_result(s, s.key, query, Parameters().references, s.restricted)
