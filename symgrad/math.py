"""``sg.math``: TF's ``tf.math`` names that symgrad keeps only in this namespace
(``top_k``, TF's TopKV2; the other ``tf.math`` functions are at the top level, ``sg.sin``).

>>> import numpy as np
>>> import symgrad as sg
>>> sg.math.top_k(np.array([1.0, 3.0, 2.0]), k=2).values.numpy()
array([3., 2.])
"""

from .ops.sorting.api import TopK, top_k

__all__ = ["top_k", "TopK"]
