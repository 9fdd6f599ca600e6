"""Command line (``explain-core`` once installed, or ``python -m explain_core``): ``app`` starts the dashboard,
``report`` writes one PDF report per row and an index CSV, ``audit`` explains every row of a table of any size on a
Dask cluster (:mod:`explain_core.cli.audit`).

Examples::

    explain-core app                                   # the dashboard (streamlit run app.py)

    python -m explain_core report --data data/compas.csv --model gbdt --rows 3,17,42 --out reports/
    python -m explain_core report --data compas --model l2_lr --rows predicted-positive --limit 50 --out reports/
    python -m explain_core report --data mydata.csv --target label --model model.skops --rows 0-9 --out reports/

``--data`` is a bundled dataset (its name, or its file under ``data/``) or any CSV/Parquet file (then
``--target`` names the target column). ``--model`` is a demo model kind (trained on first use and cached, for
a bundled dataset; trained here for another file) or a model file: ``.skops`` or ``.onnx``, and pickles
(``.joblib``/``.pkl``) only with ``--trusted``. A bad argument exits with status 2 and a one-line message;
rows whose explanation fails are listed in the index (``error`` column) and the exit status is 1.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .._version import __version__
from ..errors import UsageError, one_line
from .app import run_app
from .audit import add_audit_parser, run_audit_command
from .report import add_report_parser, run_report


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message (status 2) instead of the usage block."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="explain-core", description="Explanations of single model decisions (SEV, LENS, linear).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    commands.add_parser("app", help="start the dashboard in a browser (streamlit run app.py)", add_help=False,
                        description="Start the dashboard; other arguments go to streamlit run (e.g. --server.port).")
    add_report_parser(commands)
    add_audit_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["app"]:
        try:
            return run_app(argv[1:])
        except UsageError as exc:
            print(f"error: {one_line(exc, None)}", file=sys.stderr)
            return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    from ..errors import ExplainError
    from ..errors import UntrustedModelError

    try:
        if args.command == "report":
            return run_report(args)
        if args.command == "audit":
            return run_audit_command(args)
        parser.error(f"unknown command {args.command!r}")
    except (UsageError, ExplainError) as exc:
        if args.debug:
            raise
        hint = " From the command line: add --trusted." if isinstance(exc, UntrustedModelError) else ""
        print(f"error: {one_line(exc, None)}{hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 — no traceback for a user, unless asked for
        if args.debug:
            raise
        print(f"error: {type(exc).__name__}: {one_line(exc, None)} (run with --debug for the traceback)",
              file=sys.stderr)
        return 1
    return 0
