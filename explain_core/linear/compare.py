"""Linear explanations side by side on one shared sample (PLE paper §6): IHT, the exact fit, LIME in
the same Boolean space, KernelSHAP (dense, and truncated to k), the ℓ1 relaxation, MAPLE (:mod:`.maple`); and the sweeps
of relevance against k, σ and m (Figs. 4-6) as plot-ready tables.

LIME and KernelSHAP in the Boolean space live in :mod:`.surrogates`. :func:`compare` is the one fitting pipeline:
the linear explanation of a row (:func:`explain_linear`, the app, the PDF) is its result with the row's literals.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import IntakeError, check_between, check_choice, check_count, names_method
from ..limits import limits, over
from ..results import Explanation
from .comparison import Comparison, MethodResult
from .exact import exact_fit
from .iht import iht
from .maple import maple_fit
from .metrics import RELEVANCE_SAMPLES, Scores, score
from .miqp import l1_relaxation
from .problem import support_of
from .space import LiteralSpace, TargetScale, draw_sample
from .surrogates import SHAP_BACKGROUND, kernel_shap, lime_fit

METHODS = ("iht", "exact", "lime", "shap", "shap_k", "l1_relax", "maple")
"""Every explainer :func:`compare` and :func:`explain_linear` fit on the shared sample."""
SWEEP_GRIDS = {"k": tuple(range(1, 9)), "sigma": tuple(np.round(np.arange(0, 2.0, 0.25), 2)),
               "m": (100, 300, 1000, 3000, 10_000, 30_000, 100_000)}
SOLVERS = ("exact", "iht")
"""Whose w is the linear explanation: the certified ``exact`` fit, or ``iht``'s."""


def check_samples(m: int) -> None:
    """m is capped by the ``linear_samples`` limit (a sample and a hold-out sample of m rows each).

    Parameters
    ----------
    m : int
        Samples.

    Raises
    ------
    IntakeError
        When ``m`` passes the limit.
    """
    cap = limits().linear_samples
    if m > cap:
        raise over("The number of samples m", m, cap, "choose a smaller m (a few thousand is usually enough).")


# ---------------------------------------------------------------------------------------------------
# One task, every method on the same sample

@dataclass(frozen=True)
class FittingOptions:
    """The rarely changed knobs of one fit of the explainers (:func:`compare`, :func:`explain_linear`,
    :func:`sweep`): which explainers, the exact fit's seconds, the hold-out sample's size, the relevance's Monte
    Carlo draws and SHAP's background rows. k, σ, m and the seed are the functions' own arguments.

    Parameters
    ----------
    methods : sequence of str, optional
        The explainers (see ``METHODS``); None: :func:`compare`'s and :func:`sweep`'s IHT, the exact fit and LIME,
        :func:`explain_linear`'s IHT and its solver.
    time_limit : float
        The exact fit's seconds.
    holdout_m : int, optional
        Hold-out samples; None: m.
    relevance_samples : int
        Monte Carlo draws of the relevance.
    shap_background : int
        SHAP's background rows.
    """

    methods: Sequence[str] | None = None
    time_limit: float = 10.0
    holdout_m: int | None = None
    relevance_samples: int = RELEVANCE_SAMPLES
    shap_background: int = SHAP_BACKGROUND


DEFAULT_FITTING = FittingOptions()
"""The default explainers, the exact fit's 10 s, a hold-out of m samples, the default relevance draws and SHAP
background."""
COMPARED = ("iht", "exact", "lime")
"""The explainers :func:`compare` and :func:`sweep` fit when ``options.methods`` is None."""


