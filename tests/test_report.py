"""PDF reports (explain_core.report), the Report page and ``python -m explain_core report``, checked against
explain_core computed here independently: the PDF's text (pypdf), page 1 rendered (pdftoppm), both image renderers.

pdftoppm (Debian poppler-utils) and the plotly export (kaleido + Chromium) are skipped locally when missing and
*fail* when env ``CI`` is set, so a green CI run means they ran.
"""
from __future__ import annotations

import io
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pypdf import PdfReader

import explain_core.report as rep
from explain_core.report import figures
from conftest import missing, visible
from explain_core import SEVParameters, demo_model, explain_sev, load_demo, make_reference
from explain_core.analysis import Parameters, dataset_sev, demo_setup
from explain_core.cli.main import main as cli_main
from explain_core.lens import lens_contexts, opposite_references
from explain_core.linear.compare import FittingOptions, compare
from explain_core.linear.groups import group_space
from explain_core.report.replot import _colour
from explain_core.sev.readings import explanation_lines
from explain_core.views.readings import linear_reading, sev_reading
from explain_core.vocabulary import METHOD_LABELS, format_value

ROOT = Path(__file__).resolve().parent.parent
# small m / few LENS references / few LIME samples: the same code paths, a fraction of the time
PARAMS = Parameters(m=2000, lens_references=40, lime_samples=1000, shap_background=40)
LINEAR_METHODS = ("iht", "exact", "lime", "shap", "shap_k")


# --- independent computations ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo(explain_cache_dir):
    """The demo dataset, model and reference, loaded here without explain_core.analysis."""
    data = load_demo("compas")
    trained = demo_model(data, "gbdt")
    return data, trained, make_reference(data, trained.train_rows)


@pytest.fixture(scope="module")
def positive_rows(demo) -> list[int]:
    data, trained, _ = demo
    rows = trained.test_rows
    return [int(r) for r in rows[trained.model.label(data.features.iloc[rows]) == 1]]


@pytest.fixture(scope="module")
def row(positive_rows) -> int:
    return positive_rows[0]


def shown(result) -> str:
    if result.status == "explained":
        return str(result.value)
    if result.status == "limit":  # a bracket: the proved lower bound, the size of a real flip
        return f"{result.bound}–{result.value}" if result.value is not None else f"≥ {result.bound}"
    return f"> {result.max_depth}" if result.status == "beyond_depth" else "none"


def value_text(v) -> str:
    return v if isinstance(v, str) else format_value(float(v))  # by magnitude (tested in test_readings)


def weight_text(w: float) -> str:
    text = f"{w:.4f}"
    return "0.0000" if text == "-0.0000" else text


# --- the report under test -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def setup(explain_cache_dir):
    return demo_setup("compas", "gbdt")


@pytest.fixture(scope="module")
def report(setup, row):
    return rep.build_row_report(rep.RowResults(setup, row, PARAMS))


@pytest.fixture(scope="module")
def pdfs(report, tmp_path_factory):
    """The report written with the automatic renderer and with the plotly image path disabled."""
    folder = tmp_path_factory.mktemp("reports")
    out = {}
    for renderer in ("auto", "matplotlib"):
        used: list = []
        path = folder / f"{renderer}.pdf"
        data = rep.write_pdf(report, path, image_renderer=renderer, renderers_used=used)
        out[renderer] = (path, data, used)
    return out


def pdf_text(path) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(path).pages)


def lines(path) -> list[str]:
    return [" ".join(line.split()) for line in pdf_text(path).splitlines()]


def flat(text: str) -> str:
    return " ".join(text.split())


# --- the PDF ---------------------------------------------------------------------------------------------------

