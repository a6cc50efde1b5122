"""sg.gradients: argument checks, the reverse sweep and per-op sympy partials."""

from .gradients import UnconnectedGradients, gradients

__all__ = ["UnconnectedGradients", "gradients"]
