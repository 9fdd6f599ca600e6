"""Linear explanations side by side on one shared sample (PLE paper §6): IHT, the exact fit, LIME in
the same Boolean space, KernelSHAP (dense, and truncated to k), the ℓ1 relaxation, MAPLE (:mod:`.maple`); and the sweeps
of relevance against k, σ and m (Figs. 4-6) as plot-ready tables.

LIME and KernelSHAP work on LIME's interpretable representation b ∈ {0,1}^{d−1}, b_j = (1 + z_j x_j)/2
("literal j keeps the query's value"); a linear model β₀ + Σβ_j b_j is the z-space explanation
w_j = β_j x_j / 2, w_0 = β₀ + Σβ_j / 2. :func:`compare` is the one fitting pipeline: the linear explanation of a
row (:func:`explain_linear`, the app, the PDF) is its result with the row's literals. lime and shap are imported
when LIME or SHAP runs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import IntakeError, check_between, check_choice, check_count, names_method
from ..limits import limits, over
from ..results import Explanation, ValueEquality
from ..seeding import global_generators
from .exact import ExactFit, exact_fit
from .iht import IHTResult, iht
from .maple import maple_fit
from .metrics import RELEVANCE_SAMPLES, Scores, score
from .miqp import l1_relaxation
from .problem import support_of
from .space import LiteralSpace, Sample, TargetScale, draw_sample, sample_neighbourhood

METHODS = ("iht", "exact", "lime", "shap", "shap_k", "l1_relax", "maple")
"""Every explainer :func:`compare` and :func:`explain_linear` fit on the shared sample."""
SWEEP_GRIDS = {"k": tuple(range(1, 9)), "sigma": tuple(np.round(np.arange(0, 2.0, 0.25), 2)),
               "m": (100, 300, 1000, 3000, 10_000, 30_000, 100_000)}
SHAP_BACKGROUND = 50
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


def to_z_space(intercept: float, coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    """β₀ + Σβ_j b_j with b_j = (1 + z_j x_j)/2 over the non-bias literals → w ∈ R^d."""
    w = np.zeros(len(x))
    w[1:] = coef * x[1:] / 2
    w[0] = intercept + coef.sum() / 2
    return w


def lime_fit(sample: Sample, k: int, *, seed: int = 0, kernel_width: float | None = None) -> np.ndarray:
    """LIME (``lime.lime_base.LimeBase``, defaults) on the shared sample in b-space: k−1 features plus
    the intercept, exponential kernel on the Euclidean distance to x with LimeTabular's default width
    0.75·√(d−1); x itself is prepended as LIME's first row."""
    from lime.lime_base import LimeBase

    x = sample.x
    B = np.vstack([np.ones(len(x) - 1), (1 + sample.Z[:, 1:] * x[1:]) / 2])
    labels = np.concatenate([[sample.fx], sample.y])[:, None]
    distances = np.sqrt(((1 - B) ** 2).sum(axis=1))
    width = kernel_width or 0.75 * np.sqrt(len(x) - 1)
    kernel = lambda dist: np.sqrt(np.exp(-(dist ** 2) / width ** 2))  # noqa: E731 (LimeTabular's kernel)
    coef = np.zeros(len(x) - 1)
    if k <= 1:  # no feature: LIME's surrogate is its weighted mean
        return to_z_space(float(np.average(labels[:, 0], weights=kernel(distances))), coef, x)
    intercept, pairs, _, _ = LimeBase(kernel, random_state=seed).explain_instance_with_data(
        B, labels, distances, 0, k - 1)
    for j, beta in pairs:
        coef[j] = beta
    return to_z_space(float(intercept), coef, x)


