"""Contraction op records: matmul (``np.matmul`` semantics), einsum and tensordot.

The gradient of an einsum operand is an einsum of the output gradient with the other
operands, written back to the operand's subscripts. Two cases need care and are exact:
a letter repeated in one operand (``'ii->i'``, a diagonal) scatters onto that diagonal,
and a letter summed out of one operand only (``'ij->i'``) broadcasts back. Both use a
constant mask shaped like the operand (``einsum_mask``: ones on the diagonals).

>>> import numpy as np
>>> import symgrad as sg
>>> a = sg.placeholder("a", shape=(2, 3))
>>> b = sg.placeholder("b", shape=(3, None))
>>> sg.einsum("ij,jk->ik", a, b).shape
(2, None)
>>> m = sg.placeholder("m", shape=(2, 2))
>>> (gm,) = sg.gradients(sg.einsum("ii->", m), [m])   # the trace: its gradient is eye
>>> sg.evaluate(gm, {m: np.ones((2, 2))})
array([[1., 0.],
       [0., 1.]])
>>> sg.tensordot(a, b, 1).shape
(2, None)
"""


from __future__ import annotations

import string

import numpy as np

from ...errors import ShapeError
from ...shapes import broadcast_shapes, format_shape
from ..functions import F
from ..opdef import structural


# --- matmul (np.matmul semantics: 1-D operands, broadcast batch dims) ------------------------
def _matmul_infer(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands must have at least one dimension, got "
                         f"'{a.name}' {format_shape(a.shape)} and "
                         f"'{b.name}' {format_shape(b.shape)}")
    sa = (1,) + a.shape if a.ndim == 1 else a.shape
    sb = b.shape + (1,) if b.ndim == 1 else b.shape
    k1, k2 = sa[-1], sb[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"matmul: inner dimensions differ: '{a.name}' {format_shape(a.shape)} "
                         f"@ '{b.name}' {format_shape(b.shape)} ({k1} != {k2})")
    batch = broadcast_shapes([sa[:-2], sb[:-2]], op="matmul", names=[a.name, b.name])
    shape = batch + (sa[-2], sb[-1])
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    return shape, np.result_type(a.dtype, b.dtype)


def _matmul_vjp(g, out, a, b):
    a2 = F.expand_dims(a, (0,)) if a.ndim == 1 else a
    b2 = F.expand_dims(b, (1,)) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = F.expand_dims(g2, (g2.ndim - (0 if b.ndim == 1 else 1),))
    if b.ndim == 1:
        g2 = F.expand_dims(g2, (g2.ndim,))
    ga = F.matmul(g2, F.matrix_transpose(b2))
    gb = F.matmul(F.matrix_transpose(a2), g2)
    ga = F.reshape_like(F.unbroadcast(ga, a2), a)
    gb = F.reshape_like(F.unbroadcast(gb, b2), b)
    return ga, gb


matmul = structural("matmul", np.matmul, _matmul_infer, vjp=_matmul_vjp)


LETTERS = string.ascii_letters


def parse_subscripts(subscripts: str, ranks: list) -> tuple:
    """``(inputs, output)``: one subscript string per operand and the output's (numpy's
    implicit output, sorted letters seen once, when there is no '->')."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a str, got {type(subscripts).__name__}")
    text = subscripts.replace(" ", "")
    if "." in text:
        raise ValueError(f"einsum: ellipsis ('...') is not supported in {subscripts!r}; "
                         "name every axis")
    lhs, arrow, out = text.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(ranks):
        raise ValueError(f"einsum: {subscripts!r} names {len(inputs)} operands, got "
                         f"{len(ranks)}")
    for k, (sub, rank) in enumerate(zip(inputs, ranks)):
        if not all(c in LETTERS for c in sub):
            raise ValueError(f"einsum: operand {k} subscripts {sub!r} must be letters")
        if len(sub) != rank:
            raise ShapeError(f"einsum: operand {k} has rank {rank} but subscripts {sub!r} "
                             f"name {len(sub)} axes")
    letters = "".join(inputs)
    if not arrow:
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(out)) != len(out) or any(c not in letters for c in out):
        raise ValueError(f"einsum: output subscripts {out!r} must be distinct letters of "
                         f"the inputs in {subscripts!r}")
    return tuple(inputs), out


def letter_sizes(inputs: tuple, shapes: list, subscripts: str) -> dict:
    """Each letter's length (None if unknown everywhere); ShapeError on a conflict."""
    sizes: dict = {}
    for sub, shape in zip(inputs, shapes):
        for c, d in zip(sub, shape):
            known = sizes.get(c)
            if d is not None and known is not None and d != known:
                raise ShapeError(f"einsum: index {c!r} has lengths {known} and {d} in "
                                 f"{subscripts!r} (shapes "
                                 f"{', '.join(format_shape(s) for s in shapes)})")
            sizes[c] = known if d is None else d
    return sizes


