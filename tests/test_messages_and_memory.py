"""Clear messages for the mistakes users make, keyword calls, and sg.evaluate's memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import symgrad as sg


def test_evaluate_with_a_list_instead_of_a_feed_dict():
    a, b = sg.placeholder("a"), sg.placeholder("b")
    with pytest.raises(TypeError, match=r"sg.evaluate: feed_dict must be a dict"):
        sg.evaluate(a * b, [a, b])


def test_none_argument_names_the_op():
    with pytest.raises(TypeError, match=r"sg.sin: argument 0 is None"):
        sg.sin(None)
    x = sg.placeholder("x")
    with pytest.raises(TypeError, match=r"sg.add: argument 1 is None"):
        sg.add(x, None)


def test_check_gradients_of_a_non_tensor_result():
    with pytest.raises(TypeError, match=r"check_gradients: fn must build its result"):
        sg.testing.check_gradients(lambda p: 1.0, np.ones(3))


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_big_endian_arrays_are_accepted(target):
    x = sg.placeholder("x", shape=(3,))
    f = sg.function([x], sg.reduce_sum(x * 2.0), target=target)
    big = np.array([1.0, 2.0, 3.0], dtype=">f8")
    assert float(f(big)) == 12.0
    assert sg.evaluate(x * 2.0, {x: big}).tolist() == [2.0, 4.0, 6.0]


@pytest.mark.parametrize("target", ["cpu", "parallel", "cuda"])
def test_keyword_arguments_by_placeholder_name(target):
    x, y = sg.placeholder("x", shape=(3,)), sg.placeholder("y", shape=(3,))
    f = sg.function([x, y], sg.reduce_sum(x * y, name="sum"), target=target)
    one, two = np.ones(3), np.full(3, 2.0)
    assert float(f(one, y=two)) == float(f(y=two, x=one)) == 6.0
    with pytest.raises(TypeError, match=r"f\(x, y\) -> 'sum': no parameter named 'z'.*x, y"):
        f(one, z=two)
    with pytest.raises(TypeError, match=r"f\(x, y\) -> 'sum': got two values for 'x'"):
        f(one, x=one)
    with pytest.raises(TypeError, match=r"f\(x, y\) -> 'sum': missing argument\(s\) y"):
        f(x=one)


def test_evaluate_frees_intermediates_after_their_last_use():
    n = 1_000_000                       # 8 MB per array
    x = sg.placeholder("x", shape=(n,))
    y = x
    for k in range(30):                 # 30 intermediates: 240 MB if all were kept
        y = sg.sin(y) * 0.5 + x
    value = np.linspace(0.0, 1.0, n)
    sg.evaluate(y, {x: value})          # warm up (lambdify, caches)
    tracemalloc.start()
    try:
        out = sg.evaluate(y, {x: value})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.shape == (n,)
    assert peak < 8 * 8 * n, f"peak {peak / 2**20:.0f} MiB"   # a few live arrays, not 30
