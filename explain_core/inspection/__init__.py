"""Inspecting the model over many rows: cohorts, fairness, error analysis."""
from .cohorts import Cohort, CohortComparison, Filter, compare_cohorts  # noqa: F401
from .errors import ErrorTree, error_tree, leaf_cohort  # noqa: F401
from .fairness import FairnessReport, fairness_report  # noqa: F401
