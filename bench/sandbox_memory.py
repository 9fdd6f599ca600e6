"""Does memory come back after visitors with uploaded models leave? (issue 25: 8 sessions, 289 MB idle → 440 MB
90 s after they left, before the sandbox)

Starts ``streamlit run app.py`` (``server.disconnectedSessionTTL`` = 5 s, ``EXPLAIN_MAX_MODEL_IDLE_SECONDS`` = 20),
one first visit (the idle level), then 8 visitors at once: each uploads a model file (the COMPAS GBDT as .skops,
each visitor's copy with one more tree, so 8 different files and 8 sandboxed workers), loads it, opens the
SEV page and leaves. Prints the server's resident memory (RSS) and the sum of its model workers' RSS while they
are there, and 90 s after they left (one more visitor connects first: Streamlit drops expired sessions on the next
write to its session store). Target: the server back within 100 MB of idle, no worker left.

    python bench/sandbox_memory.py [--visitors 8]
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


def workers_of(pid: int) -> list[int]:
    """The server's sandboxed model workers (its children running the worker's boot code)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"explain_core.intake.sandbox.worker" in command:
            found.append(int(entry.name))
    return found


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
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="explain-bench-"))
    paths = model_files(folder, args.visitors)
    env = {"EXPLAIN_CACHE_DIR": str(folder), "EXPLAIN_MAX_MODEL_IDLE_SECONDS": str(IDLE_S)}
    with served(env) as (server, url), sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        context = browser.new_context()
        first = context.new_page()
        first.goto(url)
        wait_idle(first)
        context.close()
        time.sleep(TTL_S + 5)
        idle = rss_mb(server.pid)
        threads = [threading.Thread(target=visitor, args=(url, path)) for path in paths]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        busy, busy_workers = rss_mb(server.pid), workers_of(server.pid)
        busy_worker_mb = sum(rss_mb(w) for w in busy_workers)
        time.sleep(90)
        context = browser.new_context()  # the next visitor: expired sessions are dropped now
        context.new_page().goto(url)
        time.sleep(35)  # one period of the app's memory housekeeping
        context.close()
        browser.close()
        after, after_workers = rss_mb(server.pid), workers_of(server.pid)
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; {args.visitors} visitors, each its own "
          f".skops model; session TTL {TTL_S} s, model worker idle {IDLE_S} s")
    print(f"server RSS idle: {idle:.0f} MB")
    print(f"with the visitors there: server {busy:.0f} MB (+{busy - idle:.0f}), {len(busy_workers)} model workers "
          f"{busy_worker_mb:.0f} MB in all")
    print(f"90 s after they left: server {after:.0f} MB (+{after - idle:.0f}), {len(after_workers)} model workers")
    ok = after - idle <= 100 and not after_workers
    print(f"verdict: {'PASS' if ok else 'MISS'} (target: server within 100 MB of idle, no worker left)")


if __name__ == "__main__":
    main()
