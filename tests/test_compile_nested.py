"""Loop nests (``compile/nest/match.py``): reduce -> elementwise -> broadcast chains agree with
the reference, keep no n x n temporaries, and fall back to the flat plan otherwise."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.scalar import settings as scalar_settings
from symgrad.compile.nest import INNER_MAX, Nest, nest_outputs
from tests.helpers import compiled_matches_evaluate

pytestmark = pytest.mark.compiled


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


_check = partial(compiled_matches_evaluate, rtol=1e-11, atol=1e-12)


def _nests(f) -> list:
    return [u for u in f.plan.units if isinstance(u, Nest)]


def _points(n: int, dim: int = 3) -> np.ndarray:
    """Jittered lattice points (spacing 1.1: no pair is close)."""
    side = int(np.ceil(n ** (1.0 / dim)))
    axes = np.meshgrid(*[np.arange(side)] * dim, indexing="ij")
    g = np.stack(axes, -1).reshape(-1, dim)
    rng = np.random.default_rng(0)
    return g[:n].astype(np.float64) * 1.1 + rng.uniform(-0.1, 0.1, (n, dim))


@pytest.fixture(autouse=True)
def _loop_plans(monkeypatch):
    """Nest tests: small static pair sums (n = 7, 9: a few hundred elements) are one
    scalar kernel by cost (compile/scalar/cost.py); these tests check the loop nests."""
    monkeypatch.setattr(scalar_settings, "ENABLED", False)


def _pair_potential(n: int, dim: int = 3):
    P = sg.placeholder("P", shape=(n, dim))
    D = P[:, None, :] - P[None, :, :]
    r2 = sg.reduce_sum(D * D, axis=-1)
    mask = sg.constant(np.triu(np.ones((n, n), bool), 1))
    E = 0.5 * sg.reduce_sum(sg.where(mask, 4 * (r2**-6 - r2**-3), 0.0))
    return P, E


@pytest.mark.parametrize("target", ["cpu", "parallel"])
@pytest.mark.parametrize("n", [9, 130])            # 130 * 130 * 3 runs the prange nest
def test_pair_potential_one_nest_no_pair_arrays(target, n):
    P, E = _pair_potential(n)
    f = _check([P], [E] + sg.gradients(E, P), [_points(n)], target)
    (nest,) = _nests(f)
    assert len(nest.pre) == 1 and len(nest.post) == 1 and nest.hidden
    written = [o.node.shape for k in nest.kernels for _, o in nest.written(k)]
    assert all(len(s) < 2 or (n, n) != tuple(s[:2]) for s in written)
    if target == "parallel" and n == 130:
        assert "_n" in f.source and "numba.prange" in f.source.split("def run")[0]


@pytest.mark.parametrize("dim", [2, INNER_MAX + 1])
def test_inner_length_two_and_too_long(dim):
    P, E = _pair_potential(7, dim)
    f = _check([P], [E] + sg.gradients(E, P), [_points(7, dim)], "cpu")
    assert bool(_nests(f)) == (dim <= INNER_MAX)


def test_pre_only_forward():
    P = sg.placeholder("P", shape=(6, 3))
    D = P[:, None, :] - P[None, :, :]
    E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)), axis=1)
    f = _check([P], [E], [_points(6)], "cpu")
    (nest,) = _nests(f)
    assert nest.pre and not nest.post


@pytest.mark.parametrize("target", ["cpu", "parallel"])
@pytest.mark.parametrize("n", [5, 3000])        # 3000 * 4 * 3 runs the prange nest
def test_post_stores_and_sums_over_each_axis(target, n, monkeypatch):
    monkeypatch.setattr(scalar_settings, "ENABLED", False)   # n = 5: 60 elements, a nest test
    X = sg.placeholder("X", shape=(n, 4, 3))
    Y = sg.placeholder("Y", shape=(n, 4, 1))     # its gradient sums over the inner axis
    W = sg.placeholder("W", shape=(4, 3))        # its gradient sums over axis 0
    s = sg.reduce_sum(X * Y * W, axis=-1)
    f_ = sg.reduce_sum(sg.sin(s) * sg.reduce_sum(X, axis=-1))
    rng = np.random.default_rng(2)
    args = [rng.standard_normal((n, 4, 3)), rng.standard_normal((n, 4, 1)),
            rng.standard_normal((4, 3))]
    f = _check([X, Y, W], [f_] + sg.gradients(f_, [X, Y, W]), args, target)
    (nest,) = _nests(f)
    assert {o.mode for o in nest_outputs(nest, False)} == {"store", "local", "array"}


def test_intermediates_also_requested_are_stored():
    P = sg.placeholder("P", shape=(6, 3))
    D = P[:, None, :] - P[None, :, :]
    r2 = sg.reduce_sum(D * D, axis=-1)
    c = sg.exp(-r2)
    E = sg.reduce_sum(c)
    _check([P], [E, r2, c] + sg.gradients(E, P), [_points(6)], "cpu")


def test_unknown_lengths_keep_the_flat_plan():
    P = sg.placeholder("P", shape=(None, 3))
    D = P[:, None, :] - P[None, :, :]
    E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)))
    f = _check([P], [E] + sg.gradients(E, P), [_points(8)], "cpu")
    assert not _nests(f)


def test_cuda_plan_nests_on_the_device():
    P, E = _pair_potential(6)
    f = sg.function([P], [E] + sg.gradients(E, P), target="cuda")
    assert _nests(f)     # one device kernel per nest (compile/cuda/nest.py)
    x = np.random.default_rng(2).uniform(0.0, 3.0, size=(6, 3))
    for got, want in zip(f(x), sg.function([P], [E] + sg.gradients(E, P))(x)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
