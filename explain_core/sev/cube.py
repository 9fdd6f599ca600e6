"""The whole SEV hypercube (SEV paper, Def. 1) of one query: all 2^p vertices scored in one batched call, for the
lattice figures and the report (p ≤ :data:`HYPERCUBE_MAX_GROUPS`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import IntakeError, names_method
from ..vertices import VertexScorer, one_row
from ..intake.layout import GroupLayout
from ..intake.models import ModelAdapter
from ..reference import Reference
from ..results import ValueEquality

HYPERCUBE_MAX_GROUPS = 12
"""The most feature groups whose full hypercube (2^p vertices) :func:`hypercube` scores."""


@dataclass(frozen=True, eq=False)
class Hypercube(ValueEquality):
    """Scores of all 2^p vertices; row v has mask bits (v >> g) & 1 (1 = query value of group g).

    Parameters
    ----------
    names : tuple of str
        The feature groups.
    masks : numpy.ndarray
        (2^p, p) boolean vertex masks.
    scores, labels : numpy.ndarray
        Each vertex's score and label.
    """

    names: tuple[str, ...]
    masks: np.ndarray
    scores: np.ndarray
    labels: np.ndarray

    @property
    def depth_from_query(self) -> np.ndarray:
        return (~self.masks).sum(axis=1)

    def table(self) -> pd.DataFrame:
        """One row per vertex, by depth: the groups at the reference, the depth, the score and the label.

        Returns
        -------
        pandas.DataFrame
            The vertices.
        """
        moved = [", ".join(n for n, keep in zip(self.names, mask) if not keep) or "(none: the query)"
                 for mask in self.masks]
        table = pd.DataFrame({"at the reference": moved, "depth": self.depth_from_query, "score": self.scores,
                              "label": self.labels})
        return table.sort_values("depth", kind="stable").reset_index(drop=True)


@names_method("the SEV hypercube")
def hypercube(model: ModelAdapter, layout: GroupLayout, query, reference: Reference) -> Hypercube:
    """Every vertex of the SEV hypercube (Def. 1) scored in one batched call; p ≤ 12 groups.

    Parameters
    ----------
    model, layout, query, reference
        The model, the feature groups, the row (a one-row frame or a Series) and the reference, as for
        :func:`~explain_core.sev.engine.sev`.

    Returns
    -------
    Hypercube
        The 2^p vertices with their scores and labels.

    Raises
    ------
    IntakeError
        When there are more than :data:`HYPERCUBE_MAX_GROUPS` groups.
    """
    p = layout.size
    if p > HYPERCUBE_MAX_GROUPS:
        raise IntakeError(f"The full hypercube has 2^{p} vertices; it is computed for at most {HYPERCUBE_MAX_GROUPS} "
                          "feature groups (the SEV search itself has no such limit).")
    codes = np.arange(2 ** p)
    masks = ((codes[:, None] >> np.arange(p)) & 1).astype(bool)
    scores = VertexScorer(model, layout, one_row(query), reference).scores(np.array([0]), masks)[0]
    return Hypercube(layout.names, masks, scores, model.labels_of(scores))