@names_method("the linear explanations")
def compare(space: LiteralSpace, k: int = 5, sigma: float = 1.0, m: int = 5000, *, seed: int = 0,
            options: FittingOptions = DEFAULT_FITTING) -> Comparison:
    """Fit every method in ``options.methods`` (see ``METHODS``; default IHT, the exact fit and LIME) on one sample
    of D_{x,σ} and score them on a fresh one of ``options.holdout_m`` (default m) points (§6.1: all explainers
    receive the same sample).

    Parameters
    ----------
    space : LiteralSpace
        The query and f.
    k : int
        The sparsity budget.
    sigma : float
        The neighbourhood's σ.
    m : int
        Samples.
    seed : int
        The samples' and explainers' seed.
    options : FittingOptions
        The explainers, the exact fit's seconds, the hold-out samples, the relevance's draws, SHAP's background.

    Returns
    -------
    Comparison
        Every method's w and metrics.

    Raises
    ------
    IntakeError
        When a method is unknown or the samples pass the ``linear_samples`` limit.
    """
    methods = COMPARED if options.methods is None else options.methods
    return _compare(space, k, sigma, m, seed, replace(options, methods=tuple(methods)))


def _compare(space: LiteralSpace, k: int, sigma: float, m: int, seed: int, options: FittingOptions) -> Comparison:
    """The one fitting pipeline: IHT (always: the exact fit's incumbent), then each method asked for
    (``options.methods``, a tuple)."""
    methods, time_limit, relevance_samples = options.methods, options.time_limit, options.relevance_samples
    holdout_m = options.holdout_m or m
    for method in methods:
        check_choice(method, METHODS, "linear explainer")
    check_samples(max(m, holdout_m))
    train = draw_sample(space, sigma, m, seed)
    holdout = draw_sample(space, sigma, holdout_m, seed + 1)
    fits: dict[str, tuple[np.ndarray, float, str]] = {}
    certificates: dict[str, tuple[str, float]] = {}
    t0 = time.monotonic()
    fit = iht(train, k)
    fits["iht"] = (fit.w, time.monotonic() - t0, f"{fit.iterations} iterations")
    ex = None
    if "exact" in methods:
        ex = exact_fit(train.gram, k, fit.w, time_limit=time_limit)
        fits["exact"] = (ex.w, ex.seconds, f"{ex.method} {ex.status}" + (f" gap {ex.gap:.2%}" if ex.gap else ""))
        certificates["exact"] = (ex.status, float(ex.gap))
    if "lime" in methods:
        t0 = time.monotonic()
        fits["lime"] = (lime_fit(train, k, seed=seed), time.monotonic() - t0, "")
    if "shap" in methods or "shap_k" in methods:
        t0 = time.monotonic()
        values = kernel_shap(space, sigma, seed=seed, background=options.shap_background)
        spent = time.monotonic() - t0
        fits["shap"] = (values.dense, spent, f"phi0 {values.phi0:.3f}")
        fits["shap_k"] = (values.truncated(k), spent, f"top {k - 1} of {len(values.phi)} + bias")
    if "maple" in methods:
        t0 = time.monotonic()
        w, detail = maple_fit(train, seed=seed)
        fits["maple"] = (w, time.monotonic() - t0, detail)
    if "l1_relax" in methods:
        relax = l1_relaxation(train.gram, k, time_limit=time_limit)
        fits["l1_relax"] = (relax.w, relax.seconds, f"{relax.status}, lower bound {relax.lower_bound:.4f}")
    results = tuple(MethodResult(name, w, score(space, w, train, holdout, k, seed=seed + 2,
                                                relevance_samples=relevance_samples), secs, detail,
                                 *certificates.get(name, ("", None)))
                    for name in methods for w, secs, detail in [fits[name]])
    return Comparison(k, sigma, m, seed, train.fx, results, fit, ex)


def _of_comparison(name: str) -> property:
    """A read-only property returning the :class:`Comparison`'s own ``name``."""
    return property(lambda self: getattr(self.comparison, name), doc=f"The comparison's ``{name}``.")


