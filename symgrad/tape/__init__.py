"""The eager tape: ``sg.Variable``, eager tensors, ``sg.GradientTape``, ``sg.get_gradient``.

Importing this package installs the eager backend of the op registry, so public ops
applied to Variables, eager tensors or numpy arrays compute at once. The tape depends on
the op records and the graph only, never on ``symgrad.differentiate``.

>>> import symgrad as sg
>>> w = sg.Variable([[1.0], [2.0]], name="w")
>>> b = sg.Variable([0.5], name="b")
>>> x = [[1.0, 1.0]]
>>> with sg.GradientTape() as tape:
...     loss = sg.reduce_sum(sg.relu(x @ w + b))
>>> dw, db = tape.gradient(loss, [w, b])
>>> dw.numpy().ravel(), db.numpy()
(array([1., 1.]), array([1.]))
"""

from ..ops.registry import set_eager_backend
from .eager import EAGER_TYPES, EagerTensor, Variable, eager_apply
from .get_gradient import get_gradient
from .tape import GradientTape, NotRecordingError

set_eager_backend(eager_apply, EAGER_TYPES)

__all__ = ["EagerTensor", "GradientTape", "NotRecordingError", "Variable", "get_gradient"]
