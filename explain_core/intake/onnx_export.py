"""A setup's model as an ``.onnx`` file's bytes that the app's own ONNX loader takes back (one graph input per raw
column, so the file needs no separate encoder). skl2onnx is imported only when the bytes are asked for.

onnxruntime has no kernel for a float64 or text ``Imputer``, so two encoder steps are written by hand:

- a numeric ``SimpleImputer`` + ``StandardScaler`` (:class:`NumberEncoder`): the float32 input is imputed and
  standardised in float64, as scikit-learn does, then cast to float32 (what scikit-learn's trees compare: a
  float32 standardisation can land on the other side of a split). Scores agree with scikit-learn's to float32
  precision (< 1e-6 on the demo models; labels equal);
- a text ``SimpleImputer`` before a one-hot/ordinal encoder (:class:`TextImputer`): a ``LabelEncoder`` per column
  maps a missing value (NaN reaches a graph as the text ``nan``) to the fitted fill value, a known category to
  itself and anything else to a value no encoder knows, which ``OneHotEncoder(handle_unknown="ignore")`` encodes
  as all zeros, as scikit-learn does.
"""
from __future__ import annotations

import copy

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.impute import SimpleImputer
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

from ..errors import IntakeError

MISSING_TEXT = ("nan", "None", "<NA>")  # how NaN, None and pd.NA read once the loader casts text inputs to str
UNKNOWN = "\x00unknown"  # a category no fitted encoder holds


class TextImputer(BaseEstimator):
    """A fitted text ``SimpleImputer``'s fill values with the categories the next encoder knows, for the graph."""

    def __init__(self, fills, categories):
        self.fills, self.categories = fills, categories


class NumberEncoder(BaseEstimator):
    """A fitted numeric ``SimpleImputer`` + ``StandardScaler``: computed in float64 as scikit-learn does, then cast
    to float32, which is what scikit-learn's trees compare (a float32 standardisation can land on the other side
    of a split)."""

    def __init__(self, fills, mean, scale):
        self.fills, self.mean, self.scale = fills, mean, scale


