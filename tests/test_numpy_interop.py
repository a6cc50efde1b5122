"""numpy functions on symbolic Tensors build symgrad ops (issue 20, item 4)."""

import numpy as np
import pytest

import symgrad as sg
from symgrad.numpy_interop import FUNCTIONS, UFUNCS

M = np.arange(6.0).reshape(2, 3) / 7.0 + 0.1
V = np.array([0.3, -0.2, 0.9])


@pytest.fixture(scope="module")
def xs():
    return sg.placeholder("m", shape=(2, 3)), sg.placeholder("v", shape=(3,))


def _run(t, xs):
    m, v = xs
    assert isinstance(t, sg.Tensor)
    return sg.evaluate(t, {m: M, v: V})


@pytest.mark.parametrize("build, expected", [
    (lambda m, v: np.sin(v), lambda: np.sin(V)),
    (lambda m, v: np.exp(v) * 2, lambda: np.exp(V) * 2),
    (lambda m, v: np.sum(v), lambda: np.sum(V)),
    (lambda m, v: np.arange(3.0) * v + 1, lambda: np.arange(3.0) * V + 1),
    (lambda m, v: np.float64(2.0) ** v, lambda: 2.0 ** V),
    (lambda m, v: np.mean(m, axis=0), lambda: np.mean(M, axis=0)),
    (lambda m, v: np.max(m, axis=1, keepdims=True), lambda: np.max(M, axis=1, keepdims=True)),
    (lambda m, v: np.min(m), lambda: np.min(M)),
    (lambda m, v: np.prod(m, axis=1), lambda: np.prod(M, axis=1)),
    (lambda m, v: np.matmul(m, v), lambda: M @ V),
    (lambda m, v: np.dot(m, v), lambda: np.dot(M, V)),
    (lambda m, v: np.transpose(m), lambda: M.T),
    (lambda m, v: np.reshape(m, (3, 2)), lambda: M.reshape(3, 2)),
    (lambda m, v: np.where(v > 0, v, 0.0), lambda: np.where(V > 0, V, 0.0)),
    (lambda m, v: np.concatenate([v, v]), lambda: np.concatenate([V, V])),
    (lambda m, v: np.stack([v, v], axis=1), lambda: np.stack([V, V], axis=1)),
    (lambda m, v: np.clip(v, 0.0, 0.5), lambda: np.clip(V, 0.0, 0.5)),
    (lambda m, v: np.cumsum(m, axis=1), lambda: np.cumsum(M, axis=1)),
    (lambda m, v: np.cumsum(m), lambda: np.cumsum(M)),
    (lambda m, v: np.tensordot(m, v, 1), lambda: np.tensordot(M, V, 1)),
    (lambda m, v: np.einsum("ij,j->i", m, v), lambda: np.einsum("ij,j->i", M, V)),
    (lambda m, v: np.add.reduce(m), lambda: np.add.reduce(M)),
    (lambda m, v: np.abs(v) + np.maximum(v, 0.1), lambda: np.abs(V) + np.maximum(V, 0.1)),
    (lambda m, v: np.arctan2(v, 2.0) + np.log1p(np.square(v)),
     lambda: np.arctan2(V, 2.0) + np.log1p(V ** 2)),
])
def test_numpy_builds_the_symgrad_op(xs, build, expected):
    np.testing.assert_allclose(_run(build(*xs), xs), expected(), rtol=1e-12, atol=1e-15)


def test_numpy_results_are_differentiable(xs):
    m, v = xs
    loss = np.sum(np.sin(v) * np.exp(v))
    (g,) = sg.gradients(loss, v)
    np.testing.assert_allclose(sg.evaluate(g, {v: V}),
                               np.cos(V) * np.exp(V) + np.sin(V) * np.exp(V))
    assert np.shape(m) == (2, 3) and np.ndim(v) == 1


@pytest.mark.parametrize("call, message", [
    (lambda v: np.isnan(v), r"numpy.isnan on a symgrad Tensor: symgrad has no isnan op; "
                            r"compare x != x"),
    (lambda v: np.fmax(v, v), r"numpy.fmax .*use sg.maximum"),
    (lambda v: np.sort(v), r"numpy.sort .*symgrad has no sort op"),
    (lambda v: np.sinc(v), r"numpy.sinc .*symgrad has no sinc op"),
    (lambda v: np.add.outer(v, v), r"numpy.add.outer .*symgrad has no op"),
    (lambda v: np.sum(v, out=np.zeros(())), r"numpy.sum .*out have no symgrad meaning"),
    (lambda v: np.where(v > 0), r"numpy.where .*give all three arguments"),
    (lambda v: np.linalg.norm(v), r"numpy.linalg.norm on a symgrad Tensor: use sg.norm"),
])
def test_what_symgrad_lacks_is_a_type_error_naming_what_to_use(xs, call, message):
    with pytest.raises(TypeError, match=message):
        call(xs[1])


def test_an_op_on_a_string_names_the_op():
    with pytest.raises(TypeError, match=r"sg.sin: argument 0 is str 'abc'"):
        sg.sin("abc")
    with pytest.raises(TypeError, match=r"sg.add: argument 1 is dict"):
        sg.placeholder("p") + {}


def test_tables_are_keyed_by_numpy_objects_and_name_real_functions():
    assert all(isinstance(u, np.ufunc) for u in UFUNCS)
    assert all(hasattr(sg, name) for name in UFUNCS.values())
    assert all(callable(f) and not isinstance(f, str) for f in FUNCTIONS)


def test_eager_values_convert_to_numpy_as_in_tensorflow():
    v = sg.Variable([0.5, 1.0])
    out = np.sin(v)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, np.sin([0.5, 1.0]))
