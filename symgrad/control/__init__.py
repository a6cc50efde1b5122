"""Control flow that stays control flow: ``scan``, ``fori_loop``, ``while_loop``, ``cond``.

``body.py`` traces a function once into a graph on stand-ins; ``records.py`` holds the
loop and branch records (one structural record each, the body in the attributes);
``adjoint.py`` their reverse mode; ``tangent.py`` a scan's forward mode; ``api.py`` the
public functions (docs/control_flow.md).
"""

from . import records  # noqa: F401  (registers the records)
from . import tangent  # noqa: F401  (the scan's forward-mode rule)
from .api import *  # noqa: F401,F403
from .api import __all__  # noqa: F401
