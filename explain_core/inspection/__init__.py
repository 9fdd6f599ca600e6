"""Views beside the model page (issue 30): partial dependence and ICE, interactions, cohorts, fairness, error
analysis, the decision threshold, two models side by side."""
from .dependence import PartialDependence, feature_grid, partial_dependence  # noqa: F401
from .interactions import Interactions, interactions  # noqa: F401
from .filters import Cohort, Filter  # noqa: F401
from .cohorts import CohortComparison, compare_cohorts  # noqa: F401
from .errors import ErrorTree, error_tree, leaf_cohort  # noqa: F401
from .fairness import FairnessReport, fairness_report  # noqa: F401
from . import threshold  # noqa: F401
from . import two_models  # noqa: F401
