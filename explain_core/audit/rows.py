"""One partition of an audit: every chosen row explained by the existing batched engines, as one table.

SEV⁻, SEV⁺ (and SEV® with restricted groups) come from :func:`~explain_core.analysis.frame_sev` — the function
behind the dashboard's dataset-wide view — on batches of ``batch_rows`` rows, so a partition of any size runs in
bounded memory. LENS (the smallest τ-minimal sufficient factor of one context, Def. 4 / Alg. 1) and LIME-C /
SHAP-C (SEV §5.4) run per row, as on the dashboard, as does any registered method with audit columns
(:class:`~explain_core.registry.AuditColumns`). The output has one row per explained row: :func:`schema`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..analysis import ROW_CHOICES, frame_sev
from ..errors import IntakeError, check_choice
from ..methods import method
from ..setup import Parameters, Setup
from ..sev.engine import EXPLANATIONS, SEV_RESULTS

GROUP_LISTS = pa.list_(pa.list_(pa.string()))


@dataclass(frozen=True)
class AuditOptions:
    """What an audit computes besides SEV: which rows, LENS, LIME-C/SHAP-C, the batch size of one SEV call,
    ``explanations``: ``all`` (every minimal explanation, for the feature prevalence) or ``first`` (values only:
    each SEV search stops at its first flipping vertex, as the SEV paper's code does; no prevalence), and any other
    registered method with audit columns, by name.

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
    methods : tuple of str
        Other registered methods' columns to add (each must have audit columns).
    """

    rows: str = "all"
    lens: bool = False
    flips: bool = False
    batch_rows: int = 4096
    explanations: str = "all"
    methods: tuple[str, ...] = ()

    def __post_init__(self):
        check_choice(self.rows, ROW_CHOICES, "rows to audit")
        check_choice(self.explanations, EXPLANATIONS, "SEV explanations")
        for name in self.methods:
            if method(name).audit is None:
                raise IntakeError(f"The method {name!r} has no audit columns.")

    @property
    def per_row(self) -> tuple[str, ...]:
        """The methods computed row by row (LENS with ``lens``, LIME-C/SHAP-C with ``flips``, then ``methods``)."""
        return ("lens",) * self.lens + ("baselines",) * self.flips + tuple(self.methods)


@dataclass(frozen=True)
class Cluster:
    """Where many rows' work runs (an audit's partitions, a batch's reports): ``scheduler`` None or ``"single"``
    = this process, ``"local"`` = a LocalCluster of ``workers`` processes, any other value = a running scheduler's
    address; or an existing Dask ``client``. ``progress`` shows Dask's bar (a counter in one process).

    Parameters
    ----------
    scheduler : str, optional
        None, ``"single"``, ``"local"`` or a scheduler's address.
    workers : int, optional
        LocalCluster processes.
    client : distributed.Client, optional
        An existing client.
    progress : bool
        Show a progress bar.
    """

    scheduler: str | None = None
    workers: int | None = None
    client: object = None
    progress: bool = False


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
    for name in options.per_row:
        fields += list(method(name).audit.fields)
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
    memos: dict[str, dict] = {name: {} for name in options.per_row}  # what a method's rows share (LENS's references)
    for start in range(0, len(chosen), step):
        at = chosen[start:start + step]
        batch = frame.iloc[at]
        began = time.perf_counter()
        sev = _sev_columns(setup, batch, params, options.explanations)
        shared = (time.perf_counter() - began) / len(at)
        for name, values in sev.items():
            columns[name].extend(values)
        if not options.per_row:
            columns["seconds"].extend([shared] * len(at))
            continue
        for i, position in enumerate(at):
            began = time.perf_counter()
            for name in options.per_row:
                found = method(name).audit.compute(setup, batch.iloc[[i]], int(labels[position]), params, memos[name])
                for column, value in found.items():
                    columns[column].append(value)
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
        results = frame_sev(run_setup, batch, params, kind=kind, restricted=held, explanations=explanations)
        out[f"sev_{name}"] = [r.value for r in results]
        out[f"sev_{name}_status"] = [r.status for r in results]
        out[f"sev_{name}_explanations"] = [[list(e) for e in r.explanations] for r in results]
        out[f"sev_{name}_engine"] = [r.engine for r in results]
    return out

