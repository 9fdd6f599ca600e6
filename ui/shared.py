"""What every page shares: the session (setup, row, parameters), cached computations, small views.

Session keys: ``setup`` (:class:`~explain_core.analysis.Setup`),
``row`` (dataset position of the chosen row), ``whatif`` (edited values of that row, or None),
``params`` (:class:`~explain_core.analysis.Parameters`) and ``origins`` (where the session's datasets and models came
from, :func:`remember_data` / :func:`remember_model`, so ``ui/saved.py`` can keep the analysis). Computations are
cached by content: results by (setup key, the row's values, the parameters they depend on), so changing σ does not
recompute SEV. Widget callbacks run through :func:`~ui.boundary.guarded`, inside the same error boundary as the pages.
"""
from __future__ import annotations

import re
import threading
import time
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from explain_core.allocator import GLIBC_MMAP_CEILING, hold_thresholds, release_freed_memory
from explain_core.analysis import (DEFAULT_DEMO, BaselineParameters, LensParameters, LinearParameters, Parameters,
                                   SEVParameters, Setup, dataset_sev, demo_setup, flip_numbers, lens_report,
                                   lens_searches, row_baselines, row_lens_causal, row_lens_contexts, row_lens_search,
                                   row_linear, row_sev, row_tree_sev, score_of)
from explain_core.export import to_csv, to_json
from explain_core.intake.data import Dataset
from explain_core.intake.demo_models import train_model
from explain_core.intake.loading import trusted_mode
from explain_core.intake.trained import TrainedModel
from explain_core.lens.causal import CausalGraph, ScmSettings
from explain_core.saved.recipe import DataRecipe, ModelRecipe
from explain_core.sev import hypercube
from explain_core.vocabulary import format_number, plain
from ui import origins
from ui import stops

SECRETS_TRUSTED = "trusted_models"
# --- the operator's settings -----------------------------------------------------------------------------------

def operator_trusted() -> bool:
    """Trusted mode (pickle uploads load) as the server's operator set it: ``EXPLAIN_TRUSTED_MODELS=1`` or
    ``trusted_models = true`` in ``.streamlit/secrets.toml``. Nothing a visitor does can change it."""
    try:
        secret = bool(st.secrets.get(SECRETS_TRUSTED, False))
    except Exception:  # noqa: BLE001 — no secrets file: the environment decides
        secret = False
    return secret or trusted_mode()


def upload_limit_mb() -> float:
    """The app's upload limit (Streamlit's ``server.maxUploadSize``, in MB), passed to the library's readers."""
    return float(st.get_option("server.maxUploadSize"))


# --- session --------------------------------------------------------------------------------------------------

@st.cache_resource(show_spinner="Loading the demo data and its model (trained on first use, then cached)…")
def demo(name: str, kind: str) -> Setup:
    """A bundled dataset with its demo model, shared by every session (read-only)."""
    return demo_setup(name, kind)


def remembered_demo(name: str, kind: str) -> Setup:
    """:func:`demo`, remembered as this session's origin of its dataset and model."""
    setup = demo(name, kind)
    origins.remember_data(setup.dataset, DataRecipe(demo=name))
    origins.remember_model(setup.model_key, ModelRecipe("demo", kind))
    return setup


@st.cache_resource(show_spinner=False, max_entries=8, ttl="1h")
def trained(_dataset: Dataset, key: str, kind: str, seed: int) -> TrainedModel:
    """A model trained here, shared by sessions with the same data, configuration, kind and seed."""
    return train_model(_dataset, kind, seed=seed)


TRIM_EVERY_S = 30
KEEP_FREE_AT_TOP = 2 << 20  # bytes glibc may keep free at the top of a heap (its own rule rises to 64 MiB)


@st.cache_resource(show_spinner=False)
def memory_housekeeping() -> threading.Thread:
    """Once per server process: every ``TRIM_EVERY_S`` seconds, collect garbage and hand freed memory back to the
    operating system (:func:`~explain_core.allocator.release_freed_memory`: Arrow's pool and glibc's heap), so the
    memory of a visitor who left (their uploads, datasets and results) does not stay with the server. glibc's
    thresholds are held first (:func:`~explain_core.allocator.hold_thresholds`): blocks up to 32 MiB from the heaps,
    as glibc's own rule would place them, but at most :data:`KEEP_FREE_AT_TOP` left free at the top of each of the
    script threads' heaps, which ``malloc_trim`` does not shrink."""
    hold_thresholds(GLIBC_MMAP_CEILING, KEEP_FREE_AT_TOP)

    def loop() -> None:
        while True:
            time.sleep(TRIM_EVERY_S)
            release_freed_memory()

    thread = threading.Thread(target=loop, name="memory-housekeeping", daemon=True)
    thread.start()
    return thread


