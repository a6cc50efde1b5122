"""sg.define_op: forward, partials from sympy.diff, the tape's derived reverse rules, fusion and
compilation (cpu, parallel, cuda under the simulator), latex, LookupError where sympy has
no derivative, and the user's name never becoming code."""

from __future__ import annotations

import os

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.testing import check_vjp

from .helpers import fd_gradients

bump = sg.define_op("gauss_bump", lambda x: x * sp.exp(-x**2))
bilinear = sg.define_op("bilinear_sin", lambda x, y: x * y + sp.sin(x))
softclip = sg.define_op("softclip", lambda x, c: c * sp.tanh(x / c))


def _bump_np(x):
    return x * np.exp(-x**2)


def _bump_d1(x):
    return (1 - 2 * x**2) * np.exp(-x**2)


def _bump_d2(x):
    return (4 * x**3 - 6 * x) * np.exp(-x**2)


def test_forward_first_and_second_derivatives_in_the_graph():
    value = np.array([-1.2, 0.0, 0.4, 2.0])
    x = sg.placeholder("x", (4,))
    y = bump(x)
    (g,) = sg.gradients(sg.reduce_sum(y), x)
    (gg,) = sg.gradients(sg.reduce_sum(g), x)
    got = sg.evaluate([y, g, gg], {x: value})
    for out, want in zip(got, (_bump_np(value), _bump_d1(value), _bump_d2(value))):
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-15)
    for target in ("cpu", "parallel"):
        compiled = sg.function([x], [y, g, gg], target=target)(value)
        for out, want in zip(compiled, got):
            np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-15)


def test_tape_to_third_order_and_against_the_graph():
    value = np.array([-1.2, 0.3, 2.0])
    v = sg.Variable(value)
    with sg.GradientTape() as t3:
        with sg.GradientTape() as t2:
            with sg.GradientTape() as t1:
                y = sg.reduce_sum(bump(v))
            g = sg.reduce_sum(t1.gradient(y, v))
        gg = t2.gradient(g, v)
        s = sg.reduce_sum(gg)
    ggg = t3.gradient(s, v).numpy()
    np.testing.assert_allclose(gg.numpy(), _bump_d2(value), rtol=1e-12)
    np.testing.assert_allclose(ggg, (-8 * value**4 + 24 * value**2 - 6) * np.exp(-value**2),
                               rtol=1e-12)


def test_binary_ops_broadcast_and_match_finite_differences_and_the_tape():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (3, 4)), rng.uniform(0.5, 2, (4,))
    x, c = sg.placeholder("x", (3, 4)), sg.placeholder("c", (4,))
    y = sg.reduce_sum(softclip(x, c) * bilinear(x, c))
    grads = sg.gradients(y, [x, c])
    got = sg.evaluate(grads, {x: a, c: b})
    for g, fd in zip(got, fd_gradients(y, [x, c], {x: a, c: b})):
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    vx, vc = sg.Variable(a), sg.Variable(b)
    with sg.GradientTape() as tape:
        z = sg.reduce_sum(softclip(vx, vc) * bilinear(vx, vc))
    for t, g in zip(tape.gradient(z, [vx, vc]), got):
        np.testing.assert_allclose(t.numpy(), g, rtol=1e-12)
    check_vjp(lambda p, q: softclip(p, q) * bilinear(p, q), a, b, engine="symbolic")


def test_it_fuses_into_one_kernel_and_latex_shows_the_formula():
    x = sg.placeholder("x", (5,))
    y = sg.reduce_sum(bump(sg.sin(x)) * 2.0)
    (g,) = sg.gradients(y, x)
    source = sg.function([x], [y, g]).source
    assert source.count("# kernel 0:") == 1 and "# kernel 1" not in source
    assert bump.op.name in source
    s = sg.placeholder("s")
    assert sg.latex(bump(s)) == "s e^{- s^{2}}"


