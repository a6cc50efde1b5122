"""Pickling compiled functions: by graph and key, rebuilt once per process.

A compiled function pickles as its cache key plus a compact description of its graph
(op names, attributes, shapes, dtypes, constant values): no module, no numba objects, no
generated source. Unpickling looks the key up in an in-process registry; on a miss (the
first task a worker runs) it rebuilds the graph and calls ``sg.function``, which loads the
module through the authenticated module cache (or generates it when this machine has no
verified copy) and registers it, so every later task in that process reuses it.

>>> import pickle, numpy as np, symgrad as sg
>>> x = sg.placeholder("x", shape=(None,))
>>> f = sg.function([x], sg.reduce_sum(sg.sin(x)))
>>> g = pickle.loads(pickle.dumps(f))
>>> g is f, float(g(np.zeros(3)))
(True, 0.0)
"""

from __future__ import annotations

import pickle
import threading
from typing import Any

import numpy as np

from ..graph.tensor import Tensor
from ..graph.traversal import topological_order
from ..outputs import OutputMode

_REGISTRY: dict = {}            # cache key -> CompiledFunction (this process)
_GUARD = threading.Lock()


def register(f: Any) -> None:
    """Remember ``f`` by its key so that unpickling in this process returns it."""
    _REGISTRY.setdefault(f.key, f)


def reduce_function(f: Any) -> tuple:
    """``__reduce__`` of a CompiledFunction: (rebuild, (key, payload))."""
    register(f)
    payload = getattr(f, "_pickle_payload", None)
    if payload is None:
        payload = graph_payload(f.inputs, f.outputs, f.output_mode, f.target, f.math)
        f._pickle_payload = payload
    return rebuild, (f.key, payload)


def rebuild(key: str, payload: bytes) -> Any:
    """The compiled function of ``key``: from the registry, else rebuilt from ``payload``."""
    f = _REGISTRY.get(key)
    if f is not None:
        return f
    with _GUARD:
        f = _REGISTRY.get(key)
        if f is None:
            f = _compile(payload)
            _REGISTRY[key] = f
    return f


def graph_payload(inputs: list, outputs: list, mode: OutputMode, target: str,
                  math: str) -> bytes:
    """The graph of ``outputs`` over ``inputs`` as bytes (ops by registry name), with
    what ``sg.function`` was given: the output mode, target and math mode."""
    order = topological_order([o for o in outputs if o is not None] + list(inputs))
    index = {id(t): k for k, t in enumerate(order)}
    records = [(t.op.name, [index[id(i)] for i in t.inputs], t.attrs, t.shape, t.dtype.str,
                t.name) for t in order]
    return pickle.dumps({
        "nodes": records, "inputs": [index[id(p)] for p in inputs],
        "outputs": [None if o is None else index[id(o)] for o in outputs],
        "mode": mode.value, "target": target, "math": math,
    }, protocol=pickle.HIGHEST_PROTOCOL)


def graph_from_payload(payload: bytes) -> dict:
    """The graph of ``graph_payload`` as fresh Tensors: {'inputs', 'outputs', ...}."""
    from ..ops.registry import REGISTRY

    data = pickle.loads(payload)
    nodes: list = []
    for op, ins, attrs, shape, dtype, name in data["nodes"]:
        nodes.append(Tensor(REGISTRY[op], tuple(nodes[i] for i in ins), attrs, shape,
                            np.dtype(dtype), name))
    data["inputs"] = [nodes[i] for i in data["inputs"]]
    data["outputs"] = [None if i is None else nodes[i] for i in data["outputs"]]
    return data


def _compile(payload: bytes) -> Any:
    from ..compile.function import function

    data = graph_from_payload(payload)
    outputs = OutputMode(data["mode"]).given(data["outputs"])
    # the key differs only under another symgrad, numba or numpy version: same function
    return function(data["inputs"], outputs, data["target"], data["math"])
