"""The one-line answers: the Compare page's verdict (the PDF's "named by most methods") with a banner that says
what each method found, and the Sparser model page's refusal to present a worse model as the result."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from conftest import visible
from explain_core.analysis import Agreement, DatasetSEV
from explain_core.sev.engine import SEVResult
from explain_core.sparse.compare import ModelSparsity, SparsityComparison

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_the_verdict_names_the_features_most_methods_name():
    agree = Agreement(("age", "sex", "priors"), {"SEV": ("age", "priors"), "LENS": ("age",), "LIME": ("priors", "age")})
    assert agree.most_named() == (("age",), 3, 3)
    assert agree.verdict() == "Named by most methods: age — 3 of 3."
    tied = Agreement(("a", "b"), {"SEV": ("a",), "LIME": ("b",)})
    assert tied.most_named() == (("a", "b"), 1, 2)
    assert Agreement(("a",), {"SEV": ()}).verdict() == "No method names a feature for this row."


def sparsity(accuracy: float, sev: list[int]) -> ModelSparsity:
    results = tuple(SEVResult("plus", v, (("a",),), "explained", 1, 6) for v in sev)
    part = DatasetSEV("plus", np.arange(len(sev)), results)
    return ModelSparsity({"test_accuracy": accuracy}, 0.3, {"plus": part, "minus": part}, 0.1)


def comparison(before: ModelSparsity, after: ModelSparsity) -> SparsityComparison:
    return SparsityComparison(before, after, np.arange(3), ("a",))


def test_a_worse_model_is_never_presented_as_the_result():
    base = sparsity(0.686, [1, 2, 2])
    assert comparison(base, sparsity(0.680, [1, 1, 1])).shortfall("all_opt_plus", 1.0) is None  # shorter, −0.6 pt
    lost = comparison(base, sparsity(0.664, [1, 1, 1])).shortfall("all_opt_plus", 1.0)
    assert "0.686 → 0.664" in lost and "smaller λ (e.g. 0.333)" in lost
    longer = comparison(base, sparsity(0.690, [2, 2, 2])).shortfall("all_opt_plus", 3.0)
    assert "did not get shorter (mean 1.67 → 2.00)" in longer and "larger λ (e.g. 9)" in longer


def test_the_compare_page_leads_with_the_verdict_and_a_true_banner(explain_cache_dir):
    at = AppTest.from_file(APP, default_timeout=240).run()
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception and not at.error
    assert any(visible(s.value).startswith("Named by most methods:") for s in at.success)
    banner = [visible(s.label) for s in at.status]
    assert banner and banner[0].startswith("SEV⁻ =") and "LENS:" in banner[0]
    captions = [visible(c) for c in at.caption.values]  # each chart's text alternative under it
    assert any(" names " in c and ("Every method names" in c or "No feature is named by every method" in c)
               for c in captions)
    assert any(c.startswith("Largest attributions — LIME: ") and "; SHAP: " in c for c in captions)
    assert any(c.startswith("SHAP from the base value ") for c in captions)


def test_zero_coefficient_share_counts_exact_zeros_of_linear_models():
    """SEV paper Table 2's global sparsity: the share of a linear model's coefficients that are exactly 0."""
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from explain_core.sparse.compare import zero_coefficient_share

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 8)), rng.integers(0, 2, 300)
    sparse = LogisticRegression(penalty="l1", C=0.05, solver="liblinear").fit(X, y)
    assert zero_coefficient_share(sparse) == np.mean(sparse.coef_ == 0) > 0
    assert zero_coefficient_share(make_pipeline(StandardScaler(), sparse)) == np.mean(sparse.coef_ == 0)
    assert zero_coefficient_share(LogisticRegression().fit(X, y)) == 0.0
    assert zero_coefficient_share(GradientBoostingClassifier(n_estimators=3).fit(X, y)) is None
