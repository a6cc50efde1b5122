"""Solvers whose derivatives are implicit, never through their iterations (docs/solvers.md):
``sg.custom_root`` (JAX's ``lax.custom_root``) and ``sg.root`` (Newton)."""

from .roots import custom_root, root

__all__ = ["custom_root", "root"]
