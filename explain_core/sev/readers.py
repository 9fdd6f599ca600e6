"""Reading a fitted model's internals as plain data, for the exact SEV engines (:mod:`.exact`, :mod:`.additive`).

Every function here is called through :meth:`~explain_core.intake.models.ModelAdapter.introspect`: it receives the
fitted estimator (with its wrappers: renamed or ordered inputs, a Pipeline, a target transform, a native booster)
and returns only JSON types and numpy arrays, never a model object — so it can run where an uploaded model lives (a
sandboxed worker), and the caller validates what comes back (:func:`~explain_core.sev.trees.ensemble_from_plain`).

:func:`read_structure` gives the trees (scikit-learn's ``tree_``, XGBoost's JSON model, LightGBM's ``dump_model``,
CatBoost's JSON) or the linear coefficients, the comparison rule of the library's own arithmetic, the output link,
and which input column each of the final estimator's features comes from; :func:`read_inputs` gives the final
estimator's inputs for raw rows (the model's own preprocessing applied) and its raw output on them.
"""
from __future__ import annotations

import json
import os
import tempfile
import warnings

import numpy as np
import pandas as pd
from sklearn.compose import TransformedTargetRegressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from ..errors import Unsupported
from ..intake.boosters import NativeBooster
from ..intake.inputs import OrderedInputs, RenamedInputs
from ..intake.tracing import column_sources
from .network_readers import NotNetwork, is_network, network_raw, read_network

SKLEARN_TREES = ("DecisionTreeClassifier", "DecisionTreeRegressor", "ExtraTreeClassifier", "ExtraTreeRegressor")
SKLEARN_FORESTS = ("RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier", "ExtraTreesRegressor")
SKLEARN_BOOSTED = ("GradientBoostingClassifier", "GradientBoostingRegressor")
SKLEARN_HIST = ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor")
LINEAR = ("LogisticRegression", "LinearRegression", "Ridge", "Lasso", "ElasticNet", "LinearSVC", "LinearSVR",
          "RidgeClassifier", "SGDClassifier", "SGDRegressor")
LOGISTIC = {"xgboost": ("binary:logistic", "binary:logitraw"), "lightgbm": ("binary", "cross_entropy", "xentropy")}
IDENTITY = {"xgboost": ("reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror", "reg:quantileerror"),
            "lightgbm": ("regression", "regression_l1", "huber", "fair", "quantile")}


def read_structure(estimator, columns: list[str]) -> dict:
    """The final estimator's trees or coefficients as plain data (``supported`` False with a ``reason`` otherwise).

    ``columns`` are the raw columns the adapter feeds the model, in its order; ``sources[j]`` names the one column
    final feature j is computed from. The model's raw output is ``raw``; its score is ``link(a·raw + b)``.
    """
    try:
        chain = _unwrap(estimator, [str(c) for c in columns])
        family, final = _family(chain["final"])
        body = {"linear": _linear, "network": read_network}.get(family, lambda f: _trees(family, f))(final)
        return {"supported": True, "family": family, "sources": chain["sources"], "affine": chain["affine"],
                "classes": _classes(chain["final"]), **body}
    except (Unsupported, NotNetwork) as exc:
        return {"supported": False, "reason": str(exc)}
    except Exception as exc:  # noqa: BLE001 — an unexpected layout of a library's dump: not read, said so
        return {"supported": False, "reason": f"its structure could not be read ({type(exc).__name__})"}


def read_inputs(estimator, frame: pd.DataFrame, columns: list[str]) -> dict:
    """The final estimator's inputs for the raw rows of ``frame`` (float64, one column per feature) and its raw
    output on them (the margin of classes_[1], a decision value, or a regressor's untransformed prediction)."""
    chain = _unwrap(estimator, [str(c) for c in columns])
    X = frame[list(columns)]
    for step in chain["steps"]:
        X = step(X)
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    family, final = _family(chain["final"])
    with warnings.catch_warnings():  # a model fitted on a DataFrame warns about the plain array it is given here
        warnings.simplefilter("ignore", UserWarning)
        raw = _raw(family, final, X)
    return {"inputs": X, "raw": np.asarray(raw, dtype=np.float64).ravel()}


