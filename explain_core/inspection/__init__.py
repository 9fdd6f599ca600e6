"""Inspecting the model over many rows: partial dependence and ICE, interactions, cohorts, fairness, error
analysis."""
from .dependence import PartialDependence, feature_grid, partial_dependence  # noqa: F401
from .interactions import Interactions, interactions  # noqa: F401
from .cohorts import Cohort, CohortComparison, Filter, compare_cohorts  # noqa: F401
from .errors import ErrorTree, error_tree, leaf_cohort  # noqa: F401
from .fairness import FairnessReport, fairness_report  # noqa: F401
