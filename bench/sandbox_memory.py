"""Does memory come back after visitors with uploaded models leave? (issue 25: 8 sessions, 289 MB idle → 440 MB
90 s after they left, before the sandbox)

Starts ``streamlit run app.py`` (``server.disconnectedSessionTTL`` = 5 s, ``EXPLAIN_MAX_MODEL_IDLE_SECONDS`` = 20).
One visitor walks the whole path (uploads a model, opens the SEV page) and leaves: the server's resident memory
(RSS) once it is gone is the idle level, with the modules that path imports loaded once for the process's life.
Then rounds of 8 visitors at once: each uploads its own model file (the COMPAS GBDT as .skops, each copy with one
more tree, so every visitor of every round has a different file and sandboxed worker), loads it, opens the SEV page
and leaves. Per round: the server's RSS while they are there, and 90 s after they left (one more visitor connects
first: Streamlit drops expired sessions on the next write to its session store). Target: the server back within
100 MB of idle after every round, no worker left; a second round shows whether anything grows per visitor.

    python bench/sandbox_memory.py [--visitors 8] [--rounds 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from session_memory import CHROMIUM_ARGS, TTL_S, rss_mb, served, wait_idle  # noqa: E402

IDLE_S = 20


def _processes() -> list[tuple[int, int, bytes]]:
    """(pid, parent pid, command line) of every process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            found.append((int(entry.name), ppid, (entry / "cmdline").read_bytes()))
        except (OSError, IndexError, ValueError):
            continue
    return found


def workers_of(pid: int) -> list[int]:
    """The server's sandboxed model workers: its children running the worker's boot code, and the children of its
    zygote (explain_core.intake.sandbox.zygote), which forks them."""
    processes = _processes()
    zygotes = {p for p, ppid, command in processes if ppid == pid and b"sandbox.zygote" in command}
    return [p for p, ppid, command in processes
            if (ppid == pid and b"explain_core.intake.sandbox.worker" in command) or ppid in zygotes]


def zygote_mb(pid: int) -> float:
    """The resident memory of the server's zygote (0 when it has none)."""
    return sum(rss_mb(p) for p, ppid, command in _processes() if ppid == pid and b"sandbox.zygote" in command)


def model_files(folder: Path, visitors: int) -> list[Path]:
    import skops.io as sio
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    from explain_core.analysis import demo_setup

    setup = demo_setup("compas", "gbdt")
    pipe, data = setup.model.estimator, setup.dataset
    paths = []
    step, final = pipe.steps[-1]
    for seed in range(visitors):  # one more tree each: eight different files
        model = clone(pipe).set_params(**{f"{step}__n_estimators": final.n_estimators + seed})
        model = Pipeline(model.steps).fit(data.features.iloc[setup.train_rows], data.y[setup.train_rows])
        paths.append(folder / f"gbdt-{seed}.skops")
        paths[-1].write_bytes(sio.dumps(model))
    return paths


def visitor(url: str, path: Path) -> None:
    """One visitor in its own browser (Playwright's sync API belongs to the thread that started it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        _visit(browser.new_context(), url, path)
        browser.close()


def _visit(context, url: str, path: Path) -> None:
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(url)
    wait_idle(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Data & model").click()
    wait_idle(page)
    page.locator(".st-key-dm_model_source").get_by_text("Upload a model file").click()
    wait_idle(page)
    page.locator('.st-key-dm_model_file input[type="file"]').set_input_files(files=[str(path)])
    wait_idle(page)
    page.locator(".st-key-dm_model_positive input").fill("1")
    page.locator(".st-key-dm_load_model button").first.click()
    wait_idle(page)
    page.locator(".st-key-dm_use button").first.click()
    wait_idle(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="SEV").click()
    wait_idle(page)
    page.close(run_before_unload=True)
    context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visitors", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of visitors, each with new model files")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="explain-bench-"))
    paths = model_files(folder, 1 + args.visitors * args.rounds)
    env = {"EXPLAIN_CACHE_DIR": str(folder), "EXPLAIN_MAX_MODEL_IDLE_SECONDS": str(IDLE_S)}
    with served(env) as (server, url), sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        first = rss_after(server, browser, url, paths[:1], settle=TTL_S + IDLE_S + 5)  # one visitor, then gone
        rounds = [rss_after(server, browser, url, paths[1 + r * args.visitors:1 + (r + 1) * args.visitors])
                  for r in range(args.rounds)]
        browser.close()
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; rounds of {args.visitors} visitors, each "
          f"its own .skops model; session TTL {TTL_S} s, model worker idle {IDLE_S} s")
    idle = first[2]
    print(f"server RSS idle after one visitor's whole path (upload, SEV page) and its leaving: {idle:.0f} MB")
    for r, (busy, busy_workers, after, after_workers) in enumerate(rounds, 1):
        print(f"round {r}: with the visitors there: server {busy:.0f} MB (+{busy - idle:.0f}), {busy_workers} model "
              f"workers; 90 s after they left: server {after:.0f} MB (+{after - idle:.0f}), {after_workers} workers")
    worst = max(after for _, _, after, _ in rounds)
    ok = worst - idle <= 100 and not any(workers for *_, workers in rounds)
    print(f"verdict: {'PASS' if ok else 'MISS'} (target: server within 100 MB of idle after every round, no worker "
          "left)")


def rss_after(server, browser, url: str, paths: list[Path], settle: float = 90.0) -> tuple:
    """Visitors (one thread each, all at once) with ``paths``, then ``settle`` s, a new visitor connecting (expired
    sessions are dropped on the next write to the session store) and one period of the app's memory housekeeping:
    (server MB with them, their workers, server MB after, workers left)."""
    threads = [threading.Thread(target=visitor, args=(url, path)) for path in paths]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    busy, busy_workers = rss_mb(server.pid), len(workers_of(server.pid))
    time.sleep(settle)
    context = browser.new_context()
    context.new_page().goto(url)
    time.sleep(35)
    context.close()
    print(f"zygote: {zygote_mb(server.pid):.0f} MB resident, shared by the workers it forks")
    return busy, busy_workers, rss_mb(server.pid), len(workers_of(server.pid))


if __name__ == "__main__":
    main()
