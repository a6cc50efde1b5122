"""Op records (one per op) and the public op functions."""

from . import api
from . import band, layout  # noqa: F401  (register the layout records)
from .registry import REGISTRY, OpDef, apply
from .sources import constant, placeholder

__all__ = ["api", "REGISTRY", "OpDef", "apply", "constant", "placeholder"]
