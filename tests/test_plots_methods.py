"""The LENS and linear figures of explain_core.views (LENS, linear, compare): the data in their traces is the data of
the input tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from explain_core.views.lens import pn_curve_figure, ps_by_size_figure
from explain_core.views.linear import sweep_figure, weights_figure
from explain_core.views.style import TEMPLATE


def values(seq) -> list:
    return [] if seq is None else list(np.asarray(seq).tolist())


# --- pn_curve_figure -----------------------------------------------------------------------------------------

def test_pn_curve_traces_are_the_curve_table():
    curve = pd.DataFrame({"tau": [0.05, 0.5, 0.9, 1.0], "cumulative_pn": [0.99, 0.88, 0.58, np.nan],
                          "factors": [3, 1, 1, 0]})
    fig = pn_curve_figure(curve, direction="i2r")
    assert len(fig.data) == 1
    trace = fig.data[0]
    assert trace.meta["role"] == "curve"
    assert values(trace.x) == [0.05, 0.5, 0.9, 1.0]
    assert np.allclose(values(trace.y), [0.99, 0.88, 0.58, np.nan], equal_nan=True)
    assert values(trace.customdata) == [3, 1, 1, 0]
    assert "I2R" in fig.layout.title.text
    assert fig.layout.template == TEMPLATE


def test_pn_curve_of_a_real_context():
    from explain_core.lens import LensContext
    masks = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=bool)
    labels = np.array([[0, 1, 0, 1], [0, 1, 1, 1], [0, 0, 0, 1]], dtype=np.int8)
    ctx = LensContext("r2i", ("a", "b"), masks, 1, 1, labels, np.zeros((3, 2)), np.arange(3))
    curve = ctx.pn_curve()
    fig = pn_curve_figure(curve)
    assert np.allclose(values(fig.data[0].y), curve["cumulative_pn"])
    assert values(fig.data[0].customdata) == curve["factors"].tolist()
    # PS: ∅ 0, {a} 2/3, {b} 1/3, {a, b} 1 (6 hits in all). τ = 1: {a, b} alone, PN = 3/6; τ = 0.6: {a}, whose
    # upward closure {a}, {a, b} holds 5 of the 6 hits
    assert curve.set_index("tau").loc[1.0, "factors"] == 1
    assert curve.set_index("tau").loc[1.0, "cumulative_pn"] == pytest.approx(3 / 6)
    assert curve.set_index("tau").loc[0.6, "cumulative_pn"] == pytest.approx(5 / 6)


# --- ps_by_size_figure ---------------------------------------------------------------------------------------

def test_ps_by_size_traces_are_the_two_columns_with_factors_in_hover():
    curve = pd.DataFrame({"size": [1, 2, 3], "lens_ps": [0.6, 0.94, 1.0],
                          "lens_factor": [("age",), ("age", "priors"), ("age", "priors", "sex")],
                          "attribution_ps": [0.3, 0.94, 0.97],
                          "attribution_factor": [("priors",), ("priors", "age"), ("priors", "age", "juv")]})
    fig = ps_by_size_figure(curve, attribution="LIME")
    by_column = {t.meta["column"]: t for t in fig.data}
    assert set(by_column) == {"lens_ps", "attribution_ps"}
    for column in ("lens_ps", "attribution_ps"):
        trace = by_column[column]
        assert values(trace.x) == [1, 2, 3]
        assert values(trace.y) == curve[column].tolist()
        factor = column.replace("_ps", "_factor")
        assert values(trace.customdata) == [", ".join(f) for f in curve[factor]]
        assert "%{customdata}" in trace.hovertemplate
    assert by_column["attribution_ps"].name == "top-k LIME"
    assert fig.layout.yaxis.range == (0, 1.02)


def test_ps_by_size_without_factor_columns():
    curve = pd.DataFrame({"size": [1, 2], "lens_ps": [0.5, 0.7], "attribution_ps": [0.1, 0.7]})
    fig = ps_by_size_figure(curve)
    assert [values(t.y) for t in fig.data] == [[0.5, 0.7], [0.1, 0.7]]
    assert all(t.customdata is None and "%{customdata}" not in t.hovertemplate for t in fig.data)


def test_ps_by_size_of_shap_curve_keeps_its_numbers():
    from explain_core.baselines import Attribution
    from explain_core.lens import LensContext, shap_curve
    masks = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=bool)
    labels = np.array([[0, 1, 0, 1], [0, 1, 1, 1], [0, 0, 0, 1]], dtype=np.int8)
    ctx = LensContext("r2i", ("a", "b"), masks, 1, 1, labels, np.zeros((3, 2)), np.arange(3))
    att = Attribution("SHAP", ("a", "b"), np.array([0.1, 0.5]), 0.0, "probability", "test")
    curve = shap_curve(ctx, att)
    fig = ps_by_size_figure(curve)
    lens, shap = fig.data
    assert np.allclose(values(lens.y), [2 / 3, 1.0]) and np.allclose(values(shap.y), [1 / 3, 1.0])
    assert values(lens.customdata) == ["a", "a, b"] and values(shap.customdata)[0] == "b"


# --- weights_figure ------------------------------------------------------------------------------------------

WEIGHTS = pd.DataFrame({"IHT": [-0.6, 0.0, 0.77, 0.0, 0.04], "exact (MIP)": [-0.6, 0.0, 0.77, 0.0, 0.04],
                        "LIME (k−1 + intercept)": [-0.5, 0.0, 0.7, 1e-13, -0.01]},
                       index=["bias (always true)", "keeps sex = Male", "keeps age = 31",
                              "keeps juvenile_felony_count = 0", "keeps charge_degree = Felony"])


def test_weights_traces_equal_the_table_without_zero_literals():
    fig = weights_figure(WEIGHTS)
    assert [t.name for t in fig.data] == list(WEIGHTS.columns)
    kept = ["bias (always true)", "keeps age = 31", "keeps charge_degree = Felony"]  # 1e-13 counts as 0
    for trace in fig.data:
        assert trace.meta["role"] == "weights" and trace.orientation == "h"
        assert values(trace.y) == kept
        assert values(trace.x) == WEIGHTS.loc[kept, trace.name].tolist()
    # the first literal (and, within it, the first method) on top; every name in full, with room for it
    assert fig.layout.yaxis.autorange == "reversed"
    assert fig.layout.yaxis.type == "category" and fig.layout.yaxis.automargin
    assert fig.layout.barmode == "group"


def test_weights_all_zero_or_empty_tables_draw_no_bars():
    zero = pd.DataFrame({"IHT": [0.0, 0.0]}, index=["bias (always true)", "keeps a = 1"])
    fig = weights_figure(zero)
    assert all(len(values(t.y)) == 0 for t in fig.data)
    empty = weights_figure(pd.DataFrame({"IHT": []}, dtype=float))
    assert all(len(values(t.x)) == 0 for t in empty.data)


def test_weights_nan_is_not_a_weight_and_title_passes_through():
    table = pd.DataFrame({"a": [np.nan, 0.2], "b": [np.nan, 0.0]}, index=["keeps x = 1", "keeps y = 2"])
    fig = weights_figure(table, title="My title")
    assert values(fig.data[0].y) == ["keeps y = 2"] and values(fig.data[1].x) == [0.0]
    assert fig.layout.title.text == "My title"


def test_weights_height_grows_with_the_bars():
    small = weights_figure(WEIGHTS.iloc[:1])
    big = weights_figure(pd.DataFrame(np.ones((30, 5)), index=[f"keeps f{i} = {i}" for i in range(30)]))
    assert big.layout.height > small.layout.height >= 320


# --- sweep_figure --------------------------------------------------------------------------------------------

def summary_table(parameter="k"):
    rows = []
    for value in (3, 1, 2):  # unsorted on purpose
        for method, base in (("iht", 0.1), ("exact", 0.05), ("lime", 0.3)):
            rows.append({parameter: value, "method": method, "mean": base / value, "std": 0.01 * value, "count": 4})
    return pd.DataFrame(rows)


def test_sweep_one_line_per_method_in_parameter_order():
    summary = summary_table()
    fig = sweep_figure(summary, "k")
    assert [t.name for t in fig.data] == ["iht", "exact", "lime"]
    for trace in fig.data:
        part = summary[summary["method"] == trace.name].sort_values("k")
        assert values(trace.x) == [1, 2, 3]
        assert np.allclose(values(trace.y), part["mean"])
        assert np.allclose(values(trace.error_y.array), part["std"])
    assert fig.layout.xaxis.type == "linear" and fig.layout.yaxis.rangemode == "tozero"
    assert fig.layout.title.text == "relevance against k"


def test_sweep_of_single_instances_has_no_error_bars_and_m_is_logarithmic():
    summary = summary_table("m").assign(std=np.nan, count=1, m=lambda t: t["m"] * 1000)
    fig = sweep_figure(summary, "m", metric="anchoring_gap")
    assert all(t.error_y.array is None for t in fig.data)
    assert fig.layout.xaxis.type == "log"
    assert values(fig.data[0].x) == [1000, 2000, 3000]
    assert fig.layout.yaxis.title.text == "anchoring gap"


def test_sweep_figure_of_a_real_sweep_summary():
    from explain_core.linear.compare import Sweep
    table = pd.DataFrame({"sigma": [0.0, 0.0, 1.0, 1.0, 0.0, 1.0], "instance": [0, 0, 0, 0, 1, 1],
                          "method": ["iht", "lime", "iht", "lime", "iht", "iht"],
                          "relevance": [0.2, 0.4, 0.1, 0.3, 0.4, 0.3]})
    summary = Sweep("sigma", (0.0, 1.0), table).summary("relevance")
    fig = sweep_figure(summary, "sigma")
    iht = next(t for t in fig.data if t.name == "iht")
    assert np.allclose(values(iht.y), [0.3, 0.2])
    lime = next(t for t in fig.data if t.name == "lime")
    assert np.allclose(values(lime.y), [0.4, 0.3])


def test_dag_figure_draws_nodes_by_depth_and_one_arrow_per_edge():
    from explain_core.views.lens import dag_figure
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]
    fig = dag_figure(edges, {"a": 0, "b": 1, "c": 1, "d": 2, "e": 0}, highlight=["d"])
    nodes = fig.data[0]
    assert list(nodes.text) == ["a", "b", "c", "d"]  # "e" is on no edge
    assert list(nodes.y) == [0, -1, -1, -2] and list(nodes.x) == [0, -0.5, 0.5, 0]
    assert len(fig.layout.annotations) == len(edges)
    assert [c == nodes.marker.color[3] for c in nodes.marker.color] == [False, False, False, True]


def test_folded_weights_keep_the_sparse_supports_and_sum_the_dense_rest():
    """30 literals, k = 5: the bars are the literals a sparse explainer uses and one 'others' line holding the dense
    method's remaining weights, summed (brute force over the table); every column keeps its total."""
    from explain_core.views.linear import folded_weights

    rng = np.random.default_rng(0)
    names = [f"keeps x{j} = {j}" for j in range(30)]
    weights = pd.DataFrame({"shap": rng.normal(size=30)}, index=names)
    for method in ("iht", "exact", "lime"):
        w = np.zeros(30)
        w[rng.choice(30, size=5, replace=False)] = rng.normal(size=5)
        weights[method] = w
    folded = folded_weights(weights)
    used = [n for n in names if (weights.loc[n, ["iht", "exact", "lime"]] != 0).any()]
    assert list(folded.index[:-1]) == used and folded.index[-1] == f"others ({30 - len(used)} literals, summed)"
    rest = [n for n in names if n not in used]
    assert folded.loc[folded.index[-1], "shap"] == pytest.approx(weights.loc[rest, "shap"].sum())
    assert (folded.loc[folded.index[-1], ["iht", "exact", "lime"]] == 0).all()
    np.testing.assert_allclose(folded.sum(), weights.sum())
    assert len(folded) <= 3 * 5 + 1


def test_the_sankey_names_each_value_once_with_its_rows_and_grows_with_them():
    from explain_core.views.sparse import sev_sankey

    rng = np.random.default_rng(1)
    moves = pd.DataFrame({"before": rng.choice(["1", "2", "3", "4", "5", "6", "none"], 200),
                          "after": rng.choice(["1", "2", "none"], 200)})
    fig = sev_sankey(moves)
    labels = list(fig.data[0].node.label)
    left = sorted(set(moves["before"]), key=lambda s: (not s.isdigit(), s))
    counts = [int((moves["before"] == s).sum()) for s in left]
    assert labels[:len(left)] == [f"{'SEV⁺ ' if s.isdigit() else ''}{s} · {n} rows" for s, n in zip(left, counts)]
    assert len(set(labels)) == len(labels) and fig.layout.height >= 56 * len(left)
    assert [a.text for a in fig.layout.annotations] == ["before", "after"]
