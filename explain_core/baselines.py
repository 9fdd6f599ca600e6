"""LIME and SHAP attributions per feature group, and their LIME-C / SHAP-C flip numbers (SEV paper §5.4).

Both methods report one value per feature group (one-hot columns summed into their group) in one
:class:`Attribution`. The flip number aligns the query's groups to the reference in order of
decreasing |attribution| (``order="absolute"``, §5.4's "from the most important feature"), or of decreasing
attribution toward the predicted class (``order="signed"``, as LIME-C / SHAP-C of Ramon et al. 2020 rank
features), and counts the alignments needed to flip the predicted label.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import IntakeError, ModelCallError, Unsupported, check_choice, names_method
from .vertices import mix
from .intake.data import Dataset
from .intake.layout import NO_COLUMN
from .intake.encoding import encoded_model
from .intake.models import ModelAdapter, read_model
from .reference import Reference
from .results import Explanation
from .seeding import global_generators
from .shap_kernels import cache_shap_kernels, identity_link
from .sev.readers import shap_estimator
from .vocabulary import count_noun

FLIP_ORDERS = {"absolute": "decreasing |attribution|", "signed": "decreasing attribution toward the predicted class"}
SCORE_OUTPUT = {"proba": "probability", "decision": "decision value", "predict": "prediction"}
TREE_OUTPUT = {"log_odds": "log-odds", "probability": "probability", "raw_value": "prediction"}


@dataclass(frozen=True, eq=False)
class Attribution(Explanation):
    """One attribution per feature group, in dataset group order.

    ``output`` names the quantity the values explain (``probability``, ``log-odds``, ``decision value``
    or ``prediction``); ``base_value`` is LIME's surrogate intercept or SHAP's expected value.

    Parameters
    ----------
    method : str
        ``"LIME"`` or ``"SHAP"``.
    groups : tuple of str
        The feature groups.
    values : numpy.ndarray
        One attribution per group.
    base_value : float, optional
        The intercept or expected value.
    output : str
        The quantity explained.
    explainer : str
        The explainer and its settings, in words (``LimeTabularExplainer (5000 samples, seed 0, …)``).
    """

    method: str
    groups: tuple[str, ...]
    values: np.ndarray
    base_value: float | None
    output: str
    explainer: str

    meta_parameters = ("explainer", "output")

    @property
    def order(self) -> tuple[str, ...]:
        """Group names by decreasing |value| (ties keep dataset order)."""
        return self.ranked("absolute")

    def ranked(self, order: str = "absolute", explained_class: int = 1) -> tuple[str, ...]:
        """Group names by decreasing |value| (``"absolute"``) or by decreasing value toward ``explained_class``
        (``"signed"``: the groups pushing the prediction hardest first, those pushing against it last); ties keep
        dataset order.

        Parameters
        ----------
        order : str
            ``"absolute"`` or ``"signed"``.
        explained_class : int
            The class the signed order pushes toward.

        Returns
        -------
        tuple of str
            The group names.

        Raises
        ------
        IntakeError
            When ``order`` is unknown.
        """
        check_choice(order, FLIP_ORDERS, "flip order")
        key = -np.abs(self.values) if order == "absolute" else (-self.values if explained_class == 1 else self.values)
        return tuple(self.groups[i] for i in np.argsort(key, kind="stable"))


@dataclass(frozen=True, eq=False)
class FlipPath(Explanation):
    """LIME-C / SHAP-C: groups aligned to the reference cumulatively in ``order``.

    ``scores[k]`` is the model score after aligning the first k groups (``scores[0]`` is the query);
    ``count`` is the first k whose label differs from the query's, None if none does.

    Parameters
    ----------
    method : str
        ``"LIME-C"`` or ``"SHAP-C"``.
    count : int, optional
        The flip number.
    order : tuple of str
        The groups in the order they were aligned.
    scores : numpy.ndarray
        The p + 1 cumulative scores.
    explained_class : int
        The query's predicted class.
    """

    method: str
    count: int | None
    order: tuple[str, ...]
    scores: np.ndarray
    explained_class: int


class GroupCodec:
    """The raw table as one number per feature group: numeric values, or codes of categories / one-hot blocks.

    Categories are learned from ``frame`` (keeping NaN as a category); numeric NaN becomes the median.
    """

    def __init__(self, dataset: Dataset, frame: pd.DataFrame):
        self.dataset = dataset
        self.levels = {g.name: frame[g.columns[0]].drop_duplicates().reset_index(drop=True)
                       for g in dataset.groups if g.kind != "numeric" and len(g.columns) == 1}
        self.medians = {g.name: float(frame[g.columns[0]].median()) for g in dataset.groups if g.kind == "numeric"}

    @property
    def categorical(self) -> list[int]:
        return [i for i, g in enumerate(self.dataset.groups) if g.kind != "numeric"]

    def names(self) -> dict[int, list[str]]:
        """LIME's ``categorical_names``: the label of each code of each categorical group."""
        return {i: [str(v) for v in self.levels[g.name]] if g.name in self.levels else [*g.columns, "none"]
                for i, g in enumerate(self.dataset.groups) if g.kind != "numeric"}

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        return np.column_stack([self._encode(g, frame) for g in self.dataset.groups]).astype(float)

    def _encode(self, group, frame: pd.DataFrame) -> np.ndarray:
        if group.name in self.medians:
            return frame[group.columns[0]].astype(float).fillna(self.medians[group.name]).to_numpy()
        if group.name in self.levels:
            codes = pd.Index(self.levels[group.name]).get_indexer(frame[group.columns[0]])
            if (codes < 0).any():
                raise ValueError(f"{group.name}: a value outside the categories the codec was built from")
            return codes
        return pd.Index([*group.columns, NO_COLUMN]).get_indexer(group.values_in(frame))

    def decode(self, X: np.ndarray) -> pd.DataFrame:
        """The raw feature table for coded rows ``X`` (one column per group)."""
        parts = {}
        for j, group in enumerate(self.dataset.groups):
            if group.name in self.medians:
                parts[group.columns[0]] = X[:, j].astype(float)
            elif group.name in self.levels:
                parts[group.columns[0]] = self.levels[group.name].iloc[np.rint(X[:, j]).astype(int)].to_numpy()
            else:
                onehot = np.eye(len(group.columns) + 1, dtype=int)[np.rint(X[:, j]).astype(int), :-1]
                parts.update(zip(group.columns, onehot.T))
        return pd.DataFrame(parts)[self.dataset.columns]


