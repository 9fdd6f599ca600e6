"""Every reading names the features its own result holds (issue 55): for SEV, LENS, the linear explanations,
LIME/SHAP and the counterfactuals, on three demos and two uploads (one with a one-hot block and categorical
features), the sentence a page shows, the chart's labels and the PDF's text (pypdf) name the same features, and
those are the features the result itself weights, moves or holds (read here from the raw result: literal names,
weight vectors, changed values), never by position.

The first case is the one the issue reported: on COMPAS (GBDT) row 16 ``sex`` is at the reference and has no
literal, and the Linear page's sentence said the rule "uses sex and age" while its weights are on age and
prior_offense_count.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from pypdf import PdfReader
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import explain_core.report as rep
from explain_core.report.sections import COUNTERFACTUAL_MAX_POINTS
from explain_core.analysis import Parameters, demo_setup, predicted_rows, row_lens_contexts, row_reference_sev
from explain_core.intake.data import make_dataset
from explain_core.intake.layout import TableChoices
from explain_core.setup import make_setup, model_from_upload
from explain_core.sev.readings import explanation_lines
from explain_core.views.compare import attribution_figure
from explain_core.views.linear import folded_weights, weights_figure
from explain_core.views.readings import lens_reading, linear_reading, reference_reading
from explain_core.vocabulary import METHOD_LABELS

PARAMS = Parameters(m=2000, lens_references=40, lime_samples=1000, shap_background=40)
SECTIONS = ("sev", "lens", "linear", "agreement", "counterfactuals")
CASES = ("compas", "german_credit", "student_performance_math", "loans upload", "pets upload")


def loans_upload():
    """Three numeric features, a logistic regression uploaded as .skops (loaded in the sandbox)."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"income": rng.normal(50, 12, 300).round(1), "debt": rng.normal(20, 6, 300).round(1),
                          "tenure": rng.integers(0, 25, 300)})
    frame["approved"] = np.where(frame.income - 1.5 * frame.debt + rng.normal(0, 5, 300) > 20, "yes", "no")
    model = LogisticRegression(max_iter=2000).fit(frame[["income", "debt", "tenure"]], frame["approved"])
    data = make_dataset(frame, "approved", positive_class="yes", name="loans")
    return make_setup(data, model_from_upload(data, sio.dumps(model), "loans.skops"))


def pets_upload():
    """Multi-literal features: a one-hot block (pet_cat, pet_dog → pet), two categorical columns the uploaded
    pipeline one-hot encodes itself, and a numeric one; gradient boosting uploaded as .skops."""
    rng = np.random.default_rng(0)
    n = 400
    pet = rng.integers(0, 3, n)
    frame = pd.DataFrame({"x": rng.normal(size=n).round(2), "color": rng.choice(["red", "green", "blue"], n),
                          "flag": rng.choice(["yes", "no"], n), "pet_cat": (pet == 0).astype(int),
                          "pet_dog": (pet == 1).astype(int)})
    logit = frame.x + (frame.color == "red") - (frame.flag == "no") + 1.5 * frame.pet_dog
    frame["y"] = (logit + rng.normal(scale=0.5, size=n) > 0.5).astype(int)
    encode = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["color", "flag"])],
                               remainder="passthrough")
    pipe = make_pipeline(encode, GradientBoostingClassifier(random_state=0)).fit(frame.drop(columns="y"), frame.y)
    data = make_dataset(frame, "y", name="pets", choices=TableChoices(onehot_groups={"pet": ["pet_cat", "pet_dog"]}))
    return make_setup(data, model_from_upload(data, sio.dumps(pipe), "pets.skops"))


def case_setup(case: str):
    if case == "compas":
        return demo_setup("compas", "gbdt"), 16  # the row: sex is at the reference, so has no literal
    setup = {"german_credit": lambda: demo_setup("german_credit", "l2_lr"),
             "student_performance_math": lambda: demo_setup("student_performance_math", "gbdt"),
             "loans upload": loans_upload, "pets upload": pets_upload}[case]()
    return setup, int(predicted_rows(setup, setup.test_rows)[0])


@pytest.fixture(scope="module", params=CASES)
def case(request, explain_cache_dir, tmp_path_factory):
    """One row's report (every section but dependence) and its PDF's text, flattened."""
    setup, row = case_setup(request.param)
    report = rep.build_row_report(rep.RowResults(setup, row, PARAMS), SECTIONS)
    path = tmp_path_factory.mktemp("named") / "report.pdf"
    rep.write_pdf(report, path, image_renderer="matplotlib")
    text = "\n".join(page.extract_text() for page in PdfReader(path).pages)
    return report, text


def flat(text: str) -> str:
    """Whitespace collapsed, and the soft break the PDF's tables put inside long names removed."""
    return " ".join(text.replace("\u200b", "").split())


def between(text: str, start: str, end: str) -> str:
    """The text from ``start`` to the next ``end`` (a cell of page 1's table, however its lines wrapped)."""
    return text.split(start, 1)[1].split(end, 1)[0]


def named(text: str, groups) -> set[str]:
    """The features ``groups`` whose name appears in ``text`` as a whole word."""
    return {g for g in groups if re.search(rf"(?<![\w]){re.escape(g)}(?![\w])", text)}


def literal_group(literal: str, groups) -> str:
    """The feature a literal "keeps <feature> = <value>" is about, read from its name (the longest that fits)."""
    [*_, found] = sorted((g for g in groups if literal.startswith(f"keeps {g} = ")), key=len)
    return found


