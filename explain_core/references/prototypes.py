"""SEV^©: several references, one per cluster of the reference population ("Improving Decision Sparsity", §3).

The paper embeds the negatives in 2-D with PaCMAP and clusters the embedding with a model-aware fuzzy c-means; its
prototypes are per-cluster medians, which can be category patterns no row has (A2) or predicted positive (D3),
and its assignment goes through PaCMAP's approximate ``transform`` (A3, O4). Here, instead, auditable parts:

- **clusters**: k-medoids (FasterPAM, the ``kmedoids`` package) on a seeded sample of at most ``MAX_SAMPLE`` training
  rows of the other class, with the mixed distance of :class:`~.space.PopulationSpace` (ℓ1 over numeric features in
  population SDs + 1 per other feature that differs) — no embedding, the distance an analyst can recompute;
- **K**: given, or chosen per dataset by the highest average medoid silhouette over K = 2…``MAX_CLUSTERS``
  (DynMSC, Lenssen & Schubert 2024) — a stated, reproducible rule;
- **prototype** of a cluster (a :class:`~explain_core.reference.Reference`): by default its medoid among the members
  the model predicts in the other class, with every value known where the cluster has such rows (a real training
  row, so every one-hot block sums to 1, predicted in the other class by construction); ``statistic="nearest_row"``
  takes the member nearest to the cluster's median profile (the project's realistic reference) and ``"median"`` the
  median / mode profile itself (the paper's S6, unsnapped: kept for the K = 1 check, flagged when not predicted in
  the other class);
- **assignment** (S7): a row is explained against the valid prototype nearest to it by the same mixed distance.

Every population row is assigned too, so each prototype card says how many real cases it stands for. Model
awareness is in the prototypes (members the model predicts in the other class), not in the clusters, which are a
property of the population: the same clusters serve any model on the same training rows.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..cache import Memo, memo_field
from ..errors import IntakeError, check_choice
from ..intake.data import Dataset
from ..intake.models import ModelAdapter
from ..reference import Reference, make_reference
from ..results import Explanation
from .space import PopulationSpace, population_rows

MAX_SAMPLE = 2000
MAX_CLUSTERS = 8
STATISTICS = ("medoid", "nearest_row", "median")
ASSIGNMENT_RULE = ("nearest typical case by the mixed distance: the sum of the numeric features' differences in "
                   "standard deviations of the other class, plus 1 for every other feature that differs")


@dataclass(frozen=True)
class Prototype:
    """One typical case: its number (1-based), the reference, the dataset row it is (None for an unsnapped median),
    how many training cases of its class it stands for (and their share), the model's score and label there, and
    whether it is valid (a real row, one-hot blocks summing to 1, predicted in the other class)."""

    number: int
    reference: Reference
    row: int | None
    members: int
    share: float
    score: float
    label: int
    valid: bool


@dataclass(frozen=True)
class PrototypeSet(Explanation):
    """The prototypes of one class's population, how K was chosen, and the assignment rule."""

    explain_class: int
    prototypes: tuple[Prototype, ...]
    statistic: str
    rule: str
    silhouette: float | None
    sample_rows: int
    seed: int
    seconds: float
    assignment: str = ASSIGNMENT_RULE
    space: PopulationSpace | None = field(default=None, repr=False, compare=False)
    centres: Memo = memo_field("the valid prototypes' values as the space reads them", max_entries=4)

    method = "typical cases (SEV^© prototypes)"
    meta_parameters = ("statistic", "seed")

    @property
    def valid(self) -> tuple[Prototype, ...]:
        return tuple(p for p in self.prototypes if p.valid)

    def assign(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """For each row: the index (into :attr:`prototypes`) of the nearest valid prototype, and its distance."""
        valid = [i for i, p in enumerate(self.prototypes) if p.valid]
        if not valid:
            raise IntakeError("No typical case of the other class is predicted in that class by this model, so no "
                              "row can be explained against one; use the single or flexible reference.")
        centres = self.centres.get(tuple(frame.columns), lambda: self.space.arrays(pd.DataFrame(
            [self.prototypes[i].reference.values for i in valid], columns=frame.columns).infer_objects()))
        distance = self.space.mixed(frame, centres)
        nearest = distance.argmin(axis=1)
        return np.asarray(valid)[nearest], distance[np.arange(len(frame)), nearest]


def fit_prototypes(model: ModelAdapter, dataset: Dataset, train_rows: Sequence[int], *, explain_class: int = 1,
                   threshold: float | None = None, clusters: int | None = None, statistic: str = "medoid",
                   seed: int = 0) -> PrototypeSet:
    """Cluster the training rows of the other class and pick one prototype per cluster (module docstring)."""
    check_choice(statistic, STATISTICS, "prototype statistic")
    if clusters is not None and not 1 <= clusters <= 20:
        raise IntakeError(f"The number of typical cases must be between 1 and 20, not {clusters}.")
    started = time.perf_counter()
    population = population_rows(dataset, train_rows, explain_class, threshold)
    space = PopulationSpace.fit(dataset, population)
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.permutation(population)[:MAX_SAMPLE])
    frame = dataset.features.iloc[sample]
    distance = space.mixed(frame, frame)
    medoids, rule, silhouette = _cluster(distance, clusters, seed)
    members = space.mixed(dataset.features.iloc[population], frame.iloc[medoids]).argmin(axis=1)
    sample_labels = distance[:, medoids].argmin(axis=1)
    other = model.label(frame) != explain_class
    complete = ~frame.isna().any(axis=1).to_numpy()  # a typical case has every value known, where one can
    prototypes = []
    for k in range(len(medoids)):
        rows = population[members == k]
        inside = np.flatnonzero((sample_labels == k) & other & complete)
        inside = inside if len(inside) else np.flatnonzero((sample_labels == k) & other)
        prototypes.append(_prototype(model, dataset, space, k + 1, statistic, rows, sample, inside, distance,
                                     sample_labels == k, len(population), explain_class))
    return PrototypeSet(explain_class, tuple(prototypes), statistic, rule, silhouette, len(sample), seed,
                        time.perf_counter() - started, space=space)