def _codec(dataset: Dataset, train: pd.DataFrame, query: pd.DataFrame) -> GroupCodec:
    return GroupCodec(dataset, pd.concat([train, query[dataset.columns]], ignore_index=True))


@names_method("LIME")
def explain_lime(model: ModelAdapter, dataset: Dataset, query_frame: pd.DataFrame, train_rows, *,
                 seed: int = 0, num_samples: int = 5000) -> Attribution:
    """LIME (quartile-discretised numerics, categorical groups as codes) of the first row of ``query_frame``.

    Parameters
    ----------
    model, dataset
        As for :func:`~explain_core.sev.dispatch.explain_sev`.
    query_frame : pandas.DataFrame
        The row to explain (its first row), with the dataset's columns.
    train_rows : sequence of int
        The rows LIME's statistics are taken from.
    seed : int
        LIME's random state.
    num_samples : int
        LIME's perturbed samples.

    Returns
    -------
    Attribution
        LIME's weight of each group, for the model's score.
    """
    from lime.lime_tabular import LimeTabularExplainer  # imported on first use: keeps `import explain_core` light

    train = dataset.features.iloc[np.asarray(train_rows)]
    query = query_frame.iloc[:1]
    codec = _codec(dataset, train, query)
    proba = model.score_kind == "proba"
    explainer = LimeTabularExplainer(codec.encode(train), mode="classification" if proba else "regression",
                                     feature_names=dataset.group_names, categorical_features=codec.categorical,
                                     categorical_names=codec.names(), discretize_continuous=True,
                                     feature_selection="none", random_state=seed)

    def predict(X: np.ndarray) -> np.ndarray:
        scores = model.score(codec.decode(X))
        return np.column_stack([1 - scores, scores]) if proba else scores

    exp = explainer.explain_instance(codec.encode(query)[0], predict, labels=(1,),
                                     num_features=len(dataset.groups), num_samples=num_samples)
    values = np.zeros(len(dataset.groups))
    for i, weight in exp.as_map()[1]:
        values[i] = weight
    return Attribution("LIME", tuple(dataset.group_names), values, float(exp.intercept[1]),
                       SCORE_OUTPUT[model.score_kind],
                       f"LimeTabularExplainer ({num_samples} samples, seed {seed}, surrogate R² {exp.score:.2f})")


