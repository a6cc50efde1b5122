"""Device forms of the sorting records (``symgrad/ops/sorting``): the records' own
``xp``-generic forwards run with CuPy (numpy under the CUDA simulator). CuPy's sorts are
stable (thrust), so ties come out as on the host; ``put_along_axis`` scatters with
``ufunc.at`` (atomics); a batched ``searchsorted`` runs one search per row.

>>> from symgrad.ops.sorting import records as S
>>> sorted(op.name for op in SORTING_FORMS)
['argsort', 'put_along_axis', 'searchsorted', 'sort', 'take_along_axis']
"""

from __future__ import annotations

from ...ops.sorting import records as S

__all__ = ["SORTING_FORMS"]


def _argsort(ctx, node, x):
    a = node.attrs
    return S.argsort_numpy(x, a["axis"], a["descending"], a["k"], xp=ctx.xp)


def _sort(ctx, node, x):
    return S.sort_numpy(x, node.attrs["axis"], node.attrs["descending"], xp=ctx.xp)


def _take(ctx, node, x, idx):
    return ctx.xp.take_along_axis(x, idx.astype(ctx.xp.int64), axis=node.attrs["axis"])


def _put(ctx, node, g, idx, like):
    return S.put_numpy(g, idx, like, node.attrs["axis"], xp=ctx.xp, scatter_add=ctx.scatter_add)


def _searchsorted(ctx, node, seq, values):
    a = node.attrs
    return S.searchsorted_numpy(seq, values, a["side"], a["out_type"], xp=ctx.xp)


SORTING_FORMS = {
    S.argsort: _argsort,
    S.sort: _sort,
    S.take_along_axis: _take,
    S.put_along_axis: _put,
    S.searchsorted: _searchsorted,
}
