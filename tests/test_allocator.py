"""The server's memory housekeeping gives freed memory back (explain_core.allocator)."""
import subprocess
import sys


ARROW_SCRIPT = """
import threading
import numpy as np, pandas as pd, pyarrow as pa
from explain_core.allocator import release_freed_memory
def resident():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
def visit():
    tables = [pa.Table.from_pandas(pd.DataFrame({"x": np.random.default_rng(i).random(250_000),
                                                 "text": [str(j) for j in range(250_000)]})) for i in range(20)]
    return sum(t.num_rows for t in tables)
release_freed_memory()
before = resident()
worker = threading.Thread(target=visit)
worker.start()
worker.join()
held = resident()
release_freed_memory()
print(held - before, resident() - before)
"""


def test_memory_of_arrow_tables_freed_in_a_thread_returns_to_the_system():
    """Tables built and dropped in a session's thread (Streamlit's dataframes go through Arrow) leave their pages
    with Arrow's allocator until released: at least half of the ~200 MB comes back (in a fresh process: what an
    earlier test left in this one's pools changed what the visit held). Under load the visit sometimes holds less
    (35 MB once in CI, the pages already gone when it was measured): that precondition is measured again, up to
    three fresh processes, before the release itself is judged."""
    for _ in range(3):
        held, kept = map(float, subprocess.run([sys.executable, "-c", ARROW_SCRIPT], capture_output=True, text=True,
                                               check=True).stdout.split())
        if held > 100:
            break
    assert held > 100, f"the visit should have held memory (else this test checks nothing): {held:.0f} MB"
    assert kept < held / 2, (held, kept)


THREAD_HEAP_SCRIPT = """
import sys, threading
from explain_core.allocator import hold_thresholds, release_freed_memory
if sys.argv[1] == "held":
    assert hold_thresholds(32 << 20, 2 << 20)
block = bytearray(20 << 20)
del block  # one large block freed: glibc's own rule then keeps up to 40 MiB free atop each heap
def visit():
    blocks = [bytearray(512 << 10) for _ in range(60)]  # 30 MB from this thread's heap, under 40 MiB
    del blocks
def resident():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
release_freed_memory()
before = resident()
worker = threading.Thread(target=visit)
worker.start()
worker.join()
release_freed_memory()
print(resident() - before)
"""


def test_held_thresholds_give_a_threads_freed_heap_back():
    """A script thread's heap (one glibc arena per thread) keeps its freed top once glibc has raised its thresholds
    itself; with :func:`hold_thresholds` as the server holds them, it goes back (fresh processes: the thresholds
    are process-wide)."""
    kept = {mode: float(subprocess.run([sys.executable, "-c", THREAD_HEAP_SCRIPT, mode], capture_output=True,
                                       text=True, check=True).stdout) for mode in ("glibc", "held")}
    assert kept["glibc"] > 20, f"glibc's own thresholds should keep the freed heap (else this checks nothing): {kept}"
    assert kept["held"] < 10, kept