@names_method("SHAP")
def explain_shap(model: ModelAdapter, dataset: Dataset, query_frame: pd.DataFrame, train_rows, *,
                 seed: int = 0, background: int = 100) -> Attribution:
    """SHAP of the first row of ``query_frame`` against a seeded background sample of ``train_rows``.

    Linear and tree estimators get LinearExplainer / TreeExplainer (interventional) on the matrix they take —
    the encoded matrix behind a mappable ColumnTransformer, or the raw numeric columns of a model fed them directly
    (XGBoost, LightGBM, CatBoost, native boosters); any other model a PermutationExplainer of ``model.score``.

    Parameters
    ----------
    model, dataset, query_frame
        As for :func:`explain_lime`.
    train_rows : sequence of int
        The rows the background is drawn from.
    seed : int
        The background sample's seed (and the permutation explainer's).
    background : int
        Background rows.

    Returns
    -------
    Attribution
        SHAP's value of each group (a one-hot block's columns summed), with the expected value.
    """
    values, base, output, name = shap_rows(model, dataset, query_frame.iloc[:1], train_rows, seed=seed,
                                           background=background)
    return Attribution("SHAP", tuple(dataset.group_names), values[0], base, output, name)


def shap_rows(model: ModelAdapter, dataset: Dataset, frame: pd.DataFrame, train_rows, *, seed: int = 0,
              background: int = 100) -> tuple[np.ndarray, float, str, str]:
    """SHAP values of every row of ``frame`` (rows × groups, one-hot columns summed into their group), the base
    value E[f(X)], the output they explain and the explainer's description — :func:`explain_shap` for many rows
    at once (one explainer, one background sample)."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(np.asarray(train_rows), size=min(background, len(train_rows)), replace=False)
    bg, query = dataset.features.iloc[rows], frame[dataset.columns]
    inputs, why = model_matrix(model, dataset), ""
    if inputs is not None:
        estimator, classes, encode, column_group = inputs
        found = _encoded_shap(model, estimator, classes, encode(bg), encode(query))
        if isinstance(found, tuple):
            values, base, output, name = found
            grouped = np.stack([np.bincount(column_group, weights=v, minlength=len(dataset.groups)) for v in values])
            return grouped, base, output, f"{name} (interventional, {len(rows)} background rows, seed {seed})"
        why = found or ""
    values, base, output, name = _permutation_shap(model, dataset, query, bg, seed)
    return values, base, output, f"{name}; {why}" if why else name


def model_matrix(model: ModelAdapter, dataset: Dataset):
    """(estimator, its classes, raw frame → its input matrix, group of each input column) for a model whose own
    estimator sees one column per input (encoded by a mappable encoder, or raw numeric columns), else None."""
    split = encoded_model(model, dataset.groups)
    if split is not None:
        return split.estimator, getattr(split.estimator, "classes_", None), split.encode, split.column_group
    numeric = all(pd.api.types.is_numeric_dtype(dataset.features[c]) for c in model.columns)
    if model.takes != "raw" or not numeric:
        return None
    wrapper = model.estimator
    inner = getattr(wrapper, "inner", wrapper)  # renamed / ordered inputs (explain_core.intake.inputs)
    prepare = getattr(wrapper, "prepare", lambda frame: frame)
    group_of = {c: i for i, g in enumerate(dataset.groups) for c in g.columns}
    return (inner, getattr(inner, "classes_", None),
            lambda frame: prepare(frame[model.columns]), np.array([group_of[c] for c in model.columns]))


def _encoded_shap(model: ModelAdapter, estimator, classes, bg, query):
    """(values per row and input column, base value, output, explainer name) of a linear or tree estimator; None
    for another estimator; a sentence saying why SHAP's explainer of this estimator gave no values."""
    found = read_model(estimator, fitted_shap, bg, query)
    if found is None or "refused" in found:
        return found and found["refused"]
    values, base = np.asarray(found["values"], dtype=float), np.ravel(np.asarray(found["expected"], dtype=float))
    if values.shape[:2] != (len(query), np.shape(query)[1]) or values.ndim > 3 or not len(base):
        raise ModelCallError(f"SHAP's explainer returned values of shape {values.shape} for "
                             f"{count_noun(len(query), 'row')}.")
    if found["linear"]:
        name, output = "LinearExplainer", "log-odds" if found["proba"] else SCORE_OUTPUT[model.score_kind]
    else:
        name, output = "TreeExplainer", TREE_OUTPUT.get(found["tree_output"], "model output")
    if model.task != "classification":
        return values, float(base[0]), output, name
    pos = list(classes).index(model.positive_class)
    if values.ndim == 3:  # one column per class
        return values[:, :, pos], float(base[pos]), output, name
    sign = 1.0 if pos == 1 else -1.0  # a binary margin is for classes_[1]
    return sign * values, sign * float(base[0]), output, name


