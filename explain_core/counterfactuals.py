"""Counterfactuals side by side: SEV against each kind of reference beside DiCE's diverse counterfactuals (Mothilal,
Sharma and Tan, FAT* 2020; the ``dice-ml`` package), every method measured alike ("Improving Decision Sparsity",
Exp. 3): ℓ0 = feature groups changed, ℓ∞ and ℓ1 = numeric changes in the reference population's standard
deviations, credibility = the percentile of :mod:`~explain_core.references.credibility`, and the seconds the
method took for the row. The setup's restricted features are honoured by every method: SEV holds them (SEV®), DiCE
is told to vary only the others (``features_to_vary``), and every point is checked.

DiCE runs model-agnostic (its ``random`` method by default, ``genetic`` on request) on the training rows, with the
seed: ``random`` takes it as ``random_seed``; ``genetic`` takes none, so numpy's and Python's global generators are
seeded with it first. dice-ml is imported when a counterfactual is asked for.
"""
from __future__ import annotations

import contextlib
import io
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import check_choice
from .references.kinds import FittedReferences, available_kinds, explain_kind, fit_references
from .references.outcome import ReferenceSEV
from .references.space import Destination
from .results import Explanation
from .seeding import global_generators
from .vocabulary import join_words

DICE_METHODS = {"random": "DiCE (random)", "genetic": "DiCE (genetic)"}
OUTCOME = "__outcome__"


@dataclass(frozen=True)
class CounterfactualParameters:
    """What DiCE reads: its model-agnostic method (``random`` or ``genetic``), how many counterfactuals, the seed."""

    dice_method: str = "random"
    dice_count: int = 4
    seed: int = 0


@dataclass(frozen=True)
class MethodPoints:
    """One method's points for the row (closest first for SEV; DiCE's order), the seconds it took, and a note
    (what it could not do)."""

    method: str
    points: tuple[Destination, ...]
    seconds: float
    note: str = ""


@dataclass(frozen=True, eq=False)
class CounterfactualComparison(Explanation):
    """Every method's points for one row, with the shared metrics (module docstring)."""

    query: pd.Series
    restricted: tuple[str, ...]
    methods: tuple[MethodPoints, ...]
    dice_method: str
    dice_count: int
    seed: int

    method = "counterfactuals side by side"
    meta_parameters = ("restricted", "dice_method", "dice_count", "seed")

    def table(self) -> pd.DataFrame:
        """One row per point: method, features changed, ℓ0, ℓ∞, ℓ1, credibility, the method's seconds."""
        rows = [{"method": m.method, "point": i, "features changed": ", ".join(p.groups), "ℓ0": p.l0,
                 "ℓ∞ (SD)": p.linf, "ℓ1 (SD)": p.l1, "credibility": p.credibility, "seconds": m.seconds}
                for m in self.methods for i, p in enumerate(m.points, 1)]
        return pd.DataFrame(rows, columns=["method", "point", "features changed", "ℓ0", "ℓ∞ (SD)", "ℓ1 (SD)",
                                           "credibility", "seconds"])

    def summary(self) -> pd.DataFrame:
        """One row per method: its first point's metrics (SEV's closest explanation, DiCE's mean over its points)."""
        rows = []
        for m in self.methods:
            pts = m.points if m.method.startswith("DiCE") else m.points[:1]
            cred = [p.credibility for p in pts if p.credibility is not None]
            rows.append({"method": m.method, "points": len(m.points),
                         "ℓ0": np.mean([p.l0 for p in pts]) if pts else np.nan,
                         "ℓ∞ (SD)": np.mean([p.linf for p in pts]) if pts else np.nan,
                         "ℓ1 (SD)": np.mean([p.l1 for p in pts]) if pts else np.nan,
                         "credibility": np.mean(cred) if cred else np.nan, "seconds": m.seconds, "note": m.note})
        return pd.DataFrame(rows).set_index("method")


def sev_points(result: ReferenceSEV, left_open: str = "") -> MethodPoints:
    """A reference search's points; one that found no explanation says so, in ``left_open``'s words where the
    caller knows why the search stopped."""
    note = "" if result.explainable else left_open or f"no explanation ({result.shown})"
    return MethodPoints(result.method, result.destinations, result.seconds, note)


def compare_counterfactuals(setup, query: pd.DataFrame, *, kinds: Sequence[str] | None = None,
                            fitted: dict[int, FittedReferences] | None = None, max_depth: int = 6,
                            credible: float | None = None,
                            dice: CounterfactualParameters = CounterfactualParameters(),
                            left_open: str = "") -> CounterfactualComparison:
    """SEV against each of ``kinds`` (default: every kind the model allows; with ``credible``, the credible search)
    and DiCE for the row, with ``dice``'s method, count and seed (the seed also fits the references); a search that
    finds no explanation within ``max_depth`` says ``left_open`` where given (why the depth stops there)."""
    dice_method, dice_count, seed = dice.dice_method, dice.dice_count, dice.seed
    check_choice(dice_method, DICE_METHODS, "DiCE method")
    kinds = available_kinds(setup) if kinds is None else kinds
    fitted = {} if fitted is None else fitted
    label = int(setup.model.label(query)[0])
    part = fitted.setdefault(label, fit_references(setup, label, seed=seed))
    methods = [sev_points(explain_kind(setup, query, kind, fitted, max_depth=max_depth, credible=credible)[0],
                          left_open) for kind in kinds]
    methods.append(dice_points(setup, query, part, method=dice_method, count=dice_count, seed=seed))
    return CounterfactualComparison(query.iloc[0], tuple(setup.restricted), tuple(methods), dice_method, dice_count,
                                    seed)


