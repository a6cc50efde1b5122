"""Solvers whose derivatives are implicit, never through their iterations (docs/solvers.md):
``sg.custom_root`` (JAX's ``lax.custom_root``), ``sg.root`` (Newton) and ``sg.odeint``
(adaptive ODE solves with adjoint and sensitivity derivatives)."""

from .odeint import odeint
from .roots import custom_root, root

__all__ = ["custom_root", "root", "odeint"]
