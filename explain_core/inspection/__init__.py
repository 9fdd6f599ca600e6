"""Views beside the model page: the decision threshold and two models side by side."""
from . import threshold, two_models  # noqa: F401
