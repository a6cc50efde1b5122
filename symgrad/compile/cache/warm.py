"""The warm path of ``sg.function``: a cache hit that neither folds nor plans.

``graph_key`` hashes the *unfolded* graph (every node's op, inputs, shape, dtype and
attributes, constants by a digest of their bytes, the placeholders' names, the inputs' and
outputs' order; other names are read from the graph at hand) with the target, output
mode, math mode, versions and ``CODEGEN_VERSION``: everything the folded
graph, and so the generated module, is a deterministic function of. After a cold compile,
``store`` writes a small record under that key (sealed with this user's key like every
cache file, ``trust.seal_bytes``): the folded key of the module, and what binding the
module needs from the plan (the folded constants, the steps' nodes, the kernels' symbolic
dims). ``load`` reads it back; a missing, foreign or corrupted record is a miss (the cold
path runs, with a warning for a bad one), never an error.

>>> import symgrad as sg
>>> from symgrad.outputs import OutputMode
>>> x = sg.placeholder("x", shape=(None,))
>>> k = graph_key([x], [sg.sin(x) * sg.constant([1.0, 2.0])], "cpu", OutputMode.LIST, "fast")
>>> k == graph_key([x], [sg.sin(x) * sg.constant([1.0, 2.0])], "cpu", OutputMode.LIST, "fast")
True
>>> k == graph_key([x], [sg.sin(x) * sg.constant([1.0, -2.0])], "cpu", OutputMode.LIST, "fast")
False
"""

from __future__ import annotations

import hashlib
import io
from array import array
import json
from contextlib import contextmanager
from itertools import chain
from types import SimpleNamespace
from typing import Optional

import numpy as np
import sympy as sp

from ...graph.traversal import topological_order
from . import modules as cache
from . import key as cache_key
from ..plan.fold import _expr_text, _value_digest
from ..plan.oprules import CONSTANT, PLACEHOLDER
from ..plan.regions import Step
from .trust import read_regular, seal_bytes, unseal_bytes, warn_once

__all__ = ["graph_key", "store", "load", "LazyPlan", "remember", "recall"]

MAX_RECORD_BYTES = 256 << 20


def _attr_text(value, exprs: dict) -> str:
    """An exact text of one attribute (arrays by digest, sympy trees by structure)."""
    if isinstance(value, sp.Basic):
        return _expr_text(value, exprs)
    if isinstance(value, np.ndarray):
        return f"array{value.dtype.str}{value.shape}{_value_digest(value)}"
    if isinstance(value, (tuple, list)):
        inner = ",".join(_attr_text(v, exprs) for v in value)
        return f"{type(value).__name__}({inner})"
    if isinstance(value, dict):
        return "dict(" + ",".join(f"{k!r}:{_attr_text(value[k], exprs)}"
                                  for k in sorted(value, key=repr)) + ")"
    if isinstance(value, np.dtype):
        return f"dtype:{value.str}"
    if isinstance(value, float):
        return f"float:{value.hex()}"      # -0.0 and 0.0 differ
    return f"{type(value).__name__}:{value!r}"


_SETTINGS = (("hoist", "ENABLED"), ("hoist", "NEW_KERNEL_MIN"), ("fold", "FOLD_LIMIT"),
             ("fold", "INFLATE_MIN"), ("rewrite", "CHEAP_OPS"), ("scalar", "ENABLED"),
             ("scalar", "SCALAR_ELEMENTS"), ("scalar", "MIN_STEPS"), ("scalar", "DISPATCH_NS"),
             ("scalar", "STATEMENT_NS"), ("scalar", "ELEMENT_NS"),
             ("scalar", "BUILD_STATEMENT_US"), ("scalar", "BUILD_ELEMENT_US"),
             ("scalar", "BUILD_ELEMENT_SQ_US"), ("scalar", "BUILD_IR_STATEMENT_US"),
             ("scalar", "BUILD_IR_ELEMENT_US"), ("scalar", "BUILD_IR_NODE_US"),
             ("scalar", "BUILD_UNIT_US"),
             ("scalar", "BUILD_BASE_US"), ("scalar", "BUILD_PER_NODE_US"),
             ("scalar", "SCATTER_CALLS"), ("scalar", "SCATTER_ELEMENT_NS"),
             ("scalar", "MOVE_ELEMENT_NS"), ("scalar", "BUILD_CALLS"), ("scalar", "MAX_TERMS"),
             ("scalar_source", "NATIVE"))
