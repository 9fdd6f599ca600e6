"""Dataset-wide audits beyond one machine: SEV⁻/SEV⁺/SEV®, LENS factors and LIME-C/SHAP-C of every row of a table
too big for memory, partition by partition on a Dask cluster (:func:`run_audit`), read back by :func:`read_audit`.

Imported on demand (``from explain_core.audit import run_audit``): ``import explain_core`` does not load Dask.
"""
from .rows import ROW_CHOICES, AuditOptions, explain_partition, schema
from .run import SINGLE_PROCESS_BYTES, AuditRun, first_rows, read_rows, run_audit
from .summary import Audit, read_audit, summarize

__all__ = ["ROW_CHOICES", "SINGLE_PROCESS_BYTES", "Audit", "AuditOptions", "AuditRun", "explain_partition",
           "first_rows", "read_audit", "read_rows", "run_audit", "schema", "summarize"]
