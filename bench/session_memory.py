"""Does the server give memory back when a visitor leaves? (issue 17, bounded work)

Starts ``streamlit run app.py`` (with ``server.disconnectedSessionTTL`` = 5 s), opens one session in Chromium
on the default demo (the server's idle level after start-up and one visit), then a visitor uploads a large CSV
(1M rows × 8 columns, 51 MB) on Data & model, builds the dataset and leaves. Prints the server's resident memory
(RSS) at each step: after the visitor's session has expired, and once the next visitor has connected (Streamlit
removes an expired session on the next write to its session store, and the app hands freed heap memory back to
the system every 30 s); the target is back within 100 MB of idle.

    python bench/session_memory.py [--rows 1000000]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
TTL_S = 5


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def wait_idle(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]'
                           '[data-test-script-state="notRunning"]', timeout=300_000)


def visit(browser, url: str, act=None):
    """One visitor: open the app, do ``act(page)`` (its result is returned), close the tab and leave."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    wait_idle(page)
    result = act(page) if act is not None else None
    page.close(run_before_unload=True)  # the visitor closes the tab (the page's unload handlers run)
    context.close()
    return result


def build_upload(page, upload: Path, pid: int) -> float:
    """Upload ``upload`` on Data & model and build its dataset; the server's RSS then."""
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Data & model").click()
    wait_idle(page)
    page.locator(".st-key-dm_data_source").get_by_text("Upload a CSV or Parquet file").click()
    wait_idle(page)
    page.locator('.st-key-dm_upload input[type="file"]').set_input_files(files=[str(upload)])
    wait_idle(page)
    page.locator(".st-key-dm_build button").first.click()
    wait_idle(page)
    return rss_mb(pid)


@contextlib.contextmanager
def served(env: dict):
    """``streamlit run app.py`` on a free port with session TTL :data:`TTL_S` and ``env`` added; (process, url),
    once it answers its health check."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false",
         "--server.disconnectedSessionTTL", str(TTL_S)], cwd=ROOT, env={**os.environ, **env},
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(480):
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.25)
        yield server, url
    finally:
        server.terminate()
        server.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.normal(size=(args.rows, 7)).round(4), columns=[f"x{i}" for i in range(7)])
    table["y"] = (table["x0"] > 0).astype(int)
    folder = Path(tempfile.mkdtemp(prefix="explain-bench-"))
    upload = folder / "big.csv"
    table.to_csv(upload, index=False)
    size_mb = upload.stat().st_size / 2**20
    with tempfile.TemporaryDirectory() as cache, served({"EXPLAIN_CACHE_DIR": cache}) as (server, url):
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                visit(browser, url)  # a first visit: the server's imports and demo model are loaded
                time.sleep(TTL_S + 5)
                idle = rss_mb(server.pid)
                busy = visit(browser, url, lambda page: build_upload(page, upload, server.pid))
                time.sleep(TTL_S + 5)
                left = rss_mb(server.pid)
                # Streamlit drops an expired session lazily, on the next write to its session store: a later
                # visitor's connection is that write
                visit(browser, url)
                browser.close()
            time.sleep(32)  # one period of the app's memory housekeeping (ui/shared.memory_housekeeping)
            after = rss_mb(server.pid)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"upload: {size_mb:.0f} MB CSV, {args.rows:,} rows × 8 columns; session TTL {TTL_S} s")
    print(f"server RSS idle (after start-up and one visit): {idle:.0f} MB")
    print(f"server RSS with the visitor's dataset built:     {busy:.0f} MB (+{busy - idle:.0f} MB)")
    print(f"server RSS {TTL_S + 5} s after the visitor left:       {left:.0f} MB (+{left - idle:.0f} MB; the expired "
          "session is still stored)")
    print(f"server RSS once the next visitor has connected:   {after:.0f} MB (+{after - idle:.0f} MB above idle)")
    print(f"verdict: {'PASS' if after - idle <= 100 else 'MISS'} (target: back within 100 MB of idle)")


if __name__ == "__main__":
    main()
