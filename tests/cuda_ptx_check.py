"""Compile every generated CUDA kernel to PTX with the real numba.cuda compiler (no GPU
needed, only NVVM from a CUDA toolkit): the type check the simulator does not do.

Run as a script with NUMBA_ENABLE_CUDASIM=0 (tests/test_cuda.py does, in a subprocess).
Prints one line per kernel and ``OK <n>`` at the end; exits 2 when NVVM is unavailable.
"""

from __future__ import annotations

import os
import sys
import types

CC = (8, 0)


def _numba():
    """numba, numba.cuda and numba's types (imported only when the check runs)."""
    import numpy as np
    from numba import cuda, from_dtype, int64
    from numba.core import types as nbtypes
    return np, cuda, from_dtype, int64, nbtypes


def _patch_device() -> None:
    """Device functions ask the current device for its compute capability; without a
    GPU, answer CC (compile_ptx itself takes cc as an argument)."""
    import numba.cuda.dispatcher as dispatcher
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=CC)


def graphs(sg):
    """(name, inputs, outputs) covering the printer's functions, dtypes and output modes."""
    import numpy as np
    out = []
    for dtype in ("float32", "float64"):
        x = sg.placeholder("x", shape=(None, 3), dtype=dtype)
        y = sg.placeholder("y", shape=(3,), dtype=dtype)
        z = (sg.sin(x) * y + sg.exp(x) / (1.0 + x * x) + sg.floor(x) + sg.ceil(y)
             + sg.sigmoid(x) + sg.softplus(y) + sg.relu(x) + sg.abs(x) + sg.sign(y)
             + sg.maximum(x, y) + sg.minimum(x, 0.5) + sg.round(x) + sg.erf(x)
             + sg.arctan2(x, y) + sg.where(x > 0, sg.log(x), x) + sg.sqrt(sg.square(x))
             + sg.log1p(sg.abs(x)) + sg.expm1(x) + sg.tanh(x) + x ** y)
        loss = sg.reduce_sum(z)
        gx, gy = sg.gradients(loss, [x, y])
        out.append((f"mixed-{dtype}", [x, y], [loss, gx, gy, sg.reduce_mean(z, axis=0),
                                               sg.reduce_sum(z, axis=1)]))
        a = sg.placeholder("a", shape=(4, 5), dtype=dtype)
        b = sg.placeholder("b", shape=(5, 2), dtype=dtype)
        h = sg.tanh(a @ b)
        out.append((f"matmul-{dtype}", [a, b], [sg.reduce_sum(h * h)] +
                    sg.gradients(sg.reduce_sum(h * h), [a, b])))
    x = sg.placeholder("x", shape=(None,), dtype="float32")
    z = (sg.sin(x) * 2.0 + sg.exp(x) / (1.0 + x * x) + sg.sigmoid(x) + sg.softplus(x)
         + sg.tanh(x) + sg.sqrt(x) + sg.log1p(x) + sg.erf(x) + sg.arctan2(x, 0.5) + x ** 1.5
         + sg.floor(x) + sg.round(x))
    loss = sg.reduce_mean(z)
    out.append(("smooth-float32", [x], [loss, z] + sg.gradients(loss, x)))
    n = sg.placeholder("n", shape=(4,), dtype="int32")
    v = sg.placeholder("v", shape=(4,))
    out.append(("int-bool", [n, v], [sg.reduce_sum(n * 2), sg.reduce_sum(sg.cast(v > 0, "int32")),
                                     v * sg.cast(n, "float64")]))
    p = sg.placeholder("p", shape=(6, 3))
    d = p[:, None, :] - p[None, :, :]
    pair = sg.exp(-sg.reduce_sum(d * d, axis=-1))
    e = sg.reduce_sum(pair) + sg.reduce_sum(sg.reduce_sum(pair, axis=0) ** 2)
    out.append(("pair-nest", [p], [e] + sg.gradients(e, p)))
    triu = sg.constant(np.triu(np.ones((6, 6), bool), 1))    # a band mask: tiles skipped
    r2 = sg.reduce_sum(d * d, axis=-1)
    lj = sg.reduce_sum(sg.where(triu, 4.0 * (r2**-6 - r2**-3), 0.0))
    out.append(("pair-nest-triu", [p], [lj] + sg.gradients(lj, p)))
    eye = sg.constant(~np.eye(6, dtype=bool))                # W3: symmetric, a predicate
    w3 = 0.5 * sg.reduce_sum(sg.where(eye, 4.0 * (r2**-6 - r2**-3), 0.0))
    out.append(("pair-nest-w3", [p], [w3] + sg.gradients(w3, p)))
    flag = sg.placeholder("flag", shape=(6,), dtype="bool")    # a tile of booleans
    fl = sg.reduce_sum(sg.where(flag[None, :], pair, 0.0))
    out.append(("pair-nest-flags", [p, flag], [fl] + sg.gradients(fl, p)))
    u = sg.placeholder("u", shape=(None, 3))     # an unknown length that may be 1: the
    w = sg.placeholder("w", shape=(None, 1))     # broadcast read of the flat template
    yu = sg.reduce_sum(sg.sin(u) * w)
    out.append(("unknown-broadcast", [u, w], [yu] + sg.gradients(yu, [u, w])))
    s = sg.placeholder("s", shape=())
    out.append(("scalar", [s], [sg.sin(s) * s, sg.gradients(sg.sin(s) * s, s)[0]]))
    return out


