"""The file formats the intake reads, by suffix: model files (skops, ONNX, the boosters' own formats and pickles,
which load only in the operator's trusted mode, switched on by :data:`TRUSTED_ENV`) and the audit's Parquet files.

One place for every suffix, so the loaders, the sandboxed worker, the upload widget and the audit agree on them.
"""
from __future__ import annotations

TRUSTED_ENV = "EXPLAIN_TRUSTED_MODELS"
NATIVE_SUFFIXES = {".json": "xgboost", ".ubj": "xgboost", ".txt": "lightgbm", ".cbm": "catboost"}
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
MODEL_SUFFIXES = (".skops", ".onnx", *NATIVE_SUFFIXES) + PICKLE_SUFFIXES
MODEL_FORMATS = ".skops, .onnx, or a booster's own file (XGBoost .json/.ubj, LightGBM .txt, CatBoost .cbm)"  # in words
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
