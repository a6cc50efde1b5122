"""numba-cuda 0.30.x with numpy >= 2.5: ``numpy.row_stack`` (removed by numpy 2.5, used by
numba-cuda's overloads) is restored before numba.cuda is imported, and only when missing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy
import pytest

from symgrad.compile.cuda import compat as cuda_compat

ROOT = Path(__file__).resolve().parents[1]


def test_a_missing_row_stack_is_restored_as_vstack(monkeypatch):
    monkeypatch.delattr(numpy, "row_stack", raising=False)
    assert cuda_compat.ensure_numpy_names() == ["row_stack"]
    assert numpy.row_stack is numpy.vstack
    assert numpy.row_stack(([1.0, 2.0], [3.0, 4.0])).shape == (2, 2)


def test_a_present_row_stack_is_left_alone(monkeypatch):
    def mine(arrays):
        return "numpy's own"
    monkeypatch.setattr(numpy, "row_stack", mine, raising=False)
    assert cuda_compat.ensure_numpy_names() == []
    assert numpy.row_stack is mine


@pytest.mark.cuda
def test_the_cuda_target_runs_when_numpy_has_no_row_stack():
    """A fresh process whose numpy lacks ``row_stack`` (as numpy 2.5's does) compiles and
    runs a CUDA function (under the simulator in CI): the shim runs before numba.cuda."""
    script = textwrap.dedent("""
        import numpy
        if hasattr(numpy, "row_stack"):
            del numpy.row_stack
        import symgrad as sg
        x = sg.placeholder("x", shape=(None,))
        f = sg.function([x], sg.reduce_sum(sg.sin(x)), target="cuda")
        value = float(f(numpy.array([0.5, 1.0])))
        assert abs(value - (numpy.sin(0.5) + numpy.sin(1.0))) < 1e-12, value
        assert numpy.row_stack is numpy.vstack
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
