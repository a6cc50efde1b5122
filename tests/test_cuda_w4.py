"""W4 (benchmarks/workloads/w4_mlp.py, the MLP the GPU benchmark times) on target="cuda":
the elementwise work around each matmul is one device kernel that produces or consumes
the matmul's operands (bias + tanh after X @ W1; bias, residual, loss and its gradient
after H @ W2; the tanh derivative times the outer product dout W2^T before X^T @ dZ),
the matmuls are library calls, the transposes are device views, and the generated
driver launches exactly those units. Tiny sizes: the simulator runs every GPU thread.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import symgrad as sg
from benchmarks.frameworks import _sg_ops
from benchmarks.workloads import w4_mlp
from symgrad.compile.nest import Nest
from symgrad.compile.plan.regions import Kernel, Step
from symgrad.ops.contraction import records as C
from symgrad.ops.layout import records as L

from .helpers import is_numba_device_array, to_host

pytestmark = [pytest.mark.cuda, pytest.mark.compiled]

B, D, H = 8, 4, 6


@pytest.fixture(scope="module")
def w4():
    data = w4_mlp.make_data({"B": B, "D": D, "H": H, "label": ""})
    names = w4_mlp.DIFF + w4_mlp.INPUTS
    phs = [sg.placeholder(n, shape=data[n].shape, dtype=data[n].dtype.name) for n in names]
    value = w4_mlp.loss(_sg_ops(), *phs)
    outs = [value, *sg.gradients(value, phs[:len(w4_mlp.DIFF)])]
    f = sg.function(phs, outs, target="cuda")
    return f, phs, outs, [data[n] for n in names]


def _producers(plan) -> dict:
    made = {}
    for unit in plan.units:
        nodes = [o.node for o in unit.outputs] if isinstance(unit, Kernel) else [unit.node]
        for node in nodes:
            made[node.index] = unit
    return made


def test_w4_plan_is_three_kernels_and_four_library_calls(w4):
    f, *_ = w4
    units = f.plan.units
    assert not any(isinstance(u, Nest) for u in units)
    kernels = [u for u in units if isinstance(u, Kernel)]
    steps = [u for u in units if isinstance(u, Step)]
    assert len(kernels) == 3
    assert sorted(s.node.op.name for s in steps) == ["matmul"] * 4 + ["transpose"] * 3
    made = _producers(f.plan)
    readers: dict = {}
    for unit in units:
        for node in (unit.inputs if isinstance(unit, Kernel) else unit.node.inputs):
            readers.setdefault(node.index, []).append(unit)
    outputs = {o.index for o in f.plan.outputs if o is not None}
    for s in (s for s in steps if s.node.op is C.matmul):
        for operand in s.node.inputs:   # a placeholder, a kernel's output, or its view
            unit = made.get(operand.index)
            if isinstance(unit, Step):
                assert unit.node.op is L.transpose, s.node.name
                unit = made.get(unit.node.inputs[0].index)
            assert unit is None or isinstance(unit, Kernel), s.node.name
        # the elementwise work after a matmul: kernels reading it, or a result
        after = readers.get(s.node.index, [])
        assert (after and all(isinstance(u, Kernel) for u in after)) or \
            (not after and s.node.index in outputs), s.node.name
    # H = tanh(X W1 + b1) comes out of the kernel that reads X W1: bias + tanh fused
    first, second = [s for s in steps if s.node.op is C.matmul][:2]
    assert made[second.node.inputs[0].index] is readers[first.node.index][0]
    # (B, H) arrays stored: X W1, H and dZ. tanh' is computed from the pre-activation
    # (sech^2, no 1 - t*t cancellation), which the backward kernel recomputes from X W1
    # and b1 (cuda_remat) rather than kernel 0 storing it
    stored = [o.node.name for k in kernels for o in k.outputs if tuple(o.node.shape) == (B, H)]
    stored += [s.node.name for s in steps if tuple(s.node.shape) == (B, H)]
    assert len(stored) == 3, stored
    assert [o.node for o in readers[first.node.index][0].outputs] == [second.node.inputs[0]]
    backward = [k for k in kernels if any(i.index == first.node.index for i in k.inputs)]
    assert len(backward) == 2 and backward[0] is readers[first.node.index][0]


def test_w4_driver_launches_those_units_and_explain_says_where(w4):
    f, *_ = w4
    run = f.source.split("\ndef run(", 1)[1]
    assert len(re.findall(r"LAUNCHERS_\.get\(\('_k\d+_cuda'", run)) == 3
    assert run.count("run_step_(ctx_, ") == 7
    text = f.explain()
    assert text.count("(device kernel)") == 3
    assert text.count("(device, library call: cuBLAS via CuPy)") == 4
    assert text.count("(device step: CuPy)") == 3 and "numpy" not in text


def test_w4_values_and_device_results(w4):
    from numba import cuda

    from symgrad.compile.cuda import runtime as cuda_runtime

    f, phs, outs, args = w4
    want = sg.function(phs, outs)(*args)
    for g, w in zip(f(*args), want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)
    device = [cuda.to_device(a) for a in args]
    cuda_runtime.TRANSFERS.clear()
    got = f(*device)
    assert dict(cuda_runtime.TRANSFERS) == {}
    for g, w in zip(got, want):
        assert is_numba_device_array(g)                 # numba in, numba out
        np.testing.assert_allclose(to_host(g), w, rtol=1e-12, atol=1e-15)
