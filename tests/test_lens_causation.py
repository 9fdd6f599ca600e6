"""Pearl's probabilities of causation beside LENS (issue 29 item 6): PN, PS, PNS by enumeration on a hand-built
bivariate Boolean SCM, LENS Prop. 4's equalities there, the Tian–Pearl bounds by hand and against a linear
programme over every joint of (X, Y_x, Y_x'), and the SCM's point values inside the bounds."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

from explain_core.lens import ContextOptions
from explain_core.lens.causal import CausalGraph, ScmSettings, causal_contexts, fit_scm
from explain_core.lens.causation import (Bounds, CausationOptions, CausationProbabilities, Observed,
                                         probabilities_of_causation, tian_pearl_bounds)
from test_lens import dataset_of, model_of
from test_lens_causal import gaussian_scm

NOISE = {0: [-1.0, 0.0, 1.0], 1: [-2.0, -1.0, 0.0, 1.0, 2.0]}  # mean 0 in each group: OLS recovers b = 2 a + u


def predict(a, b):
    return np.asarray(b + 0.5 * a >= 2, dtype=float)


def boolean_case():
    """a ∈ {0, 1} (the treatment), b = 2a + u with u's listed per group, f = 1[b + a/2 ≥ 2]; input (1, 3)."""
    rows = [(a, 2 * a + u) for a, us in NOISE.items() for u in us]
    frame = pd.DataFrame(rows, columns=["a", "b"])
    data = dataset_of(frame, kinds={"a": "numeric", "b": "numeric"})
    scm = fit_scm(data, CausalGraph((("a", "b"),)), settings=ScmSettings(noise="abduction"))
    model = model_of(lambda f: predict(f["a"].to_numpy(float), f["b"].to_numpy(float)), ["a", "b"])
    return data, frame, scm, model, pd.DataFrame({"a": [1.0], "b": [3.0]})


def enumerated():
    """Every unit's X, Y, Y_{a=1}, Y_{a=0} from b = 2a + u, and PN, PS, PNS by their definitions."""
    units = [(a, u) for a, us in NOISE.items() for u in us]
    x = np.array([a == 1 for a, _ in units])
    y = np.array([predict(a, 2 * a + u) for a, u in units]) == 1
    y1 = np.array([predict(1, 2 + u) for _, u in units]) == 1
    y0 = np.array([predict(0, u) for _, u in units]) == 1
    return x, y, y1, y0, {"pn": np.mean(~y0[x & y]), "ps": np.mean(y1[~x & ~y]), "pns": np.mean(y1 & ~y0)}


def test_pn_ps_pns_equal_enumeration_on_a_bivariate_boolean_scm():
    data, frame, scm, model, query = boolean_case()
    result = probabilities_of_causation(model, data, query, frame, scm, ["a"])
    x, y, y1, y0, exact = enumerated()
    assert (exact["pn"], exact["ps"], exact["pns"]) == pytest.approx((2 / 3, 2 / 3, 0.5))  # by hand, see the docstring
    assert (result.pn, result.ps, result.pns) == pytest.approx((exact["pn"], exact["ps"], exact["pns"]))
    o = result.observed
    assert (o.x_y, o.x_not_y, o.not_x_y, o.not_x_not_y) == pytest.approx(
        (np.mean(x & y), np.mean(x & ~y), np.mean(~x & y), np.mean(~x & ~y)))
    assert (o.y_do_x, o.y_do_not_x) == pytest.approx((y1.mean(), y0.mean()))
    for name in ("pn", "ps", "pns"):
        assert getattr(result, f"{name}_bounds").contains(getattr(result, name))


def test_lens_proposition_4_on_the_boolean_scm():
    """suf = R2I PS(c, y) over the units at (x', y'); nec = the mean over inputs at (x, y) of I2R PS(1 − c, y')
    over units at x'; and LENS's own measures over all units equal the result's."""
    data, frame, scm, model, query = boolean_case()
    result = probabilities_of_causation(model, data, query, frame, scm, ["a"])
    x, y, *_ = enumerated()
    r2i = causal_contexts(model, data, query, frame[~x & ~y], scm,
                          ContextOptions(directions=["r2i"], max_size=1))["r2i"]
    assert r2i.ps[r2i.index(["a"])] == pytest.approx(result.ps)
    necessity = [causal_contexts(model, data, frame.iloc[[i]], frame[~x], scm,
                                 ContextOptions(directions=["i2r"], max_size=1))["i2r"]
                 for i in np.flatnonzero(x & y)]
    assert np.mean([c.ps[c.index(["a"])] for c in necessity]) == pytest.approx(result.pn)
    both = causal_contexts(model, data, query, frame, scm, ContextOptions(max_size=1))
    assert result.lens_sufficiency == pytest.approx(both["r2i"].ps[both["r2i"].index(["a"])])
    assert result.lens_necessity == pytest.approx(both["i2r"].ps[both["i2r"].index(["a"])])
    assert result.lens_necessity == pytest.approx(3 / 8)  # the input (u = 1) under a = 0: b = 1, y' for the 3 at x'


