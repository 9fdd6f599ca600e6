"""The first-flip SEV path (``explanations="first"``, the SEV paper's own search): the same value as the full search
on the test rows of the demo models the suite uses (all of them; Adult's and California's first 1,500), a first
explanation that really flips and is one of the full search's minimal explanations, and fewer model rows scored where
the answer's layer spans several chunks."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from explain_core.analysis import Parameters, dataset_sev, demo_setup, predicted_rows
from explain_core.intake.models import ModelAdapter
from explain_core.sev import BFSSearch, explain_sev, sev_batch

# every (dataset, model) pair the suite explains with demo_setup / demo_model, each with two groups held for SEV®
DEMOS = [("compas", "gbdt"), ("compas", "l2_lr"), ("compas", "l1_lr"), ("german_credit", "gbdt"),
         ("german_credit", "l2_lr"), ("adult", "l2_lr"), ("student_performance_math", "gbdt"),
         ("california_housing", "gbdt")]

ROWS = 1_500  # Adult's 6,513 test rows took 26 s (California's 4,128: 5 s); the others have fewer


def _runs(setup):
    """(name, setup, kind) of SEV⁻, SEV⁺ and SEV® (the first two groups held)."""
    held = setup.with_restricted(list(setup.dataset.group_names[:2]))
    return [("minus", replace(setup, restricted=()), "minus"), ("plus", setup, "plus"), ("restricted", held, "minus")]


def _vertex_labels(setup, flipped) -> list[int]:
    """The model's label at the vertex that moves each ``(row, result)``'s first explanation: every vertex built as
    one raw row (the query with the moved columns at the reference), all scored in one model call."""
    points = []
    for row, result in flipped:
        query = setup.dataset.features.iloc[[row]].reset_index(drop=True)
        reference = setup.reference_of_label(result.explained_class).values  # what dataset_sev searched against
        moved = {c for g in setup.dataset.layout.groups if g.name in result.explanations[0] for c in g.columns}
        at_reference = moved if result.kind == "minus" else set(query.columns) - moved
        points.append(query.assign(**{c: [reference[c]] for c in at_reference}))
    return [int(v) for v in setup.model.label(pd.concat(points, ignore_index=True))] if points else []


@pytest.mark.parametrize("name, kind", DEMOS)
def test_first_flip_values_equal_the_full_search_on_the_test_rows(name, kind):
    setup = demo_setup(name, kind)
    rows = np.asarray(setup.test_rows)[:ROWS]
    for which, run_setup, sev_kind in _runs(setup):
        full = dataset_sev(run_setup, rows, Parameters(), kind=sev_kind).results
        first = dataset_sev(run_setup, rows, Parameters(), kind=sev_kind, explanations="first").results
        assert [(r.value, r.status) for r in first] == [(r.value, r.status) for r in full], which
        for row, f, a in zip(rows, first, full):
            if not f.explainable or f.value == 0:
                assert f.explanations == a.explanations and f.complete
                continue
            assert len(f.explanations) == 1 and f.explanations[0] in a.explanations, (which, row)
            if f.engine == "bfs":  # the BFS's first flip is the full search's first, in combinations order
                assert f.first_flip and not f.complete and f.explanations == a.explanations[:1]
                assert "the search stopped there" in f.message
        flipped = [(int(row), f) for row, f in zip(rows, first) if f.explainable and f.value][:40]
        for (row, f), label in zip(flipped, _vertex_labels(run_setup, flipped)):  # a real flip: the model labels it
            assert (label != f.explained_class) if f.kind == "minus" else (label == f.explained_class), (which, row)


def test_sev_batch_first_flip_matches_on_every_layer_and_chunk_size():
    """The BFS alone (no exact engine), to the full depth, with chunks of a few rows: the values are the full
    search's whatever the chunking."""
    setup = demo_setup("german_credit", "gbdt")
    layout, queries = setup.dataset.layout, setup.dataset.features.iloc[predicted_rows(setup)]
    reference = setup.reference_of_label(1)
    for kind, held in (("minus", ()), ("plus", ()), ("minus", tuple(setup.dataset.group_names[:3]))):
        full = sev_batch(setup.model, layout, queries, reference,
                         BFSSearch(kind=kind, restricted=held, keep_scores=False))
        for chunk_rows in (7, 1000, 32_768):
            first = sev_batch(setup.model, layout, queries, reference,
                              BFSSearch(kind=kind, restricted=held, keep_scores=False, chunk_rows=chunk_rows,
                                        explanations="first"))
            assert [r.value for r in first] == [r.value for r in full], (kind, held, chunk_rows)
            assert [r.explanations for r in first] == [r.explanations[:1] for r in full], (kind, held, chunk_rows)


def _rows_scored(monkeypatch, fn) -> int:
    rows = []
    original = ModelAdapter.scores_of  # every model call goes through it (score too)
    monkeypatch.setattr(ModelAdapter, "scores_of", lambda self, est, X: rows.append(len(X)) or original(self, est, X))
    fn()
    monkeypatch.undo()
    return sum(rows)


def test_the_first_flip_path_scores_fewer_rows_where_the_layer_has_several_chunks(monkeypatch):
    """German credit (20 groups): the answer's layer of 190 or 1,140 vertices, scored in chunks of 64 rows; the
    first-flip path leaves a query's layer at its first flip, the full search scores all of it."""
    setup = demo_setup("german_credit", "gbdt")
    layout, reference = setup.dataset.layout, setup.reference_of_label(1)
    queries = setup.dataset.features.iloc[predicted_rows(setup)]
    full = sev_batch(setup.model, layout, queries, reference, BFSSearch(keep_scores=False))
    deep = [i for i, r in enumerate(full) if r.explainable and r.value >= 2][:5]
    assert deep, "no row with SEV⁻ ≥ 2: the layer would be one chunk"

    def scored(mode: str, rows) -> int:
        return _rows_scored(monkeypatch, lambda: sev_batch(setup.model, layout, queries.iloc[rows], reference,
                                                           BFSSearch(chunk_rows=64, keep_scores=False,
                                                                     explanations=mode)))

    for i in deep:  # one row at a time: the layer holds 190+ vertices, three or more chunks of 64
        assert scored("first", [i]) < scored("all", [i]), i
    assert scored("first", deep) < scored("all", deep)


def test_explain_sev_keeps_every_explanation_unless_asked():
    """The dashboard's one-row explanation lists every minimal explanation; ``explanations="first"`` one."""
    setup = demo_setup("compas", "gbdt")
    for row in predicted_rows(setup)[:20]:
        query = setup.query(int(row))
        reference = setup.reference_for(query)
        every = explain_sev(setup.model, setup.dataset, query, reference)
        first = explain_sev(setup.model, setup.dataset, query, reference, explanations="first")
        for a, f in ((every.minus, first.minus), (every.plus, first.plus)):
            assert not a.first_flip and a.complete and f.value == a.value
            assert f.explanations == a.explanations[:1]
