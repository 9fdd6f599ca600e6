#!/usr/bin/env python
"""Seconds per PDF report (explain_core.report): cold, warm, and with the matplotlib figures.

One report = ``build_row_report`` (SEV, LENS, linear, LIME/SHAP for the agreement, all figures) plus
``write_pdf`` (A4 PDF with four figures), with the app's default parameters, on test rows the demo model
predicts positive. It prints:

* **setup**: importing explain_core.report and loading the demo model (once per process; not per report);
* **cold**: the first report of the process (starts kaleido's browser when the plotly export is used);
* **warm**: the median over the next ``--rows`` rows (a different row each time, so nothing is cached),
  split into computing the results and writing the PDF, with the PDF's CPU time (this process, all its threads;
  Chromium's work for the plotly export is not counted; steadier than wall time on a shared machine);
* **matplotlib**: the same rows with the plotly image path disabled (``image_renderer="matplotlib"``).

Target (issue): ≤ 3 s per report warm. A verdict line ends the run.

Run from the repository root:  python bench/report_speed.py [--dataset compas] [--model gbdt] [--rows 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 3.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="compas", help="bundled dataset (default compas)")
    parser.add_argument("--model", default="gbdt", help="demo model kind (default gbdt)")
    parser.add_argument("--rows", type=int, default=5, help="rows for the warm medians (default 5)")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    t0 = time.perf_counter()
    from explain_core import report as rep
    from explain_core.analysis import Parameters, demo_setup, predicted_rows
    imported = time.perf_counter() - t0
    t0 = time.perf_counter()
    setup = demo_setup(args.dataset, args.model)
    loaded = time.perf_counter() - t0
    params = Parameters()
    rows = [int(r) for r in predicted_rows(setup)[: 1 + 2 * args.rows]]
    if len(rows) < 1 + 2 * args.rows:
        print(f"only {len(rows)} flagged test rows; lower --rows", file=sys.stderr)
        return 2
    renderer = rep.resolve_renderer("auto")
    print(f"{args.dataset} · {setup.model.name} · {len(setup.dataset.groups)} features · default parameters "
          f"(m = {params.m}, {params.lens_references} LENS references, {params.lime_samples} LIME samples)")
    drawn = (f"plotly static export (kaleido, {rep.find_chromium()})" if renderer == "plotly"
             else "matplotlib (no plotly export here)")
    print(f"figures: {drawn}")
    print(f"setup: import {imported:.2f} s, demo model and reference {loaded:.2f} s (once per process)\n")

    folder = Path(tempfile.mkdtemp(prefix="report-speed-"))

    def one(row: int, how: str) -> tuple[float, float, float, list]:
        t = time.perf_counter()
        report = rep.build_row_report(rep.RowResults(setup, row, params))
        built = time.perf_counter() - t
        used: list = []
        t, cpu = time.perf_counter(), time.process_time()
        rep.write_pdf(report, folder / f"{how}_{row}.pdf", image_renderer=how, renderers_used=used)
        return built, time.perf_counter() - t, time.process_time() - cpu, used

    cold = one(rows[0], "auto")
    warm = [one(r, "auto") for r in rows[1:1 + args.rows]]
    mpl = [one(r, "matplotlib") for r in rows[1 + args.rows:1 + 2 * args.rows]]

    def line(name: str, runs: list) -> float:
        total = [b + w for b, w, _, _ in runs]
        med = statistics.median(total)
        built, written, cpu = (statistics.median(r[i] for r in runs) for i in range(3))
        print(f"{name:<12} median {med:5.2f} s per report  (compute {built:.2f} s + PDF {written:.2f} s, "
              f"its CPU {cpu:.2f} s; min {min(total):.2f}, max {max(total):.2f}; "
              f"{len(runs)} row{'s' if len(runs) > 1 else ''}; "
              f"figures by {', '.join(sorted({u for *_, us in runs for u in us}))})")
        return med

    line("cold", [cold])
    warm_median = line("warm", warm)
    mpl_median = line("matplotlib", mpl)
    ok = warm_median <= TARGET_S
    print(f"\ntarget ≤ {TARGET_S:g} s per report warm: {'PASS' if ok else 'FAIL'} ({warm_median:.2f} s; "
          f"matplotlib path {mpl_median:.2f} s {'≤' if mpl_median <= TARGET_S else '>'} {TARGET_S:g} s)")
    print(f"PDFs in {folder}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