def test_tian_pearl_bounds_by_hand():
    o = Observed(x_y=0.3, x_not_y=0.2, not_x_y=0.1, not_x_not_y=0.4, y_do_x=0.5, y_do_not_x=0.2)
    b = tian_pearl_bounds(o)
    # PNS: max(0, .5 − .2, .4 − .2, .5 − .4) = .3; min(.5, .8, .3 + .4, .5 − .2 + .2 + .1) = .5
    assert (b["pns"].low, b["pns"].high) == pytest.approx((0.3, 0.5))
    # PN: max(0, (.4 − .2)/.3) = 2/3; min(1, (1 − .2 − .4)/.3) = 1.  PS: (.5 − .4)/.4 = .25; (.5 − .3)/.4 = .5
    assert (b["pn"].low, b["pn"].high) == pytest.approx((2 / 3, 1.0))
    assert (b["ps"].low, b["ps"].high) == pytest.approx((0.25, 0.5))
    empty = tian_pearl_bounds(Observed(0.0, 0.5, 0.1, 0.4, 0.2, 0.3))
    assert np.isnan(empty["pn"].low) and not np.isnan(empty["ps"].low)


def linear_programme_bounds(p: np.ndarray) -> dict[str, tuple[float, float]]:
    """The extremes of PNS, PN, PS over every distribution q of (X, Y_x, Y_x') ∈ {0, 1}³ with the same
    P(X, Y) (Y = Y_x where X = 1, Y_x' where X = 0) and the same P(Y_x = 1), P(Y_x' = 1) as ``p``."""
    cells = [(x, a, b) for x in (0, 1) for a in (0, 1) for b in (0, 1)]
    rows = [[float(c[0] == x and (c[1] if x else c[2]) == yy) for c in cells] for x in (0, 1) for yy in (0, 1)]
    rows += [[float(c[1] == 1) for c in cells], [float(c[2] == 1) for c in cells]]
    A, b = np.array(rows), np.array(rows) @ p
    pns = np.array([float(c[1] == 1 and c[2] == 0) for c in cells])
    pn = np.array([float(c[0] == 1 and c[1] == 1 and c[2] == 0) for c in cells]) / (A[3] @ p)
    ps = np.array([float(c[0] == 0 and c[2] == 0 and c[1] == 1) for c in cells]) / (A[0] @ p)
    out = {}
    for name, objective in (("pns", pns), ("pn", pn), ("ps", ps)):
        low = linprog(objective, A_eq=A, b_eq=b, bounds=(0, 1)).fun
        high = -linprog(-objective, A_eq=A, b_eq=b, bounds=(0, 1)).fun
        out[name] = (low, high)
    return out


@pytest.mark.parametrize("seed", range(30))
def test_tian_pearl_bounds_equal_the_linear_programme(seed):
    p = np.random.default_rng(seed).dirichlet(np.ones(8) * 0.7)
    cells = [(x, a, b) for x in (0, 1) for a in (0, 1) for b in (0, 1)]
    mass = {c: q for c, q in zip(cells, p)}
    o = Observed(x_y=sum(q for (x, a, _), q in mass.items() if x and a),
                 x_not_y=sum(q for (x, a, _), q in mass.items() if x and not a),
                 not_x_y=sum(q for (x, _, b), q in mass.items() if not x and b),
                 not_x_not_y=sum(q for (x, _, b), q in mass.items() if not x and not b),
                 y_do_x=sum(q for (_, a, _), q in mass.items() if a),
                 y_do_not_x=sum(q for (_, _, b), q in mass.items() if b))
    ours, lp = tian_pearl_bounds(o), linear_programme_bounds(p)
    for name in ("pns", "pn", "ps"):
        assert (ours[name].low, ours[name].high) == pytest.approx(lp[name], abs=1e-7)


@pytest.mark.parametrize("noise", ["abduction", "gaussian"])
def test_point_values_lie_inside_the_bounds_on_a_mixed_scm(noise):
    data, frame, scm = gaussian_scm(600, seed=4, noise=noise)
    model = model_of(lambda f: ((f["b"].to_numpy(float) > 1) & (f["c"] == "hi").to_numpy()).astype(float),
                     ["a", "b", "c"])
    query = pd.DataFrame({"a": [1.0], "b": [2.5], "c": ["hi"]})
    for factor in (["c"], ["b", "c"]):
        result = probabilities_of_causation(model, data, query, frame, scm, factor, CausationOptions(draws=8, seed=3))
        # no unit shares the input's b = 2.5: P(x, y) = 0 and PN is undefined, as are its bounds
        defined = ("pn", "ps", "pns") if factor == ["c"] else ("ps", "pns")
        assert factor == ["c"] or (np.isnan(result.pn) and np.isnan(result.pn_bounds.low))
        for name in defined:
            value, bounds = getattr(result, name), getattr(result, f"{name}_bounds")
            assert np.isfinite(value) and bounds.contains(value), (factor, name, value, bounds)
            assert bounds.high - bounds.low < 1 - 1e-9  # informative: narrower than [0, 1]
        assert CausationProbabilities.from_json(result.to_json()) == result
        again = probabilities_of_causation(model, data, query, frame, scm, factor, CausationOptions(draws=8, seed=3))
        assert again == result  # seeded
    assert Bounds(0.2, 0.4).contains(0.4) and not Bounds(0.2, 0.4).contains(0.41)
