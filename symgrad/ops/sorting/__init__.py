"""Sorting and searching (TF semantics): ``sort``, ``argsort``, ``top_k``, ``searchsorted``
and ``interp``; the records (``records.py``) and the public functions (``api.py``,
``interp.py``); docs/ops_indexing.md."""

from . import records  # noqa: F401  (registers the records)
from .api import *  # noqa: F401,F403
from .api import __all__  # noqa: F401