def onnx_bytes(setup) -> bytes:
    """The setup's model (a Pipeline from the raw columns) as a ``.onnx`` file's bytes."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    _register()
    pipeline = _exportable(copy.deepcopy(setup.model.estimator))
    frame = setup.dataset.features
    types = [(str(c), FloatTensorType([None, 1]) if frame[c].dtype.kind in "fiub" else StringTensorType([None, 1]))
             for c in setup.model.columns]
    final = pipeline.steps[-1][1] if hasattr(pipeline, "steps") else pipeline
    try:
        graph = convert_sklearn(pipeline, initial_types=types, options={id(final): {"zipmap": False}})
    except Exception as exc:
        raise IntakeError(f"This model cannot be written as ONNX ({type(exc).__name__}: {exc}); download it as "
                          ".skops instead.") from exc
    return graph.SerializeToString()


def _exportable(step):
    """``step`` (a copy) with each numeric imputer + scaler pipeline replaced by a NumberEncoder, and each text
    SimpleImputer followed by a one-hot or ordinal encoder by a TextImputer."""
    steps = getattr(step, "steps", None)
    if steps is not None and _number_pair(steps):
        imputer, scaler = steps[0][1], steps[1][1]
        fills = np.asarray(imputer.statistics_, dtype=float)
        mean = np.zeros_like(fills) if scaler.mean_ is None else scaler.mean_
        return NumberEncoder(fills, mean, np.ones_like(fills) if scaler.scale_ is None else scaler.scale_)
    if steps is not None:
        for i, (name, part) in enumerate(steps):
            after = steps[i + 1][1] if i + 1 < len(steps) else None
            if _text_imputer(part) and isinstance(after, (OneHotEncoder, OrdinalEncoder)):
                steps[i] = (name, TextImputer([str(v) for v in part.statistics_],
                                              [[str(c) for c in cats] for cats in after.categories_]))
            else:
                _exportable(part)
    transformers = getattr(step, "transformers_", None)
    if transformers is not None:
        step.transformers_ = [(name, _exportable(part), columns) for name, part, columns in transformers]
    return step


def _number_pair(steps) -> bool:
    return (len(steps) == 2 and isinstance(steps[0][1], SimpleImputer) and not _text_imputer(steps[0][1])
            and isinstance(steps[1][1], StandardScaler))


def _text_imputer(step) -> bool:
    return isinstance(step, SimpleImputer) and np.asarray(step.statistics_).dtype == object


def _register() -> None:
    from skl2onnx import update_registered_converter

    update_registered_converter(TextImputer, "ExplainTextImputer", _text_shape, _text_convert)
    update_registered_converter(NumberEncoder, "ExplainNumberEncoder", _number_shape, _number_convert)


def _text_shape(operator) -> None:
    from skl2onnx.common.data_types import StringTensorType

    operator.outputs[0].type = StringTensorType([None, len(operator.raw_operator.fills)])


def _number_shape(operator) -> None:
    from skl2onnx.common.data_types import FloatTensorType

    operator.outputs[0].type = FloatTensorType([None, len(operator.raw_operator.fills)])


def _number_convert(scope, operator, container) -> None:
    """``Cast(float32, (Where(IsNaN(x), fill, x) − mean) / scale)``, computed in float64."""
    from onnx import TensorProto

    encoder, x = operator.raw_operator, operator.inputs[0].full_name
    names = {k: scope.get_unique_variable_name(k) for k in ("fill", "mean", "scale", "wide", "nan", "filled",
                                                            "centred", "scaled")}
    container.add_node("Cast", x, names["wide"], to=TensorProto.DOUBLE, name=scope.get_unique_operator_name("Cast"))
    x = names["wide"]
    for key, values in (("fill", encoder.fills), ("mean", encoder.mean), ("scale", encoder.scale)):
        container.add_initializer(names[key], TensorProto.DOUBLE, [len(values)], [float(v) for v in values])
    for op, inputs, out in (("IsNaN", [x], "nan"), ("Where", [names["nan"], names["fill"], x], "filled"),
                            ("Sub", [names["filled"], names["mean"]], "centred"),
                            ("Div", [names["centred"], names["scale"]], "scaled")):
        container.add_node(op, inputs, names[out], name=scope.get_unique_operator_name(op))
    container.add_node("Cast", names["scaled"], operator.outputs[0].full_name, to=TensorProto.FLOAT,
                       name=scope.get_unique_operator_name("Cast"))


def _text_convert(scope, operator, container) -> None:
    """One ArrayFeatureExtractor + LabelEncoder per column, concatenated."""
    from onnx import TensorProto

    imputer, columns = operator.raw_operator, []
    for j, (fill, known) in enumerate(zip(imputer.fills, imputer.categories)):
        index, column, mapped = (scope.get_unique_variable_name(f"text_{kind}_{j}") for kind in ("index", "in", "out"))
        container.add_initializer(index, TensorProto.INT64, [1], [j])
        container.add_node("ArrayFeatureExtractor", [operator.inputs[0].full_name, index], column,
                           op_domain="ai.onnx.ml", name=scope.get_unique_operator_name("TextColumn"))
        mapping = {**{m: fill for m in MISSING_TEXT}, **{c: c for c in known}}
        container.add_node("LabelEncoder", column, mapped, op_domain="ai.onnx.ml", op_version=2,
                           keys_strings=list(mapping), values_strings=list(mapping.values()),
                           default_string=UNKNOWN, name=scope.get_unique_operator_name("TextImpute"))
        columns.append(mapped)
    container.add_node("Concat", columns, operator.outputs[0].full_name, axis=1,
                       name=scope.get_unique_operator_name("TextColumns"))