def test_pdf_is_a4_with_a_sane_page_count_and_title(pdfs, report):
    path, data, _ = pdfs["auto"]
    assert data.startswith(b"%PDF") and path.read_bytes() == data
    reader = PdfReader(path)
    assert 4 <= len(reader.pages) <= 12
    last = reader.pages[-1].extract_text().splitlines()
    assert len([line for line in last if " · page " not in line]) >= 3  # no near-empty last page: text, not a footer
    width, height = (float(v) for v in reader.pages[0].mediabox.upper_right)
    assert (round(width), round(height)) == (595, 842)  # A4 in points
    assert reader.metadata.title == report.title
    assert report.title.startswith("Why did the model predict recidivated (new arrest within two years) for row")


def test_summary_names_dataset_model_metrics_row_and_every_parameter(pdfs, demo, row):
    data, trained, reference = demo
    text = flat(pdf_text(pdfs["auto"][0]))
    assert f"{len(data.features):,} rows, {len(data.groups)} features" in text
    assert f"test accuracy {trained.metrics['test_accuracy']:.3f}, test AUC {trained.metrics['test_auc']:.3f}" in text
    assert reference.description in text
    assert f"row {row} (test row)" in text
    assert f"Model {trained.source} " in text and f"{trained.model.name}; {trained.source}" not in text
    all_lines = lines(pdfs["auto"][0])
    for group in data.groups:  # the row and the reference, one line per feature
        value = data.features.iloc[row][group.columns[0]]
        assert any(line.startswith(f"{group.name} {group.kind} {value_text(value)} "
                                   f"{value_text(reference.values[group.columns[0]])}") for line in all_lines), group
    p = PARAMS
    for expected in (f"SEV maximum depth {p.max_depth}", f"LENS references {p.lens_references}", f"LENS τ {p.tau:g}",
                     f"Linear σ {p.sigma:g}", f"Linear k {p.k}", f"Linear m {p.m}", f"Seed {p.seed}",
                     f"LIME samples {p.lime_samples}", f"SHAP background {p.shap_background}",
                     "LENS α none (exact mode: PS ≥ τ)"):
        assert expected in text, expected


def test_unicode_renders_with_an_embedded_dejavu_font(pdfs):
    path = pdfs["auto"][0]
    text = pdf_text(path)
    for char in ("σ", "τ", "≥", "–", "SEV⁻", "SEV⁺", "‖w‖₀", "✓", "F̂"):  # F̂: shaped, its hat kept
        assert char in text, char
    assert "key demo:" not in text and "key upload:" not in text  # no internal cache key
    fonts = set()
    for page in PdfReader(path).pages:
        for font in page["/Resources"]["/Font"].values():
            font = font.get_object()
            fonts.add(str(font["/BaseFont"]))
            assert font["/Subtype"] == "/Type0"  # an embedded TrueType (CID) font, not a Latin-1 core font
    assert fonts and all("DejaVu" in f for f in fonts), fonts


def test_sev_numbers_and_tables_equal_explain_sev(pdfs, report, demo, row):
    data, trained, reference = demo
    ex = explain_sev(trained.model, data, data.features.iloc[[row]], reference,
                     options=SEVParameters(max_depth=PARAMS.max_depth))
    assert (report.headline.sev_minus, report.headline.sev_plus) == (shown(ex.minus), shown(ex.plus))
    for renderer in ("auto", "matplotlib"):
        all_lines = lines(pdfs[renderer][0])
        assert f"SEV⁻ {shown(ex.minus)} fewest features that, set to the reference, flip the prediction" in all_lines
        assert any(line.startswith(f"SEV⁺ {shown(ex.plus)} fewest features") for line in all_lines)
        for result in (ex.minus, ex.plus):
            n = len([e for e in result.explanations if e])
            assert f"{result.label} {shown(result)} {n} {result.message}" in all_lines
        # the paper's table: one line per minimal explanation, moved features at their new value, — elsewhere
        names = [g.name for g in data.groups]
        query = data.features.iloc[row]
        for result, target in ((ex.minus, reference.values), (ex.plus, query)):
            for i, groups in enumerate(result.explanations, 1):
                cells = [value_text(target[g]) if g in groups else "—" for g in names]
                assert f"Explanation {i} " + " ".join(cells) in all_lines, (result.label, groups)
        assert not any(re.match(r"SEV® (\d+|> \d+|none) ", line) for line in all_lines)  # no restricted features