def ensure_session() -> None:
    """Start a new session on the default demo (COMPAS, gradient boosting) at the row named in the URL
    (``?row=N``) or its first flagged test row; keep the URL's ``row`` on the chosen row, so it can be shared."""
    memory_housekeeping()
    if "setup" not in st.session_state:
        use_setup(remembered_demo(*DEFAULT_DEMO))
        linked = str(st.query_params.get("row", ""))
        rows = len(st.session_state["setup"].dataset.features)
        if re.fullmatch(r"[0-9]{1,12}", linked) and int(linked) < rows:
            st.session_state["row"] = int(linked)
        elif linked:  # a shared link to a row that is not there: say so, and say which row is shown instead
            st.warning(f"The link asks for row {plain(linked[:20])}, which is not a row of this dataset (rows 0 to "
                       f"{rows - 1}); showing row {st.session_state['row']} instead.", icon=":material/link_off:")
    st.session_state.setdefault("params", Parameters())
    if st.query_params.get("row") != str(st.session_state["row"]):
        st.query_params["row"] = str(st.session_state["row"])


def use_setup(setup: Setup, origin_of: Setup | None = None) -> None:
    """Make ``setup`` the session's, keeping the row when it still exists and clearing its what-if edits;
    ``origin_of``: the setup it was derived from (the same data and model files, another class explained)."""
    if origin_of is not None:
        data = origins.origins_of(origin_of)[0]
        if data is not None:
            origins.remember_data(setup.dataset, data)
    st.session_state["setup"] = setup
    st.session_state["whatif"] = None
    row = st.session_state.get("row")
    if row is None or row >= len(setup.dataset.features):
        st.session_state["row"] = default_row(setup)


def default_row(setup: Setup) -> int:
    """The first test row predicted positive (any test row when none is)."""
    flagged = flagged_rows(setup)
    return int(flagged[0]) if len(flagged) else int(setup.test_rows[0])


def setup() -> Setup:
    ensure_session()
    return st.session_state["setup"]


def params() -> Parameters:
    ensure_session()
    return st.session_state["params"]


def set_params(**changes) -> Parameters:
    """Replace some parameters (validated by :class:`Parameters`) and return the new set."""
    new = replace(params(), **changes)
    st.session_state["params"] = new
    return new


def row() -> int:
    ensure_session()
    return int(st.session_state["row"])


def choose_row(position: int) -> None:
    """Make dataset row ``position`` the session's (a whole number within the data; anything else is ignored)."""
    rows = len(st.session_state["setup"].dataset.features)
    if isinstance(position, (int, np.integer)) and not isinstance(position, bool) and 0 <= position < rows \
            and int(position) != st.session_state.get("row"):
        st.session_state["row"] = int(position)
        st.session_state["whatif"] = None


def query() -> pd.DataFrame:
    """The chosen row as a one-row frame, with the what-if edits applied when there are any."""
    frame = setup().query(row())
    edits = st.session_state.get("whatif")
    if edits:
        frame = frame.copy()
        for column, value in edits.items():
            frame[column] = pd.Series([value], index=frame.index, dtype=frame[column].dtype)
    return frame


# --- cached computations ---------------------------------------------------------------------------------------

def flagged_rows(s: Setup) -> np.ndarray:
    """Test rows the model predicts positive (all test rows for regression), read off :func:`row_scores`."""
    if s.dataset.task != "classification":
        return s.test_rows
    return s.test_rows[row_scores(s, s.key)["predicted"].to_numpy()[s.test_rows] == 1]


@st.cache_data(show_spinner=False, max_entries=4)
def row_scores(_setup: Setup, key: str) -> pd.DataFrame:
    """Every row's score, predicted label and split (train/test)."""
    s = _setup
    scores = s.model.score(s.dataset.features)
    split = np.full(len(scores), "train", dtype=object)
    split[s.test_rows] = "test"
    return pd.DataFrame({"score": scores, "predicted": s.model.labels_of(scores), "split": split})


@st.cache_data(show_spinner=False, max_entries=256)
def sev(_setup: Setup, key: str, query: pd.DataFrame, p: SEVParameters, restricted: tuple[str, ...]):
    """SEV⁻, SEV⁺ and SEV® (``restricted`` = the setup's, part of the cache key)."""
    return row_sev(_setup, query, p)


