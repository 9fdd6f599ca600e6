"""``explain-core report``: one PDF report per row and an index CSV (:func:`~explain_core.report.batch_reports`)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from ..errors import UsageError
from .common import add_file_arguments, add_method_arguments, add_model_argument, load_params, load_setup


def row_keywords() -> dict[str, int]:
    """The words ``--rows`` takes for test rows by predicted label (:data:`~explain_core.analysis.ROW_CHOICES`)."""
    from ..analysis import ROW_CHOICES

    return {word: label for word, label in ROW_CHOICES.items() if label is not None}


def add_report_parser(commands) -> None:
    from ..report import RENDERERS, report_sections

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
    add_method_arguments(knobs)

    out = report.add_argument_group("output")
    out.add_argument("--sections", default=None,
                     help=f"comma list of sections (default: all of {','.join(report_sections())})")
    out.add_argument("--renderer", choices=RENDERERS, default="auto",
                     help="figures: plotly static export (needs Chromium), matplotlib, or auto")
    out.add_argument("--scheduler", help="fan the rows out over Dask: 'local' (a LocalCluster) or a scheduler's "
                                         "address (tcp://host:8786); default: this process")
    out.add_argument("--workers", type=int, help="workers of the LocalCluster (default: one per core)")
    out.add_argument("--json", action="store_true",
                     help="also each row's results as JSON beside its PDF (<pdf>.sev.json, .lens.json, "
                          ".linear.json, …: the app's JSON download format, read back with from_json)")
    out.add_argument("--quiet", action="store_true", help="no progress bar")
    out.add_argument("--debug", action="store_true", help="show tracebacks")


def parse_rows(text: str) -> list[int] | str:
    """``3,17,42`` / ``10-20`` (inclusive) → positions, or a keyword of :func:`row_keywords`."""
    text = text.strip()
    keywords = row_keywords()
    if text in keywords:
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
                             f"{', '.join(keywords)}; {token!r} is neither.")
    if not rows:
        raise UsageError("--rows is empty; give row positions such as 3,17,42, or predicted-positive.")
    return list(dict.fromkeys(rows))


def choose_rows(setup, rows, limit: int | None) -> list[int]:
    from ..analysis import predicted_rows
    from ..errors import IntakeError

    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1, not {limit}.")
    if isinstance(rows, str):
        chosen = [int(r) for r in predicted_rows(setup, label=row_keywords()[rows])]
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
    from ..audit import Cluster
    from ..report import BatchOptions, batch_reports, check_sections, report_sections, resolve_renderer

    rows = parse_rows(args.rows)
    asked = report_sections() if args.sections is None else (s.strip() for s in args.sections.split(",") if s.strip())
    sections = check_sections(asked)
    params = load_params(args)
    renderer = resolve_renderer(args.renderer)
    if args.renderer == "plotly" and renderer == "plotly":
        from ..report import plotly_export_available
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
        index_path, index = batch_reports(setup, chosen, params, out,
                                          options=BatchOptions(sections, args.renderer, args.json), progress=progress,
                                          cluster=Cluster(args.scheduler, args.workers))
    finally:
        bar.close()
    failed = [r for r in index if r.get("error")]
    written = len(index) - len(failed)
    if not args.quiet:
        print(f"{written} report{'s' if written != 1 else ''} in {out}/, index: {index_path}", file=sys.stderr)
    for r in failed:
        print(f"row {r['row']}: {r['error']}", file=sys.stderr)
    return 1 if failed else 0
