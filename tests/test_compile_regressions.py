"""Graphs users wrote that the compiler once rejected: each compiles on every target and
agrees with sg.evaluate (issue 8, 'compile what users write')."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.scalar import settings as scalar_settings
from symgrad.compile.plan.regions import Kernel

TARGETS = ["cpu", "parallel"]
# cuda runs under the simulator on machines without a GPU (tests/conftest.py)
ALL_TARGETS = TARGETS + [pytest.param("cuda", marks=pytest.mark.cuda)]


def agree(inputs, outputs, args, target, rtol=1e-12, atol=1e-14):
    """Compile ``outputs`` for ``target``, compare with sg.evaluate; return the function."""
    f = sg.function(inputs, outputs, target=target)
    got = f(*args)
    want = sg.evaluate(outputs, dict(zip(inputs, args)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    return f


@pytest.mark.parametrize("target", TARGETS)
def test_schedule_cycle_through_a_step(target, monkeypatch):
    """Two transposes join regions so that a region grown after its descendant was made
    gains an ancestor; merging must see the path through the third region (was _Cycle)."""
    monkeypatch.setattr(scalar_settings, "ENABLED", False)   # the loop planner's regions
    x = sg.placeholder("x", (3, 3))
    f_, a = sg.sin(x), sg.cos(x)
    c = sg.exp(sg.transpose(a))
    e = sg.transpose(f_) * a
    n = c * f_
    args = [np.random.default_rng(0).uniform(-1, 1, (3, 3))]
    f = agree([x], [e, n], args, target)
    assert len(f.plan.kernels) >= 2
    order = [u for u in f.plan.units if isinstance(u, Kernel)]
    assert [k.index for k in order] == sorted(k.index for k in order)


def _selections(variant: int):
    """A ``where`` whose condition compares computed values, meeting maximum/relu/minimum
    of computed values: sympy's piecewise_fold then builds boolean ``ITE`` conditions."""
    x, y = sg.placeholder("x", (7,)), sg.placeholder("y", (7,))
    a, b = sg.sin(x), sg.cos(y)
    if variant == 0:
        w = sg.where(a > b, sg.maximum(a, b), sg.relu(a - b))
        out = sg.maximum(w, a * b)
    elif variant == 1:
        w = sg.where(sg.relu(a) >= b, sg.minimum(a * 2.0, b), a)
        out = sg.relu(w - 0.1) * sg.where(w < a, b, w)
    else:
        m = sg.maximum(a, b)
        out = sg.where(m > sg.relu(b), sg.where(a < 0.2, m, b), sg.minimum(m, a))
    loss = sg.reduce_sum(out * sg.relu(out + 0.5))
    return [x, y], [loss, out] + sg.gradients(loss, [x, y])


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("variant", [0, 1, 2])
def test_selection_of_selections_prints_ite(variant, target):
    inputs, outputs = _selections(variant)
    rng = np.random.default_rng(variant)
    args = [rng.uniform(-2, 2, 7), rng.uniform(-2, 2, 7)]
    agree(inputs, outputs, args, target)


