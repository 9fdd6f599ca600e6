"""LIME-C / SHAP-C's order is a parameter (issue 54): ``absolute`` (|attribution|, the default) or ``signed``
(attribution toward the predicted class, the paper's ordering, bench/sev_fig4.py), both named; the row's flip paths
use the order chosen. Checked against an independent cumulative alignment scored by the model."""
from __future__ import annotations

import numpy as np
import pytest

from explain_core.analysis import demo_setup, predicted_rows, row_baselines
from explain_core.baselines import FLIP_ORDERS
from explain_core.errors import IntakeError
from explain_core.parameters import FLIP_ORDER_NAMES, Parameters


@pytest.fixture(scope="module")
def compas():
    return demo_setup("compas", "gbdt")


def aligned_count(setup, query, reference, values: np.ndarray, order: str) -> int | None:
    """By hand: the groups sorted by the order's key (ties in dataset order), aligned to the reference one more at a
    time, each row scored; the first count whose label differs from the query's."""
    label = int(setup.model.label(query)[0])
    key = -np.abs(values) if order == "absolute" else (-values if label == 1 else values)
    ranked = [setup.dataset.groups[i] for i in np.argsort(key, kind="stable")]
    row = query.copy()
    for count, group in enumerate(ranked, 1):
        for column in group.columns:
            row[column] = reference.values[column]
        if int(setup.model.label(row.infer_objects())[0]) != label:
            return count
    return None


def test_the_flip_order_is_a_named_parameter_and_each_path_uses_it(compas):
    assert set(FLIP_ORDER_NAMES) == set(FLIP_ORDERS) and Parameters().flip_order == "absolute"
    assert "default" in FLIP_ORDER_NAMES["absolute"] and "the paper's" in FLIP_ORDER_NAMES["signed"]
    s = compas
    query = s.query(int(predicted_rows(s)[0]))
    reference = s.reference_for(query)
    for order in FLIP_ORDERS:
        params = Parameters(flip_order=order, lime_samples=300, shap_background=20)
        assert params.baselines.flip_order == order
        found = row_baselines(s, query, params)
        for attribution, path in ((found.lime, found.lime_flip), (found.shap, found.shap_flip)):
            assert path.order == attribution.ranked(order, int(s.model.label(query)[0]))
            assert path.count == aligned_count(s, query, reference, attribution.values, order)
    with pytest.raises(IntakeError, match="LIME-C / SHAP-C order"):
        Parameters(flip_order="by magnitude")
