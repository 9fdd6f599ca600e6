"""One presentation vocabulary for the app's pages and the PDF report: method labels, definitions, number and
value formatting, the "unchanged" mark, and the one escape that makes user-supplied names (columns, categories,
file names) show literally in markdown; :mod:`explain_core.views.readings` reads each method's result in plain words
with it.

No Streamlit here; pages and :mod:`explain_core.report` both import it, so a label or a number reads the same
on screen and on paper.
"""
from __future__ import annotations

import html
import math
import re
from typing import Sequence

import numpy as np
import pandas as pd


UNCHANGED = "—"
MISSING = "missing"

DEMO_LABELS = {"compas": "COMPAS recidivism", "adult": "Adult income", "german_credit": "German credit",
               "california_housing": "California housing", "student_performance_math": "Student performance (maths)",
               "credit_approval": "Credit approval"}
METHOD_LABELS = {"iht": "IHT", "exact": "exact (MIP)", "lime": "LIME (k−1 + intercept)", "shap": "SHAP (dense)",
                 "shap_k": "SHAP (top k−1 + bias)", "l1_relax": "ℓ1 relaxation",
                 "maple": "MAPLE (dense)"}
LINEAR_CHOICE_LABELS = {"iht": "IHT (fast, no certificate)", "exact": "Exact (certified optimum)", "both": "Both"}
SWEEP_LABELS = {"k": "k (sparsity)", "sigma": "σ (locality)", "m": "m (sample size)"}
METRIC_COLUMNS = {"empirical_fidelity": "F̂ (fit sample)", "fidelity": "fidelity F (fresh sample)",
                  "relevance": "relevance R", "relevance_method": "R computed by", "anchoring_gap": "|w·x − f(x)|",
                  "support_size": "‖w‖₀", "max_abs_weight": "max |w_j|", "bound": "(1+e^−σ)^k · F",
                  "status": "exact fit status", "gap": "optimality gap", "seconds": "seconds", "detail": "detail"}
DIRECTION_LABELS = {"r2i": "R2I — reference to input", "i2r": "I2R — input to reference"}
SEV_HELP = {
    "minus": "SEV⁻: the fewest features of the row that, set to the reference's values, flip the prediction.",
    "plus": "SEV⁺: the fewest features that, moved from the reference to the row's values, already give the "
            "row's prediction.",
    "restricted": "SEV®: SEV⁻ with the restricted features held at the row's values.",
    "tree": "SEVᵀ: the fewest features of the row that, changed to values seen in the training data, make the "
            "model predict the other class (found on the model's own trees).",
}
SEV_METHOD_LABELS = {"auto": "Automatic", "bfs": "Breadth-first search", "exact": "Exact solver"}
SEV_METHOD_HELP = ("Automatic: the exact solver for tree ensembles and additive models on more than 12 features, "
                   "else the breadth-first search. Breadth-first search: any model, up to the maximum depth. Exact "
                   "solver: tree ensembles (scikit-learn, XGBoost, LightGBM, CatBoost) and linear models, proven "
                   "minimal at any width.")

PAPERS = {
    "sev": "Sun, Y., Chen, Z., Orlandi, V., Wang, T. and Rudin, C. (2024). Sparse and Faithful Explanations "
           "Without Sparse Models. Proceedings of AISTATS 2024 (“Sparse Explanation Value”, SEV).",
    "lens": "Watson, D. S., Gultchin, L., Taly, A. and Floridi, L. (2021). Local Explanations via Necessity and "
            "Sufficiency: Unifying Theory and Practice. Conference on Uncertainty in Artificial Intelligence "
            "(UAI 2021); arXiv:2103.14651.",
    "ple": "Koriche, F., Lagniez, J.-M. and Tran, C. (2026). Probabilistic Linear Explanations. arXiv:2609.19077 "
           "(extended version of the UAI 2025 paper).",
    "lime": "Ribeiro, M. T., Singh, S. and Guestrin, C. (2016). “Why Should I Trust You?”: Explaining the "
            "Predictions of Any Classifier. KDD 2016.",
    "shap": "Lundberg, S. M. and Lee, S.-I. (2017). A Unified Approach to Interpreting Model Predictions. "
            "NeurIPS 2017.",
    "ids": "Sun, Y., Wang, T. and Rudin, C. (2024). Improving Decision Sparsity. NeurIPS 2024; arXiv:2410.20483 "
           "(SEV^F, SEV^©, credibility, All-Opt^© / All-Opt^F).",
    "dice": "Mothilal, R. K., Sharma, A. and Tan, C. (2020). Explaining Machine Learning Classifiers through Diverse "
            "Counterfactual Explanations. FAT* 2020 (DiCE; the dice-ml package).",
}

