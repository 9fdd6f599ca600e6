"""The command line has every parameter the pages have: each field of ``setup.Parameters`` (and of its per-method
parts) is a flag of ``explain-core report`` that sets that field, and the choices are the library's own lists."""
from __future__ import annotations

import argparse
from dataclasses import fields

import pytest

from explain_core.analysis import ROW_CHOICES
from explain_core.cli.common import load_params
from explain_core.cli.main import build_parser
from explain_core.intake.data import TASKS
from explain_core.lens import CORRECTIONS, DIRECTIONS
from explain_core.references import ASSIGNMENTS
from explain_core.report.figures import RENDERERS
from explain_core.sev import METHODS as SEV_METHODS
from explain_core.setup import (LINEAR_METHODS, BaselineParameters, CounterfactualParameters, LensParameters,
                                LinearParameters, Parameters, ReferenceParameters, SEVParameters)

PARTS = (SEVParameters, LensParameters, LinearParameters, BaselineParameters, ReferenceParameters,
         CounterfactualParameters)
# a value other than the default for every field, as typed on the command line
GIVEN = {"max_depth": "3", "lens_direction": "i2r", "lens_references": "40", "tau": "0.8", "alpha": "0.1",
         "lens_max_size": "2", "seed": "7", "lens_correction": "none", "lens_budget_rows": "50000", "sigma": "0.5",
         "k": "4", "m": "800", "linear_method": "iht", "time_limit": "3", "lime_samples": "300",
         "shap_background": "30", "reference_kind": "flexible", "flex_tau": "0.3", "flex_k": "3", "clusters": "4",
         "credible": "0.2", "dice_method": "genetic", "dice_count": "2", "sev_method": "exact",
         "sev_budget": "2.5", "cluster_assignment": "nearest", "sev_budget_rows": "50000",
         "flip_order": "signed"}


def actions(command: str) -> dict[str, argparse.Action]:
    """The flags of one sub-command, by destination."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices[command]._actions}


def test_every_parameter_is_a_report_flag_that_sets_it():
    flags = actions("report")
    every = {f.name for part in (Parameters, *PARTS) for f in fields(part)}
    assert every == set(GIVEN)
    assert every <= set(flags), f"no flag for {sorted(every - set(flags))}"
    argv = ["report", "--data", "compas", "--model", "gbdt", "--rows", "3"]
    for name, value in GIVEN.items():
        argv += [min(flags[name].option_strings, key=len), value]
    params = load_params(build_parser().parse_args(argv))
    defaults = Parameters()
    for name, value in GIVEN.items():
        got = getattr(params, name)
        assert got == type(getattr(defaults, name) if getattr(defaults, name) is not None else got)(value), name
        assert got != getattr(defaults, name), name
    assert load_params(build_parser().parse_args(argv[:7])) == defaults  # no flag: the app's defaults


def test_the_audit_takes_the_parameters_of_what_it_computes():
    """SEV, LENS (--lens, with the search's budget: it counts model rows, so an audit is reproducible) and
    LIME/SHAP (--flips)."""
    flags = actions("audit")
    wanted = {f.name for part in (SEVParameters, LensParameters, BaselineParameters) for f in fields(part)}
    assert wanted <= set(flags)


def test_the_lens_budget_flag_counts_rows_and_says_so():
    flag = actions("report")["lens_budget_rows"]
    assert flag.option_strings == ["--lens-budget"] and flag.type is int
    assert "model rows" in flag.help and "not seconds" in flag.help


@pytest.mark.parametrize("command, dest, choices", [
    ("report", "lens_direction", DIRECTIONS), ("report", "lens_correction", CORRECTIONS),
    ("report", "linear_method", tuple(LINEAR_METHODS)), ("report", "task", TASKS), ("report", "renderer", RENDERERS),
    ("audit", "lens_direction", DIRECTIONS), ("audit", "lens_correction", CORRECTIONS), ("audit", "task", TASKS),
    ("audit", "renderer", RENDERERS), ("audit", "rows", tuple(ROW_CHOICES)),
    ("report", "sev_method", SEV_METHODS), ("audit", "sev_method", SEV_METHODS),
    ("report", "cluster_assignment", tuple(ASSIGNMENTS)),
])
def test_choices_are_the_librarys_own_lists(command, dest, choices):
    assert tuple(actions(command)[dest].choices) == tuple(choices)
