"""The PLE encoding's literal counts (issue 29 item 3): §6.1's rule counted by hand on a small frame, the
missing-value rule Table 1's counts imply, and bench/ple_tables.py's accounting against Table 1."""
from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd

from conftest import ROOT
from explain_core import load_demo
from explain_core.intake.data import make_dataset
from explain_core.intake.layout import TableChoices
from explain_core.linear.boolean import fit_boolean_encoder

spec = importlib.util.spec_from_file_location("ple_tables", ROOT / "bench" / "ple_tables.py")
tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tables)


def small_frame() -> pd.DataFrame:
    n = 40
    return pd.DataFrame({
        "spread": np.arange(n, dtype=float),                       # 40 values → 4 quantile bins: 4
        "zeros": np.r_[np.zeros(30), np.arange(1, 11)],            # 75 % zeros: edges 0, 0 repeat → dropped: 0
        "few": np.tile([1.0, 2.0, 3.0], 14)[:n],                   # numeric, 3 values ≤ K → one-hot: 3
        "four": np.tile(list("abcd"), 10),                         # 4 categories ≤ K: 4
        "many": np.r_[["a"] * 10, ["b"] * 9, ["c"] * 8, ["d"] * 6, ["e"] * 4, ["f"] * 3],  # 6 > K: a, b, c, other: 4
        "sex": np.tile(["F", "M"], 20),                            # binary: both values: 2
        "const": np.full(n, 7.0),                                  # constant: 0
        "gappy": np.r_[["x"] * 20, ["y"] * 15, [None] * 5],        # x, y and "missing": 3
        "target": np.tile([0, 1], 20),
    })


def test_literal_counts_by_hand():
    data = make_dataset(small_frame(), "target", choices=TableChoices(kinds={"spread": "numeric", "zeros": "numeric",
                                                                             "few": "numeric", "const": "numeric"}))
    encoder = fit_boolean_encoder(data)
    per = {g: sum(lit.attribute == g for lit in encoder.literals) for g in data.group_names}
    assert per == {"spread": 4, "zeros": 0, "few": 3, "four": 4, "many": 4, "sex": 2, "const": 0, "gappy": 3}
    assert [lit.name for lit in encoder.literals if lit.attribute == "many"][-1] == "many = other"
    assert "gappy = missing" in encoder.names
    # Table 1's Dim / Cat / Num: 20 literals; 5 attributes one-hot (few, four, many, sex, gappy), 1 binned (spread)
    assert tables.encoding_counts(encoder) == (20, 5, 1)
    # the missing-value rule drops gappy (3 literals) and nothing else
    assert tables.encoding_counts(fit_boolean_encoder(tables.without_missing(data))) == (17, 4, 1)


def test_table1_counts_against_the_bundled_data():
    credit = tables.counts_of(load_demo("credit_approval"))
    assert credit == {"printed": (44, 9, 4), "missing dropped": tables.TABLE1["credit_approval"]}  # (17, 4, 2)
    adult = tables.counts_of(tables.paper_layout("adult"))
    assert adult["printed"][0] == 42 and adult["missing dropped"][0] + tables.LAYOUTS["adult"][0] == 42
    compas = tables.counts_of(tables.paper_layout("compas"))
    assert compas["printed"] == (16, 6, 1) and 16 + tables.LAYOUTS["compas"][0] == tables.TABLE1["compas"][0]
    ours = tables.counts_of(load_demo("compas"))
    assert ours["printed"] == (8, 2, 1)
    assert tables.literal_verdict("compas", ours, compas).startswith("explained difference")
    assert tables.literal_verdict("credit_approval", credit, None).startswith("reproduced once")
    assert tables.literal_verdict("california_housing", tables.counts_of(load_demo("california_housing")),
                                  None) == "reproduced"