# --- the chain of wrappers ---------------------------------------------------------------------------------

def _unwrap(estimator, columns: list[str]) -> dict:
    """Wrappers peeled off: ``steps`` (callables applied in order), ``sources`` (the raw column behind each final
    feature), ``affine`` ([a, b]: a target transform's inverse) and the ``final`` estimator."""
    steps, sources, names, affine, est = [], list(columns), list(columns), [1.0, 0.0], estimator
    for _ in range(16):
        if isinstance(est, RenamedInputs):
            sources, names = list(est.mapping), list(est.mapping.values())
            steps.append(est.prepare)
        elif isinstance(est, OrderedInputs):
            sources = names = [str(c) for c in est.feature_names_in_]
            steps.append(est.prepare)
        elif isinstance(est, Pipeline):
            for _, step in est.steps[:-1]:
                if step is None or step == "passthrough":
                    continue
                traced = column_sources(step, names)
                if traced is None:
                    raise Unsupported(f"its preprocessing step {type(step).__name__} cannot be traced column by column")
                sources = [sources[i] for i in traced]
                names = [str(n) for n in step.get_feature_names_out()] if hasattr(step, "get_feature_names_out") \
                    else [f"x{i}" for i in range(len(traced))]
                steps.append(step.transform)
            est = est.steps[-1][1]
            continue
        elif isinstance(est, TransformedTargetRegressor):
            affine = target_affine(est, affine)
            est = est.regressor_
            continue
        else:
            return {"steps": steps, "sources": sources, "affine": affine, "final": est}
        est = est.inner
    raise Unsupported("its wrappers nest too deeply")


def shap_estimator(estimator) -> tuple[object, float, float]:
    """``(the estimator SHAP reads, scale, shift)`` with the model's output = scale × that estimator's + shift: a
    native booster's library model; a TransformedTargetRegressor's regressor with its affine inverse
    (:func:`target_affine`, Unsupported otherwise); else the estimator itself with (1, 0)."""
    if isinstance(estimator, NativeBooster):
        return estimator.booster, 1.0, 0.0
    if isinstance(estimator, TransformedTargetRegressor):
        scale, shift = target_affine(estimator, [1.0, 0.0])
        return estimator.regressor_, scale, shift
    return estimator, 1.0, 0.0


def target_affine(est: TransformedTargetRegressor, affine: list[float]) -> list[float]:
    """A target transform whose inverse is affine (a StandardScaler, or none)."""
    t = est.transformer_
    if est.func is not None or not (t is None or isinstance(t, StandardScaler)):
        raise Unsupported("its target transform is not a StandardScaler")
    scale = float(t.scale_[0]) if t is not None and t.scale_ is not None else 1.0
    mean = float(t.mean_[0]) if t is not None and t.mean_ is not None else 0.0
    return [affine[0] * scale, affine[0] * mean + affine[1]]


def _family(final) -> tuple[str, object]:
    """``(family, the object whose internals are read)``."""
    name = type(final).__name__
    if isinstance(final, NativeBooster):
        return final.library, final.booster
    if is_network(final):
        return "network", final
    module = type(final).__module__
    if module.startswith("xgboost"):
        return "xgboost", final.get_booster() if hasattr(final, "get_booster") else final
    if module.startswith("lightgbm"):
        return "lightgbm", final.booster_ if hasattr(final, "booster_") else final
    if module.startswith("catboost"):
        return "catboost", final
    if not module.startswith("sklearn"):
        raise Unsupported(f"{name} is not a tree ensemble or linear model the exact engine reads")
    for family, names in (("tree", SKLEARN_TREES), ("forest", SKLEARN_FORESTS), ("boosted", SKLEARN_BOOSTED),
                          ("hist", SKLEARN_HIST), ("linear", LINEAR)):
        if name in names:
            return family, final
    raise Unsupported(f"{name} is not a tree ensemble or linear model the exact engine reads")


def _classes(final):
    classes = getattr(final, "classes_", None)
    if classes is None or len(classes) == 0:  # a regressor (CatBoost's lists no classes)
        return None
    if len(classes) != 2:
        raise Unsupported(f"it has {len(classes)} classes (the exact engine reads binary models)")
    return [c.item() if isinstance(c, np.generic) else c for c in classes]


