"""Fused scatter-adds (gradients of slices) agree with the reference for general keys."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import symgrad as sg
from tests.helpers import compiled_matches_evaluate

pytestmark = pytest.mark.compiled

KEYS = [
    (slice(1, None),),
    (slice(None, -1),),
    (slice(None, None, 2),),
    (slice(None, None, -1),),
    (slice(-3, 1, -2),),
    (slice(-30, None),),
    (slice(50, None),),          # empty: nothing is added
    (1, slice(None)),
    (-1, None, slice(2, None, 3)),
    (Ellipsis, slice(1, -1)),
    (None, slice(None), -2),
    (slice(None, None, -1), Ellipsis, None),
]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


_check = partial(compiled_matches_evaluate, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("target", ["cpu", "parallel"])
@pytest.mark.parametrize("key", KEYS, ids=str)
@pytest.mark.parametrize("shape", [(7, 6), (None, 6)])
def test_general_keys(key, shape, target):
    x = sg.placeholder("x", shape=shape)
    y = x[key]
    f = sg.reduce_sum(sg.sin(y) * y + y**2)
    xv = np.random.default_rng(1).standard_normal((7, 6))
    plan = _check([x], [f] + sg.gradients(f, x), [xv], target).plan
    assert not any(getattr(u, "node", None) is not None and u.node.op.name == "getitem_grad"
                   for u in plan.units)


@pytest.mark.parametrize("target", ["cpu", "parallel"])
@pytest.mark.parametrize("length", [None, 50_000])      # large enough for prange
def test_shared_buffer_rosenbrock(target, length):
    x = sg.placeholder("x", shape=(length,))
    f = sg.reduce_sum(100 * (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2)
    outputs = [f] + sg.gradients(f, x)
    xv = np.random.default_rng(2).standard_normal(50_000)
    fn = _check([x], outputs, [xv], target)
    if length is not None:   # two views and one kernel that writes dx as a gather
        assert len(fn.plan.units) == 3 and len(fn.plan.kernels) == 1
        assert not fn.plan.kernels[0].serial_only
        assert "np.zeros" not in fn.source
        # a prange loop, or its chunks on the pool (issue 19)
        assert ("_k0_parallel" in fn.source or "chunks_(_k0_chunk" in fn.source) == \
            (target == "parallel")


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_single_scatter_parallel_and_extra_terms(target):
    x = sg.placeholder("x", shape=(300, 200))
    f = sg.reduce_sum(sg.exp(x[:, ::-2]) * x[:, 1::2]) + sg.reduce_sum(x**2)
    xv = np.random.default_rng(3).standard_normal((300, 200))
    _check([x], [f] + sg.gradients(f, x), [xv], target)


def test_scatter_output_also_requested():
    from symgrad.ops.indexing.api import getitem_grad
    x = sg.placeholder("x", shape=(5,))
    g = sg.placeholder("g", shape=(4,))
    scattered = getitem_grad(sg.sin(g), x, (slice(1, None),))
    total = scattered + getitem_grad(g * 2.0, x, (slice(None, -1),))
    args = [np.arange(5.0), np.linspace(0, 1, 4)]
    _check([x, g], [scattered, total], args, "cpu")


def test_cuda_plan_keeps_steps():
    from symgrad.compile.plan.fold import fold_graph
    from symgrad.compile.plan.regions import build_plan
    x = sg.placeholder("x", shape=(5,))
    f = sg.reduce_sum(x[1:] * x[:-1] ** 2)
    plan = build_plan(fold_graph(sg.gradients(f, x), [x]), scatter=False)
    assert sum(getattr(u, "node", None) is not None and u.node.op.name == "getitem_grad"
               for u in plan.units) == 2
