"""TensorFlow details of the tape, forward mode and hessians (issue 24 item 7), each ported
from TF's own test:

* backprop_test.py ``testPersistentTape`` (JacobianTest and BatchJacobianTest): without pfor
  an eager Jacobian needs a persistent tape, RuntimeError mentioning "persistent";
* gradients_test.py ``testHessianInvalidDimension``: ``hessians(x, x)`` raises ValueError for a
  static (10, 10) and an unknown shape;
* forwardprop_test.py ``testMultipleWatchesAdd`` (a primal given twice is a ValueError
  mentioning "multiple times"; ``_watch`` adds), ``testReenter`` (ValueError "already
  recording"; tangents survive leaving and re-entering), ``testForwardOverBackwardMemoryEfficiency``
  and ``testBackwardOverForward`` (a tape entered inside the accumulator does not record the
  accumulator's tangent computations; one entered outside does; nesting, not creation order,
  decides), ``testHVPMemory``/``testHVPCorrectness`` (forward over backward Hessian-vector
  products: right, and nothing kept alive by reference cycles).
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import symgrad as sg


# --- backprop_test.py testPersistentTape -------------------------------------------------------
@pytest.mark.parametrize("api", ["jacobian", "batch_jacobian"])
def test_without_pfor_a_non_persistent_tape_raises_runtime_error(api):
    x = sg.Variable([[1.0, 2.0]])
    with sg.GradientTape() as g:
        g.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="persistent"):
        getattr(g, api)(y, x, experimental_use_pfor=False)


@pytest.mark.parametrize("api", ["jacobian", "batch_jacobian"])
def test_without_pfor_a_persistent_tape_gives_the_same_jacobian(api):
    x = sg.Variable([[1.0, 2.0], [3.0, -1.0]])
    with sg.GradientTape(persistent=True) as g:
        y = x * x * x
    fast = getattr(g, api)(y, x).numpy()
    slow = getattr(g, api)(y, x, experimental_use_pfor=False).numpy()
    np.testing.assert_array_equal(fast, slow)
    if api == "batch_jacobian":
        want = np.stack([np.diag(3.0 * row ** 2) for row in x.numpy()])
        np.testing.assert_array_equal(slow, want)


def test_without_pfor_the_shape_check_comes_first_as_in_tf():
    x = sg.Variable([1.0, 2.0])
    with sg.GradientTape() as g:
        y = x * x
    with pytest.raises(ValueError, match="rank at least 2"):
        g.batch_jacobian(y, x, experimental_use_pfor=False)


def test_pfor_default_on_a_non_persistent_tape_still_works_once():
    x = sg.Variable([[1.0, 2.0]])
    with sg.GradientTape() as g:
        y = x * x
    np.testing.assert_array_equal(g.batch_jacobian(y, x).numpy(), [[[2.0, 0.0], [0.0, 4.0]]])
    with pytest.raises(RuntimeError, match="only be called once"):
        g.batch_jacobian(y, x, experimental_use_pfor=False)


# --- gradients_test.py testHessianInvalidDimension ------------------------------------------
@pytest.mark.parametrize("shape", [(10, 10), None])
def test_hessians_of_x_with_respect_to_itself_raise_value_error(shape):
    x = sg.placeholder("x", shape=(None, None) if shape is None else shape, dtype="float32")
    with pytest.raises(ValueError):
        sg.hessians(x, x)


def test_hessians_x_itself_message_and_in_a_list():
    x = sg.placeholder("x", shape=(3,))
    with pytest.raises(ValueError, match="testHessianInvalidDimension"):
        sg.hessians([sg.reduce_sum(x * x), x], [x])
    (h,) = sg.hessians(sg.reduce_sum(x * x), [x])          # a function of x: fine
    np.testing.assert_array_equal(sg.evaluate(h, {x: np.ones(3)}), 2.0 * np.eye(3))


# --- forwardprop_test.py testMultipleWatchesAdd -------------------------------------------------
def test_multiple_watches_add():
    x = sg.Variable(-2.0)
    with pytest.raises(ValueError, match="multiple times"):
        with sg.ForwardAccumulator([x, x], [1.0, 2.0]):
            pass
    with sg.ForwardAccumulator([x], [3.0]) as acc:
        assert float(acc.jvp(x)) == 3.0
        acc._watch(x, 10.0)
        assert float(acc.jvp(x)) == 13.0
        acc._watch(x, 11.0)
        assert float(acc.jvp(x)) == 24.0
        y = 3.0 * x
    assert float(acc.jvp(x)) == 24.0
    assert float(acc.jvp(y)) == 24.0 * 3.0


def test_the_same_eager_tensor_twice_is_also_multiple_times():
    c = sg.Variable(1.0) * 1.0
    with pytest.raises(ValueError, match=r"primals\[1\].*multiple times"):
        sg.ForwardAccumulator([c, c], [1.0, 1.0])


# --- forwardprop_test.py testReenter -----------------------------------------------------------
def test_reenter():
    x = sg.Variable(-2.0) * 1.0
    with sg.ForwardAccumulator(x, 1.5) as acc:
        assert float(acc.jvp(x)) == 1.5
        y = 4.0 * x
        assert float(acc.jvp(y)) == 6.0
        with pytest.raises(ValueError, match="already recording"):
            with acc:
                pass
    z = 4.0 * x
    assert acc.jvp(z) is None
    with acc:
        yy = y * y
    assert float(acc.jvp(yy)) == 6.0 * -8.0 * 2.0


# --- forwardprop_test.py testForwardOverBackwardMemoryEfficiency / testBackwardOverForward -----
def _pair(forward_prop_first, c):
    if forward_prop_first:
        acc = sg.ForwardAccumulator(c, 0.1)
        tape = sg.GradientTape()
    else:
        tape = sg.GradientTape()
        acc = sg.ForwardAccumulator(c, 0.1)
    return acc, tape


@pytest.mark.parametrize("forward_prop_first", [True, False])
def test_forward_over_backward_memory_efficiency(forward_prop_first):
    c = sg.Variable(1.0) * 1.0
    forward_accumulator, gradient_tape = _pair(forward_prop_first, c)
    gc.disable()
    try:
        with gradient_tape:
            pass            # entering and leaving first does not change the nesting below
        with forward_accumulator as acc:
            with gradient_tape as tape:
                tape.watch(c)
                d = sg.cos(c)
                assert not tape._watches(acc.jvp(d))     # TF: should_record_backprop False
                e = sg.cos(acc.jvp(d))
                sg.cos(e)
                weak_e = weakref.ref(e)
                del e
                assert weak_e() is None
            assert tape.gradient(acc.jvp(d), c) is None
    finally:
        gc.enable()


@pytest.mark.parametrize("forward_prop_first", [True, False])
def test_backward_over_forward(forward_prop_first):
    c = sg.Variable(1.0) * 1.0
    forward_accumulator, gradient_tape = _pair(forward_prop_first, c)
    with gradient_tape as tape:
        with forward_accumulator as acc:
            tape.watch(c)
            d = sg.cos(c)
            assert tape._watches(acc.jvp(d))
        got = tape.gradient(acc.jvp(d), c)
    np.testing.assert_allclose(float(got), -0.1 * np.cos(1.0), rtol=1e-15)


# --- forwardprop_test.py testHVPMemory / testHVPCorrectness ----------------------------------
def _fun(x):
    return sg.reduce_prod(sg.tanh(x) ** 2.0)


def _hvp(primals, tangents, keep):
    """TF's _hvp: forward over backward (the tape inside the accumulator)."""
    with sg.ForwardAccumulator(primals, tangents) as acc:
        with sg.GradientTape() as tape:
            tape.watch(primals)
            out = _fun(primals)
        grad = tape.gradient(out, primals)
        keep.extend([weakref.ref(acc), weakref.ref(tape), weakref.ref(out), weakref.ref(grad)])
        return acc.jvp(grad)


