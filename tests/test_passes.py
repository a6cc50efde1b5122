"""sg.function's pipeline as named passes (compile/function.py PIPELINE), reported by
``f.explain(passes=True)``; the one cache-key function (compile/cache/key.py); the output
mode enum (symgrad/outputs.py); pickling reading the math mode back from the function."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.cache.key import compile_key
from symgrad.compile.plan.fold import fold_graph
from symgrad.compile.function import DEVICE_PIPELINE, PIPELINE
from symgrad.distributed import pickling
from symgrad.outputs import OutputMode

ORDER = ["fold", "scalar", "plan", "nests", "key", "module", "bind", "numba compile"]
COLD = ["warm key"] + ORDER + ["warm record"]   # a cold cpu compile (function.WARM, STORE)


@pytest.fixture(scope="module")
def graph():
    x = sg.placeholder("x", shape=(None,))
    y = sg.reduce_sum(sg.exp(x) * x * 1.25)   # a graph of this file only: compiled cold
    return x, y, sg.gradients(y, x)[0]


@pytest.fixture(scope="module")
def libm_function(graph):
    x, y, g = graph
    return sg.function([x], [y, g], math="libm")


def test_pipeline_is_the_named_passes_in_order():
    assert [p.name for p in PIPELINE] == ORDER
    assert [p.name for p in DEVICE_PIPELINE] == ORDER[:5] + ["device module"]


def test_explain_lists_the_passes_in_order_with_timings(libm_function):
    f = libm_function
    assert [r.name for r in f.passes] == COLD
    assert all(r.seconds >= 0 and r.decided for r in f.passes)
    text = f.explain(passes=True)
    assert text.startswith(f.explain() + "\npasses: 10, ")
    section = text.split("\npasses: ", 1)[1].splitlines()[1:]
    assert [line.split("  ")[1].strip() for line in section] == COLD
    assert all(line.split()[1].replace(".", "").isdigit() and line.split()[2] == "s"
               for line in section[1:4])
    decided = {r.name: r.decided for r in f.passes}
    assert decided["key"].startswith(f.key[:16]) and "'libm'" in decided["key"]
    assert decided["plan"].startswith("1 kernel, 0 steps") and len(f.plan.kernels) == 1
    assert "passes:" not in f.explain()


def test_cache_key_is_stable_and_changes_with_target_math_and_mode(graph, libm_function):
    x, y, g = graph
    folded = fold_graph([y, g], [x])
    key = compile_key(folded, "cpu", OutputMode.LIST, "libm")
    assert key == libm_function.key                          # what sg.function used
    assert key == compile_key(fold_graph([y, g], [x]), "cpu", OutputMode.LIST, "libm")
    others = {compile_key(folded, "parallel", OutputMode.LIST, "libm"),
              compile_key(folded, "cpu", OutputMode.LIST, "fast"),
              compile_key(folded, "cpu", OutputMode.SINGLE, "libm"),
              compile_key(fold_graph([g, y], [x]), "cpu", OutputMode.LIST, "libm")}
    assert len(others) == 4 and key not in others


def test_unpickling_reads_target_and_math_from_the_function(libm_function):
    f = libm_function
    blob = pickle.dumps(f)
    pickling._REGISTRY.pop(f.key, None)          # as a fresh worker process would see it
    try:
        g = pickle.loads(blob)
        assert g is not f and (g.math, g.target, g.key) == ("libm", "cpu", f.key)
        assert g.output_mode is OutputMode.LIST
        a = np.array([0.5, -1.0, 2.0])
        np.testing.assert_array_equal(g(a)[1], f(a)[1])
    finally:
        pickling._REGISTRY[f.key] = f


def test_output_modes_are_one_enum(graph, libm_function):
    x, y, _ = graph
    assert libm_function.output_mode is OutputMode.LIST and not libm_function._single
    a = np.array([1.0, 2.0])
    assert isinstance(sg.evaluate(y, {x: a}), np.ndarray)
    assert sg.evaluate([y, None], {x: a})[1] is None
    assert OutputMode.of(True) is OutputMode.SINGLE and OutputMode.SINGLE.pack([3]) == 3
    assert OutputMode.LIST.given([y]) == [y] and OutputMode.SINGLE.given([y]) is y


def test_cuda_runs_the_device_pipeline():
    from symgrad.compile.cuda import runtime as cuda_runtime
    if not (cuda_runtime.SIMULATOR or cuda_runtime.cuda.is_available()):
        pytest.skip("no CUDA device or simulator")
    x = sg.placeholder("x", shape=(4,))
    f = sg.function([x], sg.sin(x) * 2.0, target="cuda")
    assert [r.name for r in f.passes] == ORDER[:5] + ["device module"]
    assert f.output_mode is OutputMode.SINGLE and f.math == "libm"
    np.testing.assert_allclose(f(np.arange(4.0)), 2 * np.sin(np.arange(4.0)))