@dataclass(frozen=True, eq=False)
class LinearExplanation(Explanation):
    """The anchored k-sparse linear explanation of f at x: the solver's w (the certified exact fit when it ran,
    else IHT's), with every explainer fitted beside it on the same sample (``comparison``: IHT, the exact fit,
    LIME, SHAP, …; each w with its fidelity, relevance, anchoring gap and Lemma 4 bound).

    ``names`` are the literals (0 = bias; in a group space j = "keeps <group j> = <value>"), ``groups`` the feature
    group of each non-bias literal (empty outside a group space).

    Parameters
    ----------
    names : tuple of str
        The literals.
    x : numpy.ndarray
        The query in ±1 coordinates.
    fx : float
        f(x).
    target : TargetScale
        f's scale to the model's output.
    comparison : Comparison
        Every method fitted.
    groups : tuple of str
        Each non-bias literal's feature group.
    """

    names: tuple[str, ...]
    x: np.ndarray
    fx: float
    target: TargetScale
    comparison: Comparison
    groups: tuple[str, ...] = ()

    method = "anchored k-sparse linear explanation"
    meta_parameters = ("k", "sigma", "m", "seed")

    # the comparison's own k, σ, m, seed, IHT run and exact fit (ExactFit | None)
    k, sigma, m, seed, iht, exact = (_of_comparison(name) for name in ("k", "sigma", "m", "seed", "iht", "exact"))

    @property
    def solver(self) -> str:
        return "exact" if self.exact is not None else "iht"

    @property
    def w(self) -> np.ndarray:
        return self.comparison.result(self.solver).w

    @property
    def scores(self) -> Scores:
        return self.comparison.result(self.solver).scores

    @property
    def support(self) -> tuple[str, ...]:
        return tuple(self.names[j] for j in support_of(self.w))

    def table(self) -> pd.DataFrame:
        """One row per literal in the support: does x satisfy it, w_j, and its contribution w_j·x_j to f(x)
        — the contributions sum to f(x) (anchoring); in model units they sum to the model's output
        (the bias row carries the offset).

        Returns
        -------
        pandas.DataFrame
            The support's literals.
        """
        rows = []
        for j in support_of(self.w):
            contribution = float(self.w[j] * self.x[j])
            rows.append({"literal": self.names[j], "holds": bool(self.x[j] > 0), "weight": float(self.w[j]),
                         "contribution": contribution,
                         "contribution (model units)": contribution * self.target.unit
                         + (self.target.offset if j == 0 else 0.0)})
        return pd.DataFrame(rows)

    def weights(self) -> pd.DataFrame:
        """One row per literal, one column per method: the fitted weights side by side.

        Returns
        -------
        pandas.DataFrame
            Literals × methods.
        """
        return pd.DataFrame({r.method: r.w for r in self.comparison.results}, index=list(self.names))

    def support_groups(self, method: str) -> tuple[str, ...]:
        """The feature groups whose literal has a non-zero weight in ``method``'s w (bias excluded).

        Parameters
        ----------
        method : str
            A method compared.

        Returns
        -------
        tuple of str
            The groups.

        Raises
        ------
        IntakeError
            When ``method`` was not compared.
        """
        w = self.comparison.result(method).w
        names = self.groups or self.names[1:]
        return tuple(names[j - 1] for j in np.flatnonzero(np.abs(w) > 1e-12) if j > 0)


