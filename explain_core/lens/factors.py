"""What LENS returns: a factor set's PS/PN measures (Defs 2-3, Remark 1), a τ-minimal :class:`Factor` (Def. 4) and
Alg. 1's :class:`LensResult`, read off a scored :class:`~explain_core.lens.context.LensContext`."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..results import Explanation
from .stats import error_statement, power_limit


@dataclass(frozen=True)
class Measures:
    """Def. 2-3 and Remark 1 for a factor set C, from the confusion matrix of "c(z) = 1" vs "f(z) = y".

    ``ps`` = PS(C, y), ``pn`` = PN(C, y); ``ps_not`` = PS(1−C, 1−y) (negative predictive value),
    ``pn_not`` = PN(1−C, 1−y) (true negative rate). NaN where a denominator is 0.

    Parameters
    ----------
    ps, pn, ps_not, pn_not : float
        The four measures.
    tp, fp, fn, tn : int
        The confusion matrix they are read from.
    """

    ps: float
    pn: float
    ps_not: float
    pn_not: float
    tp: int
    fp: int
    fn: int
    tn: int


@dataclass(frozen=True)
class Factor:
    """One τ-minimal factor (Def. 4): its groups, PS(c, y) = hits / samples, and the test's p-value.

    ``cost`` is the cheapest intervention on these groups that reaches the outcome (§5.3: L1 distance
    scaled by MAD, 1 per changed categorical group), from reference ``reference``; inf / None if none does.

    Parameters
    ----------
    groups : tuple of str
        The factor's feature groups.
    ps : float
        PS(c, y).
    hits, samples : int
        Samples reaching the outcome, and samples.
    p_value : float, optional
        The binomial test's p-value (sample mode).
    cost : float
        The cheapest intervention's cost.
    reference : object
        The reference it comes from (its row label).
    """

    groups: tuple[str, ...]
    ps: float
    hits: int
    samples: int
    p_value: float | None
    cost: float
    reference: object


@dataclass(frozen=True, eq=False)
class LensResult(Explanation):
    """Alg. 1's output: τ-minimal factors and the cumulative PN of their upward closure.

    In the sample mode (``alpha`` set) ``correction`` is ``holm`` (family-wise over the ``family`` factors of
    the input) or ``none`` (per factor); :attr:`error_rate` states the guarantee, :attr:`limit` says when
    ``samples`` references are too few for any factor to pass.

    Parameters
    ----------
    direction : str
        ``"r2i"`` or ``"i2r"``.
    outcome : int
        The class measured.
    tau : float
        The sufficiency threshold.
    alpha : float, optional
        The test's level (None: exact mode).
    order : str
        How the factors are ordered.
    factors : tuple of Factor
        The τ-minimal factors.
    cumulative_pn : float
        The PN of their upward closure.
    samples, family : int
        References per factor, and Holm's family size.
    correction : str
        ``"holm"`` or ``"none"``.
    """

    direction: str
    outcome: int
    tau: float
    alpha: float | None
    order: str
    factors: tuple[Factor, ...]
    cumulative_pn: float
    samples: int = 0
    correction: str = "holm"
    family: int = 1

    method = "LENS"
    meta_parameters = ("direction", "tau", "alpha", "order", "correction", "family")

    @property
    def error_rate(self) -> str:
        return error_statement(self.alpha, self.correction, self.family)

    @property
    def limit(self) -> str | None:
        """Why no factor can pass the test with these references (sample mode), else None."""
        if self.alpha is None or not self.samples:
            return None
        return power_limit(self.tau, self.alpha, self.samples, self.correction, self.family)

    def table(self) -> pd.DataFrame:
        """One row per factor: groups, size, PS, counts, p-value, cost and cheapest reference.

        Returns
        -------
        pandas.DataFrame
            The factors.
        """
        return pd.DataFrame({
            "factor": [", ".join(f.groups) or "∅" for f in self.factors],
            "size": [len(f.groups) for f in self.factors],
            "PS": [f.ps for f in self.factors],
            "hits": [f.hits for f in self.factors],
            "samples": [f.samples for f in self.factors],
            "p_value": [f.p_value for f in self.factors],
            "cost": [f.cost for f in self.factors],
            "reference": [f.reference for f in self.factors],
        })
