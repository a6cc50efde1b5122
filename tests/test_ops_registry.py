"""Tests generated from the op registry: a new op is tested the moment it is registered."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.ops.registry import REGISTRY
from symgrad.ops.symbols import NUMPY_FUNCTIONS, input_symbols

from symgrad.testing import check_gradients, check_vjp

from .helpers import fd_gradients, uniform

ELEMENTWISE = sorted(name for name, op in REGISTRY.items()
                     if op.kind == "elementwise" and op.public)
SMOOTH = [n for n in ELEMENTWISE if REGISTRY[n].differentiable
          and n not in ("where", "identity")]
STRUCTURAL_TESTED = {"reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min",
                     "matmul", "transpose", "reshape", "getitem", "cast"}
INTERNAL = {"expr", "ones_like", "zeros_like", "reshape_like", "expand_dims", "broadcast_like",
            "unbroadcast", "unbroadcast_any", "getitem_grad", "axis_size", "prod_others",
            "placeholder", "constant"}
# index, scan and contraction ops: their cases live in tests/test_ops_indexing.py
STRUCTURAL_TESTED |= {"gather", "cumsum", "cumprod", "einsum", "tensordot", "argmax", "argmin",
                      "one_hot"}
INTERNAL |= {"gather_grad", "shift", "linrec", "einsum_mask"}
# sg.linalg (inputs must be positive definite, symmetric...): tests/test_linalg.py
STRUCTURAL_TESTED |= {"cholesky", "triangular_solve", "solve", "inv", "det", "adjugate", "slogdet",
                      "eigh", "qr"}
# v5 linalg records (svd, expm, lu): tests/test_linalg_v5.py
STRUCTURAL_TESTED |= {"svd", "expm", "lu"}
# assembly ops: their cases live in tests/test_assembly.py
STRUCTURAL_TESTED |= {"scatter_nd", "tensor_scatter_nd_add", "tensor_scatter_nd_update",
                      "gather_nd"}
INTERNAL |= {"segment_gather"}
# loops and branches (symgrad/control): their cases live in tests/test_control_flow.py
STRUCTURAL_TESTED |= {"scan", "while_loop", "cond"}
# v5 sorting ops: sort has examples on its record; the others are tested in tests/test_ops_v5.py
STRUCTURAL_TESTED |= {"argsort", "searchsorted"}
INTERNAL |= {"take_along_axis", "put_along_axis"}


def _arity(name: str) -> int:
    fn = REGISTRY[name].numpy
    if name == "where":
        return 3
    nin = getattr(fn, "nin", None)
    if nin is not None:
        return nin
    params = inspect.signature(fn).parameters.values()
    return sum(p.default is inspect.Parameter.empty for p in params)


def _inputs(name, rng, shape=(5,)):
    return [uniform(rng, REGISTRY[name].domain, shape) for _ in range(_arity(name))]


# layout ops declare their cases on the record (OpDef.examples): run below
EXAMPLES = [(name, k) for name, op in sorted(REGISTRY.items()) for k in range(len(op.examples))]
INTERNAL |= {"concat_part", "tile_grad", "diag_fill"}  # gradients of layout ops: second order
# v2 elementwise: an integer order input / sg.gelu(approximate=True); tested in
# tests/test_v2_elementwise.py (the tables above draw every input from the domain)
INTERNAL |= {"polygamma", "gelu_tanh", "norm_sqrt"}


def test_every_op_is_covered_by_a_test_table():
    covered = set(ELEMENTWISE) | STRUCTURAL_TESTED | INTERNAL | {n for n, _ in EXAMPLES}
    assert set(REGISTRY) <= covered, sorted(set(REGISTRY) - covered)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_sympy_form_matches_numpy_forward(name):
    """Backends print the sympy form, so it must compute what the numpy forward does."""
    op = REGISTRY[name]
    if name == "where":
        args = [np.array([True, False, True]), np.arange(3.0), -np.arange(3.0)]
    elif name.startswith("logical"):
        args = [np.array([True, False, True]), np.array([False, False, True])][:_arity(name)]
    else:
        args = _inputs(name, np.random.default_rng(1), (7,))
    symbols = input_symbols([a.dtype for a in args])
    fn = sp.lambdify(symbols, op.formula(symbols, {}), modules=[NUMPY_FUNCTIONS, "numpy"])
    expected = op.numpy(*args)
    np.testing.assert_allclose(np.broadcast_to(fn(*args), expected.shape), expected,
                               rtol=1e-13)


@pytest.mark.parametrize("name", SMOOTH)
def test_gradient_matches_finite_differences(name):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    values = _inputs(name, rng)
    xs = [sg.placeholder(f"x{k}", shape=(5,)) for k in range(len(values))]
    y = getattr(sg, name)(*xs)
    feeds = dict(zip(xs, values))
    grads = sg.evaluate(sg.gradients(y, xs), feeds)
    for got, want in zip(grads, fd_gradients(y, xs, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", [n for n in SMOOTH if n not in ("sign", "abs", "relu",
                                                                 "maximum", "minimum")])
def test_second_derivative_matches_finite_differences(name):
    rng = np.random.default_rng(7)
    values = _inputs(name, rng)
    xs = [sg.placeholder(f"x{k}", shape=(5,)) for k in range(len(values))]
    first = sg.gradients(getattr(sg, name)(*xs), xs[0])[0]
    feeds = dict(zip(xs, values))
    second = sg.evaluate(sg.gradients(first, xs), feeds)
    for got, want in zip(second, fd_gradients(first, xs, feeds)):
        # None where the first derivative does not depend on x (TF: linear -> None)
        got = np.zeros_like(want) if got is None else got
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_partials_agree_with_plain_sympy_away_from_kinks():
    """Our TF-convention functions differ from sympy's only at kinks."""
    from symgrad.differentiate.partials import local_partial
    x = sg.placeholder("x")
    point = {sp.Symbol("_0", real=True): sp.Float(0.7)}
    plain = {"abs": sp.Abs, "relu": lambda a: sp.Max(a, 0), "softplus":
             lambda a: sp.log(1 + sp.exp(a)), "sigmoid": lambda a: 1 / (1 + sp.exp(-a))}
    t = sp.Symbol("t", real=True)
    for name, fn in plain.items():
        ours = local_partial(getattr(sg, name)(x), 0).subs(point)
        theirs = sp.diff(fn(t), t).subs(t, 0.7)
        assert abs(float(ours) - float(theirs)) < 1e-12, name