def fitted_shap(estimator, bg, query) -> dict | None:
    """SHAP's LinearExplainer or TreeExplainer (interventional) of ``estimator`` on the matrix it takes, as plain data
    (run where the model lives, :func:`~explain_core.intake.models.read_model`); None for any other estimator. A
    regressor on a standardised target (a TransformedTargetRegressor whose inverse is affine) is explained through
    its inner regressor: Shapley values are linear in the output, so they scale and the base value maps affinely."""
    import shap
    from shap.utils._exceptions import ExplainerError, InvalidModelError

    try:  # a native booster's library model; the demo regressions' regressor on their standardised target
        estimator, scale, shift = shap_estimator(estimator)
    except Unsupported:
        return None
    linear = hasattr(estimator, "coef_") and hasattr(estimator, "intercept_")
    if linear:
        explainer = shap.LinearExplainer(estimator, shap.maskers.Independent(bg, max_samples=len(bg)))
    else:
        try:
            explainer = shap.TreeExplainer(estimator, bg, feature_perturbation="interventional")
        except InvalidModelError:
            return None
    try:
        values = explainer.shap_values(query)
    except ExplainerError:  # its additivity check: its walk of a tree left the model's at a split threshold
        return {"refused": f"{type(explainer).__name__}'s values did not add up to the model's output on these rows "
                           "(shap's additivity check), so they were computed by permutation"}
    return {"values": scale * np.asarray(values, dtype=float),
            "expected": scale * np.ravel(np.asarray(explainer.expected_value, dtype=float)) + shift, "linear": linear,
            "proba": hasattr(estimator, "predict_proba"),
            "tree_output": None if linear else str(explainer.model.tree_output)}


def _permutation_shap(model: ModelAdapter, dataset: Dataset, query: pd.DataFrame, bg: pd.DataFrame,
                      seed: int) -> tuple[np.ndarray, float, str, str]:
    import shap

    cache_shap_kernels()
    codec = _codec(dataset, bg, query)
    coded_bg = codec.encode(bg)
    with global_generators():  # PermutationExplainer seeds and draws from NumPy's global generator
        explainer = shap.PermutationExplainer(lambda X: model.score(codec.decode(X)),
                                              shap.maskers.Independent(coded_bg, max_samples=len(coded_bg)), seed=seed,
                                              link=identity_link(), linearize_link=False)
        exp = explainer(codec.encode(query), silent=True)
    return (np.asarray(exp.values, dtype=float).reshape(len(query), -1), float(np.ravel(exp.base_values)[0]),
            SCORE_OUTPUT[model.score_kind], f"PermutationExplainer ({len(coded_bg)} background rows, seed {seed})")


@names_method("LIME-C / SHAP-C")
def flip_number(model: ModelAdapter, dataset: Dataset, query_frame: pd.DataFrame, reference: Reference,
                attribution: Attribution, order: str = "absolute") -> FlipPath:
    """Align groups to the reference in ``attribution.ranked(order)`` (see :data:`FLIP_ORDERS`), all p+1
    cumulative vertices in one model call (a signed order first scores the query for its class).

    Parameters
    ----------
    model, dataset, query_frame
        As for :func:`explain_lime`.
    reference : Reference
        What the groups are aligned to.
    attribution : Attribution
        LIME's or SHAP's attribution of the row.
    order : str
        ``"absolute"`` or ``"signed"``.

    Returns
    -------
    FlipPath
        The flip number and the scores along the way.

    Raises
    ------
    IntakeError
        When the attribution's groups are not the dataset's, or ``order`` is unknown.
    """
    layout = dataset.layout
    if tuple(attribution.groups) != layout.names:
        raise IntakeError("The attribution's feature groups are not the dataset's groups.")
    query = query_frame.iloc[:1]
    ranking = (attribution.ranked("signed", int(model.labels_of(model.score(query))[0])) if order == "signed"
               else attribution.ranked(order))
    rank = np.empty(layout.size, dtype=int)
    rank[layout.indices(ranking)] = np.arange(layout.size)
    masks = rank[None, :] >= np.arange(layout.size + 1)[:, None]  # row k: first k groups at the reference
    scores = model.score(mix(layout, query, reference, masks))
    labels = model.labels_of(scores)
    flips = np.flatnonzero(labels != labels[0])
    return FlipPath(f"{attribution.method}-C", int(flips[0]) if len(flips) else None, ranking, scores,
                    int(labels[0]))
