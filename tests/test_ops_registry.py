"""Tests generated from the op registry: a new op is tested the moment it is registered."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import sympy as sp

import symgrad as sg
from symgrad.ops.registry import REGISTRY
from symgrad.ops.symbols import NUMPY_FUNCTIONS, input_symbols

from .helpers import fd_gradients, uniform

ELEMENTWISE = sorted(name for name, op in REGISTRY.items()
                     if op.kind == "elementwise" and op.public)
SMOOTH = [n for n in ELEMENTWISE if REGISTRY[n].differentiable
          and n not in ("where", "identity")]
STRUCTURAL_TESTED = {"reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min",
                     "matmul", "transpose", "reshape", "getitem", "cast"}
INTERNAL = {"expr", "ones_like", "zeros_like", "reshape_like", "expand_dims", "broadcast_like",
            "unbroadcast", "unbroadcast_any", "getitem_grad", "axis_size", "prod_others", "placeholder",
            "constant"}
# index, scan and contraction ops: their cases live in tests/test_ops_indexing.py
STRUCTURAL_TESTED |= {"gather", "cumsum", "cumprod", "einsum", "tensordot", "argmax", "argmin",
                      "one_hot"}
INTERNAL |= {"gather_grad", "shift", "linrec", "einsum_mask"}


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


def test_every_op_is_covered_by_a_test_table():
    covered = set(ELEMENTWISE) | STRUCTURAL_TESTED | INTERNAL
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
