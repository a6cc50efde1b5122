"""Elementwise ops: the records (``records.py``), their scalar sympy forms with TF's
conventions (``scalar.py``, ``special.py``, ``scalar_math.py``) and the public functions
(``api.py``)."""

from . import records  # noqa: F401  (registers the records)
from .api import *  # noqa: F401,F403
from .api import __all__  # noqa: F401
