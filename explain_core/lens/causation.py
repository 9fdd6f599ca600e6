"""Pearl's probabilities of causation for one factor in the causal LENS context (LENS §2 and Prop. 4; Pearl 2000,
Ch. 9; Tian & Pearl 2000), beside LENS's own sufficiency measures for the same factor.

The binary treatment of a factor c is "c at the input's values" (x) against "c at a unit's other values" (x');
the outcome is "the model predicts the input's class" (y) against the other class (y'). The units are data rows
(a seeded sample of the training rows, whatever their prediction), each with the SCM's equations and noise:

* ``ps`` = P(y_x | x', y'), the probability of sufficiency: among units with c elsewhere and predicted y', the share
  that setting c to the input's values (propagated through the SCM) turns to y.
* ``pn`` = P(y'_x' | x, y), the probability of necessity: among units sharing the input's c and predicted y, the
  share that moving c to another unit's values turns to y'. x' is a stochastic intervention: each such unit takes
  the values of up to ``draws`` units at x' (seeded), and its Y_x' is the average over them.
* ``pns`` = P(y_x, y'_x') over every unit.

Point values come from counterfactual simulation of the SCM. By consistency one of a unit's two potential outcomes
is its observed one (Y_x = Y where X = x, Y_x' = Y where X = x'), so each unit needs one simulated counterfactual;
it is an exact counterfactual where every node it reaches has its noise abducted (numeric nodes with
``noise="abduction"``); with Gaussian noise, or any categorical node (drawn afresh from its classifier), it is the
SCM's counterfactual with that noise drawn anew. Without the SCM's functional form only the Tian–Pearl bounds are
identified, from the observational P(x, y), … (the data, the model's labels) and the interventional P(y_x),
P(y_x') (the SCM's draws); :func:`tian_pearl_bounds` gives them, and the point values lie inside them.

LENS's counterparts (Prop. 4): ``lens_sufficiency`` = R2I PS(c, y) over the units = P(y_x) (a unit already at x is
unchanged), and ``lens_necessity`` = I2R PS(1 − c, y') of the input alone: the share of units whose values of c,
given to the input, turn it to y' (a unit at x leaves it unchanged). Prop. 4's equalities hold when R2I's units are
those at (x', y') and I2R's inputs those at (x, y) — which LENS's opposite-class references are not in general.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import IntakeError, names_method
from ..vertices import DEFAULT_CHUNK_ROWS, one_row
from ..intake.data import Dataset
from ..intake.models import ModelAdapter
from ..results import Explanation
from .causal import StructuralModel, intervene
from .sampling import _differs

DEFAULT_DRAWS = 32  # units at x' whose values of c each unit at x takes under do(x')


@dataclass(frozen=True)
class Bounds:
    """An identified interval [low, high]; NaN where its conditioning event has probability 0."""

    low: float
    high: float

    def contains(self, value: float, tol: float = 1e-12) -> bool:
        return bool(self.low - tol <= value <= self.high + tol)


@dataclass(frozen=True)
class Observed:
    """The joint P(X, Y) of treatment and prediction over the units, and the interventional P(y_x), P(y_x')."""

    x_y: float
    x_not_y: float
    not_x_y: float
    not_x_not_y: float
    y_do_x: float
    y_do_not_x: float


@dataclass(frozen=True, eq=False)
class CausationProbabilities(Explanation):
    """PN, PS, PNS of a factor (point values by the SCM, NaN where undefined) with their Tian–Pearl bounds, the
    probabilities the bounds use, and LENS's R2I and I2R sufficiency of the same factor."""

    factor: tuple[str, ...]
    outcome: int
    units: int
    draws: int
    noise: str
    observed: Observed
    pn: float
    ps: float
    pns: float
    pn_bounds: Bounds
    ps_bounds: Bounds
    pns_bounds: Bounds
    lens_sufficiency: float
    lens_necessity: float

    method = "Probabilities of causation"
    meta_parameters = ("factor", "draws", "noise")

    def table(self) -> pd.DataFrame:
        rows = [("PN", "P(y′ₓ′ | x, y)", self.pn, self.pn_bounds), ("PS", "P(yₓ | x′, y′)", self.ps, self.ps_bounds),
                ("PNS", "P(yₓ, y′ₓ′)", self.pns, self.pns_bounds)]
        return pd.DataFrame({"quantity": [r[0] for r in rows], "notation": [r[1] for r in rows],
                             "SCM": [r[2] for r in rows], "lower bound": [r[3].low for r in rows],
                             "upper bound": [r[3].high for r in rows]})


def tian_pearl_bounds(o: Observed) -> dict[str, Bounds]:
    """Tian & Pearl (2000)'s bounds on PNS, PN and PS from observational and interventional probabilities
    (Pearl 2000, Ch. 9.3, eqs. 9.20–9.21 and the PN/PS forms they imply); NaN where P(x, y) or P(x', y') is 0."""
    y = o.x_y + o.not_x_y
    pns = Bounds(max(0.0, o.y_do_x - o.y_do_not_x, y - o.y_do_not_x, o.y_do_x - y),
                 min(o.y_do_x, 1 - o.y_do_not_x, o.x_y + o.not_x_not_y,
                     o.y_do_x - o.y_do_not_x + o.x_not_y + o.not_x_y))
    pn = (Bounds(max(0.0, (y - o.y_do_not_x) / o.x_y), min(1.0, (1 - o.y_do_not_x - o.not_x_not_y) / o.x_y))
          if o.x_y > 0 else Bounds(np.nan, np.nan))
    ps = (Bounds(max(0.0, (o.y_do_x - y) / o.not_x_not_y), min(1.0, (o.y_do_x - o.x_y) / o.not_x_not_y))
          if o.not_x_not_y > 0 else Bounds(np.nan, np.nan))
    return {"pns": pns, "pn": pn, "ps": ps}


@dataclass(frozen=True)
class CausationOptions:
    """How :func:`probabilities_of_causation` simulates the counterfactuals: the units at x' each unit at x takes
    under do(x'), the seed of those draws and of the SCM's noise, the rows per model call.

    Parameters
    ----------
    draws : int
        Units at x' whose values of the factor each unit at x takes under do(x') (all of them when fewer).
    seed : int
        Seeds the draws and the SCM's sampling.
    chunk_rows : int
        Rows per model call.
    """

    draws: int = DEFAULT_DRAWS
    seed: int = 0
    chunk_rows: int = DEFAULT_CHUNK_ROWS


DEFAULT_CAUSATION = CausationOptions()
""":data:`DEFAULT_DRAWS` draws, seed 0, the default rows per model call."""


@names_method("probabilities of causation")
def probabilities_of_causation(model: ModelAdapter, dataset: Dataset, query, units: pd.DataFrame,
                               scm: StructuralModel, factor: Sequence[str],
                               options: CausationOptions = DEFAULT_CAUSATION) -> CausationProbabilities:
    """PN, PS, PNS of ``factor`` over ``units`` (data rows) under ``scm``, their bounds and LENS's counterparts.

    Parameters
    ----------
    model : ModelAdapter
        The model explained.
    dataset : Dataset
        The data.
    query
        The input row.
    units : pandas.DataFrame
        The units: data rows of either prediction.
    scm : StructuralModel
        The fitted SCM the interventions propagate through.
    factor : sequence of str
        The factor's feature groups.
    options : CausationOptions
        The draws under do(x'), the seed, the rows per model call.

    Returns
    -------
    CausationProbabilities
        The point values, their Tian–Pearl bounds and LENS's R2I and I2R sufficiency of the factor.

    Raises
    ------
    IntakeError
        When the factor is empty or names a group the data lacks.
    """
    draws, seed, chunk_rows = options.draws, options.seed, options.chunk_rows
    layout = dataset.layout
    mask = _factor_mask(layout.names, factor)
    query = one_row(query)[list(layout.columns)]
    units = units[list(layout.columns)].reset_index(drop=True)
    y = int(model.label(query)[0])
    at_x = ~_differs(dataset, query, units)[:, mask].any(axis=1)
    observed = _labels(model, units, chunk_rows) == y
    rng = np.random.default_rng(seed)
    pool = np.flatnonzero(~at_x)
    y_do_x = observed.astype(float)  # consistency where X = x
    y_do_x[pool] = _outcome(model, scm, layout, units.iloc[pool], query, mask, rng, chunk_rows) == y
    y_do_not_x = observed.astype(float)  # consistency where X = x'
    picks = _picks(len(pool), int(at_x.sum()), draws, rng)
    if picks.size:
        bases = units.iloc[np.repeat(np.flatnonzero(at_x), picks.shape[1])]
        moved = _outcome(model, scm, layout, bases, units.iloc[pool[picks.ravel()]], mask, rng, chunk_rows) == y
        y_do_not_x[at_x] = moved.reshape(picks.shape).mean(axis=1)
    flips = _outcome(model, scm, layout, query.iloc[np.zeros(len(pool), dtype=np.intp)], units.iloc[pool], mask,
                     rng, chunk_rows) != y
    o = Observed(*(float(np.mean(a)) for a in (at_x & observed, at_x & ~observed, ~at_x & observed,
                                               ~at_x & ~observed, y_do_x, y_do_not_x)))
    bounds = tian_pearl_bounds(o)
    return CausationProbabilities(
        tuple(factor), y, len(units), draws, scm.settings.noise, o,
        pn=_mean(1 - y_do_not_x[at_x & observed]), ps=_mean(y_do_x[~at_x & ~observed]),
        pns=float(np.mean(np.where(at_x, observed * (1 - y_do_not_x), ~observed * y_do_x))),
        pn_bounds=bounds["pn"], ps_bounds=bounds["ps"], pns_bounds=bounds["pns"],
        lens_sufficiency=o.y_do_x, lens_necessity=float(flips.sum() / len(units)))


def _factor_mask(names: Sequence[str], factor: Sequence[str]) -> np.ndarray:
    unknown = [g for g in factor if g not in names]
    if unknown or not factor:
        raise IntakeError(f"Choose a factor of one or more feature groups among {', '.join(names)}"
                          + (f"; unknown: {', '.join(map(str, unknown))}." if unknown else "."))
    return np.isin(list(names), list(factor))


def _picks(pool: int, units: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """(units, k): which pool members each unit at x takes under do(x') — all of them when the pool holds at most
    ``draws``, else ``draws`` without replacement per unit."""
    if not pool or not units:
        return np.zeros((0, 0), dtype=np.intp)
    if pool <= draws:
        return np.tile(np.arange(pool), (units, 1))
    return np.stack([rng.choice(pool, size=draws, replace=False) for _ in range(units)])


def _outcome(model, scm, layout, base: pd.DataFrame, source: pd.DataFrame, mask: np.ndarray, rng,
             chunk_rows: int) -> np.ndarray:
    """The model's labels of ``base``'s rows with the factor set to ``source``'s values (one source row for all, or
    one per base row), propagated through ``scm``."""
    if source.shape[0] == 1 and len(base) != 1:
        source = source.iloc[np.zeros(len(base), dtype=np.intp)]
    rows = intervene(scm, layout, base, source, np.tile(mask, (len(base), 1)), rng)
    return _labels(model, rows, chunk_rows)


def _labels(model: ModelAdapter, rows: pd.DataFrame, chunk_rows: int) -> np.ndarray:
    if not len(rows):
        return np.zeros(0, dtype=int)
    return np.concatenate([model.label(rows.iloc[s:s + chunk_rows]) for s in range(0, len(rows), chunk_rows)])


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")
