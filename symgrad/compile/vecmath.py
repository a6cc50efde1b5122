"""Vectorisable float64/float32 transcendentals for generated loop kernels.

numba lowers ``math.exp`` and friends to scalar libm calls, which LLVM cannot vectorise
(llvmlite's LLVM has no vector math library). These functions are written in plain float
and integer arithmetic (range reduction, polynomials, bit manipulation through two tiny
bit-cast intrinsics, selects instead of branches), so once inlined into a loop LLVM emits
packed SIMD code for them (AVX2/AVX-512 lanes).

Accuracy against a correctly rounded reference (measured by ``tests/test_vecmath.py`` over
wide ranges; documented in ``docs/vecmath.md``): exp, log, log1p, expm1 at most 1 ulp,
sin and cos at most 1 ulp for |x| < 2**19 * pi / 2 (beyond that they call libm), tanh at
most 2 ulp, sigmoid and softplus (built on exp/log1p) at most 3 ulp. Special values are
libm's: NaN in gives NaN, exp(inf) = inf, exp(-inf) = 0, log(0) = -inf, log(x < 0) = NaN,
log(inf) = inf, subnormal inputs and results, overflow to inf, sin(inf) = NaN.

float32 versions compute in float64 and round once (at most 1 ulp in float32; the vector
lanes are half as many, still far ahead of scalar libm).

>>> import math
>>> abs(exp_f64(1.0) - math.e) <= math.ulp(math.e)
True
>>> log_f64(0.0), log_f64(-1.0) != log_f64(-1.0), exp_f64(-math.inf)
(-inf, True, 0.0)
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .support import always_inline

_OPTIONS = dict(cache=False, nogil=True, error_model="numpy", fastmath=False)


def _jit(fn):
    return always_inline(numba.njit(**_OPTIONS)(fn))


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


@_jit
def _pow2(k):
    """2.0**k for an int64 k in [-1022, 1023] (a normal float64)."""
    return _float((k + np.int64(1023)) << np.int64(52))


# --- exp and expm1 -------------------------------------------------------------------------

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01    # 32 significant bits: n * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_EXP_OVERFLOW = 709.782712893384
_EXP_UNDERFLOW = -745.1332191019412


@_jit
def _expm1_poly(r):
    """exp(r) - 1 for |r| <= ln2/2 + a little: Taylor series to degree 14 (error < 2**-56)."""
    p = 1.0 / 87178291200.0
    p = p * r + 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    return r + (r * r) * p


@_jit
def _reduce_ln2(x):
    """n and r with x = n * ln2 + r, |r| <= ln2 / 2 (x already clamped to +-746)."""
    n = np.floor(x * _LOG2E + 0.5)
    return n, _fma(-n, _LN2_LO, _fma(-n, _LN2_HI, x))


@_jit
def _scale(p, k):
    """p * 2**k for p in [0.7, 1.5) and k in [-1076, 1024], by adding k to p's exponent
    field (an integer add: fast-math reassociation cannot move it); results below the
    normal range are formed 64 binades up and scaled by one multiply (one rounding)."""
    tiny = k < np.int64(-1020)
    kk = k + np.int64(64) if tiny else k
    y = _float(_bits(p) + (kk << np.int64(52)))
    return y * 5.421010862427522e-20 if tiny else y        # 2**-64


@_jit
def exp_f64(x):
    xc = x if x < 709.8 else 709.8
    xc = xc if xc > -746.0 else -746.0
    n, r = _reduce_ln2(xc)
    result = _scale(_expm1_poly(r) + 1.0, np.int64(n))
    if x > _EXP_OVERFLOW:
        result = math.inf
    if x != x:
        result = x
    return result


@_jit
def expm1_f64(x):
    xc = x if x < 709.0 else 709.0
    xc = xc if xc > -40.0 else -40.0
    n, r = _reduce_ln2(xc)
    k = np.int64(n)
    e = _expm1_poly(r)
    s = _scale(1.0, k if k < np.int64(60) else np.int64(60))   # 2**n, exact
    result = _fma(s, e, s - 1.0)                 # 2**n * (e + 1) - 1, one rounding
    if k > np.int64(55):
        result = exp_f64(x) - 1.0
    if x != x or x == 0.0:                       # NaN, and the sign of zero
        result = x
    return result


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


@_jit
def _log_kernel(f, k):
    """log(2**k * (1 + f)) for f in [sqrt(2)/2 - 1, sqrt(2) - 1]."""
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    hfsq = 0.5 * f * f
    dk = np.float64(k)
    return dk * _LN2_HI - ((hfsq - (s * (hfsq + (t1 + t2)) + dk * _LN2_LO)) - f)


@_jit
def log_f64(x):
    subnormal = x < 2.2250738585072014e-308
    xs = x * 18014398509481984.0 if subnormal else x      # 2**54
    hx = _bits(xs)
    k = ((hx >> np.int64(52)) & np.int64(0x7FF)) - np.int64(1023)
    k = k - np.int64(54) if subnormal else k
    m = hx & _MANTISSA
    i = (m + np.int64(0x95F6400000000)) & np.int64(0x10000000000000)  # m >= sqrt(2)?
    f = _float(m | (i ^ _ONE_BITS)) - 1.0                  # exact
    result = _log_kernel(f, k + (i >> np.int64(52)))
    if x == 0.0:
        result = -math.inf
    if x < 0.0:
        result = math.nan
    if x == math.inf or x != x:
        result = x
    return result


@_jit
def log1p_f64(x):
    """Near 0 the kernel takes x itself (1 + x is never rounded); elsewhere log(1 + x),
    whose rounding costs at most 2**-53 against a result above 0.34 in magnitude."""
    near = x > -0.2928932188134524 and x < 0.41421356237309503
    result = log_f64(1.0 + x)
    if near:
        result = _log_kernel(x, np.int64(0))
    if x == -1.0:
        result = -math.inf
    if x != x or x == 0.0:
        result = x
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


@_jit
def _reduce_pio2(x):
    """n, y with x = n * pi/2 + y, |y| <= pi/4 + tiny, for |x| < 2**19 * pi/2: three fused
    multiply-adds, each exact but for one rounding of a result no larger than the last."""
    n = np.floor(x * _INV_PIO2 + 0.5)
    return n, _fma(-n, _PIO2_C, _fma(-n, _PIO2_B, _fma(-n, _PIO2_A, x)))


@_jit
def _sin_kernel(y):
    z = y * y
    r = _S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))
    return _fma(z * y, _S1 + z * r, y)


@_jit
def _cos_kernel(y):
    z = y * y
    r = z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
    hz = 0.5 * z
    w = 1.0 - hz
    return w + _fma(z, r, (1.0 - w) - hz)


@_jit
def _sincos_quadrant(x, shift):
    """sin(x) (shift 0) or cos(x) (shift 1) for |x| < TRIG_LIMIT; NaN beyond (the kernel
    then reruns with libm, see ``trig_in_range``)."""
    xc = x if abs(x) < TRIG_LIMIT else math.nan
    n, y = _reduce_pio2(xc)
    q = (np.int64(n) + shift) & np.int64(3)
    s = _sin_kernel(y)
    c = _cos_kernel(y)
    v = c if (q & np.int64(1)) == np.int64(1) else s
    return -v if q >= np.int64(2) else v


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
    ax = abs(x)
    t = expm1_f64(2.0 * (ax if ax < 20.0 else 20.0))
    result = math.copysign(t / (t + 2.0), x)
    return x if x == 0.0 or x != x else result


@_jit
def sigmoid_f64(x):
    """1 / (1 + exp(-x)) without overflow: exp(-|x|) / (1 + exp(-|x|)) mirrored."""
    e = exp_f64(-abs(x))
    p = 1.0 / (1.0 + e)
    return p if x >= 0.0 else (e * p if x == x else x)


@_jit
def softplus_f64(x):
    """log(1 + exp(x)) as np.logaddexp(0, x)."""
    m = x if x > 0.0 else 0.0
    return m + log1p_f64(exp_f64(-abs(x))) if x == x else x


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
sigmoid_f32, softplus_f32 = _f32(sigmoid_f64), _f32(softplus_f64)

#: sympy function name -> (float64 form, float32 form), what the printer emits in fast mode
FAST = {
    "exp": ("exp_f64", "exp_f32"), "expm1": ("expm1_f64", "expm1_f32"),
    "log": ("log_f64", "log_f32"), "log1p": ("log1p_f64", "log1p_f32"),
    "sin": ("sin_f64", "sin_f32"), "cos": ("cos_f64", "cos_f32"),
    "tanh": ("tanh_f64", "tanh_f32"),
    "Sigmoid": ("sigmoid_f64", "sigmoid_f32"), "Softplus": ("softplus_f64", "softplus_f32"),
}
