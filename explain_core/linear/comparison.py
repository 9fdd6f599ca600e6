"""What :func:`~.compare.compare` returns: each explainer's w with its metrics (:class:`MethodResult`), and every
method of one explanation task side by side (:class:`Comparison`), with Lemma 4's coverage of each w."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import IntakeError
from ..results import Explanation, ValueEquality
from .exact import ExactFit
from .iht import IHTResult
from .metrics import Scores


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
