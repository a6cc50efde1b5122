"""sg.from_sympy: sympy expressions and matrices as Tensors (docs/from_sympy.md).

Values against ``sympy.lambdify`` (numpy), gradients against ``sympy.diff`` evaluated and
against central differences, the compiled function against ``sg.evaluate``, Matrix outputs,
Piecewise and logic, errors, and the walk's linear size on shared sub-expressions.
"""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.graph.traversal import topological_order
from symgrad.interop.sympy_table import covered, reverse_table, special_forms

x, y, z = sp.symbols("x y z", real=True)
RNG = np.random.default_rng(7)
N = 7
XV = RNG.uniform(0.3, 1.7, N)
YV = RNG.uniform(0.3, 1.7, N)
ZV = RNG.uniform(-1.5, 1.5, N)

# (expression, name); x, y in (0.3, 1.7), z in (-1.5, 1.5)
SMOOTH = [
    (sp.sin(x) * y + sp.cos(y) / x, "trig"),
    (sp.exp(-x * y) - sp.log(x + y) * z, "exp-log"),
    (sp.sqrt(x) + 1 / sp.sqrt(y) + x ** 2 - 1 / x, "special powers"),
    (x ** 3 - y ** sp.Rational(3, 2) + x ** -2 + x ** y + 2 ** z, "powers"),
    (sp.tanh(z) + sp.atan2(z, x) + sp.atan(z) * sp.asinh(y), "tanh-atan2"),
    (sp.tan(z / 2) + sp.asin(z / 2) + sp.acos(x / 2) + sp.acosh(x + 1) + sp.atanh(z / 2),
     "inverse trig"),
    (sp.sinh(z) * sp.cosh(x) - x / (2 * y) + sp.Rational(1, 3) * z - sp.pi * x + sp.E,
     "rational coefficients"),
    (sp.erf(z) + sp.erfc(x) + sp.loggamma(x + 1) + sp.digamma(y + 1), "special functions"),
    (-x - y + 3 - 2 * x * y * z + sp.sqrt(2) * z, "negatives"),
    ((x * y - z) ** 2 / (1 + x ** 2 * y ** 2), "rational function"),
    (sp.Abs(z) * x + sp.Max(z, x * y / 2) - sp.Min(z, x, 0.5 * y), "kinks away from ties"),
]

NONSMOOTH = [
    (sp.sign(z) + sp.floor(3 * x) + sp.ceiling(z) + sp.Mod(3 * x, y), "piecewise constant"),
    (sp.Piecewise((x ** 2, z > 0.5), (y, (z < -0.5) & (x > 1)), (x + y, True)), "piecewise"),
    (sp.Piecewise((x, sp.Or(z > 1, z < -1)), (-y, sp.Not(x > 1))), "piecewise no default"),
    (sp.Max(z, 0) + sp.Max(0, x - 1, z), "relu and n-ary max"),
]


def _lambdified(expr):
    return sp.lambdify((x, y, z), expr, modules=["numpy", "scipy"])


def _placeholders(dtype="float64"):
    return [sg.placeholder(n, shape=(None,), dtype=dtype) for n in ("X", "Y", "Z")]


def _convert(expr, dtype="float64"):
    X, Y, Z = _placeholders(dtype)
    return sg.from_sympy(expr, {x: X, y: Y, z: Z}), (X, Y, Z)


@pytest.mark.parametrize("expr,name", SMOOTH + NONSMOOTH, ids=[n for _, n in SMOOTH + NONSMOOTH])
def test_values_match_lambdify(expr, name):
    t, (X, Y, Z) = _convert(expr)
    got = sg.evaluate(t, {X: XV, Y: YV, Z: ZV})
    with np.errstate(all="ignore"):
        want = np.broadcast_to(_lambdified(expr)(XV, YV, ZV), (N,))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("expr,name", SMOOTH, ids=[n for _, n in SMOOTH])
