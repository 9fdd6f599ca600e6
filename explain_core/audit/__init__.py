"""Dataset-wide audits beyond one machine: SEV⁻/SEV⁺/SEV®, LENS factors and LIME-C/SHAP-C of every row of a table
too big for memory, partition by partition on a Dask cluster (:func:`run_audit`), read back by :func:`read_audit`.

Dask is imported with :mod:`.run` on first use of its names, so reading an audit (the dashboard) does not load it.
"""
from .rows import ROW_CHOICES, AuditOptions, Cluster, explain_partition, schema
from .summary import Audit, audit_folders, read_audit, summarize

_RUN = ("SINGLE_PROCESS_BYTES", "AuditRun", "first_rows", "read_rows", "run_audit")

__all__ = ["ROW_CHOICES", "Audit", "AuditOptions", "Cluster", "audit_folders", "explain_partition", "read_audit",
           "schema", "summarize", *_RUN]


def __getattr__(name: str):
    if name in _RUN:
        from . import run
        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
