"""Pair-sum nests on the device (``compile/cuda/tiles.py``): every formulation of
``benchmarks/pair_sums.py`` agrees with target="cpu" (values and gradients, NaN included)
at N=37, so tiles (32 threads under the simulator) and chunks of the other axis have
remainders; the device nest uses the CPU nest's mask and symmetry rules and says which.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import symgrad as sg
from benchmarks import pair_sums as ps
from benchmarks.workloads import w3_pair_sums as w

pytestmark = [pytest.mark.cuda, pytest.mark.compiled,
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

N = 37
DATA = w.make_data(N)
CONSTANTS = w.constants(DATA)
W3_FORM = "lj: 0.5*sum ~eye, r2**-6 - r2**-3"   # the benchmark W3


def _functions(name: str, n: int = N):
    loss = ps.FORMULATIONS[name][0]
    P = sg.placeholder("P", shape=(n, 3))
    E = loss(P, CONSTANTS if n == N else w.constants(w.make_data(n)))
    outs = [E] + sg.gradients(E, P)
    return sg.function([P], outs, target="cuda"), sg.function([P], outs, target="cpu")


def _close(got, want) -> None:
    for g, h in zip(got, want):
        assert isinstance(g, np.ndarray) and g.shape == h.shape and g.dtype == h.dtype
        np.testing.assert_allclose(g, h, rtol=1e-11, atol=1e-11)   # NaN where NaN


@pytest.fixture(scope="module")
def compiled():
    cache: dict = {}

    def get(name):
        if name not in cache:
            cache[name] = _functions(name)
        return cache[name]
    return get


@pytest.mark.parametrize("name", list(ps.FORMULATIONS))
def test_every_formulation_agrees_with_cpu(compiled, name):
    f, g = compiled(name)
    _close(f(DATA["P"]), g(DATA["P"]))


@pytest.mark.parametrize("name", [W3_FORM,
                                  "lj: triangular i<j mask", "gaussian kernel sum"])
def test_nan_propagates_as_on_the_cpu(compiled, name):
    f, g = compiled(name)
    P = DATA["P"].copy()
    P[5, 1] = np.nan
    got, want = f(P), g(P)
    assert np.isnan(want[0]) and np.isnan(want[1]).all()   # every row meets the NaN point
    _close(got, want)


def test_w3_uses_symmetry_and_reads_masks_as_predicates(compiled):
    """The benchmark form: ~eye mask and the folded gradient masks read as predicates (not
    uploaded), the symmetric rule makes the column sums copies: one pass, no column pass,
    no per-pair global atomic (the triangle's column sums are shared-memory atomics)."""
    f, _ = compiled(W3_FORM)
    nest = next(u for u in f.plan.units if type(u).__name__ == "Nest")
    text = f.explain()
    assert "the sum is symmetric in the pair" in text and "no column pass" in text
    assert "as i0 != i1 (no (N, N) read or upload)" in text
    assert f"def _n{nest.index}_cuda(" in f.source and "_cuda_cols(" not in f.source
    kernel = f.source.split(f"def _n{nest.index}_cuda(", 1)[1].split("\n\n\n", 1)[0]
    loop = kernel.split("for _ in range(tl):", 1)[1].split("\n        cuda.syncthreads()", 1)[0]
    atomics = re.findall(r"cuda\.atomic\.add\((\w+),", loop)
    assert atomics and all(a.startswith("cm") for a in atomics)   # shared column sums
    assert "cuda.shared.array(BLOCK" in kernel
    pair_shaped = [i for i in f.module.DEVICE_CONSTANTS_
                   if np.ndim(next(n for n in f.plan.graph.order if n.index == i).value) == 2]
    assert pair_shaped == []


def test_triangular_mask_skips_tiles_and_runs_a_column_pass(compiled):
    f, _ = compiled("lj: triu constant before sqrt")
    text = f.explain()
    assert "visits only the (i0, i1) of (37, 37) with i0 < i1" in text
    assert "_cuda_cols(" in f.source and "if i0 < i1:" in f.source
    assert "b_lo = lo + 1\n" in f.source and "b_hi = hi + -1\n" in f.source


def test_asymmetric_pairs_two_sets_and_stored_values():
    """Pairs of two point sets (n0 != n1): no rule applies, so the column sums take the
    column pass; a per-pair value returned is stored by the nest."""
    X = sg.placeholder("X", shape=(37, 2))
    Y = sg.placeholder("Y", shape=(5, 2))
    D = X[:, None, :] - Y[None, :, :]
    S = sg.exp(-sg.reduce_sum(D * D, axis=-1))
    E = sg.reduce_sum(S * S) + sg.reduce_sum(sg.reduce_sum(S, axis=0) ** 2)
    outs = [E, S] + sg.gradients(E, [X, Y])
    f = sg.function([X, Y], outs, target="cuda")
    text = f.explain()
    assert "no mask or symmetry rule" in text
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(37, 2)), rng.normal(size=(5, 2))
    _close(f(x, y), sg.function([X, Y], outs, target="cpu")(x, y))


