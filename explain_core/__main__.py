"""Command line (``explain-core`` once installed, or ``python -m explain_core``): ``app`` starts the dashboard,
``report`` writes one PDF report per row and an index CSV, ``audit`` explains every row of a table of any size on a
Dask cluster (:mod:`explain_core.audit_cli`).

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
import os
import re
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from ._version import __version__

ROW_KEYWORDS = {"predicted-positive": 1, "predicted-negative": 0}


class UsageError(Exception):
    """A bad command-line argument: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message (status 2) instead of the usage block."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from .report import RENDERERS, SECTIONS

    parser = _Parser(prog="explain-core", description="Explanations of single model decisions (SEV, LENS, linear).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    commands.add_parser("app", help="start the dashboard in a browser (streamlit run app.py)", add_help=False,
                        description="Start the dashboard; other arguments go to streamlit run (e.g. --server.port).")
    report = commands.add_parser(
        "report", help="write one PDF report per row and an index CSV",
        description="Write one A4 PDF report per row (SEV, LENS, linear explanations, agreement) and index.csv "
                    "with the headline numbers.")
    what = report.add_argument_group("data, model and rows")
    what.add_argument("--data", required=True,
                      help="a bundled dataset (name or its file under data/) or a CSV/Parquet file")
    add_model_argument(what)
    what.add_argument("--rows", required=True,
                      help="row positions in the data, e.g. 3,17,42 or 10-20, or predicted-positive / "
                           "predicted-negative (test rows the model predicts that class)")
    what.add_argument("--limit", type=int, default=None, help="at most this many rows (the first ones)")
    what.add_argument("--out", default="reports", help="output folder (created; default: reports)")
    add_file_arguments(what)

    knobs = report.add_argument_group("parameters (defaults as in the app)")
    add_sev_lens_arguments(knobs)
    knobs.add_argument("--sigma", type=float, default=None, help="linear: concentration σ")
    knobs.add_argument("-k", type=int, default=None, help="linear: sparsity budget k")
    knobs.add_argument("-m", type=int, default=None, help="linear: samples m")
    knobs.add_argument("--linear-method", choices=("iht", "exact", "both"), default=None)
    knobs.add_argument("--time-limit", type=float, default=None, help="exact linear fit time limit (s)")
    add_baseline_arguments(knobs)

    out = report.add_argument_group("output")
    out.add_argument("--sections", default=",".join(SECTIONS),
                     help=f"comma list of sections (default: all of {','.join(SECTIONS)})")
    out.add_argument("--renderer", choices=RENDERERS, default="auto",
                     help="figures: plotly static export (needs Chromium), matplotlib, or auto")
    out.add_argument("--scheduler", help="fan the rows out over Dask: 'local' (a LocalCluster) or a scheduler's "
                                         "address (tcp://host:8786); default: this process")
    out.add_argument("--workers", type=int, help="workers of the LocalCluster (default: one per core)")
    out.add_argument("--quiet", action="store_true", help="no progress bar")
    out.add_argument("--debug", action="store_true", help="show tracebacks")
    from .audit_cli import add_audit_parser
    add_audit_parser(commands)
    return parser


def add_model_argument(group) -> None:
    """--model (shared by ``report`` and ``audit``)."""
    from .training import DEMO_KINDS

    group.add_argument("--model", required=True,
                       help=f"a demo model kind ({', '.join(DEMO_KINDS)}) or a model file (.skops, .onnx, XGBoost "
                            ".json/.ubj, LightGBM .txt, CatBoost .cbm; .joblib/.pkl with --trusted)")


def add_file_arguments(group) -> None:
    """How to read a data file and a model file (shared by ``report`` and ``audit``)."""
    group.add_argument("--target", help="target column of a data file that is not bundled")
    group.add_argument("--positive-class", help="the positive class of that target (as written in the file)")
    group.add_argument("--task", choices=("classification", "regression"), help="task of that target")
    group.add_argument("--by-order", action="store_true",
                       help="the model file records no column names: its inputs are the data's feature columns in order")
    group.add_argument("--trusted", action="store_true",
                       help="allow pickle model files and unvetted skops types (only for files you trust)")
    group.add_argument("--model-seed", type=int, default=0, help="seed of a demo model and its train/test split")
    group.add_argument("--restricted", default="", help="comma list of features held fixed (SEV®)")


def add_sev_lens_arguments(group) -> None:
    group.add_argument("--max-depth", type=int, default=None, help="SEV search depth")
    group.add_argument("--tau", type=float, default=None, help="LENS sufficiency threshold τ")
    group.add_argument("--alpha", type=float, default=None, help="LENS test level α (default: exact mode)")
    group.add_argument("--lens-direction", choices=("r2i", "i2r"), default=None, help="LENS context")
    group.add_argument("--lens-references", type=int, default=None, help="LENS reference rows")
    group.add_argument("--lens-max-size", type=int, default=None, help="largest LENS factor")


