"""Vectorisable float64/float32 transcendentals for generated loop kernels.

numba lowers ``math.exp`` and friends to scalar libm calls, which LLVM cannot vectorise
(llvmlite's LLVM has no vector math library). These functions are written in plain float
and integer arithmetic (range reduction, polynomials with fused multiply-adds, bit
manipulation through two tiny bit-cast intrinsics, selects instead of branches), so once
inlined into a loop LLVM emits packed SIMD code for them (AVX2/AVX-512 lanes). Nothing
converts between float64 and int64 (AVX2 has no packed instruction for it): integers are
read from and written to the low mantissa bits of ``x + 1.5 * 2**52``.

Accuracy against a correctly rounded reference (measured by ``tests/test_vecmath.py`` over
wide ranges; documented in ``docs/vecmath.md``): exp and log within 1 ulp, log1p 1.4,
expm1 1.5, sin and cos 1.5 for |x| < 2**30 (beyond that the kernel calls libm), tanh and
sigmoid 2.4, softplus 1.6, tanh' (sech**2, not 1 - tanh**2) 2.7. Special values are libm's:
NaN in gives NaN, exp(inf) = inf, exp(-inf) = 0, log(0) = -inf, log(x < 0) = NaN, log(inf) =
inf, subnormal inputs and results, overflow to inf, sin(inf) = NaN.

float32 versions compute in float64 and round once (at most 1 ulp in float32; the vector
lanes are half as many, still far ahead of scalar libm).

They run inside numba functions only (``KernelOnly``: compiled without Python wrappers):

>>> import math
>>> @numba.njit
... def probe(x):
...     return exp_f64(x), log_f64(x - 1.0), log_f64(-x), exp_f64(-math.inf)
>>> e, log0, nan, zero = probe(1.0)
>>> abs(e - math.e) <= math.ulp(math.e), log0, nan != nan, zero
(True, -inf, True, 0.0)
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ...numba_internals import enabled
from .support import always_inline

try:
    from numba.core.registry import CPUDispatcher
except ImportError:          # numba moved it: plain dispatchers (SYMGRAD_NUMBA_INTERNALS=0)
    CPUDispatcher = type(numba.njit(lambda: 0))

_OPTIONS = dict(cache=False, nogil=True, error_model="numpy", fastmath=False)


class KernelOnly(CPUDispatcher):
    """A dispatcher compiled without numba's Python and C-callable wrappers (about half of
    a small function's compile time): generated kernels call it and LLVM inlines it. A call
    from Python, which would jump through the missing wrapper, raises instead; call it
    from a numba function."""

    def __call__(self, *args, **kwargs):
        raise TypeError(f"symgrad.compile.kernel_lib.vecmath.{self.py_func.__name__} runs inside numba "
                        "functions only (compiled without a Python wrapper)")


def _jit(fn):
    if not enabled():        # numba's public options only: wrappers are compiled too
        return always_inline(numba.njit(**_OPTIONS)(fn))
    dispatcher = numba.njit(no_cpython_wrapper=True, no_cfunc_wrapper=True, **_OPTIONS)(fn)
    if isinstance(dispatcher, CPUDispatcher):    # not under NUMBA_DISABLE_JIT
        dispatcher.__class__ = KernelOnly
    return always_inline(dispatcher)


def _part(fn):
    """An internal piece of the public functions below: inlined into them at numba's IR
    level (they are small), so that each public function is one numba compile instead of
    one per piece (each compile costs numba about 0.03 s whatever its size)."""
    return numba.njit(inline="always", **_OPTIONS)(fn)


# --- bit casts (one LLVM instruction each; they vectorise) -------------------------------

@intrinsic
def _bits(typingctx, x):
    """The int64 with the bit pattern of the float64 ``x``."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _float(typingctx, i):
    """The float64 with the bit pattern of the int64 ``i``."""
    if i != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding (llvm.fma: one instruction, vectorises, and no fast-math
    flag can split or reassociate it)."""
    if not (a == b == c == types.float64):
        return None

    def codegen(context, builder, signature, args):
        double = ir.DoubleType()
        fn = builder.module.declare_intrinsic(
            "llvm.fma", [double], ir.FunctionType(double, [double, double, double]))
        return builder.call(fn, args)
    return types.float64(types.float64, types.float64, types.float64), codegen


# --- integer <-> float without conversion instructions ---------------------------------------
# AVX2 has no packed float64 <-> int64 conversion (cvttpd2qq / cvtqq2pd are AVX-512DQ), so
# LLVM scalarises every ``np.int64(x)`` and ``np.float64(k)``. Adding 1.5 * 2**52 instead
# rounds a float64 below 2**51 in magnitude to an integer held in the low mantissa bits:
# ``_bits(x + _SHIFT)`` then carries round(x) modulo 2**51 in its low bits, and
# ``_float(k + _SHIFT_BITS) - _SHIFT`` is the float of an integer k. Both are exact.

_SHIFT = 6755399441055744.0                   # 0x1.8p52
_SHIFT_BITS = np.int64(0x4338000000000000)


@_part
def _pow2(k):
    """2.0**k as a float64, from an int64 whose low 12 bits are k (k in [-1022, 1023])."""
    return _float((k + np.int64(1023)) << np.int64(52))


# --- exp and expm1 -------------------------------------------------------------------------

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01    # 32 significant bits: n * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_E0, _E1, _E2, _E3 = 0.5, 0.1666666666666667, 0.04166666666666667, 0.008333333333326136
_E4, _E5, _E6 = 0.0013888888888883748, 0.00019841269874820627, 2.4801587325547743e-05
_E7, _E8, _E9, _E10 = 2.7557255400206422e-06, 2.75572736431103e-07, 2.5105217004720745e-08, \
    2.0914686968086876e-09


@_part
def _expm1_parts(r):
    """r**2 and P(r) with exp(r) - 1 = r + r**2 * P(r) for |r| <= ln2/2 + a little: P a
    degree-10 Chebyshev fit of (exp(r) - 1 - r) / r**2 (relative error < 2**-61),
    evaluated by Estrin's scheme (a dependency chain of five instead of twelve)."""
    r2 = r * r
    r4 = r2 * r2
    b0 = _fma(r2, _fma(r, _E3, _E2), _fma(r, _E1, _E0))
    b1 = _fma(r2, _fma(r, _E7, _E6), _fma(r, _E5, _E4))
    b2 = _fma(r2, _E10, _fma(r, _E9, _E8))
    return r2, _fma(r4 * r4, b2, _fma(r4, b1, b0))


