"""symgrad.compile.kernel_lib.vecmath: accuracy against a 200-bit mpmath reference over wide ranges,
libm's answers at the special values, and that the loops really vectorise.

Each function runs inside a loop compiled with the generated kernels' own fast-math flags
(the flags an inlined function inherits), and inside a strict loop.
"""

from __future__ import annotations

import math
import re

import mpmath
import numba
import numpy as np
import pytest

from symgrad.compile.kernel_lib import vecmath as vm

KERNEL_FASTMATH = {"contract", "afn", "reassoc", "arcp", "nsz"}
REFERENCE = {
    "exp": mpmath.exp, "expm1": mpmath.expm1, "log": mpmath.log, "log1p": mpmath.log1p,
    "sin": mpmath.sin, "cos": mpmath.cos, "tanh": mpmath.tanh,
    "sigmoid": lambda x: 1 / (1 + mpmath.exp(-x)),
    "softplus": lambda x: mpmath.log1p(mpmath.exp(x)),
    "tanh_prime": lambda x: mpmath.sech(x) ** 2,
}
#: the documented bound of each function, in ulp (docs/vecmath.md)
BOUND = {"exp": 1.5, "expm1": 2.0, "log": 1.0, "log1p": 1.5, "sin": 1.5, "cos": 1.5,
         "tanh": 2.5, "sigmoid": 2.5, "softplus": 2.0, "tanh_prime": 4.0}
LIBM = {"exp": math.exp, "expm1": math.expm1, "log": math.log, "log1p": math.log1p,
        "sin": math.sin, "cos": math.cos, "tanh": math.tanh}


def _loop(fn, fastmath):
    @numba.njit(error_model="numpy", fastmath=fastmath)
    def run(xs, out):
        for i in range(xs.size):
            out[i] = fn(xs[i])
    return run


_LOOPS: dict = {}
_IN_RANGE = numba.njit(lambda x: vm.trig_in_range(x))   # kernel-only functions: via numba


def apply(name: str, xs, dtype="f64", fastmath=True) -> np.ndarray:
    key = (name, dtype, fastmath)
    if key not in _LOOPS:
        fn = getattr(vm, f"{name}_{dtype}")
        _LOOPS[key] = _loop(fn, KERNEL_FASTMATH if fastmath else False)
    xs = np.asarray(xs, dtype=np.float64 if dtype == "f64" else np.float32)
    out = np.empty_like(xs)
    _LOOPS[key](xs, out)
    return out


def samples(name: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    small = rng.uniform(-1, 1, 1500) * 10.0 ** rng.uniform(-300, 0, 1500)
    if name == "log":
        return np.concatenate([10.0 ** rng.uniform(-307, 308, 3000), 5e-324 *
                               rng.integers(1, 2**40, 300), 1 + small[:500] * 1e-3])
    if name == "log1p":
        return np.concatenate([small, rng.uniform(-1, 1, 2000), 10.0 ** rng.uniform(-5, 300,
                               1000), -1 + 10.0 ** rng.uniform(-16, -0.01, 500)])
    wide = {"exp": (-745.1, 709.7), "expm1": (-60, 709.7), "sin": (-1e9, 1e9),
            "cos": (-1e9, 1e9), "tanh": (-30, 30), "sigmoid": (-740, 740),
            "softplus": (-740, 740), "tanh_prime": (-380, 380)}[name]
    xs = np.concatenate([small, rng.uniform(*wide, 3000), rng.uniform(-3, 3, 1500)])
    if name in ("sin", "cos"):      # near multiples of pi/2: the hardest reductions
        k = rng.integers(1, 2**29, 1000)
        xs = np.concatenate([xs, k * (np.pi / 2), np.nextafter(k * (np.pi / 2), 0)])
    return xs


def max_ulp(name: str, xs: np.ndarray, got: np.ndarray) -> float:
    mpmath.mp.prec = 200
    worst = 0.0
    for x, y in zip(xs.tolist(), got.tolist()):
        ref = REFERENCE[name](mpmath.mpf(x))
        rf = float(ref)
        if rf == 0.0 or not math.isfinite(rf):
            assert y == rf or (math.isnan(rf) and math.isnan(y)), (name, x, y, rf)
            continue
        worst = max(worst, float(abs(mpmath.mpf(y) - ref) / math.ulp(rf)))
    return worst


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_float64_accuracy_within_the_documented_bound(name):
    xs = samples(name)
    for fastmath in (True, False):
        assert max_ulp(name, xs, apply(name, xs, fastmath=fastmath)) <= BOUND[name], fastmath


SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
           1e-310, 1.0, -1.0, 0.5, 709.78, 709.79, 710.0, -745.13, -745.14, -708.5, 1e300,
           -1e300, 2.0**30, -(2.0**30) + 1, 20.0, -20.0, 40.0, -40.0]


