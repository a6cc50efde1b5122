"""``F``: every op function by name (``F.reduce_sum``, ``F.unbroadcast``, ...).

Gradient rules of one op family call the functions of others through ``F``, so that the
families never import each other: each family's ``api.py`` ``export``s its functions when it
is imported. Importing this module imports ``symgrad.ops`` (its package) first, so ``F`` is
complete by the time code outside the ops reads it.

>>> from symgrad.ops.functions import F
>>> F.reduce_sum.__name__, F.unbroadcast.__module__
('reduce_sum', 'symgrad.ops.reductions.api')
"""

from __future__ import annotations

import types


class Functions:
    """The namespace ``F``: attributes are the op functions of every family."""

    def __getattr__(self, name: str):
        raise AttributeError(f"symgrad.ops has no op function {name!r}")

    def __repr__(self) -> str:
        return f"<symgrad op functions: {len(vars(self))}>"


F = Functions()


def export(namespace: dict) -> None:
    """Add the functions defined in a family's api module (``globals()``) to ``F``: every
    function whose name has no leading underscore."""
    module = namespace["__name__"]
    for name, value in namespace.items():
        if (isinstance(value, types.FunctionType) and not name.startswith("_")
                and value.__module__ == module):
            setattr(F, name, value)