def test_gradients_match_sympy_diff_and_finite_differences(expr, name):
    t, (X, Y, Z) = _convert(expr)
    grads = sg.gradients(sg.reduce_sum(t), [X, Y, Z], unconnected_gradients="zero")
    feed = {X: XV, Y: YV, Z: ZV}
    got = sg.evaluate(grads, feed)
    for g, s in zip(got, (x, y, z)):
        want = np.broadcast_to(_lambdified(sp.diff(expr, s))(XV, YV, ZV), (N,))
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-10)
    f = sg.function([X, Y, Z], [t])
    h = 1e-6
    for k in range(3):
        lo, hi = [XV.copy(), YV.copy(), ZV.copy()], [XV.copy(), YV.copy(), ZV.copy()]
        lo[k] -= h
        hi[k] += h
        fd = (f(*hi)[0] - f(*lo)[0]) / (2 * h)
        np.testing.assert_allclose(got[k], fd, rtol=1e-6, atol=1e-6)


def test_compiled_agrees_with_evaluate_and_the_tape():
    expr = SMOOTH[1][0] + SMOOTH[4][0] * SMOOTH[3][0]
    t, (X, Y, Z) = _convert(expr)
    (gx,) = sg.gradients(sg.reduce_sum(t), [X])
    feed = {X: XV, Y: YV, Z: ZV}
    want = sg.evaluate([t, gx], feed)
    got = sg.function([X, Y, Z], [t, gx])(XV, YV, ZV)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10)
    vx = sg.Variable(XV)
    with sg.GradientTape() as tape:
        eager = sg.from_sympy(expr, {x: vx, y: YV, z: ZV})
        loss = sg.reduce_sum(eager)
    np.testing.assert_allclose(eager.numpy(), want[0], rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(loss, vx).numpy(), want[1], rtol=1e-10)


def test_float32_inputs_stay_float32_and_numbers_take_their_dtype():
    expr = sp.pi * x / 3 + sp.sqrt(2) - sp.Rational(1, 7) * y ** 2
    t, (X, Y, Z) = _convert(expr, "float32")
    assert t.dtype == np.float32
    got = sg.evaluate(t, {X: XV.astype(np.float32), Y: YV.astype(np.float32)})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _lambdified(expr)(XV, YV, ZV), rtol=1e-6)
    const = sg.from_sympy(sp.pi + x * 0, {x: np.float32(1.0)})   # x*0 is 0: only a number
    assert sg.evaluate(const).dtype == np.float32 and float(sg.evaluate(const)) == \
        pytest.approx(np.pi, rel=1e-6)


def test_python_numbers_in_mapping_are_weak_numbers_folded_with_the_others():
    a, b = sp.symbols("a b")
    X = sg.placeholder("X", shape=(3,), dtype="float32")
    expr = sp.Piecewise((a * b * x + sp.sqrt(a), a > 1), (x, True)) - b / 3
    t = sg.from_sympy(expr, {x: X, a: 2, b: 0.1})
    assert t.dtype == np.float32
    xv = np.array([1.0, 2.0, 3.0], np.float32)
    want = 0.2 * xv + np.sqrt(2.0) - 0.1 / 3
    np.testing.assert_allclose(sg.evaluate(t, {X: xv}), want, rtol=1e-6)
    ops = [n.op.name for n in topological_order([t])]
    assert ops.count("multiply") == 1 and "sqrt" not in ops and "where" not in ops


def test_mapping_values_broadcast_and_arrays_become_constants():
    X = sg.placeholder("X", shape=(3, 1))
    t = sg.from_sympy(x * y + 1, {x: X, y: np.arange(4.0)})
    assert t.shape == (3, 4)
    xv = np.array([[1.0], [2.0], [3.0]])
    np.testing.assert_array_equal(sg.evaluate(t, {X: xv}), xv * np.arange(4.0) + 1)


def test_mapping_is_not_modified_and_symbols_are_shared_across_calls():
    X = sg.placeholder("X", shape=(2,))
    mapping = {x: X, y: [1.0, 2.0]}
    a = sg.from_sympy(x + y, mapping)
    assert mapping == {x: X, y: [1.0, 2.0]}
    np.testing.assert_array_equal(sg.evaluate(a, {X: [1.0, 1.0]}), [2.0, 3.0])


