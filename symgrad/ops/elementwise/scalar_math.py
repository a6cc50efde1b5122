"""Scalar special functions of the elementwise ops: one plain-Python body each.

Each body is written in the scalar subset that numba compiles for the CPU and as a CUDA
device function (``math.*``, ``np.floor``, loops over numbers, no calls to other
helpers), so it is used three ways:

* ``symgrad.compile.kernel_lib.support_v2`` wraps it with ``numba.njit`` (the generated kernels
  call it; CUDA device code recompiles the same code object);
* :func:`vectorized` runs it on numpy arrays with ``math`` bound to numpy's ufuncs (no
  Python exceptions on ``log(0)`` or ``1/0``): the numpy forward of ``sg.evaluate`` and
  the tape, so every engine computes the same numbers.

The trailing ``one`` argument is a typed 1 (``f32(1.0)`` in float32 kernels).

Accuracy against mpmath (float64; tests/test_v2_elementwise.py, docs/ops_elementwise.md):

* erfc: 1 - erf(x) below 1/2, a Chebyshev series above: < 2e-15 relative;
* erfinv: Giles' approximation refined by Newton steps: < 4e-15 relative;
* lgamma: Lanczos (g = 7, 9 terms), reflection below 1/2: < 2e-14 relative (absolute
  where |lgamma| < 1);
* digamma: reflection, recurrence up to 10, asymptotic series: < 3e-14 relative
  (absolute where |psi| < 1);
* polygamma (orders 1-3): recurrence up to 20, asymptotic series: < 5e-14 relative.

>>> round(float(vectorized(digamma)(1.0)), 12)  # -Euler's constant
-0.577215664902
>>> float(vectorized(erfinv)(0.5))
0.4769362762044699
"""

from __future__ import annotations

import math
import types

import numpy as np

PI = 3.141592653589793
SQRT_PI = 1.7724538509055160
TWO_OVER_SQRT_PI = 1.1283791670955126
LN2 = 0.6931471805599453
HALF_LOG_2PI = 0.9189385332046728
INF = float("inf")
NAN = float("nan")

# Lanczos approximation, g = 7, 9 coefficients
LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
           771.32342877765313, -176.61502916214059, 12.507343278686905,
           -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
# log(erfc(z) / t) + z**2 = sum' c_k T_k(2t - 1), t = 2 / (2 + z), for z >= 0 (Chebyshev
# coefficients computed with mpmath at 40 digits; the 31st is below 1e-18)
ERFC_CHEB = (-1.3026537197817094, 0.6419697923564902, 0.019476473204185836,
             -0.009561514786808632, -0.0009465953444820369, 0.00036683949785276145,
             4.252332480690777e-05, -2.0278578112534242e-05, -1.6242900046470256e-06,
             1.3036558355805232e-06, 1.5626441722066142e-08, -8.523809591492654e-08,
             6.5290544390988515e-09, 5.059343495551469e-09, -9.91364156493033e-10,
             -2.273651222931836e-10, 9.646791102015527e-11, 2.3940380830391146e-12,
             -6.886027526497553e-12, 8.944879273090725e-13, 3.130921399342958e-13,
             -1.1270822361367252e-13, 3.810905255189232e-16, 7.106097613609237e-15,
             -1.5230282014571043e-15, -9.457494571291233e-17, 1.210237189224279e-16,
             -2.816663087747177e-17, 5.003005559445902e-20, 2.3281042579529253e-18,
             -8.446077682509006e-19)
# Bernoulli numbers B2, B4, ..., B16
BERNOULLI = (1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0, -691.0 / 2730.0,
             7.0 / 6.0, -3617.0 / 510.0)


def cbrt(x, one):
    """Real cube root (odd): a power then one Newton step; 0, inf and nan pass through."""
    if x == 0 or x - x != 0:
        return x
    a = abs(x)
    r = a ** (one / (one + one + one))
    r = r - (r * r * r - a) / ((one + one + one) * r * r)
    return r if x > 0 else -r


