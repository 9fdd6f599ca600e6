"""Every row gets a bracket (issue 52): where the breadth-first search stops at its depth or its budget of model
rows without a flip, SEV lies between the depth it proved + 1 and the size of a greedy path's flip. Checked
against brute force on small cases (random models, a trained MLP; both classes; SEV⁻, SEV® and SEV⁺): the bracket
holds the truth, the upper bound's flip is a real flip of the model, a closed bracket is the value."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.neural_network import MLPClassifier
from test_sev import brute_force, layout_of, random_case, vertex_row

from explain_core.intake.data import make_dataset
from explain_core.intake.models import wrap_model
from explain_core.reference import Reference
from explain_core.sev import SEVParameters, SEVRequest, sev_results
from explain_core.sev.bracket import bracket_words
from explain_core.sev.engine import BFSSearch, sev_batch


def check_bracket(result, truth, model, columns, groups, query, reference):
    """``result`` brackets ``truth`` (None: nothing flips), and its upper bound's flip is one, by the model."""
    assert result.status in ("explained", "limit", "unexplainable"), result.status
    if result.status == "unexplainable":
        assert truth is None
        return
    if truth is not None:
        assert result.lower <= truth, (result.lower, truth)
    if result.upper is None:
        return
    assert truth is not None and truth <= result.upper
    moved = set(result.explanations[0])
    assert len(moved) == result.upper
    keep = [(name in moved) == (result.kind == "plus") for name, _ in groups]
    vertex = vertex_row(query, reference, groups, keep)
    own = model.label(pd.DataFrame([query], columns=columns))[0]
    label = model.label(pd.DataFrame([vertex], columns=columns))[0]
    assert (label != own) if result.kind == "minus" else (label == own)  # a real flip
    if result.status == "explained":
        assert result.value == truth and result.certified


@pytest.mark.parametrize("seed", range(60))
def test_every_bracket_holds_the_brute_force_value(seed):
    rng = np.random.default_rng(seed)
    model, columns, groups, onehot, kind_map, query, reference = random_case(rng)
    data, layout = layout_of(columns, groups, onehot, kind_map, query, reference)
    names = [g for g, _ in groups]
    held = tuple(n for n in names if rng.random() < 0.25)
    (m_val, _), _, _ = brute_force(model, columns, groups, query, reference)
    (r_val, _), (p_val, _), _ = brute_force(model, columns, groups, query, reference, held)
    row, ref = pd.DataFrame([query], columns=columns), Reference(reference, "test")
    for kind, restricted, truth in (("minus", (), m_val), ("minus", held, r_val), ("plus", (), p_val)):
        for depth, budget in ((1, 10 ** 6), (len(names), 1 + int(rng.integers(0, 2 ** len(names)))), (2, 3)):
            result = sev_results(model, layout, row, ref, SEVRequest(kind=kind, restricted=restricted),
                                 options=SEVParameters(max_depth=depth, sev_method="bfs", sev_budget_rows=budget))[0]
            check_bracket(result, truth, model, columns, groups, query, reference)
            assert result.status != "beyond_depth"  # never "> d"


@pytest.fixture(scope="module")
def mlp_case():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(400, 9)), columns=[f"x{j}" for j in range(9)])
    y = ((X.to_numpy() @ rng.normal(size=9) + np.sin(3 * X["x0"]) > 0)).astype(int)
    frame = X.assign(y=y)
    data = make_dataset(frame, "y")
    model = wrap_model(MLPClassifier((16,), max_iter=400, random_state=0).fit(X, y), data)
    return data, model


def test_a_trained_mlp_gets_brackets_that_hold_for_both_classes(mlp_case):
    data, model = mlp_case
    columns = list(data.columns)
    groups = [(c, (c,)) for c in columns]
    reference = data.features.median().to_dict()
    ref = Reference(reference, "median")
    labels = model.label(data.features)
    seen = set()
    for i in range(30):
        query = data.features.iloc[i].to_dict()
        (m_val, _), (p_val, _), _ = brute_force(model, columns, groups, query, reference)
        for kind, truth in (("minus", m_val), ("plus", p_val)):
            for depth in (1, 2):
                result = sev_results(model, data.layout, data.features.iloc[[i]], ref, SEVRequest(kind=kind),
                                     options=SEVParameters(max_depth=depth, sev_method="bfs"))[0]
                check_bracket(result, truth, model, columns, groups, query, reference)
                seen.add((int(labels[i]), result.status, result.value is not None and result.value > depth))
    # both classes; open brackets, and brackets the path closed (a value above the depth searched, proved)
    assert {(0, "limit", True), (1, "limit", True), (0, "explained", True)} <= seen, seen


def test_a_budget_stops_before_a_layer_and_the_words_name_it(mlp_case):
    data, model = mlp_case
    ref = Reference(data.features.median().to_dict(), "median")
    full = [sev_batch(model, data.layout, data.features.iloc[[i]], ref, BFSSearch(max_depth=9))[0] for i in range(20)]
    i = next(i for i, r in enumerate(full) if r.value >= 3)
    query, full = data.features.iloc[[i]], full[i]
    open_ = sev_batch(model, data.layout, query, ref,
                      BFSSearch(budget_rows=9 + 36 - 1))[0]  # C(9,1) fits, C(9,2) does not
    assert (open_.status, open_.max_depth, open_.rows, open_.next_rows, open_.budget_rows) == \
        ("beyond_depth", 1, 9, 36, 44)
    closed = sev_batch(model, data.layout, query, ref, BFSSearch(budget_rows=44, bracket=True))[0]
    assert closed.lower == 2 and closed.upper is not None and closed.upper >= full.value
    words = bracket_words(closed, control="the 'Search budget' control")
    assert "stopped at" in words and "over the budget of 44" in words and "'Search budget'" in words
    if closed.status == "limit":
        assert f"between 2 and {closed.upper}" in words and closed.shown == f"2–{closed.upper}"
    else:
        assert "(proved)" in words and closed.value == full.value
