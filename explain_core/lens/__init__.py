"""LENS: local explanations via necessity and sufficiency (LENS paper, Defs 2-4, Remark 1, Alg. 1, §5).

:mod:`.sampling` builds and scores the context sample of every (reference × factor) (R2I, I2R) up to a factor
size; :mod:`.search` goes layer by layer until the first layer holding a τ-sufficient factor, within a time
budget (wide data); :mod:`.context` reads PS/PN and τ-minimal factors off a scored sample, returned as the results
of :mod:`.factors`; :mod:`.attribution` sets them beside an attribution's top groups; :mod:`.stats` holds the sample
mode's binomial tests and Holm's correction.
"""
from .attribution import AttributionCurve, shap_curve
from .context import DIRECTIONS, ORDERS, LensContext
from .factors import Factor, LensResult, Measures
from .sampling import (ALL_SUBSETS_UP_TO, DEFAULT_MAX_SIZE, DEFAULT_REFERENCES, ContextOptions, check_budget,
                       default_max_size, factor_count, factor_masks, feature_mad, largest_factor_size, lens_contexts,
                       opposite_references)
from .stats import CORRECTIONS

__all__ = ["ALL_SUBSETS_UP_TO", "CORRECTIONS", "DEFAULT_MAX_SIZE", "DEFAULT_REFERENCES", "DIRECTIONS", "ORDERS",
           "AttributionCurve", "ContextOptions", "Factor", "LensContext", "LensResult", "Measures", "check_budget",
           "default_max_size", "factor_count",
           "factor_masks", "feature_mad", "largest_factor_size", "lens_contexts", "opposite_references", "shap_curve"]