def hypot(x, y, one):
    """sqrt(x*x + y*y) without overflow; an infinity wins over nan (C99)."""
    a = abs(x)
    b = abs(y)
    if a < b:
        a, b = b, a
    if a == INF or b == INF:
        return INF * one
    if a != a or b != b:
        return a + b
    if a == 0:
        return a
    r = b / a
    return a * math.sqrt(one + r * r)


def logaddexp(x, y, one):
    """log(exp(x) + exp(y)) as numpy's npy_logaddexp."""
    if x == y:
        return x + LN2 * one
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d


def erfc(x, one):
    """1 - erf(x) without cancellation: erf below 1/2, a Chebyshev series of
    log(erfc(z)) + z**2 in t = 2 / (2 + z) above (as Numerical Recipes' erfccheb)."""
    if x != x:
        return x
    ax = abs(x)
    if ax < 0.5:
        r = one - math.erf(ax)
    elif ax > 27.3:  # below the smallest subnormal (and inf)
        r = 0.0 * one
    else:
        t = 2.0 / (2.0 + ax)
        ty = 4.0 * t - 2.0
        d = 0.0
        dd = 0.0
        for j in range(30, 0, -1):
            d, dd = ty * d - dd + ERFC_CHEB[j], d
        xs = np.floor(ax * 16.0) / 16.0  # exp(-x*x) = exp(-xs*xs) exp(-(x-xs)(x+xs))
        r = t * math.exp(-xs * xs) * math.exp(0.5 * (ERFC_CHEB[0] + ty * d) - dd
                                               - (ax - xs) * (ax + xs))
    return r if x >= 0 else (one + one) - r


def erfinv(x, one):
    """Inverse of erf: Giles' single-precision approximation refined by Newton steps on
    erf(y) - x (|x| <= 1/2) or on erfc(y) - (1 - |x|), which keeps accuracy near 1."""
    ax = abs(x)
    if not ax < 1:
        return x * INF if ax == 1 else NAN * one
    w = -math.log((one - ax) * (one + ax))
    if w < 5.0:
        w = w - 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    y = p * ax
    for _ in range(12):  # Newton: 2 steps usually, more within 1e-9 of 1
        if ax <= 0.5:
            r = math.erf(y) - ax
        else:  # erfc(y) as in erfc() above (y >= 0.47)
            if y < 0.5:
                e = one - math.erf(y)
            else:
                t = 2.0 / (2.0 + y)
                ty = 4.0 * t - 2.0
                d = 0.0
                dd = 0.0
                for j in range(30, 0, -1):
                    d, dd = ty * d - dd + ERFC_CHEB[j], d
                ys = np.floor(y * 16.0) / 16.0
                e = t * math.exp(-ys * ys) * math.exp(0.5 * (ERFC_CHEB[0] + ty * d) - dd
                                                      - (y - ys) * (y + ys))
            r = (one - ax) - e
        step = r / (TWO_OVER_SQRT_PI * math.exp(-y * y))
        y = y - step
        if abs(step) <= 1e-15 * y:
            break
    return y if x >= 0 else -y


def lgamma(x, one):
    """log|Gamma(x)|: Lanczos for x >= 1/2, reflection below; +inf at 0, -1, -2, ..."""
    if x != x or x == INF:
        return x
    if x == -INF:
        return INF * one
    shift = 0.0 * one
    sign = one
    z = x
    if x < 0.5:
        frac = x - np.floor(x)
        if frac == 0:
            return INF * one
        shift = math.log(PI / abs(math.sin(PI * frac)))
        sign = -one
        z = one - x
    z = z - one
    s = LANCZOS[0] * one
    for i in range(1, 9):
        s += LANCZOS[i] / (z + i)
    t = z + 7.5
    return shift + sign * (HALF_LOG_2PI + (z + 0.5) * math.log(t) - t + math.log(s))