def _raw(family: str, final, X: np.ndarray) -> np.ndarray:
    """The final estimator's raw output on its inputs ``X`` (a network's: its weights applied here, in float64)."""
    classifier = hasattr(final, "classes_")
    if family == "network":
        return network_raw(read_network(final), X)
    if family in ("tree", "forest"):
        return final.predict_proba(X)[:, 1] if classifier else final.predict(X)
    if family in ("boosted", "hist", "linear"):
        return final.decision_function(X) if classifier else final.predict(X)
    if family == "xgboost":
        xgb = __import__("xgboost")
        return final.predict(xgb.DMatrix(X, feature_names=final.feature_names), output_margin=True,
                             validate_features=False)
    if family == "lightgbm":
        return final.predict(X, raw_score=True)
    return final.predict(X, prediction_type="RawFormulaVal")


# --- linear models -----------------------------------------------------------------------------------------

def _linear(final) -> dict:
    coef = np.asarray(final.coef_, dtype=np.float64)
    if coef.ndim == 2 and coef.shape[0] != 1 or coef.ndim > 2:
        raise Unsupported("its coefficients are not one vector (a multiclass linear model)")
    link = "sigmoid" if type(final).__name__ == "LogisticRegression" else "identity"
    intercept = float(np.ravel(final.intercept_)[0]) if np.size(final.intercept_) else 0.0
    return {"kind": "linear", "coef": coef.ravel(), "intercept": intercept, "link": link, "n_features": coef.size}


# --- tree ensembles ----------------------------------------------------------------------------------------

def _trees(family: str, final) -> dict:
    """Flat node arrays of every tree (local child indices, -1 at leaves) and how the output is formed."""
    readers = {"tree": _sklearn_trees, "forest": _sklearn_trees, "boosted": _sklearn_trees, "hist": _hist_trees,
               "xgboost": _xgboost_trees, "lightgbm": _lightgbm_trees, "catboost": _catboost_trees}
    trees, rule, link, n_features = readers[family](final, family)
    keys = ("feature", "threshold", "left", "right", "missing_left", "missing_kind", "value")
    flat = {k: np.concatenate([np.asarray(t[k]) for t in trees]) if trees else np.zeros(0) for k in keys}
    return {"kind": "trees", "rule": rule, "link": link, "n_features": int(n_features),
            "sizes": np.array([len(t["feature"]) for t in trees], dtype=np.int64), **flat}


def _tree(feature, threshold, left, right, missing_left, value, missing_kind=None) -> dict:
    n = len(feature)
    return {"feature": np.asarray(feature, dtype=np.int64), "threshold": np.asarray(threshold, dtype=np.float64),
            "left": np.asarray(left, dtype=np.int64), "right": np.asarray(right, dtype=np.int64),
            "missing_left": np.asarray(missing_left, dtype=bool), "value": np.asarray(value, dtype=np.float64),
            "missing_kind": np.zeros(n, np.int8) if missing_kind is None else np.asarray(missing_kind, np.int8)}


def _sklearn_trees(final, family: str):
    """scikit-learn trees: float32(x) <= threshold; a forest averages, gradient boosting scales by the learning rate."""
    if family == "tree":
        estimators, weight = [final], 1.0
    elif family == "forest":
        estimators = list(final.estimators_)
        weight = 1.0 / len(estimators)
    else:
        if np.asarray(final.estimators_).shape[1] != 1:
            raise Unsupported("it has one tree per class (a multiclass model)")
        if not (isinstance(final.init_, str) or type(final.init_).__name__.startswith("Dummy")):
            raise Unsupported("its initial estimator is not a constant")
        estimators, weight = list(final.estimators_[:, 0]), float(final.learning_rate)
    classifier = family in ("tree", "forest") and hasattr(final, "classes_")
    trees = []
    for est in estimators:
        t = est.tree_
        value = t.value[:, 0, :]
        if classifier:
            value = value[:, 1] / np.maximum(value.sum(axis=1), np.finfo(float).tiny)
        else:
            value = value[:, 0]
        leaf = t.children_left < 0
        missing = getattr(t, "missing_go_to_left", np.zeros(t.node_count, dtype=bool))
        trees.append(_tree(np.where(leaf, -1, t.feature), np.where(leaf, 0.0, t.threshold), t.children_left,
                           t.children_right, np.asarray(missing, dtype=bool), np.where(leaf, weight * value, 0.0)))
    sigmoid = family == "boosted" and hasattr(final, "classes_")
    return trees, "le32", "sigmoid" if sigmoid else "identity", final.n_features_in_


