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


# --- CUDA results, the same on the simulator and a GPU (docs/cuda.md "GPU results") --------

def on_simulator() -> bool:
    """True when numba.cuda is the simulator (NUMBA_ENABLE_CUDASIM=1, as in CI)."""
    from numba import config
    return bool(config.ENABLE_CUDASIM)


def to_host(value):
    """Any result of a cuda function on the host: numpy for dense results (numpy, numba
    device arrays real or simulated, CuPy, PyTorch, JAX), scipy for sparse ones; None
    stays None."""
    if value is None or isinstance(value, np.ndarray):
        return value
    module = type(value).__module__.partition(".")[0]
    if module == "scipy":
        return value
    if hasattr(value, "copy_to_host"):                       # numba device arrays
        return value.copy_to_host()
    if module in ("cupy", "cupyx"):
        return value.get()                                    # dense, or a scipy sparse
    if module == "torch":
        if value.layout != __import__("torch").strided:       # sparse CSR -> scipy
            import scipy.sparse as sparse
            return sparse.csr_array((value.values().cpu().numpy(),
                                     value.col_indices().cpu().numpy(),
                                     value.crow_indices().cpu().numpy()),
                                    shape=tuple(value.shape))
        return value.detach().cpu().numpy()
    return np.asarray(value)                                  # JAX, plain numbers


def is_numba_device_array(value) -> bool:
    """A numba device array, real or simulated (not a host array)."""
    return bool(getattr(value, "__cuda_ndarray__", False)) and not isinstance(value, np.ndarray)


def device_span(array) -> tuple:
    """(first byte, end) of a device array's memory: its ``__cuda_array_interface__`` on
    a GPU, the host memory standing for it under the simulator."""
    if on_simulator() and hasattr(array, "_ary"):
        array = array._ary
    desc = array.__cuda_array_interface__ if hasattr(array, "__cuda_array_interface__") \
        else array.__array_interface__
    start = desc["data"][0]
    return start, start + array.nbytes


def shares_device_memory(a, b) -> bool:
    """Whether two device arrays' memory ranges overlap (a result that is a copy of an
    argument does not)."""
    (a0, a1), (b0, b1) = device_span(a), device_span(b)
    return a0 < b1 and b0 < a1


def interface_of(device_array) -> dict:
    """A numba device array's ``__cuda_array_interface__`` (under the simulator, where
    device memory is host memory, the one of the host memory standing for it)."""
    if hasattr(device_array, "__cuda_array_interface__"):
        return dict(device_array.__cuda_array_interface__)
    desc = device_array._ary.__array_interface__
    return {"shape": desc["shape"], "typestr": desc["typestr"], "data": desc["data"],
            "strides": desc.get("strides"), "version": 3}


# --- fused loops: the compiled function beside its Python loop and sg.evaluate ----------------

def loop_nodes(outputs: list, record) -> list:
    """The nodes of ``record`` (``symgrad.control.records.SCAN`` or ``WHILE``) under
    ``outputs``."""
    from symgrad.graph.traversal import topological_order
    return [n for n in topological_order(outputs) if n.op is record]


def loop_bodies(outputs: list, record) -> dict:
    """{id: body} of every ``record`` node's body (a loop's outputs share one body)."""
    return {id(n.attrs["body"]): n.attrs["body"] for n in loop_nodes(outputs, record)}


def fused_states(outputs: list, record, target: str = "cpu") -> list:
    """The fused state (``FusedScan`` or ``FusedWhile``) of every ``record`` node's body
    after a call; None: never tried."""
    from symgrad.control.records import SCAN
    held_as = "fused_scan_" if record is SCAN else "fused_while_"
    out = []
    for n in loop_nodes(outputs, record):
        held = getattr(n.attrs["body"].compiled[target].function_, held_as, None)
        out.append(held and held[1])
    return out


def forget_loop_results(outputs: list, record) -> None:
    """Clear the memo of every ``record`` body (a loop's results are not reused)."""
    for body in loop_bodies(outputs, record).values():
        body._memo = None


def python_loop(f, outputs: list, args, record) -> list:
    """``f(*args)`` on the Python loop (fused loops off; loop results not reused)."""
    from symgrad.compile.loops import fused
    forget_loop_results(outputs, record)
    fused.ENABLED = False
    try:
        return f(*args)
    finally:
        fused.ENABLED = True
        forget_loop_results(outputs, record)


def fused_matches_python_loop(inputs: list, outputs: list, args, record,
                              fused_expected: bool = True) -> tuple:
    """``sg.function(inputs, outputs)(*args)`` (the loops of ``record`` fused when
    ``fused_expected``) equals the same function on its Python loop and ``sg.evaluate``
    (shapes, dtypes, values to 1e-12). Returns (the function, its results, the fused
    states)."""
    f = sg.function(inputs, outputs)
    got = f(*args)
    states = fused_states(outputs, record)
    assert states, f"no {record.name} in the graph"
    if fused_expected:
        assert all(s is not None and s.loop is not None for s in states), states
    slow = python_loop(f, outputs, args, record)
    want = sg.evaluate(outputs, dict(zip(inputs, args)))
    assert len(got) == len(slow) == len(want)
    for a, b, c in zip(got, slow, want):
        assert a.shape == b.shape == np.shape(c) and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-14)
    return f, got, states
