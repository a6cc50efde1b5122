"""Small-state code compiled as one scalar kernel (issue 25, item 1; docs/scalar_code.md).

Where tensors are static and one straight-line call is cheaper than the loops and steps
it replaces (``cost.py``), the compiler works per element: ``select.py`` finds the
regions, ``elements.py`` gives each op record an
element rule and makes straight-line statements over atoms, ``graph.py`` replaces each
region by one ``scalar_kernel`` node, ``source.py`` prints it as one njit function.
"""

from .graph import SCALAR_KERNEL, SCALAR_OUTPUT, ScalarRegion, region_of, scalar_graph
from .source import LoweredRegion, lower_region, region_summary

__all__ = ["SCALAR_KERNEL", "SCALAR_OUTPUT", "ScalarRegion", "region_of", "scalar_graph",
           "LoweredRegion", "lower_region", "region_summary", "STEP_FORMS"]


def _call(node, ins: list) -> str:
    return f"_s{node.index}({', '.join(ins)})"


STEP_FORMS = {SCALAR_KERNEL: _call,
              SCALAR_OUTPUT: lambda node, ins: f"{ins[0]}[{node.attrs['index']}]"}
"""How the cpu driver writes the two steps of a scalar region."""
