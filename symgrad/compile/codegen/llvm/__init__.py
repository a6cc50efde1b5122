"""LLVM IR bodies for long kernels: the IR writer (``body``) and the link into numba
(``link``)."""
