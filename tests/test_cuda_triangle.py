"""The device triangle (``compile/cuda/tiles.py``, ``triangle``): a symmetric tiled nest
visits only the tiles on or above the diagonal, adding each off-diagonal pair into its
row's registers and, through a shared-memory column sum per tile, into the other row.

Every formulation of ``benchmarks/pair_sums.py`` agrees with target="cpu" at N=37 and
N=100 (tiles of 32 threads under the simulator: diagonal tiles, several row blocks and
chunks, remainders), in float64 and float32; the symmetric ones use the triangle and say
so; the masked (``i < j``) ones keep their band, the others run the full square.
"""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from benchmarks import pair_sums as ps
from benchmarks.workloads import w3_pair_sums as w
from symgrad.compile.codegen.lower import lower_kernel
from symgrad.compile.cuda.tiles import column_pass, device_rules, tiled_source, triangle
from symgrad.compile.nest import Nest

pytestmark = [pytest.mark.cuda, pytest.mark.compiled,
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

SYMMETRIC = [n for n in ps.FORMULATIONS if "triangular" not in n and "triu" not in n
             and "components" not in n]   # the components forms run flat on the device


def _run(name: str, n: int, dtype: str):
    data = w.make_data(n)
    data = {k: (v.astype(dtype) if v.dtype.kind == "f" else v) for k, v in data.items()}
    P = sg.placeholder("P", shape=(n, 3), dtype=dtype)
    E = ps.FORMULATIONS[name][0](P, w.constants(data))
    outs = [E] + sg.gradients(E, P)
    f = sg.function([P], outs, target="cuda")
    g = sg.function([P], outs, target="cpu")
    return f, f(data["P"]), g(data["P"])


def _nests(f) -> list:
    out = []
    for u in f.plan.units:
        if isinstance(u, Nest):
            out.append((u, {k.index: lower_kernel(k) for k in u.kernels}))
    return out


@pytest.mark.parametrize("n", [37, 100])
@pytest.mark.parametrize("name", list(ps.FORMULATIONS))
def test_agrees_with_cpu(name, n):
    f, got, want = _run(name, n, "float64")
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11 * float(np.max(np.abs(b))))
    nests = _nests(f)
    if name in SYMMETRIC:
        assert len(nests) == 1 and triangle(*nests[0])
        assert "with i0 <= i1, the tiles on or above the diagonal" in f.explain()
        text = tiled_source(nests[0][0], nests[0][1], "_t")
        assert "b_lo = lo" in text and "cuda.atomic.add(cm0, jj" in text
        assert not column_pass(*nests[0])
    for nest, lowered in nests:
        if device_rules(nest, lowered).kept is not None:   # the i < j band, not the triangle
            assert not triangle(nest, lowered)


@pytest.mark.parametrize("n", [37, 100])
@pytest.mark.parametrize("name", SYMMETRIC)
def test_float32_agrees_with_cpu(name, n):
    f, got, want = _run(name, n, "float32")
    assert triangle(*_nests(f)[0])
    for a, b in zip(got, want):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * float(np.max(np.abs(b))))


def test_a_stored_pair_value_keeps_the_square():
    """A per-pair value returned is stored at every (i0, i1): no triangle."""
    n = 37
    P = sg.placeholder("P", shape=(n, 3))
    D = P[:, None, :] - P[None, :, :]
    K = sg.exp(-sg.reduce_sum(D * D, axis=-1))
    outs = [K, sg.reduce_sum(K)] + sg.gradients(sg.reduce_sum(K), P)
    f = sg.function([P], outs, target="cuda")
    for nest, lowered in _nests(f):
        assert not triangle(nest, lowered)
    x = w.make_data(n)["P"]
    for a, b in zip(f(x), sg.function([P], outs, target="cpu")(x)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


def test_the_switch_keeps_the_full_square(monkeypatch):
    """``TRIANGLE = False``: every tile, the column sums copies of the row sums (a module
    of its own: the switch is part of the cache key), the same values."""
    from symgrad.compile.cuda import tiles
    name = "lj: 0.5*sum ~eye, r2**-6 - r2**-3"
    f, got, want = _run(name, 100, "float64")
    monkeypatch.setattr(tiles, "TRIANGLE", False)
    g, square, _ = _run(name, 100, "float64")
    nest, lowered = _nests(g)[0]
    assert not triangle(nest, lowered) and not column_pass(nest, lowered)
    assert "cm0" not in g.source and "cm0" in f.source
    assert "visits every (i0, i1) of (100, 100); the sum is symmetric" in g.explain()
    for a, b, c in zip(square, got, want):
        np.testing.assert_allclose(a, c, rtol=1e-11, atol=1e-11 * float(np.max(np.abs(c))))