class _DiceModel:
    """The setup's model as DiCE's scikit-learn backend sees it: raw rows in, [P(0), P(1)] out, rescaled so that
    DiCE's 0.5 is the model's own threshold, and DiCE's text values cast back to the data's types."""

    def __init__(self, model, dtypes: pd.Series):
        self.model, self.dtypes = model, dtypes

    def _frame(self, X) -> pd.DataFrame:
        frame = pd.DataFrame(X).copy()
        for column, dtype in self.dtypes.items():
            if pd.api.types.is_numeric_dtype(dtype):
                frame[column] = pd.to_numeric(frame[column]).astype(float if dtype.kind == "f" else dtype)
        return frame[list(self.dtypes.index)]

    def predict_proba(self, X) -> np.ndarray:
        scores = self.model.score(self._frame(X))
        t = self.model.threshold
        if self.model.score_kind == "proba" and 0 < t < 1:
            p = np.where(scores < t, scores / (2 * t), 0.5 + (scores - t) / (2 * (1 - t)))
        else:
            p = 1 / (1 + np.exp(-(scores - t)))
        return np.column_stack([1 - p, p])

    def predict(self, X) -> np.ndarray:
        return (self.predict_proba(X)[:, 1] >= 0.5).astype(int)


def dice_points(setup, query: pd.DataFrame, fitted: FittedReferences, *, method: str = "random", count: int = 4,
                seed: int = 0) -> MethodPoints:
    """DiCE's diverse counterfactuals for the row, each checked (prediction flipped, restricted features and
    one-hot blocks intact) and measured like SEV's explanations."""
    if setup.dataset.task != "classification":
        return MethodPoints(DICE_METHODS[method], (), 0.0, "DiCE is run for classification only")
    data, columns = setup.dataset, list(setup.dataset.columns)
    missing = [c for c in columns if pd.isna(query[c].iloc[0])]
    if missing:  # DiCE refuses such a query ("impute the missing values and try again")
        return MethodPoints(DICE_METHODS[method], (), 0.0, f"DiCE cannot start from a row with a missing value "
                                                           f"({join_words(missing)} missing here)")
    import dice_ml

    train = data.features.iloc[setup.train_rows][columns].copy()
    train[OUTCOME] = data.y[setup.train_rows]
    numeric = [g.columns[0] for g in data.groups if g.kind == "numeric" and not g.is_block]
    held = {c for g in data.groups if g.name in set(setup.restricted) for c in g.columns}
    started = time.perf_counter()
    explainer = dice_ml.Dice(dice_ml.Data(dataframe=train, continuous_features=numeric, outcome_name=OUTCOME),
                             dice_ml.Model(model=_DiceModel(setup.model, data.features[columns].dtypes),
                                           backend="sklearn", model_type="classifier"), method=method)
    options = {"total_CFs": count, "desired_class": "opposite", "features_to_vary": [c for c in columns
                                                                                      if c not in held]}
    if method == "random":
        options["random_seed"] = seed  # which DiCE's random method gives to the global generators itself
    try:
        with global_generators(None if method == "random" else seed), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():  # DiCE's progress bar, the pandas deprecations it triggers
            warnings.simplefilter("ignore")
            found = explainer.generate_counterfactuals(query[columns], verbose=False, **options)
        frame = found.cf_examples_list[0].final_cfs_df
    except Exception as exc:  # noqa: BLE001 — DiCE raises bare exceptions when it finds nothing
        return MethodPoints(DICE_METHODS[method], (), time.perf_counter() - started, f"DiCE found none: {exc}")
    seconds = time.perf_counter() - started
    return _checked(setup, query, frame, fitted, DICE_METHODS[method], seconds)


def _checked(setup, query, frame, fitted, label, seconds) -> MethodPoints:
    """DiCE's points that flip the prediction, keep the restricted features and every one-hot block valid, measured."""
    if frame is None or len(frame) == 0:
        return MethodPoints(label, (), seconds, "DiCE found no counterfactual")
    data = setup.dataset
    points = _DiceModel(setup.model, data.features[list(data.columns)].dtypes)._frame(
        frame.drop(columns=[OUTCOME], errors="ignore")).reset_index(drop=True)
    base = pd.concat([query[list(points.columns)]] * len(points), ignore_index=True)
    changed = fitted.space.changed(base, points)
    names = np.array(data.group_names)
    blocks = np.column_stack([points[list(g.columns)].sum(axis=1).to_numpy() == 1 if g.is_block
                              else np.ones(len(points), bool) for g in data.groups]).all(axis=1)
    keep = (setup.model.label(points) != setup.model.label(query)[0]) & blocks \
        & ~changed[:, np.isin(names, list(setup.restricted))].any(axis=1)
    l0, linf, l1 = fitted.space.distances(base, points)
    cred, scores = fitted.density.percentile(points), setup.model.score(points)
    group_of = dict(zip(data.layout.columns, data.layout.column_group))
    out = tuple(Destination(tuple(names[changed[i]]), {c: _plain(points[c].iloc[i]) for c in points.columns
                                                       if changed[i, group_of[c]]},
                            float(scores[i]), int(l0[i]), float(linf[i]), float(l1[i]), float(cred[i]))
                for i in np.flatnonzero(keep))
    dropped = int((~keep).sum())
    note = f"{dropped} of DiCE's {len(points)} points dropped (not flipped, or a restricted feature or one-hot " \
           "block changed)" if dropped else ""
    return MethodPoints(label, out, seconds, note)


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value