def test_hvp_correctness_against_nested_tapes_and_the_graph():
    primals = sg.Variable([1.0, 2.0, 3.0]) * 1.0
    tangents = np.array([3.0, 4.0, 5.0])
    got = _hvp(primals, tangents, []).numpy()
    with sg.GradientTape(persistent=True) as g:
        g.watch(primals)
        with sg.GradientTape() as gg:
            gg.watch(primals)
            out = _fun(primals)
        grad = gg.gradient(out, primals)
    hessian = g.jacobian(grad, primals).numpy()
    np.testing.assert_allclose(got, hessian @ tangents, rtol=1e-12)
    x = sg.placeholder("x", shape=(3,))
    (h,) = sg.hessians(_fun(x), x)
    np.testing.assert_allclose(got, sg.evaluate(h, {x: [1.0, 2.0, 3.0]}) @ tangents,
                               rtol=1e-12)


def test_hvp_memory_nothing_kept_alive_by_cycles():
    primals = sg.Variable([1.0, 2.0, 3.0]) * 1.0
    keep: list = []
    gc.collect()
    gc.disable()
    try:
        result = _hvp(primals, np.array([3.0, 4.0, 5.0]), keep)
        assert result is not None
        assert [ref() is None for ref in keep] == [True] * 4
    finally:
        gc.enable()
