"""The process's global random generators (NumPy's legacy one and Python's ``random``), for the libraries that seed
and draw from them: shap's PermutationExplainer and KernelExplainer, DiCE.

Such a library gives the same answer for the same seed only while nothing else draws from the global generator in
the meantime. The app runs each visitor's session in a thread of one process, so two such runs at once interleave
their draws, and each answer then depends on the other's timing (measured: permutation SHAP of a COMPAS MLP row,
alone and beside another session's, differed by up to 3.6e-4 in 4 of 4 tries). :func:`global_generators` lets one
such call at a time in a process draw from them, seeded, and leaves them as it found them.
"""
from __future__ import annotations

import random
import threading
from contextlib import contextmanager

import numpy as np

_HELD = threading.RLock()


@contextmanager
def global_generators(seed: int | None = None):
    """Hold the global generators for the block: seed both with ``seed`` (None: the library seeds them itself),
    restore their states afterwards; other threads' calls wait."""
    with _HELD:
        numpy_state, python_state = np.random.get_state(), random.getstate()
        try:
            if seed is not None:
                np.random.seed(seed)
                random.seed(seed)
            yield
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)
