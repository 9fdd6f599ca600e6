"""Intake: what the analyst brings, made safe and typed — tables read under the operator's limits
(:mod:`.tables`), typed datasets (:mod:`.data`), their feature groups (:mod:`.layout`), the bundled demo datasets
(:mod:`.demos`), models of any kind behind one adapter (:mod:`.models`, :mod:`.inputs`, :mod:`.encoding`,
:mod:`.boosters`), model files loaded safely (:mod:`.loading`, :mod:`.skops_policy`, :mod:`.onnx_model`), the demo
models (:mod:`.demo_models`) and the ONNX export (:mod:`.onnx_export`)."""
