"""The charts' text alternatives (explain_core.views.summaries) say what the charts draw: their numbers are checked
against independent computations (scikit-learn, pandas) on the demo and on small tables."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import confusion_matrix, roc_auc_score

from explain_core.analysis import demo_setup
from explain_core.inspection.performance import model_performance
from explain_core.views import summaries


@pytest.fixture(scope="module")
def perf(explain_cache_dir):
    return model_performance(demo_setup())


def test_the_model_charts_in_words(perf):
    setup = demo_setup()
    rows = setup.test_rows
    y, scores = setup.dataset.y[rows], setup.model.score(setup.dataset.features.iloc[rows])
    (tn, fp), (fn, tp) = confusion_matrix(y, setup.model.labels_of(scores))
    roc = summaries.roc_text(perf)
    assert f"area under the curve {roc_auc_score(y, scores):.3f}" in roc
    assert f"flags {tp / (tp + fn):.0%} of the rows that are positive, with {fp / (fp + tn):.0%}" in roc
    assert f"{tp / (tp + fp):.0%} of the flagged rows are positive" in summaries.pr_text(perf)
    words = summaries.confusion_text(perf)
    assert f"of {tn + fp:,} rows truly did not recidivate within two years, {tn:,} ({tn / (tn + fp):.0%})" in words
    assert f"of {fn + tp:,} rows truly recidivated (new arrest within two years), {tp:,}" in words
    train = setup.dataset.y[setup.train_rows]
    assert f"train: {int(train.sum()):,} recidivated (new arrest within two years) of {len(train):,} rows" in \
        summaries.balance_text(perf)
    gaps = (perf.calibration["observed"] - perf.calibration["predicted"]).abs()
    assert f"{gaps.mean():.2f} from the predicted probability on average" in summaries.calibration_text(perf)


def test_lens_and_linear_charts_in_words():
    curve = pd.DataFrame({"tau": [0.1, 0.5, 0.9, 1.0], "cumulative_pn": [0.9, 0.7, 0.4, np.nan],
                          "factors": [5, 3, 1, 0]})
    assert summaries.pn_curve_text(curve, 0.88) == ("Cumulative PN against τ: at τ = 0.9 it is 0.40 (1 factor); it "
                                                   "falls from 0.90 to 0.40 as τ rises from 0.1 to 1.")
    sizes = pd.DataFrame({"size": [1, 2], "lens_ps": [0.6, 0.95], "attribution_ps": [0.5, 0.7]})
    text = summaries.ps_by_size_text(sizes)
    assert "k = 1: LENS 0.60, top-k SHAP 0.50; k = 2: LENS 0.95, top-k SHAP 0.70" in text
    assert text.endswith("The largest gap is 0.25.")
    weights = pd.DataFrame({"iht": [0.5, 0.0, -0.7], "shap": [0.1, 0.2, 0.3]}, index=["bias", "keeps a", "keeps b"])
    assert summaries.weights_text(weights) == ("Weights — IHT: 2 non-zero, largest keeps b (-0.700) and bias "
                                               "(+0.500); SHAP (dense): 3 non-zero, largest keeps b (+0.300), keeps a "
                                               "(+0.200) and bias (+0.100).")
    sweep = pd.DataFrame({"method": ["IHT", "IHT"], "k": [4, 2], "mean": [0.1, 0.3]})
    assert summaries.sweep_text(sweep, "k") == "Mean relevance against k: IHT from 0.300 at k = 2 to 0.100 at k = 4."
    prevalence = pd.DataFrame({"group": ["a", "b", "c"], "share": [0.2, 0.6, 0.05], "count": [2, 6, 1]})
    assert summaries.prevalence_text(prevalence, "SEV⁻") == ("Features most often in a row's minimal SEV⁻ explanation: "
                                                             "b (60% of the rows), a (20% of the rows) and c (5% of "
                                                             "the rows).")


def test_the_other_pages_charts_in_words():
    """Text alternatives the SEV, Compare and Sparser model pages can show beside their charts."""
    assert summaries.sev_values_text([1, 1, 2, None, 3, 1]) == ("SEV⁻ of 6 rows: 3 at 1, 1 at 2, 1 at 3, 1 not "
                                                                "explained.")
    flips = pd.Series([2.0, np.nan, 1.0, 2.0])  # a flip-number column: NaN = never flips
    assert summaries.sev_values_text(flips, "LIME-C", "never flip") == "LIME-C of 4 rows: 1 at 1, 2 at 2, 1 never flip."
    matrix = pd.DataFrame({"SEV": [True, True, False], "LIME": [True, False, True]}, index=["age", "sex", "priors"])
    assert summaries.agreement_text(matrix) == ("SEV names age and sex; LIME names age and priors. Every method "
                                                "names age.")
    text = summaries.waterfall_text(["a", "b", "c"], [0.3, -0.1, 0.05], 0.2)
    assert text == ("SHAP from the base value 0.2 to 0.45: pushed up most by a (0.3) and c (0.05), down most by b "
                    "(-0.1).")
    moves = pd.DataFrame({"before": ["2", "2", "3", "1", "2"], "after": ["1", "1", "1", "1", "2"]})
    assert summaries.sankey_text(moves) == ("Each test row's SEV⁺ before → after (5 rows, 2 unchanged): 2 from 2 to "
                                            "1, 1 from 1 to 1, 1 from 2 to 2, 1 from 3 to 1.")
    history = [{"epoch": 1, "total": 0.9, "bce": 0.6, "sev": 0.3}, {"epoch": 2, "total": 0.5, "bce": 0.45,
                                                                    "sev": 0.05}]
    assert summaries.history_text(history) == ("Loss per epoch over 2 epochs: total from 0.900 to 0.500, BCE from "
                                               "0.600 to 0.450, ℓ_SEV from 0.300 to 0.050.")
    assert "LIME: b (0.9), a (0.2) and c (0.1)" in summaries.attribution_text(["a", "b", "c"],
                                                                            {"LIME": [0.2, -0.9, 0.1]})


def test_every_text_alternative_is_shown_on_a_page():
    """Each chart's text alternative is drawn under its chart by some page (app_pages/ or ui/): none is left unused."""
    root = Path(__file__).resolve().parent.parent
    used = {node.id if isinstance(node, ast.Name) else node.attr  # a name in code, not only in its import
            for path in [*root.glob("app_pages/*.py"), *root.glob("ui/*.py")]
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, (ast.Name, ast.Attribute))}
    texts = {name for name, f in inspect.getmembers(summaries, inspect.isfunction)
             if f.__module__ == summaries.__name__ and not name.startswith("_")}
    assert len(texts) >= 20 and not texts - used, f"shown on no page: {sorted(texts - used)}"

