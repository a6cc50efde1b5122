"""Completeness on the cuda target: every public registered op compiles with
``target="cuda"`` (the CUDA simulator in CI, a GPU when one is present) and agrees with
``sg.evaluate``, value and gradient. An op that cannot would be listed in CUDA_EXCLUDED with
the reason (none is today). The cpu and parallel targets are covered the same way by
tests/test_ops_registry.py."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.ops.registry import REGISTRY

from .helpers import to_host
from .test_ops_registry import ELEMENTWISE, EXAMPLES, _example, _inputs

CUDA_EXCLUDED: dict = {}


def _check(fn, arrays):
    xs = [sg.placeholder(f"x{j}", a.shape, dtype=a.dtype) for j, a in enumerate(arrays)]
    y = fn(*xs)
    ys = list(y) if isinstance(y, (list, tuple)) else [y]
    floats = [x for x in xs if x.dtype.kind == "f"]
    loss = sg.add_n([sg.reduce_sum(sg.cast(t, "float64")) for t in ys]) \
        if hasattr(sg, "add_n") else sum(sg.reduce_sum(sg.cast(t, "float64")) for t in ys)
    grads = [g for g in sg.gradients(loss, floats) if g is not None] if floats else []
    outputs = ys + grads
    feeds = dict(zip(xs, arrays))
    want = sg.evaluate(outputs, feeds)
    got = sg.function(xs, outputs, target="cuda")(*arrays)
    for g, w in zip(got, want):
        np.testing.assert_allclose(to_host(g), w, rtol=1e-9, atol=1e-12, equal_nan=True)


@pytest.mark.cuda
@pytest.mark.parametrize("name", [n for n in ELEMENTWISE if n not in CUDA_EXCLUDED])
def test_elementwise_op_compiles_on_cuda(name):
    rng = np.random.default_rng(5)
    arrays = _inputs(name, rng, shape=(4,))
    if name == "where":
        arrays[0] = arrays[0] > 0
    _check(getattr(sg, name) if hasattr(sg, name) else
           (lambda *xs: sg.ops.registry.apply(REGISTRY[name], xs)), arrays)


@pytest.mark.cuda
@pytest.mark.parametrize("name,k", [e for e in EXAMPLES if e[0] not in CUDA_EXCLUDED])
def test_structural_example_compiles_on_cuda(name, k):
    _, fn, arrays = _example(name, k)
    _check(fn, arrays)


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["reduce_all", "reduce_any"])
def test_bool_reduction_compiles_on_cuda(name):
    from .test_ops_registry import BOOL_REDUCTION_CASES, bool_reduction_case
    for axis, keepdims in BOOL_REDUCTION_CASES:
        fn, arrays, want = bool_reduction_case(name, axis, keepdims)
        x = sg.placeholder("x", shape=(None, 4))
        got = to_host(sg.function([x], [fn(x)], target="cuda")(arrays[0])[0])
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, want)