def _hist_trees(final, family: str):
    """HistGradientBoosting: float64 x <= num_threshold, NaN by missing_go_to_left."""
    if getattr(final, "n_trees_per_iteration_", 1) != 1:
        raise Unsupported("it has one tree per class (a multiclass model)")
    trees = []
    for (predictor,) in final._predictors:
        nodes = predictor.nodes
        if nodes["is_categorical"].any():
            raise Unsupported("it splits on categorical features")
        leaf = nodes["is_leaf"].astype(bool)
        trees.append(_tree(np.where(leaf, -1, nodes["feature_idx"]), np.where(leaf, 0.0, nodes["num_threshold"]),
                           np.where(leaf, -1, nodes["left"].astype(np.int64)),
                           np.where(leaf, -1, nodes["right"].astype(np.int64)), nodes["missing_go_to_left"],
                           np.where(leaf, nodes["value"], 0.0)))
    link = "sigmoid" if hasattr(final, "classes_") else "identity"
    return trees, "le64", link, final.n_features_in_


def _xgboost_trees(booster, family: str):
    """XGBoost's JSON model: float32 x < float32 split_condition, NaN by default_left."""
    learner = json.loads(booster.save_raw("json"))["learner"]
    objective = learner["objective"]["name"]
    model = learner["gradient_booster"]
    if model.get("name") != "gbtree":
        raise Unsupported(f"its booster is {model.get('name')} (the exact engine reads gbtree)")
    link = _link("xgboost", objective)
    if int(learner["learner_model_param"].get("num_class", "0")) > 1:
        raise Unsupported("it is a multiclass model")
    trees = []
    for tree in model["model"]["trees"]:
        if any(int(s) != 0 for s in tree.get("split_type", [])):
            raise Unsupported("it splits on categorical features")
        left = np.asarray(tree["left_children"], dtype=np.int64)
        leaf = left < 0
        cond = np.asarray(tree["split_conditions"], dtype=np.float32).astype(np.float64)
        trees.append(_tree(np.where(leaf, -1, tree["split_indices"]), np.where(leaf, 0.0, cond), left,
                           tree["right_children"], np.asarray(tree["default_left"], dtype=bool),
                           np.where(leaf, cond, 0.0)))
    return trees, "lt32", link, int(learner["learner_model_param"]["num_feature"])


def _link(library: str, objective: str) -> str:
    if objective in LOGISTIC[library]:
        return "sigmoid" if objective != "binary:logitraw" else "identity"
    if objective in IDENTITY[library]:
        return "identity"
    raise Unsupported(f"its objective {objective} has an output link the exact engine does not model")


LIGHTGBM_MISSING = {"None": 1, "Zero": 2, "NaN": 3}  # TreeEnsemble.missing_kind


def _lightgbm_trees(booster, family: str):
    """LightGBM's dump_model: x <= threshold (double), NaN and zero by missing_type and default_left."""
    dump = booster.dump_model()
    words = str(dump.get("objective", "")).split()
    if dump.get("num_class", 1) != 1 or dump.get("num_tree_per_iteration", 1) != 1:
        raise Unsupported("it is a multiclass model")
    if dump.get("average_output"):
        raise Unsupported("it averages its trees (random-forest mode)")
    link = _link("lightgbm", words[0] if words else "")
    sigmoid = next((float(w.split(":")[1]) for w in words[1:] if w.startswith("sigmoid:")), 1.0)
    trees = [_lightgbm_tree(info["tree_structure"], sigmoid if link == "sigmoid" else 1.0)
             for info in dump["tree_info"]]
    return trees, "le64", link, int(dump["max_feature_idx"]) + 1


