"""Issue 30, item 1: the messages a new user meets first say what happened in the user's
terms and what to do, and name only functions that exist. One test per message: the exact
exception type and the words that matter."""

from __future__ import annotations

import re

import numpy as np
import pytest
import sympy as sp

import symgrad as sg

x = sg.placeholder("x", shape=(3,))
s = sg.placeholder("s")


def _named_functions_exist(message: str) -> None:
    """Every ``sg.name(`` a message suggests is a public symgrad function."""
    for name in re.findall(r"\bsg\.([a-z_]+)\(", message):
        assert callable(getattr(sg, name, None)), f"the message names sg.{name}, absent"


# --- loops and branches -------------------------------------------------------------------
def test_while_loop_predicate_that_is_not_scalar_points_to_reduce_all_and_any():
    with pytest.raises(sg.ShapeError, match=r"sg\.while_loop: cond's result .* has shape "
                                            r"\(3,\); the predicate must be a scalar bool: "
                                            r"reduce it with sg\.reduce_all") as info:
        sg.while_loop(lambda v: v > 0, lambda v: v - 1.0, [x])
    assert "sg.reduce_any(" in str(info.value)
    _named_functions_exist(str(info.value))


def test_cond_predicate_that_is_not_scalar_points_to_reduce_all_and_any():
    with pytest.raises(sg.ShapeError, match=r"sg\.cond: pred .* shape \(3,\).*sg\.reduce_all"
                       ) as info:
        sg.cond(x > 0, lambda: x, lambda: -x)
    _named_functions_exist(str(info.value))
    with pytest.raises(sg.ShapeError, match=r"sg\.cond: pred has shape \(2,\).*sg\.reduce_any"):
        sg.cond(np.array([True, False]), lambda: 1.0, lambda: 2.0)
    # and the suggestion works
    y = sg.cond(sg.reduce_all(x > 0), lambda: x, lambda: -x)
    np.testing.assert_array_equal(sg.evaluate(y, {x: [1.0, -2.0, 3.0]}), [-1.0, 2.0, -3.0])


def test_cond_branches_of_different_shapes_speak_of_branches_not_loops():
    with pytest.raises(sg.ShapeError, match=r"sg\.cond: output 0: true_fn returns shape "
                                            r"\(3,\) \('x'\) but false_fn returns shape \(\) "
                                            r"\('s'\); both branches must return the same "
                                            r"shapes") as info:
        sg.cond(s > 0, lambda: x, lambda: s)
    assert "loop" not in str(info.value)
    _named_functions_exist(str(info.value))


def test_cond_branches_of_different_dtypes_say_cast():
    with pytest.raises(sg.DTypeError, match=r"sg\.cond: output 1: true_fn returns dtype "
                                            r"float64 .* but false_fn returns float32 .*"
                                            r"sg\.cast") as info:
        sg.cond(s > 0, lambda: (s, s), lambda: (s, sg.cast(s, "float32")))
    assert "loop" not in str(info.value)


@pytest.mark.parametrize("upper", [3, "tensor", "eager"])
def test_fori_loop_body_returning_carry_and_y_names_fori_loop(upper):
    bound = {3: 3, "tensor": sg.constant(3), "eager": 3}[upper]
    init = sg.Variable(1.0) if upper == "eager" else s
    with pytest.raises(sg.ShapeError, match=r"^sg\.fori_loop: body returned 2 values for 1 "
                                            r"in init; body\(i, carry\) must return the new "
                                            r"carry only") as info:
        sg.fori_loop(0, bound, lambda i, c: (c * 2.0, c), init)
    assert "sg.scan(" in str(info.value)           # where a per-step y belongs
    _named_functions_exist(str(info.value))


@pytest.mark.parametrize("lower,upper,bad", [(0.0, 3.0, "lower"), (0, 2.5, "upper"),
                                             (0, "float tensor", "upper"), (True, 3, "lower")])
def test_fori_loop_rejects_bounds_that_are_not_integers(lower, upper, bad):
    if upper == "float tensor":
        upper = sg.constant(3.0)
    with pytest.raises(TypeError, match=rf"sg\.fori_loop: {bad} must be an int or an integer "
                                        r"scalar Tensor, got "):
        sg.fori_loop(lower, upper, lambda i, c: c * 2.0, s)


def test_fori_loop_integer_bounds_of_every_kind_still_work():
    n = sg.placeholder("n", dtype="int64")
    y = sg.fori_loop(np.int32(0), n, lambda i, c: c * 2.0, s)
    assert float(sg.evaluate(y, {s: 1.0, n: 3})) == 8.0