def _cluster(distance: np.ndarray, clusters: int | None, seed: int) -> tuple[np.ndarray, str, float | None]:
    """Medoid positions, the rule in words and the chosen K's average medoid silhouette (None when K is given)."""
    import kmedoids

    n = len(distance)
    if clusters is not None or n < 6:
        k = min(clusters or 1, n)
        if k == 1:
            return np.array([int(distance.sum(axis=0).argmin())]), "1 typical case (chosen)", None
        result = kmedoids.fasterpam(distance, k, random_state=seed, init="build")
        return np.asarray(result.medoids), f"{k} typical cases (chosen)", None
    top = min(MAX_CLUSTERS, n - 1)
    result = kmedoids.dynmsc(distance, top, minimum_k=2, random_state=seed)
    silhouette = float(np.max(result.losses))
    rule = (f"{result.bestk} typical cases: the number among 2–{top} with the highest average medoid silhouette "
            f"({silhouette:.2f}) on {n} sampled training cases")
    return np.asarray(result.medoids), rule, silhouette


def _prototype(model, dataset, space, number, statistic, rows, sample, inside, distance, in_cluster, total,
               explain_class) -> Prototype:
    """The prototype of one cluster: medoid / nearest-to-median row among members predicted in the other class,
    or the members' median profile."""
    if statistic == "median" or len(inside) == 0:
        ref = make_reference(dataset, rows, statistic="median", population="all") if len(rows) else None
        row = None
    elif statistic == "medoid":
        best = inside[distance[np.ix_(in_cluster, inside)].sum(axis=0).argmin()]
        row = int(sample[best])
        ref = _row_reference(dataset, row)
    else:
        profile = make_reference(dataset, sample[inside], statistic="median", population="all")
        candidates = dataset.features.iloc[sample[inside]]
        row = int(sample[inside][space.mixed(candidates, profile.as_frame(dataset.columns)).argmin()])
        ref = _row_reference(dataset, row)
    if ref is None:
        return Prototype(number, make_reference(dataset, sample, population="all"), None, 0, 0.0, float("nan"), -1,
                         False)
    score = float(model.score(ref.as_frame(dataset.columns))[0])
    label = int(model.labels_of(np.array([score]))[0])
    valid = label != explain_class and _blocks_valid(dataset, ref) and (row is not None or statistic == "median")
    ref = replace(ref, description=f"typical case #{number} of the other class" + (f" (row {row})" if row is not None
                                                                                  else " (median profile)"),
                  explain_class=explain_class)
    return Prototype(number, ref, row, len(rows), len(rows) / max(1, total), score, label, valid)


def _row_reference(dataset: Dataset, row: int) -> Reference:
    """A real row as a reference: its own values, column by column."""
    values = {c: (v.item() if isinstance(v, np.generic) else v) for c, v in dataset.features.iloc[row].items()}
    return Reference(values, f"real row {row}", statistic="nearest_row", population="opposite")


def _blocks_valid(dataset: Dataset, reference: Reference) -> bool:
    """Every declared one-hot block of the reference holds exactly one 1 (notes A2)."""
    return all(sum(float(reference.values[c]) for c in g.columns) == 1 for g in dataset.groups if g.is_block)