def _lightgbm_tree(root: dict, scale: float) -> dict:
    """One tree of the nested dump in preorder (children after their parent)."""
    columns = {k: [] for k in ("feature", "threshold", "left", "right", "missing_left", "value", "missing_kind")}
    stack = [(root, -1, False)]
    while stack:
        node, parent, is_right = stack.pop()
        i = len(columns["feature"])
        if parent >= 0:
            columns["right" if is_right else "left"][parent] = i
        if "leaf_value" in node or "split_feature" not in node:
            row = (-1, 0.0, -1, -1, False, scale * float(node.get("leaf_value", 0.0)), 0)
        else:
            if node.get("decision_type", "<=") != "<=":
                raise Unsupported("it splits on categorical features")
            row = (int(node["split_feature"]), float(node["threshold"]), -1, -1, bool(node.get("default_left")), 0.0,
                   LIGHTGBM_MISSING.get(node.get("missing_type", "None"), 1))
            stack += [(node["right_child"], i, True), (node["left_child"], i, False)]
        for key, v in zip(columns, row):
            columns[key].append(v)
    return _tree(**columns)


def _catboost_trees(model, family: str):
    """CatBoost's JSON: oblivious trees (bit i of the leaf index: float32 x > float32 border of split i), expanded
    into binary trees; NaN by the feature's nan_value_treatment."""
    handle, path = tempfile.mkstemp(suffix=".json")
    os.close(handle)
    try:
        model.save_model(path, format="json")
        with open(path) as f:
            dump = json.load(f)
    finally:
        os.unlink(path)
    info = dump.get("features_info", {})
    if info.get("categorical_features") or info.get("ctrs"):
        raise Unsupported("it uses categorical features")
    flat = {f["feature_index"]: (f["flat_feature_index"], f.get("nan_value_treatment") != "AsTrue")
            for f in info.get("float_features", [])}
    loss = dump.get("model_info", {}).get("params", {}).get("loss_function", {}).get("type", "")
    scale = float(dump.get("scale_and_bias", [1.0, [0.0]])[0])
    trees = []
    for tree in dump.get("oblivious_trees", []):
        splits = tree.get("splits", [])
        if any(s.get("split_type") != "FloatFeature" for s in splits):
            raise Unsupported("it splits on categorical or combined features")
        values = np.asarray(tree["leaf_values"], dtype=np.float64)
        if len(values) != 2 ** len(splits):
            raise Unsupported("it has several outputs per leaf (a multiclass model)")
        trees.append(_oblivious(splits, values * scale, flat))
    n = max((f[0] for f in flat.values()), default=-1) + 1
    if loss not in ("Logloss", "CrossEntropy", "RMSE", "MAE", "Quantile"):
        raise Unsupported(f"its loss {loss or 'unknown'} has an output link the exact engine does not model")
    return trees, "le32", "sigmoid" if loss in ("Logloss", "CrossEntropy") else "identity", n


def _oblivious(splits: list, values: np.ndarray, flat: dict) -> dict:
    """A full binary tree of depth d: level i tests split i; going right sets bit i of the leaf index."""
    d = len(splits)
    internal = 2 ** d - 1
    feature, threshold, missing = [], [], []
    for level in range(d):
        s = splits[level]
        f, nan_left = flat[s["float_feature_index"]]
        feature += [f] * 2 ** level
        threshold += [float(np.float32(s["border"]))] * 2 ** level
        missing += [nan_left] * 2 ** level
    node = np.arange(internal)
    leaves = np.arange(internal, 2 * internal + 1)
    bits = leaves - internal  # the k-th leaf from the left: its path's turns are k's bits, the root's first
    index = sum(((bits >> (d - 1 - lv)) & 1) << lv for lv in range(d)) if d else bits  # CatBoost's leaf index
    return _tree(np.concatenate([feature, -np.ones(internal + 1, np.int64)]), threshold + [0.0] * (internal + 1),
                 np.concatenate([2 * node + 1, -np.ones(internal + 1, np.int64)]),
                 np.concatenate([2 * node + 2, -np.ones(internal + 1, np.int64)]),
                 missing + [False] * (internal + 1), np.concatenate([np.zeros(internal), values[index]]))
