"""The server's start-up (app.py's lifespan), once per process, before any visitor: the imports the pages draw with,
the explainers' libraries, and the default demo with its first flagged row, loaded into the shared caches.
"""
from __future__ import annotations

import importlib
import logging

import streamlit as st

from explain_core.analysis import DEFAULT_DEMO, Parameters, Setup
from ui import references, shared

EXPLAINER_MODULES = ("shap", "lime.lime_base", "ortools.math_opt.python.mathopt")  # SHAP, LIME, the exact linear fit


def warm_up() -> None:
    """The server's start-up (app.py's lifespan), once per process, before any visitor: import what the pages
    draw with and the explainers' libraries, and load the default demo into the shared cache, so the first visit
    only computes its row (the default row's slowest part is computed here too, :func:`warm_default_row`)."""
    for figures in ("sev", "lens", "linear", "compare"):  # plotly and the figures of every explanation page
        importlib.import_module(f"explain_core.views.{figures}")
    for explainer in EXPLAINER_MODULES:  # imported on a first LENS / Linear / Compare visit otherwise (shap: ~1.5 s)
        importlib.import_module(explainer)
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
