"""numba's first compile in a process, made cheaper: ``defer_blas_check``.

numba's first compile loads its registries (``CPUContext.refresh``), which imports
``numba.np.arraymath``; that module probes for BLAS at import (``_check_blas``) by
importing ``scipy.linalg``, whose package imports about 0.15 s of scipy and numpy modules
(``numpy.f2py`` among them) that a kernel without ``np.dot`` never uses. numba checks
BLAS again, with the same import, wherever a kernel types a BLAS call
(``numba.np.linalg.ensure_blas``), so the import-time probe is only moved there when
scipy is installed: the probe answers "BLAS available" and the real check runs at the
first BLAS use.

>>> defer_blas_check()
>>> import numba.np.arraymath, numba.np.linalg
>>> numba.np.arraymath.ensure_blas is numba.np.linalg.ensure_blas
True
"""

from __future__ import annotations

import importlib.util
import sys
import threading

from ...numba_internals import enabled

_LOCK = threading.Lock()


def defer_blas_check() -> None:
    """Load numba's registries (its ``refresh``, as its first compile would) with the BLAS
    probe deferred to the first BLAS use; nothing to do once ``numba.np.arraymath`` is
    imported, when scipy is not installed (numba's own probe then answers), and with
    ``SYMGRAD_NUMBA_INTERNALS=0``. Only this thread's refresh sees the deferred probe:
    another thread that checks BLAS meanwhile gets numba's real check."""
    if not enabled() or "numba.np.arraymath" in sys.modules or importlib.util.find_spec("scipy") is None:
        return
    from numba.core.registry import cpu_target
    from numba.np import linalg

    with _LOCK:
        if "numba.np.arraymath" in sys.modules:
            return
        real = linalg.ensure_blas
        me = threading.get_ident()

        def probe() -> None:              # what arraymath imports for its probe
            if threading.get_ident() != me:
                real()
        linalg.ensure_blas = probe
        try:
            cpu_target.target_context.refresh()
        finally:
            linalg.ensure_blas = real
        arraymath = sys.modules.get("numba.np.arraymath")
        if arraymath is not None:
            arraymath.ensure_blas = real  # any later use in arraymath checks for real

