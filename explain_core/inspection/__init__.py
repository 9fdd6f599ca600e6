"""Views beside the model page (issue 30): PDP/ICE, interactions, cohorts and fairness, error analysis, the decision
threshold, two models side by side."""
from . import threshold  # noqa: F401
from . import two_models  # noqa: F401
