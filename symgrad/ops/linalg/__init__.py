"""Linear-algebra ops (``sg.linalg``): the records (``records.py``), their forwards for an
array module (``forward.py``) and the public functions (``api.py``). Not one of
``ops.FAMILIES``: its functions live in ``sg.linalg``, not at the top level."""

from . import records  # noqa: F401  (registers the records)
from .api import *  # noqa: F401,F403
from .api import __all__  # noqa: F401
