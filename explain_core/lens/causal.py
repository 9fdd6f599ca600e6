"""The causal LENS context (LENS paper §5, "Causal vs. non-causal recourse", App. C.1): interventions on a
factor propagate through a structural causal model (SCM) fitted on the data.

The analyst gives a DAG over feature groups (:class:`CausalGraph`; for the bundled German credit data
:func:`german_graph` is the LENS authors' SCM, :func:`german_layered_graph` Fig. 5 read layer by layer).
:func:`fit_scm` fits one structural equation per node that has parents, with scikit-learn: a linear regression
for a numeric node, a classifier over the column's own values for a binary or categorical node (logistic
regression by default, the paper's random forest as an option: :class:`ScmSettings`). Under do(c) (R2I: on each
reference, with c at the input's values; I2R: on the input, with c at each reference's values) a node keeps the
unit's value unless it is a descendant of an intervened node whose value changed (App. C.1's text; the authors'
code instead resamples every node after the first intervened one in the order, ``propagate="later"``). A
propagated numeric node takes f(new parents) + Gaussian noise with the residual variance (App. C.1), or the
unit's own noise x − f(parents) (``noise="abduction"``); a categorical node is drawn from the classifier's
probabilities. Every draw is seeded. With no edges nothing propagates, and the context equals R2I / I2R exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from typing import Sequence

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from ..errors import IntakeError, check_choice, names_method
from ..vertices import ProgressFn, one_row
from ..intake.data import Dataset
from ..intake.models import ModelAdapter
from .context import DIRECTIONS, LensContext
from .sampling import (DEFAULT_CONTEXTS, ContextOptions, _differs, _group_distances, check_budget, default_max_size,
                       factor_masks, feature_mad)

# LENS Fig. 5 over the Kaggle German credit's 9 features, on the bundled UCI data's groups, read layer by layer
# (Age, Sex | Job, Savings, Housing, Checking | Credit amount, Duration | Purpose): each node's parents are the
# nodes of the layer above.
GERMAN_LAYERS = (("age", "personal_status_sex"), ("job", "savings_account", "housing", "checking_account_status"),
                 ("credit_amount", "duration_months"), ("purpose",))
# The SCM the LENS authors fit for Table 4 (their released German credit experiment): each node with its parents.
GERMAN_PARENTS = {"job": ("age", "personal_status_sex"),
                  "savings_account": ("age", "personal_status_sex", "job"),
                  "housing": ("job", "savings_account"),
                  "checking_account_status": ("job", "savings_account"),
                  "credit_amount": ("age", "job", "housing"),
                  "duration_months": ("credit_amount", "savings_account"),
                  "purpose": ("age", "housing", "credit_amount", "duration_months")}
CLASSIFIERS = ("logistic", "forest")
NOISES = ("gaussian", "abduction")
PROPAGATIONS = ("descendants", "later")


@dataclass(frozen=True)
class CausalGraph:
    """A DAG over feature groups: ``edges`` are (parent, child) pairs of group names."""

    edges: tuple[tuple[str, str], ...] = ()

    def parents(self, node: str) -> tuple[str, ...]:
        return tuple(a for a, b in self.edges if b == node)

    def ancestors(self, node: str) -> set[str]:
        found, todo = set(), list(self.parents(node))
        while todo:
            if (p := todo.pop()) not in found:
                found.add(p)
                todo.extend(self.parents(p))
        return found

    def order(self, groups: Sequence[str]) -> list[str]:
        """``groups`` in a topological order of the graph, ties broken by first mention in the edges, then by
        ``groups``' order (an IntakeError names a cycle or an unknown group)."""
        unknown = sorted({g for e in self.edges for g in e} - set(groups))
        if unknown:
            raise IntakeError(f"The causal graph names feature groups the data lacks: {', '.join(unknown)}; "
                              f"choose among {', '.join(groups)}.")
        try:
            TopologicalSorter({g: self.parents(g) for g in groups}).prepare()
        except CycleError as exc:
            raise IntakeError(f"The causal graph has a cycle ({' → '.join(exc.args[1])}); a structural causal model "
                              "needs a directed acyclic graph — remove one of these edges.") from exc
        rank = {g: i for i, g in enumerate(dict.fromkeys([g for e in self.edges for g in e] + list(groups)))}
        placed: list[str] = []
        while len(placed) < len(groups):
            ready = [g for g in groups if g not in placed and set(self.parents(g)) <= set(placed)]
            placed.append(min(ready, key=rank.__getitem__))
        return placed

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
    """The LENS authors' German credit SCM (18 edges, :data:`GERMAN_PARENTS`) on the bundled data's groups."""
    return CausalGraph(tuple((a, b) for b, parents in GERMAN_PARENTS.items() for a in parents))


