"""Cold start: CPU and wall time of a fresh process up to the first full SEV explanation of the default demo.

Each run is a new Python process that imports what the app's first request needs (streamlit, explain_core),
loads the demo model from its skops cache file, explains the first flagged test row (SEV⁻ and SEV⁺) and scores
its hypercube. Two variants, alternated in the same run:

- ``plain``: ``import skops.io`` as skops ships it — its estimator walk imports every scikit-learn package,
  torch among them (``sklearn.externals.array_api_compat.torch``);
- ``ours``: :func:`explain_core.intake.skops_policy.skops_io`, whose walk skips the packages ``all_estimators`` never
  reads (same trusted-type list, checked by tests/test_cold_start.py).

CPU time (``time.process_time``) is the figure to compare on a shared machine; wall time is shown beside it.
The browser test (tests/test_browser.py) prints the end-to-end time a user sees, browser included.

    python bench/cold_start.py --repeats 5
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import json, sys, time
wall, cpu = time.perf_counter(), time.process_time()
if sys.argv[1] == "plain":
    import skops.io  # noqa: F401 — as skops ships it; explain_core then finds it imported
import streamlit  # noqa: F401 — the server has it loaded before the first script run
from explain_core.analysis import Parameters, demo_setup, predicted_rows, row_sev
from explain_core.sev import hypercube
setup = demo_setup()
query = setup.query(int(predicted_rows(setup)[0]))
row_sev(setup, query, Parameters())
hypercube(setup.model, setup.dataset.layout, query, setup.reference_for(query))
print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                  "torch": "torch" in sys.modules}))
"""


def run(variant: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, variant], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per variant (alternated)")
    args = parser.parse_args()
    run("ours")  # trains and caches the demo model once (not timed)
    results: dict[str, list[dict]] = {"plain": [], "ours": []}
    for _ in range(args.repeats):
        for variant in results:
            results[variant].append(run(variant))
    print(f"fresh process → first full SEV explanation of the COMPAS demo, median of {args.repeats} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    medians = {}
    for variant, runs in results.items():
        cpu = statistics.median(r["cpu"] for r in runs)
        wall = statistics.median(r["wall"] for r in runs)
        medians[variant] = cpu
        print(f"  {variant:5s}: {cpu:.2f} s CPU, {wall:.2f} s wall, torch imported: "
              f"{sorted({r['torch'] for r in runs})}")
    print(f"  CPU saved: {medians['plain'] - medians['ours']:.2f} s ({medians['plain'] / medians['ours']:.2f}×)")


if __name__ == "__main__":
    main()
