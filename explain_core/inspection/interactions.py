"""Pairwise interactions of the feature groups over a seeded sample of test rows: SHAP interaction values for a tree
model (``shap.TreeExplainer(model).shap_interaction_values`` on the matrix the trees take, where the model lives —
in its sandboxed worker for an upload — as :func:`~explain_core.baselines.shap_rows` builds SHAP's explainers), and
for any other model an estimate of Friedman's H-statistic from partial dependence on a small sample.

SHAP interaction values (Lundberg et al. 2020) split each row's SHAP value of a feature into its main effect (the
diagonal) and half of each pair's interaction (Φ_jk = Φ_kj); a row's values sum over its partners to its SHAP
value. Encoded columns are summed into their group. The matrix is mean |Φ_jk| over the rows (the diagonal: mean
|main effect|), on the trees' output (log-odds for boosted classifiers; a regression's prediction, the values of
trees fitted on a standardised target scaled back by its standard deviation).

Friedman's H (Friedman & Popescu 2008, eq. 44), with partial dependence PD centred over the sample's points x_i:
H²_jk = Σ_i [PD_jk(x_ij, x_ik) − PD_j(x_ij) − PD_k(x_ik)]² / Σ_i PD_jk(x_ij, x_ik)²; the matrix holds H_jk (0: the
pair's joint effect is the sum of their separate effects; 1: all of it is interaction), NaN on the diagonal.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from ..baselines import TREE_OUTPUT, model_matrix
from ..errors import ModelCallError, Unsupported
from ..intake.models import read_model
from ..results import Explanation
from ..setup import Setup
from ..sev.readers import shap_estimator
from ..vocabulary import count_noun
from .dependence import moved_frames, sampled_test_rows

SHAP_METHOD, H_METHOD = "SHAP interaction values", "H-statistic estimate"
H_BUDGET_ROWS = 150_000  # model rows one H-statistic estimate may score


@dataclass(frozen=True, eq=False)
class Interactions(Explanation):
    """A symmetric groups × groups ``matrix`` over ``rows``: mean |SHAP interaction| (``method`` =
    :data:`SHAP_METHOD`) or the H-statistic (:data:`H_METHOD`). ``shap_values``: each row's interaction values
    summed over its partners (its SHAP value per group; SHAP only).

    Parameters
    ----------
    method : str
        SHAP interaction values or the H-statistic.
    groups : tuple of str
        The feature groups.
    matrix : numpy.ndarray
        The groups × groups matrix.
    rows : numpy.ndarray
        The rows used.
    output, explainer : str
        What the score is, and the explainer.
    shap_values : numpy.ndarray, optional
        Each row's SHAP value per group.
    """

    method: str
    groups: tuple[str, ...]
    matrix: np.ndarray
    rows: np.ndarray
    output: str
    explainer: str
    shap_values: np.ndarray | None = None

    meta_parameters = ("explainer", "output")

    def pairs(self) -> pd.DataFrame:
        """Every pair of different groups with its value, strongest first.

        Returns
        -------
        pandas.DataFrame
            The pairs.
        """
        found = [(self.groups[j], self.groups[k], self.matrix[j, k])
                 for j, k in combinations(range(len(self.groups)), 2)]
        table = pd.DataFrame(found, columns=["feature", "with", self.measure])
        return table.sort_values(self.measure, ascending=False, kind="stable").reset_index(drop=True)

    @property
    def measure(self) -> str:
        return "mean |SHAP interaction|" if self.method == SHAP_METHOD else "H-statistic"

    table = pairs


def interactions(setup: Setup, *, rows: int = 200, h_rows: int = 40, seed: int = 0,
                 budget: int = H_BUDGET_ROWS) -> Interactions:
    """SHAP interaction values of ``rows`` sampled test rows for a tree model, else the H-statistic estimate on at
    most ``h_rows`` of them (fewer where every pair's partial dependence would score more than ``budget`` rows).

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    rows : int
        Sampled test rows for SHAP.
    h_rows : int
        The most rows for the H-statistic.
    seed : int
        The sample's seed.
    budget : int
        The most model rows the H-statistic scores.

    Returns
    -------
    Interactions
        The interaction matrix.
    """
    sample = sampled_test_rows(setup, rows, seed)
    found = tree_interactions(setup, sample)
    if found is not None:
        return found
    p = len(setup.dataset.groups)
    fits = int(np.sqrt(budget / max(1, p + p * (p - 1) // 2)))
    return h_statistic(setup, sampled_test_rows(setup, max(2, min(h_rows, fits)), seed))


def tree_interactions(setup: Setup, rows: np.ndarray) -> Interactions | None:
    """:data:`SHAP_METHOD` of ``rows`` when the model's own estimator is a tree ensemble shap reads, else None."""
    model, data = setup.model, setup.dataset
    inputs = model_matrix(model, data)
    if inputs is None:
        return None
    estimator, classes, encode, column_group = inputs
    found = read_model(estimator, fitted_interactions, encode(data.features.iloc[rows][data.columns]))
    if found is None:
        return None
    values = np.asarray(found["values"], dtype=float)
    width = len(column_group)
    if values.ndim not in (3, 4) or values.shape[:3] != (len(rows), width, width):
        raise ModelCallError(f"SHAP returned interaction values of shape {values.shape} for "
                             f"{count_noun(len(rows), 'row')}.")
    if model.task == "classification":
        pos = list(classes).index(model.positive_class)
        values = values[..., pos] if values.ndim == 4 else (values if pos == 1 else -values)  # a margin: classes_[1]
    member = np.eye(len(data.groups))[column_group]  # encoded column → its group
    grouped = member.T @ values @ member  # rows × groups × groups
    return Interactions(SHAP_METHOD, tuple(data.group_names), np.abs(grouped).mean(axis=0), rows,
                        TREE_OUTPUT.get(found["tree_output"], "model output"),
                        f"TreeExplainer (path-dependent), {len(rows)} test rows", grouped.sum(axis=2))


def fitted_interactions(estimator, X) -> dict | None:
    """SHAP's interaction values of a tree ensemble on the matrix ``X`` it takes (rows × columns × columns, a last
    axis per class where the model has one), as plain data; None for any other estimator. Run where the model
    lives (:func:`~explain_core.intake.models.read_model`)."""
    import shap
    from shap.utils._exceptions import InvalidModelError

    try:  # a native booster's library model; the demo regressions' trees on their standardised target
        estimator, scale, _ = shap_estimator(estimator)  # prediction = scale × the trees' output + a constant
    except Unsupported:
        return None
    if hasattr(estimator, "coef_"):
        return None
    try:
        explainer = shap.TreeExplainer(estimator)  # interaction values need the trees' own (path-dependent) weights
    except InvalidModelError:
        return None
    values = explainer.shap_interaction_values(X)
    values = np.stack(values, axis=-1) if isinstance(values, list) else np.asarray(values)
    return {"values": values.astype(float) * scale, "tree_output": str(explainer.model.tree_output)}


def h_statistic(setup: Setup, rows: np.ndarray) -> Interactions:
    """:data:`H_METHOD` of every pair of groups on the sample ``rows``: each group's and each pair's partial
    dependence at the sample's own points (its distinct values only), scored in one adapter call."""
    data = setup.dataset
    frame = data.features.iloc[rows][data.columns].reset_index(drop=True)
    codes = [pd.factorize(pd.Series(g.values_in(frame)), use_na_sentinel=False)[0] for g in data.groups]
    sets = [(j,) for j in range(len(data.groups))] + list(combinations(range(len(data.groups)), 2))
    points, changes = [], []
    for members in sets:  # the distinct points of the group (pair) in the sample, and where each row falls
        joint = codes[members[0]] if len(members) == 1 else codes[members[0]] * (codes[members[1]].max() + 1) + \
            codes[members[1]]
        _, first, where = np.unique(joint, return_index=True, return_inverse=True)
        points.append(where)
        changes.append([(data.groups[j], data.groups[j].values_in(frame)[first]) for j in members])
    scores = setup.model.score(moved_frames(frame, changes))
    sizes = np.cumsum([0] + [len(c[0][1]) * len(frame) for c in changes])
    pd_at = {}
    for members, where, start, stop in zip(sets, points, sizes[:-1], sizes[1:]):
        curve = scores[start:stop].reshape(-1, len(frame)).mean(axis=1)[where]
        pd_at[members] = curve - curve.mean()
    matrix = np.full((len(data.groups),) * 2, np.nan)
    for j, k in combinations(range(len(data.groups)), 2):
        joint = pd_at[(j, k)]
        total = float(np.sum(joint ** 2))
        rest = float(np.sum((joint - pd_at[(j,)] - pd_at[(k,)]) ** 2))
        matrix[j, k] = matrix[k, j] = np.sqrt(rest / total) if total > 1e-12 else 0.0
    return Interactions(H_METHOD, tuple(data.group_names), matrix, rows, setup.score_label,
                        f"Friedman's H from partial dependence on {len(rows)} test rows")
