"""How a kernel loop reads one input (shared by ``templates`` and ``gather``, which
``templates`` imports: the record lives below both so imports go one way).

>>> InputAccess("[i0]", False)
InputAccess(index='[i0]', broadcast=False, base=None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class InputAccess:
    """How the loop reads one input: ``index`` (a subscript), ``broadcast`` when the
    driver must pass ``np.broadcast_to(a, shape)`` (an unknown dim might be 1); ``base``:
    the driver passes this node instead (a slice read through its base array, see
    ``gather.base_reads``)."""

    index: str
    broadcast: bool
    base: Optional[object] = None
