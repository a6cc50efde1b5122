"""``sg.linalg``: TensorFlow's ``tf.linalg`` names, batched over leading axes.

Factorizations and solves (records in ``symgrad/ops/linalg``) and the matrix ops symgrad
already has (``matmul``, ``einsum``, ``trace``, ``diag_part``, ``matrix_transpose``).

>>> import numpy as np
>>> import symgrad as sg
>>> a = sg.placeholder("a", shape=(None, 3, 3))
>>> e, v = sg.linalg.eigh(a)
>>> e.shape, v.shape
((None, 3), (None, 3, 3))
"""

from .errors import LinAlgError
from .ops.contraction import einsum, matmul
from .ops.layout.api import diag, diag_part, matrix_transpose, trace
from .ops.linalg import (cholesky, cholesky_solve, det, eigh, inv, lstsq, qr, slogdet, solve,
                         triangular_solve)
from .ops.linalg.api_v5 import expm, lu, lu_solve, pinv, svd
from .ops.linalg.norms import matrix_power, norm

__all__ = ["cholesky", "cholesky_solve", "triangular_solve", "solve", "inv", "det",
           "slogdet", "eigh", "lstsq", "qr", "diag", "diag_part", "matrix_transpose", "trace",
           "matmul", "einsum", "LinAlgError", "norm", "matrix_power",
           "svd", "expm", "lu", "lu_solve", "pinv"]
