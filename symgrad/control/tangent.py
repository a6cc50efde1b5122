"""Forward mode of ``sg.scan``: the tangent scan (JAX's jvp of ``scan``).

The jvp of a scan is ONE scan over the same steps whose carries are the forward carries
and their tangents, whose xs are the forward xs and the tangents given for them, and whose
body is the forward body's jvp (``forward.node_jvp`` of every body node, the captures'
tangents read as captures). No reverse pass and no history: forward mode through
``checkpoint=k`` is this scan with the same ``checkpoint`` (which only matters if it is
differentiated again in reverse). A replayed reverse scan (the gradient of a checkpointed
scan) is first written as a plain one (``adjoint.replayed``); that is how ``sg.hvp``
goes through ``checkpoint=k``.

>>> import numpy as np
>>> import symgrad as sg
>>> p = sg.placeholder("p")
>>> c, ys = sg.scan(lambda c, x: (c * p + x, c * c), p, sg.constant([1.0, 2.0, 3.0]),
...                 checkpoint=2)
>>> sg.evaluate(sg.jvp([c, ys], [p], [1.0]), {p: 2.0})
[array(38.), array([  4.,  40., 312.])]
"""

from __future__ import annotations

import weakref

from ..dtypes import is_floating
from ..graph.traversal import topological_order
from ..ops.functions import F
from ..ops.jvp import JVP_RULES
from ..ops.registry import apply
from .adjoint import OPS, replayed
from .body import Body, marker, stand_in

_BUILT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
"""Per body, the tangent scans built: every output of one scan shares one tangent scan."""


def sweep(order: list, seeds: dict) -> dict:
    """Tangents (by node id) of the nodes of ``order`` from ``seeds`` (id -> tangent), as
    ``forward.forward_sweep`` but over ``order`` only: a body's nodes, never the outer
    graph behind its captures (a capture computed from another is seeded, not summed)."""
    from ..forward import node_jvp

    carried = dict(seeds)
    for node in order:
        ins = [carried.get(id(i)) for i in node.inputs]
        if (any(t is not None for t in ins) and node.op.differentiable
                and is_floating(node.dtype)):
            tangent = node_jvp(node, ins)
            if tangent is not None:
                carried[id(node)] = tangent
    return carried


def _tangent_or_zeros(carried: dict, t):
    found = carried.get(id(t))
    return F.zeros_like(t) if found is None else found


def tangent_scan(inputs: tuple, tangents: list, attrs: dict) -> dict:
    """The outputs of the tangent scan of a scan node, by the scan's output index."""
    body, n_c, n_x = attrs["body"], attrs["n_carry"], attrs["n_x"]
    key = (tuple(map(id, inputs)), tuple(map(id, tangents)), attrs["length"],
           attrs["reverse"], attrs["checkpoint"])
    built = _BUILT.setdefault(body, {})
    if key in built:
        return built[key][2]
    C, X = body.inputs[:n_c], body.inputs[n_c:]
    Cout, Y = body.outputs[:n_c], body.outputs[n_c:]
    init, xs, caps = inputs[:n_c], inputs[n_c:n_c + n_x], inputs[n_c + n_x:]
    t_init, t_xs, t_caps = tangents[:n_c], tangents[n_c:n_c + n_x], tangents[n_c + n_x:]
    fc = [j for j in range(n_c) if is_floating(C[j].dtype)]
    fx = [j for j in range(n_x) if t_xs[j] is not None and is_floating(X[j].dtype)]
    fy = [j for j in range(len(Y)) if is_floating(Y[j].dtype)]
    since = marker()
    tc = [stand_in(C[j], "tan_carry") for j in fc]
    tx = [stand_in(X[j], "tan_x") for j in fx]
    seeds = {id(C[j]): t for j, t in zip(fc, tc)}
    seeds.update((id(X[j]), t) for j, t in zip(fx, tx))
    seeds.update((id(c), t) for c, t in zip(body.captures, t_caps)
                 if t is not None and is_floating(c.dtype))
    carried = sweep(body.order, seeds)
    outs = (list(Cout) + [_tangent_or_zeros(carried, Cout[j]) for j in fc] + list(Y)
            + [_tangent_or_zeros(carried, Y[j]) for j in fy])
    outside = list(caps) + [t for t in t_caps if t is not None]
    new_body = Body(list(C) + tc + list(X) + tx, outs, since, outside=outside,
                    inside=body.order)
    new_init = list(init) + [F.zeros_like(init[j]) if t_init[j] is None else t_init[j]
                             for j in fc]
    new_xs = list(xs) + [t_xs[j] for j in fx]
    new_attrs = {**attrs, "body": new_body, "n_carry": n_c + len(fc),
                 "n_x": len(new_xs), "replay": None}
    node_inputs = tuple(new_init) + tuple(new_xs) + tuple(new_body.captures)
    n_y, m = len(Y), n_c + len(fc)

    def node(k: int):
        return apply(OPS["scan"], node_inputs, {**new_attrs, "index": k})
    result = {}
    for p, j in enumerate(fc):
        result[j] = node(n_c + p)                              # the carries' tangents
        result[n_c + n_y + j] = node(m + n_y + len(fy) + n_c + p)   # their history
    for p, j in enumerate(fy):
        result[n_c + j] = node(m + n_y + p)                    # the ys' tangents
    built[key] = (inputs, tangents, result)
    return result


def scan_jvp(tangents: list, out, *inputs, **attrs):
    """``JVP_RULES`` entry of the scan record (graph Tensors only: eager scans are
    Python loops, recorded step by step)."""
    if attrs["replay"] is not None:
        node, reads = replayed(inputs, attrs)
        seeds = {id(inputs[i]): tangents[i] for i in reads if tangents[i] is not None}
        order = topological_order([node], stop=[inputs[i] for i in reads])
        return sweep(order, seeds).get(id(node))
    return tangent_scan(inputs, list(tangents), attrs).get(attrs["index"])


JVP_RULES[OPS["scan"]] = scan_jvp
