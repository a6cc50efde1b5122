"""Greedy distance-2 colourings of a sparsity pattern (Curtis–Powell–Reid; Gebremedhin,
Manne and Pothen, SIAM Review 2005).

Column colouring (forward mode): columns of one colour share no row, so one Jacobian–
vector product per colour recovers every entry. Row colouring (reverse mode): rows of one
colour share no column, so one vector–Jacobian product per colour does. Both are a greedy
colouring of an intersection graph, built with scipy.sparse (J^T J for columns, J J^T for
rows). Symmetric Hessians use the row colouring too (no star colouring yet).

>>> import numpy as np, scipy.sparse as sp
>>> band = sp.csr_array(np.eye(6, dtype=bool) | np.eye(6, k=1, dtype=bool))
>>> column_colouring(band, order="natural").tolist()
[0, 1, 0, 1, 0, 1]
"""

from __future__ import annotations

import numpy as np

ORDERS = ("largest_first", "natural")


def _adjacency(pattern, columns: bool):
    import scipy.sparse as sparse
    p = sparse.csr_array(pattern, dtype=bool).astype(np.int8)
    graph = (p.T @ p) if columns else (p @ p.T)
    return sparse.csr_array(graph)


def greedy_colouring(graph, order: str = "largest_first") -> np.ndarray:
    """The smallest colour not taken by a neighbour, vertex by vertex in ``order``
    ('largest_first': by decreasing degree; 'natural': 0, 1, 2, ...)."""
    if order not in ORDERS:
        raise ValueError(f"sparse colouring: unknown order {order!r}; use one of {ORDERS}")
    n = graph.shape[0]
    indptr, indices = graph.indptr.tolist(), graph.indices.tolist()
    if order == "largest_first":
        visit = np.argsort(-np.diff(graph.indptr), kind="stable").tolist()
    else:
        visit = range(n)
    colours = [-1] * n
    for v in visit:
        taken = {colours[u] for u in indices[indptr[v]:indptr[v + 1]]}
        c = 0
        while c in taken:
            c += 1
        colours[v] = c
    return np.asarray(colours, dtype=np.int64)


def column_colouring(pattern, order: str = "largest_first") -> np.ndarray:
    """Colours of the columns of ``pattern``: two columns that share a row differ."""
    return greedy_colouring(_adjacency(pattern, columns=True), order)


def row_colouring(pattern, order: str = "largest_first") -> np.ndarray:
    """Colours of the rows of ``pattern``: two rows that share a column differ."""
    return greedy_colouring(_adjacency(pattern, columns=False), order)


def is_valid(pattern, colours: np.ndarray, columns: bool = True) -> bool:
    """Whether no two columns (rows) of one colour share a row (column)."""
    import scipy.sparse as sparse
    p = sparse.csr_array(pattern, dtype=bool)
    p = p if columns else p.T.tocsr()
    k = int(colours.max()) + 1 if colours.size else 0
    seeds = sparse.csr_array((np.ones(colours.size, np.int64),
                              (np.arange(colours.size), colours)), shape=(colours.size, k))
    counts = p.astype(np.int64) @ seeds   # entries per (row, colour): at most 1
    return counts.size == 0 or int(counts.max()) <= 1