"""(room, setting): scalar ones are ``scalar.settings.NAMES`` (tests/test_scalar_cost.py)."""


def _setting_modules() -> dict:
    from ..plan import fold, hoist, rewrite
    from ..scalar import settings as scalar, source as scalar_source
    return {"fold": fold, "hoist": hoist, "rewrite": rewrite, "scalar": scalar,
            "scalar_source": scalar_source}


def fold_settings() -> tuple:
    """The module settings the folded graph depends on besides the graph (tests change
    them): part of the key, so a record never outlives a change of one."""
    modules = _setting_modules()
    return tuple((m, name, getattr(modules[m], name)) for m, name in _SETTINGS)


@contextmanager
def settings_applied(settings: tuple):
    """Fold with ``settings`` (``fold_settings()`` of the compile) in place."""
    modules = _setting_modules()
    old = fold_settings()
    try:
        for m, name, value in settings:
            setattr(modules[m], name, value)
        yield
    finally:
        for m, name, value in old:
            setattr(modules[m], name, value)


_PLAIN = frozenset({int, float, str, bool, type(None)})
"""Attribute values that stand for their ``repr`` in the key (exact, and of distinct
texts per type: ``1``, ``1.0``, ``True``, ``'1'``; ``-0.0`` and ``0.0`` differ)."""


def _ordered(outputs: list, order: Optional[list]) -> list:
    """``order`` (``topological_order`` of ``outputs``, computed once by ``sg.function``)
    or that order computed here."""
    return topological_order([o for o in outputs if o is not None]) if order is None \
        else order


def _attrs_part(t, texts: dict, table: dict, exprs: dict) -> tuple:
    """Node ``t``'s attributes in ``graph_key``: a constant by its bytes' digest; else
    its names and values, a value by its ``repr`` where it is plain, itself where it is a
    tuple of ints, else the number of its exact text (``_attr_text``, once per object: a
    graph shares its sympy trees and dtypes) in ``table`` (each text hashed once). The
    three kinds are of three types (str, tuple, int): none equals another."""
    if t.op is CONSTANT:
        v = np.asarray(t.attrs["value"])
        return (v.dtype.str, v.shape, _value_digest(v))
    parts = []
    given = t.attrs
    for name in sorted(given) if len(given) > 1 else given:
        v = given[name]
        if type(v) in _PLAIN:
            parts += (name, repr(v))
            continue
        part = texts.get(id(v))
        if part is None:
            if type(v) is tuple and all(type(e) is int for e in v):
                part = v
            else:
                text = _attr_text(v, exprs)
                part = table.get(text)
                if part is None:
                    part = table[text] = len(table)
            texts[id(v)] = part
        parts += (name, part)
    return tuple(parts)


def graph_key(inputs: list, outputs: list, target: str, mode, math: str,
              order: Optional[list] = None) -> str:
    """The sha256 hex key of the unfolded graph of ``outputs`` over ``inputs`` (see above);
    ``order``: their ``topological_order`` where the caller has it.

    One pass, as ``FoldedGraph.digest``: each distinct node signature (op, shape, dtype,
    placeholder name, attributes: ``_attrs_part``) numbered once, the nodes an array of
    ints (their signature's number, their inputs' count and positions)."""
    order = _ordered(outputs, order)
    position: dict = {}
    texts: dict = {}           # id(attribute value) -> its part of the key
    table: dict = {}           # the attributes' distinct texts -> their number
    exprs: dict = {}
    signatures: dict = {}      # the nodes' distinct signatures -> their number
    dtypes: dict = {}          # id(dtype) -> (dtype, its str: numpy builds it at each read)
    flat: list = []
    get = position.__getitem__
    for t in chain(order, inputs):      # then the inputs no output depends on
        if id(t) in position:
            continue
        position[id(t)] = len(position)
        op = t.op
        d = t.dtype
        dt = dtypes.get(id(d))
        if dt is None:
            dt = dtypes[id(d)] = (d, d.str)
        signature = (op.name, t.shape, dt[1], t.name if op is PLACEHOLDER else None,
                     _attrs_part(t, texts, table, exprs) if t.attrs else None)
        number = signatures.get(signature)
        if number is None:
            number = signatures[signature] = len(signatures)
        inputs_of = t.inputs
        flat += (number, len(inputs_of))
        flat += map(get, map(id, inputs_of))
    flat += [position[id(p)] for p in inputs]
    flat += [-1 if o is None else position[id(o)] for o in outputs]
    head = (target, str(mode.single), math, cache.versions(), cache_key.CODEGEN_VERSION,
            "warm 3", repr(fold_settings()), len(position), len(inputs), list(table),
            list(signatures))
    h = hashlib.sha256(repr(head).encode())
    h.update(array("q", flat).tobytes())
    return h.hexdigest()