def test_plain_language_reading_is_in_the_pdf(pdfs, report):
    assert report.reading.startswith("Changing ")
    text = flat(pdf_text(pdfs["auto"][0]))
    assert report.reading in text
    # the linear section leads with the page's own plain words
    assert flat(linear_reading(report.setup, report.linear, ["iht", "exact"])) in text
    assert text.count("F̂ is its average") == 1  # F̂ defined once, in the appendix


def test_lens_factors_equal_an_independent_lens_run(pdfs, report, demo, row):
    data, trained, _ = demo
    query = data.features.iloc[[row]]
    refs = opposite_references(trained.model, data, query, trained.train_rows, n=PARAMS.lens_references,
                               seed=PARAMS.seed)
    context = lens_contexts(trained.model, data, query, refs)[PARAMS.lens_direction]
    result = context.minimal_factors(PARAMS.tau, alpha=PARAMS.alpha)
    assert result.factors, "the demo row should have a τ-minimal factor"
    all_lines = lines(pdfs["auto"][0])
    for f in result.factors:
        start = f"{', '.join(f.groups)} {len(f.groups)} {f.ps:.3f} {f.hits}/{f.samples} —"
        assert any(line.startswith(start) for line in all_lines), start
    smallest = min(result.factors, key=lambda f: (len(f.groups), -f.ps))
    assert report.headline.lens_smallest_factor == ", ".join(smallest.groups)
    text = flat(pdf_text(pdfs["auto"][0]))
    assert f"Smallest LENS factor {', '.join(smallest.groups)} (PS = {smallest.ps:.3f})" in text
    assert f"cumulative PN of their upward closure = {result.cumulative_pn:.3f}" in text


def test_linear_weights_equal_an_independent_comparison(pdfs, report, demo, row):
    data, trained, reference = demo
    space = group_space(trained.model, data, data.features.iloc[[row]], reference, rows=trained.train_rows)
    comp = compare(space, PARAMS.k, PARAMS.sigma, PARAMS.m, seed=PARAMS.seed,
                   options=FittingOptions(methods=LINEAR_METHODS, time_limit=PARAMS.time_limit))
    assert [r.method for r in comp.results] == list(LINEAR_METHODS)
    for renderer in ("auto", "matplotlib"):
        all_lines = lines(pdfs[renderer][0])
        for j, literal in enumerate(space.names):
            row_line = next((line for line in all_lines if line.startswith(literal + " ")), None)
            assert row_line is not None, literal
            numbers = row_line[len(literal) + 1:].split()
            assert numbers == [weight_text(r.w[j]) for r in comp.results], (literal, numbers)
    exact = next(r for r in comp.results if r.method == "exact")
    support = tuple(space.groups[j - 1] for j in np.flatnonzero(np.abs(exact.w) > 1e-12) if j > 0)
    assert report.headline.linear_support == support
    text = flat(pdf_text(pdfs["auto"][0]))
    assert f"Linear support (exact) {', '.join(support)}" in text
    for r in comp.results:  # fidelity and anchoring gap per method
        assert f"{METHOD_LABELS[r.method]} {r.scores.fidelity:.4f}" in text


def test_agreement_matrix_is_written_per_feature(pdfs, report):
    matrix = report.agreement.matrix()
    assert list(matrix.columns)[:3] == ["SEV⁻", "SEV⁺", "LENS R2I"]
    all_lines = lines(pdfs["auto"][0])
    for group in matrix.index:
        marks = " ".join(["✓"] * int(matrix.loc[group].sum()))
        expected = f"{group} {marks} {int(matrix.loc[group].sum())}" if marks else f"{group} 0"
        assert expected in all_lines, expected
    # every method that names a feature in SEV names one of SEV⁻'s minimal explanations
    assert set(report.agreement.named["SEV⁻"]) == {g for e in report.sev.minus.explanations for g in e}


