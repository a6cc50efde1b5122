"""Greedy distance-2 colourings of a sparsity pattern (Curtis–Powell–Reid; Gebremedhin,
Manne and Pothen, SIAM Review 2005).

Column colouring (forward mode): columns of one colour share no row, so one Jacobian–
vector product per colour recovers every entry. Row colouring (reverse mode): rows of one
colour share no column, so one vector–Jacobian product per colour does. Both are a greedy
colouring of an intersection graph, built with scipy.sparse (J^T J for columns, J J^T for
rows). Symmetric Hessians use a star colouring (a distance-1 colouring in which every path
on four vertices uses at least three colours): often fewer colours, every entry still
recovered directly from H S, from its own row or from its mirror.

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
    visit = _visit_order(graph, order)
    n = graph.shape[0]
    indptr, indices = graph.indptr.tolist(), graph.indices.tolist()
    colours = [-1] * n
    for v in visit:
        taken = {colours[u] for u in indices[indptr[v]:indptr[v + 1]]}
        c = 0
        while c in taken:
            c += 1
        colours[v] = c
    return np.asarray(colours, dtype=np.int64)


def _visit_order(graph, order: str):
    if order not in ORDERS:
        raise ValueError(f"sparse colouring: unknown order {order!r}; use one of {ORDERS}")
    if order == "largest_first":
        return np.argsort(-np.diff(graph.indptr), kind="stable").tolist()
    return range(graph.shape[0])


def star_colouring(pattern, order: str = "largest_first") -> np.ndarray:
    """A greedy star colouring of the adjacency graph of a symmetric ``pattern``
    (Gebremedhin, Manne and Pothen 2005, algorithm 4.1): colours of neighbours are taken,
    and so is the colour of x in a path v-w-x where w is uncoloured or x already has a
    neighbour y != w of w's colour (that would make a bicoloured path of four vertices)."""
    import scipy.sparse as sparse
    graph = sparse.csr_array(pattern, dtype=bool).tolil()
    graph.setdiag(False)
    graph = sparse.csr_array(graph)
    graph.eliminate_zeros()
    indptr, indices = graph.indptr.tolist(), graph.indices.tolist()
    near = [indices[indptr[v]:indptr[v + 1]] for v in range(graph.shape[0])]
    colours = [-1] * graph.shape[0]
    for v in _visit_order(graph, order):
        taken = set()
        for w in near[v]:
            cw = colours[w]
            if cw >= 0:
                taken.add(cw)
            for x in near[w]:
                cx = colours[x]
                if x == v or cx < 0:
                    continue
                if cw < 0 or any(colours[y] == cw for y in near[x] if y != w):
                    taken.add(cx)
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


def recovery_map(pattern, colours: np.ndarray, symmetric: bool = False):
    """For each nonzero (i, j) of ``pattern`` in CSR order, its flat index in the compressed
    rows C = S A (C[c, j] = sum of A[i, j] over rows i of colour c): c(i) * n + j when row i
    is the only one of its colour in column j, else (``symmetric``) the mirror entry
    c(j) * n + i. None when some entry can be recovered neither way."""
    import scipy.sparse as sparse
    p = sparse.csr_array(pattern, dtype=bool)
    m, n = p.shape
    k = int(colours.max()) + 1 if colours.size else 0
    onehot = sparse.csr_array((np.ones(m, np.int64), (np.arange(m), colours)), shape=(m, k))
    per_column = (p.T.astype(np.int64) @ onehot).toarray()      # n x k: rows of each colour
    rows = np.repeat(np.arange(m), np.diff(p.indptr))
    cols = p.indices
    index = colours[rows] * n + cols
    direct = per_column[cols, colours[rows]] == 1
    if not symmetric:
        return index if direct.all() else None
    mirror = per_column[rows, colours[cols]] == 1
    if not (direct | mirror).all():
        return None
    return np.where(direct, index, colours[cols] * n + rows)