def german_layered_graph() -> CausalGraph:
    """Fig. 5 read by layers: every node of a layer a parent of every node of the next (18 edges)."""
    return CausalGraph(tuple((a, b) for upper, lower in zip(GERMAN_LAYERS, GERMAN_LAYERS[1:])
                             for b in lower for a in upper))


GERMAN_GRAPHS = {"the LENS authors' SCM": german_graph, "Fig. 5 by layers": german_layered_graph}


@dataclass(frozen=True)
class ScmSettings:
    """How the SCM is fitted and sampled. Defaults: App. C.1's text for the sampling (descendants of a changed
    node, Gaussian noise); logistic regression for categorical nodes rather than App. C.1's random forest: on the
    bundled German credit (the authors' graph, 3 splits of 80/20) its held-out log loss is lower on every node
    (job 0.96–1.00 vs 1.64–2.41, purpose 1.67–1.91 vs 2.15–3.33), a forest's probabilities being near 0/1 steps
    learnt from ~800 rows (``bench/lens_scm.py``)."""

    classifier: str = "logistic"
    noise: str = "gaussian"
    propagate: str = "descendants"

    def __post_init__(self):
        check_choice(self.classifier, CLASSIFIERS, "structural equation for categorical nodes")
        check_choice(self.noise, NOISES, "noise of numeric nodes")
        check_choice(self.propagate, PROPAGATIONS, "propagation")


DEFAULT_SCM = ScmSettings()


@dataclass(frozen=True)
class Equation:
    """One node's structural equation: ``kind`` ``additive`` (x = f(parents) + u, residual sd ``scale``) or
    ``classifier`` (predicting codes into ``labels``, the column's own values)."""

    node: str
    parents: tuple[str, ...]
    kind: str
    estimator: Pipeline
    scale: float = 0.0
    labels: pd.Index | None = None


@dataclass(frozen=True)
class StructuralModel:
    """A fitted SCM: the graph, and an equation for each node with parents."""

    graph: CausalGraph
    order: tuple[str, ...]
    equations: dict[str, Equation]
    columns: dict[str, str]  # group → its one column
    settings: ScmSettings = DEFAULT_SCM


@names_method("causal model")
def fit_scm(dataset: Dataset, graph: CausalGraph, rows: Sequence[int] | None = None,
            settings: ScmSettings = DEFAULT_SCM, seed: int = 0) -> StructuralModel:
    """Fit every node's structural equation on ``rows`` (default all) of the dataset (App. C.1)."""
    order = graph.order(list(dataset.group_names))
    frame = dataset.features if rows is None else dataset.features.iloc[np.asarray(rows)]
    columns, kinds = {}, {}
    for g in dataset.groups:
        if g.name in {n for e in graph.edges for n in e} and len(g.columns) != 1:
            raise IntakeError(f"Feature group {g.name} spans {len(g.columns)} columns; a node of the causal graph "
                              "must be one column (merge a one-hot group into one categorical column).")
        columns[g.name], kinds[g.name] = g.columns[0], g.kind
    equations = {}
    for node in order:
        if parents := graph.parents(node):
            X = frame[[columns[p] for p in parents]].set_axis(list(parents), axis=1)
            equation = _fit_equation(node, parents, X, frame[columns[node]], kinds, settings, seed)
            if equation is not None:
                equations[node] = equation
    return StructuralModel(graph, tuple(order), equations, columns, settings)


def _fit_equation(node, parents, X: pd.DataFrame, y: pd.Series, kinds, settings: ScmSettings,
                  seed: int) -> Equation | None:
    """A linear regression (numeric node) or a classifier over the column's own values; None for a node with one
    observed value (nothing to propagate)."""
    known = y.notna().to_numpy()
    encoder = _parents_encoder(parents, kinds)
    if kinds[node] == "numeric":
        estimator = make_pipeline(encoder, LinearRegression()).fit(X[known], y[known].astype(float))
        residual = y[known].to_numpy(float) - estimator.predict(X[known])
        return Equation(node, parents, "additive", estimator, float(np.sqrt(np.mean(residual ** 2))))
    codes, labels = pd.factorize(y[known], sort=True)
    if len(labels) < 2:
        return None
    classifier = (LogisticRegression(max_iter=2000) if settings.classifier == "logistic"
                  else RandomForestClassifier(random_state=seed))
    estimator = make_pipeline(encoder, classifier).fit(X[known], codes)
    return Equation(node, parents, "classifier", estimator, labels=labels)


