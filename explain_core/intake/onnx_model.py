"""ONNX models (onnxruntime) behind scikit-learn's predict / predict_proba.

An uploaded graph is loaded and run only inside its sandboxed worker process (:mod:`.sandbox`), whose memory,
time and CPU limits hold for every call; onnxruntime runs on one thread there, its log silenced (its messages
carry terminal colour codes), and a graph that keeps its weights in separate files is refused with the reason.
"""
from __future__ import annotations

import numpy as np

from ..errors import IntakeError, one_line

ONNX_DTYPES = {"tensor(string)": object, "tensor(float)": np.float32, "tensor(double)": np.float64,
               "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": bool}


class OnnxModel:
    """An ONNX classifier/regressor (onnxruntime) with sklearn's predict/predict_proba interface.

    A graph with one input per raw column takes the raw table; a graph with one 2-D input takes a matrix (the
    dataset's columns in order, or its encoded matrix with the encoder). Outputs follow skl2onnx and onnxmltools
    (the label first, then the probabilities: a tensor, or a ZipMap list of {class: probability}); a graph with
    one float output (torch, TensorFlow exporters) gives the positive class's probability (one column) or both
    classes' (two columns) for classes 0 and 1, or a regression's prediction.
    """

    def __init__(self, data: bytes, *, name: str = "model.onnx"):
        import onnx
        import onnxruntime as ort

        self.name = name
        try:
            model = onnx.load_model_from_string(bytes(data))
        except Exception as exc:
            raise IntakeError(f"{name} is not a loadable ONNX model ({one_line(exc)}); re-export it.") from exc
        if _external_data(model):
            raise IntakeError(f"{name} keeps its weights in separate files (ONNX external data), which cannot be "
                              "uploaded; export the model as one file (onnx.save with save_as_external_data=False).")
        ort.set_default_logger_severity(4)
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.log_severity_level = 4
        try:
            self.session = ort.InferenceSession(bytes(data), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise IntakeError(f"{name} is not a loadable ONNX model ({one_line(exc)}); re-export it.") from exc
        self.graph = graph = model.graph  # read by the exact SEV engine of ReLU networks (sev/network_readers.py)
        inputs = self.session.get_inputs()
        self.input_types = {i.name: ONNX_DTYPES.get(i.type, np.float32) for i in inputs}
        if len(inputs) > 1:
            self.feature_names_in_ = np.array([i.name for i in inputs], dtype=object)
        elif isinstance(inputs[0].shape[-1], int):
            self.n_features_in_ = inputs[0].shape[-1]
        self.outputs = [o.name for o in self.session.get_outputs()]
        classes = onnx_classes(graph)
        if classes is None and len(self.outputs) == 1:
            classes = np.array([0, 1])  # one score output: P(class 1), or a regression's prediction
        if classes is not None:
            self.classes_ = classes

    def _feed(self, X) -> dict:
        if len(self.input_types) == 1:
            (name, dtype), = self.input_types.items()
            return {name: np.asarray(X, dtype=dtype)}
        return {name: np.asarray(X[name]).astype(str if dtype is object else dtype).reshape(-1, 1)
                for name, dtype in self.input_types.items()}

    def _run(self, outputs: list[str], X):
        return self.session.run(outputs, self._feed(X))

    def predict(self, X):
        return np.asarray(self._run(self.outputs[:1], X)[0]).ravel()

    @property
    def predict_proba(self):
        if not hasattr(self, "classes_"):
            raise AttributeError("this ONNX model has no probability output with known classes")
        return self._predict_proba

    def _predict_proba(self, X):
        proba = self._run(self.outputs[-1:] if len(self.outputs) == 1 else self.outputs[1:2], X)[0]
        if isinstance(proba, list):  # ZipMap: one {class: probability} per row
            return np.array([[row[c] for c in self.classes_] for row in proba], dtype=float)
        proba = np.asarray(proba, dtype=float)
        if len(self.outputs) == 1:
            proba = proba.reshape(len(proba), -1)
            if proba.shape[1] == 1:
                proba = np.column_stack([1 - proba[:, 0], proba[:, 0]])
            low, high = np.nanmin(proba), np.nanmax(proba)
            if low < -1e-6 or high > 1 + 1e-6:
                raise IntakeError(f"{self.name}'s output is not a probability (values from {low:.3g} to {high:.3g}); "
                                  "export the model with its sigmoid or softmax at the end, or upload it for a "
                                  "regression target.")
        return proba


def onnx_classes(graph) -> np.ndarray | None:
    """Class labels in probability-column order: a classifier/ZipMap node's classlabels_* attribute,
    or the ``classes`` initializer skl2onnx writes for MLPs and similar."""
    import onnx
    from onnx import numpy_helper

    for node in graph.node:
        for attr in node.attribute:
            if attr.name in ("classlabels_strings", "classlabels_int64s", "classlabels_ints"):
                values = onnx.helper.get_attribute_value(attr)
                return np.array([v.decode() if isinstance(v, bytes) else v for v in values])
    init = next((i for i in graph.initializer if i.name == "classes"), None)
    return None if init is None else numpy_helper.to_array(init)


def _external_data(model) -> bool:
    """Whether any weight of the graph lives in a separate file."""
    from onnx import TensorProto

    return any(t.data_location == TensorProto.EXTERNAL for t in model.graph.initializer)