def _record_name(key: str) -> str:
    return f"symgrad_warm_{key[:32]}"


def store(key: str, inputs: list, outputs: list, plan, module_key: str,
          order: Optional[list] = None) -> None:
    """Write the warm record of ``key`` for a module compiled from ``plan`` (quietly
    nothing where a step the driver calls is not a node of the user's graph, or the cache
    cannot be written: the module's own write has warned). A scalar kernel's steps are
    printed in the driver (``compile/scalar``'s ``STEP_FORMS``): they need no binding, and
    their nodes (regions made by folding) are not the user's. ``order``: as
    ``graph_key``'s."""
    order = _ordered(outputs, order)
    position = {id(t): k for k, t in enumerate(order)}
    from ..scalar import STEP_FORMS as INLINE   # printed in the driver: bind nothing
    steps = []
    for u in plan.units:
        if isinstance(u, Step) and u.node.op not in INLINE:
            if id(u.node.tensor) not in position:
                return
            steps.append([u.node.index, position[id(u.node.tensor)]])
    arrays, consts = {}, []
    for node in plan.graph.order:
        if not node.is_const:
            continue
        v = node.value
        how = "u" if v.size > 1 and all(s == 0 for s in v.strides) else "a"
        consts.append([node.index, list(v.shape), how, _layout(v), bool(v.flags.writeable)])
        arrays[f"c{node.index}"] = np.array(v.flat[0:1] if how == "u" else v, order="C")
    kernels = [[k.index, list(k.dims), [[list(i.dims), position.get(id(i.tensor), -1), i.name]
                                        for i in k.inputs]] for k in plan.kernels]
    head = json.dumps({"graph": key, "module": module_key, "steps": steps, "consts": consts,
                       "kernels": kernels, "placeholders": len(plan.graph.placeholders)})
    buf = io.BytesIO()
    np.savez(buf, head=np.frombuffer(head.encode(), np.uint8), **arrays)
    name = _record_name(key)
    try:
        directory = cache.cache_dir()
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        cache.write_bytes(directory / name, seal_bytes(name, buf.getvalue()))
    except OSError:
        return


def _read_sealed(name: str) -> Optional[bytes]:
    """The verified payload of cache file ``name``, or None (missing or unreadable; a file
    that does not verify warns once)."""
    path = cache.cache_dir() / name
    try:
        data = read_regular(path, MAX_RECORD_BYTES + 1)
    except OSError:
        return None
    if data is None:
        return None
    payload = None if len(data) > MAX_RECORD_BYTES else unseal_bytes(name, data)
    if payload is None:
        warn_once(path, "is not a record this user's symgrad wrote (truncated, corrupted or "
                  "foreign); compiling", "nothing to do: it is replaced")
    return payload


def load(key: str, inputs: list, outputs: list,
         order: Optional[list] = None) -> Optional[tuple]:
    """(module key, the light plan ``bind_runtime`` reads) of ``key``'s record, or None
    (``order``: as ``graph_key``'s)."""
    name = _record_name(key)
    payload = _read_sealed(name)
    if payload is None:
        return None
    try:
        return _light_plan(payload, key, inputs, outputs, order)
    except Exception:  # noqa: BLE001 - a sealed record of another layout: compile instead
        return None


