"""Property tests: gradients of random graphs agree with finite differences."""

from __future__ import annotations

import numpy as np
from hypothesis import given

import symgrad as sg

from .helpers import fd_gradients
from .strategies import random_graph


@given(random_graph())
def test_gradients_match_finite_differences(graph):
    xs, out, feeds = graph
    grads = sg.evaluate(sg.gradients(out, xs, unconnected_gradients="zero"), feeds)
    for x, got, want in zip(xs, grads, fd_gradients(out, xs, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=x.name)


@given(random_graph(max_nodes=6))
def test_hessian_vector_products_match_finite_differences(graph):
    xs, out, feeds = graph
    first = sg.gradients(out, xs, unconnected_gradients="zero")
    v = [np.full(x.shape, 0.5) for x in xs]
    directional = sum(sg.reduce_sum(g * vk) for g, vk in zip(first, v))
    hvp = sg.evaluate(sg.gradients(directional, xs, unconnected_gradients="zero"), feeds)
    for x, got, want in zip(xs, hvp, fd_gradients(directional, xs, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=x.name)
