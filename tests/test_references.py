"""SEV^F, SEV^©, credibility ("Improving Decision Sparsity"; notes §11) against brute force and the paper's
acceptance checks: SEV^F with τ = 0 is SEV¹ and never above it; SEV^F is the minimum over every reference of its
grid; SEV^© with one median cluster is SEV¹ with the median reference; prototypes are valid real rows of the other
class; the credible search against an enumeration of the hypercube; the credibility percentile is uniform on
held-out real cases; every result round-trips through JSON."""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from explain_core.analysis import demo_setup, predicted_rows, trained_setup
from explain_core.intake.data import make_dataset
from explain_core.intake.layout import TableChoices
from explain_core.reference import Reference, make_reference
from explain_core import IntakeError
from explain_core.references import (Candidates, ClusterSEV, Clustering, FlexibleSEV, KindsTable, PrototypeSet,
                                     ReferenceFits, SingleSEV, TreeKindSEV, available_kinds, compare_kinds,
                                     explain_kind, fit_density, fit_prototypes, fit_references, flexible_candidates,
                                     flexible_windows, search)
from explain_core.references.kinds import row_series
from explain_core.references.space import PopulationSpace
from explain_core.sev import BFSSearch, sev_batch, tree_sev


def synthetic(n: int = 600, seed: int = 0):
    """Three numeric features (two whole-valued), a categorical one and a declared one-hot block."""
    rng = np.random.default_rng(seed)
    region = rng.integers(0, 3, n)
    frame = pd.DataFrame({"age": rng.integers(18, 70, n), "debt": rng.gamma(2.0, 2.0, n).round(2),
                          "visits": rng.poisson(3, n), "colour": rng.choice(["red", "green", "blue"], n),
                          "north": (region == 0).astype(int), "south": (region == 1).astype(int),
                          "east": (region == 2).astype(int)})
    logit = 0.08 * (frame["age"] - 40) + 0.5 * (frame["debt"] - 4) + 0.4 * (frame["visits"] - 3) \
        + 0.8 * (frame["colour"] == "red") - 0.7 * frame["north"]
    frame["bad"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return make_dataset(frame, "bad", positive_class=1, name="synthetic",
                        choices=TableChoices(onehot_groups={"region": ["north", "south", "east"]}))


@pytest.fixture(scope="module")
def small():
    return trained_setup(synthetic(), "gbdt")


@pytest.fixture(scope="module")
def compas():
    return demo_setup("compas", "gbdt")


def queries_of(setup, n=40):
    return setup.dataset.features.iloc[predicted_rows(setup)[:n]]


def test_flexible_with_tau_zero_is_sev1_and_flexible_is_never_above(compas):
    """Acceptance check 1 (P1): τ = 0 gives SEV¹ exactly (values and explanations); SEV^F ≤ SEV¹ on every row."""
    q = queries_of(compas, 200)
    plain = sev_batch(compas.model, compas.dataset.layout, q, compas.reference, BFSSearch(keep_scores=False))
    zero = explain_kind(compas, q, "flexible", {1: fit_references(compas, 1, tau=0.0)})
    flexible = explain_kind(compas, q, "flexible", {})
    assert [r.value for r in zero] == [r.value for r in plain]
    assert [sorted(d.groups for d in r.destinations) for r in zero] == \
        [sorted(tuple(e) for e in r.explanations) for r in plain]
    assert all(f.value <= p.value for f, p in zip(flexible, plain))
    assert sum(f.value < p.value for f, p in zip(flexible, plain)) > 0  # the windows do shorten explanations here


def test_flexible_is_the_minimum_over_every_reference_of_its_grid(small):
    """SEV^F (S2 on the grid) = min over every reference r′ ∈ ∏ grid_j of SEV⁻(x; r′), by the SEV engine; and each
    explanation's point really flips the prediction."""
    s = small
    q = queries_of(s, 30)
    population = PopulationSpace.fit(s.dataset, s.train_rows[s.dataset.y[s.train_rows] == 0]).rows
    windows = flexible_windows(s.dataset, population, s.reference, tau=0.2, k=3)
    ours = explain_kind(s, q, "flexible", {1: fit_references(s, 1, tau=0.2, k=3)})
    best = np.full(len(q), np.inf)
    for values in itertools.product(*(w.values for w in windows)):
        grid_ref = replace(s.reference, values={**s.reference.values,
                                                **{w.group: v for w, v in zip(windows, values)}})
        found = sev_batch(s.model, s.dataset.layout, q, grid_ref, BFSSearch(keep_scores=False))
        best = np.minimum(best, [r.value if r.value is not None else np.inf for r in found])
    assert [r.value for r in ours] == best.tolist()
    for r in ours:
        for d in r.destinations:
            point = r.query.to_frame().T.infer_objects()
            for column, value in d.values.items():
                point[column] = value
            assert s.model.label(point)[0] == 0 and d.l0 == r.value
            assert all(d.values[g.columns[0]] in w.values for w in windows for g in s.dataset.groups
                       if g.name == w.group and g.columns[0] in d.values)


def brute_flexible(setup, fitted, query: pd.Series) -> tuple[int, list[tuple]]:
    """SEV^F of one row and the explanations it keeps, by enumerating every (set, grid value per group) of each
    size: the plain reference's values always kept; other values only at least as credibly as the plain values of
    the same set (when they flip) and as the row's closest plain flip of that size (when there is one); per set,
    the closest kept (ℓ∞, then ℓ1; the first in grid order on a tie)."""
    layout, space, density = setup.dataset.layout, fitted.space, fitted.density
    values = fitted.flexible.values
    c = setup.model.label(query.to_frame().T.infer_objects())[0]
    for size in range(1, layout.size + 1):
        flips = []
        for groups in itertools.combinations(range(layout.size), size):
            for choice in itertools.product(*(range(len(values[g])) for g in groups)):
                moved = {col: v for g, k in zip(groups, choice) for col, v in values[g][k].items()}
                if any(all(query[col] == values[g][k][col] for col in values[g][k]) for g, k in zip(groups, choice)):
                    continue  # a group moved to the value the row has: a vertex of a smaller set
                point = query.to_frame().T.infer_objects()
                for col, v in moved.items():
                    point[col] = v
                point = point.infer_objects()
                if setup.model.label(point)[0] != c:
                    _, linf, l1 = space.distances(query.to_frame().T.infer_objects(), point)
                    flips.append((groups, choice, moved, float(linf[0]), float(l1[0]),
                                  float(density.percentile(point)[0])))
        if flips:
            break
    else:
        return None, []
    plain = [f for f in flips if not any(f[1])]
    row_floor = min(plain, key=lambda f: (f[3], f[4]))[5] if plain else -np.inf
    set_floor = {f[0]: f[5] for f in plain}
    kept = [f for f in flips if not any(f[1]) or f[5] >= max(row_floor, set_floor.get(f[0], -np.inf))]
    closest = {}
    for f in kept:
        if f[0] not in closest or (f[3], f[4]) < (closest[f[0]][3], closest[f[0]][4]):
            closest[f[0]] = f
    return size, sorted(((tuple(layout.names[g] for g in f[0]), f[2]) for f in closest.values()), key=str)


def test_flexible_keeps_what_the_enumerated_grid_keeps_and_never_shows_worse_than_sev1(small):
    """SEV^F against an enumeration of its grid, with the rule on other values (:func:`brute_flexible`); where it
    has SEV¹'s size, its shown explanation is never farther (ℓ∞) nor less credible than SEV¹'s."""
    s = small
    q = queries_of(s, 25)
    fitted = fit_references(s, 1, tau=0.2, k=3)
    flexible = explain_kind(s, q, "flexible", {1: fitted})
    plain = explain_kind(s, q, "single", {1: fitted})
    for i, result in enumerate(flexible):
        value, kept = brute_flexible(s, fitted, q.iloc[i])
        assert result.value == value
        assert sorted(((d.groups, d.values) for d in result.destinations), key=str) == kept
    same = [(f, p) for f, p in zip(flexible, plain) if f.value == p.value]
    assert len(same) > 0 and any(f.value < p.value for f, p in zip(flexible, plain))
    assert all(f.first.linf <= p.first.linf and f.first.credibility >= p.first.credibility for f, p in same)
    assert any(f.first.linf < p.first.linf for f, p in same)  # the windows bring some explanations closer


def test_windows_hold_values_real_cases_have(small):
    s = small
    population = s.train_rows[s.dataset.y[s.train_rows] == 0]
    for w in flexible_windows(s.dataset, population, s.reference, tau=0.2, k=5):
        observed = set(s.dataset.features[w.group].iloc[population].astype(float))
        assert w.values[0] == w.reference and set(w.values[1:]) <= observed
        assert w.low <= min(w.values[1:]) and max(w.values[1:]) <= w.high


def brute_credible(setup, query: pd.DataFrame, reference: Reference, density, threshold, slack=1):
    """The credible search by enumerating the hypercube: the smallest size with a flip at or above the threshold,
    at most ``slack`` sizes past the first flip; else the first flip's size."""
    layout = setup.dataset.layout
    names = layout.names
    c = setup.model.label(query)[0]
    q = query.iloc[0]
    first = None
    for size in range(1, len(names) + 1):
        good = False
        for subset in itertools.combinations(range(len(names)), size):
            cols = [col for g in subset for col in layout.groups[g].columns]
            if any(all(q[col] == reference.values[col] for col in layout.groups[g].columns) for g in subset):
                continue
            point = query.copy()
            for col in cols:
                point[col] = reference.values[col]
            if setup.model.label(point.infer_objects())[0] != c:
                first = first or size
                good = good or density.percentile(point.infer_objects())[0] >= threshold
        if good:
            return size, True
        if first is not None and size >= first + slack:
            return first, False
    return None, None


@pytest.mark.parametrize("threshold", [0.5, 0.9])
def test_credible_search_against_the_enumerated_hypercube(small, threshold):
    """Acceptance check 4: the density-gated SEV equals an enumeration of the gate; it is never below SEV¹ and with
    threshold 0 it is SEV¹."""
    s = small
    q = queries_of(s, 25)
    fitted = {1: fit_references(s, 1)}
    plain = explain_kind(s, q, "single", fitted)
    zero = explain_kind(s, q, "single", fitted, credible=0.0)
    gated = explain_kind(s, q, "single", fitted, credible=threshold)
    assert [r.value for r in zero] == [r.value for r in plain] and all(r.credible for r in zero)
    assert all(g.value >= p.value for g, p in zip(gated, plain))
    assert sum(g.value > p.value for g, p in zip(gated, plain)) > 0  # the gate changes some rows here
    density = fitted[1].density
    for i in range(len(q)):
        value, credible = brute_credible(s, q.iloc[[i]], s.reference, density, threshold)
        assert (gated[i].value, gated[i].credible) == (value, credible)
        if credible:
            assert gated[i].first.credibility >= threshold


def test_search_with_one_candidate_per_group_is_the_sev_engine(small):
    s = small
    q = queries_of(s, 40)
    space = fit_references(s, 1).space
    found = search(s.model, s.dataset.layout, q, Candidates.of_reference(s.dataset.layout, s.reference), space,
                   restricted=("age",))
    plain = sev_batch(s.model, s.dataset.layout, q, s.reference, BFSSearch(restricted=("age",), keep_scores=False))
    assert [f.value for f in found] == [r.value for r in plain]
    assert [f.status for f in found] == [r.status for r in plain]


def answer(result) -> tuple[tuple, list]:
    """A result's answer: all but the seconds and the depth the batch searched (its deepest row's); apart, the
    numbers that may differ by rounding (the model scores a row alone or among others)."""
    cluster = isinstance(result, ClusterSEV)
    exact = (result.value, result.status, result.explained_class, result.credible, result.threshold,
             result.reference.values, result.query.to_dict(), result.prototype if cluster else None,
             [(d.groups, d.values, d.l0, d.credibility is None) for d in result.destinations])
    numbers = [x for d in result.destinations for x in (d.score, d.linf, d.l1, d.credibility or 0.0)]
    return exact, numbers + ([result.assigned_distance] if cluster else [])


@pytest.mark.parametrize("setup", ["small", "compas"])
def test_one_row_at_a_time_equals_the_batch(setup, request):
    """The page explains one row a call, the dataset view many: what is kept between calls (candidates, their model
    inputs, the typical cases' values) never changes an answer, for every kind, plain and credible, rows of both
    predicted classes, a one-hot block and categories included."""
    s = request.getfixturevalue(setup)
    q = s.dataset.features.iloc[predicted_rows(s, label=None)[:16]]
    fits = ReferenceFits(s)
    for kind in ("single", "flexible", "cluster"):
        for credible in (None, 0.3):
            batch = explain_kind(s, q, kind, fits, credible=credible)
            if kind != "flexible":  # SEV¹ against the row's own reference: it moves groups to that one's values
                assert all(d.values == {c: r.reference.values[c] for c in d.values}
                           for r in batch for d in r.destinations)
            for i in range(len(q)):
                (exact, numbers), (exact_batch, numbers_batch) = (
                    answer(explain_kind(s, q.iloc[[i]], kind, fits, credible=credible)[0]), answer(batch[i]))
                assert exact == exact_batch and numbers == pytest.approx(numbers_batch, rel=1e-9), (kind, credible, i)


def test_one_median_cluster_is_sev1_with_the_median_reference(small):
    """Acceptance check 2: SEV^© with K = 1 and the median prototype equals SEV¹ with the median reference."""
    s = small
    q = queries_of(s, 40)
    median = make_reference(s.dataset, s.train_rows, statistic="median")
    cluster = explain_kind(s, q, "cluster", {1: fit_references(s, 1, clusters=1, statistic="median")})
    plain = sev_batch(s.model, s.dataset.layout, q, median, BFSSearch(keep_scores=False))
    assert [r.value for r in cluster] == [r.value for r in plain]
    assert cluster[0].reference.values == median.values


@pytest.mark.parametrize("statistic", ["medoid", "nearest_row"])
def test_prototypes_are_real_training_rows_of_the_other_class(small, statistic):
    """Acceptance check 6 and the issue: every typical case is a real training row of the other class, predicted
    in it, its one-hot blocks summing to 1; the assignment is the nearest valid one by the stated distance."""
    s = small
    protos = fit_prototypes(s.model, s.dataset, s.train_rows, clustering=Clustering(clusters=3, statistic=statistic))
    assert len(protos.prototypes) == 3 and all(p.valid for p in protos.prototypes)
    features = s.dataset.features
    for p in protos.prototypes:
        assert p.row in set(s.train_rows.tolist()) and s.dataset.y[p.row] == 0
        assert features.iloc[p.row].to_dict() == p.reference.values
        assert s.model.label(p.reference.as_frame(s.dataset.columns))[0] == 0
        assert sum(p.reference.values[c] for c in ("north", "south", "east")) == 1
    assert sum(p.members for p in protos.prototypes) == int((s.dataset.y[s.train_rows] == 0).sum())
    q = queries_of(s, 30)
    assigned, distance = protos.assign(q)
    for i in range(len(q)):
        by_hand = [mixed_by_hand(s.dataset, q.iloc[i], p.reference.values, protos.space) for p in protos.prototypes]
        assert assigned[i] == int(np.argmin(by_hand)) and distance[i] == pytest.approx(min(by_hand))


def mixed_by_hand(dataset, row, centre, space) -> float:
    total = 0.0
    for g in dataset.groups:
        if g.kind == "numeric" and not g.is_block:
            total += abs(float(row[g.name]) - float(centre[g.name])) / space.scales[g.name]
        else:
            total += any(row[c] != centre[c] for c in g.columns)
    return total


def test_number_of_typical_cases_is_chosen_by_the_medoid_silhouette(small):
    protos = fit_prototypes(small.model, small.dataset, small.train_rows, clustering=Clustering(assignment="nearest"))
    assert 2 <= len(protos.prototypes) <= 8 and "medoid silhouette" in protos.rule and protos.silhouette is not None
    again = fit_prototypes(small.model, small.dataset, small.train_rows, clustering=Clustering(assignment="nearest"))
    assert [p.row for p in again.prototypes] == [p.row for p in protos.prototypes]  # seeded


def test_credibility_is_a_calibrated_percentile(compas):
    """Fitted and calibrated on training rows only: on the held-out TEST rows of the other class it is ~uniform."""
    s = compas
    density = fit_density(s.dataset, s.train_rows, seed=0)
    test_negatives = s.test_rows[s.dataset.y[s.test_rows] == 0]
    values = density.percentile(s.dataset.features.iloc[test_negatives])
    assert stats.kstest(values, "uniform").pvalue > 1e-3
    assert abs(values.mean() - 0.5) < 0.05
    assert np.all((values >= 0) & (values <= 1))
    positives = s.test_rows[s.dataset.y[s.test_rows] == 1]
    assert density.percentile(s.dataset.features.iloc[positives]).mean() < values.mean()  # positives look less typical


def test_every_result_round_trips_through_json(small):
    s = small
    q = queries_of(s, 3)
    fitted = {1: fit_references(s, 1, clusters=2)}
    for kind, cls in (("single", SingleSEV), ("flexible", FlexibleSEV), ("cluster", ClusterSEV)):
        for credible in (None, 0.3):
            result = explain_kind(s, q, kind, fitted, credible=credible)[0]
            assert isinstance(result, cls)
            again = cls.from_json(result.to_json())
            assert again == result and again.to_json() == result.to_json()
    protos = fitted[1].prototypes
    assert PrototypeSet.from_json(protos.to_json()) == protos


def test_fitting_and_search_seconds_are_reported_apart(small):
    fitted = {1: fit_references(small, 1)}
    results = explain_kind(small, queries_of(small, 10), "cluster", fitted)
    assert {"density", "prototypes", "space"} <= set(fitted[1].seconds)
    assert all(0 < r.seconds < 1 for r in results)


def test_flexible_candidates_keep_categorical_values(small):
    s = small
    population = s.train_rows[s.dataset.y[s.train_rows] == 0]
    windows = flexible_windows(s.dataset, population, s.reference, tau=0.0)
    assert all(w.values == (w.reference,) for w in windows)
    candidates = flexible_candidates(s.dataset, s.reference, windows)
    assert candidates.sizes == [1] * len(s.dataset.groups)


def test_sev_t_is_a_kind_for_tree_models_measured_like_the_others(small):
    """SEVᵀ joins the kinds (issue 28: credibility for every explanation of SEV, SEV^F, SEV^©, SEVᵀ): the same value
    and point as :func:`tree_sev`, its credibility the fitted density's percentile of that point, its distances those
    of the population space; restricted features held; offered only where the model is a tree model."""
    s = small.with_restricted(["colour"])
    q = queries_of(s, 6)
    fitted = ReferenceFits(s)
    found = explain_kind(s, q, "tree", fitted)
    for i, result in enumerate(found):
        direct = tree_sev(s.model, s.dataset, q.iloc[[i]], s.train_rows, restricted=["colour"])
        assert isinstance(result, TreeKindSEV) and result.value == direct.value and result.status == direct.status
        if result.first is None:
            continue
        assert result.first.groups == direct.moved and result.first.values == direct.point
        point = q.iloc[[i]].copy()
        for column, value in direct.point.items():
            point[column] = value
        assert result.first.credibility == pytest.approx(fitted[1].density.percentile(point)[0])
        l0, linf, _ = fitted[1].space.distances(q.iloc[[i]].reset_index(drop=True), point.reset_index(drop=True))
        assert (result.first.l0, result.first.linf) == (int(l0[0]), pytest.approx(float(linf[0])))
        assert "colour" not in result.first.groups
        assert TreeKindSEV.from_json(result.to_json()) == result
    table = compare_kinds(s, predicted_rows(s)[:4], fitted, credible=0.2)
    assert KindsTable.from_json(table.to_json()) == table
    assert "SEVᵀ" in table.table.index and "SEVᵀ (credible)" not in table.table.index
    linear = trained_setup(s.dataset, "l2_lr")
    assert "tree" in available_kinds(s) and "tree" not in available_kinds(linear)
    with pytest.raises(IntakeError, match="SEVᵀ needs a tree model"):
        explain_kind(linear, queries_of(linear, 1), "tree", ReferenceFits(linear))


def test_rows_read_by_column_are_the_rows_iloc_gives():
    """The batch's rows (:func:`row_series`, read column by column from 32 rows) are ``iloc``'s: the same dtype,
    values, scalar types, index and name, for text, numbers, categories, missing values and extension dtypes."""
    n = 40
    rng = np.random.default_rng(0)
    frames = [synthetic(n).features,
              pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 5, n)}, index=np.arange(n) * 3),
              pd.DataFrame({"a": rng.integers(0, 5, n), "b": rng.random(n) < 0.5,
                            "c": pd.Categorical(rng.choice(["x", "y"], n)),
                            "s": pd.array(rng.choice(["u", None], n), dtype="string"),
                            "f": np.where(rng.random(n) < 0.3, np.nan, 1.5)}),
              pd.DataFrame({"a": pd.array(rng.choice([1, None], n), dtype="Int64"), "b": rng.random(n)}),
              pd.DataFrame({"a": pd.array(rng.choice([1, None], n), dtype="Int64"), "s": rng.choice(["x", "y"], n),
                            "d": pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 9, n), "D")})]
    for frame in frames:
        for rows in (frame, frame.iloc[:3]):
            for ours, theirs in zip(row_series(rows), (rows.iloc[i] for i in range(len(rows))), strict=True):
                assert ours.equals(theirs) and ours.dtype == theirs.dtype and ours.name == theirs.name
                assert ours.index.equals(theirs.index) and list(map(type, ours)) == list(map(type, theirs))
