"""A lazy bundle of one row's results: :class:`RowResults` computes each result on first access and keeps it. The app
fills it from its own cache (``supply``: a value, or a function called only when the report reads that result), the
command line and a batch leave it empty; the report only reads it, so what the report shows decides once what is
computed, and nothing is computed twice.

A method's result comes from its plug (:func:`~explain_core.registry.method`'s ``compute``); the other parts
are the SEV figure's hypercube (``cube``), the partial dependence of a feature (``dependence``, called with the
feature), the model's interactions, the Cohorts & fairness page's results (``cohorts``, none unless supplied) and
a second model's comparison (``models``: from a ``second`` setup, when one is supplied).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from ..analysis import Parameters, Setup, score_of
from ..inspection.two_models import compare_models
from ..methods import method, row_cube
from .dependence import report_dependence, report_interactions

_MISSING = object()


def _models(results: RowResults):
    second = results.get("second")
    return None if second is None else compare_models(results.setup, second, results.position, results.params)


PARTS: dict[str, Callable[..., Any]] = {
    "cube": row_cube,
    "dependence": lambda r, feature: report_dependence(r.setup, r.query, r.position, feature, r.params.seed),
    "interactions": lambda r: report_interactions(r.setup, r.params.seed),
    "cohorts": lambda r: None,
    "second": lambda r: None,
    "models": _models,
}
"""The parts of a row's results that are not a method's, with how each is computed when nothing is supplied."""


class RowResults:
    """One row's results, each computed on first access and kept.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    row : int or pandas.DataFrame
        A dataset position, or a one-row frame of feature values.
    params : Parameters, optional
        Every parameter (default: the defaults).
    position : int, optional
        The frame's dataset position (a dataset position ``row`` is its own).
    supply : mapping of str to object, optional
        Results already computed, by name (a method's, or one of :data:`PARTS`): each a value, or a function
        called on first access (with the feature, for ``dependence``).

    Attributes
    ----------
    query : pandas.DataFrame
        The row.
    score : float
        The model's score of the row.
    label : int
        Its predicted label.
    """

    def __init__(self, setup: Setup, row: int | pd.DataFrame, params: Parameters | None = None, *,
                 position: int | None = None, supply: Mapping[str, Any] | None = None):
        self.setup, self.params = setup, params or Parameters()
        if isinstance(row, pd.DataFrame):
            self.query, self.position = row.iloc[:1], position
        else:
            self.query, self.position = setup.query(int(row)), int(row)
        self.score = score_of(setup, self.query)
        self.label = int(setup.model.labels_of(np.array([self.score]))[0])
        self._supply = dict(supply or {})
        self._kept: dict[tuple, Any] = {}

    def get(self, name: str, *args):
        """The result ``name`` (computed, or taken from what was supplied, on first access).

        Parameters
        ----------
        name : str
            A method's name or one of :data:`PARTS`.
        *args
            What the result depends on besides the row (the feature, for ``dependence``).

        Returns
        -------
        object
            The result.

        Raises
        ------
        IntakeError
            When no method or part has that name, or a method's parameters do not fit the setup.
        """
        key = (name, *args)
        if key not in self._kept:
            given = self._supply.get(name, _MISSING)
            if given is _MISSING:
                self._kept[key] = PARTS[name](self, *args) if name in PARTS else method(name).compute(self)
            else:
                self._kept[key] = given(*args) if callable(given) else given
        return self._kept[key]

    def at_hand(self, name: str):
        """The result ``name`` if it was read already or was supplied (a supplied callable is called), else None:
        nothing is computed here.

        Parameters
        ----------
        name : str
            Its name.

        Returns
        -------
        object or None
            The result.
        """
        return self.get(name) if (name,) in self._kept or name in self._supply else None

    def kept(self, name: str):
        """The result ``name`` if it was read already, else None (nothing is computed).

        Parameters
        ----------
        name : str
            Its name.

        Returns
        -------
        object or None
            The result.
        """
        return self._kept.get((name,))