@st.cache_data(show_spinner=False, max_entries=64)
def tree_sev(_setup: Setup, key: str, query: pd.DataFrame, p: SEVParameters, restricted: tuple[str, ...]):
    """SEVᵀ of the row (None when the model is not a tree model; ``restricted`` as for :func:`sev`)."""
    return row_tree_sev(_setup, query, p)


@st.cache_data(show_spinner=False, max_entries=64)
def baselines(_setup: Setup, key: str, query: pd.DataFrame, p: BaselineParameters):
    return row_baselines(_setup, query, p)


@st.cache_data(show_spinner=False, max_entries=16)
def lens(_setup: Setup, key: str, query: pd.DataFrame, p: LensParameters):
    """Both LENS contexts (only the references, the largest factor and the seed matter: τ, α and the direction
    are read off the contexts by :func:`lens_result`)."""
    with progress_bar("Scoring every reference × factor…") as progress:
        return row_lens_contexts(_setup, query, p, progress=progress)


@st.cache_data(show_spinner=False, max_entries=16)
def lens_search(_setup: Setup, key: str, query: pd.DataFrame, p: LensParameters):
    """The layered LENS search of wide data (direction, τ, α, correction and budget are all part of the key)."""
    with progress_bar("Searching factors of 0, 1, 2, … features…") as progress:
        return row_lens_search(_setup, query, p, progress=progress)


def lens_context(_setup: Setup, key: str, query: pd.DataFrame, p: LensParameters):
    """The scored LENS context the page reads (:func:`scored_lens_context`): a run the page starts by itself, so
    with a Stop button (drawn here: a cached function draws no widget)."""
    with stops.stoppable("the LENS factors of this row", stops.run_key("lens", key, query, lens_basis(_setup, p)),
                         page_started=True):
        return scored_lens_context(_setup, key, query, p)


def lens_basis(_setup: Setup, p: LensParameters) -> LensParameters:
    """What the scored context depends on: every LENS parameter on wide data (the layered search), else only the
    references, the largest factor and the seed (the exhaustive contexts)."""
    if lens_searches(_setup, p):
        return p
    return LensParameters(lens_references=p.lens_references, lens_max_size=p.lens_max_size, seed=p.seed)


def scored_lens_context(_setup: Setup, key: str, query: pd.DataFrame, p: LensParameters):
    """The layered search's context on wide data, else the exhaustive one in the chosen direction."""
    if lens_searches(_setup, p):
        return lens_search(_setup, key, query, p).context
    return lens(_setup, key, query, lens_basis(_setup, p))[p.lens_direction]


@st.cache_data(show_spinner=False, max_entries=8)
def lens_causal(_setup: Setup, key: str, query: pd.DataFrame, p: LensParameters, graph_text: str,
                settings: ScmSettings):
    """Both causal LENS contexts for the graph written as ``graph_text`` and the SCM's ``settings`` (only the
    references, the largest factor and the seed of ``p`` matter)."""
    with progress_bar("Propagating interventions through the causal graph…") as progress:
        return row_lens_causal(_setup, query, p, CausalGraph.parse(graph_text), settings, progress=progress)


@st.cache_data(show_spinner=False, max_entries=256)
def lens_result(_setup: Setup, key: str, query: pd.DataFrame, p: LensParameters):
    """τ-minimal factors (subset and cost order) and the PN curve of the chosen context."""
    note = lens_search(_setup, key, query, p).message if lens_searches(_setup, p) else ""
    return lens_report(scored_lens_context(_setup, key, query, p), p, note=note)


@st.cache_data(show_spinner=False, max_entries=64)
def linear(_setup: Setup, key: str, query: pd.DataFrame, p: LinearParameters):
    return row_linear(_setup, query, p)


@st.cache_data(show_spinner=False, max_entries=16)
def dataset_wide_sev(_setup: Setup, key: str, rows: tuple[int, ...], p: SEVParameters, kind: str,
                     restricted: tuple[str, ...]):
    with progress_bar(f"SEV of {len(rows)} rows…") as progress:
        return dataset_sev(_setup, list(rows), p, kind=kind, progress=progress)


def sev_now(s: Setup | None = None):
    s = s or setup()
    return sev(s, s.key, query(), params().sev, s.restricted)


def tree_sev_now(s: Setup | None = None):
    s = s or setup()
    return tree_sev(s, s.key, query(), params().sev, s.restricted)


def baselines_now(s: Setup | None = None):
    s = s or setup()
    return baselines(s, s.key, query(), params().baselines)


def linear_now(s: Setup | None = None):
    s = s or setup()
    return linear(s, s.key, query(), params().linear)


