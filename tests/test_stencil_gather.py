"""Stencil adjoints as gathers (symgrad/compile/plan/gather.py): gradients of shifted slices
are written once per element of the buffer, with no zero-fill, and run under prange."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.plan.gather import gather_axes
from tests.helpers import compiled_matches_evaluate

pytestmark = pytest.mark.compiled


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


_check = partial(compiled_matches_evaluate, rtol=1e-10, atol=1e-9)


def _gathered(fn) -> list:
    return [k for k in fn.plan.kernels if gather_axes(k, "r") is not None]


def _laplace_1d(x):
    return sg.reduce_sum((x[2:] - 2.0 * x[1:-1] + x[:-2]) ** 2 + sg.sin(x[1:-1]))


def _dirichlet_2d(u):
    return sg.reduce_sum((u[1:, 1:] - u[:-1, 1:]) ** 2 + (u[1:, 1:] - u[1:, :-1]) ** 2)


def _laplacian_energy_2d(u):
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
    return 0.5 * sg.reduce_sum(lap * lap)


def _reversed(x):
    return sg.reduce_sum(sg.exp(x[-2::-1]) * x[:-1] + x[-2::-1] * x[1:])


CASES = {
    "laplace_1d": (_laplace_1d, (None,), (70_000,)),
    "reversed_1d": (_reversed, (None,), (40_000,)),
    "dirichlet_2d": (_dirichlet_2d, (None, None), (300, 200)),
    "dirichlet_2d_static": (_dirichlet_2d, (300, 200), (300, 200)),
    "laplacian_energy_2d": (_laplacian_energy_2d, (None, 180), (250, 180)),
}


@pytest.mark.parametrize("target", ["cpu", "parallel"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_stencil_gradient_is_a_gather(case, target):
    fn_of, shape, size = CASES[case]
    x = sg.placeholder("x", shape=shape)
    f = fn_of(x)
    xv = np.random.default_rng(4).standard_normal(size)
    fn = _check([x], [f] + sg.gradients(f, x), [xv], target)
    gathered = _gathered(fn)
    assert gathered, fn.source
    assert all(not k.serial_only for k in gathered)
    assert "np.zeros(" not in fn.source
    if target == "parallel":   # a prange loop, or its chunks on the pool (issue 19)
        assert "_parallel(" in fn.source or "chunks_(_k" in fn.source


@pytest.mark.parametrize("target", ["cpu", "parallel"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_tiny_lengths_hit_every_edge(n, target):
    x = sg.placeholder("x", shape=(None,))
    f = sg.reduce_sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2) + _laplace_1d(x)
    xv = np.random.default_rng(n).standard_normal(n)
    _check([x], [f] + sg.gradients(f, x), [xv], target)


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_gather_stores_and_keeps_other_outputs(target):
    x = sg.placeholder("x", shape=(None, 64))
    d = x[1:, :] - x[:-1, :]
    e = d * d
    row = sg.reduce_sum(e, axis=1)              # a partial sum over the trailing axis
    col = sg.reduce_sum(e, axis=0)              # a partial sum over the leading axis
    f = sg.reduce_sum(row) + sg.reduce_sum(col * col)
    outs = [f, e, row] + sg.gradients(f, x)
    xv = np.random.default_rng(5).standard_normal((1500, 64))
    fn = _check([x], outs, [xv], target)
    assert _gathered(fn)


def test_two_buffers_keep_the_scatter():
    x = sg.placeholder("x", shape=(None,))
    y = sg.placeholder("y", shape=(None,))
    f = sg.reduce_sum(x[1:] * y[:-1] + x[:-1] * y[1:])
    xv, yv = np.random.default_rng(6).standard_normal((2, 1000))
    fn = _check([x, y], [f] + sg.gradients(f, [x, y]), [xv, yv], "parallel")
    assert not _gathered(fn)


def test_strided_keys_keep_the_scatter():
    x = sg.placeholder("x", shape=(None,))
    f = sg.reduce_sum(x[::2] * x[1::2])
    xv = np.random.default_rng(7).standard_normal(1000)
    fn = _check([x], [f] + sg.gradients(f, x), [xv], "cpu")
    assert not _gathered(fn)