# --- Matrix -----------------------------------------------------------------------------------
def test_matrix_gives_a_tensor_of_its_shape_first():
    M = sp.Matrix([[x, 1, sp.sin(y)], [0, x * y, sp.pi]])
    X, Y = sg.placeholder("X", shape=(5,)), sg.placeholder("Y", shape=())
    t = sg.from_sympy(M, {x: X, y: Y})
    assert t.shape == (2, 3, 5)
    xv, yv = np.linspace(0, 1, 5), 0.7
    got = sg.evaluate(t, {X: xv, Y: yv})
    want = np.array([[xv, np.ones(5), np.full(5, np.sin(yv))],
                     [np.zeros(5), xv * yv, np.full(5, np.pi)]])
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_immutable_matrix_and_unknown_dims_and_the_jacobian():
    q = sg.placeholder("q", shape=(2,))
    M = sp.ImmutableMatrix([x ** 2 * y, sp.exp(x) + y])
    t = sg.reshape(sg.from_sympy(M, {x: q[0], y: q[1]}), (2,))
    jac = sg.jacobian(t, q)
    qv = np.array([0.3, -1.2])
    want = np.array(sp.lambdify((x, y), M.jacobian([x, y]))(*qv), dtype=float)
    np.testing.assert_allclose(sg.evaluate(jac, {q: qv}), want, rtol=1e-13)
    X = sg.placeholder("X", shape=(None,))
    u = sg.from_sympy(sp.Matrix([[x, 2], [x * x, 0]]), {x: X})
    got = sg.evaluate(u, {X: [1.0, 3.0]})
    np.testing.assert_array_equal(got, [[[1.0, 3.0], [2.0, 2.0]], [[1.0, 9.0], [0.0, 0.0]]])


def test_a_number_expression_is_a_constant_tensor():
    t = sg.from_sympy(sp.sqrt(2) * sp.pi, {})
    assert isinstance(t, sg.Tensor) and t.dtype == np.float64
    assert float(sg.evaluate(t)) == pytest.approx(np.sqrt(2) * np.pi, rel=1e-15)
    b = sg.from_sympy(sp.Integer(1) > 0, {})
    assert b.dtype == np.bool_ and bool(sg.evaluate(b))


# --- Piecewise and logic ------------------------------------------------------------------------
def test_piecewise_is_nested_where_and_the_unselected_branch_gives_no_nan():
    X = sg.placeholder("X", shape=(4,))
    expr = sp.Piecewise((sp.log(x), x > 0), (0, True))
    t = sg.from_sympy(expr, {x: X})
    xv = np.array([-1.0, 0.0, 0.5, 2.0])
    np.testing.assert_allclose(sg.evaluate(t, {X: xv}), [0.0, 0.0, np.log(0.5), np.log(2.0)])
    (g,) = sg.gradients(sg.reduce_sum(t), [X])
    np.testing.assert_array_equal(sg.evaluate(g, {X: xv}), [0.0, 0.0, 2.0, 0.5])
    ops = {n.op.name for n in topological_order([t])}
    assert "where" in ops and "greater" in ops


def test_logic_ops_and_boolean_symbols():
    b = sp.Symbol("b")
    X = sg.placeholder("X", shape=(4,))
    B = sg.placeholder("B", shape=(4,), dtype="bool")
    expr = sp.Piecewise((1, sp.And(b, x > 0)), (2, sp.Or(sp.Not(b), sp.Eq(x, -1))), (3, True))
    t = sg.from_sympy(expr, {x: X, b: B})
    got = sg.evaluate(t, {X: [1.0, -1.0, 1.0, -2.0], B: [True, True, False, True]})
    np.testing.assert_array_equal(got, [1.0, 2.0, 2.0, 3.0])
    ne = sg.from_sympy(sp.Ne(x, 1) & (x <= 2), {x: X})
    np.testing.assert_array_equal(sg.evaluate(ne, {X: [1.0, 2.0, 3.0, 0.0]}),
                                  [False, True, False, True])


def test_where_needs_a_bool_condition():
    b = sp.Symbol("b")
    with pytest.raises(sg.DTypeError, match="condition must be bool"):
        sg.from_sympy(sp.Piecewise((1, b), (0, True)), {b: sg.placeholder("B", (2,))})