STRUCTURAL_CASES = {
    "reduce_sum_axis0": lambda x: sg.reduce_sum(sg.sin(x), axis=0),
    "reduce_sum_keepdims": lambda x: sg.reduce_sum(x * x, axis=-1, keepdims=True),
    "reduce_mean": lambda x: sg.reduce_mean(sg.exp(x), axis=1),
    "reduce_mean_all": lambda x: sg.reduce_mean(x * x),
    "reduce_prod": lambda x: sg.reduce_prod(x, axis=1),
    "reduce_max": lambda x: sg.reduce_max(x * x, axis=0),
    "reduce_min": lambda x: sg.reduce_min(sg.sin(x), axis=(0, 1)),
    "matmul": lambda x: sg.matmul(x, sg.transpose(x)),
    "matmul_vector": lambda x: x @ sg.constant([1.0, -2.0, 0.5, 3.0]),
    "transpose": lambda x: sg.transpose(x) * sg.constant(np.arange(12.0).reshape(4, 3)),
    "reshape": lambda x: sg.reshape(x, (2, -1)) ** 2,
    "getitem": lambda x: x[1:, ::2] * x[:2, 1::2],
    "getitem_newaxis": lambda x: x[:, None, :] - x[None, :, :],
    "cast": lambda x: sg.cast(x, "float32") * 2.0,
}


@pytest.mark.parametrize("name", sorted(STRUCTURAL_CASES))
def test_structural_gradient_matches_finite_differences(name):
    rng = np.random.default_rng(3)
    x = sg.placeholder("x", shape=(3, 4))
    y = STRUCTURAL_CASES[name](x)
    feeds = {x: rng.uniform(0.5, 2.0, size=(3, 4))}
    (got,) = sg.evaluate(sg.gradients(y, [x]), feeds)
    eps = 1e-2 if name == "cast" else 1e-6  # float32 values: linear, so a large step is exact
    (want,) = fd_gradients(y, [x], feeds, eps=eps)
    np.testing.assert_allclose(got, want, rtol=1e-4 if name == "cast" else 1e-6, atol=1e-6)