@dataclass(frozen=True, eq=False)
class ShapValues(ValueEquality):
    """KernelSHAP in b-space against a background drawn from D_{x,σ}: φ_0 = E_bg[f], φ_j per literal.

    ``dense`` is the anchored linear model φ_0 + Σφ_j (b_j − b̄_j)/(1 − b̄_j) in z-space (every
    literal, local accuracy w·x = f(x)); ``truncated(k)`` keeps the k−1 largest |φ_j| and the bias,
    and so loses anchoring by |Σ of the dropped φ_j|.
    """

    phi0: float
    phi: np.ndarray
    background_mean: np.ndarray
    x: np.ndarray

    def linear(self, keep: np.ndarray) -> np.ndarray:
        scale = np.where(self.background_mean < 1, 1 - self.background_mean, np.inf)
        w = np.zeros(len(self.x))
        w[1:] = np.where(keep, self.phi * self.x[1:] / (2 * scale), 0.0)
        w[0] = self.phi0 + np.sum(np.where(keep, self.phi * (0.5 - self.background_mean) / scale, 0.0))
        return w

    @property
    def dense(self) -> np.ndarray:
        return self.linear(np.ones(len(self.phi), dtype=bool))

    def truncated(self, k: int) -> np.ndarray:
        keep = np.zeros(len(self.phi), dtype=bool)
        keep[np.argsort(-np.abs(self.phi), kind="stable")[:max(k - 1, 0)]] = True
        return self.linear(keep)


def kernel_shap(space: LiteralSpace, sigma: float, *, seed: int = 0, background: int = SHAP_BACKGROUND,
                nsamples: int | str = "auto") -> ShapValues:
    """KernelSHAP (``shap.KernelExplainer``, no ℓ1 selection: dense) of f at x in b-space (seeded)."""
    import shap

    x = space.x.astype(float)
    bg = (1 + sample_neighbourhood(space.x, sigma, background, seed)[:, 1:] * x[1:]) / 2

    def f(B: np.ndarray) -> np.ndarray:
        Z = np.column_stack([np.ones(len(B)), np.where(B > 0.5, x[1:], -x[1:])]).astype(np.int8)
        return space.evaluate(Z, seed)

    with global_generators(seed):  # KernelExplainer draws its coalitions from NumPy's global generator
        explainer = shap.KernelExplainer(f, bg)
        phi = np.asarray(explainer.shap_values(np.ones((1, len(x) - 1)), nsamples=nsamples, l1_reg=False,
                                               silent=True), dtype=float).reshape(-1)
    return ShapValues(float(np.ravel(explainer.expected_value)[0]), phi, bg.mean(axis=0), x)


# ---------------------------------------------------------------------------------------------------
# One task, every method on the same sample

@dataclass(frozen=True, eq=False)
class MethodResult(ValueEquality):
    """One explainer's w with its metrics; ``detail`` says e.g. the exact fit's method or SHAP's φ_0.

    ``status`` and ``gap`` are the exact fit's certificate (``optimal`` with gap 0, or ``time_limit`` with the
    relative gap to its lower bound); empty / None for methods that carry none.

    Parameters
    ----------
    method : str
        The explainer (``"iht"``, ``"exact"``, ``"lime"``, ``"shap"``, ``"maple"``).
    w : numpy.ndarray
        Its weights (coordinate 0 = bias).
    scores : Scores
        Its metrics.
    seconds : float
        Fitting time.
    detail, status : str
        Its detail, and the exact fit's status.
    gap : float, optional
        The exact fit's relative gap.
    """

    method: str
    w: np.ndarray
    scores: Scores
    seconds: float
    detail: str = ""
    status: str = ""
    gap: float | None = None


