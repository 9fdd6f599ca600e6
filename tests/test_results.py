"""Every method's result carries ``meta`` and round-trips through JSON (to_json → from_json → the same object,
arrays, NaN and ±inf included); the model is never serialised. Also the parameter parts and the error hierarchy."""
from __future__ import annotations

import dataclasses
import importlib
import json
import math
import pkgutil
import re

import numpy as np
import pandas as pd
import pytest

import explain_core
from explain_core.analysis import (BaselineParameters, LensParameters, LinearParameters, Parameters, SEVParameters,
                                   agreement, dataset_sev, demo_setup, lens_report, predicted_rows, row_baselines,
                                   row_lens_contexts, row_linear, row_sev)
from explain_core.errors import ComputationError, ExplainError, IntakeError, check_choice
from explain_core.linear.compare import MethodResult
from explain_core.results import Explanation, ValueEquality

PARAMS = Parameters(m=500, lens_references=30, lime_samples=300, shap_background=20, k=3)


@pytest.fixture(scope="module")
def results():
    setup = demo_setup()
    row = int(predicted_rows(setup)[0])
    query = setup.query(row)
    sev = row_sev(setup, query, PARAMS.sev)
    base = row_baselines(setup, query, PARAMS.baselines)
    lens = lens_report(row_lens_contexts(setup, query, PARAMS.lens)["r2i"], PARAMS.lens)
    linear = row_linear(setup, query, PARAMS.linear)
    wide = dataset_sev(setup, predicted_rows(setup)[:5], PARAMS.sev)
    return {"sev": sev, "sev_result": sev.minus, "baselines": base, "lime": base.lime, "flip": base.shap_flip,
            "lens": lens, "factors": lens.factors, "linear": linear, "comparison": linear.comparison, "wide": wide,
            "agreement": agreement(setup.dataset.group_names, sev=sev, lens=lens.factors, linear=linear,
                                   baselines=base)}


