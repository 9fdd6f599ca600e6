"""What serving costs after a PDF: the server's memory and the export's Chromium (issue 55, item 4)

Serves ``app.py`` (``session_memory.served``), opens it in Chromium at 1280×800 on the default demo and prints the
server's resident memory: the server process alone, and the server with all its descendants (the plotly export's
Chromium, any model worker), with the number of Chromium processes among those descendants. Measured at idle after
start-up and one visit, right after the Report page's PDF (Home, Pick a row and SEV visited first), and after 40 s
idle with the tab still open (the export's browser closes ``KALEIDO_IDLE_S`` = 30 s after its last figure). Target:
no Chromium left and the server near 300 MB.

    python bench/serving_memory.py      # about 2 minutes
"""
from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import time
from urllib.parse import urlparse

import psutil
from session_memory import CHROMIUM_ARGS, served, visit, wait_idle

IDLE_S = 40  # after the PDF: longer than the export browser's idle time (explain_core.report.figures.KALEIDO_IDLE_S)
VIEWPORT = {"width": 1280, "height": 800}
BOUND_S = 900  # the whole run; an alarm ends it (and its processes) past this


def tree_memory(pid: int) -> dict:
    """RSS (MB) of the process ``pid`` alone and with its descendants, the descendants' PSS (shared pages counted
    once across them), and how many of them are Chromium."""
    server = psutil.Process(pid)
    children = server.children(recursive=True)
    rss = pss = 0.0
    chromium = 0
    for child in children:
        with contextlib.suppress(psutil.Error):
            info = child.memory_full_info()
            rss += info.rss
            pss += info.pss
            chromium += "chrom" in child.name().lower()
    own = server.memory_info().rss
    return {"server": own / 2**20, "tree": (own + rss) / 2**20, "children_pss": pss / 2**20,
            "children": len(children), "chromium": chromium}


def open_page(page, title: str) -> None:
    """Click the sidebar link ``title`` and wait until its page has run."""
    link = page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title, exact=True)
    target = urlparse(link.get_attribute("href")).path
    link.click()
    page.wait_for_url(lambda url: urlparse(url).path == target, timeout=60_000)
    wait_idle(page)


def pdf_then_idle(page, pid: int) -> tuple[dict, dict, float]:
    """Home, Pick a row, SEV, then the Report's PDF: the memory right after it, after :data:`IDLE_S` s idle, and
    the seconds the PDF took."""
    page.set_viewport_size(VIEWPORT)
    page.set_default_timeout(300_000)
    open_page(page, "Pick a row")
    open_page(page, "SEV")
    page.locator('.st-key-sev_minus [data-testid="stMetricValue"]').first.wait_for()
    open_page(page, "Report")
    button = page.locator('.st-key-report_download [data-testid="stDownloadButton"] button').first
    button.wait_for()
    start = time.perf_counter()
    with page.expect_download(timeout=300_000) as download:
        button.click()
    pdf = download.value.path().read_bytes()
    seconds = time.perf_counter() - start
    assert pdf.startswith(b"%PDF"), "the download is not a PDF"
    after_pdf = tree_memory(pid)
    time.sleep(IDLE_S)
    return after_pdf, tree_memory(pid), seconds


def line(label: str, m: dict) -> str:
    return (f"{label:<34} server {m['server']:5.0f} MB | server + descendants {m['tree']:6.0f} MB RSS "
            f"(descendants' PSS {m['children_pss']:5.0f} MB) | {m['children']:2d} descendants, "
            f"{m['chromium']:2d} Chromium")


def past_bound(*_) -> None:
    raise TimeoutError(f"the run took more than {BOUND_S} s")


def main() -> None:
    from playwright.sync_api import sync_playwright

    signal.signal(signal.SIGALRM, past_bound)
    signal.alarm(BOUND_S)
    load_before = os.getloadavg()
    descendants: list[psutil.Process] = []
    server = None
    try:
        with tempfile.TemporaryDirectory() as cache, served({"EXPLAIN_CACHE_DIR": cache}) as (server, url):
            try:
                with sync_playwright() as p:
                    browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                    visit(browser, url, lambda page: (page.set_viewport_size(VIEWPORT), wait_idle(page)))
                    time.sleep(IDLE_S)
                    idle = tree_memory(server.pid)
                    after_pdf, after_idle, seconds = visit(browser, url, lambda page: pdf_then_idle(page, server.pid))
                    browser.close()
            finally:
                with contextlib.suppress(psutil.Error):
                    descendants = psutil.Process(server.pid).children(recursive=True)
    finally:
        signal.alarm(0)
        if server is not None and server.poll() is None:
            server.kill()
        left = psutil.wait_procs(descendants, timeout=10)[1]  # still running once the server has stopped
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}; "
          f"after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(line(f"idle ({IDLE_S} s after start-up + 1 visit)", idle))
    print(line(f"right after the PDF ({seconds:.1f} s)", after_pdf))
    print(line(f"after {IDLE_S} s idle", after_idle))
    print(f"the server's descendants still running 10 s after it stopped: {len(left)} (ended by this script)")
    verdict = after_idle["chromium"] == 0 and after_idle["tree"] <= 350
    print(f"verdict: {'PASS' if verdict else 'MISS'} (target: no Chromium left, server + descendants near 300 MB)")


if __name__ == "__main__":
    main()