def digamma(x, one):
    """psi(x) = d/dx log Gamma(x): reflection for x <= 0, recurrence up to x >= 10, then
    the asymptotic series; nan at 0, -1, -2, ..."""
    if x != x or x == INF:
        return x
    if x == -INF:
        return NAN * one
    result = 0.0 * one
    if x <= 0:
        fl = np.floor(x)
        if x == fl:
            return NAN * one
        result = -PI / math.tan(PI * (x - fl))
        x = one - x
    while x < 10:
        result -= one / x
        x += one
    i = one / (x * x)
    series = i * (1.0 / 12 - i * (1.0 / 120 - i * (1.0 / 252 - i * (
        1.0 / 240 - i * (1.0 / 132 - i * (691.0 / 32760 - i / 12))))))
    return result + math.log(x) - 0.5 / x - series


def polygamma(x, n, one):
    """The n-th derivative of digamma (n >= 1, given as a number): the recurrence
    psi_n(x) = psi_n(x+1) + (-1)**(n+1) n!/x**(n+1) up to x >= 20, then the asymptotic
    series; +-inf at 0, -1, -2, ... (the sign of the limit from the right)."""
    k = int(n)
    sign = one if k % 2 == 1 else -one
    if x != x:
        return x
    if x <= 0 and x == np.floor(x):
        return sign * INF
    fact = one  # (k-1)!
    for j in range(1, k):
        fact *= j
    total = 0.0 * one
    while x < 20:
        total += fact * k / x ** (k + 1)
        x += one
    total += fact / x ** k + fact * k / (2.0 * x ** (k + 1))
    ratio = fact * k * (k + 1) / 2.0  # (2j+k-1)!/(2j)! for j = 1
    power = x ** (k + 2)
    for j in range(1, 9):
        total += BERNOULLI[j - 1] * ratio / power
        ratio *= (2.0 * j + k) * (2.0 * j + k + 1) / ((2.0 * j + 1) * (2.0 * j + 2))
        power *= x * x
    return sign * total


# --- tanh' -----------------------------------------------------------------------------------
def tanh_prime(x, one):
    """tanh'(x) = sech(x)**2 = 4 e / (1 + e (2 + e)) with e = exp(-2|x|): no
    cancellation (``1 - tanh(x)**2`` loses every digit once tanh(x) rounds to 1), no
    overflow (0 for huge |x|, NaN for NaN), and no compensated step that a kernel's
    fast-math flags could fold away: (1 + e)**2 is written 1 + e (2 + e), one rounding of a
    sum near 1..4. At most 2.4 ulp (tests/test_vecmath.py). Computed in the type of
    ``one`` (float32 kernels stay float32)."""
    two = one + one
    e = math.exp(-two * abs(x))
    return (two + two) * e / (one + e * (two + e))


def tanh_prime_numpy(x):
    """``tanh_prime`` on arrays (computed in float64, returned in x's float dtype)."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        e = np.exp(-2.0 * np.abs(x.astype(np.float64)))
        value = 4.0 * e / (1.0 + e * (2.0 + e))
    return value.astype(np.result_type(x, np.float32), copy=False)


# --- the numpy form: the same bodies on arrays ----------------------------------------------
def _numpy_math() -> types.ModuleType:
    ns = types.ModuleType("symgrad_numpy_math")
    for name in ("sin", "cos", "tan", "exp", "log", "expm1", "log1p", "sqrt"):
        setattr(ns, name, getattr(np, name))
    ns.erf = lambda v: np.float64(math.erf(v))
    ns.nan, ns.inf = math.nan, math.inf
    return ns


_NUMPY_MATH = _numpy_math()


def vectorized(body):
    """``body`` on numpy arrays (float64 arithmetic, result in the inputs' float dtype)."""
    scalar = types.FunctionType(body.__code__, {**body.__globals__, "math": _NUMPY_MATH},
                                body.__name__)
    nargs = body.__code__.co_argcount - 1
    loop = np.vectorize(lambda *a: scalar(*[np.float64(v) for v in a], np.float64(1.0)),
                        otypes=[np.float64])

    def fn(*arrays):
        arrays = [np.asarray(a) for a in arrays[:nargs]]
        with np.errstate(all="ignore"):
            out = loop(*arrays)
        return np.asarray(out).astype(np.result_type(arrays[0], np.float32), copy=False)
    fn.__name__ = body.__name__
    fn.__doc__ = body.__doc__
    return fn
