"""A model before and after sparse-explanation training, side by side (SEV paper §5.2, Figs. 2-4, Tables 4-9):
accuracy and AUC, mean SEV⁺ / SEV⁻ / SEV® on the test rows each model predicts positive, the share of those rows
with no explanation, the share of positive predictions, each row's SEV before → after and the feature prevalence.
Numbers only: the figures drawn from them are in :mod:`explain_core.views.sparse`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..analysis import DatasetSEV, dataset_sev, predicted_rows
from ..vertices import ProgressFn
from ..results import Explanation, ValueEquality
from ..setup import SEVParameters, Setup
from ..sev.summaries import NOT_EXPLAINED, prevalence_table

NEGATIVE = "predicted negative"
SIDES = ("before", "after")
ACCURACY_TOLERANCE = 0.01  # a sparser model may lose at most 1 point of test accuracy to count as better
KIND_LABELS = {"plus": "SEV⁺", "minus": "SEV⁻", "restricted": "SEV®"}


@dataclass(frozen=True, eq=False)
class ModelSparsity(ValueEquality):
    """One model on its test rows: metrics, the share predicted positive, and SEV of every positive test row
    (``restricted`` only with restricted features)."""

    metrics: dict
    positive_share: float
    sev: dict[str, DatasetSEV]
    reference_score: float
    zero_coefficients: float | None = None  # share of a linear model's coefficients that are 0 (SEV Table 2)

    def mean(self, kind: str) -> float:
        values = [v for v in self.sev[kind].values if v is not None]
        return float(np.mean(values)) if values else float("nan")

    def unexplained_share(self, kind: str) -> float:
        values = self.sev[kind].values
        return sum(v is None for v in values) / len(values) if values else float("nan")


def model_sparsity(setup: Setup, params: SEVParameters, progress: ProgressFn | None = None) -> ModelSparsity:
    """SEV⁺, SEV⁻ and (with the setup's restricted features) SEV® of every test row the model predicts positive."""
    rows = predicted_rows(setup, setup.test_rows, label=1)
    plain = replace(setup, restricted=())
    sev = {"plus": dataset_sev(plain, rows, params, kind="plus", progress=progress),
           "minus": dataset_sev(plain, rows, params, kind="minus", progress=progress)}
    if setup.restricted:
        sev["restricted"] = dataset_sev(setup, rows, params, kind="minus", progress=progress)
    reference = setup.reference_of_label(1).as_frame(setup.dataset.columns)
    return ModelSparsity(dict(setup.metrics), len(rows) / max(1, len(setup.test_rows)), sev,
                         float(setup.model.score(reference)[0]), zero_coefficient_share(setup.model.estimator))


def zero_coefficient_share(estimator) -> float | None:
    """The share of exactly zero coefficients of a linear model (or a Pipeline ending in one): the SEV paper's
    global sparsity measure (§5.1, Table 2); None for other models."""
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    coef = getattr(final, "coef_", None)
    if coef is None or not hasattr(final, "intercept_"):
        return None
    coef = np.asarray(coef, dtype=float)
    return float(np.mean(coef == 0)) if coef.size else None


@dataclass(frozen=True, eq=False)
class SparsityComparison(Explanation):
    """The base model (``before``) and the trained one (``after``) on the same test rows."""

    before: ModelSparsity
    after: ModelSparsity
    test_rows: np.ndarray
    group_names: tuple[str, ...]
    reference_means: dict = field(default_factory=dict)  # All-Opt^© / ^F: mean SEV^© / SEV^F, (before, after)

    method = "sparse-explanation training, before and after"

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k in KIND_LABELS if k in self.before.sev and k in self.after.sev)

    def table(self) -> pd.DataFrame:
        """The before/after table (paper Tables 4-9 plus the unexplainable and positive shares)."""
        rows = {}
        for part in ("train", "test"):
            for metric, name in (("accuracy", "accuracy"), ("auc", "AUC")):
                rows[f"{part} {name}"] = [m.metrics.get(f"{part}_{metric}", float("nan")) for m in self._sides]
        for kind in self.kinds:
            rows[f"mean {KIND_LABELS[kind]} (test rows predicted positive)"] = [m.mean(kind) for m in self._sides]
        rows.update({name: list(pair) for name, pair in self.reference_means.items()})
        last = "restricted" if "restricted" in self.kinds else "minus"
        rows[f"share with no {KIND_LABELS[last]} explanation"] = [m.unexplained_share(last) for m in self._sides]
        rows["share of test rows predicted positive"] = [m.positive_share for m in self._sides]
        rows["reference's score (must stay below the threshold)"] = [m.reference_score
                                                                                     for m in self._sides]
        if all(m.zero_coefficients is not None for m in self._sides):
            rows["share of zero coefficients"] = [m.zero_coefficients for m in self._sides]
        return pd.DataFrame.from_dict(rows, orient="index", columns=list(SIDES))

    def headline(self) -> str:
        """The answer in one sentence: the mean SEV that was targeted and the test accuracy, before → after."""
        kind = "restricted" if "restricted" in self.kinds else None
        parts = [f"mean {KIND_LABELS[k]} {self.before.mean(k):.2f} → {self.after.mean(k):.2f}"
                 for k in ((kind,) if kind else ("plus", "minus"))]
        parts += [f"{name.split(' (')[0]} {a:.2f} → {b:.2f}" for name, (a, b) in self.reference_means.items()]
        if kind:
            parts.append(f"rows with no {KIND_LABELS[kind]} explanation {self.before.unexplained_share(kind):.0%} → "
                         f"{self.after.unexplained_share(kind):.0%}")
        acc = self._accuracies
        return "; ".join(parts) + f"; test accuracy {acc[0]:.3f} → {acc[1]:.3f}."

    def targeted(self, objective: str) -> tuple[float, float]:
        """The mean SEV the objective aims to shorten, (before, after): SEV⁺ for All-Opt⁺ and Vol-Opt, SEV⁻ for
        All-Opt⁻, SEV® for All-Opt®, the mean over the other kinds of reference for All-Opt^© / ^F."""
        if self.reference_means and objective in ("all_opt_cluster", "all_opt_flexible"):
            return next(iter(self.reference_means.values()))
        kind = {"all_opt_minus": "minus", "all_opt_restricted": "restricted"}.get(objective, "plus")
        kind = kind if kind in self.kinds else "plus"
        return self.before.mean(kind), self.after.mean(kind)

    def shortfall(self, objective: str, strength: float, tolerance: float = ACCURACY_TOLERANCE) -> str | None:
        """Why the trained model is not better, with the next setting to try; None when the targeted mean SEV went
        down and the test accuracy lost at most ``tolerance`` (1 point)."""
        (sev_before, sev_after), (acc_before, acc_after) = self.targeted(objective), self._accuracies
        shorter = sev_after < sev_before - 1e-9
        accurate = acc_after >= acc_before - tolerance
        if shorter and accurate:
            return None
        lost = f"test accuracy {acc_before:.3f} → {acc_after:.3f}"
        if not accurate:
            return (f"{lost}: more than {tolerance * 100:.0f} point lost. Try a smaller λ (e.g. {strength / 3:.3g}) "
                    "or fewer epochs with the SEV term.")
        return (f"the explanations did not get shorter (mean {sev_before:.2f} → {sev_after:.2f}). Try a larger λ "
                f"(e.g. {strength * 3:.3g}) or more epochs with the SEV term.")

    @property
    def _accuracies(self) -> tuple[float, float]:
        return tuple(m.metrics.get("test_accuracy", float("nan")) for m in self._sides)

    @property
    def _sides(self) -> tuple[ModelSparsity, ModelSparsity]:
        return self.before, self.after

    def transitions(self, kind: str) -> pd.DataFrame:
        """Per test row predicted positive by either model: its SEV before and after (``NEGATIVE`` where that
        model predicts it negative, ``NOT_EXPLAINED`` where no explanation was found)."""
        states = [_states(side.sev[kind]) for side in self._sides]
        rows = sorted(set(states[0]) | set(states[1]))
        return pd.DataFrame({"row": rows, "before": [states[0].get(r, NEGATIVE) for r in rows],
                             "after": [states[1].get(r, NEGATIVE) for r in rows]})

    def prevalence(self, kind: str) -> pd.DataFrame:
        """Share of explained rows whose minimal explanations use each feature, before and after (Fig. 4b)."""
        tables = [prevalence_table(side.sev[kind].results, self.group_names) for side in self._sides]
        return pd.DataFrame({"group": self.group_names, "before": tables[0]["share"].to_numpy(),
                             "after": tables[1]["share"].to_numpy()})


def _states(result: DatasetSEV) -> dict[int, str]:
    return {int(r): (str(v) if v is not None else NOT_EXPLAINED) for r, v in zip(result.rows, result.values)}


def compare_sparsity(before: Setup, after: Setup, params: SEVParameters,
                     progress: ProgressFn | None = None) -> SparsityComparison:
    """:func:`model_sparsity` of both models on the base setup's test rows."""
    return SparsityComparison(model_sparsity(before, params, progress), model_sparsity(after, params, progress),
                              np.asarray(before.test_rows), tuple(before.dataset.layout.names))
