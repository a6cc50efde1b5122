"""Unknown lengths keep their loop nests: a compiled function specialises per call.

A loop nest needs static shapes (``nest/match.py``). A function whose placeholders have
unknown lengths (``shape=(None, 3)``) and whose plan has a pair-shaped kernel left flat for
that reason (``unknown_pair_kernels``) *specialises*: its first call with ``N`` rows
compiles a variant of its graph with those lengths fixed (the placeholder taken as
``(N, 3)``: the same nest, constant-mask predicates and symmetry as a compile for
``(N, 3)``) and runs it; later calls with the same lengths run that variant. Functions
without such a kernel (ordinary elementwise ones) never recompile per length.

At most ``MAX_SPECIALISED`` variants are kept per function (least recently used dropped,
its buffers released; ``f.max_specialised`` sets it per function). If the first variant
has no loop nest either, specialising does not pay: the function stops specialising and
runs its own plan from then on. ``f.explain()`` says that the function specialises, lists
the variants kept and explains the one the last call ran.

>>> import numpy as np, symgrad as sg
>>> P = sg.placeholder("P", shape=(None, 3))
>>> D = P[:, None, :] - P[None, :, :]
>>> E = sg.reduce_sum(sg.exp(-sg.reduce_sum(D * D, axis=-1)))
>>> f = sg.function([P], [E] + sg.gradients(E, P))
>>> value, grad = f(np.zeros((4, 3)))
>>> float(value), list(f.specialised)
(16.0, [((0, 0, 4),)])
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from ...errors import SymgradError
from ...feeds import bind_keywords
from ..nest import Nest, unknown_pair_kernels
from ..scalar.graph import SCALAR_KERNEL
from .variants import with_lengths

MAX_SPECIALISED = 8
"""How many per-call variants a function keeps (least recently used dropped)."""


class Specialiser:
    """The per-call variants of one function: which axes are unknown, the variants kept
    (an LRU ``OrderedDict`` keyed by ``((input, axis, length), ...)``) and the last run."""

    def __init__(self, f):
        self.f = f
        self.unknown = [(k, [a for a, d in enumerate(p.shape) if d is None], p.shape)
                        for k, p in enumerate(f.inputs) if None in p.shape]
        self.variants: OrderedDict = OrderedDict()
        self.last = None
        self.lock = threading.Lock()

    def key(self, args: tuple):
        """``((input, axis, length), ...)`` of a call, or None where an argument is not an
        array of the placeholder's rank and known lengths (the function's own driver then
        runs the call and raises its usual error)."""
        out = []
        for k, axes, shape in self.unknown:
            got = getattr(args[k], "shape", None)
            if type(got) is not tuple or len(got) != len(shape) or \
                    any(d is not None and d != g for d, g in zip(shape, got)):
                return None
            out.extend((k, a, got[a]) for a in axes)
        return tuple(out)

    def variant(self, key: tuple):
        """The function compiled for the lengths of ``key`` (kept, LRU); None when the first
        variant has no nest (the function stops specialising); a ShapeError naming the
        function where the graph does not take those lengths."""
        with self.lock:
            found = self.variants.get(key)
            if found is not None:
                self.variants.move_to_end(key)
                return found
            f = self.f
            try:
                inputs, outputs = with_lengths(f.inputs, f.outputs,
                                               {(k, a): n for k, a, n in key})
            except SymgradError as exc:     # e.g. a constant of another length
                raise type(exc)(f"{f.label}: the arguments' lengths ({_lengths(f, key)}) do "
                                f"not fit the graph: {exc}") from None
            found = f.compiler(inputs, f.output_mode.given(outputs), target=f.target,
                               math=f.math)
            found.label = f.label
            found.module.__dict__["label_"] = f.label
            if not self.variants and not _pays(found.plan):
                f._stop_specialising("its variant for the call's lengths has no loop nest "
                                     "(nor scalar kernel) either")
                return None
            self.variants[key] = found
            while len(self.variants) > f.max_specialised:
                _, dropped = self.variants.popitem(last=False)
                dropped.release_buffers()
            return found


def specialising_call(f, *args, **kwargs) -> Any:
    """``f(*args)`` of a function that specialises: the variant for the call's lengths."""
    s = f._specialiser
    if kwargs:
        args = bind_keywords(f.inputs, args, kwargs, f.label)
    if len(args) == len(f.inputs):
        if any(type(a) is not np.ndarray for a in args):
            if any(hasattr(type(a), "__dask_graph__") for a in args):
                return f.module.run(*args)      # symgrad.distributed: the function's own
            try:
                args = tuple(np.asarray(a) if _plain(a) else a for a in args)
            except (ValueError, TypeError):     # ragged lists, ...: the driver's error
                return f.module.run(*args)
        key = s.key(args)
        if key is not None:
            variant = s.variant(key)
            if variant is not None:
                s.last = key
                return variant(*args)
    return f.module.run(*args)


def _plain(value: Any) -> bool:
    """A list, tuple or number that numpy converts (not a dask or device array)."""
    return isinstance(value, (list, tuple, int, float, complex, np.generic))


def _pays(plan) -> bool:
    """Whether a variant's plan gained what static lengths give: a loop nest, or (small
    lengths) a scalar kernel (``compile/scalar``) in place of the pair kernels."""
    return any(isinstance(u, Nest) or getattr(getattr(u, "node", None), "op", None)
               is SCALAR_KERNEL for u in plan.units)


def wants_specialising(plan) -> bool:
    """Whether ``plan`` has a pair kernel that a compile for static lengths may nest."""
    return bool(unknown_pair_kernels(plan))


def _lengths(f, key: tuple) -> str:
    return ", ".join(f"{f.inputs[k].name} axis {a} = {n}" for k, a, n in key)


def describe(f) -> str:
    """``f.explain()``'s section on per-call specialisation ('' when it does not)."""
    state = f.__dict__.get("_specialise_state")
    if state is None:
        return ""
    if state != "on":
        return f"specialisation per call: stopped, {state}"
    s = f._specialiser
    def lengths(key) -> str:
        return _lengths(f, key)
    lines = [f"specialisation per call: a pair kernel needs static shapes, so each call "
             f"runs a variant compiled for its lengths ({len(s.variants)} kept, at most "
             f"{f.max_specialised}, least recently used dropped)"]
    lines += [f"  variant: {lengths(key)}" for key in s.variants]
    if s.last in s.variants:
        lines.append(f"the last call ran the variant {lengths(s.last)}:")
        lines += ["  " + line for line in s.variants[s.last].explain().splitlines()]
    else:
        lines.append("no call has run a variant yet")
    return "\n".join(lines)
