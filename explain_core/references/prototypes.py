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
- **assignment** (:data:`ASSIGNMENTS`): ``"nearest"`` (the paper's S7): a row is explained against the valid
  prototype nearest to it by the same mixed distance; ``"sparsest"``: against the valid prototype it can reach by
  changing the fewest features (SEV⁻ against each one, then the minimum); ties broken by where the closest
  explanation lands (the higher credibility percentile, :mod:`.credibility`), then by the mixed distance (the
  nearest). So SEV^©(sparsest) ≤ SEV^©(nearest) row by row on the same prototypes, from one search of every
  (prototype, row) pair (:func:`~.search.search_each`: one model call per layer for all K; only the tied prototypes'
  explanations are measured). With the credible search, a prototype whose
  explanation passes the gate beats one that only has the fallback. The credibility tie-break is there because most
  rows tie at SEV 1 against several prototypes and the nearest of those lands less credibly (COMPAS × MLP, split 0,
  500 rows: mean credibility 0.48 with the nearest, 0.59 with the most credible, same SEV);
- **K** for ``"sparsest"`` (when not given): ``MAX_CLUSTERS`` (8), no silhouette. The silhouette picks K for a
  partition whose clusters must mean something, as ``"nearest"`` explains each row against its own cluster's case;
  with ``"sparsest"`` the clusters only spread the prototypes over the population (FasterPAM's balanced clusters),
  each row tries all of them, and more prototypes give each row more references to reach. On Adult, COMPAS and
  German credit the silhouette picks K = 2 with one cluster of 1–37 of the sampled cases (on Adult, large capital
  gains), so one typical case stands for nearly every row; 8 are as many as the page shows in two rows of cards and
  keep each row's search to 8 references.

Default (:data:`DEFAULT_ASSIGNMENT`): ``"sparsest"``. On the issue-28 bench (bench/README.md) it is the only SEV^©
or SEV^F variant with mean ≤ 1.3 on Adult × MLP, with a smaller ℓ∞ and a higher credibility than SEV¹ there; it
searches each row against 8 typical cases (in one search, one model call per layer).

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
MIXED_DISTANCE = ("the mixed distance: the sum of the numeric features' differences in standard deviations of the "
                  "other class, plus 1 for every other feature that differs")
ASSIGNMENTS = {"nearest": f"nearest typical case by {MIXED_DISTANCE}",
               "sparsest": "typical case reached by changing the fewest features (of those, the one whose explanation "
                           "lands where real cases are most typical, then the nearest by "
                           f"{MIXED_DISTANCE})"}
"""The rules that give a row its typical case (SEV^©), with their wording."""
ASSIGNMENT_RULE = ASSIGNMENTS["nearest"]
DEFAULT_ASSIGNMENT = "sparsest"


@dataclass(frozen=True)
class Clustering:
    """How :func:`fit_prototypes` clusters and picks the typical cases.

    Parameters
    ----------
    clusters : int, optional
        K, between 1 and 20 (None: by the rule of ``assignment``).
    statistic : str
        ``"medoid"``, ``"nearest_row"`` or ``"median"``.
    seed : int
        The sample's and k-medoids' seed.
    assignment : str
        ``"nearest"`` or ``"sparsest"``.
    """

    clusters: int | None = None
    statistic: str = "medoid"
    seed: int = 0
    assignment: str = DEFAULT_ASSIGNMENT


DEFAULT_CLUSTERING = Clustering()
"""K by the default assignment's rule, medoids, seed 0."""
"""The default typical-case assignment: the one the row reaches by changing the fewest features."""


@dataclass(frozen=True)
class Prototype:
    """One typical case: its number (1-based), the reference, the dataset row it is (None for an unsnapped median),
    how many training cases of its class it stands for (and their share), the model's score and label there, and
    whether it is valid (a real row, one-hot blocks summing to 1, predicted in the other class).

    Parameters
    ----------
    number : int
        1-based.
    reference : Reference
        The typical case as a reference.
    row : int, optional
        Its dataset row.
    members : int
        Training cases it stands for.
    share : float
        Their share.
    score : float
        The model's score there.
    label : int
        The model's label there.
    valid : bool
        Whether it can serve as a reference.
    """

    number: int
    reference: Reference
    row: int | None
    members: int
    share: float
    score: float
    label: int
    valid: bool


@dataclass(frozen=True, eq=False)
class PrototypeSet(Explanation):
    """The prototypes of one class's population, how K was chosen, and the assignment rule.

    Parameters
    ----------
    explain_class : int
        The class explained.
    prototypes : tuple of Prototype
        The typical cases.
    statistic : str
        ``"medoid"``, ``"nearest_row"`` or ``"median"``.
    rule : str
        How K was chosen, in words.
    silhouette : float, optional
        The chosen K's average medoid silhouette.
    sample_rows, seed : int
        Rows clustered, and the seed.
    seconds : float
        Fitting time.
    assignment : str
        The assignment rule in words.
    space : PopulationSpace, optional
        The coordinates of the mixed distance.
    """

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

    def distances(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """The indices (into :attr:`prototypes`) of the valid prototypes, and each row's mixed distance to each
        (rows × valid prototypes).

        Parameters
        ----------
        frame : pandas.DataFrame
            Rows.

        Returns
        -------
        tuple of numpy.ndarray
            The valid prototypes' indices, and the distances.

        Raises
        ------
        IntakeError
            When no typical case is valid.
        """
        valid = [i for i, p in enumerate(self.prototypes) if p.valid]
        if not valid:
            raise IntakeError("No typical case of the other class is predicted in that class by this model, so no "
                              "row can be explained against one; use the single or flexible reference.")
        centres = self.centres.get(tuple(frame.columns), lambda: self.space.arrays(pd.DataFrame(
            [self.prototypes[i].reference.values for i in valid], columns=frame.columns).infer_objects()))
        return np.asarray(valid), self.space.mixed(frame, centres)

    def assign(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """For each row: the index (into :attr:`prototypes`) of the nearest valid prototype, and its distance.

        Parameters
        ----------
        frame
            As for :meth:`distances`.

        Returns
        -------
        tuple of numpy.ndarray
            The prototypes' indices, and the distances.

        Raises
        ------
        IntakeError
            When no typical case is valid.
        """
        valid, distance = self.distances(frame)
        nearest = distance.argmin(axis=1)
        return valid[nearest], distance[np.arange(len(frame)), nearest]


def _first_keys(values: np.ndarray, passed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The sparsest rule's first keys: failing the credibility gate (never, without one), then the features changed
    (NaN, nothing flips within the depth: last)."""
    failed = np.zeros(values.shape, bool) if passed is None else ~passed
    return failed, np.where(np.isnan(values), np.inf, values)


def fewest(values: np.ndarray, passed: np.ndarray | None = None) -> np.ndarray:
    """Rows × prototypes: True where the prototype ties for the best first keys (:func:`_first_keys`) of its row."""
    failed, size = _first_keys(values, passed)
    best = np.lexsort((size, failed), axis=1)[:, :1]
    return (failed == np.take_along_axis(failed, best, 1)) & (size == np.take_along_axis(size, best, 1))


def sparsest(values: np.ndarray, distance: np.ndarray, passed: np.ndarray | None = None,
             credibility: np.ndarray | None = None) -> np.ndarray:
    """Per row, the column (prototype) the sparsest rule takes: the fewest features changed (``values``, rows ×
    prototypes), among those whose explanation passed the credibility gate first when ``passed`` is given; ties
    broken by the higher ``credibility`` (of the closest explanation; -inf / NaN: unknown, last), then the smaller
    ``distance``, then the lower column."""
    failed, size = _first_keys(values, passed)
    credible = np.zeros(values.shape) if credibility is None else np.nan_to_num(credibility, nan=-np.inf)
    columns = np.broadcast_to(np.arange(values.shape[1]), values.shape)
    return np.lexsort((columns, distance, -credible, size, failed), axis=1)[:, 0]


def fit_prototypes(model: ModelAdapter, dataset: Dataset, train_rows: Sequence[int], *, explain_class: int = 1,
                   threshold: float | None = None, clustering: Clustering = DEFAULT_CLUSTERING) -> PrototypeSet:
    """Cluster the training rows of the other class and pick one prototype per cluster (module docstring) as
    ``clustering`` says; with ``clustering.clusters`` None, K by the rule of its ``assignment``.

    Parameters
    ----------
    model : ModelAdapter
        The model.
    dataset, train_rows, explain_class, threshold
        As for :func:`~explain_core.references.credibility.fit_density`.
    clustering : Clustering
        K (or its rule), the statistic, the seed and the assignment.

    Returns
    -------
    PrototypeSet
        The typical cases.

    Raises
    ------
    IntakeError
        When the statistic, assignment or number of clusters is not valid, or the other class has no rows.
    """
    clusters, statistic, seed, assignment = (clustering.clusters, clustering.statistic, clustering.seed,
                                             clustering.assignment)
    check_choice(statistic, STATISTICS, "prototype statistic")
    check_choice(assignment, ASSIGNMENTS, "typical-case assignment")
    if clusters is not None and not 1 <= clusters <= 20:
        raise IntakeError(f"The number of typical cases must be between 1 and 20, not {clusters}.")
    started = time.perf_counter()
    population = population_rows(dataset, train_rows, explain_class, threshold)
    space = PopulationSpace.fit(dataset, population)
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.permutation(population)[:MAX_SAMPLE])
    frame = dataset.features.iloc[sample]
    distance = space.mixed(frame, frame)
    medoids, rule, silhouette = _cluster(distance, clusters, seed, assignment)
    members = space.mixed(dataset.features.iloc[population], frame.iloc[medoids]).argmin(axis=1)
    sample_labels = distance[:, medoids].argmin(axis=1)
    other = model.label(frame) != explain_class
    complete = ~frame.isna().any(axis=1).to_numpy()  # a typical case has every value known, where one can
    sampled = _Sampled(model, dataset, space, statistic, sample, distance, len(population), explain_class)
    prototypes = []
    for k in range(len(medoids)):
        rows = population[members == k]
        inside = np.flatnonzero((sample_labels == k) & other & complete)
        inside = inside if len(inside) else np.flatnonzero((sample_labels == k) & other)
        prototypes.append(_prototype(sampled, k + 1, rows, inside, sample_labels == k))
    return PrototypeSet(explain_class, tuple(prototypes), statistic, rule, silhouette, len(sample), seed,
                        time.perf_counter() - started, ASSIGNMENTS[assignment], space=space)


def _cluster(distance: np.ndarray, clusters: int | None, seed: int,
             assignment: str) -> tuple[np.ndarray, str, float | None]:
    """Medoid positions, the rule in words and the chosen K's average medoid silhouette (None when K is not chosen
    by it)."""
    import kmedoids

    n = len(distance)
    if clusters is not None or n < 6 or assignment == "sparsest":
        k = min(clusters or (1 if n < 6 else MAX_CLUSTERS), n)
        said = "chosen" if clusters is not None else ("every row tries each one and takes the one it reaches by "
                                                        "the fewest changes" if k > 1 else "too few cases for more")
        if k == 1:
            return np.array([int(distance.sum(axis=0).argmin())]), f"1 typical case ({said})", None
        result = kmedoids.fasterpam(distance, k, random_state=seed, init="build")
        return np.asarray(result.medoids), f"{k} typical cases ({said})", None
    top = min(MAX_CLUSTERS, n - 1)
    result = kmedoids.dynmsc(distance, top, minimum_k=2, random_state=seed)
    silhouette = float(np.max(result.losses))
    rule = (f"{result.bestk} typical cases: the number among 2–{top} with the highest average medoid silhouette "
            f"({silhouette:.2f}) on {n} sampled training cases")
    return np.asarray(result.medoids), rule, silhouette


@dataclass(frozen=True)
class _Sampled:
    """What every cluster's prototype is picked from: the model, the data and its population space, the statistic,
    the sampled rows (positions in the data) with their distances, the population's size, the class explained."""

    model: ModelAdapter
    dataset: Dataset
    space: PopulationSpace
    statistic: str
    sample: np.ndarray
    distance: np.ndarray
    total: int
    explain_class: int


def _prototype(sampled: _Sampled, number: int, rows: np.ndarray, inside: np.ndarray,
               in_cluster: np.ndarray) -> Prototype:
    """The prototype of cluster ``number`` (its population ``rows``; ``inside``: its sampled members predicted in
    the other class, ``in_cluster``: the sample's members): medoid / nearest-to-median row among ``inside``, or the
    members' median profile."""
    model, dataset, space, statistic = sampled.model, sampled.dataset, sampled.space, sampled.statistic
    sample, distance, total, explain_class = sampled.sample, sampled.distance, sampled.total, sampled.explain_class
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
