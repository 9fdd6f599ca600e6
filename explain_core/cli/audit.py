"""``python -m explain_core audit``: explain every row of a table of any size, partition by partition on Dask.

Examples::

    python -m explain_core audit --data rows.parquet --target income --model model.skops --out audit/
    python -m explain_core audit --data parts/ --target y --model model.onnx --out audit/ --scheduler tcp://host:8786
    python -m explain_core audit --data adult --model l2_lr --out audit/ --rows predicted-positive --workers 2

``--data`` is a Parquet file, a folder of Parquet parts, a CSV file, or a bundled dataset's name. The setup (the
feature groups, the model's train/test split, the reference: the mean/mode of the training rows of the other class)
is built from ``--setup-data`` when given, from the bundled dataset for a bundled name, and otherwise from the first
``--sample-rows`` rows of ``--data``. A rerun into the same ``--out`` computes only the partitions not yet written.
"""
from __future__ import annotations

import sys
from pathlib import Path

DEFAULT_SAMPLE_ROWS = 50_000


def add_audit_parser(commands) -> None:
    from ..analysis import ROW_CHOICES
    from ..report.figures import RENDERERS
    from .common import add_file_arguments, add_method_arguments, add_model_argument

    audit = commands.add_parser(
        "audit", help="explain every row of a large table on a Dask cluster (Parquet partitions, resumable)",
        description="SEV⁻/SEV⁺ (SEV® with --restricted) of every row — and with --lens the smallest "
                    "τ-sufficient LENS factor, with --flips LIME-C/SHAP-C — partition by partition on a Dask "
                    "cluster, into OUT/parts/*.parquet (one row per explained row) and OUT/summary.json.")
    what = audit.add_argument_group("data and model")
    what.add_argument("--data", required=True,
                      help="the rows: a Parquet file, a folder of Parquet parts, a CSV file, or a bundled dataset")
    add_model_argument(what)
    what.add_argument("--out", required=True, help="output folder (created; a rerun resumes it)")
    add_file_arguments(what)
    what.add_argument("--setup-data", help="table the reference and the model's split are built from (a CSV/Parquet "
                                           "file or a bundled dataset; default: the first --sample-rows of --data)")
    what.add_argument("--sample-rows", type=int, default=DEFAULT_SAMPLE_ROWS,
                      help="rows of --data the setup is built from without --setup-data "
                           f"(default {DEFAULT_SAMPLE_ROWS:,})")
    what.add_argument("--rows", choices=tuple(ROW_CHOICES), default="all", help="which rows to explain (default: all)")

    methods = audit.add_argument_group("methods and their parameters (defaults as in the app)")
    methods.add_argument("--lens", action="store_true", help="also the smallest τ-sufficient LENS factor (per row)")
    methods.add_argument("--flips", action="store_true", help="also LIME-C and SHAP-C (per row; slow)")
    methods.add_argument("--first-flip", action="store_true",
                         help="SEV values only: each search stops at its first flipping vertex, as the SEV paper's "
                              "code does (the same values, faster; one explanation per row, no feature prevalence)")
    methods.add_argument("--method", dest="methods", action="append", default=[], metavar="NAME",
                         help="also another registered method's audit columns (repeat for several)")
    add_method_arguments(methods)

    run = audit.add_argument_group("cluster")
    run.add_argument("--scheduler", help="address of a running Dask scheduler (tcp://host:8786), or 'local' / "
                                         "'single'; default: a LocalCluster, or one process for small inputs")
    run.add_argument("--workers", type=int, help="workers of the LocalCluster (default: one per core)")
    run.add_argument("--blocksize", default="16MB", help="CSV bytes per partition (Parquet: one per row group)")
    run.add_argument("--batch-rows", type=int, default=4096, help="rows per SEV call within a partition")
    run.add_argument("--pdf", action="store_true", help="also write OUT/audit.pdf, the summary as a report")
    run.add_argument("--renderer", choices=RENDERERS, default="auto",
                     help="the PDF's figures: plotly static export (needs Chromium), matplotlib, or auto")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--debug", action="store_true", help="show tracebacks")


def audit_setup(args):
    """The setup the audit explains with (see the module docstring for where it is built from)."""
    from argparse import Namespace

    from .common import bundled_name, positive_class, load_setup, setup_of
    from ..errors import UsageError
    from ..audit import first_rows
    from ..intake.data import make_dataset

    if args.setup_data is not None or bundled_name(args.data) is not None:
        return load_setup(Namespace(**{**vars(args), "data": args.setup_data or args.data}))
    if not args.target:
        raise UsageError(f"{Path(args.data).name} is not a bundled dataset, so --target must name its target column "
                         "(the setup is built from its first --sample-rows rows).")
    if args.sample_rows < 100:
        raise UsageError(f"--sample-rows must be at least 100, not {args.sample_rows}.")
    frame = first_rows(args.data, args.sample_rows, blocksize=args.blocksize)
    dataset = make_dataset(frame, args.target, task=args.task, positive_class=positive_class(args, frame),
                           name=Path(args.data).stem)
    return setup_of(args, dataset, bundled=False)


def rows_path(data: str) -> str:
    """The file behind ``--data``: itself, or a bundled dataset's CSV."""
    from .common import bundled_name
    from ..intake.demos import bundled_file, demo_cards

    name = bundled_name(data)
    return data if name is None or Path(data).exists() else str(bundled_file(demo_cards()[name]["file"]))


def run_audit_command(args) -> int:
    from .common import load_params
    from ..errors import UsageError
    from ..audit import AuditOptions, Cluster, run_audit

    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, not {args.workers}.")
    if args.batch_rows < 1:
        raise UsageError(f"--batch-rows must be at least 1, not {args.batch_rows}.")
    params = load_params(args)
    options = AuditOptions(rows=args.rows, lens=args.lens, flips=args.flips, batch_rows=args.batch_rows,
                           explanations="first" if args.first_flip else "all", methods=tuple(args.methods))
    setup = audit_setup(args)
    run = run_audit(setup, rows_path(args.data), args.out, params, options=options,
                    cluster=Cluster(args.scheduler, args.workers, progress=not args.quiet), blocksize=args.blocksize)
    if not args.quiet:
        s = run.summary
        minus = s["kinds"]["minus"]
        print(f"\n{s['rows']:,} rows explained ({run.executor}; {len(run.computed)} partitions computed, "
              f"{len(run.skipped)} already written) in {run.folder}/; mean SEV⁻ {minus['mean'] or float('nan'):.2f}, "
              f"unexplainable {minus['unexplainable_share']:.1%}", file=sys.stderr)
    if args.pdf:
        from ..audit import read_audit
        from ..report import write_audit_pdf
        write_audit_pdf(read_audit(run.folder), run.folder / "audit.pdf", image_renderer=args.renderer)
    return 0