@_part
def _expm1_scaled(r, s):
    """s * exp(r) - 1 for s = 2**n: (s * r + (s - 1)) + s * r**2 * P(r). The first sum is
    exact for the n near 0 where it cancels, so only the last step rounds there."""
    r2, p = _expm1_parts(r)
    return _fma(s * r2, p, _fma(s, r, s - 1.0))


@_part
def _reduce_ln2(x):
    """kd, r with x = n * ln2 + r, |r| <= ln2 / 2, n = round(x / ln2) in kd's low bits
    (x already clamped to +-746)."""
    kd = _fma(x, _LOG2E, _SHIFT)
    n = kd - _SHIFT
    return kd, _fma(n, -_LN2_LO, _fma(n, -_LN2_HI, x))


@_part
def _exp_core(x):
    """exp(x) for x <= 709.8, or NaN. p * 2**n is formed as (p * 2**(n - 1)) * 2, which
    overflows to inf exactly where exp does; results below the normal range are formed 63
    binades up and scaled down by one multiply (one rounding). NaN propagates."""
    xc = -746.0 if x < -746.0 else x
    kd, r = _reduce_ln2(xc)
    tiny = kd < _SHIFT - 1020.0
    k = _bits(kd) + np.int64(63) if tiny else _bits(kd) - np.int64(1)
    r2, p = _expm1_parts(r)
    y = (_fma(r2, p, r) + 1.0) * _pow2(k)
    return y * (1.0842021724855044e-19 if tiny else 2.0)      # 2**-63


@_jit
def exp_f64(x):
    return _exp_core(709.8 if x > 709.8 else x)


@_part
def _expm1_small(x):
    """expm1(x) for x in [-40, 40], or NaN (+0.0 for -0.0)."""
    kd, r = _reduce_ln2(x)
    return _expm1_scaled(r, _pow2(_bits(kd)))


@_jit
def expm1_f64(x):
    xc = 709.8 if x > 709.8 else x
    xc = -40.0 if xc < -40.0 else xc
    kd, r = _reduce_ln2(xc)
    # s * exp(r) - 1 with s = 2**min(n, 60): beyond n = 60 the -1 is lost anyway, and the
    # result is scaled by 2**(n - 60) exactly (overflowing to inf where expm1 does)
    big = kd > _SHIFT + 60.0
    kb = _bits(kd)
    s = _pow2(np.int64(60) if big else kb)
    t = _pow2(kb - np.int64(60) if big else np.int64(0))
    result = _expm1_scaled(r, s) * t
    return x if x == 0.0 else result             # the sign of zero