def test_both_renderers_write_the_same_text(pdfs, report):
    (auto, _, used_auto), (mpl, _, used_mpl) = pdfs["auto"][0:3], pdfs["matplotlib"][0:3]
    assert pdf_text(auto) == pdf_text(mpl)
    assert used_mpl == ["matplotlib"] * len(report.figures) and len(report.figures) == 6  # + counterfactuals, PDP
    assert used_auto == [rep.resolve_renderer("auto")] * 6


def test_plotly_static_export_is_used_when_a_browser_exists(pdfs):
    if not rep.plotly_export_available():
        missing("plotly static export unavailable (kaleido or Chromium missing)")
    assert pdfs["auto"][2] == ["plotly"] * 6


def test_one_kaleido_browser_draws_each_figure_as_a_fresh_page_would(report):
    """One browser per process, its tab not reloaded between figures (figures.KaleidoBrowser): a figure drawn after
    others is byte for byte kaleido's own export from a fresh browser."""
    if not rep.plotly_export_available():
        missing("plotly static export unavailable (kaleido or Chromium missing)")
    import kaleido

    sizes = {name: rep.figure_size(fig) for name, fig in report.figures.items()}
    for name in ("sev", "lens"):
        figures.kaleido_png(report.figures[name], *sizes[name])
    browser = figures._KALEIDO["browser"]
    drawn_after_others = figures.kaleido_png(report.figures["agreement"], *sizes["agreement"])
    assert browser is not None and figures._KALEIDO["browser"] is browser
    width, height = sizes["agreement"]
    opts = {"format": "png", "width": width, "height": height, "scale": rep.FIGURE_SCALE}
    try:
        fresh = kaleido.calc_fig_sync(report.figures["agreement"], kopts={"mathjax": False}, opts=opts)
    except RuntimeError as race:  # kaleido's JavascriptError: its own fresh page evaluated before its script had
        assert "kaleido_scopes is not defined" in str(race)  # loaded (seen once, at load 4.6): asked once more
        fresh = kaleido.calc_fig_sync(report.figures["agreement"], kopts={"mathjax": False}, opts=opts)
    assert drawn_after_others == fresh


