"""A scalar kernel written as IR keeps numba's forms (``_s<i>``, ``_s<i>_into``, its LLVM
body) as a string literal compiled when first used (``compile/cpu/deferred.py``): a build
and its calls leave them uncompiled; read from outside, or called where the IR kernel
declines its arguments, they are numba's functions, at the module file's own lines, with
the module's numba cache guard, giving the IR kernel's results."""

import numpy as np

import symgrad as sg
from symgrad.compile.cpu.deferred import Deferred, DeferringModule
from symgrad.compile.cpu.njit_driver import _elements


def _function():
    x = sg.placeholder("x", (3,))
    y = sg.stack([x[0] * x[1], sg.sin(x[2]) - x[0], x[1] / x[2]])
    return sg.function([x], [y, sg.jacobian(y, x)])


def test_numba_forms_stay_text_through_build_and_calls():
    f = _function()
    f(np.array([0.5, 1.5, 2.0]))
    (name,) = f.module.SCALAR_KERNELS_
    assert isinstance(f.module, DeferringModule)
    for n in (name, name + "_into", name + "_body"):
        assert type(f.module.__dict__[n]) is Deferred, n
    assert f"deferred_(globals(), ('{name}_body', '{name}_into', '{name}'), '''" in f.source
    assert _elements(f.source, name) == 3 + 3 + 9    # the fused-loop writer still counts them


def test_read_from_outside_they_are_numba_functions_at_their_own_lines():
    f = _function()
    (name,) = f.module.SCALAR_KERNELS_
    a = np.array([0.25, -1.5, 3.0])
    want = f.module.__dict__[name + "_native"](a)
    numba_form = getattr(f.module, name)
    assert hasattr(numba_form, "signatures") and hasattr(f.module, name + "_into")
    assert type(f.module.__dict__[name + "_into"]) is not Deferred
    got = numba_form(a)
    assert all(np.array_equal(w, g) for w, g in zip(want, got))
    line = numba_form.py_func.__code__.co_firstlineno
    assert f.source.splitlines()[line].startswith(f"def {name}(")
    if f.module.NUMBA_CACHE:
        assert type(numba_form._cache).__name__ == "_GuardedCache"


def test_the_ir_kernel_declining_calls_the_deferred_form():
    f = _function()
    (name,) = f.module.SCALAR_KERNELS_
    a = np.array([0.5, 1.25, 2.0])
    want = f.module.__dict__[name + "_native"](a)
    f.module.__dict__[name + "_k"] = lambda *args: NotImplemented   # as a failed check
    got = f.module.__dict__[name + "_native"](a)
    assert type(f.module.__dict__[name]) is not Deferred
    assert all(np.array_equal(w, g) for w, g in zip(want, got))