def _layout(v: np.ndarray) -> str:
    """numba's layout letter of ``v``: part of the type a kernel was compiled for."""
    return "C" if v.flags.c_contiguous else "F" if v.flags.f_contiguous else "A"


def _with_layout(v: np.ndarray, layout: str) -> np.ndarray:
    """``v`` (C-contiguous, as saved) with the cold constant's layout, so that the warm
    call passes the same numba types as the cold compile did (a constant that was read-only,
    Fortran-ordered or strided there is so here: no new specialisation to compile).

    >>> a = np.arange(6.0).reshape(2, 3)
    >>> [_layout(_with_layout(a, k)) for k in "CFA"]
    ['C', 'F', 'A']
    """
    if layout == "F":
        return np.asfortranarray(v)
    if layout == "A":
        out = np.empty(v.shape + (2,), v.dtype)[..., 0]
        out[...] = v
        return out
    return v


def _light_plan(payload: bytes, key: str, inputs: list, outputs: list,
                tensors: Optional[list] = None) -> tuple:
    with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
        head = json.loads(bytes(npz["head"]).decode())
        if head["graph"] != key or head["placeholders"] != len(inputs):
            raise ValueError("placeholders")
        order = []
        for index, shape, how, layout, writeable in head["consts"]:
            v = npz[f"c{index}"]
            v = (np.broadcast_to(v.reshape(()), tuple(shape)) if how == "u"
                 else _with_layout(v.reshape(tuple(shape)), layout))
            if not writeable:
                v.flags.writeable = False
            order.append(SimpleNamespace(is_const=True, index=index, value=v))
    tensors = _ordered(outputs, tensors)
    units = [Step(SimpleNamespace(index=i, tensor=tensors[k])) for i, k in head["steps"]]
    kernels = [SimpleNamespace(index=i, dims=tuple(d), inputs=[
        SimpleNamespace(dims=tuple(di), name=tensors[k].name if k >= 0 else n)
        for di, k, n in ins])
        for i, d, ins in head["kernels"]]
    graph = SimpleNamespace(placeholders=[SimpleNamespace(dtype=p.dtype, tensor=p)
                                          for p in inputs], order=order)
    return head["module"], SimpleNamespace(graph=graph, units=units, kernels=kernels)


def _note_name(tag: str, parts: str) -> str:
    text = f"{tag}\n{cache.versions()}\n{cache_key.CODEGEN_VERSION}\n{parts}"
    return f"symgrad_note_{hashlib.sha256(text.encode()).hexdigest()[:32]}"


def remember(tag: str, parts: str, value: dict) -> None:
    """Keep ``value`` (JSON) under ``tag`` and ``parts`` (any text naming what it was derived
    from) with the versions, sealed like every cache file: what a warm build would otherwise
    derive from a function's plan (a fused loop's module key). Quietly nothing where the
    cache cannot be written."""
    name = _note_name(tag, parts)
    payload = json.dumps({"tag": tag, "parts": parts, "value": value}).encode()
    try:
        directory = cache.cache_dir()
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        cache.write_bytes(directory / name, seal_bytes(name, payload))
    except OSError:
        return


def recall(tag: str, parts: str) -> Optional[dict]:
    """What ``remember(tag, parts, ...)`` kept, or None (missing; a record that does not
    verify warns once and is a miss).

    >>> remember("doc", "example", {"a": 1}) is None
    True
    >>> recall("doc", "example") in ({"a": 1}, None)     # None where no cache is writable
    True
    """
    name = _note_name(tag, parts)
    payload = _read_sealed(name)
    if payload is None:
        return None
    try:
        head = json.loads(payload.decode())
    except ValueError:
        return None
    if head.get("tag") != tag or head.get("parts") != parts:
        return None
    return head.get("value")


class LazyPlan:
    """A warm function's ``plan``: folded and planned on first use (``f.explain()``,
    symgrad.distributed), by ``build()``."""

    def __init__(self, build):
        object.__setattr__(self, "_build", build)
        object.__setattr__(self, "_plan", None)

    def __getattr__(self, name: str):
        plan = object.__getattribute__(self, "_plan")
        if plan is None:
            plan = object.__getattribute__(self, "_build")()
            object.__setattr__(self, "_plan", plan)
        return getattr(plan, name)