# --- structural ops with declared examples (layout ops) -----------------------------------------
def _example(name, k):
    op = REGISTRY[name]
    ex = op.examples[k]
    public = getattr(sg, ex.public or name)
    rng = np.random.default_rng(k + 17 * len(name))
    arrays = [rng.uniform(-2.0, 2.0, size=shape) for shape in ex.shapes]

    def fn(*xs):
        return public(list(xs), **ex.kwargs) if ex.listed else public(*xs, **ex.kwargs)
    fn.__name__ = f"{name}_{k}"
    return ex, fn, arrays


def _outputs(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


@pytest.mark.parametrize("name,k", EXAMPLES)
def test_example_forward_matches_numpy_on_every_engine(name, k):
    """sg.evaluate, the eager op and compiled cpu/parallel all give the numpy reference."""
    ex, fn, arrays = _example(name, k)
    want = _outputs(ex.reference(*arrays))
    xs = [sg.placeholder(f"x{j}", a.shape) for j, a in enumerate(arrays)]
    ys = _outputs(fn(*xs))
    assert [y.shape for y in ys] == [np.shape(w) for w in want]
    feeds = dict(zip(xs, arrays))
    eager = [y.numpy() for y in _outputs(fn(*[sg.Variable(a) for a in arrays]))]
    results = {"evaluate": sg.evaluate(ys, feeds), "eager": eager}
    for target in ("cpu", "parallel"):
        results[target] = sg.function(xs, ys, target=target)(*arrays)
    for engine, got in results.items():
        assert len(got) == len(want), engine
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w, err_msg=engine)


@pytest.mark.parametrize("name,k", EXAMPLES)
@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_example_gradient_four_ways(name, k, target):
    """sg.gradients (evaluate and compiled), the tape and finite differences agree."""
    _, fn, arrays = _example(name, k)
    check_gradients(fn, *arrays, rtol=1e-7, atol=1e-9, target=target).assert_ok()


@pytest.mark.parametrize("name,k", EXAMPLES)
@pytest.mark.parametrize("engine", ["tape", "symbolic"])
def test_example_dot_product_vjp(name, k, engine):
    _, fn, arrays = _example(name, k)
    check_vjp(fn, *arrays, engine=engine, seed=k)