def test_tile_configuration_fills_the_device(monkeypatch):
    """Row blocks of TILE_THREADS x chunks of the other axis, so that a small N still has
    TILE_BLOCKS_PER_SM blocks per SM; the simulator uses SIM_CHUNKS chunks."""
    from symgrad.compile.cuda import runtime as rt
    limits = rt.device_limits()          # the device query tile_configuration reads
    if limits.simulator:
        assert rt.tile_configuration(37, 37) == (2 * rt.SIM_CHUNKS, rt.SIM_THREADS)
        assert rt.tile_configuration(37, 5) == (2, rt.SIM_THREADS)
    else:   # this GPU: row blocks x chunks, until its SMs are full or the tiles run out
        want = rt.TILE_BLOCKS_PER_SM * limits.sm_count
        for own, other in [(37, 37), (37, 5), (300, 4000)]:
            blocks, threads = rt.tile_configuration(own, other)
            assert threads % limits.warp == 0 and threads <= rt.TILE_THREADS
            rows, tiles = -(-own // threads), -(-other // threads)
            assert blocks % rows == 0 and 1 <= blocks // rows <= tiles
            assert blocks // rows == tiles or blocks >= want
    h100 = rt.DeviceLimits(132, 1024, 32, 2048, False)
    monkeypatch.setattr(rt, "device_limits", lambda: h100)
    rt.tile_configuration.cache_clear()
    try:
        blocks, threads = rt.tile_configuration(3000, 3000)
        assert threads == rt.TILE_THREADS and blocks == 24 * 24      # capped by the tiles
        blocks, _ = rt.tile_configuration(20000, 20000)
        rows = -(-20000 // threads)
        assert blocks % rows == 0 and blocks >= rt.TILE_BLOCKS_PER_SM * 132
    finally:
        rt.tile_configuration.cache_clear()


def test_per_point_flags_are_tiled_with_their_dtype():
    """A bool read at i1 only is a shared-memory tile of booleans; the sum is not symmetric
    (the flag is on j only), so the column pass runs."""
    P = sg.placeholder("P", shape=(N, 3))
    flag = sg.placeholder("flag", shape=(N,), dtype="bool")
    D = P[:, None, :] - P[None, :, :]
    E = sg.reduce_sum(sg.where(flag[None, :], sg.exp(-sg.reduce_sum(D * D, axis=-1)), 0.0))
    outs = [E] + sg.gradients(E, P)
    f = sg.function([P, flag], outs, target="cuda")
    assert "from_dtype(numpy.dtype('bool'))" in f.source and "_cuda_cols(" in f.source
    mask = np.arange(N) % 3 != 0
    _close(f(DATA["P"], mask), sg.function([P, flag], outs, target="cpu")(DATA["P"], mask))