def test_the_name_never_becomes_code():
    evil = "x'); import os; os.system('echo pwned') #\n__import__('os')"
    op = sg.define_op(evil, lambda x: x * x + 1)
    assert op.op.name.startswith("user_") and op.op.name[5:].isalnum()
    x = sg.placeholder("x", (3,))
    (g,) = sg.gradients(sg.reduce_sum(op(x)), x)
    source = sg.function([x], [op(x), g]).source
    assert "pwned" not in source and "import os" not in source
    np.testing.assert_array_equal(sg.evaluate(g, {x: [1.0, 2.0, 3.0]}), [2.0, 4.0, 6.0])
    assert sg.define_op("other name", lambda x: x * x + 1).op is op.op  # keyed by formula


def test_underivable_formula_raises_lookup_error_on_differentiation():
    g = sp.Function("g")
    under = sg.define_op("underivable", lambda x: g(x), numpy=lambda x: np.array(x))
    x = sg.placeholder("x", (2,))
    np.testing.assert_array_equal(sg.evaluate(under(x), {x: [1.0, 2.0]}), [1.0, 2.0])
    with pytest.raises(LookupError, match="sympy cannot differentiate"):
        sg.gradients(sg.reduce_sum(under(x)), x)
    v = sg.Variable([1.0, 2.0])
    with sg.GradientTape() as tape:
        y = sg.reduce_sum(under(v))
    with pytest.raises(LookupError, match="sympy cannot differentiate"):
        tape.gradient(y, v)


def test_bad_definitions_are_reported():
    with pytest.raises(ValueError, match="not its arguments"):
        sg.define_op("stray", lambda x: x * sp.Symbol("k"))
    with pytest.raises(ValueError, match="undefined function"):
        sg.define_op("nofwd", lambda x: sp.Function("h")(x))
    with pytest.raises(TypeError, match="at least one"):
        sg.define_op("none", lambda: sp.S.One)
    with pytest.raises(TypeError, match="name must be a str"):
        sg.define_op(3, lambda x: x)
    with pytest.raises(TypeError, match="takes 2 input"):
        bilinear(sg.placeholder("x", ()))


@pytest.mark.cuda
@pytest.mark.compiled
def test_cuda_target_agrees_with_cpu():
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        from numba import cuda
        if not cuda.is_available():
            pytest.skip("no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    value = np.linspace(-2.0, 2.0, 8)
    x = sg.placeholder("x", (8,))
    y = sg.reduce_sum(bump(x) * bilinear(x, 0.5))
    (g,) = sg.gradients(y, x)
    got = sg.function([x], [y, g], target="cuda")(value)
    want = sg.function([x], [y, g], target="cpu")(value)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_max_and_min_compile_as_piecewise_and_numpy_lacking_functions_evaluate():
    relu_sq = sg.define_op("relu_sq", lambda x: sp.Max(x, 0) ** 2 + sp.Min(x, -1))
    x = sg.placeholder("x", (4,))
    value = np.array([-2.0, -0.5, 0.5, 2.0])
    (g,) = sg.gradients(sg.reduce_sum(relu_sq(x)), x)
    want = [np.maximum(value, 0) ** 2 + np.minimum(value, -1), 2 * np.maximum(value, 0)
            + (value < -1)]
    for got in (sg.evaluate([relu_sq(x), g], {x: value}),
                sg.function([x], [relu_sq(x), g])(value)):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b)
    gamma3 = sg.define_op("gamma3", lambda x: sp.gamma(x + 3))
    np.testing.assert_allclose(sg.evaluate(gamma3(x), {x: [0.0, 1.0, 2.0, 3.0]}),
                               [2.0, 6.0, 24.0, 120.0])


def test_formula_returning_a_string_is_never_parsed(tmp_path):
    """sympify would parse (and run) a string: define_op accepts only sympy expressions."""
    marker = tmp_path / "ran"
    payload = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
    with pytest.raises(TypeError, match="must return a sympy expression"):
        sg.define_op("from_string", lambda x: payload)
    assert not marker.exists()