def same(a, b, path="") -> None:
    """Deep equality of two results: dataclass fields, arrays (NaN equal NaN), frames, floats (inf/NaN)."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), path
        for f in dataclasses.fields(a):
            if f.repr:
                same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, np.asarray(b), err_msg=path)
    elif isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b, check_dtype=False, obj=path)
    elif isinstance(a, pd.Series):
        assert a.to_dict() == pytest.approx(b.to_dict()) if a.dtype.kind in "if" else list(map(str, a)) == \
            list(map(str, b)), path
    elif isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or a == b, (path, a, b)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            same(a[k], b[k], f"{path}[{k}]")
    else:
        assert a == b, (path, a, b)


@pytest.mark.parametrize("name", ["sev", "sev_result", "baselines", "lime", "flip", "lens", "factors", "linear",
                                  "comparison", "wide", "agreement"])
def test_results_round_trip_through_json(results, name):
    result = results[name]
    assert isinstance(result, Explanation)
    text = result.to_json()
    payload = json.loads(text)  # strict JSON
    assert payload["meta"]["type"] == type(result).__name__
    assert payload["meta"]["explain_core"] == explain_core.__version__
    assert payload["meta"]["method"] and isinstance(payload["meta"]["parameters"], dict)
    back = type(result).from_json(text)
    same(result, back)
    assert back.to_json() == text
    assert "estimator" not in text and "ModelAdapter" not in text  # the model is never serialised


@pytest.mark.parametrize("name", ["sev", "sev_result", "baselines", "lime", "flip", "lens", "factors", "linear",
                                  "comparison", "wide", "agreement"])
def test_results_are_equal_by_value_and_never_raise(results, name):
    """One convention for results holding arrays and frames: value equality (Explanation's __eq__, NaN equal
    NaN), so a result read back from its JSON equals it; comparing never raises; results are unhashable."""
    result = results[name]
    back = type(result).from_json(result.to_json())
    assert back == result and not back != result and result == result
    assert result != "not a result" and result != results["agreement" if name != "agreement" else "sev"]
    with pytest.raises(TypeError):
        hash(result)


def test_every_result_type_of_the_package_compares_by_value():
    """The convention holds for every Explanation of every module, not only the results built above: a dataclass
    that forgot ``eq=False`` gets a generated ``__eq__`` that raises on its arrays and series."""
    for module in pkgutil.walk_packages(explain_core.__path__, "explain_core."):
        if not module.name.endswith(("__main__", ".migrations.env")):  # an Alembic script, run by Alembic
            importlib.import_module(module.name)
    kinds = set()
    pending = [Explanation]
    while pending:
        kinds.update(sub := pending.pop().__subclasses__())
        pending.extend(sub)
    named = {k.__name__ for k in kinds}
    assert {"SEVExplanation", "SingleSEV", "ClusterSEV", "KindsTable", "CounterfactualComparison"} <= named
    generated = sorted(k.__name__ for k in kinds if k.__eq__ is not ValueEquality.__eq__ or k.__hash__ is not None)
    assert generated == []


def test_equality_sees_every_array_element(results):
    minus = results["sev_result"]
    assert minus.vertex_scores is not None and len(minus.vertex_scores) > 1
    assert minus == dataclasses.replace(minus, vertex_scores=minus.vertex_scores.copy())
    nudged = minus.vertex_scores.copy()
    nudged[-1] += 1e-12
    assert minus != dataclasses.replace(minus, vertex_scores=nudged)
    assert minus != dataclasses.replace(minus, vertex_masks=None)
    lens = results["lens"]
    curve = lens.pn_curve.copy()
    curve.iloc[0, -1] = np.nan
    assert dataclasses.replace(lens, pn_curve=curve) == dataclasses.replace(lens, pn_curve=curve.copy())
    assert dataclasses.replace(lens, pn_curve=curve) != lens
    linear = results["linear"]
    assert linear.comparison.results[0] == linear.comparison.results[0].__class__(
        **{f.name: getattr(linear.comparison.results[0], f.name) for f in dataclasses.fields(MethodResult)})
    from explain_core.sev.engine import Hypercube
    cube = Hypercube(("a", "b"), np.array([[True, False]]), np.array([0.5]), np.array([1]))
    assert cube == Hypercube(("a", "b"), np.array([[True, False]]), np.array([0.5]), np.array([1]))
    assert cube != Hypercube(("a", "b"), np.array([[True, True]]), np.array([0.5]), np.array([1]))


def test_meta_names_the_parameters(results):
    assert results["sev_result"].meta["parameters"] == {"kind": "minus", "max_depth": 6, "restricted": []}
    assert results["factors"].meta["parameters"] == {"direction": "r2i", "tau": 0.9, "alpha": None, "order": "subset",
                                                     "correction": "holm", "family": 128}
    assert results["linear"].meta["parameters"] == {"k": 3, "sigma": 1.0, "m": 500, "seed": 0}


def test_infinite_costs_survive_the_round_trip(results):
    factors = results["lens"].recourse
    fake = dataclasses.replace(factors, factors=tuple(dataclasses.replace(f, cost=math.inf, reference=None)
                                                      for f in factors.factors[:2]))
    back = type(fake).from_json(fake.to_json())
    assert [f.cost for f in back.factors] == [math.inf] * len(back.factors)


@pytest.mark.parametrize("index", [None, pd.Index(["SEV¹", "SEV^F", "SEV^©"], name="kind"), pd.Index([4, 9, 2])])
def test_a_table_keeps_its_index_and_its_non_finite_numbers(index):
    """A frame read back from a result's JSON has its index (a kinds table's kind names) and floats where NaN and
    ±inf were written as strings: before, the index became a column and "NaN" stayed a string."""
    table = pd.DataFrame({"mean SEV": [1.2, math.nan, math.inf], "explained": [3, 2, 1], "note": ["a", "", "c"]})
    table = table if index is None else table.set_index(index)
    text = json.dumps(explain_core.results.to_jsonable(table, exact=True), allow_nan=False)
    back = explain_core.results.decode(pd.DataFrame, json.loads(text))
    assert list(back.index) == list(table.index) and back.index.name == table.index.name
    assert back["mean SEV"].dtype == np.float64 and back["explained"].dtype == np.int64
    assert explain_core.results.same_value(back, table)


def test_from_json_refuses_another_type(results):
    with pytest.raises(IntakeError, match="holds a SEVResult, not a LensResult"):
        type(results["factors"]).from_json(results["sev_result"].to_json())


def test_parameters_split_into_hashable_parts():
    p = Parameters(max_depth=4, tau=0.8, k=2, seed=7, lime_samples=100)
    assert p.sev == SEVParameters(max_depth=4)
    assert p.lens == LensParameters(tau=0.8, seed=7)
    assert p.linear == LinearParameters(k=2, seed=7)
    assert p.baselines == BaselineParameters(lime_samples=100, seed=7)
    assert len({p.sev, p.lens, p.linear, p.baselines, Parameters().lens}) == 5  # hashable, distinct
    assert p.lens == dataclasses.replace(p, k=3).lens  # changing k leaves LENS's cache key unchanged


@pytest.mark.parametrize("kwargs, message", [
    ({"sigma": math.nan}, "σ must be in [0, inf), not nan"), ({"k": 1.5}, "k must be a whole number of at least 1"),
    ({"tau": 1.5}, "τ must be in (0, 1], not 1.5"), ({"alpha": 1.0}, "The test level α must be in (0, 1), not 1.0"),
    ({"lime_samples": 5}, "The number of LIME samples must be a whole number of at least 10, not 5"),
    ({"time_limit": 0.0}, "The exact linear fit's time limit (s) must be in (0, inf)"),
    ({"clusters": 30}, "The number of typical cases must be in [1, 20], not 30"),
    ({"credible": 1.0}, "The credible threshold must be in [0, 1), not 1.0"),
    ({"dice_count": 0}, "The number of DiCE counterfactuals must be a whole number of at least 1, not 0")])
def test_a_parameter_out_of_range_is_refused_by_its_own_name(kwargs, message):
    """Each knob's message names it (one message used to list six settings for any of them; NaN passed σ's)."""
    with pytest.raises(IntakeError, match=re.escape(message)):
        Parameters(**kwargs)
    assert Parameters(sigma=math.inf, alpha=0.05, clusters=20, credible=0.0).alpha == 0.05


def test_one_error_hierarchy():
    assert issubclass(IntakeError, ExplainError) and issubclass(IntakeError, ValueError)
    assert issubclass(ComputationError, ExplainError) and issubclass(explain_core.UntrustedModelError, IntakeError)
    assert check_choice("b", ("a", "b"), "letter") == "b"
    with pytest.raises(IntakeError, match="Unknown letter 'c'; the letter must be one of: a, b"):
        check_choice("c", ("a", "b"), "letter")
    with pytest.raises(IntakeError, match="SEV kind"):
        explain_core.sev_batch(None, None, pd.DataFrame({"a": [1]}), None, explain_core.BFSSearch(kind="sideways"))
