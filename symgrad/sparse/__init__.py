"""Exact sparsity patterns, colourings and compressed sparse Jacobians and Hessians
(docs/sparsity.md). scipy is imported lazily, only when a pattern is built."""

from .compressed import sparse_hessian, sparse_jacobian
from .pattern import hessian_sparsity, sparsity
from . import assembly_rules  # noqa: F401  (sparsity rules of the assembly ops)
from .tensor import SparseTensor

__all__ = ["SparseTensor", "hessian_sparsity", "sparse_hessian", "sparse_jacobian", "sparsity"]
