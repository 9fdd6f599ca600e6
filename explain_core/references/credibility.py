"""Credibility ("Improving Decision Sparsity", §5): does an explanation land where real cases of the other class
lie?

The paper scores a point by its log-density under a Gaussian mixture fitted on the encoded negatives (S10); a
number in nats whose scale depends on the dimension and the encoding (its credible runs used thresholds of "the
75th percentile of the test explanations" and "300"). Here the same kind of density model is calibrated so the
number reads as a percentile:

- a Gaussian mixture (scikit-learn, full covariances, 0.01 added to their diagonal so one-hot columns, which do
  not spread within a mode, keep it finite) on :class:`~.space.PopulationSpace` coordinates of the training rows
  of the other class, components chosen by BIC among 1, 2, 4 and 8;
- fitted on a seeded 75 % of those rows (at most ``MAX_FIT_ROWS``), and calibrated on the other 25 %, which the
  mixture never saw: the credibility of a point x′ is the share of those held-out real cases whose density is
  below x′'s (ties count half). For a real case of the other class drawn afresh the number is uniform on [0, 1];
  "credibility 40 %" reads "this explanation lands where it is more typical than 40 % of real cases".

Every number is from training rows only; test rows never enter the fit or the calibration.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.mixture import GaussianMixture
from threadpoolctl import ThreadpoolController

from ..errors import IntakeError
from ..intake.data import Dataset
from .space import Columns, PopulationSpace, population_rows

COMPONENTS = (1, 2, 4, 8)
REG_COVAR = 1e-2
MAX_FIT_ROWS = 3000
CALIBRATION_SHARE = 0.25
MIN_ROWS = 20
DEFAULT_CREDIBLE = 0.10  # credible search: land inside the 90 % highest-density region of real cases
"""The credible search's default threshold: a flip must be more typical than 10 % of real cases."""
_THREADS: list[ThreadpoolController] = []


def one_thread():
    """BLAS held to one thread (a context): the mixture's matrices are small, so threads only contend (10-50×
    slower on 2 busy cores). The controller is built once (building it scans the loaded libraries)."""
    if not _THREADS:
        _THREADS.append(ThreadpoolController())
    return _THREADS[0].limit(limits=1)


@dataclass(frozen=True)
class ReferenceDensity:
    """A fitted density of the reference population and its calibration (sorted held-out log-densities).

    Parameters
    ----------
    space : PopulationSpace
        The coordinates the density is fitted in.
    mixture : sklearn.mixture.GaussianMixture
        The fitted mixture.
    calibration : numpy.ndarray
        Sorted log-densities of held-out real cases.
    explain_class : int
        The class explained (the density is the other's).
    components, fit_rows, seed : int
        Mixture components (by BIC), rows fitted on, and the seed.
    seconds : float
        Fitting time.
    """

    space: PopulationSpace = field(repr=False, compare=False)
    mixture: GaussianMixture = field(repr=False, compare=False)
    calibration: np.ndarray = field(repr=False, compare=False)
    explain_class: int
    components: int
    fit_rows: int
    seed: int
    seconds: float

    def log_density(self, frame: pd.DataFrame | Columns) -> np.ndarray:
        """log p̂ of raw rows (the paper's S10 score, in nats).

        Parameters
        ----------
        frame
            Rows, as :meth:`~.space.PopulationSpace.arrays` takes them.

        Returns
        -------
        numpy.ndarray
            One log-density per row.
        """
        return self.log_density_of_encoded(self.space.encode(frame))

    def log_density_of_encoded(self, points: np.ndarray) -> np.ndarray:
        """:meth:`log_density` of points already in :meth:`~.space.PopulationSpace.encode` coordinates.

        Parameters
        ----------
        points : numpy.ndarray
            Encoded points.

        Returns
        -------
        numpy.ndarray
            One log-density per point.
        """
        if len(points) == 0:
            return np.zeros(0)
        with one_thread():
            return self.mixture.score_samples(points)

    def percentile(self, frame: pd.DataFrame | Columns) -> np.ndarray:
        """Credibility of raw rows in [0, 1]: the share of held-out real cases less dense than each row.

        Parameters
        ----------
        frame
            Rows, as :meth:`~.space.PopulationSpace.arrays` takes them.

        Returns
        -------
        numpy.ndarray
            One credibility per row.
        """
        return self.rank(self.log_density(frame))

    def percentile_of_encoded(self, points: np.ndarray) -> np.ndarray:
        """:meth:`percentile` of points already in :meth:`~.space.PopulationSpace.encode` coordinates.

        Parameters
        ----------
        points
            As for :meth:`log_density_of_encoded`.

        Returns
        -------
        numpy.ndarray
            One credibility per point.
        """
        return self.rank(self.log_density_of_encoded(points))

    def rank(self, scores: np.ndarray) -> np.ndarray:
        """Log-densities as percentiles of the calibration rows' (ties count half).

        Parameters
        ----------
        scores : numpy.ndarray
            Log-densities.

        Returns
        -------
        numpy.ndarray
            Percentiles in [0, 1].
        """
        below = np.searchsorted(self.calibration, scores, side="left")
        upto = np.searchsorted(self.calibration, scores, side="right")
        return (below + upto) / (2.0 * len(self.calibration))

    def summary(self) -> dict:
        """The fitted density in numbers, for a page or a report.

        Returns
        -------
        dict
            ``explain_class``, ``components``, ``fit_rows``, ``calibration_rows``, ``seed`` and ``seconds``.
        """
        return {"explain_class": self.explain_class, "components": self.components, "fit_rows": self.fit_rows,
                "calibration_rows": len(self.calibration), "seed": self.seed, "seconds": self.seconds}

    __json__ = summary


def fit_density(dataset: Dataset, train_rows: Sequence[int], *, explain_class: int = 1,
                threshold: float | None = None, seed: int = 0) -> ReferenceDensity:
    """The density of the training rows of the class opposite to ``explain_class``, calibrated as a percentile
    (module docstring).

    Parameters
    ----------
    dataset : Dataset
        The data.
    train_rows : sequence of int
        The training rows.
    explain_class : int
        The class explained.
    threshold : float, optional
        A regression's threshold.
    seed : int
        The seed of the 75 / 25 split and the mixtures.

    Returns
    -------
    ReferenceDensity
        The fitted, calibrated density.

    Raises
    ------
    IntakeError
        When the other class has too few training rows.
    """
    started = time.perf_counter()
    rows = population_rows(dataset, train_rows, explain_class, threshold)
    if len(rows) < MIN_ROWS:
        raise IntakeError(f"Only {len(rows)} training rows of the other class: credibility needs at least {MIN_ROWS} "
                          "to fit a density and calibrate it.")
    space = PopulationSpace.fit(dataset, rows)
    rng = np.random.default_rng(seed)
    order = rng.permutation(rows)
    cut = round(len(order) * CALIBRATION_SHARE)
    held, fit = order[:cut], order[cut:][:MAX_FIT_ROWS]
    X = space.encode(dataset.features.iloc[fit])
    with one_thread():
        mixtures = [GaussianMixture(k, covariance_type="full", reg_covar=REG_COVAR, random_state=seed).fit(X)
                    for k in COMPONENTS if k <= max(1, len(X) // 20)]
        best = min(mixtures, key=lambda m: m.bic(X))
        calibration = np.sort(best.score_samples(space.encode(dataset.features.iloc[held])))
    return ReferenceDensity(space, best, calibration, explain_class, best.n_components, len(fit), seed,
                            time.perf_counter() - started)