def _einsum_numpy(*operands, subscripts):
    return np.einsum(subscripts, *operands, optimize=len(operands) > 2)


def _einsum_infer(*operands, subscripts):
    inputs, out = parse_subscripts(subscripts, [o.ndim for o in operands])
    sizes = letter_sizes(inputs, [o.shape for o in operands], subscripts)
    return tuple(sizes[c] for c in out), np.result_type(*[o.dtype for o in operands])


def _fresh_subscripts(sub: str, used: set) -> tuple:
    """``sub`` with every repeat of a letter renamed to an unused letter; and whether
    any letter was repeated."""
    spare = [c for c in LETTERS if c not in used]
    seen, out = set(), []
    for c in sub:
        if c in seen:
            out.append(spare.pop(0))
        else:
            seen.add(c)
            out.append(c)
    return "".join(out), len(seen) != len(sub)


def einsum_operand_vjp(g, operands: tuple, inputs: tuple, out: str, k: int):
    """The gradient of ``einsum(inputs -> out)(*operands)`` for operand ``k``."""
    sub = inputs[k]
    others = [i for i in range(len(operands)) if i != k]
    fresh, repeated = _fresh_subscripts(sub, set("".join(inputs)) | set(out))
    present = set(out).union(*[set(inputs[i]) for i in others])
    terms, subs = [g], [out]
    for i in others:
        terms.append(operands[i])
        subs.append(inputs[i])
    if repeated or not set(sub) <= present:
        terms.append(F.einsum_mask(operands[k], sub))  # diagonals and summed-out letters
        subs.append(fresh)
    result = F.einsum(",".join(subs) + "->" + fresh, *terms)
    return F.cast(result, operands[k].dtype) if result.dtype != operands[k].dtype else result


def _einsum_vjp(g, out, *operands, subscripts):
    inputs, output = parse_subscripts(subscripts, [o.ndim for o in operands])
    return tuple(einsum_operand_vjp(g, operands, inputs, output, k)
                 for k in range(len(operands)))


einsum = structural("einsum", _einsum_numpy, _einsum_infer, vjp=_einsum_vjp)


def _mask_numpy(like, subscripts):
    mask = np.ones(np.shape(like), dtype=np.asarray(like).dtype)
    first: dict = {}
    for axis, c in enumerate(subscripts):
        if c in first:  # keep entries where this axis's index equals the first one's
            n = mask.shape[axis]
            shape = [1] * mask.ndim
            shape[first[c]], shape[axis] = n, n
            mask = mask * np.eye(n, dtype=mask.dtype).reshape(shape)
        else:
            first[c] = axis
    return mask


def _mask_infer(like, subscripts):
    sizes = letter_sizes((subscripts,), [like.shape], subscripts)
    return tuple(sizes[c] for c in subscripts), like.dtype


# Ones shaped like an einsum operand, zero off its diagonals (letters repeated in
# ``subscripts``); constant with respect to the operand.
einsum_mask = structural("einsum_mask", _mask_numpy, _mask_infer, differentiable=False,
                         public=False)


# --- tensordot ------------------------------------------------------------------------------
def tensordot_subscripts(rank_a: int, rank_b: int, axes: tuple) -> str:
    """The einsum form of ``tensordot(a, b, axes)`` with ``axes = (a_axes, b_axes)``."""
    a_axes, b_axes = axes
    a = list(LETTERS[:rank_a])
    b = list(LETTERS[rank_a:rank_a + rank_b])
    for i, j in zip(a_axes, b_axes):
        b[j] = a[i]
    free_a = [c for i, c in enumerate(a) if i not in a_axes]
    free_b = [c for j, c in enumerate(b) if j not in b_axes]
    return "".join(a) + "," + "".join(b) + "->" + "".join(free_a + free_b)


def _tensordot_infer(a, b, axes):
    subscripts = tensordot_subscripts(a.ndim, b.ndim, axes)
    for i, j in zip(*axes):
        if a.shape[i] is not None and b.shape[j] is not None and a.shape[i] != b.shape[j]:
            raise ShapeError(f"tensordot: axis {i} of '{a.name}' {format_shape(a.shape)} "
                             f"and axis {j} of '{b.name}' {format_shape(b.shape)} differ "
                             f"({a.shape[i]} != {b.shape[j]})")
    return _einsum_infer(a, b, subscripts=subscripts)


def _tensordot_vjp(g, out, a, b, axes):
    inputs, output = parse_subscripts(tensordot_subscripts(a.ndim, b.ndim, axes),
                                      [a.ndim, b.ndim])
    return (einsum_operand_vjp(g, (a, b), inputs, output, 0),
            einsum_operand_vjp(g, (a, b), inputs, output, 1))


tensordot = structural(
    "tensordot", lambda a, b, axes: np.tensordot(a, b, axes=(list(axes[0]), list(axes[1]))),
    _tensordot_infer, vjp=_tensordot_vjp)
