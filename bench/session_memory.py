"""Does the server give memory back when a visitor leaves? (issue 17, bounded work)

Starts ``streamlit run app.py`` (with ``server.disconnectedSessionTTL`` = 5 s), opens one session in Chromium
on the default demo (the server's idle level after start-up and one visit), then a visitor uploads a large CSV
(1M rows × 8 columns, 70 MB) on Data & model, builds the dataset and leaves. Prints the server's resident memory
(RSS) at each step and after the visitor's session has expired; the target is back within 100 MB of idle.

    python bench/session_memory.py [--rows 1000000]
"""
from __future__ import annotations

import argparse
import io
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.normal(size=(args.rows, 7)).round(4), columns=[f"x{i}" for i in range(7)])
    table["y"] = (table["x0"] > 0).astype(int)
    buffer = io.StringIO()
    table.to_csv(buffer, index=False)
    upload = buffer.getvalue().encode()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as cache:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.fileWatcherType", "none", "--browser.gatherUsageStats",
             "false", "--server.disconnectedSessionTTL", str(TTL_S)],
            cwd=ROOT, env={**os.environ, "EXPLAIN_CACHE_DIR": cache}, stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(240):
                try:
                    urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                    break
                except OSError:
                    time.sleep(0.25)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                first = browser.new_context()
                page = first.new_page()
                page.goto(url)
                wait_idle(page)
                first.close()
                time.sleep(TTL_S + 5)
                idle = rss_mb(server.pid)
                visitor = browser.new_context()
                page = visitor.new_page()
                page.goto(url)
                wait_idle(page)
                page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Data & model").click()
                wait_idle(page)
                page.locator(".st-key-dm_data_source").get_by_text("Upload a CSV or Parquet file").click()
                wait_idle(page)
                page.locator('.st-key-dm_upload input[type="file"]').set_input_files(
                    files=[{"name": "big.csv", "mimeType": "text/csv", "buffer": upload}])
                wait_idle(page)
                page.locator(".st-key-dm_build button").first.click()
                wait_idle(page)
                busy = rss_mb(server.pid)
                visitor.close()
                browser.close()
            marks = []
            for wait in (TTL_S + 5, TTL_S + 20):
                time.sleep(wait - (marks[-1][0] if marks else 0))
                marks.append((wait, rss_mb(server.pid)))
        finally:
            server.terminate()
            server.wait(timeout=20)
    print(f"upload: {len(upload) / 2**20:.0f} MB CSV, {args.rows:,} rows × 8 columns; session TTL {TTL_S} s")
    print(f"server RSS idle (after start-up and one visit): {idle:.0f} MB")
    print(f"server RSS with the visitor's dataset built:     {busy:.0f} MB (+{busy - idle:.0f} MB)")
    for wait, value in marks:
        print(f"server RSS {wait:>3} s after the visitor left:      {value:.0f} MB (+{value - idle:.0f} MB above idle)")
    final = marks[-1][1] - idle
    print(f"verdict: {'PASS' if final <= 100 else 'MISS'} (target: back within 100 MB of idle)")


if __name__ == "__main__":
    main()
