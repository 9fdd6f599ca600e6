"""The dataset's encoded rows read off its cache (intake.encoding): the fast value check of "is this frame the
dataset's own rows" against the slow truth, cell by cell, and the encoding read off the cache against a fresh one."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from explain_core.intake.data import make_dataset
from explain_core.intake.demo_models import train_model
from explain_core.intake.encoding import _plain, encoded_model, object_rows, rows_of


def mixed_frame(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """Every kind of column a dataset holds: whole numbers, floats and text with missing values (text as pandas'
    own string type and as plain objects), a categorical, booleans and dates."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[::7] = np.nan
    text = rng.choice(["a", "b", "c"], size=n).astype(object)
    text[::5] = np.nan
    return pd.DataFrame({
        "i": rng.integers(0, 5, size=n), "x": x, "s": pd.array(text, dtype="str"),
        "o": pd.Series(rng.choice(["u", "v"], size=n), dtype=object), "k": pd.Categorical(rng.choice(["p", "q"], n)),
        "b": rng.random(n) > 0.5, "d": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 9, n), "D")})


def same_cell(a, b) -> bool:
    return bool(pd.isna(a) and pd.isna(b)) if pd.isna(a) or pd.isna(b) else bool(a == b)


def truth(frame: pd.DataFrame, source: pd.DataFrame):
    """The slow answer: the positions of ``frame``'s rows when each is, cell by cell, the source row its index names
    (missing equals missing), else None."""
    index = frame.index
    if not pd.api.types.is_integer_dtype(index) or len(index) == 0 or index.min() < 0 or index.max() >= len(source):
        return None
    ok = all(same_cell(frame.iat[r, c], source.iat[int(index[r]), c])
             for r in range(len(frame)) for c in range(frame.shape[1]))
    return index.to_numpy() if ok else None


def edits(source: pd.DataFrame):
    """Frames made of source rows, as they are and edited in one cell of each kind (missing made present, present
    made missing, text and categories changed), re-indexed, out of range: one and several rows."""
    for rows in ([3], [0], [14], [2, 5, 10, 35], list(range(len(source)))):
        frame = source.iloc[rows]
        yield frame
        yield frame.copy()
        for column, value in [("i", 4), ("x", np.nan), ("x", 0.25), ("s", "z"), ("s", np.nan), ("o", "w"),
                              ("k", "q"), ("b", True), ("d", pd.Timestamp("2030-01-01"))]:
            edited = frame.copy()
            if column == "k":
                edited["k"] = edited["k"].cat.add_categories(["z"])
                value = "z"
            edited.iloc[-1, edited.columns.get_loc(column)] = value
            yield edited
        yield frame.set_axis(frame.index + 1)
        yield frame.set_axis(frame.index.astype(float))
    yield source.iloc[[0]].set_axis([len(source)])
    yield source.iloc[[2]].set_axis([-1])


def test_object_rows_are_the_frames_values_as_objects():
    source = mixed_frame()
    for frame in (source, source.iloc[[4]], source.iloc[[0]], source.iloc[[7, 1]]):
        fast, slow = object_rows(frame), frame.to_numpy(dtype=object)
        assert fast.shape == slow.shape and fast.dtype == object
        assert all(same_cell(a, b) for a, b in zip(fast.ravel(), slow.ravel()))


def test_rows_of_matches_the_cell_by_cell_truth_and_never_takes_an_edited_row():
    source = mixed_frame()
    kept = source.to_numpy(dtype=object)
    cases = hits = 0
    for frame in edits(source):
        expected, found = truth(frame, source), rows_of(frame, kept)
        cases += 1
        hits += expected is not None
        if expected is None:
            assert found is None, frame
        else:
            np.testing.assert_array_equal(found, expected)
    assert hits >= 10 and cases - hits >= 40  # both answers are exercised


def test_a_plain_index_is_read_off_its_bounds():
    assert _plain(pd.RangeIndex(5)) and _plain(pd.RangeIndex(0)) and _plain(pd.Index([0, 1, 2]))
    assert not _plain(pd.RangeIndex(1, 6)) and not _plain(pd.RangeIndex(0, 10, 2)) and not _plain(pd.Index([1, 0]))
    assert _plain(pd.RangeIndex(0, 1, 3))  # one row, whatever the step: [0]


@pytest.mark.filterwarnings("ignore:Found unknown categories")  # the edits "z" and "w": categories never seen
@pytest.mark.parametrize("rows", [[3], [0, 9, 17], [11]])
def test_encoded_rows_read_off_the_cache_equal_a_fresh_encoding(rows):
    frame = mixed_frame(80).drop(columns=["d"])
    frame["y"] = (frame["i"] + frame["x"].fillna(0) > 2).astype(int)
    data = make_dataset(frame, "y")
    model = train_model(data, "gbdt").model
    split = encoded_model(model, data.groups)
    columns, source = list(model.columns), data.features
    query = source.iloc[rows]
    np.testing.assert_array_equal(split.encode_rows(query, source, columns), split.encode(query[columns]))
    shown = 0
    for column, value in [("s", "z"), ("s", np.nan), ("x", np.nan), ("o", "w"), ("i", 99), ("k", "p"), ("b", True)]:
        edited = query.copy()
        edited.iloc[0, edited.columns.get_loc(column)] = value
        fresh = split.encode(edited[columns])
        np.testing.assert_array_equal(split.encode_rows(edited, source, columns), fresh)
        shown += not np.array_equal(fresh, split.encode(query[columns]))
    assert shown >= 2  # edits that change the encoding (a cache hit on them would show)
