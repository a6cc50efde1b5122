"""The public scans ``sg.cumsum`` and ``sg.cumprod``, and the private scans of their
gradients (records in ``records.py``)."""

from __future__ import annotations

from typing import Optional

from ..checks import rank_of, single_axis
from ..functions import export
from ..opdef import OpDef
from ..registry import apply
from . import records as SC

__all__ = [
    "cumsum", "cumprod",
]


def _scan(op: OpDef, doc: str):
    def fn(x, axis: int = 0, exclusive: bool = False, reverse: bool = False,
           name: Optional[str] = None):
        attrs = {"axis": single_axis(axis, rank_of(x), op.name), "exclusive": bool(exclusive),
                 "reverse": bool(reverse)}
        return apply(op, (x,), attrs, name)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


cumsum = _scan(SC.cumsum, "Cumulative sum along ``axis`` (TF's exclusive/reverse options).")
cumprod = _scan(SC.cumprod, "Cumulative product along ``axis`` (TF's options); its gradient "
                            "is exact at entries equal to 0 (TF's gives 0 there).")


def shift(x, axis: int, step: int, name: Optional[str] = None):
    return apply(SC.shift, (x,), {"axis": axis, "step": int(step)}, name)


def linrec(a, b, axis: int, reverse: bool = False, name: Optional[str] = None):
    return apply(SC.linrec, (a, b), {"axis": axis, "reverse": bool(reverse)}, name)


export(globals())