def test_the_export_browser_closes_when_idle_and_comes_back_for_the_next_figure(report, monkeypatch):
    """Issue 55: after a PDF the server kept kaleido's Chromium (11 processes, about 1.1 GB) for good. It now closes
    ``KALEIDO_IDLE_S`` after its last figure, and the next figure starts a fresh one."""
    if not rep.plotly_export_available():
        missing("plotly static export unavailable (kaleido or Chromium missing)")
    import psutil

    def chromium() -> list:
        alive = []
        for p in psutil.Process().children(recursive=True):
            try:
                if "chrom" in p.name().lower() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:  # ended while listed
                pass
        return alive

    figures.close_browser()
    monkeypatch.setattr(figures, "KALEIDO_IDLE_S", 1.0)
    size = rep.figure_size(report.figures["lens"])
    first = figures.kaleido_png(report.figures["lens"], *size)
    assert figures._KALEIDO["browser"] is not None and chromium()
    deadline = time.monotonic() + 20
    while (figures._KALEIDO["browser"] is not None or chromium()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert figures._KALEIDO["browser"] is None and not chromium()
    assert figures.kaleido_png(report.figures["lens"], *size) == first  # a fresh browser draws the same PNG
    figures.close_browser()
    assert not chromium()


def test_two_reports_in_a_row_have_their_own_text_and_figures(setup, positive_rows, pdfs, tmp_path):
    second, used = tmp_path / "second.pdf", []
    rep.write_pdf(rep.build_row_report(rep.RowResults(setup, positive_rows[1], PARAMS)), second, renderers_used=used)
    first_text, second_text = flat(pdf_text(pdfs["auto"][0])), flat(pdf_text(second))
    assert f"row {positive_rows[1]} (test row)" in second_text and f"row {positive_rows[0]} (test row)" in first_text
    assert f"row {positive_rows[0]} (test row)" not in second_text
    assert used == pdfs["auto"][2]  # the same renderer for both
    first_images, second_images = ([image.data for page in PdfReader(path).pages for image in page.images]
                                   for path in (pdfs["auto"][0], second))
    assert len(first_images) == len(second_images) == 6 and first_images != second_images


def test_text_is_shaped_only_where_a_combining_mark_needs_it():
    """harfbuzz shaping (slow) places the hat of F̂; every other character renders the same without it."""
    from explain_core.report.writer import Writer, _document, needs_shaping

    assert needs_shaping("plain", "F̂ (fit)") and not needs_shaping("SEV⁻ ≥ τ → σ ‖w‖₀ ✓ – ℓ∞")
    w = Writer(_document("footer", "title", "subject"))
    w.pdf.add_page()
    w.text("SEV⁻ ≥ τ")
    assert w.pdf.text_shaping is None
    w.table(["Method", "F̂ (fit)"], [["IHT", "0.04"]])
    assert w.pdf.text_shaping
    w.note("no marks here")
    assert w.pdf.text_shaping is None


@pytest.mark.parametrize("renderer", ["auto", "matplotlib"])
def test_page_one_renders_and_is_not_blank(pdfs, renderer, tmp_path):
    if shutil.which("pdftoppm") is None:
        missing("pdftoppm not found; install Debian's poppler-utils")
    from PIL import Image

    subprocess.run(["pdftoppm", "-r", "50", "-f", "1", "-l", "1", "-png", str(pdfs[renderer][0]),
                    str(tmp_path / "page")], check=True, timeout=60)
    (png,) = tmp_path.glob("page*.png")
    pixels = np.asarray(Image.open(png).convert("L"), dtype=float)
    assert pixels.shape[0] > pixels.shape[1] > 300  # portrait
    assert pixels.std() > 15
    assert (pixels < 128).mean() > 0.01  # some dark ink: text


@pytest.mark.parametrize("renderer", ["auto", "matplotlib"])
def test_figures_are_embedded_and_not_blank(pdfs, renderer):
    from PIL import Image

    images = [image for page in PdfReader(pdfs[renderer][0]).pages for image in page.images]
    assert len(images) == 6  # SEV, LENS, linear, agreement, counterfactuals, partial dependence
    for image in images:
        pixels = np.asarray(Image.open(io.BytesIO(image.data)).convert("L"), dtype=float)
        assert pixels.shape[1] >= rep.FIGURE_WIDTH_PX
        assert pixels.std() > 10


# --- figures: the matplotlib re-plot draws the plotly figures' own numbers --------------------------------------

def test_matplotlib_replot_draws_the_plotly_trace_data(report):
    sizes = {name: rep.figure_size(fig) for name, fig in report.figures.items()}
    weights = report.figures["linear"]
    mfig = rep.matplotlib_figure(weights, *sizes["linear"])
    drawn = sorted(round(p.get_width(), 9) for p in mfig.axes[0].patches)
    expected = sorted(round(float(v), 9) for trace in weights.data for v in trace.x)
    assert drawn == expected and len(drawn) == sum(len(t.x) for t in weights.data)

    curve = report.lens.pn_curve
    mfig = rep.matplotlib_figure(report.figures["lens"], *sizes["lens"])
    assert np.allclose(mfig.axes[0].lines[0].get_ydata(), curve["cumulative_pn"])
    assert np.allclose(mfig.axes[0].lines[0].get_xdata(), curve["tau"])

    matrix = report.agreement.matrix()
    mfig = rep.matplotlib_figure(report.figures["agreement"], *sizes["agreement"])
    (mesh,) = mfig.axes[0].collections
    assert np.array_equal(np.asarray(mesh.get_array()).reshape(matrix.shape), matrix.astype(int).to_numpy())

    cube = report.figures["sev"]
    mfig = rep.matplotlib_figure(cube, *sizes["sev"])
    points = sum(len(c.get_offsets()) for c in mfig.axes[0].collections)
    assert points == 2 ** len(report.setup.dataset.groups)
    paths = next(t for t in cube.data if t.meta and t.meta.get("role") == "paths")
    line = next(ln for ln in mfig.axes[0].lines if np.allclose(ln.get_color()[:3], _colour(paths.line.color)[:3]))
    assert np.array_equal(np.isnan(line.get_xdata()), np.array([v is None for v in paths.x]))


def test_auto_falls_back_to_matplotlib_without_a_browser(report, monkeypatch):
    monkeypatch.setattr(figures, "find_chromium", lambda: None)
    assert rep.resolve_renderer("auto") == "matplotlib"
    png, used = rep.figure_png(report.figures["lens"], "auto")
    assert used == "matplotlib" and png.startswith(b"\x89PNG")


def test_a_failing_export_falls_back_under_auto_and_raises_when_forced(report, monkeypatch):
    def broken(*args, **kwargs):
        raise rep.RenderError("no browser today")

    monkeypatch.setattr(figures, "kaleido_png", broken)
    monkeypatch.setattr(figures, "plotly_export_available", lambda: True)
    png, used = rep.figure_png(report.figures["agreement"], "auto")
    assert used == "matplotlib" and png.startswith(b"\x89PNG")
    with pytest.raises(rep.RenderError, match="no browser today"):
        rep.figure_png(report.figures["agreement"], "plotly")
    with pytest.raises(Exception, match="renderer must be one of"):
        rep.figure_png(report.figures["agreement"], "svg")


# --- the plain-language reading ---------------------------------------------------------------------------------

def test_sev_reading_sentences(setup, positive_rows, demo):
    _, _, reference = demo
    values = dataset_sev(setup, positive_rows[:80], PARAMS).values
    one = next(r for r, v in zip(positive_rows, values) if v == 1)
    two = next(r for r, v in zip(positive_rows, values) if v == 2)
    other = "did not recidivate within two years"  # the data card's words

    def strongest(ex):
        return [m.group for m in explanation_lines(ex, "minus", setup.model.threshold)[0].moves]

    ex = explain_sev(setup.model, setup.dataset, setup.query(one), reference)
    group = strongest(ex)[0]
    sentence = sev_reading(setup, ex)
    assert sentence.startswith(f"Changing {group} to the reference value ({value_text(reference.values[group])}) "
                               f"alone flips the prediction to {other}")
    assert sentence.endswith(".") and sentence.count(". ") == 0  # one sentence

    ex = explain_sev(setup.model, setup.dataset, setup.query(two), reference)
    a, b = strongest(ex)
    sentence = sev_reading(setup, ex)
    assert sentence.startswith(f"Changing {a} and {b} together to their reference values "
                               f"({value_text(reference.values[a])}, {value_text(reference.values[b])}) flips the "
                               f"prediction to {other}; no single feature does")

    ex = explain_sev(setup.model, setup.dataset, setup.query(two), reference, options=SEVParameters(max_depth=1))
    if ex.minus.status == "limit":  # a bracket (issue 52): never "no set of up to 1 feature"
        assert sev_reading(setup, ex).startswith(f"SEV⁻ is between 2 and {ex.minus.upper}: ")
    else:  # the greedy path's pair met the proved lower bound 2: the value, proved
        assert (ex.minus.value, ex.minus.certified) == (2, True)
        assert sev_reading(setup, ex).startswith("Changing ") and "no single feature does" in sev_reading(setup, ex)

    held = setup.with_restricted([group])
    ex = explain_sev(held.model, held.dataset, held.query(one), reference, restricted=(group,))
    assert f"(with {group} held at this row's values)" in sev_reading(held, ex)

    # the headline names the strongest flip, as the SEV page and the report's list do, not the search's first
    for r, v in zip(positive_rows, values):
        ex = explain_sev(setup.model, setup.dataset, setup.query(r), reference)
        if v == 2 and list(ex.minus.explanations[0]) != strongest(ex):
            a, b = strongest(ex)
            assert sev_reading(setup, ex).startswith(f"Changing {a} and {b} together")
            break
    else:
        pytest.fail("no row of SEV⁻ = 2 whose strongest explanation is not the search's first")


def test_sections_can_be_left_out(setup, row):
    small = rep.build_row_report(rep.RowResults(setup, row, PARAMS), ("sev",))
    assert small.lens is None and small.linear is None and small.agreement is None
    assert set(small.figures) == {"sev"}
    text = flat(pdf_text(io.BytesIO(rep.write_pdf(small, image_renderer="matplotlib"))))
    assert "SEV — sparse explanation values" in text and "LENS — necessity" not in text
    assert "Appendix" not in text
    with pytest.raises(Exception, match="Unknown report sections"):
        rep.build_row_report(rep.RowResults(setup, row, PARAMS), ("sev", "charts"))


# --- the Report page --------------------------------------------------------------------------------------------

def test_report_page_previews_the_headline_numbers(demo, row):
    from streamlit.testing.v1 import AppTest

    data, trained, reference = demo
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["params"] = PARAMS
    at.run()
    at.switch_page("app_pages/report.py").run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == []
    at_row = at.session_state["row"]
    ex = explain_sev(trained.model, data, data.features.iloc[[at_row]], reference)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"SEV⁻": shown(ex.minus), "SEV⁺": shown(ex.plus)}
    markdown = "\n".join(visible(m.value) for m in at.markdown)
    assert "**Smallest LENS factor**" in markdown and "**Linear support (exact)**" in markdown
    assert [b.key for b in at.get("download_button")] == ["report_download"]
    assert len(at.get("plotly_chart")) == 6
    at.checkbox(key="report_section_lens").uncheck()
    at.checkbox(key="report_section_agreement").uncheck()
    at.run()
    assert not at.exception, at.exception
    assert "Smallest LENS factor" not in "\n".join(m.value for m in at.markdown)
    assert len(at.get("plotly_chart")) == 4  # SEV, linear, counterfactuals, partial dependence