@dataclass(frozen=True, eq=False)
class Comparison(Explanation):
    """All methods of one explanation task (f, x, k, m, σ), fitted on one shared sample.

    Parameters
    ----------
    k : int
        The sparsity budget.
    sigma : float
        The neighbourhood's σ.
    m, seed : int
        Samples, and their seed.
    fx : float
        f(x).
    results : tuple of MethodResult
        Each method's w and metrics.
    iht : IHTResult, optional
        IHT's run, when fitted.
    exact : ExactFit, optional
        The exact fit, when fitted.
    """

    k: int
    sigma: float
    m: int
    seed: int
    fx: float
    results: tuple[MethodResult, ...]
    iht: IHTResult | None = None  # Alg. 1's run (every comparison runs it: the exact fit's incumbent)
    exact: ExactFit | None = None  # the certified fit, when "exact" is among the methods

    method = "linear explanations compared"
    meta_parameters = ("k", "sigma", "m", "seed")

    def result(self, method: str) -> MethodResult:
        """The result of ``method``; an IntakeError naming the methods compared when it was not among them.

        Parameters
        ----------
        method : str
            A method compared.

        Returns
        -------
        MethodResult
            Its result.

        Raises
        ------
        IntakeError
            When ``method`` was not compared.
        """
        found = [r for r in self.results if r.method == method]
        if not found:
            raise IntakeError(f"No {method!r} fit here; the methods compared are: "
                              f"{', '.join(r.method for r in self.results)}.")
        return found[0]

    def table(self) -> pd.DataFrame:
        """One row per method: F̂, F, R (with its method), |w·x − f(x)|, ‖w‖₀, Lemma 4 bound (NaN where it does not
        apply, :meth:`bound_coverage`), seconds.

        Returns
        -------
        pandas.DataFrame
            Indexed by method.
        """
        coverage = self.bound_coverage()
        return pd.DataFrame([_row(r, coverage[r.method] == "covered") for r in self.results]).set_index("method")

    def bound_coverage(self) -> dict[str, str]:
        """Per method, whether Lemma 4 (R ≤ (1 + e^{−σ})^k·F) covers its w, from the w itself: ``covered``
        (anchored and at most k non-zero weights), ``not anchored`` (|w·x − f(x)| > 1e-9) or ``more than k
        weights`` — dense SHAP is covered whenever its φ vanish outside k literals.

        Returns
        -------
        dict of str to str
            Method → its verdict.
        """
        def verdict(r: MethodResult) -> str:
            if r.scores.anchoring_gap > ANCHORED_TOLERANCE:
                return "not anchored"
            return "covered" if r.scores.support_size <= self.k else "more than k weights"
        return {r.method: verdict(r) for r in self.results}


ANCHORED_TOLERANCE = 1e-9


def _row(r: MethodResult, covered: bool) -> dict:
    s = r.scores
    rel = s.relevance
    return {"method": r.method, "empirical_fidelity": s.empirical_fidelity, "fidelity": s.fidelity,
            "relevance": rel.value if rel else np.nan,
            "relevance_method": rel.method if rel else "n/a (support too large to enumerate)",
            "anchoring_gap": s.anchoring_gap, "support_size": s.support_size,
            "max_abs_weight": float(np.abs(r.w).max()),
            "bound": s.bound if covered else np.nan, "status": r.status, "gap": np.nan if r.gap is None else r.gap,
            "seconds": r.seconds, "detail": r.detail}


@names_method("the linear explanations")
def compare(space: LiteralSpace, k: int = 5, sigma: float = 1.0, m: int = 5000, *, seed: int = 0,
            methods: Sequence[str] = ("iht", "exact", "lime"), time_limit: float = 10.0,
            relevance_samples: int = RELEVANCE_SAMPLES, shap_background: int = SHAP_BACKGROUND,
            holdout_m: int | None = None) -> Comparison:
    """Fit every method in ``methods`` (see ``METHODS``) on one sample of D_{x,σ} and score them on a
    fresh one of ``holdout_m`` (default m) points (§6.1: all explainers receive the same sample).

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
    methods : sequence of str
        The explainers.
    time_limit : float
        The exact fit's seconds.
    relevance_samples : int
        Monte Carlo draws of the relevance.
    shap_background : int
        SHAP's background rows.
    holdout_m : int, optional
        Hold-out samples.

    Returns
    -------
    Comparison
        Every method's w and metrics.

    Raises
    ------
    IntakeError
        When a method is unknown or the samples pass the ``linear_samples`` limit.
    """
    return _compare(space, k, sigma, m, seed, tuple(methods), time_limit, relevance_samples, shap_background,
                    holdout_m or m)


