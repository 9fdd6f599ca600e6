#!/usr/bin/env python
"""The work behind each page on wide data (issue 52 §5): digits 3 vs 8 (64 pixels, scikit-learn's bundled set) with
an MLP uploaded as an analyst would (a .skops file, loaded and run in its sandboxed worker), and breast cancer;
``--model onnx-forest``: a random forest exported by skl2onnx with one input per column, uploaded as .onnx.

For one row the model predicts positive, it times what each page computes with the app's default parameters, each
figure in seconds with the model rows the sandboxed worker scored and the largest single call it was sent:

* **SEV**: SEV⁻ and SEV⁺ of the row (``row_sev``; the breadth-first search within its budget of model rows, then
  the bracket), and the same with the budget before issue 52 (none: the layer cap alone);
* **LENS**: what the page does by itself (the search's plan in model rows, and a first pass within 200,000 rows),
  then the whole layered search (``row_lens``), which on wide data runs only when its button is clicked;
* **Compare**: LIME/SHAP + the linear explanation (+ LENS when it does not wait for its button), SEV read from the
  SEV page's cache as the app does (opened first, the page also pays the SEV page's line);
* **Report**: ``build_row_report`` (the page) and ``write_pdf`` (its PDF, matplotlib figures) of the sections the page
  builds without a click (LENS and Agreement wait with LENS), reading the other pages' cached results from its
  :class:`~explain_core.report.RowResults` as the page does, and what the counterfactual and dependence sections
  cost alone (each beside the cached SEV section, as in the page: without it the dependence section would rank the
  features by mean |SHAP| over 100 rows instead of plotting SEV's first one). ``--report-only`` skips the lines the
  Report does not read.

Targets (issue 52): every page ≤ 15 s, the PDF ≤ 20 s on a quiet 2-core machine. The machine here is shared:
the load average is printed beside the figures; compare figures of one run only.

    python bench/wide_pages.py [--case digits|cancer] [--model mlp|onnx-forest] [--hidden 64] [--trees 100]
                               [--report-only]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def case_frame(name: str):
    """(frame, target column) of a scikit-learn bundled case: digits 3 vs 8, or breast cancer."""
    import pandas as pd
    from sklearn.datasets import load_breast_cancer, load_digits

    if name == "digits":
        bunch = load_digits()
        keep = (bunch.target == 3) | (bunch.target == 8)
        frame = pd.DataFrame(bunch.data[keep], columns=[f"pixel_{i}" for i in range(64)])
        frame["digit"] = (bunch.target[keep] == 8).astype(int)
        return frame, "digit"
    bunch = load_breast_cancer(as_frame=True)
    frame = bunch.frame.rename(columns=lambda c: c.replace(" ", "_"))
    return frame, "target"


def mlp_upload(X, y, name: str, hidden: int):
    """An MLP Pipeline trained here and saved as .skops: (bytes, file name, upload choices)."""
    import skops.io as sio
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from explain_core.setup import UploadChoices

    mlp = make_pipeline(StandardScaler(), MLPClassifier((hidden,), max_iter=500, random_state=0))
    blob = sio.dumps(mlp.fit(X, y))
    return blob, f"{name}_mlp.skops", UploadChoices(trusted_types=sio.get_untrusted_types(data=blob))


def onnx_forest_upload(X, y, name: str, trees: int):
    """A random forest (``trees`` trees, seed 0, scikit-learn's other defaults: fully grown, √p features per split)
    behind a ColumnTransformer that passes the DataFrame's columns through, exported from the frame by skl2onnx's
    ``to_onnx`` as the tests' per-column exports are (one float input per column, no ZipMap): (bytes, file name,
    upload choices)."""
    import numpy as np
    from skl2onnx import to_onnx
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import Pipeline

    from explain_core.setup import UploadChoices

    forest = Pipeline([("columns", ColumnTransformer([("num", "passthrough", list(X.columns))])),
                       ("forest", RandomForestClassifier(n_estimators=trees, random_state=0))]).fit(X, y)
    graph = to_onnx(forest, X.iloc[:1].astype(np.float32), options={"zipmap": False})
    return graph.SerializeToString(), f"{name}_forest.onnx", UploadChoices()


def uploaded_setup(name: str, model: str, size: int):
    """The case with a model trained here, saved as an analyst would and loaded as an upload (sandboxed): an MLP
    (``size`` hidden units) as .skops, or a random forest (``size`` trees) as per-column .onnx."""
    from explain_core import make_dataset
    from explain_core.setup import make_setup, model_from_upload

    frame, target = case_frame(name)
    data = make_dataset(frame, target)
    X, y = frame.drop(columns=[target]), frame[target]
    blob, filename, choices = (mlp_upload(X, y, name, size) if model == "mlp" else onnx_forest_upload(X, y, name, size))
    return make_setup(data, model_from_upload(data, blob, filename, choices))


class Meter:
    """Rows sent to the sandboxed worker (in all, and the most in one call) while a block runs."""

    def __init__(self):
        from explain_core.intake.sandbox.client import Worker

        self.rows, self.largest, real = 0, 0, Worker.call

        def counted(worker, request, **kwargs):
            if request.get("op") == "call":
                self.rows += len(request["X"])
                self.largest = max(self.largest, len(request["X"]))
            return real(worker, request, **kwargs)

        Worker.call = counted

    @contextmanager
    def timed(self, what: str, target: float | None = None):
        self.rows, self.largest = 0, 0
        start = time.perf_counter()
        yield
        seconds = time.perf_counter() - start
        verdict = "" if target is None else f"  (target ≤ {target:g} s: {'PASS' if seconds <= target else 'FAIL'})"
        print(f"{what:<44} {seconds:6.2f} s  {self.rows:>10,} model rows, largest call {self.largest:>8,}  "
              f"[{load()}]{verdict}")


@contextmanager
def objects_vertices():
    """The search's vertices made as rows of objects and inferred, as before issue 52's Report work (the anchor)."""
    import pandas as pd

    from explain_core.references.search import _Mixer

    def raw(self, qi, ids):
        data = {}
        for c, g in zip(self.layout.columns, self.layout.column_group):
            values = self.queries[c].to_numpy(dtype=object)[self.query_of[qi]]
            for t in range(ids.shape[1]):
                hit = self.group_of[ids[:, t]] == g
                values[hit] = self.values[c][self.first[qi[hit]] + ids[hit, t]]
            data[c] = values
        return pd.DataFrame(data).infer_objects()

    numeric, _Mixer.raw = _Mixer.raw, raw
    try:
        yield
    finally:
        _Mixer.raw = numeric


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", default="digits", choices=("digits", "cancer"))
    parser.add_argument("--model", default="mlp", choices=("mlp", "onnx-forest"),
                        help="an MLP uploaded as .skops (default), or a random forest as per-column .onnx")
    parser.add_argument("--hidden", type=int, default=64, help="hidden units of the MLP (default 64)")
    parser.add_argument("--trees", type=int, default=100, help="trees of the ONNX forest (default 100)")
    parser.add_argument("--report-only", action="store_true",
                        help="only what the Report page reads from the other pages' caches, then the Report lines")
    return parser.parse_args()


def main() -> int:
    args = arguments()

    from dataclasses import replace

    from explain_core import report as rep
    from explain_core.analysis import (Parameters, agreement, predicted_rows, row_baselines, row_lens,
                                       row_lens_plan, row_lens_search, row_linear, row_sev)
    from explain_core.report import report_sections

    AUTO_ROWS = 200_000  # ui/lens_runs.py: a longer LENS search waits for its button

    size = args.hidden if args.model == "mlp" else args.trees
    setup = uploaded_setup(args.case, args.model, size)
    row = int(predicted_rows(setup)[0])
    query = setup.dataset.features.iloc[[row]]
    params = Parameters()
    kind = f"MLP ({size} hidden) .skops" if args.model == "mlp" else f"random forest ({size} trees) per-column .onnx"
    print(f"{args.case} · {kind} uploaded, sandboxed · {len(setup.dataset.groups)} features · "
          f"row {row} · default parameters [{load()}]")
    meter = Meter()
    with meter.timed("SEV page: SEV⁻ and SEV⁺", 15):
        ex = row_sev(setup, query, params)
    print(f"    SEV⁻ {ex.minus.shown} ({ex.minus.status}), SEV⁺ {ex.plus.shown} ({ex.plus.status})")
    if not args.report_only:
        with meter.timed("SEV, no row budget (the layer cap alone)"):
            old = row_sev(setup, query, replace(params, sev_budget_rows=20_000_000))
        print(f"    SEV⁻ {old.minus.shown} ({old.minus.status}), SEV⁺ {old.plus.shown} ({old.plus.status})")
    with meter.timed("LENS page: the plan and a first pass", 15):
        plan = row_lens_plan(setup, query, params)
        first = row_lens_search(setup, query, replace(params, lens_budget_rows=AUTO_ROWS))
    waits = plan.rows > AUTO_ROWS and not first.result.factors
    print(f"    plan: at most {plan.rows:,} model rows ({plan.stop}); "
          + ("the search waits for its button" if waits else "the page runs it"))
    if not args.report_only or not waits:
        with meter.timed("LENS: the whole search (after the click)"):
            lens = row_lens(setup, query, params)
        print(f"    {lens.note[:150]}")
    with meter.timed("Compare page: LIME/SHAP, linear (+ LENS), SEV read from the SEV page's cache", 15):
        base, lin = row_baselines(setup, query, params), row_linear(setup, query, params)  # as ui/shared.sev_now
        # reads the SEV page's result (st.cache_data): a Compare page opened first also pays the SEV page's line
        agreement(setup.dataset.group_names, sev=ex, lens=None if waits else lens.factors, linear=lin,
                  baselines=base)
    sections = [s for s in report_sections() if not (waits and s in ("lens", "agreement"))]
    cached = {"sev": ex, "baselines": base, "linear": lin, **({} if waits else {"lens": lens})}  # the pages' caches
    with meter.timed(f"Report page: {len(sections)} sections from the pages' cache", 15):
        report = rep.build_row_report(rep.RowResults(setup, row, params, supply=cached), sections)
    with meter.timed("Report: its PDF (matplotlib figures)", 20):
        rep.write_pdf(report, Path(tempfile.mkdtemp(prefix="wide-pages-")) / "row.pdf", image_renderer="matplotlib")
    parts = {}
    for part in ("counterfactuals", "dependence"):  # with the SEV section (cached): dependence plots its first feature
        start = time.perf_counter()
        rep.build_row_report(rep.RowResults(setup, row, params, supply=cached), ["sev", part])
        parts[part] = time.perf_counter() - start
    print("    of which " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()) + f" [{load()}]")
    with meter.timed("counterfactuals, the vertices as objects (before)"), objects_vertices():
        start = time.perf_counter()
        rep.build_row_report(rep.RowResults(setup, row, params, supply=cached), ["sev", "counterfactuals"])
    print(f"    numeric vertices / objects: {parts['counterfactuals'] / (time.perf_counter() - start):.2f} [{load()}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
