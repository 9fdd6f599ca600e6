"""SEV engine against brute-force enumeration of the hypercube and the SEV paper's worked examples."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from explain_core.intake.data import make_dataset
from explain_core.intake.layout import GroupLayout, TableChoices
from explain_core.intake.models import ModelAdapter
from explain_core.reference import Reference
from explain_core.sev import BFSSearch, explain_sev, hypercube, sev, sev_batch
from explain_core.views.readings import depth_cap_sentence


class FunctionModel:
    """A hand-built classifier: ``fn(frame) -> score``; exposes predict_proba and decision_function."""

    classes_ = np.array([0, 1])

    def __init__(self, fn):
        self.fn = fn

    def decision_function(self, frame):
        return np.asarray(self.fn(frame), dtype=float)

    def predict_proba(self, frame):
        p = 1 / (1 + np.exp(-self.decision_function(frame)))
        return np.column_stack([1 - p, p])


def adapter(fn, columns, score_kind="proba"):
    threshold = 0.5 if score_kind == "proba" else 0.0
    return ModelAdapter(FunctionModel(fn), list(columns), "classification", score_kind=score_kind, threshold=threshold)


# --- brute force: enumerate every vertex row by row, independently of the engine -------------------------

def vertex_row(query: dict, reference: dict, groups: list[tuple[str, tuple[str, ...]]], bits) -> dict:
    row = {}
    for (_, cols), keep in zip(groups, bits):
        for c in cols:
            row[c] = query[c] if keep else reference[c]
    return row


def brute_force(model, columns, groups, query: dict, reference: dict, restricted=()):
    """(SEV⁻ explanations, SEV⁺ explanations), each a (value, set of frozensets of moved groups)."""
    names = [g for g, _ in groups]
    vertices = list(itertools.product([0, 1], repeat=len(groups)))
    rows = [query] + [vertex_row(query, reference, groups, bits) for bits in vertices]
    c, *labels = model.label(pd.DataFrame(rows, columns=columns)).tolist()
    minus, plus = [], []
    for bits, y in zip(vertices, labels):
        zeros = frozenset(n for n, b in zip(names, bits) if not b)
        ones = frozenset(n for n, b in zip(names, bits) if b)
        if y != c and not (zeros & set(restricted)):
            minus.append(zeros)
        if y == c:
            plus.append(ones)
    return _minimal(minus), _minimal(plus), c


def _minimal(sets):
    if not sets:
        return None, set()
    best = min(len(s) for s in sets)
    return best, {s for s in sets if len(s) == best}


def random_case(rng):
    """A random model on 1–8 groups of mixed kinds (numeric, categorical, declared one-hot)."""
    p = int(rng.integers(1, 9))
    kinds = rng.choice(["numeric", "numeric", "categorical", "onehot"], size=p)
    columns, groups, onehot, query, reference, kind_map = [], [], {}, {}, {}, {}
    for j, kind in enumerate(kinds):
        name = f"g{j}"
        if kind == "onehot":
            cols = (f"{name}_a", f"{name}_b", f"{name}_c")
            onehot[name] = list(cols)
            q, r = rng.choice(3, size=2, replace=False)
            query.update({c: int(i == q) for i, c in enumerate(cols)})
            reference.update({c: int(i == r) for i, c in enumerate(cols)})
        else:
            cols = (name,)
            if kind == "numeric":
                query[name], reference[name] = rng.normal(size=2)
            else:
                query[name], reference[name] = rng.choice(["red", "green", "blue"], size=2, replace=False)
            kind_map[name] = kind
        if rng.random() < 0.2:  # the query already has the reference's value: moving this group is a no-op
            reference.update({c: query[c] for c in cols})
        columns += cols
        groups.append((name, cols))
    weights = {c: rng.normal() for c in columns}
    codes = {"red": -1.0, "green": 0.5, "blue": 1.5}
    pair = rng.normal(size=(len(columns), len(columns)))

    def fn(frame):
        x = np.column_stack([frame[c].map(codes).to_numpy(float) if frame[c].dtype == object or
                             isinstance(frame[c].iloc[0], str) else frame[c].to_numpy(float) for c in columns])
        x = x * np.array([weights[c] for c in columns])
        return np.tanh(x).sum(axis=1) + 0.5 * np.einsum("ni,ij,nj->n", np.tanh(x), pair, np.tanh(x)) / len(columns)

    fn_bias = rng.normal()
    score_kind = rng.choice(["proba", "decision"])
    model = adapter(lambda f: fn(f) + fn_bias, columns, score_kind)
    return model, columns, groups, onehot, kind_map, query, reference


def layout_of(columns, groups, onehot, kind_map, query, reference):
    frame = pd.DataFrame([query, reference], columns=columns)
    frame["y"] = [1, 0]
    data = make_dataset(frame, "y", choices=TableChoices(kinds=kind_map, onehot_groups=onehot))
    assert data.group_names == [g for g, _ in groups]
    return data, GroupLayout.of(data)


@pytest.mark.parametrize("seed", range(250))
def test_sev_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    model, columns, groups, onehot, kind_map, query, reference = random_case(rng)
    data, layout = layout_of(columns, groups, onehot, kind_map, query, reference)
    names = [g for g, _ in groups]
    restricted = tuple(n for n in names if rng.random() < 0.25)
    ref = Reference(reference, "test")
    row = pd.DataFrame([query], columns=columns)
    (m_val, m_sets), _, _ = brute_force(model, columns, groups, query, reference)
    (r_val, r_sets), (p_val, p_sets), c = brute_force(model, columns, groups, query, reference, restricted)
    p = len(names)
    for kind, held, val, sets in (("minus", (), m_val, m_sets), ("minus", restricted, r_val, r_sets),
                                  ("plus", (), p_val, p_sets)):
        result = sev(model, layout, row, ref, kind=kind, restricted=held, max_depth=p)
        assert result.explained_class == c
        assert result.value == val
        assert {frozenset(e) for e in result.explanations} == sets
        assert len(result.explanations) == len(sets)  # each minimal vertex exactly once
        movable = p - len(held)
        assert result.status == ("explained" if val is not None else "unexplainable")
        if val is not None and val > 1:  # a smaller depth limit must report "beyond depth", not a wrong value
            short = sev(model, layout, row, ref, kind=kind, restricted=held, max_depth=val - 1)
            assert (short.value, short.status) == (None, "beyond_depth" if val - 1 < movable else "unexplainable")


def test_batch_equals_single_queries_and_scores_are_model_scores():
    rng = np.random.default_rng(7)
    model, columns, groups, onehot, kind_map, query, reference = random_case(rng)
    while len(groups) < 5:
        model, columns, groups, onehot, kind_map, query, reference = random_case(rng)
    data, layout = layout_of(columns, groups, onehot, kind_map, query, reference)
    ref = Reference(reference, "test")
    queries = pd.DataFrame([{c: (rng.normal() if isinstance(query[c], float) else query[c]) for c in columns}
                            for _ in range(30)], columns=columns)
    batch = sev_batch(model, layout, queries, ref, BFSSearch(kind="minus", max_depth=len(groups), chunk_rows=7))
    for i, res in enumerate(batch):
        single = sev(model, layout, queries.iloc[[i]], ref, kind="minus", max_depth=len(groups))
        assert (res.value, set(res.explanations)) == (single.value, set(single.explanations))
        for mask, score in zip(res.vertex_masks[:5], res.vertex_scores[:5]):
            bits = [bool(mask[g]) for g in range(len(groups))]
            expected = model.score(pd.DataFrame([vertex_row(queries.iloc[i].to_dict(), reference, groups, bits)],
                                                columns=columns))[0]
            assert score == pytest.approx(expected)


def test_progress_is_reported():
    rng = np.random.default_rng(3)
    model, columns, groups, onehot, kind_map, query, reference = random_case(rng)
    data, layout = layout_of(columns, groups, onehot, kind_map, query, reference)
    seen = []
    sev_batch(model, layout, pd.DataFrame([query] * 4, columns=columns), Reference(reference, "t"),
              BFSSearch(max_depth=len(groups)), progress=lambda f, msg: seen.append(f))
    assert seen and seen == sorted(seen) and 0 <= seen[-1] <= 1


def test_hypercube_matches_enumeration():
    rng = np.random.default_rng(11)
    model, columns, groups, onehot, kind_map, query, reference = random_case(rng)
    data, layout = layout_of(columns, groups, onehot, kind_map, query, reference)
    cube = hypercube(model, layout, pd.DataFrame([query], columns=columns), Reference(reference, "t"))
    assert len(cube.scores) == 2 ** len(groups)
    for mask, score in zip(cube.masks, cube.scores):
        row = vertex_row(query, reference, groups, list(mask))
        assert score == pytest.approx(model.score(pd.DataFrame([row], columns=columns))[0])


# --- the SEV paper's Figure 1: housing / loan / education -------------------------------------------------

FIG1_COLUMNS = ["Housing", "Loan", "Education"]
FIG1_QUERY = {"Housing": "Rent", "Loan": ">$10k", "Education": "High School"}
FIG1_REFERENCE = {"Housing": "Mortgage", "Loan": "5-10k", "Education": "Bachelor"}


def figure1_model():
    """High credit risk iff loan > $10k, or renting with a high-school education (consistent with Fig. 1c/1d)."""
    def fn(frame):
        high = (frame["Loan"] == ">$10k") | ((frame["Housing"] == "Rent") & (frame["Education"] == "High School"))
        return np.where(high, 2.0, -2.0)
    return adapter(fn, FIG1_COLUMNS)


def figure1_explanation():
    frame = pd.DataFrame([FIG1_QUERY, FIG1_REFERENCE])
    frame["risk"] = ["High", "Low"]
    data = make_dataset(frame, "risk", positive_class="High")
    return explain_sev(figure1_model(), data, frame[FIG1_COLUMNS].iloc[[0]], Reference(FIG1_REFERENCE, "fig1"))


def test_figure1_sev_plus_is_one_via_loan():
    ex = figure1_explanation()
    assert (ex.plus.value, ex.plus.explanations) == (1, (("Loan",),))
    table = ex.table("plus")
    assert list(table.index) == ["Reference", "Explanation 1", "Query"]
    assert table.loc["Explanation 1"].tolist() == ["—", ">$10k", "—"]


def test_figure1_sev_minus_is_two_with_both_shortest_paths():
    ex = figure1_explanation()
    assert ex.minus.value == 2
    assert set(ex.minus.explanations) == {("Housing", "Loan"), ("Loan", "Education")}
    # the paper's Fig. 1d path: query → (0,1,1) → (0,0,1), i.e. Housing then Loan to the reference
    assert ("Housing", "Loan") in ex.minus.paths()
    assert len(ex.minus.paths()) == 4
    table = ex.table("minus")
    assert list(table.index) == ["Query", "Explanation 1", "Explanation 2", "Reference"]
    assert table.loc["Query"].tolist() == ["Rent", ">$10k", "High School"]
    assert {tuple(table.loc[i]) for i in ("Explanation 1", "Explanation 2")} == {
        ("Mortgage", "5-10k", "—"), ("—", "5-10k", "Bachelor")}


def test_restricted_sev_holds_features_fixed():
    frame = pd.DataFrame([FIG1_QUERY, FIG1_REFERENCE])
    frame["risk"] = ["High", "Low"]
    data = make_dataset(frame, "risk", positive_class="High")
    row, ref = frame[FIG1_COLUMNS].iloc[[0]], Reference(FIG1_REFERENCE, "fig1")
    held = explain_sev(figure1_model(), data, row, ref, restricted=["Housing"])
    assert held.restricted.explanations == (("Loan", "Education"),)
    fully = explain_sev(figure1_model(), data, row, ref, restricted=["Loan"])
    assert fully.restricted.status == "unexplainable" and fully.restricted.value is None
    assert "not explainable" in fully.restricted.message


def test_one_accessor_names_each_result_and_one_error_for_a_bad_or_absent_kind():
    """SEVExplanation.result(which) is the one lookup of a result by name; a name that is not a kind and SEV® of an
    explanation without restricted features are the same IntakeError wherever they are asked for."""
    from explain_core import IntakeError
    from explain_core.sev.readings import explanation_lines
    from explain_core.views.sev import hypercube_figure

    frame = pd.DataFrame([FIG1_QUERY, FIG1_REFERENCE]).assign(risk=["High", "Low"])
    data = make_dataset(frame, "risk", positive_class="High")
    row, ref = frame[FIG1_COLUMNS].iloc[[0]], Reference(FIG1_REFERENCE, "fig1")
    plain, held = figure1_explanation(), explain_sev(figure1_model(), data, row, ref, restricted=["Housing"])
    assert plain.result("minus") is plain.minus and plain.result("plus") is plain.plus
    assert held.result("restricted") is held.restricted
    assert list(plain.results()) == ["minus", "plus"]
    assert list(held.results()) == ["minus", "plus", "restricted"]
    assert list(held.results().values()) == [held.minus, held.plus, held.restricted]
    cube = hypercube(figure1_model(), data.layout, row, ref)
    for ask in (lambda: plain.result("restricted"), lambda: plain.table("restricted"),
                lambda: explanation_lines(plain, "restricted", 0.5),
                lambda: hypercube_figure(cube, plain, which="restricted")):
        with pytest.raises(IntakeError, match="No SEV® here"):
            ask()
    for ask in (lambda: plain.result("both"), lambda: plain.table("both"),
                lambda: explanation_lines(plain, "both", 0.5), lambda: hypercube_figure(cube, plain, which="both")):
        with pytest.raises(IntakeError, match="Unknown SEV result 'both'.*minus, plus, restricted"):
            ask()


# --- Theorem 5's linear case ------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [2, 3, 4, 5, 6])
def test_theorem5_linear_sev_plus_at_least_two_iff_all_coordinates_at_most_one(p):
    rng = np.random.default_rng(p)
    columns = [f"x{j}" for j in range(p)]
    model = adapter(lambda f: -1 + f[columns].to_numpy(float).sum(axis=1), columns, score_kind="decision")
    points = rng.uniform(0, 1.6, size=(400, p))
    points = points[points.sum(axis=1) > 1]  # h(x) = 1
    frame = pd.DataFrame(points, columns=columns)
    data = make_dataset(frame.assign(y=np.arange(len(frame)) % 2), "y",
                        choices=TableChoices(kinds={c: "numeric" for c in columns}))
    results = sev_batch(model, GroupLayout.of(data), frame, Reference({c: 0.0 for c in columns}, "origin"),
                        BFSSearch(kind="plus", max_depth=p))
    at_least_two = np.array([r.value >= 2 for r in results])
    assert at_least_two.any() and (~at_least_two).any()
    np.testing.assert_array_equal(at_least_two, (points <= 1).all(axis=1))


def test_negative_queries_are_explained_symmetrically():
    frame = pd.DataFrame({"a": [0.0, 3.0], "b": [0.0, 3.0]})
    columns = ["a", "b"]
    model = adapter(lambda f: f["a"].to_numpy(float) + f["b"].to_numpy(float) - 3.5, columns, "decision")
    data = make_dataset(frame.assign(y=[0, 1]), "y")
    layout = GroupLayout.of(data)
    negative_query = pd.DataFrame({"a": [1.0], "b": [1.0]})
    ref = Reference({"a": 3.0, "b": 3.0}, "positives")
    result = sev(model, layout, negative_query, ref, kind="minus")
    assert result.explained_class == 0
    assert (result.value, set(result.explanations)) == (1, {("a",), ("b",)})


def test_layers_over_the_vertex_limit_are_not_searched(monkeypatch):
    import explain_core.sev.engine as sev_module

    columns = [f"x{j}" for j in range(5)]
    model = adapter(lambda f: f[columns].to_numpy(float).sum(axis=1) - 3.5, columns, "decision")
    data = make_dataset(pd.DataFrame({**{c: [0.0, 1.0] for c in columns}, "y": [0, 1]}), "y",
                        choices=TableChoices(kinds={c: "numeric" for c in columns}))
    query, ref = pd.DataFrame([{c: 1.0 for c in columns}]), Reference({c: 0.0 for c in columns}, "zero")
    assert sev(model, GroupLayout.of(data), query, ref).value == 2
    monkeypatch.setattr(sev_module, "MAX_LAYER_VERTICES", 5)  # C(5,1)=5 fits, C(5,2)=10 does not
    cut = sev(model, GroupLayout.of(data), query, ref)
    assert (cut.value, cut.status, cut.max_depth) == (None, "beyond_depth", 1)
    # the page says why the search stopped short of the slider's depth, with the numbers that stopped it
    assert depth_cap_sentence(cut, requested=6, movable=5) == (
        "Searched to depth 1, not the 6 the depth slider asks for: depth 2 alone would score 10 mixes of the row and "
        "the reference (2 of the 5 movable features), more than the 5 one depth may score per row. Holding features "
        "fixed (restricted features) lets the search go deeper.")
    assert depth_cap_sentence(cut, requested=1, movable=5) == ""  # the depth asked for was searched
    assert depth_cap_sentence(sev(model, GroupLayout.of(data), query, ref, max_depth=1), 1, 5) == ""


def test_reference_in_the_query_class_is_reported():
    columns = ["a", "b"]
    model = adapter(lambda f: f["a"].to_numpy(float) + f["b"].to_numpy(float) - 3.5, columns, "decision")
    data = make_dataset(pd.DataFrame({"a": [0.0, 3.0], "b": [0.0, 3.0], "y": [0, 1]}), "y")
    query, same_class_ref = pd.DataFrame({"a": [1.0], "b": [1.0]}), Reference({"a": 0.0, "b": 0.0}, "negatives")
    minus = sev(model, GroupLayout.of(data), query, same_class_ref, kind="minus")
    plus = sev(model, GroupLayout.of(data), query, same_class_ref, kind="plus")
    assert minus.reference_class == minus.explained_class == 0 and minus.value is None
    assert "reference is itself predicted in the query's class" in minus.message
    assert (plus.value, plus.explanations) == (0, ((),))


# --- the encoded-space fast path gives the same results as mixing raw rows --------------------------------

def _adult_lr_with_missing_values():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    from explain_core.intake.demos import load_demo
    from explain_core.intake.encoding import make_encoder
    from explain_core.intake.models import wrap_model

    data = load_demo("adult")
    rows = np.random.default_rng(0).choice(len(data.features), 3000, replace=False)
    pipe = Pipeline([("encode", make_encoder(data)), ("model", LogisticRegression(max_iter=500))])
    pipe.fit(data.features.iloc[rows], data.y[rows])
    missing = np.flatnonzero(data.features.isna().any(axis=1).to_numpy())[:20]
    return data, wrap_model(pipe, data, positive_class=1), np.concatenate([missing, rows[:20]])


def _gbdt_demo(name):
    from explain_core.intake.demos import load_demo
    from explain_core.intake.demo_models import demo_model

    data = load_demo(name)
    trained = demo_model(data, "gbdt")
    return data, trained.model, trained.test_rows[:40]


@pytest.mark.parametrize("case", ["compas", "german_credit", "adult_missing"])
def test_encoded_fast_path_equals_raw_mixing(case, monkeypatch):
    import explain_core.vertices as sev_module
    from explain_core.reference import make_reference

    data, model, rows = _adult_lr_with_missing_values() if case == "adult_missing" else _gbdt_demo(case)
    layout, queries = GroupLayout.of(data), data.features.iloc[rows]
    reference = make_reference(data)
    assert sev_module.VertexScorer(model, layout, queries, reference).encoded is not None
    fast = {k: sev_batch(model, layout, queries, reference, BFSSearch(kind=k, max_depth=3)) for k in ("minus", "plus")}
    monkeypatch.setattr(sev_module, "encoded_model", lambda *args: None)
    assert sev_module.VertexScorer(model, layout, queries, reference).encoded is None
    for kind, results in fast.items():
        for a, b in zip(results, sev_batch(model, layout, queries, reference, BFSSearch(kind=kind, max_depth=3))):
            assert (a.value, a.explanations, a.status, a.explained_class) == (b.value, b.explanations, b.status,
                                                                                b.explained_class)
            # encoded equality also skips moves the raw values hide (a missing value imputed to the
            # reference's value): every vertex the fast path scores, the raw path scores identically
            raw = {m.tobytes(): score for m, score in zip(b.vertex_masks, b.vertex_scores)}
            assert len(a.vertex_masks) <= len(raw)
            for m, score in zip(a.vertex_masks, a.vertex_scores):
                assert abs(raw[m.tobytes()] - score) <= 1e-12


def test_preprocessing_that_mixes_columns_is_not_split():
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    from explain_core.intake.encoding import encoded_model
    from explain_core.intake.models import wrap_model

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 4)), columns=list("abcd"))
    frame["y"] = (frame.a + frame.b * frame.c > 0).astype(int)
    data = make_dataset(frame, "y")
    pipe = Pipeline([("pca", PCA(3)), ("model", LogisticRegression())]).fit(data.features, data.y)
    model = wrap_model(pipe, data)
    assert encoded_model(model, data.groups) is None
    columns = list("abcd")
    groups = [(c, (c,)) for c in columns]
    query, reference = data.features.iloc[0].to_dict(), data.features.mean().to_dict()
    (m_val, m_sets), (p_val, p_sets), _ = brute_force(model, columns, groups, query, reference)
    layout, row, ref = GroupLayout.of(data), data.features.iloc[[0]], Reference(reference, "mean")
    assert (sev(model, layout, row, ref, max_depth=4).value, sev(model, layout, row, ref, kind="plus").value) == (
        m_val, p_val)


# --- the one-row path: the dataset's rows encoded once, the first layers scored with the row ---------------

def test_dataset_rows_are_encoded_once_and_edited_rows_afresh(monkeypatch):
    from explain_core.intake.encoding import EncodedModel
    from explain_core.reference import make_reference
    from explain_core.intake.demo_models import train_model

    data = make_dataset(pd.DataFrame({"a": np.arange(40.0), "b": np.tile(["x", "y"], 20),
                                      "y": np.tile([0, 1, 1, 0], 10)}), "y")
    trained = train_model(data, "gbdt")
    model, reference = trained.model, make_reference(data, trained.train_rows)
    calls = []
    encode = EncodedModel.encode
    monkeypatch.setattr(EncodedModel, "encode", lambda self, frame: calls.append(len(frame)) or encode(self, frame))
    first = explain_sev(model, data, data.features.iloc[[3]], reference)
    again = [explain_sev(model, data, data.features.iloc[[r]], reference) for r in (5, 7, 11)]
    assert calls[0] == len(data.features) and all(n == 1 for n in calls[1:])  # the rows once, the reference once
    assert len(calls) == 2
    edited = data.features.iloc[[5]].copy()
    edited.loc[5, "a"] = 33.5  # same index, another value: not the dataset's row
    mine = explain_sev(model, data, edited, reference)
    assert calls[-1] == 1 and len(calls) == 3
    monkeypatch.setattr("explain_core.vertices.encoded_model", lambda *args: None)  # raw mixing, no cache at all
    raw_edited = explain_sev(model, data, edited, reference)
    assert (raw_edited.minus.value, raw_edited.minus.explanations) == (mine.minus.value, mine.minus.explanations)
    np.testing.assert_allclose(raw_edited.minus.vertex_scores, mine.minus.vertex_scores)
    for r, ex in zip((3, 5, 7, 11), [first, *again]):
        raw = explain_sev(model, data, data.features.iloc[[r]], reference)
        assert (raw.minus.value, raw.minus.explanations, raw.plus.value, raw.plus.explanations) == \
            (ex.minus.value, ex.minus.explanations, ex.plus.value, ex.plus.explanations)
        np.testing.assert_allclose(raw.minus.vertex_scores, ex.minus.vertex_scores)


@pytest.mark.parametrize("name, kind", [("compas", "gbdt"), ("compas", "l2_lr")])
def test_a_row_whose_sev_is_at_most_two_costs_one_model_call(name, kind, monkeypatch):
    """The one-row path scores the query, the reference and two layers from each side in its first call
    (cube.ahead_masks): a row with SEV⁻ and SEV⁺ ≤ 2 needs no other call (what a sandboxed model pays for), and
    its values are the full hypercube's."""
    from explain_core.analysis import demo_setup, predicted_rows

    setup = demo_setup(name, kind)
    calls = []
    original = ModelAdapter.scores_of  # every model call goes through it (score too)
    monkeypatch.setattr(ModelAdapter, "scores_of", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    checked = 0
    for row in predicted_rows(setup)[:30]:
        query = setup.query(int(row))
        reference = setup.reference_for(query)  # the mirrored reference: it reads the row's class first
        calls.clear()
        ex = explain_sev(setup.model, setup.dataset, query, reference)
        if ex.minus.value is not None and ex.plus.value is not None and max(ex.minus.value, ex.plus.value) <= 2:
            assert len(calls) == 1, (row, ex.minus.value, ex.plus.value, len(calls))
            checked += 1
        cube = hypercube(setup.model, setup.dataset.layout, query, reference)
        c = cube.labels[cube.masks.all(axis=1)][0]  # the query's own vertex
        assert ex.minus.value == cube.depth_from_query[cube.labels != c].min()
        assert ex.plus.value == cube.masks.sum(axis=1)[cube.labels == c].min()
    assert checked >= 10