@names_method("the linear explanation")
def explain_linear(space: LiteralSpace, k: int = 5, sigma: float = 1.0, m: int = 5000, *, seed: int = 0,
                   solver: str = "exact", options: FittingOptions = DEFAULT_FITTING) -> LinearExplanation:
    """Fit (P4) on m samples of D_{x,σ}: IHT with :func:`iht`'s default (Alg. 1 from f(x)e₁ and from the
    projected anchored least-squares solution, steps η·{1, 2}, best polished iterate), then
    (``solver="exact"``) the certified optimum within ``options.time_limit`` seconds; score it on a fresh sample
    of ``options.holdout_m`` (default m) points. ``options.methods`` (default IHT and the solver; see ``METHODS``)
    are every explainer fitted on the same sample, the solver among them: :func:`compare`'s pipeline.

    Parameters
    ----------
    space : LiteralSpace
        The query and f (:func:`group_space` or :meth:`BooleanModel.space`).
    k : int
        The sparsity budget, at least 1.
    sigma : float
        The neighbourhood's σ, at least 0.
    m : int
        Samples, at least 10.
    seed : int
        The samples' seed.
    solver : str
        ``"exact"`` or ``"iht"``: whose w is the explanation.
    options : FittingOptions
        The explainers fitted beside (default IHT and the solver), the exact fit's seconds, the hold-out samples,
        the relevance's draws, SHAP's background.

    Returns
    -------
    LinearExplanation
        The explanation, with every method beside it.

    Raises
    ------
    IntakeError
        When ``solver``, ``k``, ``m`` or ``sigma`` is not valid, the solver is not among the methods, or ``m``
        passes the ``linear_samples`` limit.
    """
    check_choice(solver, SOLVERS, "linear solver")
    check_count(k, 1, "k")
    check_count(m, 10, "m")
    check_between(sigma, "σ", 0)
    methods = tuple(dict.fromkeys(("iht", solver))) if options.methods is None else tuple(options.methods)
    if solver not in methods:
        raise IntakeError(f"The linear solver {solver!r} must be among the methods fitted ({', '.join(methods)}).")
    comparison = _compare(space, k, sigma, m, seed, replace(options, methods=methods))
    return LinearExplanation(space.names, space.x, comparison.fx, space.target, comparison, space.groups)


# ---------------------------------------------------------------------------------------------------
# Sweeps (Figs. 4-6)

@dataclass(frozen=True, eq=False)
class Sweep(Explanation):
    """Relevance (and the other metrics) against one parameter: ``table`` has one row per
    (value, instance, method) — long format, ready for a line plot of ``summary()``."""

    parameter: str
    values: tuple[int | float, ...]
    table: pd.DataFrame

    method = "linear explanations against one parameter"
    meta_parameters = ("parameter", "values")

    def summary(self, metric: str = "relevance") -> pd.DataFrame:
        """Mean and standard deviation of ``metric`` over instances, per (value, method)."""
        grouped = self.table.groupby([self.parameter, "method"])[metric]
        return grouped.agg(["mean", "std", "count"]).reset_index()


def sweep(spaces: Sequence[LiteralSpace], parameter: str, values: Sequence | None = None, *, k: int = 5,
          sigma: float = 1.0, m: int = 5000, seed: int = 0, options: FittingOptions = DEFAULT_FITTING) -> Sweep:
    """Vary ``parameter`` (``k``, ``sigma`` or ``m``; grid ``SWEEP_GRIDS`` by default) over every query
    in ``spaces``, the other two held at ``k``, ``sigma``, ``m`` (§6.3: k = 5, σ = 1, m = 5000): :func:`compare`
    on each, the i-th query with seed ``seed + 1000 i``.

    Parameters
    ----------
    spaces : sequence of LiteralSpace
        The queries and f.
    parameter : str
        ``"k"``, ``"sigma"`` or ``"m"``.
    values : sequence, optional
        The parameter's values; None: ``SWEEP_GRIDS[parameter]``.
    k : int
        The sparsity budget when ``parameter`` is not ``"k"``.
    sigma : float
        The neighbourhood's σ when ``parameter`` is not ``"sigma"``.
    m : int
        Samples when ``parameter`` is not ``"m"``.
    seed : int
        The first query's seed.
    options : FittingOptions
        As for :func:`compare` (default IHT, the exact fit and LIME).

    Returns
    -------
    Sweep
        One row per (value, query, method).

    Raises
    ------
    IntakeError
        When ``parameter`` or a method is unknown, or the samples pass the ``linear_samples`` limit.
    """
    check_choice(parameter, SWEEP_GRIDS, "sweep parameter")
    values = tuple(SWEEP_GRIDS[parameter] if values is None else values)
    rows = []
    for value in values:
        setting = {"k": k, "sigma": sigma, "m": m, parameter: value}
        for i, space in enumerate(spaces):
            comp = compare(space, int(setting["k"]), float(setting["sigma"]), int(setting["m"]), seed=seed + 1000 * i,
                           options=options)
            rows += [{parameter: value, "instance": i, **row} for row in comp.table().reset_index().to_dict("records")]
    return Sweep(parameter, values, pd.DataFrame(rows))