# --- log and log1p -------------------------------------------------------------------------

_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_MANTISSA = np.int64(0x000FFFFFFFFFFFFF)
_ONE_BITS = np.int64(0x3FF0000000000000)


@_part
def _log_kernel(f, dk):
    """log(2**dk * (1 + f)) for f in [sqrt(2)/2 - 1, sqrt(2) - 1]: fdlibm's polynomial R
    in s = f / (2 + f), combined as log(1 + f) = f - s * (f - R) (f exact, the correction
    term at most a quarter of the result) and fused multiply-adds for dk * ln2."""
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * _fma(w, _fma(w, _fma(w, _LG7, _LG5), _LG3), _LG1) + \
        w * _fma(w, _fma(w, _LG6, _LG4), _LG2)
    return _fma(dk, _LN2_HI, f + _fma(-s, f - r, dk * _LN2_LO))


@_part
def _log_reduce(hx):
    """f, e for the positive float64 with bits hx = 2**(e - 1023) * (1 + f), 1 + f in
    [sqrt(2)/2, sqrt(2)); e is the biased exponent, an int64."""
    m = hx & _MANTISSA
    i = (m + np.int64(0x95F6400000000)) & np.int64(0x10000000000000)  # m >= sqrt(2)?
    f = _float(m | (i ^ _ONE_BITS)) - 1.0                  # exact
    return f, ((hx >> np.int64(52)) & np.int64(0x7FF)) + (i >> np.int64(52))


@_jit
def log_f64(x):
    subnormal = x < 2.2250738585072014e-308
    xs = x * 18014398509481984.0 if subnormal else x      # 2**54
    f, e = _log_reduce(_bits(xs))
    dk = _float(e | _SHIFT_BITS) - ((_SHIFT + 1077.0) if subnormal else (_SHIFT + 1023.0))
    result = _log_kernel(f, dk)
    if x + x == x:                          # +-0 and +inf
        result = -math.inf if x == 0.0 else x
    if not x >= 0.0:                        # negative, -inf, NaN
        result = math.nan
    return result


@_part
def _log1p_core(x):
    """log1p(x) for finite x > -1: log(u + c) with u = 1 + x rounded and c = x - (u - 1)
    its exact rounding error. The reduction of u gives 2**k * (1 + f), and the kernel takes
    f + c * 2**-k (which is x itself when k = 0)."""
    u = 1.0 + x
    c = x - (u - 1.0)
    f, e = _log_reduce(_bits(u))
    ec = e if e < np.int64(2000) else np.int64(2000)        # 2**-k for k up to 977
    f = _fma(c, _float((np.int64(2046) - ec) << np.int64(52)), f)
    return _log_kernel(f, _float(e | _SHIFT_BITS) - (_SHIFT + 1023.0))


@_jit
def log1p_f64(x):
    result = _log1p_core(x)                 # NaN propagates through c
    if x + x == x:                          # +-0 (keeping the sign) and +inf
        result = x
    if x <= -1.0:                           # -1 and below, -inf included
        result = -math.inf if x == -1.0 else math.nan
    return result


# --- sin and cos ---------------------------------------------------------------------------

_INV_PIO2 = 6.36619772367581382433e-01
_PIO2_A = 1.5707963267948966                  # pi/2 = A + B + C to about 160 bits
_PIO2_B = 6.123233995736766e-17
_PIO2_C = -1.4973849048591698e-33
TRIG_LIMIT = 1073741824.0                     # 2**30: the reduction's proven range
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, \
    -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, \
    1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, \
    2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, \
    -1.13596475577881948265e-11


@_part
def _reduce_pio2(x):
    """kd, y with x = n * pi/2 + y, |y| <= pi/4 + tiny, n in kd's low bits, for
    |x| < TRIG_LIMIT: three fused multiply-adds, each exact but for one rounding of a
    result no larger than the last."""
    kd = _fma(x, _INV_PIO2, _SHIFT)
    n = kd - _SHIFT
    return kd, _fma(n, -_PIO2_C, _fma(n, -_PIO2_B, _fma(n, -_PIO2_A, x)))


@_part
def _sin_kernel(y):
    z = y * y
    r = _fma(z, _fma(z, _fma(z, _fma(z, _S6, _S5), _S4), _S3), _S2)
    return _fma(z * y, _fma(z, r, _S1), y)


@_part
def _cos_kernel(y):
    z = y * y
    r = z * _fma(z, _fma(z, _fma(z, _fma(z, _fma(z, _C6, _C5), _C4), _C3), _C2), _C1)
    hz = 0.5 * z
    w = 1.0 - hz
    return w + _fma(z, r, (1.0 - w) - hz)


