"""njit scalar helpers of the v2 elementwise ops (special functions).

The bodies live in ``symgrad.ops.elementwise.scalar_math`` (plain Python, also the numpy forward);
this module only compiles them like ``support``'s helpers: once per process, inlined
into each loop, numpy's error model. CUDA device code recompiles the same code objects
(``cuda_runtime.device_helper``).
"""

from __future__ import annotations

from ...ops.elementwise import scalar_math as S
from .support import _jit

cbrt_ = _jit(S.cbrt)
hypot_ = _jit(S.hypot)
logaddexp_ = _jit(S.logaddexp)
erfc_ = _jit(S.erfc)
erfinv_ = _jit(S.erfinv)
lgamma_ = _jit(S.lgamma)
digamma_ = _jit(S.digamma)
polygamma_ = _jit(S.polygamma)
tanh_prime_ = _jit(S.tanh_prime)