@pytest.mark.parametrize("name", sorted(LIBM))
def test_special_values_are_libms(name):
    xs = np.array(SPECIAL)
    got = apply(name, xs)
    for x, y in zip(xs.tolist(), got.tolist()):
        if name in ("sin", "cos") and abs(x) >= vm.TRIG_LIMIT and math.isfinite(x):
            assert math.isnan(y) and not _IN_RANGE(x)   # the kernel reruns with libm
            continue
        try:
            want = LIBM[name](x)
        except OverflowError:                        # Python raises where C returns inf
            want = math.inf
        except ValueError:                           # ... or -inf / nan
            want = -math.inf if (name, x) in (("log", 0.0), ("log1p", -1.0)) else math.nan
        if math.isnan(want):
            assert math.isnan(y), (name, x, y)
        elif want == 0.0 or math.isinf(want):
            assert y == want and math.copysign(1, y) == math.copysign(1, want), (name, x, y)
        else:
            assert abs(y - want) <= 2 * math.ulp(want), (name, x, y, want)


def test_trig_in_range_marks_only_huge_finite_arguments():
    in_range = numba.njit(lambda x: vm.trig_in_range(x))    # kernel-only: called from numba
    assert in_range(1e9) and in_range(math.inf) and in_range(math.nan)
    assert not in_range(2.0**30) and not in_range(-1e300)
    with pytest.raises(TypeError, match="inside numba functions only"):
        vm.trig_in_range(1.0)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_float32_is_the_float64_result_rounded(name):
    with np.errstate(over="ignore"):
        xs = samples(name).astype(np.float32)
    xs = xs[np.isfinite(xs) & (np.abs(xs) < 1e8)]
    got = apply(name, xs, dtype="f32")
    with np.errstate(over="ignore"):
        want = apply(name, xs.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["exp", "log", "log1p", "expm1", "sin", "cos", "tanh",
                                  "tanh_prime"])
def test_the_loop_is_vectorised(name):
    """Packed double-precision instructions in the loop's assembly: a regression to scalar
    libm-style code shows up here (the speed itself is measured in benchmarks/)."""
    apply(name, np.ones(64))
    asm = next(iter(_LOOPS[(name, "f64", True)].inspect_asm().values()))
    packed = re.findall(r"\bv\w+pd\s+%[xyz]mm", asm)
    assert len(packed) >= 8, name


def _asm(name: str) -> str:
    apply(name, np.ones(64))
    return next(iter(_LOOPS[(name, "f64", True)].inspect_asm().values()))


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_no_scalar_float_int_conversions(name):
    """AVX2 has no packed float64 <-> int64 conversion: one ``np.int64(x)`` or
    ``np.float64(k)`` would be scalarised into four cvt instructions per vector."""
    assert not re.findall(r"\bv?cvtt?(?:sd2si|si2sd)", _asm(name)), name


def test_sin_and_cos_of_one_argument_share_their_work():
    """Inlined side by side, sin and cos of x share the range reduction and both
    polynomials (LLVM merges them): only the final selects are extra."""
    @numba.njit(error_model="numpy", fastmath=KERNEL_FASTMATH)
    def both(xs, out):
        for i in range(xs.size):
            out[i] = vm.sin_f64(xs[i]) + vm.cos_f64(xs[i])
    xs = np.linspace(-10, 10, 64)
    out = np.empty_like(xs)
    both(xs, out)
    np.testing.assert_allclose(out, np.sin(xs) + np.cos(xs), rtol=0, atol=1e-15)
    fma = r"\bvfn?m(?:add|sub)\w*pd\s+.*%[xyz]mm"
    n_sin = len(re.findall(fma, _asm("sin")))
    n_both = len(re.findall(fma, next(iter(both.inspect_asm().values()))))
    assert n_sin >= 10 and n_both <= n_sin + 2, (n_sin, n_both)


SPECIAL_BUILT = {   # x -> (sigmoid, softplus), numpy's answers
    0.0: (0.5, math.log(2.0)), -0.0: (0.5, math.log(2.0)), math.inf: (1.0, math.inf),
    -math.inf: (0.0, 0.0), 800.0: (1.0, 800.0), -800.0: (0.0, 0.0), 745.0: (1.0, 745.0),
}


@pytest.mark.parametrize("name", ["sigmoid", "softplus"])
def test_special_values_of_sigmoid_and_softplus(name):
    xs = np.array(list(SPECIAL_BUILT) + [math.nan, -740.0, 1e-320])
    got = apply(name, xs)
    want = [v[name == "softplus"] for v in SPECIAL_BUILT.values()]
    assert got[: len(want)].tolist() == want
    assert math.isnan(got[-3])
    ref = REFERENCE[name]
    mpmath.mp.prec = 200
    for x, y in zip(xs[-2:].tolist(), got[-2:].tolist()):
        assert abs(y - float(ref(mpmath.mpf(x)))) <= 2 * math.ulp(float(ref(mpmath.mpf(x))))


