"""Scan ops (cumsum, cumprod): the records (``records.py``) and the public functions
(``api.py``)."""

from . import records  # noqa: F401  (registers the records)
from .api import *  # noqa: F401,F403
from .api import __all__  # noqa: F401