@pytest.mark.parametrize("value", [2.5, 2.0, "3", True])
def test_while_loop_rejects_maximum_iterations_that_are_not_integers(value):
    with pytest.raises(TypeError, match=r"sg\.while_loop: maximum_iterations must be None or "
                                        r"an int, got "):
        sg.while_loop(lambda v: v > 0, lambda v: v - 1.0, [s], maximum_iterations=value)
    with pytest.raises(TypeError, match="maximum_iterations"):     # eager: the same check
        sg.while_loop(lambda v: v > 0, lambda v: v - 1.0, [sg.Variable(5.0)],
                      maximum_iterations=value)


def test_while_loop_rejects_negative_maximum_iterations():
    with pytest.raises(ValueError, match=r"sg\.while_loop: maximum_iterations must be >= 0, "
                                         r"got -1"):
        sg.while_loop(lambda v: v > 0, lambda v: v - 1.0, [s], maximum_iterations=-1)
    out = sg.while_loop(lambda v: v > 0, lambda v: v - 1.0, [s],
                        maximum_iterations=np.int64(2))
    assert float(sg.evaluate(out[0], {s: 5.0})) == 3.0


def test_reduce_all_of_numbers_says_compare_first():
    with pytest.raises(sg.DTypeError, match=r"sg\.reduce_all: 'x' has dtype float64; "
                                            r"reduce_all takes bool tensors \(compare first"):
        sg.reduce_all(x)


# --- sg.from_sympy --------------------------------------------------------------------------
a = sp.Symbol("a")


@pytest.mark.parametrize("expr,words", [
    (sp.DiracDelta(a), ["'DiracDelta'", "Heaviside"]),
    (sp.bessely(1, a), ["'bessely'", "besselj(n, x) of integer order"]),
    (sp.besselj(sp.Rational(1, 2), a), ["besselj(1/2, a)", "integer orders"]),
    (sp.zeta(a), ["'zeta'"]),
    (sp.LambertW(a, -1), ["LambertW(x, -1)", "principal branch"]),
    (sp.Xor(a > 0, a < 1), ["'Xor'", "And/Or/Not"]),
])
def test_from_sympy_unsupported_function_is_one_short_line(expr, words):
    with pytest.raises(NotImplementedError) as info:
        sg.from_sympy(expr, {a: s})
    message = str(info.value)
    assert message.startswith("sg.from_sympy: ")
    assert "\n" not in message and len(message) < 200, message
    assert "Tf" not in message                      # no internal class names
    for word in words:
        assert word in message, (word, message)


def test_from_sympy_unsupported_function_long_expression_is_still_short():
    big = sum(sp.Symbol(f"b{k}") ** k for k in range(40))
    with pytest.raises(NotImplementedError) as info:
        sg.from_sympy(sp.DiracDelta(big), {sp.Symbol(f"b{k}"): 1.0 for k in range(40)})
    assert len(str(info.value)) < 200


def test_from_sympy_accepts_a_sympy_matrix_value():
    t = sg.from_sympy(2 * a + sp.pi, {a: sp.Matrix([[1, 2, sp.Rational(1, 2)]])})
    np.testing.assert_allclose(sg.evaluate(t), [[2 + np.pi, 4 + np.pi, 1 + np.pi]])
    assert float(sg.evaluate(sg.from_sympy(a * 2, {a: sp.pi}))) == pytest.approx(2 * np.pi)


def test_from_sympy_symbolic_matrix_value_says_what_to_pass():
    with pytest.raises(TypeError, match=r"sg\.from_sympy: mapping\[a\] is the sympy "
                                        r"expression Matrix.*which has symbols; a value is a "
                                        r"number, an array or a Tensor"):
        sg.from_sympy(a * 2, {a: sp.Matrix([a, 2])})


def test_from_sympy_unmapped_function_of_time_is_a_feed_error_naming_it():
    q = sp.Function("q")(sp.Symbol("t"))
    with pytest.raises(sg.FeedError, match=r"function q\(t\) is not in mapping; map it"):
        sg.from_sympy(sp.sin(q), {})
    with pytest.raises(sg.FeedError, match=r"Derivative\(q\(t\), t\), which is not in "
                                           r"mapping; map it too"):
        sg.from_sympy(q.diff(sp.Symbol("t")) + q, {q: 1.0})