DEFINITIONS = (
    ("SEV hypercube (SEV Def. 1)", "Vertices are the 2^p mixes of this row and the reference, one feature at a "
     "time; edges join mixes that differ in one feature. Each vertex is scored by the model."),
    ("SEV⁻ (SEV Def. 3)", "The fewest features that, moved from the row to the reference, flip the prediction "
     "(shortest path from the row to a vertex of the other class); each such set is a minimal explanation."),
    ("SEV⁺ (SEV Def. 2)", "The fewest features that, moved from the reference to the row's values, give the "
     "row's prediction (shortest path from the reference to a vertex of the row's class)."),
    ("SEV® (SEV Def. 4)", "SEV⁻ with the restricted features held at the row's values; “none” when no "
     "movable set flips the prediction."),
    ("SEVᵀ (Improving Decision Sparsity §4)", ("The fewest features changed, each to a value seen in the training "
     "data, that move the row into a region the model predicts in the other class; for one tree, the cheapest "
     "leaf of the other class (its violated split conditions reported beside).")),
    ("Exact SEV engines", ("For tree ensembles, OR-Tools CP-SAT over one choice per feature and one indicator per "
     "reachable leaf, the decision a constraint on the summed leaf values; for additive models, a sort of the "
     "per-feature changes. Every explanation is re-scored by the model itself.")),
    ("Reference", "Mean of numeric / mode of categorical features over the training rows of the opposite "
     "class (SEV §4), unless set otherwise in the setup above."),
    ("Probability of sufficiency PS (LENS Def. 2)", "PS(c, y) = P(f(z) = y | c(z) = 1): among samples of the "
     "context where factor c is applied, the share predicted y."),
    ("Probability of necessity PN (LENS Def. 3)", "PN(C, y) = P(c(z) = 1 for some c ∈ C | f(z) = y): the share "
     "of samples reaching y that are interventions on a factor of C."),
    ("τ-minimal factor (LENS Def. 4)", "A factor with PS ≥ τ (or, in sample mode, whose binomial test rejects "
     "PS < τ at level α) none of whose sub-factors qualify; Alg. 1 finds them all."),
    ("Contexts R2I / I2R (LENS §5)", "R2I sets a factor's features of each reference to the row's values "
     "(sufficiency for the row's class); I2R sets the row's features to each reference's values."),
    ("Anchored k-sparse linear explanation (PLE §3)", "A weight vector w over the literals with w·x = f(x) "
     "(anchoring) and ‖w‖₀ ≤ k; z ∈ {−1, +1}^d, literal 0 is the bias."),
    ("Neighbourhood D_{x,σ} (PLE §1, §4)", "P(z) ∝ exp(−σ/2·‖z − x‖₁): σ = 0 is uniform on the cube, larger σ "
     "keeps samples closer to the row."),
    ("Fidelity error F (PLE Def. 6)", "F(w) = E_{z∼D}[¼(w·z − f(z))²]; F̂ is its average over the m fitting "
     "samples, minimised by IHT (approximately) and the exact MIP fit (with a certificate)."),
    ("Relevance error R (PLE §1)", "R(w) = E[¼(f(z) − f(x))² | w·z = w·x]: how often samples that the "
     "explanation cannot tell from the row get another output; bounded by (1 + e^{−σ})^k·F (Lemma 4)."),
    ("LIME and SHAP", "LIME fits a weighted sparse linear surrogate on perturbations; KernelSHAP estimates "
     "Shapley values. Both are shown for comparison; neither is anchored or sparse by construction."),
    ("Agreement", "For each method, the features it names for this row (rules in section “Agreement”); the "
     "matrix shows where the methods concur."),
    ("SEV^F, flexible reference (Improving Decision Sparsity §2)", (
        "SEV⁻ where each numeric reference value may move within ±τ quantile rank of the other class's values "
        "(τ = 0.2, k = 5 values tried, each a value a real case has): the fewest features whose move to some values "
        "of those windows flips the prediction.")),
    ("SEV^©, typical cases (Improving Decision Sparsity §3)", (
        "SEV⁻ against the typical case of the other class nearest to the row: k-medoids clusters of its training "
        "rows (K by the medoid silhouette), each represented by a real row the model predicts in that class.")),
    ("Credibility (Improving Decision Sparsity §5)", (
        "Where an explanation lands, as a percentile: the share of real cases of the other class (training rows the "
        "density model did not see) that are less typical than that point under a Gaussian mixture fitted on the "
        "training rows of that class. 50 % is an ordinary case.")),
    ("Counterfactual metrics", (
        "ℓ0: features changed; ℓ∞ / ℓ1: the largest / summed change of a numeric feature, in standard deviations "
        "of the other class's training rows; seconds: the method's time for the row.")),
)

REFERENCE_KIND_LABELS = {"single": "One reference (SEV¹)", "flexible": "Flexible reference (SEV^F)",
                         "cluster": "Typical cases (SEV^©)", "tree": "Values seen in training (SEVᵀ)"}
REFERENCE_KIND_HELP = {
    "single": "The setup's reference: the mean / mode of the other class's training rows (or one real row).",
    "flexible": "Each numeric reference value may move a little (±τ quantile rank of the other class), so fewer "
                "features need to change and they change less.",
    "cluster": "Several typical cases of the other class, each a real training row; the row is explained against "
               "the one it reaches by the fewest changes (or, in the settings, the one nearest to it).",
    "tree": "Tree models only: the fewest features to change, each to a value seen in the training rows, that the "
            "model's own trees lead to the other class; found exactly, checked by the model (no credible search: "
            "its credibility is shown).",
}

