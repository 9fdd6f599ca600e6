"""The Sparser model page (AppTest): it trains with tiny epochs, shows the library's before/after table, offers the
model as .skops and .onnx (both load back with its scores), and making the trained model the session's changes the
SEV page."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest

from conftest import visible

from explain_core.analysis import DEFAULT_DEMO, demo_setup
from explain_core.intake.loading import load_model_file
from explain_core.intake.models import wrap_model
from explain_core.setup import Parameters
from explain_core.sparse.compare import KIND_LABELS, compare_sparsity
from explain_core.sparse.training import TrainingSettings, sparse_setup, train_sparse
from explain_core.views import summaries

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_sparser_model_page_trains_compares_and_switches_the_session(explain_cache_dir, monkeypatch, tmp_path):
    drawn: dict = {}  # file name → the data of its button as last drawn (a callable: written when clicked)
    original = DeltaGenerator.download_button

    def capture(self, label, data, *args, **kwargs):
        if kwargs.get("key") in ("sparse_download", "sparse_download_onnx"):
            drawn[kwargs["file_name"]] = data
        return original(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", capture)
    at = AppTest.from_file(APP, default_timeout=240).run()
    at.switch_page("app_pages/sparser_model.py").run()
    assert not at.exception and not at.error
    at.selectbox(key="sparse_objective").set_value("all_opt_minus")
    at.number_input(key="sparse_warmup").set_value(1)
    at.number_input(key="sparse_epochs").set_value(1)
    at.button(key="FormSubmitter:sparse_form-Train").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]

    base = demo_setup(*DEFAULT_DEMO)
    settings = TrainingSettings(objective="all_opt_minus", warmup_epochs=1, sev_epochs=1)
    trained = train_sparse(base, settings)
    after = sparse_setup(base, trained)
    compared = compare_sparsity(base, after, Parameters().sev)
    want = compared.table()
    shown = at.dataframe[0].value
    assert list(shown.index) == list(want.index)
    np.testing.assert_allclose(shown.to_numpy(dtype=float), want.to_numpy(dtype=float), rtol=1e-9, equal_nan=True)
    assert len(at.get("plotly_chart")) == 4  # distributions, Sankey, prevalence, training history
    kind, captions = compared.kinds[0], [visible(c) for c in at.caption.values]  # the charts' text alternatives
    assert summaries.sankey_text(compared.transitions(kind), label=KIND_LABELS[kind]) in captions
    assert summaries.history_text(trained.history) in captions
    keys = [b.key for b in at.get("download_button")]
    assert "sparse_download" in keys and "sparse_download_onnx" in keys
    assert set(drawn) == {"sparser_model.skops", "sparser_model.onnx"}
    downloads = {name: data() if callable(data) else data for name, data in drawn.items()}  # the clicks
    frame = base.dataset.features
    for name, content in downloads.items():  # both files load back as uploads, with the trained model's scores
        (tmp_path / name).write_bytes(content)
        reloaded = wrap_model(load_model_file(tmp_path / name), base.dataset, positive_class=after.model.positive_class)
        np.testing.assert_allclose(reloaded.score(frame), after.model.score(frame), rtol=1e-5, atol=1e-6)

    at.switch_page("app_pages/sev.py").run()
    before_banner = [i.value for i in at.info]
    at.switch_page("app_pages/sparser_model.py").run()
    at.button(key="sparse_use").click().run()
    assert at.session_state["setup"].model_key == after.model_key
    assert any("trained on this page" in visible(i.value) for i in at.info)
    at.switch_page("app_pages/sev.py").run()
    assert not at.exception and not at.error
    banner = [visible(i.value) for i in at.info]
    assert banner != before_banner and any(after.model.name in b for b in banner)


def test_the_page_explains_that_a_regression_cannot_be_trained(explain_cache_dir):
    at = AppTest.from_file(APP, default_timeout=240).run()
    at.selectbox(key="home_demo").select("california_housing").run()
    at.selectbox(key="home_kind").select("l2_lr").run()
    at.button(key="home_load").click().run()
    at.switch_page("app_pages/sparser_model.py").run()
    assert not at.exception and not at.error
    assert any("two-class classification" in i.value for i in at.info)
