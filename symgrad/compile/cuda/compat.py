"""Compatibility of numba.cuda with the numpy in use, applied before numba.cuda is imported
(by ``cuda_runtime``) and only where needed.

numba-cuda 0.30.x registers an overload for ``numpy.row_stack`` when its first kernel is
compiled; numpy 2.5 removed that name (an alias of ``numpy.vstack`` since numpy 1.0), so
every CUDA kernel failed at its first launch with ``AttributeError: module 'numpy' has no
attribute 'row_stack'``. Where numpy lacks it, ``numpy.row_stack`` is set to
``numpy.vstack`` (the alias numpy itself had); where numpy has it, nothing changes.

>>> import numpy
>>> ensure_numpy_names() == [] or numpy.row_stack is numpy.vstack
True
"""

from __future__ import annotations

import numpy

# numpy names numba.cuda still refers to -> the numpy function each was an alias of
REMOVED_ALIASES = {"row_stack": "vstack"}


def ensure_numpy_names() -> list:
    """Restore each name of ``REMOVED_ALIASES`` missing from numpy; the names restored."""
    restored = []
    for name, target in REMOVED_ALIASES.items():
        if not hasattr(numpy, name):
            setattr(numpy, name, getattr(numpy, target))
            restored.append(name)
    return restored
