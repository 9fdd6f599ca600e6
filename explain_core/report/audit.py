"""The PDF of a dataset-wide audit (:func:`explain_core.audit.read_audit`): what was explained and how, then per SEV
kind the distribution, the unexplainable share and the feature prevalence (the dashboard's figures; a values-only
audit has none), LENS factor
sizes and LIME-C / SHAP-C beside SEV⁻ when the audit has them. Drawn from the audit's summary only, so an audit of
millions of rows is reported in seconds.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ..audit.summary import VALUES_ONLY
from ..views.sev import feature_prevalence, sev_histogram
from .figures import figure_png, figure_size, resolve_renderer
from .writer import Writer, _document


def write_audit_pdf(audit, path: str | Path | None = None, *, image_renderer: str = "auto") -> bytes:
    """The audit's summary as an A4 PDF: returns its bytes, and writes them to ``path`` when given.

    Parameters
    ----------
    audit : Audit
        An audit read back (:func:`~explain_core.audit.read_audit`).
    path : str or pathlib.Path, optional
        Where to write it.
    image_renderer : str
        ``"auto"``, ``"plotly"`` or ``"matplotlib"``.

    Returns
    -------
    bytes
        The PDF.
    """
    resolve_renderer(image_renderer)
    s, m = audit.summary, audit.manifest
    created = datetime.now()
    pdf = _document(f"audit {audit.folder.name} · created {created:%Y-%m-%d %H:%M}", f"Audit of {s['rows']:,} rows",
                    "Dataset-wide explanations (SEV, LENS, LIME-C/SHAP-C)")
    w = Writer(pdf)
    pdf.add_page()
    w.h1(f"Audit: {s['rows']:,} rows explained")
    done = "complete" if audit.complete else f"incomplete: {s['partitions']} of {s['of_partitions']} partitions written"
    w.text(f"Model {m['model']} (setup built from {m['dataset']}); reference: {m['reference']}.")
    w.text(f"Folder {audit.folder} ({done}). Rows: {m['options']['rows']}; SEV search depth {m['params']['max_depth']}"
           f"; restricted features (SEV®): {', '.join(m['restricted']) or 'none'}. Setup key {m['setup']}. "
           f"Compute time {s['seconds']:,.0f} s in all (summed over workers).")
    for kind, k in s["kinds"].items():
        w.section()
        w.h2(f"{k['label']}: mean {k['mean'] if k['mean'] is not None else float('nan'):.2f} over the "
             f"{k['explained']:,} rows explained; unexplainable {k['unexplainable_share']:.1%}")
        w.table(["status", "rows", "share"], [[status, f"{n:,}", f"{n / s['rows']:.1%}"]
                                              for status, n in k["status"].items()], widths=(3, 2, 2))
        prevalence = audit.prevalence(kind)
        if prevalence is None:
            w.text(VALUES_ONLY)
        for fig in [sev_histogram(audit.counts(kind), label=k["label"])] + \
                ([] if prevalence is None else [feature_prevalence(prevalence, s["groups"])]):
            size = figure_size(fig)
            png, _ = figure_png(fig, image_renderer, width=size[0], height=size[1])
            w.image(png, size)
    if "lens" in s:
        w.section()
        w.h2("LENS: size of the smallest τ-sufficient factor")
        w.table(["factor", "rows"], [[key, f"{n:,}"] for key, n in sorted(s["lens"].items())], widths=(4, 2))
    if "flips" in s:
        w.section()
        w.h2("LIME-C and SHAP-C beside SEV⁻ (features moved until the prediction flips)")
        w.table(["measure", "mean", "rows where it never flips / is not found"],
                [[name, "—" if f["mean"] is None else f"{f['mean']:.2f}", f"{f['never']:,}"]
                 for name, f in s["flips"].items()], widths=(3, 2, 4))
    data = bytes(pdf.output())
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)
    return data
