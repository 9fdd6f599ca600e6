"""JSON/CSV export of results: strict JSON of every result type, tables round-trip, the setup summarised."""
from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from explain_core.analysis import Parameters, agreement, demo_setup, predicted_rows, row_sev
from explain_core.export import to_csv, to_json, to_jsonable


@pytest.fixture(scope="module")
def demo(explain_cache_dir):
    return demo_setup()


def test_sev_result_to_strict_json(demo):
    row = int(predicted_rows(demo)[0])
    ex = row_sev(demo, demo.query(row), Parameters())
    text = to_json(ex, row=row, setup=demo, parameters=Parameters())
    payload = json.loads(text)  # strict: NaN/inf would have raised in json.dumps(allow_nan=False)
    assert payload["row"] == row
    assert payload["parameters"]["max_depth"] == 6 and payload["parameters"]["alpha"] is None
    assert payload["setup"]["dataset"] == "compas" and payload["setup"]["model_key"] == demo.model_key
    result = payload["result"]
    assert result["minus"]["value"] == ex.minus.value
    assert [tuple(e) for e in result["minus"]["explanations"]] == list(ex.minus.explanations)
    assert len(result["minus"]["vertex_scores"]) == len(ex.minus.vertex_scores)


def test_non_finite_numbers_become_null():
    data = {"a": np.array([1.0, np.nan, np.inf]), "b": np.float32(2.5), "c": (np.int64(3), None), "d": pd.NA}
    assert to_jsonable(data) == {"a": [1.0, None, None], "b": 2.5, "c": [3, None], "d": None}


def test_tables_keep_row_names_in_json_and_csv(demo):
    row = int(predicted_rows(demo)[0])
    table = row_sev(demo, demo.query(row), Parameters()).table("minus")
    records = to_jsonable(table)
    assert [r["index"] for r in records] == list(table.index)
    back = pd.read_csv(io.BytesIO(to_csv(table)), index_col=0)
    assert list(back.index) == list(table.index) and list(back.columns) == list(table.columns)
    plain = pd.DataFrame({"x": [1, 2]})
    assert to_csv(plain).decode().splitlines() == ["x", "1", "2"]


def test_agreement_and_setup_summary(demo):
    a = agreement(["f1", "f2", "f3"], top=2)
    assert a.matrix().shape == (3, 0)
    summary = demo.summary()
    assert summary["rows"] == len(demo.dataset.features) and summary["features"] == len(demo.dataset.groups)
    assert summary["metrics"]["test_auc"] == pytest.approx(demo.metrics["test_auc"])
    json.dumps(summary, allow_nan=False)