def weighted(linear, method: str) -> set[str]:
    """The features ``method``'s w weights, from the w and the literal names alone."""
    w = linear.comparison.result(method).w
    groups = linear.groups
    return {literal_group(linear.names[j], groups) for j in np.flatnonzero(np.abs(w) > 1e-12) if j > 0}


def test_the_linear_sentence_chart_and_pdf_name_the_rule_s_own_features(case):
    report, text = case
    setup, linear = report.setup, report.linear
    groups = setup.dataset.group_names
    sentence = linear_reading(setup, linear, ("iht", "exact"))  # as the Linear page and the PDF call it
    [label] = re.findall(r"The best rule here \((.+?)\) uses", sentence)
    method = {v: k for k, v in METHOD_LABELS.items()}[label]
    uses = sentence.split(" uses ", 1)[1].split(";", 1)[0]
    truth = weighted(linear, method)
    assert named(uses, groups) == truth, (sentence, truth)
    # the chart the page draws: the bars of that method with a non-zero weight
    chart = weights_figure(folded_weights(linear.weights()).rename(columns=METHOD_LABELS))
    [bars] = [t for t in chart.data if t.name == label]
    assert {literal_group(y, groups) for y, x in zip(bars.y, bars.x) if abs(x) > 1e-12 and y.startswith("keeps ")} \
        == truth
    # the PDF: the sentence itself, and page 1's support of the method it names
    pdf = flat(text)
    assert flat(sentence) in pdf
    support = report.headline.linear_method
    value = between(pdf, f"Linear support ({support})", "features with a non-zero weight")
    assert named(value, groups) == weighted(linear, support)


def test_the_sev_sentence_names_the_moves_the_pdf_lists(case):
    report, text = case
    setup, ex = report.setup, report.sev
    which = report.sev_shown
    result = ex.result(which)
    assert flat(report.reading) in flat(text)
    groups = setup.dataset.group_names
    if result.status != "explained":
        return
    truth = {frozenset(e) for e in result.explanations}
    lines = explanation_lines(ex, which, setup.model.threshold)
    sentence = report.reading.split(" flips the prediction", 1)[0]
    mentioned = named(report.reading, groups)
    if result.value == 1:  # the first (up to) three single features, strongest first
        assert mentioned == {next(iter(line.groups)) for line in lines[:3]}
    else:
        assert frozenset(named(sentence, groups)) == frozenset(lines[0].groups)
    assert all(frozenset(line.groups) in truth for line in lines)
    # the PDF's bullets for that result: each names the features of one minimal explanation
    start = flat(text).index(f"{result.label}: Moving")
    bullets = re.findall(r"• (.+?) (?:flips|already gives)", flat(text)[start:])[:len(lines)]
    assert [frozenset(named(b, groups)) for b in bullets[:1]] == [frozenset(lines[0].groups)]


def test_the_lens_sentence_and_the_pdf_name_the_smallest_factor(case):
    report, text = case
    setup, lens = report.setup, report.lens
    groups = setup.dataset.group_names
    factors = lens.factors.factors
    if not factors:
        return
    smallest = min(len(f.groups) for f in factors)
    best = max((f for f in factors if len(f.groups) == smallest), key=lambda f: f.ps)
    context = row_lens_contexts(setup, report.query, PARAMS)[lens.direction]
    sentence = lens_reading(setup, lens, context)  # the LENS page's answer
    lead = sentence.split(" is enough", 1)[0]
    assert named(lead, groups) == set(best.groups)
    assert named(between(flat(text), "Smallest LENS factor", "(PS ="), groups) == set(best.groups)


def test_lime_and_shap_bars_carry_their_own_feature_names(case):
    report, text = case
    base, groups = report.baselines, report.setup.dataset.group_names
    for att in (base.lime, base.shap):
        fig = attribution_figure(att.groups, {att.method: att.values}, units={att.method: att.output})
        [bars] = [t for t in fig.data if t.meta["role"] == "attribution"]
        shown = dict(zip(bars.y, bars.x))
        for group, value in zip(att.groups, att.values):
            if group in shown:
                assert shown[group] == pytest.approx(value)
        assert set(shown) <= set(groups)
    # the PDF's agreement table: the top three by |attribution| are ticked in the method's column
    matrix = report.agreement.matrix()
    for att in (base.lime, base.shap):
        order = sorted(range(len(att.groups)), key=lambda i: (-abs(att.values[i]), i))
        top = {att.groups[i] for i in order[:3] if abs(att.values[i]) > 0}
        assert set(matrix.index[matrix[att.method]]) == top


def test_counterfactual_points_name_the_features_they_change(case):
    report, text = case
    setup, c = report.setup, report.counterfactuals
    row = c.query.to_dict()
    for method in c.methods:
        for point in method.points:  # the features named are those whose values the point changes
            changed = {g.name for g in setup.dataset.groups
                       if any(col in point.values and not _same(point.values[col], row[col]) for col in g.columns)}
            assert changed == set(point.groups) and point.l0 == len(changed), (method.method, point)
    packed = re.sub(r"\s+", "", text.replace("\u200b", ""))  # table cells wrap anywhere
    for feats in c.table()["features changed"].head(COUNTERFACTUAL_MAX_POINTS):
        assert re.sub(r"\s+", "", feats) in packed
    # the reference page's sentence (the single reference): the features of its closest explanation
    result = row_reference_sev(setup, report.query, PARAMS)
    if result.first is not None:
        sentence = reference_reading(setup, result).split(" flips the prediction", 1)[0]
        assert named(sentence, setup.dataset.group_names) == set(result.first.groups)


def _same(a, b) -> bool:
    try:
        return bool(np.isclose(float(a), float(b)))
    except (TypeError, ValueError):
        return a == b