def _parents_encoder(parents: Sequence[str], kinds: dict[str, str]) -> ColumnTransformer:
    numeric = [p for p in parents if kinds[p] == "numeric"]
    other = [p for p in parents if kinds[p] != "numeric"]
    categorical = make_pipeline(FunctionTransformer(_as_objects), SimpleImputer(strategy="most_frequent"),
                                OneHotEncoder(handle_unknown="ignore"))
    return ColumnTransformer([("numeric", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
                              ("categorical", categorical, other)])


def _as_objects(frame: pd.DataFrame) -> pd.DataFrame:
    """Categorical parents as Python objects (the imputer refuses bool columns)."""
    return frame.astype(object)


def intervene(scm: StructuralModel, layout, base: pd.DataFrame, source: pd.DataFrame, masks: np.ndarray,
              rng: np.random.Generator) -> pd.DataFrame:
    """Rows of ``base`` (one unit per row) with the groups where ``masks`` is True set to ``source``'s values,
    and the nodes the interventions reach (:class:`ScmSettings`) drawn from their equations, in order."""
    base, source = base.reset_index(drop=True), source.reset_index(drop=True)
    out = pd.DataFrame({c: base[c].where(~masks[:, g], source[c]) for c, g in zip(layout.columns, layout.column_group)})
    at = {g: i for i, g in enumerate(layout.names)}
    changed = np.zeros_like(masks)
    for c, g in zip(layout.columns, layout.column_group):
        changed[:, g] |= masks[:, g] & ~_same(base[c], source[c])
    for position, node in enumerate(scm.order):
        equation = scm.equations.get(node)
        if equation is None:
            continue
        causes = scm.order[:position] if scm.settings.propagate == "later" else scm.graph.ancestors(node)
        moved = changed[:, [at[c] for c in causes]].any(axis=1) & ~masks[:, at[node]]
        if moved.any():
            _draw(equation, scm, out, base, moved, rng)
    return out


def _draw(equation: Equation, scm: StructuralModel, out: pd.DataFrame, base: pd.DataFrame, moved: np.ndarray,
          rng: np.random.Generator) -> None:
    """Set ``out``'s column of ``equation``'s node on the ``moved`` rows from its equation (in place)."""
    parent_columns = [scm.columns[p] for p in equation.parents]
    now = out.loc[moved, parent_columns].set_axis(list(equation.parents), axis=1)
    column = scm.columns[equation.node]
    if equation.kind == "additive":
        if scm.settings.noise == "abduction":
            before = base.loc[moved, parent_columns].set_axis(list(equation.parents), axis=1)
            noise = base.loc[moved, column].to_numpy(float) - equation.estimator.predict(before)
        else:
            noise = rng.normal(scale=equation.scale, size=int(moved.sum()))
        out[column] = out[column].astype(float)
        out.loc[moved, column] = equation.estimator.predict(now) + noise
    else:
        proba = equation.estimator.predict_proba(now)
        pick = (proba.cumsum(axis=1) < rng.random((len(proba), 1))).sum(axis=1)
        codes = equation.estimator.classes_[np.minimum(pick, proba.shape[1] - 1)]
        out.loc[moved, column] = pd.Series(equation.labels.take(codes), index=out.index[moved], dtype=out[column].dtype)


def _same(a: pd.Series, b: pd.Series) -> np.ndarray:
    new, old = a.to_numpy(), b.to_numpy()
    return np.asarray((new == old) | (pd.isna(new) & pd.isna(old)), dtype=bool)


@names_method("causal LENS")
def causal_contexts(model: ModelAdapter, dataset: Dataset, query, references: pd.DataFrame, scm: StructuralModel,
                    options: ContextOptions = DEFAULT_CONTEXTS, *, seed: int = 0,
                    progress: ProgressFn | None = None) -> dict[str, LensContext]:
    """R2I / I2R contexts whose interventions propagate through ``scm`` (one sample per reference × factor;
    the categorical resampling is seeded by ``seed``), scored as ``options`` say (:func:`~.sampling.lens_contexts`).
    Costs are those of the intervention targets (§5.3)."""
    directions, max_size, mad, chunk_rows = options.directions, options.max_size, options.mad, options.chunk_rows
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