def add_baseline_arguments(group) -> None:
    group.add_argument("--lime-samples", type=int, default=None)
    group.add_argument("--shap-background", type=int, default=None)
    group.add_argument("--seed", type=int, default=None, help="seed of every random draw")


# ---------------------------------------------------------------------------------------------------
# Arguments → objects

def parse_rows(text: str) -> list[int] | str:
    """``3,17,42`` / ``10-20`` (inclusive) → positions, or a keyword of :data:`ROW_KEYWORDS`."""
    text = text.strip()
    if text in ROW_KEYWORDS:
        return text
    rows: list[int] = []
    for token in filter(None, (t.strip() for t in text.split(","))):
        span = re.fullmatch(r"(\d+)\s*-\s*(\d+)", token)
        if span:
            a, b = int(span.group(1)), int(span.group(2))
            if b < a:
                raise UsageError(f"--rows: the range {token!r} runs backwards; write it as {b}-{a}.")
            rows.extend(range(a, b + 1))
        elif re.fullmatch(r"\d+", token):
            rows.append(int(token))
        else:
            raise UsageError(f"--rows must be row positions such as 3,17,42 or 10-20, or one of "
                             f"{', '.join(ROW_KEYWORDS)}; {token!r} is neither.")
    if not rows:
        raise UsageError("--rows is empty; give row positions such as 3,17,42, or predicted-positive.")
    return list(dict.fromkeys(rows))


def _bundled(data: str) -> str | None:
    """The bundled dataset ``data`` names (its name, or a copy of its file such as ``data/compas.csv``), or None."""
    from .data import bundled_file, demo_cards

    cards = demo_cards()
    if data in cards:
        return data
    path = Path(data)
    if path.is_file():
        for name, card in cards.items():
            if path.name == card["file"] and path.read_bytes() == bundled_file(card["file"]).read_bytes():
                return name
    return None


def load_setup(args):
    """The :class:`~explain_core.analysis.Setup` the arguments describe (bad ones raise IntakeError / UsageError)."""
    from .data import demo_names, load_demo, make_dataset
    from .tables import read_table

    name = _bundled(args.data)
    if name is None:
        path = Path(args.data)
        if not path.exists():
            raise UsageError(f"Data file {args.data!r} not found; pass a CSV or Parquet file, or a bundled dataset: "
                             f"{', '.join(demo_names())}.")
        if not path.is_file():
            raise UsageError(f"--data {args.data!r} is a folder; pass a CSV or Parquet file.")
        if not args.target:
            raise UsageError(f"{path.name} is not a bundled dataset, so --target must name its target column.")
        frame = read_table(path)
        dataset = make_dataset(frame, args.target, task=args.task, positive_class=_positive(args, frame),
                               name=path.stem)
    else:
        dataset = load_demo(name)
    return setup_of(args, dataset, bundled=name is not None)


def setup_of(args, dataset, *, bundled: bool):
    """A setup of ``dataset`` with ``--model`` (a demo kind: the cached demo model of a bundled dataset, or one
    trained here; or a model file) and ``--restricted``."""
    from .setup import demo_setup, file_setup, trained_setup
    from .training import DEMO_KINDS

    restricted = [r.strip() for r in args.restricted.split(",") if r.strip()]
    if args.model in DEMO_KINDS:
        if bundled:
            setup = demo_setup(dataset.name, args.model, seed=args.model_seed)
            return setup.with_restricted(restricted) if restricted else setup
        return trained_setup(dataset, args.model, seed=args.model_seed, restricted=restricted)
    path = Path(args.model)
    if not path.suffix:
        raise UsageError(f"Unknown model {args.model!r}: pass a demo model kind ({', '.join(DEMO_KINDS)}) or a model "
                         "file (.skops, .onnx; .joblib/.pkl with --trusted).")
    if not path.is_file():
        raise UsageError(f"Model file {args.model!r} not found.")
    return file_setup(dataset, path, seed=args.model_seed, trusted=args.trusted or None, restricted=restricted,
                      by_order=args.by_order)


def _positive(args, frame):
    """``--positive-class`` as the target column's type (when the column is there)."""
    if args.positive_class is None or args.target not in frame.columns:
        return args.positive_class
    return _typed(args.positive_class, frame[args.target])


