"""The global random generators are held by one seeded call at a time (explain_core.seeding): a seeded explanation
that draws from them is the same alone and beside another session's, as in the app, where sessions are threads."""
from __future__ import annotations

import random
import threading
import time

import numpy as np

from explain_core.analysis import demo_setup, predicted_rows
from explain_core.baselines import shap_rows
from explain_core.seeding import global_generators


def test_the_generators_are_seeded_inside_and_restored_after():
    np.random.seed(7)
    random.seed(7)
    numpy_next, python_next = np.random.get_state()[1][:5].copy(), random.getstate()
    with global_generators(3):
        inside = np.random.random(3), random.random()
    np.random.seed(3)
    random.seed(3)
    assert np.array_equal(inside[0], np.random.random(3)) and inside[1] == random.random()
    np.random.seed(7)
    random.seed(7)
    with global_generators(3):
        np.random.random(3)
    assert np.array_equal(np.random.get_state()[1][:5], numpy_next) and random.getstate() == python_next


def test_a_second_thread_waits_for_the_generators():
    order = []

    def hold(name: str, seconds: float) -> None:
        with global_generators(0):
            order.append(f"{name} in")
            time.sleep(seconds)
            order.append(f"{name} out")
    first = threading.Thread(target=hold, args=("first", 0.3))
    first.start()
    time.sleep(0.05)
    hold("second", 0)
    first.join()
    assert order == ["first in", "first out", "second in", "second out"]


def test_permutation_shap_is_the_same_alone_and_beside_another_session(explain_cache_dir):
    """COMPAS MLP (shap's PermutationExplainer, which seeds and draws from NumPy's global generator): two rows
    explained at once in two threads equal each explained alone; without the hold they differed in 4 of 4 tries."""
    s = demo_setup("compas", "mlp")
    rows = [int(r) for r in predicted_rows(s)[:2]]

    def shap_of(row: int, seed: int) -> np.ndarray:
        frame = s.dataset.features.iloc[[row]]
        values, _, _, name = shap_rows(s.model, s.dataset, frame, s.train_rows, seed=seed, background=50)
        assert name.startswith("PermutationExplainer")
        return values
    alone = {(row, seed): shap_of(row, seed) for seed, row in enumerate(rows)}
    for _ in range(2):
        together = {}
        threads = [threading.Thread(target=lambda k=k, out=together: out.__setitem__(k, shap_of(*k))) for k in alone]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert all(np.array_equal(together[k], alone[k]) for k in alone)
