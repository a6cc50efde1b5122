"""Op records (one per op) and the public op functions."""

from . import api
from . import band, layout  # noqa: F401  (register the layout records)
from .registry import REGISTRY, OpDef, apply
from .sources import constant, placeholder

__all__ = ["api", "REGISTRY", "OpDef", "apply", "constant", "placeholder"]
# v2 elementwise (symgrad/ops/elementwise_v2.py, elementwise_v2_api.py)
from . import elementwise_v2, elementwise_v2_api  # noqa: F401,E402  (register the records)
from . import reductions_v2  # noqa: F401,E402  (v2 elementwise: reductions, normalisers)
