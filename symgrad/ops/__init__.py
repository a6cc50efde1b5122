"""Op records (one per op) and the public op functions."""

from . import api
from .registry import REGISTRY, OpDef, apply
from .sources import constant, placeholder

__all__ = ["api", "REGISTRY", "OpDef", "apply", "constant", "placeholder"]
