"""LENS against an attribution (§5.1, Fig. 2): per factor size, the best PS of any factor beside the PS of the top
groups by LIME's or SHAP's attribution of the same row."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import IntakeError
from ..results import Explanation
from .context import LensContext


@dataclass(frozen=True, eq=False)
class AttributionCurve(Explanation):
    """§5.1, Fig. 2 as a result: per factor size, the best PS of any factor of that size beside the PS of the
    top groups by an attribution (``attribution`` names it, e.g. SHAP); ``table`` is :func:`shap_curve`'s.

    Parameters
    ----------
    direction : str
        ``"r2i"`` or ``"i2r"``.
    attribution : str
        The attribution's method.
    table : pandas.DataFrame
        :func:`shap_curve`'s table.
    """

    direction: str
    attribution: str
    table: pd.DataFrame

    method = "LENS against the top features of an attribution (PS by size)"
    meta_parameters = ("direction", "attribution")


def shap_curve(context: LensContext, attribution) -> pd.DataFrame:
    """§5.1, Fig. 2 (I2R: Fig. 7): per size k, the best PS(c, y) of any factor of k groups beside the PS
    of the top-k groups by |attribution| (an :class:`~explain_core.baselines.Attribution`).

    Parameters
    ----------
    context : LensContext
        A scored context.
    attribution : Attribution
        LIME's or SHAP's attribution of the same row.

    Returns
    -------
    pandas.DataFrame
        Per size: ``size``, ``lens_ps`` and ``lens_factor`` (the best factor), ``attribution_ps`` and
        ``attribution_factor`` (the top groups).

    Raises
    ------
    IntakeError
        When the attribution's groups are not the context's.
    """
    if set(attribution.groups) != set(context.groups):
        raise IntakeError("The attribution's groups are not this context's feature groups.")
    rows = []
    for k in range(1, int(context.sizes.max()) + 1):
        layer = np.flatnonzero(context.sizes == k)
        best = layer[np.argmax(context.ps[layer])]
        top = tuple(attribution.order[:k])
        rows.append({"size": k, "lens_ps": float(context.ps[best]), "lens_factor": context.factor(best),
                     "attribution_ps": float(context.ps[context.index(top)]), "attribution_factor": top})
    return pd.DataFrame(rows)