def _compare(space: LiteralSpace, k: int, sigma: float, m: int, seed: int, methods: tuple[str, ...],
             time_limit: float, relevance_samples: int, shap_background: int, holdout_m: int) -> Comparison:
    """The one fitting pipeline: IHT (always: the exact fit's incumbent), then each method asked for."""
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
        values = kernel_shap(space, sigma, seed=seed, background=shap_background)
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

    @property
    def k(self) -> int:
        return self.comparison.k

    @property
    def sigma(self) -> float:
        return self.comparison.sigma

    @property
    def m(self) -> int:
        return self.comparison.m

    @property
    def seed(self) -> int:
        return self.comparison.seed

    @property
    def iht(self) -> IHTResult:
        return self.comparison.iht

    @property
    def exact(self) -> ExactFit | None:
        return self.comparison.exact

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
                   solver: str = "exact", methods: Sequence[str] | None = None, time_limit: float = 10.0,
                   holdout_m: int | None = None, relevance_samples: int = RELEVANCE_SAMPLES,
                   shap_background: int = SHAP_BACKGROUND) -> LinearExplanation:
    """Fit (P4) on m samples of D_{x,σ}: IHT with :func:`iht`'s default (Alg. 1 from f(x)e₁ and from the
    projected anchored least-squares solution, steps η·{1, 2}, best polished iterate), then
    (``solver="exact"``) the certified optimum within ``time_limit`` seconds; score it on a fresh sample
    of ``holdout_m`` (default m) points. ``methods`` (default IHT and the solver; see ``METHODS``) are every
    explainer fitted on the same sample, the solver among them: :func:`compare`'s pipeline.

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
    methods : sequence of str, optional
        Explainers fitted beside.
    time_limit : float
        The exact fit's seconds.
    holdout_m : int, optional
        Hold-out samples.
    relevance_samples : int
        Monte Carlo draws of the relevance.
    shap_background : int
        SHAP's background rows.

    Returns
    -------
    LinearExplanation
        The explanation, with every method beside it.

    Raises
    ------
    IntakeError
        When ``solver``, ``k``, ``m`` or ``sigma`` is not valid, the solver is not among ``methods``, or ``m``
        passes the ``linear_samples`` limit.
    """
    check_choice(solver, SOLVERS, "linear solver")
    check_count(k, 1, "k")
    check_count(m, 10, "m")
    check_between(sigma, "σ", 0)
    methods = tuple(dict.fromkeys(("iht", solver))) if methods is None else tuple(methods)
    if solver not in methods:
        raise IntakeError(f"The linear solver {solver!r} must be among the methods fitted ({', '.join(methods)}).")
    comparison = _compare(space, k, sigma, m, seed, methods, time_limit, relevance_samples, shap_background,
                          holdout_m or m)
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
          sigma: float = 1.0, m: int = 5000, seed: int = 0, methods: Sequence[str] = ("iht", "exact", "lime"),
          time_limit: float = 10.0, relevance_samples: int = RELEVANCE_SAMPLES) -> Sweep:
    """Vary ``parameter`` (``k``, ``sigma`` or ``m``; grid ``SWEEP_GRIDS`` by default) over every query
    in ``spaces``, the other two held at ``k``, ``sigma``, ``m`` (§6.3: k = 5, σ = 1, m = 5000)."""
    check_choice(parameter, SWEEP_GRIDS, "sweep parameter")
    values = tuple(SWEEP_GRIDS[parameter] if values is None else values)
    rows = []
    for value in values:
        setting = {"k": k, "sigma": sigma, "m": m, parameter: value}
        for i, space in enumerate(spaces):
            comp = compare(space, int(setting["k"]), float(setting["sigma"]), int(setting["m"]), seed=seed + 1000 * i,
                           methods=methods, time_limit=time_limit, relevance_samples=relevance_samples)
            rows += [{parameter: value, "instance": i, **row} for row in comp.table().reset_index().to_dict("records")]
    return Sweep(parameter, values, pd.DataFrame(rows))