def test_ite_prints_as_a_lazy_conditional():
    import sympy as sp
    from symgrad.compile.printing.printer import NumbaPrinter
    a, b, c = sp.symbols("a b c", real=True)
    expr = sp.ITE(a > 0, b <= a, c <= a)
    text = NumbaPrinter().doprint(expr)
    assert text == "((b <= a) if (a > 0.0) else (c <= a))"
    for values in [(1.0, 0.5, 2.0), (-1.0, 0.5, -2.0), (-1.0, -3.0, 0.0)]:
        env = dict(zip("abc", values))
        assert eval(text, {}, env) == bool(expr.subs(dict(zip((a, b, c), values))))


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_zero_d_indexing_fuses_into_one_kernel(target, monkeypatch):
    """Elements read by indexing are 0-d views; the arithmetic on them is one kernel."""
    monkeypatch.setattr(scalar_settings, "ENABLED", False)   # the loop planner's fusion
    x, y, a = (sg.placeholder("x", (3,)), sg.placeholder("y", (2,)),
               sg.placeholder("A", (2, 2)))
    outputs = [x[0] * x[1], sg.sin(y[0]), a[0, 1] * 2.0, x[-1] * a[1, 0] + y[1]]
    args = [np.array([1.5, 2.0, 3.0]), np.array([0.5, 0.7]), np.arange(4.0).reshape(2, 2)]
    f = agree([x, y, a], outputs, args, target)
    assert len(f.plan.kernels) == 1
    assert len(f.plan.kernels[0].nodes) == 5
    got = f(*args)
    assert [np.shape(g) for g in got] == [()] * 4
    np.testing.assert_allclose([float(g) for g in got], [3.0, np.sin(0.5), 2.0, 6.7])


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_hessian_by_components(target):
    """The natural Hessian, one gradient per component of the gradient, and an ODE
    right-hand side written over components."""
    n = 3
    x = sg.placeholder("x", (n,))
    y = sg.reduce_sum(sg.sin(x)) * x[0] * x[1] + x[2] ** 3.0
    g = sg.gradients(y, x)[0]
    hessian = [sg.gradients(g[i], x)[0] for i in range(n)]
    rhs = [x[1] * x[2], -sg.sin(x[0]), x[0] * x[1] - x[2]]
    v = np.array([0.3, 0.6, 0.9])
    f = agree([x], hessian + rhs, [v], target)
    got = np.array(f(v)[:n])
    s, c = np.sin(v), np.cos(v)
    p = v[0] * v[1]
    want = np.diag(-s * p)                       # d2/dxi2 of sum(sin) * x0 x1
    want[0, 0] += 2 * c[0] * v[1]
    want[1, 1] += 2 * c[1] * v[0]
    want[2, 2] += 6 * v[2]
    want[0, 1] = want[1, 0] = s.sum() + c[0] * v[0] + c[1] * v[1]
    want[0, 2] = want[2, 0] = c[2] * v[1]
    want[1, 2] = want[2, 1] = c[2] * v[0]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_exact_zero_never_drops_a_nan(target, dtype):
    """d/dx x**0.0 at 0 is 0 * 0**-1 = NaN (numpy, TensorFlow, sg.evaluate, the tape);
    0.0 * x at x = -inf is NaN. Lowering keeps a float 0 symbolic so sympy cannot fold
    these products to 0 (printer.ZERO)."""
    x = sg.placeholder("x", (4,), dtype=dtype)
    y = sg.reduce_sum(x ** 0.0)
    z = sg.where(x > 0, sg.log(x), 0.0 * x)
    outputs = [sg.gradients(y, x)[0], z]
    v = np.array([0.0, 1.0, 2.0, -np.inf], dtype=dtype)
    f = agree([x], outputs, [v], target, rtol=1e-6)
    grad, value = f(v)
    assert np.isnan(grad[0]) and np.all(grad[1:3] == 0.0)
    assert np.isnan(value[3]) and value[1] == 0.0
    xv = sg.Variable(v)
    with sg.GradientTape() as tape:
        out = sg.reduce_sum(xv ** 0.0)
    np.testing.assert_array_equal(np.asarray(tape.gradient(out, xv))[:3], grad[:3])


def test_zero_stays_exact_where_no_nan_can_arise():
    """A compared zero, and zero times a selection of numbers, fold as before."""
    from symgrad.compile.plan.fold import fold_graph
    from symgrad.compile.codegen.lower import lower_kernel
    from symgrad.compile.plan.regions import build_plan
    x = sg.placeholder("x", (3,))
    y = sg.reduce_sum(sg.relu(x) * 0.0 + sg.where(x > 0.0, x, 1.0))
    lowered = lower_kernel(build_plan(fold_graph([y, sg.gradients(y, x)[0]], [x])).kernels[0])
    text = " ".join(str(e) for e in lowered.results + [e for _, e in lowered.replacements])
    assert "0.0 <" not in text and "> 0.0" not in text    # comparisons use the exact 0