def lens_now(s: Setup | None = None):
    s = s or setup()
    lens_context(s, s.key, query(), params().lens)  # the long run, stoppable (no widget inside a cached function)
    return lens_result(s, s.key, query(), params().lens)


@contextmanager
def progress_bar(text: str):
    """A ``st.progress`` bar for one long run, as a :data:`~explain_core.sev.ProgressFn`; removed at the end.

    Created inside the cached function that runs, so a cache hit replays nothing visible."""
    bar = st.progress(0.0, text=text)

    def update(fraction: float, message: str) -> None:
        bar.progress(min(1.0, max(0.0, float(fraction))), text=message)
    try:
        yield update
    finally:
        bar.empty()


# --- small views ----------------------------------------------------------------------------------------------

def current_score() -> float:
    """The model's score of the chosen row (from :func:`row_scores`; scored afresh when edited)."""
    s = setup()
    return score_of(s, query()) if st.session_state.get("whatif") else float(row_scores(s, s.key)["score"].iloc[row()])


def current_label() -> int:
    return int(setup().model.labels_of(np.array([current_score()]))[0])


def row_banner() -> None:
    """The chosen row, its prediction and the setup, at the top of every explanation page."""
    s = setup()
    edited = " (edited in the what-if editor)" if st.session_state.get("whatif") else ""
    parts = [f"**Row {row()}**{edited}", plain(s.score_text(current_score()))]
    if s.dataset.task == "classification":
        parts.append(f"predicted **{plain(s.dataset.class_name(current_label()))}**"
                     + (f" at the threshold {format_number(s.model.threshold)}" if s.model.custom_threshold else ""))
    else:  # a regression is explained at or above / below the model's threshold
        side = "at or above" if current_label() == 1 else "below"
        parts.append(f"**{side}** the threshold {format_number(s.model.threshold)}")
    st.info(" · ".join(parts + [plain(s.dataset.name), plain(s.model.name)]), icon=":material/table_rows:")


def chart(figure, words: str, key: str, where=None) -> None:
    """A chart and, under it, the same message in words (its text alternative, also the chart's accessible name), in
    ``where`` (default: here)."""
    where = st if where is None else where
    where.plotly_chart(figure, width="stretch", key=key, alt=words)
    where.caption(plain(words))


def download_buttons(name: str, table: pd.DataFrame | None = None, result=None, key: str | None = None,
                     what: str = "", context: dict | None = None) -> None:
    """CSV of ``table`` and JSON of ``result`` (a method's result, built on click: its own ``to_json`` with the row,
    the setup, the parameters and ``context`` beside it, which ``type(result).from_json`` reads back), side by side;
    ``what`` names the table on the buttons where a section has several ("counts (CSV)")."""
    key = key or name
    row_of_buttons = st.container(horizontal=True)
    if table is not None:
        row_of_buttons.download_button(f"{what} (CSV)" if what else "CSV", data=lambda: to_csv(table),
                                       file_name=f"{name}.csv", mime="text/csv",
                           key=f"csv_{key}", icon=":material/download:")
    if result is not None:
        row_of_buttons.download_button("JSON",
                                       data=lambda: to_json(result, row=row(), setup=setup(), parameters=params(),
                                                            **(context or {})),
                           file_name=f"{name}.json", mime="application/json", key=f"json_{key}",
                           icon=":material/download:")


@st.cache_data(show_spinner=False, max_entries=64)
def cube(_setup: Setup, key: str, query: pd.DataFrame):
    """Every vertex of the row's SEV hypercube (p ≤ 12 groups), scored in one call."""
    return hypercube(_setup.model, _setup.dataset.layout, query, _setup.reference_for(query))


@st.cache_data(show_spinner=False, max_entries=16)
def flips(_setup: Setup, key: str, rows: tuple[int, ...], sev_params: SEVParameters,
          baseline_params: BaselineParameters) -> pd.DataFrame:
    with progress_bar("LIME and SHAP on each row…") as progress:
        return flip_numbers(_setup, list(rows), Parameters(**vars(sev_params), **vars(baseline_params)),
                            progress=progress)


@st.cache_data(show_spinner=False, max_entries=64)
def causation(_setup: Setup, key: str, query: pd.DataFrame, p: LensParameters, graph_text: str,
              settings: ScmSettings, factor: tuple[str, ...]):
    """Pearl's probabilities of causation of ``factor`` under the causal graph ``graph_text`` (issue 29)."""
    from explain_core.analysis import row_causation
    return row_causation(_setup, query, p, CausalGraph.parse(graph_text), settings, factor)
