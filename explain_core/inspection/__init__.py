"""Inspecting the model over many rows: partial dependence and ICE, interactions."""
from .dependence import PartialDependence, feature_grid, partial_dependence  # noqa: F401
from .interactions import Interactions, interactions  # noqa: F401
