"""LENS Table 4 (German credit, input 998, I2R): the paper's factors from our contexts in the authors' setting
(bench/lens_tables.py builds it: their recoded columns, their ExtraTrees, their 100 references)."""
from __future__ import annotations

import importlib.util

import pytest

from conftest import ROOT
from explain_core.lens import ContextOptions, lens_contexts
from explain_core.lens.causal import ScmSettings, causal_contexts, fit_scm

spec = importlib.util.spec_from_file_location("lens_tables", ROOT / "bench" / "lens_tables.py")
tables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tables)


@pytest.fixture(scope="module")
def papers_setup():
    return tables.the_papers_setup()


def test_independent_i2r_lists_the_papers_five_factors_with_their_ps(papers_setup):
    model, data, query, references = papers_setup
    ours = tables.listed(lens_contexts(model, data, query, references, ContextOptions(directions=["i2r"]))["i2r"])
    assert set(ours) == set(tables.PAPER["independent"])
    assert int(model.label(query)[0]) == 0  # "a single input example with a negative prediction"
    for factor, ps in tables.PAPER["independent"].items():  # the same 100 references: exact
        assert ours[factor] == pytest.approx(ps)


def test_causal_i2r_on_the_authors_graph_and_sampler_lists_the_papers_factors(papers_setup):
    model, data, query, references = papers_setup
    scm = fit_scm(data, tables.authors_graph(), settings=ScmSettings(classifier="forest", propagate="later"))
    ours = tables.listed(causal_contexts(model, data, query, references, scm,
                                         ContextOptions(directions=["i2r"]))["i2r"])
    assert set(ours) == set(tables.PAPER["causal"])
    for factor, ps in tables.PAPER["causal"].items():  # a sampled context: within 3 standard errors at n = 100
        assert ours[factor] == pytest.approx(ps, abs=3 * (ps * (1 - ps) / 100) ** 0.5 + 0.01)
