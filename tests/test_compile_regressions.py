"""Graphs users wrote that the compiler once rejected: each compiles on every target and
agrees with sg.evaluate (issue 8, 'compile what users write')."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.regions import Kernel

TARGETS = ["cpu", "parallel"]


def agree(inputs, outputs, args, target, rtol=1e-12, atol=1e-14):
    """Compile ``outputs`` for ``target``, compare with sg.evaluate; return the function."""
    f = sg.function(inputs, outputs, target=target)
    got = f(*args)
    want = sg.evaluate(outputs, dict(zip(inputs, args)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    return f


@pytest.mark.parametrize("target", TARGETS)
def test_schedule_cycle_through_a_step(target):
    """Two transposes join regions so that a region grown after its descendant was made
    gains an ancestor; merging must see the path through the third region (was _Cycle)."""
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