LONG_DOUBLE = np.finfo(np.longdouble).nmant >= 63
DENSE = {   # name -> (long double reference, argument generator)
    "exp": (np.exp, lambda g: g.uniform(-745, 709.7, 200_000)),
    "expm1": (np.expm1, lambda g: g.uniform(-40, 40, 200_000)),
    "log": (np.log, lambda g: 10.0 ** g.uniform(-300, 300, 200_000)),
    "log1p": (np.log1p, lambda g: g.uniform(-0.999, 10, 200_000)),
    "sin": (np.sin, lambda g: g.uniform(-100, 100, 200_000)),
    "cos": (np.cos, lambda g: g.uniform(-100, 100, 200_000)),
    "tanh": (np.tanh, lambda g: g.uniform(-3, 3, 200_000)),
    "sigmoid": (lambda v: 1 / (1 + np.exp(-v)), lambda g: g.uniform(-40, 40, 200_000)),
    "softplus": (lambda v: np.logaddexp(np.longdouble(0), v),
                 lambda g: g.uniform(-40, 40, 200_000)),
    "tanh_prime": (lambda v: 1 / np.cosh(v) ** 2,
                   lambda g: np.concatenate([g.uniform(-3, 3, 100_000),
                                             g.uniform(-380, 380, 100_000)])),
}


@pytest.mark.skipif(not LONG_DOUBLE, reason="needs an 80-bit long double reference")
@pytest.mark.parametrize("name", sorted(DENSE))
def test_dense_samples_within_the_bound(name):
    """200k random arguments against numpy's long double functions (64-bit mantissa: their
    own error is about 2**-11 ulp of a double). Dense sampling finds the worst cases that
    the 200-bit test's few thousand points miss."""
    ref, gen = DENSE[name]
    xs = gen(np.random.default_rng(11))
    want = ref(xs.astype(np.longdouble))
    err = np.abs(apply(name, xs).astype(np.longdouble) - want)
    ulp = np.spacing(np.abs(want.astype(np.float64)))
    assert float(np.max(err / ulp)) <= BOUND[name], name


# --- tanh' = sech**2 in every form (issue 20: 1 - tanh**2 cancels where tanh' is small) ------

def _tanh_prime_forms() -> dict:
    """Each form of tanh' symgrad computes, as a function of a float64 array: the fast
    (vector) form, the libm form (support_v2's njit helper: sg.function(math="libm") and
    the CUDA device helper), the numpy form (sg.evaluate and the tape), and the old
    ``1 - tanh**2`` for comparison."""
    from symgrad.compile.kernel_lib import support_v2
    from symgrad.ops.elementwise.scalar_math import tanh_prime_numpy

    @numba.njit(error_model="numpy", fastmath=KERNEL_FASTMATH)
    def libm(xs, out):
        for i in range(xs.size):
            out[i] = support_v2.tanh_prime_(xs[i], 1.0)

    @numba.njit(error_model="numpy", fastmath=KERNEL_FASTMATH)
    def old(xs, out):
        for i in range(xs.size):
            t = math.tanh(xs[i])
            out[i] = 1.0 - t * t

    def run(loop):
        def fn(xs):
            out = np.empty_like(xs)
            loop(xs, out)
            return out
        return fn
    return {"fast": lambda xs: apply("tanh_prime", xs), "libm": run(libm),
            "numpy": tanh_prime_numpy, "1 - tanh**2": run(old)}


def tanh_prime_ulps(xs: np.ndarray) -> dict:
    """Max ulp error of each form of tanh' over ``xs`` (long double reference)."""
    want = 1 / np.cosh(xs.astype(np.longdouble)) ** 2
    ulp = np.spacing(np.abs(want.astype(np.float64)))
    return {name: float(np.max(np.abs(fn(xs).astype(np.longdouble) - want) / ulp))
            for name, fn in _tanh_prime_forms().items()}


@pytest.mark.skipif(not LONG_DOUBLE, reason="needs an 80-bit long double reference")
def test_every_form_of_tanh_prime_is_within_4_ulp():
    g = np.random.default_rng(12)
    xs = np.concatenate([g.uniform(-3, 3, 100_000), g.uniform(-30, 30, 50_000),
                         g.uniform(-380, 380, 50_000)])
    ulps = tanh_prime_ulps(xs)
    assert max(ulps["fast"], ulps["libm"], ulps["numpy"]) <= BOUND["tanh_prime"], ulps
    assert ulps["1 - tanh**2"] > 20, ulps            # the cancellation the forms avoid


def test_tanh_prime_special_values():
    xs = np.array([0.0, -0.0, math.inf, -math.inf, 800.0, -800.0, 1e300, math.nan])
    for name, fn in _tanh_prime_forms().items():
        if name == "1 - tanh**2":
            continue
        got = fn(xs)
        assert got[:7].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0], name
        assert math.isnan(got[7]), name
