"""Kernel code shared by the targets: a kernel lowered to sympy with one cse (``lower``),
its scalar point function and access subscripts (``templates``), LLVM IR bodies for long
kernels (``llvm/``)."""
