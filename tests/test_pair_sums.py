"""Pair sums written the ways people write them run without an N x N temporary, agree
with hand loops, and ``nest_rejections`` explains kernels that stay flat."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from benchmarks.workloads import w3_pair_sums as w
from symgrad.compile.nest import Nest, nest_rejections
from symgrad.compile.plan.regions import Kernel

pytestmark = pytest.mark.compiled

N = 40


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


def _full_size_stores(plan, n: int) -> list:
    """Values of at least n*n elements that the plan writes to memory."""
    out = []
    for u in plan.units:
        kernels = [(u, u.outputs)] if isinstance(u, Kernel) else \
            [(k, [o for _, o in u.written(k)]) for k in u.kernels] if isinstance(u, Nest) else []
        for k, outs in kernels:
            for o in outs:
                size = int(np.prod(o.node.shape)) if o.node.shape else 1
                if size >= n * n:
                    out.append(o.node.name)
    return out


@pytest.mark.parametrize("name", list(w.FORMULATIONS))
def test_formulation_matches_hand_loop_without_nxn_temporary(name):
    loss, hand = w.FORMULATIONS[name]
    data = w.make_data(N)
    P = sg.placeholder("P", shape=(N, 3))
    E = loss(P, w.constants(data))
    fn = sg.function([P], [E] + sg.gradients(E, P), target="cpu")
    value, grad = fn(data["P"])
    G = np.empty_like(data["P"])
    want = hand(data["P"], data["q"], G)
    np.testing.assert_allclose(value, want, rtol=1e-9)
    np.testing.assert_allclose(grad, G, rtol=1e-8, atol=1e-10 * np.abs(G).max())
    assert _full_size_stores(fn.plan, N) == []
    assert nest_rejections(fn.plan) == []
    # explain lists only what is stored: no N x N value among the temporaries
    temps = fn.explain().split("temporaries:")[1].split("fusion boundaries:")[0]
    assert f"({N}, {N})" not in temps, temps


def test_rejection_names_the_rule():
    P = sg.placeholder("P", shape=(N, 3))
    D = P[:, None, :] - P[None, :, :]
    S = sg.exp(-sg.reduce_sum(D * D, axis=-1))
    E = sg.reduce_sum(S)
    fn = sg.function([P], [E, S] + sg.gradients(E, P), target="cpu")   # S is requested
    reasons = nest_rejections(fn.plan)
    assert len(reasons) == 1 and "read outside the nest" in reasons[0]


def test_flat_pair_kernel_is_reported():
    P = sg.placeholder("P", shape=(N, 20))         # trailing axis > INNER_MAX: no nest
    D = P[:, None, :] - P[None, :, :]
    E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)))
    fn = sg.function([P], [E] + sg.gradients(E, P), target="cpu")
    reasons = nest_rejections(fn.plan)
    assert reasons and any("INNER_MAX" in r for r in reasons), reasons
