"""How a function's outputs were given, and so how its results come back: ``OutputMode``.

``sg.function``, ``sg.evaluate``, the cuda driver, dask calls and pickling all read this
one enum; an entry of a list of outputs may be None (its result is None).

>>> import symgrad as sg
>>> x = sg.placeholder("x", shape=(2,))
>>> outputs, mode = output_list(sg.sin(x), "sg.function")
>>> mode, mode.pack(["a"]), mode.given(outputs) is outputs[0]
(<OutputMode.SINGLE: 'single'>, 'a', True)
>>> output_list([x, None], "sg.function")[1].pack(["a", None])
['a', None]
"""

from __future__ import annotations

import enum
from typing import Any

from .graph.tensor import Tensor

__all__ = ["OutputMode", "output_list"]


class OutputMode(enum.Enum):
    """``SINGLE``: one Tensor (or None) was given, a call returns one value; ``LIST``: a
    list was given, a call returns a list (None for each None entry)."""

    SINGLE = "single"
    LIST = "list"

    @classmethod
    def of(cls, single: bool) -> "OutputMode":
        """The mode of a flag "one output was given"."""
        return cls.SINGLE if single else cls.LIST

    @property
    def single(self) -> bool:
        return self is OutputMode.SINGLE

    def pack(self, results: list) -> Any:
        """The results of a call, as the outputs were given."""
        return results[0] if self is OutputMode.SINGLE else list(results)

    def given(self, outputs: list) -> Any:
        """The ``outputs`` argument that gives this mode again (to compile a variant)."""
        return outputs[0] if self is OutputMode.SINGLE else outputs


def output_list(outputs: Any, api: str) -> tuple:
    """(list of Tensors or None, its ``OutputMode``) for ``api``'s outputs."""
    if isinstance(outputs, Tensor) or outputs is None:
        return [outputs], OutputMode.SINGLE
    outputs = list(outputs)
    for k, o in enumerate(outputs):
        if o is not None and not isinstance(o, Tensor):
            raise TypeError(f"{api}: outputs[{k}] must be a Tensor or None, got "
                            f"{type(o).__name__}")
    return outputs, OutputMode.LIST
