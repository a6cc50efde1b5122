"""Small shared helpers for tests: finite differences and random inputs."""

from __future__ import annotations

import numpy as np

import symgrad as sg


def central_difference(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Gradient of the scalar function f at x by central differences (float64)."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    flat = x.reshape(-1)
    for k in range(flat.size):
        saved = flat[k]
        flat[k] = saved + eps
        up = f(x)
        flat[k] = saved - eps
        down = f(x)
        flat[k] = saved
        grad.reshape(-1)[k] = (up - down) / (2 * eps)
    return grad


def fd_gradients(y: sg.Tensor, xs: list, feeds: dict, eps: float = 1e-6) -> list:
    """Finite-difference gradients of sum(y) with respect to each placeholder in xs."""
    results = []
    for x in xs:
        def f(value, x=x):
            local = dict(feeds)
            local[x] = value
            return float(np.sum(sg.evaluate(y, local)))
        results.append(central_difference(f, feeds[x], eps))
    return results


def uniform(rng: np.random.Generator, domain: tuple, shape: tuple) -> np.ndarray:
    lo, hi = domain
    return rng.uniform(lo, hi, size=shape)


def compiled_matches_evaluate(inputs: list, outputs: list, args: tuple, target: str,
                              rtol: float, atol: float):
    """``sg.function(inputs, outputs, target)(*args)`` agrees with ``sg.evaluate``; returns
    the compiled function (for plan inspection)."""
    f = sg.function(inputs, outputs, target=target)
    got = f(*args)
    want = sg.evaluate(outputs, dict(zip(inputs, args)))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return f
