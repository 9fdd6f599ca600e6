"""Hold-out rows: which rows a model was not trained on, so its "test" metrics mean what they say (issue 26 §5).

A model trained here is scored on the seeded split's test rows, which it never saw. A model uploaded from elsewhere
may have been trained on any of the table's rows: its metrics on the app's own split can look better than they are
(a LightGBM scoring test AUC 1.000 on rows it was fitted on). So an upload's metrics carry where their test rows come
from (``metrics["test_rows"]``, one of :data:`TEST_ROWS`) and pages warn unless the analyst marked a hold-out:

- a column of the table whose value marks the held-out rows (:func:`holdout_by_column`), dropped from the features;
- a second file of held-out rows with the same columns, appended to the table (:func:`append_holdout`);
- "none of these rows was used in training" (every row is a test row, for the metrics).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import IntakeError
from .data import find_value, show

TEST_ROWS = ("split", "holdout", "unseen", "may_be_seen")  # in words: explain_core.vocabulary.TEST_ROWS_WORDS


def holdout_by_column(frame: pd.DataFrame, column: str, value) -> np.ndarray:
    """Positions of the rows whose ``column`` holds ``value`` (the held-out rows), checked: some rows on each side."""
    if column not in frame.columns:
        raise IntakeError(f"Hold-out column {column!r} is not in the table; choose one of: "
                          f"{', '.join(map(str, frame.columns))}.")
    options = list(pd.unique(frame[column].dropna()))
    match = find_value(value, options)
    if match is None:
        raise IntakeError(f"{value!r} does not occur in {column!r}; the held-out rows are marked by one of: "
                          f"{show(options[:10])}.")
    rows = np.flatnonzero((frame[column] == match).to_numpy())
    return check_holdout(rows, len(frame))


def append_holdout(frame: pd.DataFrame, held_out: pd.DataFrame, name: str = "the hold-out file") -> tuple:
    """The table with ``held_out``'s rows appended (its columns in the table's order) and their positions."""
    missing = [str(c) for c in frame.columns if c not in held_out.columns]
    extra = [str(c) for c in held_out.columns if c not in frame.columns]
    if missing or extra:
        raise IntakeError(f"{name} must have the table's columns: " + "; ".join(
            part for part in (f"it lacks {', '.join(missing[:10])}" if missing else "",
                              f"it has {', '.join(extra[:10])} besides" if extra else "") if part) + ".")
    joined = pd.concat([frame, held_out[list(frame.columns)]], ignore_index=True)
    return joined, check_holdout(np.arange(len(frame), len(joined)), len(joined))


def check_holdout(rows: np.ndarray, n: int) -> np.ndarray:
    """Sorted unique positions in [0, n), at least one, and at least one row left to train on."""
    rows = np.unique(np.asarray(rows, dtype=int))
    if len(rows) == 0:
        raise IntakeError("No row is marked as held out; choose the value that marks the test rows.")
    if rows.min() < 0 or rows.max() >= n:
        raise IntakeError(f"Held-out rows must be rows of the table (0 to {n - 1}).")
    if len(rows) == n:
        raise IntakeError("Every row is marked as held out, which leaves none to train on or to build the reference "
                          "from; to say the model saw none of the rows, tick 'none of these rows was used in "
                          "training' with the model instead.")
    return rows
