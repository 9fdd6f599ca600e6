"""One partition of an audit: every chosen row explained by the existing batched engines, as one table.

SEV⁻, SEV⁺ (and SEV® with restricted groups) come from :func:`~explain_core.analysis.frame_sev` — the function
behind the dashboard's dataset-wide view — on batches of ``batch_rows`` rows, so a partition of any size runs in
bounded memory. LENS (the smallest τ-minimal sufficient factor of one context, Def. 4 / Alg. 1) and LIME-C /
SHAP-C (SEV §5.4) run per row, as on the dashboard. The output has one row per explained row: :data:`SCHEMA`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..analysis import ROW_CHOICES, frame_sev, row_baselines
from ..errors import check_choice
from ..lens import opposite_references
from ..lens.search import search_factors
from ..setup import Parameters, Setup
from ..sev.engine import EXPLANATIONS, SEV_RESULTS

GROUP_LISTS = pa.list_(pa.list_(pa.string()))


@dataclass(frozen=True)
class AuditOptions:
    """What an audit computes besides SEV: which rows, LENS, LIME-C/SHAP-C, the batch size of one SEV call, and
    ``explanations``: ``all`` (every minimal explanation, for the feature prevalence) or ``first`` (values only:
    each SEV search stops at its first flipping vertex, as the SEV paper's code does; no prevalence).

    Parameters
    ----------
    rows : str
        ``"all"``, ``"predicted-positive"`` or ``"predicted-negative"``.
    lens : bool
        Add the smallest τ-sufficient LENS factor.
    flips : bool
        Add LIME-C and SHAP-C.
    batch_rows : int
        Rows per SEV call.
    explanations : str
        ``"all"`` or ``"first"``.
    """

    rows: str = "all"
    lens: bool = False
    flips: bool = False
    batch_rows: int = 4096
    explanations: str = "all"

    def __post_init__(self):
        check_choice(self.rows, ROW_CHOICES, "rows to audit")
        check_choice(self.explanations, EXPLANATIONS, "SEV explanations")


def schema(restricted: bool, options: AuditOptions) -> pa.Schema:
    """The columns of an audit table (SEV® only with restricted groups; LENS and flips only when asked). A SEV
    value is null when not found (``*_status``: ``beyond_depth``, ``unexplainable`` or ``limit``; ``*_engine``: the
    engine that answered, :mod:`~explain_core.sev.dispatch`; ``*_explanations``: every minimal explanation, or the
    first flip found with ``options.explanations="first"``); ``status`` repeats SEV®'s
    status with restricted groups, SEV⁻'s without; ``lime_c`` / ``shap_c`` are null where the prediction never
    flips.

    Parameters
    ----------
    restricted : bool
        Whether the setup restricts groups.
    options : AuditOptions
        What is computed.

    Returns
    -------
    pyarrow.Schema
        The columns.
    """
    fields = [("row", pa.int64()), ("prediction", pa.int8()), ("score", pa.float64())]
    for kind in SEV_RESULTS if restricted else SEV_RESULTS[:2]:
        fields += [(f"sev_{kind}", pa.int16()), (f"sev_{kind}_status", pa.string()),
                   (f"sev_{kind}_explanations", GROUP_LISTS), (f"sev_{kind}_engine", pa.string())]
    if options.lens:
        fields += [("factor", pa.list_(pa.string())), ("factor_ps", pa.float64()), ("factor_status", pa.string())]
    if options.flips:
        fields += [("lime_c", pa.int16()), ("shap_c", pa.int16())]
    fields += [("status", pa.string()), ("seconds", pa.float64())]
    return pa.schema(fields)


def explain_partition(setup: Setup, frame: pd.DataFrame, first_row: int, params: Parameters,
                      options: AuditOptions) -> pa.Table:
    """The audit table of ``frame`` (the feature columns of one partition; its rows are numbered from
    ``first_row``). ``seconds`` is each row's share of the batched SEV time plus its own LENS / flip time.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    frame : pandas.DataFrame
        One partition's feature columns.
    first_row : int
        The number of its first row.
    params : Parameters
        Every parameter.
    options : AuditOptions
        What to compute.

    Returns
    -------
    pyarrow.Table
        One row per explained row, in :func:`schema`.
    """
    frame = frame[list(setup.dataset.layout.columns)].reset_index(drop=True)
    # text read from Parquet is Arrow-backed: made Python strings once here, not again in every model call
    frame = frame.astype({c: object for c in frame.columns if pd.api.types.is_string_dtype(frame[c].dtype)})
    step = max(1, options.batch_rows)
    scores = np.concatenate([np.zeros(0)] + [setup.model.score(frame.iloc[a:a + step])
                                             for a in range(0, len(frame), step)])
    labels = setup.model.labels_of(scores)
    wanted = ROW_CHOICES[options.rows]
    chosen = np.arange(len(frame)) if wanted is None else np.flatnonzero(labels == wanted)
    columns: dict[str, list] = {name: [] for name in schema(bool(setup.restricted), options).names}
    lens_refs: dict[int, pd.DataFrame] = {}  # LENS references depend only on the row's class
    for start in range(0, len(chosen), step):
        at = chosen[start:start + step]
        batch = frame.iloc[at]
        began = time.perf_counter()
        sev = _sev_columns(setup, batch, params, options.explanations)
        shared = (time.perf_counter() - began) / len(at)
        for name, values in sev.items():
            columns[name].extend(values)
        if not (options.lens or options.flips):
            columns["seconds"].extend([shared] * len(at))
            continue
        for i, position in enumerate(at):
            began = time.perf_counter()
            query = batch.iloc[[i]]
            if options.lens:
                for name, value in _lens_columns(setup, query, int(labels[position]), params, lens_refs).items():
                    columns[name].append(value)
            if options.flips:
                flips = row_baselines(setup, query, params)
                columns["lime_c"].append(flips.lime_flip.count)
                columns["shap_c"].append(flips.shap_flip.count)
            columns["seconds"].append(shared + time.perf_counter() - began)
    columns["row"] = (first_row + chosen).tolist()
    columns["prediction"] = labels[chosen].tolist()
    columns["score"] = scores[chosen].tolist()
    columns["status"] = columns["sev_restricted_status" if setup.restricted else "sev_minus_status"]
    return pa.Table.from_pydict(columns, schema=schema(bool(setup.restricted), options))


def encoded_partition(setup: Setup, frame: pd.DataFrame, first_row: int, params: Parameters,
                      options: AuditOptions) -> tuple[bytes, int]:
    """:func:`explain_partition`'s table as the bytes of its Parquet file, and its row count: encoded where it was
    computed (on a Dask worker, not in the process that writes the files), and 5–20× smaller to send than the
    table (SEV's explanation lists are repeated strings, which Parquet stores once per column chunk)."""
    table = explain_partition(setup, frame, first_row, params, options)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes(), table.num_rows


def _sev_columns(setup: Setup, batch: pd.DataFrame, params: Parameters, explanations: str) -> dict[str, list]:
    """SEV⁻ (no group held), SEV⁺ and, with restricted groups, SEV®: value, status, minimal explanations (all, or
    the first flip found)."""
    runs = {"minus": (replace(setup, restricted=()), "minus", ()), "plus": (setup, "plus", ())}
    if setup.restricted:
        runs["restricted"] = (setup, "minus", setup.restricted)
    out = {}
    for name, (run_setup, kind, held) in runs.items():
        results = frame_sev(run_setup, batch, kind=kind, restricted=held, max_depth=params.max_depth,
                            method=params.sev_method, budget=params.sev_budget, explanations=explanations,
                            budget_rows=params.sev_budget_rows)
        out[f"sev_{name}"] = [r.value for r in results]
        out[f"sev_{name}_status"] = [r.status for r in results]
        out[f"sev_{name}_explanations"] = [[list(e) for e in r.explanations] for r in results]
        out[f"sev_{name}_engine"] = [r.engine for r in results]
    return out


def _lens_columns(setup: Setup, query: pd.DataFrame, label: int, params: Parameters,
                  refs: dict[int, pd.DataFrame]) -> dict:
    """The smallest τ-sufficient factor of the chosen context by the layered search (its budget counts model rows,
    so an audit is reproducible and agrees with the app): fewest groups, then highest PS. ``factor_status``:
    ``found``, ``none`` (no factor up to the largest size), ``budget`` (the next layer needs more rows than the
    budget has left) or ``memory`` (the next layer would pass the search's memory bound)."""
    if label not in refs:  # opposite_references depends on the query only through its predicted class
        refs[label] = opposite_references(setup.model, setup.dataset, query, setup.train_rows,
                                          n=params.lens_references, seed=params.seed)
    found = search_factors(setup.model, setup.dataset, query, refs[label], direction=params.lens_direction,
                           tau=params.tau, alpha=params.alpha, correction=params.lens_correction,
                           max_size=params.lens_max_size, budget_rows=params.lens_budget_rows)
    factors = found.result.factors
    if not factors:
        return {"factor": None, "factor_ps": None,
                "factor_status": "none" if found.stopped == "complete" else found.stopped}
    best = min(factors, key=lambda f: (len(f.groups), -f.ps))
    return {"factor": list(best.groups), "factor_ps": best.ps, "factor_status": "found"}
