"""Optional extras say which extra to install (symgrad/extras.py and the import sites that
use it); np.all/np.any on Tensors build sg.reduce_all/sg.reduce_any."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import symgrad as sg
from symgrad.extras import EXTRAS, missing_message, require


@pytest.mark.parametrize("module, extra", [("dask", "dask"), ("dask.array", "dask"),
                                           ("cupy", "cuda"), ("matplotlib", "bench")])
def test_missing_extra_names_the_pip_command(monkeypatch, module, extra):
    for name in {module.split(".")[0], module}:          # import now fails, even if loaded
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ModuleNotFoundError) as info:
        require(module, extra=extra, why="the test")
    message = str(info.value)
    assert message.startswith(f"{module} is not installed (needed for the test)")
    assert f'pip install -e ".[{extra}]"' in message and "\n" not in message
    assert info.value.name == module


def test_present_module_is_returned():
    assert require("numpy", extra="test") is np


def test_broken_dependency_is_not_reported_as_the_extra(monkeypatch, tmp_path):
    (tmp_path / "sg_fake_extra.py").write_text("import sg_fake_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="sg_fake_missing_dependency") as info:
        require("sg_fake_extra", extra="dask")
    assert "pip install" not in str(info.value)


def test_unknown_extra_is_a_value_error():
    with pytest.raises(ValueError, match="unknown extra 'gpu'"):
        missing_message("cupy", extra="gpu")
    assert set(EXTRAS) == {"dask", "cuda", "bench"}


def test_call_with_dask_arrays_without_dask(monkeypatch):
    from symgrad.distributed import call_dask
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ModuleNotFoundError, match=r'sg.function calls on dask arrays\).*'
                                                  r'pip install -e "\.\[dask\]"'):
        call_dask(object(), ())


def test_pyproject_declares_every_extra():
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    declared = set(re.findall(r"^(\w+) = ", section, re.M))
    assert set(EXTRAS) <= declared
    assert "matplotlib" in section.split("bench = ", 1)[1].splitlines()[0]


def test_numpy_all_and_any_build_the_bool_reductions():
    x = sg.placeholder("x", (2, 3), dtype="bool")
    value = np.array([[True, False, True], [True, True, True]])
    built = [np.all(x), np.any(x, axis=0), np.all(x, axis=1, keepdims=True),
             np.any(x, axis=[0, 1]), np.logical_and.reduce(x), np.logical_or.reduce(x, axis=1)]
    assert [t.op.name for t in built] == ["reduce_all", "reduce_any", "reduce_all",
                                          "reduce_any", "reduce_all", "reduce_any"]
    expected = [np.all(value), np.any(value, axis=0), np.all(value, axis=1, keepdims=True),
                np.any(value), np.logical_and.reduce(value), np.logical_or.reduce(value, axis=1)]
    for got, want in zip(sg.evaluate(built, {x: value}), expected):
        assert got.dtype == np.bool_ and np.array_equal(got, want)


def test_numpy_all_keeps_the_bool_rule_and_refuses_numpy_options():
    y = sg.placeholder("y", (3,))
    with pytest.raises(TypeError, match="reduce_all takes bool tensors"):
        np.all(y)
    assert sg.evaluate(np.all(y > 0), {y: np.array([1.0, 2.0, 3.0])})
    with pytest.raises(TypeError, match="numpy.any on a symgrad Tensor: the option"):
        np.any(y > 0, out=np.zeros((), bool))


@pytest.mark.cuda
def test_cuda_target_without_cupy_names_the_cuda_extra(monkeypatch):
    from symgrad.compile.cuda import runtime as rt
    monkeypatch.setattr(rt, "SIMULATOR", False)       # as on a GPU: the device steps need CuPy
    monkeypatch.setitem(sys.modules, "cupy", None)
    rt.array_module.cache_clear()
    try:
        with pytest.raises(ModuleNotFoundError) as info:
            rt.array_module()
    finally:
        rt.array_module.cache_clear()
    message = str(info.value)
    assert message.startswith("cupy is not installed (needed for sg.function(target='cuda')")
    assert 'pip install -e ".[cuda]"' in message