# --- the command line -------------------------------------------------------------------------------------------

CLI_FAST = ["-m", "300", "--lens-references", "20", "--lime-samples", "300", "--shap-background", "20",
            "--renderer", "matplotlib"]


def run_cli(*args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "explain_core", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ})


def test_cli_writes_one_pdf_per_row_and_the_index(tmp_path, positive_rows, demo):
    data, trained, reference = demo
    rows = positive_rows[:2]
    out = tmp_path / "reports"
    done = run_cli("report", "--data", "data/compas.csv", "--model", "gbdt", "--rows", ",".join(map(str, rows)),
                   "--out", str(out), *CLI_FAST)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    pdfs = sorted(out.glob("*.pdf"))
    assert [p.name for p in pdfs] == sorted(f"compas_row{r}.pdf" for r in rows)
    for path in pdfs:
        assert 4 <= len(PdfReader(path).pages) <= 12
    index = pd.read_csv(out / "index.csv", dtype=str, keep_default_na=False)
    assert list(index.columns) == list(rep.INDEX_COLUMNS)
    assert index["row"].astype(int).tolist() == rows
    for r, entry in zip(rows, index.to_dict("records")):
        ex = explain_sev(trained.model, data, data.features.iloc[[r]], reference)
        assert (entry["sev_minus"], entry["sev_plus"], entry["sev_restricted"]) == (shown(ex.minus), shown(ex.plus), "")
        assert entry["prediction"] == "recidivated (new arrest within two years)"
        assert math.isclose(float(entry["score"]), float(trained.model.score(data.features.iloc[[r]])[0]),
                            abs_tol=1e-6)
        assert entry["pdf"] == f"compas_row{r}.pdf" and entry["lens_smallest_factor"] and entry["linear_support"]
        assert f"SEV⁻ {shown(ex.minus)} fewest features" in pdf_text(out / entry["pdf"])