BOOL_OPERANDS = {  # a computed bool used as a number is numpy's 0/1 (was "Relational cannot
    # be used in Add", the fuzzer's class "bool-operand")
    "add": lambda b, c, y: b + y,
    "multiply": lambda b, c, y: b * y,
    "compare": lambda b, c, y: sg.greater_equal(b, y),
    "ceil": lambda b, c, y: sg.ceil(b),
    "logaddexp": lambda b, c, y: sg.logaddexp(b, y),
    "and-plus": lambda b, c, y: sg.logical_and(b, c) + y,
    "where-value": lambda b, c, y: sg.where(c, b, y),
    "where-cond": lambda b, c, y: sg.where(b, c, b),
    "maximum": lambda b, c, y: sg.maximum(b, c),
}


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("name", sorted(BOOL_OPERANDS))
def test_bool_operand_is_zero_or_one(name, target):
    x, y = sg.placeholder("x", (5,)), sg.placeholder("y", (5,))
    out = BOOL_OPERANDS[name](x > 0.1, y < 0.5, y)
    args = [np.array([-1., 0.1, 0.5, 2., -0.3]), np.array([1., 2., 0.3, -3., 0.5])]
    f = agree([x, y], [out], args, target)
    assert f(*args)[0].dtype == sg.evaluate([out], dict(zip([x, y], args)))[0].dtype


@pytest.mark.parametrize("target", TARGETS)
def test_bool_operand_gradient(target):
    """The 0/1 of a comparison is a constant to the gradient; the other factor is not."""
    x, y = sg.placeholder("x", (4,)), sg.placeholder("y", (4,))
    loss = sg.reduce_sum((sg.add(x > 0.0, x) * y) * sg.ceil(y < 1.0))
    args = [np.array([-1., 0.5, 2., 0.]), np.array([0.2, 3., -1., 0.9])]
    f = agree([x, y], sg.gradients(loss, [x, y]), args, target)
    gx, gy = f(*args)
    np.testing.assert_allclose(gx, args[1] * (args[1] < 1.0))
    np.testing.assert_allclose(gy, ((args[0] > 0) + args[0]) * (args[1] < 1.0))


NUMBERS_AS_BOOLS = {  # a number used as a bool is numpy's x != 0 (was sympy's "expecting
    # bool or Boolean", the fuzzer's class "logical-on-numbers")
    "and-constant": lambda x, y: sg.logical_and(x, 3.0),
    "and-zero-plus": lambda x, y: sg.logical_and(x, 0.0) + y,
    "and-product": lambda x, y: sg.logical_and(x * y, y > 0),
    "or-sin": lambda x, y: sg.logical_or(sg.sin(x), 0.0),
    "not-product": lambda x, y: sg.logical_not(x * y),
}


@pytest.mark.parametrize("target", ALL_TARGETS)
@pytest.mark.parametrize("name", sorted(NUMBERS_AS_BOOLS))
def test_number_as_bool_is_nonzero(name, target):
    x, y = sg.placeholder("x", (5,)), sg.placeholder("y", (5,))
    out = NUMBERS_AS_BOOLS[name](x, y)
    args = [np.array([0., 0.5, -2., 0., np.nan]), np.array([1., 0., 3., -1., 2.])]
    f = agree([x, y], [out], args, target)
    assert f(*args)[0].dtype == sg.evaluate([out], dict(zip([x, y], args)))[0].dtype


def test_bool_operand_used_as_a_number_in_a_gradient():
    """logaddexp(bool, float): the gradient's expression negates the bool as a number
    (sg.evaluate failed in numpy with "boolean negative"); evaluate and cpu agree."""
    b = sg.placeholder("b", shape=(3,), dtype="bool")
    x = sg.placeholder("x", shape=(3,))
    (g,) = sg.gradients(sg.reduce_sum(sg.logaddexp(b, x)), [x])
    bv, xv = np.array([True, False, True]), np.array([1.0, 0.5, -2.0])
    expected = 1.0 / (1.0 + np.exp(bv - xv))
    np.testing.assert_allclose(sg.evaluate(g, {b: bv, x: xv}), expected, rtol=1e-14)
    np.testing.assert_allclose(sg.function([b, x], g)(bv, xv), expected, rtol=1e-14)