@_part
def _sincos_quadrant(x, shift):
    """sin(x) (shift 0) or cos(x) (shift 1) for |x| < TRIG_LIMIT; NaN beyond (the kernel
    then reruns with libm, see ``trig_in_range``). sin and cos of one argument share
    everything but the last two selects (LLVM merges the rest after inlining)."""
    xc = x if abs(x) < TRIG_LIMIT else math.nan
    kd, y = _reduce_pio2(xc)
    q = _bits(kd) + shift
    v = _cos_kernel(y) if (q & np.int64(1)) != np.int64(0) else _sin_kernel(y)
    return _float(_bits(v) ^ ((q & np.int64(2)) << np.int64(62)))   # negated in q = 2, 3


@_jit
def trig_in_range(x):
    """False for a finite x that sin_f64/cos_f64 cannot reduce (|x| >= 2**30): a loop
    kernel ANDs this over its sin/cos arguments and reruns with libm when it fails."""
    return not (abs(x) >= TRIG_LIMIT and abs(x) < math.inf)


@_jit
def sin_f64(x):
    result = _sincos_quadrant(x, np.int64(0))
    return x if x == 0.0 else result        # keeps -0.0


@_jit
def cos_f64(x):
    return _sincos_quadrant(x, np.int64(1))


# --- built on the above ----------------------------------------------------------------------

@_jit
def tanh_f64(x):
    """expm1(2|x|) / (expm1(2|x|) + 2) with x's sign (tanh(+-20) is +-1 in float64)."""
    ax = abs(x)
    t = _expm1_small(2.0 * (20.0 if ax > 20.0 else ax))
    return math.copysign(t / (t + 2.0), x)


@_jit
def tanh_prime_f64(x):
    """tanh'(x) = sech(x)**2 = 4 e / (1 + e (2 + e)), e = exp(-2|x|): no cancellation
    (``1 - tanh**2`` loses every digit once tanh rounds to 1), 0 for huge |x|, NaN for
    NaN; the denominator is one fused multiply-add."""
    e = _exp_core(-2.0 * abs(x))
    return 4.0 * e / _fma(e, 2.0 + e, 1.0)


@_jit
def sigmoid_f64(x):
    """1 / (1 + exp(-x)) without overflow: 1 / (1 + e) or e / (1 + e), e = exp(-|x|) (one
    division either way; NaN propagates through e)."""
    e = _exp_core(-abs(x))
    return (1.0 if x >= 0.0 else e) / (1.0 + e)


@_jit
def softplus_f64(x):
    """log(1 + exp(x)) as np.logaddexp(0, x): max(x, 0) + log1p(e), e = exp(-|x|) in
    [0, 1]. Then 1 + e = u + c (u rounded, c exact) lies in [1, 2], so the log reduction
    is one compare: u = 2**k * (1 + f) with k = 0 or 1. NaN propagates."""
    e = _exp_core(-abs(x))
    u = 1.0 + e
    c = e - (u - 1.0)
    big = u > 1.4142135623730951
    f = _fma(u, 0.5, -1.0) if big else u - 1.0                   # exact
    f = _fma(c, 0.5 if big else 1.0, f)
    return (x if x > 0.0 else 0.0) + _log_kernel(f, 1.0 if big else 0.0)


# --- float32: through float64, rounded once --------------------------------------------------

def _f32(fn):
    @_jit
    def wrapped(x):
        return np.float32(fn(np.float64(x)))
    wrapped.__name__ = wrapped.__qualname__ = fn.__name__[:-3] + "f32"
    return wrapped


exp_f32, expm1_f32, log_f32, log1p_f32 = _f32(exp_f64), _f32(expm1_f64), _f32(log_f64), \
    _f32(log1p_f64)
sin_f32, cos_f32, tanh_f32 = _f32(sin_f64), _f32(cos_f64), _f32(tanh_f64)
tanh_prime_f32 = _f32(tanh_prime_f64)
sigmoid_f32, softplus_f32 = _f32(sigmoid_f64), _f32(softplus_f64)

#: (float64 form, float32 form) of each function; the printer's ``FAST`` table maps sympy
#: function classes to these
FORMS = ((exp_f64, exp_f32), (expm1_f64, expm1_f32), (log_f64, log_f32),
         (log1p_f64, log1p_f32), (sin_f64, sin_f32), (cos_f64, cos_f32), (tanh_f64, tanh_f32),
         (tanh_prime_f64, tanh_prime_f32),
         (sigmoid_f64, sigmoid_f32), (softplus_f64, softplus_f32))
