"""The dask graph of a chunked call: one task per chunk and pass, tree reductions between.

Per pass, task ``(pass, i)`` calls the pass's compiled function on chunk ``i`` of every
batch input, the single chunk of every parameter and the combined values of earlier
passes; the compiled function itself is one key of the graph, so a worker receives it
once. Partials of each cut are stacked along a new axis and reduced with dask's own tree
reduction (``split_every``): sums, sums of ``chunk mean * chunk rows`` divided by the row
count, maxima, minima, products. Nothing is computed here.
"""

from __future__ import annotations

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from ..errors import ChunkError
from ..graph.tensor import describe
from .rounds import ChunkPlan, CutNode, Pass, count_value

SPLIT_EVERY = 8


def call_chunk(function, *args) -> list:
    """Run one compiled pass on one chunk (a task)."""
    out = function(*args)
    return out if isinstance(out, list) else [out]


def pick(outputs: list, k: int) -> np.ndarray:
    return outputs[k]


def partial(outputs: list, k: int, weight: int) -> np.ndarray:
    """Output ``k`` of a chunk with a new leading axis; a mean is weighted by its rows."""
    value = np.asarray(outputs[k])
    if weight < 0:
        return value[None]
    return (value * weight if weight else np.zeros_like(value))[None]


def _block(array: da.Array, i: int, batch: bool) -> tuple:
    return (array.name,) + ((i,) if batch else ()) + (0,) * (array.ndim - batch)


def _static(node, context: str) -> tuple:
    if None in node.shape:
        raise ChunkError(f"{context}: {describe(node)} has unknown dims other than its batch "
                         "axis; give the placeholders static shapes except the leading dim")
    return tuple(node.shape)


def _ndarray(value: da.Array) -> da.Array:
    """A 0-d result as a 0-d ndarray (as the in-memory call returns), not a numpy scalar."""
    name = f"symgrad-array-{tokenize(value.name)}"
    layer = {(name,): (np.asarray, (value.name,))}
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[value])
    return da.Array(graph, name, (), dtype=value.dtype)


class Runner:
    """Builds the dask graph of one call of a ChunkPlan."""

    def __init__(self, plan: ChunkPlan, arrays: list, rows: tuple, context: str):
        self.plan = plan
        self.arrays = arrays
        self.rows = rows
        self.context = context
        self.batch = [p.shape[:1] == (None,) for p in plan.analysis.inputs]
        self.token = tokenize([a.name for a in arrays], rows)
        self.values: dict = {}                    # id(cut node) -> combined dask array
        for cut in plan.analysis.cuts:
            if cut.kind == "count":
                self.values[id(cut.node)] = da.from_array(count_value(cut, sum(rows)),
                                                          chunks=())

    def outputs(self) -> list:
        plan = self.plan
        results: list = [None] * len(plan.sources)
        for r, step in enumerate(plan.passes):
            packed = self._packed(step, f"symgrad-pass{r}", range(len(self.rows)))
            for j, cut in enumerate(step.partials):
                self.values[id(cut.node)] = self._combine(packed, j, cut)
            for j, k in enumerate(step.rows, start=len(step.partials)):
                results[k] = self._rows(packed, j, plan.analysis.outputs[k])
        if plan.tail is not None:
            packed = self._packed(plan.tail, "symgrad-tail", [0])
            for j, k in enumerate(plan.tail.rows):
                results[k] = self._single(packed, j, plan.analysis.outputs[k])
        for k, source in enumerate(plan.sources):
            if source is not None and source[0] == "cut":
                results[k] = self.values[id(source[1].node)]
        return results

    def _packed(self, step: Pass, prefix: str, chunks) -> da.Array:
        """Per chunk, the list of the pass's outputs (a collection of lists, never computed
        as an array)."""
        name = f"{prefix}-{tokenize(step.function.key, self.token)}"
        fkey = f"symgrad-function-{step.function.key[:32]}"
        values = [self.values[id(c.node)] for c in step.values]
        read = range(len(self.arrays)) if step.inputs is None else step.inputs
        layer: dict = {fkey: step.function}
        for i in chunks:
            args = [_block(self.arrays[k], i, self.batch[k]) for k in read]
            args += [_block(v, 0, False) for v in values]
            layer[(name, i)] = (call_chunk, fkey, *args)
        arrays = [self.arrays[k] for k in read]
        graph = HighLevelGraph.from_collections(name, layer, dependencies=arrays + values)
        sizes = tuple(self.rows[i] for i in chunks)
        return da.Array(graph, name, (sizes,), meta=np.empty((0,), object))

    def _combine(self, packed: da.Array, j: int, cut: CutNode) -> da.Array:
        node = cut.node
        shape = _static(node, self.context)
        name = f"symgrad-partial-{tokenize(packed.name, j)}"
        n = len(self.rows)
        weights = self.rows if cut.kind == "mean" else (-1,) * n
        layer = {(name, i) + (0,) * len(shape): (partial, (packed.name, i), j, weights[i])
                 for i in range(n)}
        graph = HighLevelGraph.from_collections(name, layer, dependencies=[packed])
        dtype = node.dtype
        parts = da.Array(graph, name, ((1,) * n,) + tuple((d,) for d in shape), dtype=dtype)
        if cut.kind in ("sum", "mean"):
            total = parts.sum(axis=0, dtype=dtype, split_every=SPLIT_EVERY)
            if cut.kind == "mean":
                total = total / sum(self.rows)
        else:
            reduce = {"max": da.max, "min": da.min, "prod": da.prod, "any": da.any}[cut.kind]
            total = reduce(parts, axis=0, split_every=SPLIT_EVERY)
        total = total if total.dtype == dtype else total.astype(dtype)
        return _ndarray(total) if not shape else total

    def _rows(self, packed: da.Array, j: int, node) -> da.Array:
        axis = self.plan.analysis.axis_of(node)
        node_shape = [0 if a == axis else d for a, d in enumerate(node.shape)]
        if None in node_shape:
            _static(node, self.context)
        name = f"symgrad-out-{tokenize(packed.name, j)}"
        layer = {}
        for i in range(len(self.rows)):
            index = [0] * len(node_shape)
            index[axis] = i
            layer[(name, *index)] = (pick, (packed.name, i), j)
        graph = HighLevelGraph.from_collections(name, layer, dependencies=[packed])
        chunks = tuple(self.rows if a == axis else (d,) for a, d in enumerate(node_shape))
        return da.Array(graph, name, chunks, dtype=node.dtype)

    def _single(self, packed: da.Array, j: int, node) -> da.Array:
        shape = _static(node, self.context)
        name = f"symgrad-out-{tokenize(packed.name, j)}"
        layer = {(name,) + (0,) * len(shape): (pick, (packed.name, 0), j)}
        graph = HighLevelGraph.from_collections(name, layer, dependencies=[packed])
        return da.Array(graph, name, tuple((d,) for d in shape), dtype=node.dtype)