def array_type(node, out: bool):
    np, cuda, from_dtype, int64, nbtypes = _numba()
    dtype = from_dtype(np.dtype(node.dtype))
    return nbtypes.Array(dtype, len(node.shape), "C" if out else "A")


def _check_float32(module, k) -> None:
    """A float32 region's device body returns float32 values (literals are f32(...))."""
    np, cuda, from_dtype, int64, nbtypes = _numba()
    point = getattr(module, f"_k{k.index}_point")
    args = tuple(from_dtype(np.dtype(i.dtype)) for i in k.inputs)
    _, resty = cuda.compile_ptx(point.py_func, args, device=True, cc=CC)
    for t in resty:
        if isinstance(t, nbtypes.Float) and t != nbtypes.float32:
            raise AssertionError(f"kernel {k.index}: a float32 region returns {resty}")


def _signed(kernel, args: list) -> tuple:
    """The kernel's own signature (cuda_signatures; what a GPU compiles it with), checked
    against the argument types derived here (the same dtypes and ranks; outputs C)."""
    from symgrad.compile.cuda.runtime import signature_of
    own = signature_of(kernel).argtypes
    if [(t.dtype, t.ndim) if hasattr(t, "ndim") else t for t in own] != \
            [(t.dtype, t.ndim) if hasattr(t, "ndim") else t for t in args]:
        raise AssertionError(f"{kernel.__name__}: signature {own} but the plan says {args}")
    return tuple(own)


def _check_nests(f, name: str) -> int:
    """Compile each device loop nest of ``f`` (symgrad/compile/cuda/nest.py)."""
    np, cuda, from_dtype, int64, nbtypes = _numba()
    from symgrad.compile.cuda.nest import device_nest_outputs, nest_inputs
    from symgrad.compile.cuda.tiles import device_nest_inputs, tiled
    from symgrad.compile.codegen.lower import lower_kernel
    from symgrad.compile.nest import Nest

    count = 0
    for nest in [u for u in f.plan.units if isinstance(u, Nest)]:
        lowered = {k.index: lower_kernel(k) for k in nest.kernels}
        inputs = device_nest_inputs(nest, lowered) if tiled(nest) else nest_inputs(nest)
        args = [int64] * nest.rank + [array_type(i, False) for i in inputs]
        for o in device_nest_outputs(nest):
            dtype = o.out.node.dtype if not o.out.is_reduction else "float64"
            args.append(nbtypes.Array(from_dtype(np.dtype(dtype)), o.kernel.rank, "C"))
        for suffix in ("", "_cols"):   # cuda_tiles' column pass, where the nest has one
            kernel = getattr(f.module, f"_n{nest.index}_cuda{suffix}", None)
            if kernel is not None:
                cuda.compile_ptx(kernel.py_func, _signed(kernel, args), cc=CC)
                print(f"{name}: nest {nest.index}{suffix} ok", flush=True)
                count += 1
    return count


def check(sg) -> int:
    np, cuda, from_dtype, int64, nbtypes = _numba()
    from symgrad.compile.cuda.templates import accumulator_dtype, output_mode

    count = 0
    for name, inputs, outputs in graphs(sg):
        f = sg.function(inputs, outputs, target="cuda")
        for k in f.plan.kernels:
            args = [int64] * k.rank + [array_type(i, False) for i in k.inputs]
            for o in k.outputs:
                mode = output_mode(o, k.rank)
                if mode.accumulates:
                    args.append(nbtypes.Array(from_dtype(np.dtype(accumulator_dtype(o))),
                                              k.rank, "C"))
                else:
                    args.append(nbtypes.Array(from_dtype(np.dtype(o.node.dtype)), k.rank, "C"))
            kernel = getattr(f.module, f"_k{k.index}_cuda", None)
            if kernel is None:     # a nest's kernel: only its point function is emitted
                continue
            if name.startswith("smooth-float32"):
                _check_float32(f.module, k)
            cuda.compile_ptx(kernel.py_func, _signed(kernel, args), cc=CC)
            print(f"{name}: kernel {k.index} ok", flush=True)
            count += 1
        count += _check_nests(f, name)
    return count


def main(graph_source=None) -> int:
    """Check every kernel of ``graphs()`` (or of ``graph_source``, another module's list)."""
    global graphs
    try:
        from numba.cuda.cudadrv import nvvm
        nvvm.NVVM()
    except Exception as exc:  # noqa: BLE001 - no CUDA toolkit: nothing to check
        print(f"SKIP no NVVM: {exc}")
        return 2
    _patch_device()
    if graph_source is not None:
        graphs = graph_source
    import symgrad as sg
    print(f"OK {check(sg)}")
    return 0


if __name__ == "__main__":
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    # this checkout's symgrad, not an installed one (sys.path[0] is tests/ for a script)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
