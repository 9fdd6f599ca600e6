"""One plug per method (explain_core.registry): a toy method registered here, in this file only, reaches every
surface — the Report page's sections, the report (its contents, figure, PDF section), the ``report`` and ``audit``
commands' options, the audit's columns and the JSON files — with the numbers the toy computes, checked against the
model's own scores."""
from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pyarrow as pa
import pytest
from pypdf import PdfReader

import explain_core.report as rep
from explain_core.analysis import Parameters, demo_setup
from explain_core.audit import AuditOptions, explain_partition, schema
from explain_core.cli.main import build_parser
from explain_core.registry import AuditColumns, Method, Option, Section, method, methods, register, unregister
from explain_core.results import Explanation, load_result

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, eq=False)
class ToyScore(Explanation):
    """The toy method's result: the row's score and how many feature groups it has."""

    score: float
    groups: int
    method = "toy"


def toy_compute(results) -> ToyScore:
    return ToyScore(results.score, len(results.setup.dataset.groups))


TOY = Method("toy", "Toy", toy_compute, figure=lambda r: go.Figure(go.Bar(x=["score"], y=[r.get("toy").score])),
             reading=lambda r: f"The toy reads a score of {r.get('toy').score:.4f}.",
             section=Section("Toy", ("the row's score, read by a toy",), "A toy method (a test's)."),
             options=(Option("--toy-scale", "toy_scale", float, "the toy's scale"),),
             audit=AuditColumns((("toy_score", pa.float64()),),
                                lambda setup, query, label, params, memo: {"toy_score": setup.model.score(query)[0]}),
             json_type=ToyScore)


@pytest.fixture(scope="module")
def toy():
    register(TOY)
    yield TOY
    unregister("toy")


@pytest.fixture(scope="module")
def compas():
    return demo_setup("compas", "gbdt")


@pytest.fixture(scope="module")
def toy_report(toy, compas):
    return rep.build_row_report(rep.RowResults(compas, int(compas.test_rows[0]), Parameters()), ("toy",))


def test_the_registry_lists_the_built_in_methods_then_the_toy(toy):
    assert [m.name for m in methods()] == ["sev", "lens", "linear", "baselines", "agreement", "counterfactuals", "toy"]
    assert method("toy") is toy
    with pytest.raises(Exception, match="registered already"):
        register(Method("toy", "Another toy", toy_compute))
    assert rep.report_sections() == ("sev", "lens", "linear", "agreement", "counterfactuals", "toy", "dependence",
                                     "appendix")


def test_the_report_reads_the_toy_and_writes_its_section(toy_report, compas):
    row = int(compas.test_rows[0])
    score = float(compas.model.score(compas.query(row))[0])
    toy = toy_report.plugged["toy"]
    assert toy == ToyScore(score, len(compas.dataset.groups))
    assert toy_report.contents()[1] == ("1. Toy", ["the row's score, read by a toy"])
    assert toy_report.figures["toy"].data[0].y[0] == pytest.approx(score)
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(
        rep.write_pdf(toy_report, image_renderer="matplotlib"))).pages)
    assert "1. Toy" in text and f"The toy reads a score of {score:.4f}." in text


def test_the_json_files_hold_the_toy_and_read_back(toy_report):
    files = toy_report.json_files()
    name = toy_report.file_name.removesuffix(".pdf") + ".toy.json"
    assert list(files) == [name]
    assert load_result(files[name]) == toy_report.plugged["toy"]


def test_both_commands_take_the_toys_option_and_the_report_its_section(toy):
    parser = build_parser()
    args = parser.parse_args(["report", "--data", "compas", "--model", "gbdt", "--rows", "1", "--toy-scale", "2.5",
                              "--sections", "sev,toy"])
    assert args.toy_scale == 2.5 and rep.check_sections(args.sections.split(",")) == ("sev", "toy")
    args = parser.parse_args(["audit", "--data", "compas", "--model", "gbdt", "--out", "x", "--toy-scale", "1",
                              "--method", "toy"])
    assert args.toy_scale == 1.0 and args.methods == ["toy"]


def test_the_audit_adds_the_toys_columns(toy, compas):
    options = AuditOptions(rows="all", methods=("toy",))
    assert schema(False, options).field("toy_score").type == pa.float64()
    frame = compas.dataset.features.iloc[:4]
    table = explain_partition(compas, frame, 0, Parameters(max_depth=2), options).to_pandas()
    np.testing.assert_allclose(table["toy_score"], compas.model.score(frame))
    with pytest.raises(Exception, match="no audit columns"):
        AuditOptions(methods=("sev",))


def test_the_report_page_lists_the_toy_and_shows_its_figure(toy):
    """The Report page's section checkboxes come from the registry: the toy's alone builds a report of the toy."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    for name in rep.report_sections():
        at.session_state[f"report_section_{name}"] = name == "toy"
    at.switch_page("app_pages/report.py").run()
    assert not at.exception, at.exception
    box = at.checkbox(key="report_section_toy")
    assert box.label == "Toy" and box.value and box.help == "A toy method (a test's)."
    assert [t.label for t in at.tabs] == ["Toy"]
    assert "- **1\\. Toy**: the row\\'s score, read by a toy" in [m.value for m in at.markdown]  # the contents
