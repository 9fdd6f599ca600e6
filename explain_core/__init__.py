"""explain_core: sparse, faithful explanations of one model decision (SEV, LENS, linear) beside LIME and SHAP.

Computation only — no Streamlit. Typical use::

    from explain_core import load_demo, demo_model, make_reference, explain_sev
    data = load_demo("compas")
    trained = demo_model(data, "gbdt")
    ref = make_reference(data, trained.train_rows)
    ex = explain_sev(trained.model, data, data.features.iloc[[42]], ref)

The linear explanations (torch) live in :mod:`explain_core.linear`, the PDF reports in
:mod:`explain_core.report`; importing this package imports neither, nor plotly: the figure names below come from
:mod:`explain_core.views.sev` when first used.
"""
from ._version import __version__
from .baselines import Attribution, FlipPath, explain_lime, explain_shap, flip_number
from .errors import ComputationError, ExplainError, IntakeError, NonFiniteScores, UntrustedModelError
from .intake.data import Dataset, make_dataset
from .intake.demos import demo_names, load_demo
from .intake.layout import FeatureGroup, GroupLayout, TableChoices
from .intake.demo_models import demo_model, train_model
from .intake.loading import load_model_file, model_from_file
from .intake.models import ModelAdapter, wrap_model
from .intake.tables import read_table
from .intake.trained import TrainedModel
from .lens import (ContextOptions, Factor, LensContext, LensResult, Measures, feature_mad, lens_contexts,
                   opposite_references, shap_curve)
from .limits import Limits, limits
from .reference import Reference, check_restricted, make_reference
from .sev.dispatch import SEVParameters, explain_sev
from .sev.engine import BFSSearch, SEVExplanation, SEVResult, hypercube, sev_batch
from .sev.summaries import lattice_counts, prevalence_table, sev_counts

__all__ = [
    "__version__", "Dataset", "FeatureGroup", "GroupLayout", "IntakeError", "ExplainError", "ComputationError",
    "NonFiniteScores", "load_demo", "demo_names", "make_dataset", "TableChoices", "read_table", "Limits", "limits",
    "ModelAdapter", "TrainedModel", "UntrustedModelError", "demo_model", "load_model_file", "model_from_file",
    "train_model", "wrap_model", "Reference", "check_restricted", "make_reference",
    "Attribution", "FlipPath", "explain_lime", "explain_shap", "flip_number",
    "ContextOptions", "Factor", "LensContext", "LensResult", "Measures", "feature_mad", "lens_contexts",
    "opposite_references", "shap_curve",
    "BFSSearch", "SEVExplanation", "SEVParameters", "SEVResult", "explain_sev", "hypercube", "sev_batch",
    "feature_prevalence", "hypercube_figure", "lattice_counts", "lattice_figure", "prevalence_table",
    "sev_counts", "sev_histogram",
]

FIGURES = ("feature_prevalence", "hypercube_figure", "lattice_figure", "sev_histogram")


def __getattr__(name: str):
    """The figure functions of :data:`FIGURES`, imported (with plotly) on first use."""
    if name in FIGURES:
        from .views import sev as figures
        return getattr(figures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
