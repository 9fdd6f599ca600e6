"""The model seen over many rows through SHAP: the values of a seeded sample of test rows (one explainer, one
background, as :func:`~explain_core.baselines.explain_shap` for one row), read as mean |SHAP| per feature; the
figures (importance, beeswarm, dependence) are :mod:`explain_core.views.global_shap`'s.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..baselines import shap_rows
from ..setup import Setup


@dataclass(frozen=True)
class GlobalShap:
    """SHAP values (rows × groups) of ``rows`` with the base value and the output they explain."""

    rows: np.ndarray
    groups: tuple[str, ...]
    values: np.ndarray
    base_value: float
    output: str
    explainer: str

    def importance(self) -> pd.Series:
        """Mean |SHAP| per group over the rows, largest first."""
        return pd.Series(np.abs(self.values).mean(axis=0), index=list(self.groups)).sort_values(
            ascending=False, kind="stable")


def global_shap(setup: Setup, *, rows: int = 200, seed: int = 0, background: int = 100) -> GlobalShap:
    """SHAP of a seeded sample of at most ``rows`` test rows (sorted), against the one-row method's background."""
    test = np.asarray(setup.test_rows)
    chosen = np.sort(np.random.default_rng(seed).choice(test, size=min(rows, len(test)), replace=False))
    values, base, output, name = shap_rows(setup.model, setup.dataset, setup.dataset.features.iloc[chosen],
                                           setup.train_rows, seed=seed, background=background)
    return GlobalShap(chosen, tuple(setup.dataset.group_names), values, base, output, name)


def group_values(setup: Setup, rows) -> pd.DataFrame:
    """One column per feature group (a one-hot block's active column), for the rows a :class:`GlobalShap` holds."""
    frame = setup.dataset.features.iloc[np.asarray(rows)]
    return pd.DataFrame({g.name: g.values_in(frame) for g in setup.dataset.groups})
