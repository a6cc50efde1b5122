"""One input policy for compiled functions and sg.evaluate (issue 20, items 2 and 3):
docs/inputs.md. Integers convert to float placeholders whether given as lists or arrays;
float arrays keep their precision; wrong count/keyword/non-array: TypeError; wrong dtype or
shape: ValueError; messages name the function, the argument, expected and actual types.
Length-1 arguments that broadcast compile a variant: no silent fallback."""

import warnings

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import ArgumentError, FallbackWarning, FeedError


@pytest.fixture(scope="module")
def fn():
    x = sg.placeholder("x", shape=(None,))
    y = sg.placeholder("y", shape=(None,))
    out = sg.reduce_sum(x * y + sg.sin(x), name="out")
    return x, y, sg.function([x, y], [out] + sg.gradients(out, [x, y]))


def test_integer_lists_and_arrays_are_treated_alike(fn):
    x, y, f = fn
    ys = np.linspace(0.0, 1.0, 5)
    from_list = f([0, 1, 2, 3, 4], ys)
    from_array = f(np.arange(5), ys)                      # refused ("fed int64") before
    from_int32 = f(np.arange(5, dtype=np.int32), ys)
    for a, b, c in zip(from_list, from_array, from_int32):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    assert np.isclose(sg.evaluate(f.outputs[0], {x: np.arange(5), y: ys}), from_array[0])


def test_float_arrays_keep_their_precision_python_floats_do_not_have_one():
    x = sg.placeholder("x", shape=(2,), dtype="float32")
    np.testing.assert_array_equal(sg.evaluate(x * 2.0, {x: [0.5, 1.5]}), [1.0, 3.0])
    with pytest.raises(FeedError, match=r"'x' has dtype float32 but was fed float64 "
                                        r"\(numpy.ndarray of dtype float64 and shape \(2,\)\)"):
        sg.evaluate(x * 2.0, {x: np.array([0.5, 1.5])})
    n = sg.placeholder("n", shape=(2,), dtype="int32")
    np.testing.assert_array_equal(sg.evaluate(n * 2, {n: np.array([1, 2])}), [2, 4])
    with pytest.raises(FeedError, match="'n' has dtype int32 but was fed float64"):
        sg.evaluate(n * 2, {n: [1.5, 2.0]})
    with pytest.raises(FeedError, match="'n' has dtype int32 but was fed int64"):
        sg.evaluate(n * 2, {n: np.array([1, 2**40])})          # does not fit


def test_errors_follow_python_conventions_and_name_the_function(fn):
    x, y, f = fn
    label = "f(x, y) -> ['out', "
    with pytest.raises(TypeError, match=r"takes 2 arguments \(x, y\), got 1") as info:
        f(np.ones(3))
    assert str(info.value).startswith(label)
    with pytest.raises(TypeError, match="no parameter named 'z'"):
        f(np.ones(3), z=np.ones(3))
    for bad, kind in [(None, "NoneType"), ({}, "dict"), ("abc", "str")]:
        with pytest.raises(ArgumentError) as info:
            f(bad, np.ones(3))
        message = str(info.value)
        assert message.startswith(label) and "argument 'x'" in message
        assert f"expects a float64 array of shape (None,), got {kind}" in message
        assert "dtype object" not in message
        assert isinstance(info.value, TypeError)
        with pytest.raises(TypeError, match=f"sg.evaluate: placeholder 'x' .*got {kind}"):
            sg.evaluate(x + y, {x: bad, y: np.ones(3)})
    with pytest.raises(ValueError, match=r"argument 'y' \(placeholder 'y'\) has dtype float64 "
                                         r"but was fed float32") as info:
        f(np.ones(3), np.ones(3, np.float32))
    assert str(info.value).startswith(label) and isinstance(info.value, FeedError)
    with pytest.raises(ValueError, match=r"has shape \(None,\) but was fed shape \(3, 1\)"):
        f(np.ones(3), np.ones((3, 1)))


def test_length_one_arguments_compile_a_variant_without_falling_back(fn):
    x, y, f = fn
    ys = np.linspace(0.0, 1.0, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # no FallbackWarning, no other
        got = f(np.full(1, 0.5), ys)
        again = f(np.full(1, 0.25), ys)
    want = sg.evaluate(f.outputs, {x: np.full(1, 0.5), y: ys})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert [a.shape for a in got] == [(), (1,), (7,)]
    assert np.isclose(again[0], np.sum(0.25 * ys + np.sin(0.25)))
    assert list(f._variants) == [((0, 0),)]               # one variant for this pattern
    assert f._variants[((0, 0),)].inputs[0].shape == (1,)


def test_lengths_that_cannot_broadcast_name_the_function_not_sg_evaluate(fn):
    f = fn[2]
    with pytest.raises(ValueError) as info:
        f(np.ones(2), np.ones(3))
    assert str(info.value).startswith("f(x, y) -> ['out', ")
    assert "sg.evaluate" not in str(info.value)


def test_fallback_warning_is_a_user_warning():
    assert issubclass(FallbackWarning, UserWarning)
    assert sg.errors.FallbackWarning is FallbackWarning


def test_the_examples_of_docs_inputs_run():
    import re
    import textwrap
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "inputs.md").read_text()
    blocks = re.findall(r"^( *)```python\n(.*?)^ *```", text, re.S | re.M)
    assert len(blocks) == 5
    namespace: dict = {"__name__": "__docs__"}
    for k, (_, code) in enumerate(blocks):     # one namespace: later blocks build on earlier
        exec(compile(textwrap.dedent(code), f"docs/inputs.md block {k}", "exec"), namespace)