# --- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("expr,name", [
    (sp.DiracDelta(x), "DiracDelta"), (sp.zeta(x), "zeta"), (sp.bessely(0, x), "bessely"),
])
def test_a_function_without_an_op_raises_not_implemented_naming_it(expr, name):
    with pytest.raises(NotImplementedError, match=f"'{name}'"):
        sg.from_sympy(expr, {x: sg.placeholder("X", (2,))})


@pytest.mark.parametrize("expr,text", [
    (sp.Function("f")(x) + 1, "f(x)"), (sp.Derivative(sp.Function("g")(x), x), "Derivative"),
])
def test_an_unmapped_undefined_function_is_a_feed_error_naming_it(expr, text):
    with pytest.raises(sg.FeedError, match=re.escape(text)):
        sg.from_sympy(expr, {x: sg.placeholder("X", (2,))})


def test_a_function_of_numbers_only_is_a_number():
    t = sg.from_sympy(sp.gamma(sp.Rational(5, 2)) * x, {x: 2.0})
    assert float(sg.evaluate(t)) == pytest.approx(2 * 1.329340388179137, rel=1e-15)


def test_a_missing_symbol_is_named():
    with pytest.raises(sg.FeedError, match="free symbol 'y' is not in mapping"):
        sg.from_sympy(x + y, {x: 1.0})
    other = sp.Symbol("x")  # no real=True: a different symbol
    with pytest.raises(ValueError, match="other assumptions"):
        sg.from_sympy(other + 1, {x: 1.0})


def test_bad_arguments():
    with pytest.raises(TypeError, match="keys must be sympy Symbols"):
        sg.from_sympy(x, {"x": 1.0})
    with pytest.raises(TypeError, match="mapping must be a dict"):
        sg.from_sympy(x, [(x, 1.0)])
    with pytest.raises(TypeError, match="sympy expression"):
        sg.from_sympy("x + 1", {x: 1.0})
    with pytest.raises(ValueError, match="not real"):
        sg.from_sympy(x + sp.I, {x: 1.0})
    with pytest.raises(sg.DTypeError, match=r"mapping\[x\]"):
        sg.from_sympy(x, {x: "one"})


# --- linear size -------------------------------------------------------------------------------
def _chain(depth, a=x, b=y):
    e = a
    for _ in range(depth):
        e = sp.sin(e) * e + b   # a tree of 3**depth leaves, a DAG of ~3 depth nodes
    return e


def test_shared_subexpressions_convert_in_linear_size():
    X, Y = sg.placeholder("X", (3,)), sg.placeholder("Y", (3,))
    sizes = []
    for depth in (100, 200, 400):
        a, b = sp.symbols(f"a{depth} b{depth}")   # fresh symbols: no sympy cache hits
        e = _chain(depth, a, b)
        t = sg.from_sympy(e, {a: X, b: Y})   # a tree walk would take 3**100 steps
        sizes.append(len(topological_order([t])))
    assert sizes[2] - sizes[1] == 2 * (sizes[1] - sizes[0])   # a fixed number per level
    assert sizes[0] <= 3 * 100 + 5            # sin, multiply, add per level
    xv, yv = np.array([0.1, 0.2, 0.3]), np.array([0.05, 0.0, -0.1])
    small = _chain(6)
    np.testing.assert_allclose(sg.evaluate(sg.from_sympy(small, {x: X, y: Y}), {X: xv, Y: yv}),
                               sp.lambdify((x, y), small)(xv, yv), rtol=1e-12)


# --- the table and its documentation -----------------------------------------------------------
def test_the_table_is_read_from_the_records():
    table = reverse_table()
    names = {e.op.name for entries in table.values() for e in entries}
    assert {"sin", "exp", "log", "sqrt", "square", "abs", "maximum", "relu", "floor", "ceil",
            "erf", "erfc", "erfinv", "digamma", "arctan2", "floormod", "less", "logical_and",
            "logical_not", "pow", "tanh"} <= names
    assert covered()["Abs"] == "abs" and covered()["ceiling"] == "ceil"
    assert ("Pow(x0, 1/2)", "sqrt") in special_forms()


def test_docs_list_every_covered_sympy_function():
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "from_sympy.md").read_text()
    missing = [name for name in covered() if f"`{name}`" not in text]
    missing += [form for form, _ in special_forms() if f"`{form}`" not in text]
    assert missing == []
