"""Op records (one per op) and the public op functions, one subpackage per op family:
``elementwise``, ``reductions``, ``layout``, ``indexing``, ``contraction`` and ``scans``
(each with its ``records.py`` and ``api.py``). ``opdef`` (the record), ``registry``
(``apply``), ``sources``, ``symbols``, ``functions`` (``F``) and ``checks`` are the
infrastructure they share; ``operators`` gives Tensors their Python operators; ``jvp`` is
the forward-mode table keyed by records.

>>> from symgrad import ops
>>> [family.__name__.rpartition(".")[2] for family in ops.FAMILIES]
['elementwise', 'reductions', 'layout', 'indexing', 'contraction', 'scans']
>>> ops.reductions.reduce_sum is ops.reductions.api.reduce_sum
True
"""

from .opdef import REGISTRY, OpDef
from .registry import apply
from .sources import constant, placeholder
from . import elementwise, reductions, layout, indexing, contraction, scans
from . import operators  # noqa: F401  (installs Tensor's Python operators)
from . import linalg  # noqa: F401  (sg.linalg's records; not a top-level family)

FAMILIES = (elementwise, reductions, layout, indexing, contraction, scans)

__all__ = ["FAMILIES", "REGISTRY", "OpDef", "apply", "constant", "placeholder",
           "elementwise", "reductions", "layout", "indexing", "contraction", "scans"]
