"""``sg.GradientTape``: TensorFlow's eager tape, on symgrad's op records.

>>> import symgrad as sg
>>> x = sg.Variable(3.0)
>>> with sg.GradientTape(persistent=True) as tape:
...     y = x * x
...     z = y * y
>>> float(tape.gradient(z, x)), float(tape.gradient(y, x))
(108.0, 6.0)
>>> with sg.GradientTape() as outer:
...     with sg.GradientTape() as inner:
...         y = x * x * x
...     dy = inner.gradient(y, x)
>>> float(dy), float(outer.gradient(dy, x))
(27.0, 18.0)
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from ..dtypes import is_floating
from ..errors import TapeError, UnconnectedGradientError
from ..ops.functions import F
from . import state
from .backward import Record, backward, key_of
from .batch import batched_vjps, check_pfor, identity_seeds, reshaped
from .eager import EagerTensor, Variable, as_eager
from .structure import flatten, flatten_like, unflatten
from .seeds import check_eager, policy, seed_for


class NotRecordingError(TapeError, ValueError):
    """``stop_recording`` on a tape that is not recording (TF raises ValueError)."""


class TapeReentryError(TapeError, ValueError):
    """Entering a tape that is already recording (TF raises ValueError)."""


ONCE = "GradientTape.gradient can only be called once on non-persistent tapes"


class GradientTape:
    """Records eager ops on watched values; ``gradient`` runs the reverse pass.

    ``persistent=False`` allows one ``gradient``/``jacobian`` call. With
    ``watch_accessed_variables=True`` every trainable float Variable read while the
    tape records is watched; anything else needs ``tape.watch(x)``.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self.persistent = bool(persistent)
        self.watch_accessed_variables = bool(watch_accessed_variables)
        self._recording = False
        self._clear()

    def _clear(self) -> None:
        self._records: list = []
        self._watched: set = set()
        self._variables: dict = {}  # id -> watched Variable, in watch order
        self._used = False

    # --- context -------------------------------------------------------------------------
    def __enter__(self) -> "GradientTape":
        if state.is_active(self):
            raise TapeReentryError("GradientTape: Tape is still recording, This can happen if "
                                   "you try to re-enter an already-active tape (the tape is "
                                   "already recording)")
        state.push(self)
        self._recording = True
        return self

    def __exit__(self, *exc: Any) -> None:
        state.remove(self)
        self._recording = False

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Ops computed inside are not recorded by this tape (like TF)."""
        if not (state.is_active(self) and self._recording):
            raise NotRecordingError("GradientTape.stop_recording: the tape is not "
                                    "recording; use it inside `with tape:`")
        self._recording = False
        try:
            yield
        finally:
            self._recording = True

    def reset(self) -> None:
        """Forget everything recorded and watched, as if this were a new tape."""
        self._clear()

    # --- watching and recording -----------------------------------------------------------
    def watch(self, tensor: Any) -> None:
        """Watch an eager tensor or Variable (or a nested list of them).

        Integer and bool values are never differentiated; watching them does nothing.
        """
        for k, value in enumerate(flatten(tensor)):
            check_eager(value, f"GradientTape.watch: argument[{k}]")
            if not is_floating(value.dtype):
                continue
            self._watched.add(value._id)
            if isinstance(value, Variable):
                self._variables.setdefault(value._id, value)

    def watched_variables(self) -> tuple:
        """The Variables this tape watches, in the order they were created (TF's)."""
        return tuple(sorted(self._variables.values(), key=lambda v: v._id))

    def _read(self, variable: Variable) -> None:
        """A Variable was read while this tape records: watch it (TF's rule)."""
        if (self.watch_accessed_variables and variable.trainable
                and is_floating(variable.dtype)):
            self.watch(variable)

    def _watches(self, value: EagerTensor) -> bool:
        if value._id in self._watched:
            return True
        variable = value._variable
        if variable is None or not is_floating(variable.dtype):
            return False
        if variable._id in self._watched:
            return True
        if self.watch_accessed_variables and variable.trainable:
            self.watch(variable)
            return True
        return False

    def _record(self, op: Any, inputs: tuple, attrs: dict, out: EagerTensor) -> None:
        """Called by the eager apply for every differentiable op with a float result."""
        watched = [self._watches(t) for t in inputs if is_floating(t.dtype)]
        if any(watched):
            self._records.append(Record(op, inputs, attrs, out))
            self._watched.add(out._id)

    # --- gradients --------------------------------------------------------------------------
    def _start_call(self, api: str) -> None:
        if self._used and not self.persistent:
            raise TapeError(f"{ONCE} (GradientTape.{api}: this non-persistent tape was "
                            "already used; create it with sg.GradientTape(persistent=True) "
                            "to call gradient/jacobian more than once)")
        self._used = True

    def _finish_call(self) -> None:
        if not self.persistent:
            self._records = []

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: Any = "none") -> Any:
        """Gradient of ``target`` (a list is summed) w.r.t. ``sources``, in their structure.

        None for a source the target does not depend on (zeros with 'zero'; 'raise' is
        symgrad's extension). ``output_gradients`` follow ``sg.gradients``' grad_ys rules.
        """
        rule = policy(unconnected_gradients)
        flat_sources = flatten(sources)
        for k, s in enumerate(flat_sources):
            check_eager(s, f"GradientTape.gradient: sources[{k}]")
        targets = [as_eager(t) for t in self._targets(target)]
        grads = flatten_like(target, output_gradients)
        seeds = [seed_for(t, k, g) for k, (t, g) in enumerate(zip(targets, grads))]
        self._start_call("gradient")
        try:
            final = backward(list(self._records), targets, seeds,
                             {key_of(s) for s in flat_sources})
        finally:
            self._finish_call()
        results = [self._result(s, k, final.get(key_of(s)), rule, targets)
                   for k, s in enumerate(flat_sources)]
        return unflatten(sources, results)

    @staticmethod
    def _targets(target: Any) -> list:
        targets = flatten(target)
        for k, t in enumerate(targets):
            check_eager(t, f"GradientTape.gradient: target[{k}]")
        return targets

    @staticmethod
    def _result(source: Any, k: int, grad: Any, rule: str, targets: list) -> Any:
        if grad is not None:
            return grad
        if rule == "zero":
            return EagerTensor(np.zeros(source.shape, source.dtype))
        if rule == "raise":
            raise UnconnectedGradientError(
                f"GradientTape.gradient: sources[{k}] '{source.name}' is not connected to "
                f"the target ({len(targets)} tensor(s)); use unconnected_gradients='none' "
                "or 'zero' to allow this")
        return None

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: Any = "none",
                 parallel_iterations: Any = None, experimental_use_pfor: bool = True) -> Any:
        """Full Jacobian: for each source, shape ``target.shape + source.shape``, from
        one batched backward pass seeded with the identity (``tape/batch.py``).

        >>> import symgrad as sg
        >>> x = sg.Variable([1.0, 2.0])
        >>> with sg.GradientTape() as tape:
        ...     y = x * x
        >>> tape.jacobian(y, x).numpy()
        array([[2., 0.],
               [0., 4.]])
        """
        rule = policy(unconnected_gradients)
        check_eager(target, "GradientTape.jacobian: target")
        flat_sources = flatten(sources)
        for k, s in enumerate(flat_sources):
            check_eager(s, f"GradientTape.jacobian: sources[{k}]")
        y = as_eager(target)
        check_pfor(self, "jacobian", experimental_use_pfor)
        self._start_call("jacobian")
        try:
            batched = None
            if int(np.prod(y.shape, dtype=np.int64)):
                batched = batched_vjps(self, y, flat_sources, identity_seeds(y.shape, y.dtype))
            rows = None
            if batched is None:
                rows = [self._jacobian_row(y, index, flat_sources)
                        for index in np.ndindex(*y.shape)]
        finally:
            self._finish_call()
        if rows is not None:
            results = [self._stack(y, s, [row[k] for row in rows], rule)
                       for k, s in enumerate(flat_sources)]
        else:
            results = [self._stack(y, s, [], rule) if g is None
                       else reshaped(g, tuple(y.shape) + tuple(s.shape))
                       for s, g in zip(flat_sources, batched)]
        return unflatten(sources, results)

    def batch_jacobian(self, target: Any, source: Any, unconnected_gradients: Any = "none",
                       parallel_iterations: Any = None,
                       experimental_use_pfor: bool = True) -> Any:
        """TF's batch Jacobian: shape ``target.shape + source.shape[1:]``, entry
        ``[b, i, j] = d sum_m target[m, i] / d source[b, j]`` (see ``tape/batch.py``)."""
        from .batch import batch_jacobian

        return batch_jacobian(self, target, source, unconnected_gradients,
                              experimental_use_pfor)

    def _jacobian_row(self, y: EagerTensor, index: tuple, sources: list) -> list:
        seed = np.zeros(y.shape, y.dtype)
        seed[index] = 1
        final = backward(list(self._records), [y], [EagerTensor(seed)],
                         {key_of(s) for s in sources})
        return [final.get(key_of(s)) for s in sources]

    @staticmethod
    def _stack(y: EagerTensor, source: Any, rows: list, rule: str) -> Any:
        shape = tuple(y.shape) + tuple(source.shape)
        if all(r is None for r in rows):
            if rule == "zero":
                return EagerTensor(np.zeros(shape, source.dtype))
            if rule == "raise":
                raise UnconnectedGradientError(
                    f"GradientTape.jacobian: source '{source.name}' is not connected")
            return None
        n = len(rows)
        if not state.recording_tapes():  # nobody differentiates it: stack with numpy
            flat = [np.zeros(source.shape, source.dtype) if r is None else r._value
                    for r in rows]
            return EagerTensor(np.stack(flat).reshape(shape) if n else np.zeros(shape))
        total = None
        for i, row in enumerate(rows):  # sum_i e_i (x) row_i, so outer tapes record it
            if row is None:
                continue
            onehot = np.zeros((n,) + (1,) * len(source.shape), source.dtype)
            onehot[i] = 1
            term = F.reshape(row, (1,) + tuple(source.shape)) * onehot
            total = term if total is None else total + term
        return F.reshape(total, shape)
