"""Static graph: Tensor nodes, names and traversal."""

from .tensor import Tensor, TensorOperators, describe, is_tensor
from .naming import name_scope, unique_name
from .traversal import placeholders_of, topological_order

__all__ = ["Tensor", "TensorOperators", "describe", "is_tensor", "name_scope", "unique_name",
           "placeholders_of", "topological_order"]
