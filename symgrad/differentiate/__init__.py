"""sg.gradients: argument checks, the reverse sweep and per-op sympy partials."""

from .control import AggregationMethod, prevent_gradient
from .gradients import UnconnectedGradients, gradients

__all__ = ["AggregationMethod", "UnconnectedGradients", "gradients", "prevent_gradient"]
