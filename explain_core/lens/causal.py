"""The causal LENS context (LENS paper §5, "Causal vs. non-causal recourse", App. C.1): interventions on a
factor propagate to its descendants through a structural causal model (SCM) fitted on the data.

The analyst gives a DAG over feature groups (:class:`CausalGraph`; :func:`german_graph` is the paper's Fig. 5 on
the bundled German credit data). :func:`fit_scm` fits one structural equation per node that has parents, with
scikit-learn: a linear regression with additive noise for a numeric node, a logistic-regression classifier for a
binary or categorical node. Under do(c) (R2I: on each reference, with c at the input's values; I2R: on the input,
with c at each reference's values) every other node keeps the unit's value unless one of its parents changed;
then, in topological order, a numeric node takes f(new parents) + u with the unit's own noise u = x − f(parents)
(abduction), and a categorical node, whose noise cannot be recovered, is drawn from the classifier's
probabilities (seeded). With no edges nothing propagates, and the context equals R2I / I2R exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from typing import Sequence

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from ..errors import IntakeError, check_choice, names_method
from ..intake.data import Dataset
from ..intake.models import ModelAdapter
from ..sev.cube import DEFAULT_CHUNK_ROWS, ProgressFn, one_row
from .context import DIRECTIONS, LensContext
from .sampling import _differs, _group_distances, check_budget, default_max_size, factor_masks, feature_mad

# LENS Fig. 5 over the Kaggle German credit's 9 features, on the bundled UCI data's groups. The figure gives the
# layers (Age, Sex | Job, Savings, Housing, Checking | Credit amount, Duration | Purpose); each node's parents are
# read here as the nodes of the layer above.
GERMAN_LAYERS = (("age", "personal_status_sex"), ("job", "savings_account", "housing", "checking_account_status"),
                 ("credit_amount", "duration_months"), ("purpose",))


@dataclass(frozen=True)
class CausalGraph:
    """A DAG over feature groups: ``edges`` are (parent, child) pairs of group names."""

    edges: tuple[tuple[str, str], ...] = ()

    def parents(self, node: str) -> tuple[str, ...]:
        return tuple(a for a, b in self.edges if b == node)

    def order(self, groups: Sequence[str]) -> list[str]:
        """``groups`` in a topological order of the graph (an IntakeError names a cycle or an unknown group)."""
        unknown = sorted({g for e in self.edges for g in e} - set(groups))
        if unknown:
            raise IntakeError(f"The causal graph names feature groups the data lacks: {', '.join(unknown)}; "
                              f"choose among {', '.join(groups)}.")
        sorter = TopologicalSorter({g: self.parents(g) for g in groups})
        try:
            return list(sorter.static_order())
        except CycleError as exc:
            raise IntakeError(f"The causal graph has a cycle ({' → '.join(exc.args[1])}); a structural causal model "
                              "needs a directed acyclic graph — remove one of these edges.") from exc

    def layers(self, groups: Sequence[str]) -> dict[str, int]:
        """Each group's depth: 0 for roots, else 1 + its deepest parent's (for drawing the DAG)."""
        depth: dict[str, int] = {}
        for g in self.order(groups):
            depth[g] = 1 + max((depth[p] for p in self.parents(g)), default=-1)
        return depth

    @classmethod
    def parse(cls, text: str) -> "CausalGraph":
        """One edge per line, ``parent -> child`` (blank lines and ``#`` comments ignored)."""
        edges = []
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.split("#")[0].strip()
            if not line:
                continue
            parts = [s.strip() for s in line.split("->")]
            if len(parts) != 2 or not all(parts):
                raise IntakeError(f"Line {number} of the causal graph, {line!r}, is not 'parent -> child'.")
            edges.append((parts[0], parts[1]))
        return cls(tuple(edges))

    def text(self) -> str:
        return "\n".join(f"{a} -> {b}" for a, b in self.edges)


def german_graph() -> CausalGraph:
    """The LENS paper's German credit DAG (Fig. 5) on the bundled data's feature groups (see GERMAN_LAYERS)."""
    return CausalGraph(tuple((a, b) for upper, lower in zip(GERMAN_LAYERS, GERMAN_LAYERS[1:])
                             for b in lower for a in upper))


@dataclass(frozen=True)
class Equation:
    """One node's structural equation: ``kind`` ``additive`` (x = f(parents) + u) or ``classifier``."""

    node: str
    parents: tuple[str, ...]
    kind: str
    estimator: Pipeline

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        return self.estimator.predict(frame[list(self.parents)])


@dataclass(frozen=True)
class StructuralModel:
    """A fitted SCM: the graph, and an equation for each node with parents."""

    graph: CausalGraph
    order: tuple[str, ...]
    equations: dict[str, Equation]
    columns: dict[str, str]  # group → its one column


@names_method("causal model")
def fit_scm(dataset: Dataset, graph: CausalGraph, rows: Sequence[int] | None = None) -> StructuralModel:
    """Fit every node's structural equation on ``rows`` (default all) of the dataset (App. C.1)."""
    names = list(dataset.group_names)
    order = graph.order(names)
    frame = dataset.features if rows is None else dataset.features.iloc[np.asarray(rows)]
    columns, kinds = {}, {}
    for g in dataset.groups:
        if g.name in {n for e in graph.edges for n in e}:
            if len(g.columns) != 1:
                raise IntakeError(f"Feature group {g.name} spans {len(g.columns)} columns; a node of the causal graph "
                                  "must be one column (merge a one-hot group into one categorical column).")
        columns[g.name], kinds[g.name] = g.columns[0], g.kind
    equations = {}
    for node in order:
        parents = graph.parents(node)
        if not parents:
            continue
        X = frame[[columns[p] for p in parents]].set_axis(list(parents), axis=1)
        y = frame[columns[node]]
        known = y.notna().to_numpy()
        kind = "additive" if kinds[node] == "numeric" else "classifier"
        estimator = make_pipeline(_parents_encoder(parents, kinds),
                                  LinearRegression() if kind == "additive" else LogisticRegression(max_iter=2000))
        estimator.fit(X[known], y[known].astype(float) if kind == "additive" else y[known].astype(str))
        equations[node] = Equation(node, parents, kind, estimator)
    return StructuralModel(graph, tuple(order), equations, columns)


def _parents_encoder(parents: Sequence[str], kinds: dict[str, str]) -> ColumnTransformer:
    numeric = [p for p in parents if kinds[p] == "numeric"]
    other = [p for p in parents if kinds[p] != "numeric"]
    return ColumnTransformer([("numeric", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
                              ("categorical", make_pipeline(SimpleImputer(strategy="most_frequent"),
                                                            OneHotEncoder(handle_unknown="ignore")), other)])


def intervene(scm: StructuralModel, layout, base: pd.DataFrame, source: pd.DataFrame, masks: np.ndarray,
              rng: np.random.Generator) -> pd.DataFrame:
    """Rows of ``base`` (one unit per row) with the groups where ``masks`` is True set to ``source``'s values,
    and their descendants propagated (abduction for additive nodes, resampling for classifier nodes)."""
    out = pd.DataFrame({c: np.where(masks[:, g], source[c].to_numpy(), base[c].to_numpy())
                        for c, g in zip(layout.columns, layout.column_group)})
    at = {g: i for i, g in enumerate(layout.names)}
    for node in scm.order:
        equation = scm.equations.get(node)
        if equation is None:
            continue
        moved = np.zeros(len(out), dtype=bool)
        for p in equation.parents:
            new, old = out[scm.columns[p]].to_numpy(), base[scm.columns[p]].to_numpy()
            moved |= ~((new == old) | (pd.isna(new) & pd.isna(old)))
        moved &= ~masks[:, at[node]]  # an intervened node keeps its value
        if not moved.any():
            continue
        parent_columns = [scm.columns[p] for p in equation.parents]
        now = out.loc[moved, parent_columns].set_axis(list(equation.parents), axis=1)
        column = scm.columns[node]
        if equation.kind == "additive":
            out[column] = out[column].astype(float)
            before = base.loc[moved, parent_columns].set_axis(list(equation.parents), axis=1)
            noise = base.loc[moved, column].to_numpy(float) - equation.estimator.predict(before)
            values = equation.estimator.predict(now) + noise
        else:
            proba = equation.estimator.predict_proba(now)
            pick = (proba.cumsum(axis=1) < rng.random((len(proba), 1))).sum(axis=1)
            classes = equation.estimator.classes_
            values = _as_column(classes[np.minimum(pick, len(classes) - 1)], base[column])
        out.loc[moved, column] = values
    return out


def _as_column(labels: np.ndarray, like: pd.Series) -> np.ndarray:
    """Class labels (fitted as text) back in the column's own values."""
    by_text = {str(v): v for v in pd.unique(like.dropna())}
    return np.array([by_text.get(v, v) for v in labels], dtype=object)


@names_method("causal LENS")
def causal_contexts(model: ModelAdapter, dataset: Dataset, query, references: pd.DataFrame, scm: StructuralModel, *,
                    directions: Sequence[str] = DIRECTIONS, max_size: int | None = None, seed: int = 0,
                    mad: dict[str, float] | None = None, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                    progress: ProgressFn | None = None) -> dict[str, LensContext]:
    """R2I / I2R contexts whose interventions propagate through ``scm`` (one sample per reference × factor;
    the categorical resampling is seeded). Costs are those of the intervention targets (§5.3)."""
    for d in directions:
        check_choice(d, DIRECTIONS, "LENS context")
    layout = dataset.layout
    size = default_max_size(layout.size) if max_size is None else max_size
    check_budget(layout.size, size, len(references), len(directions))
    query = one_row(query)[list(layout.columns)]
    references = references[list(layout.columns)].reset_index(drop=False)
    ids = references.pop(references.columns[0]).to_numpy()
    masks = factor_masks(layout.size, size)
    n, m = len(references), len(masks)
    distances = _group_distances(dataset, query, references, _differs(dataset, query, references),
                                 {**feature_mad(dataset), **(mad or {})})
    y = int(model.label(query)[0])
    rng = np.random.default_rng(seed)
    reps = np.repeat(np.arange(n), m)  # sample i = (reference i // m, factor i % m)
    refs = references.iloc[reps].reset_index(drop=True)
    inputs = query.iloc[np.zeros(n * m, dtype=np.intp)].reset_index(drop=True)
    out = {}
    for k, d in enumerate(directions):
        base, source = (refs, inputs) if d == "r2i" else (inputs, refs)
        rows = intervene(scm, layout, base, source, np.tile(masks, (n, 1)), rng)
        scores = np.concatenate([model.score(rows.iloc[s:s + chunk_rows]) for s in range(0, len(rows), chunk_rows)])
        labels = model.labels_of(scores).reshape(n, m)
        out[d] = LensContext(d, layout.names, masks, y, y if d == "r2i" else 1 - y, labels, distances, ids)
        if progress:
            progress((k + 1) / len(directions), f"Causal LENS: {d.upper()} scored ({n * m:,} samples)")
    return out


def differences(independent: LensContext, causal: LensContext, tau: float, *, alpha: float | None = None,
                correction: str = "holm") -> pd.DataFrame:
    """Where the causal answer differs: every τ-minimal factor of either context (same factors, same references),
    its PS in both, and where it is τ-minimal (``independent``, ``causal`` or ``both``)."""
    found = {label: {frozenset(f.groups) for f in ctx.minimal_factors(tau, alpha=alpha, correction=correction).factors}
             for label, ctx in (("independent", independent), ("causal", causal))}
    rows = []
    for factor in sorted(found["independent"] | found["causal"], key=lambda f: (len(f), sorted(f))):
        j = independent.index(factor)
        where = [label for label in found if factor in found[label]]
        rows.append({"factor": ", ".join(independent.factor(j)) or "∅", "size": len(factor),
                     "PS independent": float(independent.ps[j]), "PS causal": float(causal.ps[causal.index(factor)]),
                     "minimal in": "both" if len(where) == 2 else where[0]})
    return pd.DataFrame(rows, columns=["factor", "size", "PS independent", "PS causal", "minimal in"])
