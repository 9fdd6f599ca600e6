"""Two models side by side on the same data and split: each one's metrics on the shared test rows, the rows where
their predicted labels disagree, and one row's SEV (:func:`~explain_core.analysis.row_sev`) and SHAP
(:func:`~explain_core.baselines.explain_shap`) under both (:func:`compare_models`).

The second model must be fitted or checked on the same dataset (the same content hash and positive class) and
split (:func:`aligned_second` refuses another with an :class:`~explain_core.errors.IntakeError`); it is explained
for the first setup's class (multiclass: one against the rest), with its restricted features and its own default
reference (the first setup's statistic and population).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..analysis import row_sev
from ..baselines import Attribution, explain_shap
from ..errors import IntakeError
from ..intake.data import find_value
from ..reference import make_reference
from ..results import Explanation
from ..setup import Parameters, Setup
from ..sev.engine import SEVExplanation


def aligned_second(first: Setup, second: Setup) -> Setup:
    """``second`` made comparable with ``first``: the same class explained, restricted features and kind of
    reference; an IntakeError when it is not on the same data and split."""
    wanted = first.dataset.positive_class
    if second.explainable_classes() and find_value(wanted, [second.dataset.positive_class]) is None:
        second = second.with_positive_class(wanted)  # a multiclass model: the same class against the rest
    if second.dataset.content_hash != first.dataset.content_hash or second.dataset.task != first.dataset.task:
        raise IntakeError(f"The second model ({second.model.name}) was not fitted on this dataset "
                          f"({first.dataset.name}): its data differ, so the two cannot be compared row by row. "
                          "Choose a model of the session's dataset.")
    if not (np.array_equal(first.train_rows, second.train_rows) and np.array_equal(first.test_rows, second.test_rows)):
        raise IntakeError(f"The second model ({second.model.name}) uses another train/test split than the session's "
                          f"({len(second.test_rows):,} test rows against {len(first.test_rows):,}), so their metrics "
                          "would not be on the same rows; use the same split seed (and hold-out).")
    ref = first.reference
    if (ref.statistic, ref.population, ref.rounded) != (second.reference.statistic, second.reference.population,
                                                        second.reference.rounded):
        second = second.with_reference(make_reference(second.dataset, second.train_rows, statistic=ref.statistic,
                                                      population=ref.population, rounded=ref.rounded,
                                                      threshold=second.model.threshold))
    return second.with_restricted(first.restricted)


@dataclass(frozen=True, eq=False)
class ModelComparison(Explanation):
    """Two models on the same test rows (``rows``): their names, label rules and metrics, every row's scores and
    predicted labels, and for one row (``row``; None: none chosen) the SEV and SHAP of each."""

    names: tuple[str, str]
    rules: tuple[str, str]
    metrics: tuple[dict, dict]
    rows: np.ndarray
    truth: np.ndarray
    scores: np.ndarray  # 2 × rows
    labels: np.ndarray  # 2 × rows
    class_names: tuple[str, str]
    row: int | None = None
    sev: tuple[SEVExplanation, SEVExplanation] | None = None
    shap: tuple[Attribution, Attribution] | None = None

    method = "Two models side by side"
    meta_parameters = ("names", "row")

    def metrics_table(self) -> pd.DataFrame:
        """Each model's metrics (train and test) side by side, one line per metric."""
        table = pd.DataFrame({f"model {i + 1}": m for i, m in enumerate(self.metrics)})
        table.index.name = "metric"
        return table

    @property
    def disagree(self) -> np.ndarray:
        """The test rows (dataset positions) whose predicted labels differ."""
        return np.asarray(self.rows)[np.asarray(self.labels[0]) != np.asarray(self.labels[1])]

    @property
    def disagreement_share(self) -> float:
        return len(self.disagree) / max(1, len(self.rows))

    def disagreements(self) -> pd.DataFrame:
        """One line per row where the two disagree: each model's score and label (model 1, 2: :attr:`names`), and the
        true class."""
        mask = np.asarray(self.labels[0]) != np.asarray(self.labels[1])
        names = np.asarray(self.class_names, dtype=object)
        table = pd.DataFrame({"row": np.asarray(self.rows)[mask], "model 1 score": self.scores[0][mask],
                              "model 1 predicts": names[self.labels[0][mask]], "model 2 score": self.scores[1][mask],
                              "model 2 predicts": names[self.labels[1][mask]],
                              "true": names[np.asarray(self.truth)[mask]]})
        return table.set_index("row")

    def row_table(self) -> pd.DataFrame:
        """The chosen row under both models: each feature's SHAP value, and whether it is in the first minimal SEV⁻
        explanation (empty without a row)."""
        if self.sev is None or self.shap is None:
            return pd.DataFrame()
        groups = list(self.shap[0].groups)
        out = {}
        for i, (ex, shap) in enumerate(zip(self.sev, self.shap)):
            moved = set(ex.minus.explanations[0]) if ex.minus.explanations else set()
            out[f"model {i + 1} SHAP ({shap.output})"] = shap.values
            out[f"model {i + 1} in SEV⁻"] = [g in moved for g in groups]
        return pd.DataFrame(out, index=pd.Index(groups, name="feature"))


def _test_labels(setup: Setup) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(setup.model.score(setup.dataset.features.iloc[np.asarray(setup.test_rows)]), dtype=float)
    return scores, setup.model.labels_of(scores).astype(int)


def compare_models(first: Setup, second: Setup, row: int | None = None,
                   params: Parameters | None = None) -> ModelComparison:
    """``first`` and ``second`` (aligned by :func:`aligned_second`) on the shared test rows, and row ``row`` (a
    dataset position) explained by SEV and SHAP under each (``params``: SEV's depth, engine and budget, SHAP's
    background and seed)."""
    params = params or Parameters()
    second = aligned_second(first, second)
    setups = (first, second)
    (s1, l1), (s2, l2) = (_test_labels(s) for s in setups)
    truth = np.asarray(first.dataset.y[np.asarray(first.test_rows)])
    truth = first.model.labels_of(truth) if first.dataset.task != "classification" else truth.astype(int)
    metrics = tuple({k: float(v) for k, v in s.metrics.items() if k != "test_rows"} for s in setups)
    row_sevs = row_shaps = None
    if row is not None:
        query = first.query(row)
        row_sevs = tuple(row_sev(s, query, params) for s in setups)
        row_shaps = tuple(explain_shap(s.model, s.dataset, query, s.train_rows, seed=params.seed,
                                       background=params.shap_background) for s in setups)
    return ModelComparison((first.model.name, second.model.name), (first.model.rule, second.model.rule), metrics,
                           np.asarray(first.test_rows), truth, np.vstack([s1, s2]), np.vstack([l1, l2]),
                           first.class_names, None if row is None else int(row), row_sevs, row_shaps)
