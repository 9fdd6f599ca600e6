"""One JSON format: every JSON download of every page is the result's own ``to_json`` with the row, the setup and the
parameters beside it, and decodes with ``type(result).from_json`` (and :func:`load_result`) back to an equal result."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest

from explain_core.analysis import DEFAULT_DEMO, Parameters, demo_setup
from explain_core.results import Explanation, json_context, load_result
from explain_core.sparse.training import TrainingSettings, sparse_setup, train_sparse

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SMALL = Parameters(max_depth=3, m=300, k=3, lens_references=20, lime_samples=200, shap_background=20,
                   time_limit=5.0)
# every JSON button of the pages (its key) and the result type it writes
EXPECTED = {"json_sev_minus": "SEVResult", "json_sev_plus": "SEVResult", "json_lens_factors": "LensResult",
            "json_lens_pn_curve": "LensReport", "json_lens_ps_by_size": "AttributionCurve",
            "json_lens_recourse": "LensResult", "json_lin_weights": "LinearExplanation",
            "json_lin_metrics": "Comparison", "json_lin_sweep": "Sweep", "json_cmp": "Agreement",
            "json_sparse_table": "SparsityComparison"}


@pytest.fixture
def downloads(monkeypatch) -> dict[str, bytes]:
    """Every JSON download the pages offer, by button key, built as a click would build it."""
    found: dict[str, bytes] = {}
    original = DeltaGenerator.download_button

    def capture(self, label, data, *args, **kwargs):
        if kwargs.get("mime") == "application/json":
            found[kwargs["key"]] = data() if callable(data) else data
        return original(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", capture)
    return found


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def test_every_json_download_decodes_to_its_result(explain_cache_dir, downloads):
    base = demo_setup(*DEFAULT_DEMO)
    after = sparse_setup(base, train_sparse(base, TrainingSettings(warmup_epochs=1, sev_epochs=1)))
    after.training.comparison(after, SMALL.sev)  # computed once here; the page reads it back
    at = run(AppTest.from_file(APP, default_timeout=240))
    at.session_state["params"] = SMALL
    at.session_state["sparse_run"] = (base, after)
    for which in ("minus", "plus"):
        at.session_state[f"sev_table_{which}"] = True  # the SEV tables (and their downloads) sit in expanders
    for page in ("sev", "lens", "linear", "compare", "sparser_model"):
        at.switch_page(f"app_pages/{page}.py")
        run(at)
        if page == "linear":  # the sweep's download appears once a sweep has run
            at.selectbox(key="lin_sweep_parameter").set_value("k")
            at.text_input(key="lin_sweep_values").set_value("1, 2")
            at.button(key="lin_sweep_run").click()
            run(at)
    assert set(downloads) == set(EXPECTED)
    row = at.session_state["row"]
    for key, text in downloads.items():
        payload = json.loads(text)  # strict JSON
        assert payload["meta"]["type"] == EXPECTED[key], key
        result = load_result(text)
        cls = Explanation.types[EXPECTED[key]]
        assert type(result) is cls and type(cls.from_json(text)) is cls
        assert json.loads(result.to_json())["result"] == payload["result"], key  # lossless
        context = json_context(text)
        assert context["row"] == row and context["setup"]["dataset"] == DEFAULT_DEMO[0], key
        assert context["parameters"]["m"] == SMALL.m and context["parameters"]["max_depth"] == SMALL.max_depth
    assert json_context(downloads["json_sparse_table"])["training"]["settings"]["sev_epochs"] == 1
    sparse = load_result(downloads["json_sparse_table"])
    assert sparse.table().equals(after.training.comparison(after, SMALL.sev).table())
