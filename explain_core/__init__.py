"""explain_core: sparse, faithful explanations of one model decision (SEV, LENS, linear) beside LIME and SHAP.

Computation only — no Streamlit. Typical use::

    from explain_core import load_demo, demo_model, make_reference, explain_sev
    data = load_demo("compas")
    trained = demo_model(data, "gbdt")
    ref = make_reference(data, trained.train_rows)
    ex = explain_sev(trained.model, data, data.features.iloc[[42]], ref)
"""
from .data import Dataset, FeatureGroup, IntakeError, load_demo, demo_names, make_dataset, read_table
from .models import (ModelAdapter, TrainedModel, UntrustedModelError, demo_model, load_model_file,
                     model_from_file, train_model, wrap_model)
from .reference import Reference, check_restricted, make_reference
from .baselines import Attribution, FlipPath, explain_lime, explain_shap, flip_number
from .lens import (Factor, LensContext, LensResult, Measures, feature_mad, lens_contexts,
                   opposite_references, shap_curve)
from .sev import GroupLayout, SEVExplanation, SEVResult, explain_sev, hypercube, sev_batch
from .plots import (feature_prevalence, hypercube_figure, lattice_counts, lattice_figure, prevalence_table,
                    sev_counts, sev_histogram)

__all__ = [
    "Dataset", "FeatureGroup", "IntakeError", "load_demo", "demo_names", "make_dataset", "read_table",
    "ModelAdapter", "TrainedModel", "UntrustedModelError", "demo_model", "load_model_file", "model_from_file",
    "train_model", "wrap_model", "Reference", "check_restricted", "make_reference",
    "Attribution", "FlipPath", "explain_lime", "explain_shap", "flip_number",
    "Factor", "LensContext", "LensResult", "Measures", "feature_mad", "lens_contexts",
    "opposite_references", "shap_curve",
    "GroupLayout", "SEVExplanation", "SEVResult", "explain_sev", "hypercube", "sev_batch",
    "feature_prevalence", "hypercube_figure", "lattice_counts", "lattice_figure", "prevalence_table",
    "sev_counts", "sev_histogram",
]