@pytest.mark.parametrize("name,k", EXAMPLES)
def test_example_second_order_symbolic_tape_and_differences(name, k):
    """H v of sum(sin(op(x))**2) by sg.gradients twice, nested tapes and differences."""
    _, fn, arrays = _example(name, k)
    rng = np.random.default_rng(9)
    vs = [rng.standard_normal(a.shape) for a in arrays]

    def loss(*xs):
        return sum(sg.reduce_sum(sg.sin(y) ** 2) for y in _outputs(fn(*xs)))
    xs = [sg.placeholder(f"x{j}", a.shape) for j, a in enumerate(arrays)]
    grads = sg.gradients(loss(*xs), xs)
    hv = sg.gradients(sum(sg.reduce_sum(g * v) for g, v in zip(grads, vs)), xs)
    feeds = dict(zip(xs, arrays))
    symbolic = sg.evaluate(hv, feeds)
    eps = 1e-5
    up = sg.evaluate(grads, {x: a + eps * v for x, a, v in zip(xs, arrays, vs)})
    down = sg.evaluate(grads, {x: a - eps * v for x, a, v in zip(xs, arrays, vs)})
    variables = [sg.Variable(a) for a in arrays]
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = loss(*variables)
        inner_grads = inner.gradient(y, variables)
        target = sum(sg.reduce_sum(g * v) for g, v in zip(inner_grads, vs))
    tape = outer.gradient(target, variables)
    for s_, u, d, t in zip(symbolic, up, down, tape):
        np.testing.assert_allclose(s_, (u - d) / (2 * eps), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(t.numpy(), s_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,k", EXAMPLES)
def test_example_with_unknown_dims(name, k):
    """Placeholders with None dims: shapes stay compatible, every engine gives the same
    forward values and gradients (compiled cpu/parallel vs sg.evaluate)."""
    ex, fn, arrays = _example(name, k)
    unknown = ex.unknown if ex.unknown is not None else tuple((None,) * len(s)
                                                              for s in ex.shapes)
    if unknown == ():
        pytest.skip("the op needs static shapes")
    xs = [sg.placeholder(f"x{j}", shape) for j, shape in enumerate(unknown)]
    ys = _outputs(fn(*xs))
    want = _outputs(ex.reference(*arrays))
    for y, w in zip(ys, want):
        assert len(y.shape) == np.ndim(w)
        assert all(d is None or d == e for d, e in zip(y.shape, np.shape(w))), (y.shape, w.shape)
    rng = np.random.default_rng(4)
    seeds = [rng.standard_normal(np.shape(w)) for w in want]
    loss = sum(sg.reduce_sum(sg.sin(y) * c) for y, c in zip(ys, seeds))
    outputs = ys + sg.gradients(loss, xs)
    reference = sg.evaluate(outputs, dict(zip(xs, arrays)))
    for got, w in zip(reference, want):
        np.testing.assert_array_equal(got, w)
    for target in ("cpu", "parallel"):
        compiled = sg.function(xs, outputs, target=target)(*arrays)
        for got, r in zip(compiled, reference):
            np.testing.assert_allclose(got, r, rtol=1e-12, atol=1e-14, err_msg=target)
# v2 gradients: ops whose tests live in tests/test_v2_gradients.py
INTERNAL |= {"prevent_gradient", "custom_gradient"}
# bool reductions (TF's reduce_all/reduce_any): bool in, bool out, no gradient (None)
BOOL_REDUCTIONS = {"reduce_all": np.all, "reduce_any": np.any}
STRUCTURAL_TESTED |= set(BOOL_REDUCTIONS)
BOOL_REDUCTION_CASES = [(None, False), (0, False), (1, True), ((0, 1), True), (-1, False)]


def bool_reduction_case(name, axis, keepdims):
    """``(fn, arrays, want)``: the op on ``x > 0`` of a random (3, 4) array; shared with
    tests/test_ops_cuda_completeness.py."""
    arrays = [np.random.default_rng(11).uniform(-1.0, 1.0, size=(3, 4))]
    arrays[0][1] = np.abs(arrays[0][1])        # one all-True row
    arrays[0][2] = -np.abs(arrays[0][2])       # one all-False row

    def fn(x):
        return getattr(sg, name)(x > 0, axis=axis, keepdims=keepdims)
    want = BOOL_REDUCTIONS[name](arrays[0] > 0, axis=axis, keepdims=keepdims)
    return fn, arrays, want


@pytest.mark.parametrize("axis,keepdims", BOOL_REDUCTION_CASES)
@pytest.mark.parametrize("name", sorted(BOOL_REDUCTIONS))
def test_bool_reduction_on_every_engine(name, axis, keepdims):
    assert not REGISTRY[name].differentiable
    fn, arrays, want = bool_reduction_case(name, axis, keepdims)
    x = sg.placeholder("x", shape=(None, 4))
    y = fn(x)
    assert y.dtype == np.bool_ and len(y.shape) == np.ndim(want)
    results = {"evaluate": sg.evaluate(y, {x: arrays[0]}),
               "eager": fn(sg.Variable(arrays[0])).numpy()}
    for target in ("cpu", "parallel"):
        results[target] = sg.function([x], [y], target=target)(arrays[0])[0]
    for engine, got in results.items():
        assert got.dtype == np.bool_, engine
        np.testing.assert_array_equal(got, want, err_msg=engine)
    loss = sg.reduce_sum(sg.where(y, 1.0, 2.0) * sg.reduce_sum(x))
    assert sg.gradients(sg.reduce_sum(sg.cast(y, "float64")), [x]) == [None]
    assert sg.evaluate(sg.gradients(loss, [x]), {x: arrays[0]})[0].shape == (3, 4)
    variable = sg.Variable(arrays[0])
    with sg.GradientTape() as tape:
        out = sg.cast(fn(variable), "float64")
    assert tape.gradient(sg.reduce_sum(out), variable) is None


@pytest.mark.parametrize("name", sorted(BOOL_REDUCTIONS))
def test_bool_reduction_rejects_numbers(name):
    with pytest.raises(TypeError, match=rf"sg\.{name}: 'x' has dtype float64; {name} takes "
                                        r"bool tensors \(compare first"):
        getattr(sg, name)(sg.placeholder("x", shape=(3,)))
    with pytest.raises(sg.DTypeError, match="int64"):
        getattr(sg, name)(sg.Variable(np.arange(3)))