ASSIGNMENT_LABELS = {"sparsest": "the one reached by the fewest changes", "nearest": "the nearest one"}
ASSIGNMENT_HELP = ("Fewest changes: the row is explained against every typical case and keeps the one it reaches by "
                   "changing the fewest features (of those, the nearest). Nearest: against the typical case nearest "
                   "to it (the paper's rule), one search a row.")

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|$<>~:&=\"'])")


def html_text(text) -> str:
    """``text`` with ``<``, ``>``, ``&`` and ``$`` as entities, for plotly labels and hover texts (plotly reads a
    subset of HTML there, and a text between two ``$`` as LaTeX, which a static export cannot typeset); plotly shows
    the characters themselves."""
    return html.escape(str(text), quote=False).replace("$", "&#36;")


def plain(text) -> str:
    """``text`` escaped so that markdown (and the HTML inside it) shows it literally: user-supplied names such as
    ``**bold**`` or ``![x](http://…)`` are never rendered or fetched. Every page passes user strings through it."""
    return _MARKDOWN.sub(r"\\\1", str(text)).replace("\n", " ")


# ---------------------------------------------------------------------------------------------------
# Numbers and values


def format_number(x: float) -> str:
    """A number by its magnitude: whole numbers as such, 2 decimals from 1 up (36.65), 3 significant digits
    below 1 (0.0123), none from 1000 up; never "-0" (a value that rounds to zero reads "0")."""
    x = float(x)
    if not math.isfinite(x):
        return "n/a" if math.isnan(x) else ("∞" if x > 0 else "−∞")
    size = abs(x)
    if x.is_integer() and size < 1e15:
        text = str(int(x))
    elif size >= 999.995:
        text = f"{x:.0f}"
    elif size >= 1:
        text = f"{x:.2f}"
    elif size >= 1e-9:
        text = f"{x:.{2 - math.floor(math.log10(size))}f}".rstrip("0").rstrip(".")
    else:
        text = "0"
    return "0" if float(text) == 0 else text


def format_significant(x: float, digits: int = 4) -> str:
    """A score or prediction to ``digits`` significant digits, never in scientific notation (244900, 0.1192)."""
    x = float(x)
    if not math.isfinite(x):
        return format_number(x)
    text = np.format_float_positional(x, precision=digits, unique=False, fractional=False, trim="-")
    return "0" if float(text) == 0 else text


def format_value(value) -> str:
    """A feature value for a table or sentence: numbers by magnitude (:func:`format_number`), text as is,
    missing as "missing"."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return format_number(value)
    return str(value)


def fmt_weight(w: float) -> str:
    """A linear weight: 4 decimals, never "-0.0000"."""
    text = f"{float(w):.4f}"
    return "0.0000" if text == "-0.0000" else text


def fmt_ps(ps: float) -> str:
    return f"{float(ps):.3f}"


def fmt_metric(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return f"{float(v):.4f}"


def fmt_p(p) -> str:
    return UNCHANGED if p is None else f"{float(p):.3g}"


def fmt_cost(cost: float) -> str:
    return "∞" if not math.isfinite(cost) else f"{cost:.2f}"


def factor_text(groups: Sequence[str]) -> str:
    return ", ".join(groups) or "∅ (no feature)"


def count_noun(n: float, noun: str, plural: str | None = None) -> str:
    """``1 feature``, ``2 features``, ``1,200 rows``: a count with its noun in the right number."""
    return f"{n:,.0f} {noun if n == 1 else plural or noun + 's'}"


def join_words(words: Sequence[str]) -> str:
    """a / a and b / a, b and c."""
    words = list(words)
    if not words:
        return ""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def text_table(table: pd.DataFrame) -> pd.DataFrame:
    """A table with every cell as text (:func:`format_value`), so mixed columns render cleanly."""
    return table.map(format_value).astype(str)


# ---------------------------------------------------------------------------------------------------
# Where a model's test metrics come from (explain_core.intake.holdout)

TEST_ROWS_WORDS = {
    "split": "the test rows of the seeded 80/20 split, which the model was not trained on",
    "holdout": "the rows marked as held out, which the model was not trained on",
    "unseen": "every row of the table, marked as not used in training",
    "may_be_seen": "the app's own seeded 80/20 split of the table",
}


def metrics_caveat(metrics: dict) -> str:
    """The warning an uploaded model's metrics need when no hold-out was marked; "" when their test rows are
    known to be unseen (a model trained here, or a marked hold-out)."""
    if metrics.get("test_rows") != "may_be_seen":
        return ""
    return ("These metrics are computed on the app's own 80/20 split of this table. The model was trained elsewhere, "
            "possibly on some of these very rows, so its test metrics can look better than they are. To get honest "
            "test metrics, mark a hold-out: a column that marks the test rows, a second file of test rows (both "
            "under 1 · Data, when uploading), or, when the model saw none of these rows, tick 'None of this table's "
            "rows was used to train this model'.")