def test_cli_predicted_positive_with_limit_uses_the_flagged_test_rows(tmp_path, positive_rows, capsys):
    code = cli_main(["report", "--data", "compas", "--model", "gbdt", "--rows", "predicted-positive", "--limit", "2",
                     "--out", str(tmp_path), "--sections", "sev", "--quiet", "--renderer", "matplotlib"])
    assert code == 0, capsys.readouterr().err
    index = pd.read_csv(tmp_path / "index.csv")
    assert index["row"].tolist() == positive_rows[:2]


def test_cli_json_writes_each_result_in_the_download_format(tmp_path, positive_rows, demo, capsys):
    """--json: beside each PDF, every result of the row as the app's JSON download, decoding to the same result."""
    from explain_core.results import json_context, load_result

    data, trained, reference = demo
    row = positive_rows[0]
    code = cli_main(["report", "--data", "compas", "--model", "gbdt", "--rows", str(row), "--out", str(tmp_path),
                     "--sections", "sev,linear", "-m", "300", "-k", "3", "--quiet", "--renderer", "matplotlib",
                     "--json"])
    assert code == 0, capsys.readouterr().err
    files = sorted(p.name for p in tmp_path.glob("*.json"))
    assert files == [f"compas_row{row}.linear.json", f"compas_row{row}.sev.json"]
    sev = load_result((tmp_path / f"compas_row{row}.sev.json").read_text())
    ex = explain_sev(trained.model, data, data.features.iloc[[row]], reference)
    assert (sev.minus.value, sev.plus.value, sev.minus.explanations) == (ex.minus.value, ex.plus.value,
                                                                         ex.minus.explanations)
    text = (tmp_path / f"compas_row{row}.linear.json").read_text()
    linear = load_result(text)
    assert type(linear).__name__ == "LinearExplanation" and (linear.k, linear.m) == (3, 300)
    assert json_context(text)["row"] == row and json_context(text)["parameters"]["m"] == 300


