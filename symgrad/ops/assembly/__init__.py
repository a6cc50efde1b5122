"""Assembly by index (TF semantics): segment reductions and scatters, the records
(``records.py``) and the public functions (``api.py``); docs/assembly.md."""

from . import records  # noqa: F401  (registers the records)
from .api import *  # noqa: F401,F403
from .api import __all__  # noqa: F401