def _typed(value: str, column):
    """``--positive-class`` as the target column's type (a number for a numeric column)."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(column):
        try:
            number = float(value)
            return int(number) if number.is_integer() else number
        except ValueError:
            return value
    return value


def load_params(args):
    from .setup import Parameters

    names = {"max_depth": "max_depth", "tau": "tau", "alpha": "alpha", "lens_direction": "lens_direction",
             "lens_references": "lens_references", "lens_max_size": "lens_max_size", "sigma": "sigma", "k": "k",
             "m": "m", "linear_method": "linear_method", "time_limit": "time_limit", "lime_samples": "lime_samples",
             "shap_background": "shap_background", "seed": "seed"}
    given = {field: getattr(args, arg) for arg, field in names.items() if getattr(args, arg, None) is not None}
    return Parameters(**given)


def choose_rows(setup, rows, limit: int | None) -> list[int]:
    from .analysis import predicted_rows
    from .errors import IntakeError

    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1, not {limit}.")
    if isinstance(rows, str):
        chosen = [int(r) for r in predicted_rows(setup, label=ROW_KEYWORDS[rows])]
        if not chosen:
            raise UsageError(f"No test rows are {rows.replace('-', ' ')}; nothing to report.")
    else:
        n = len(setup.dataset.features)
        bad = [r for r in rows if not 0 <= r < n]
        if bad:
            raise IntakeError(f"Row {bad[0]} is not in the data; choose rows between 0 and {n - 1}.")
        chosen = list(rows)
    return chosen[:limit] if limit is not None else chosen


# ---------------------------------------------------------------------------------------------------
# Progress

class _Counter:
    """A plain stderr counter when tqdm is not installed."""

    def __init__(self, total: int, disable: bool):
        self.total, self.disable, self.done = total, disable, 0

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.disable:
            end = "\n" if self.done >= self.total else ""
            print(f"\rreports: {self.done}/{self.total}", end=end, file=sys.stderr, flush=True)

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, disable: bool):
    try:
        from tqdm import tqdm
    except ImportError:
        return _Counter(total, disable)
    return tqdm(total=total, desc="reports", unit="row", file=sys.stderr, disable=disable, dynamic_ncols=True)


# ---------------------------------------------------------------------------------------------------

def run_report(args) -> int:
    from .report import batch_reports, check_sections, resolve_renderer

    rows = parse_rows(args.rows)
    sections = check_sections(s.strip() for s in args.sections.split(",") if s.strip())
    params = load_params(args)
    renderer = resolve_renderer(args.renderer)
    if args.renderer == "plotly" and renderer == "plotly":
        from .report import plotly_export_available
        if not plotly_export_available():
            raise UsageError("--renderer plotly needs kaleido and Chrome/Chromium; use --renderer matplotlib or auto.")
    setup = load_setup(args)
    chosen = choose_rows(setup, rows, args.limit)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out!r} is a file; pass a folder.")
    bar = progress_bar(len(chosen), args.quiet)
    done = [0]

    def progress(i: int, total: int) -> None:
        bar.update(i - done[0])
        done[0] = i

    try:
        index_path, index = batch_reports(setup, chosen, params, out, sections=sections, image_renderer=args.renderer,
                                          progress=progress, scheduler=args.scheduler, workers=args.workers)
    finally:
        bar.close()
    failed = [r for r in index if r.get("error")]
    written = len(index) - len(failed)
    if not args.quiet:
        print(f"{written} report{'s' if written != 1 else ''} in {out}/, index: {index_path}", file=sys.stderr)
    for r in failed:
        print(f"row {r['row']}: {r['error']}", file=sys.stderr)
    return 1 if failed else 0


def app_file() -> Path:
    """The dashboard's ``app.py``: beside this package in a source checkout (or an editable install), else where
    ``pip install`` put it (``<prefix>/share/explain-explorer``)."""
    import sysconfig

    installed = Path(sysconfig.get_path("data")) / "share" / "explain-explorer"
    for folder in (Path(__file__).resolve().parent.parent, installed):
        if (folder / "app.py").is_file() and (folder / "pages").is_dir():
            return folder / "app.py"
    raise UsageError("The dashboard's app.py was not found; reinstall with `pip install explain-explorer[app]`, or "
                     "run `streamlit run app.py` in a source checkout.")


def run_app(extra: Sequence[str]) -> NoReturn:
    """``streamlit run app.py`` on the installed dashboard, in its folder (Streamlit reads its
    ``.streamlit/config.toml`` from the working folder); other arguments go to Streamlit. The command becomes
    the Streamlit server (exec), so a signal to it (Ctrl-C, a service manager's stop) reaches the server."""
    app = app_file()
    os.chdir(app.parent)
    os.execv(sys.executable, [sys.executable, "-m", "streamlit", "run", str(app), *extra])


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["app"]:
        try:
            return run_app(argv[1:])
        except UsageError as exc:
            print(f"error: {_one_line(exc)}", file=sys.stderr)
            return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    from .errors import ExplainError
    from .loading import UntrustedModelError

    try:
        if args.command == "report":
            return run_report(args)
        if args.command == "audit":
            from .audit_cli import run_audit_command
            return run_audit_command(args)
        parser.error(f"unknown command {args.command!r}")
    except (UsageError, ExplainError) as exc:
        if args.debug:
            raise
        hint = " From the command line: add --trusted." if isinstance(exc, UntrustedModelError) else ""
        print(f"error: {_one_line(exc)}{hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 — no traceback for a user, unless asked for
        if args.debug:
            raise
        print(f"error: {type(exc).__name__}: {_one_line(exc)} (run with --debug for the traceback)", file=sys.stderr)
        return 1
    return 0


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


if __name__ == "__main__":
    sys.exit(main())