@pytest.mark.parametrize("args, message", [
    (["--model", "nosuchmodel"], "Unknown model 'nosuchmodel'"),
    (["--rows", "999999"], "Row 999999 is not in the data"),
    (["--data", "data/missing.csv"], "Data file 'data/missing.csv' not found"),
    (["--rows", "3,x"], "--rows must be row positions"),
    (["--rows", "9-3"], "runs backwards"),
    (["--limit", "0"], "--limit must be at least 1"),
    (["--sections", "sev,charts"], "Unknown report sections charts"),
    (["--model", "model.pkl"], "Model file 'model.pkl' not found"),
    (["-m", "5"], "m must be a whole number of at least 10, not 5"),
    (["--alpha", "2"], "The test level α must be in (0, 1), not 2.0"),
    (["--tau", "1.5"], "τ must be in (0, 1], not 1.5"),
])
def test_cli_bad_arguments_exit_non_zero_with_one_line(args, message, tmp_path, capsys):
    base = {"--data": "data/compas.csv", "--model": "gbdt", "--rows": "3", "--out": str(tmp_path / "out")}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    argv = ["report", *[x for pair in base.items() for x in pair]]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out" / "index.csv").exists()


def test_cli_process_reports_a_bad_argument_in_one_line(tmp_path, capsys):
    done = run_cli("report", "--data", "data/compas.csv", "--model", "nosuchmodel", "--rows", "3",
                   "--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and "Traceback" not in done.stderr
    assert "Unknown model 'nosuchmodel'" in done.stderr
    with pytest.raises(SystemExit) as missing:  # the parser's own refusal, in this process (a process costs 7 s)
        cli_main(["report", "--data", "data/compas.csv"])
    err = capsys.readouterr().err
    assert missing.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "required: --model, --rows" in err
