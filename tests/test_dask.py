"""Compiled functions on dask arrays: chunk by chunk on the threaded scheduler and on a
two-process LocalCluster, combined exactly (symgrad/distributed, docs/dask.md)."""

import pickle

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("dask.distributed")

import symgrad as sg  # noqa: E402
from symgrad.distributed import pickling  # noqa: E402
from symgrad import ChunkError, FeedError  # noqa: E402

pytestmark = pytest.mark.compiled
RNG = np.random.default_rng(12)
TIGHT = dict(rtol=1e-12, atol=1e-13)


def _mlp():
    """W4's MLP at small size: loss, parameter gradients, per-row gradient w.r.t. X."""
    shapes = {"W1": (4, 8), "b1": (8,), "W2": (8, 1), "b2": (1,)}
    params = [sg.placeholder(n, shape=s) for n, s in shapes.items()]
    X = sg.placeholder("X", shape=(None, 4))
    Y = sg.placeholder("Y", shape=(None, 1))
    W1, b1, W2, b2 = params
    loss = sg.reduce_mean(sg.square(sg.tanh(X @ W1 + b1) @ W2 + b2 - Y))
    f = sg.function(params + [X, Y], [loss] + sg.gradients(loss, params + [X]))
    values = [RNG.normal(0, 0.5, s) for s in shapes.values()]
    return f, values


MLP, MLP_PARAMS = _mlp()
ROWS = 50
X_DATA = RNG.normal(size=(ROWS, 4))
Y_DATA = RNG.normal(size=(ROWS, 1))


def _assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, np.ndarray) and g.shape == np.shape(w) and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, **TIGHT)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


# --- threaded scheduler -------------------------------------------------------------------

@pytest.mark.parametrize("chunks", [50, 16, 7, 1, (10, 30, 10)])
def test_mlp_loss_and_gradients_match_in_memory(chunks):
    want = MLP(*MLP_PARAMS, X_DATA, Y_DATA)
    X = da.from_array(X_DATA, chunks=(chunks, 4))
    Y = da.from_array(Y_DATA, chunks=(chunks, 1))
    out = MLP(*MLP_PARAMS, X, Y)
    assert all(isinstance(o, da.Array) for o in out)
    assert out[5].chunks[0] == X.chunks[0]          # per-row gradient: chunked like X
    assert all(o.npartitions == 1 for o in out[:5])  # loss and parameter gradients
    _assert_same(dask.compute(*out, scheduler="threads"), want)
    plan = MLP._dask_plan
    assert len(plan.passes) == 1                   # the row count is known from the chunks
    assert plan.tail is None or max(plan.tail.inputs) < 4    # never reads a chunk of X, Y


def test_other_axes_are_rechunked_and_parameters_may_be_dask_arrays():
    want = MLP(*MLP_PARAMS, X_DATA, Y_DATA)
    X = da.from_array(X_DATA, chunks=(13, 2))      # split along axis 1 too
    params = [da.from_array(p) for p in MLP_PARAMS[:3]] + [MLP_PARAMS[3]]
    params[0] = da.from_array(MLP_PARAMS[0], chunks=(2, 3))   # several chunks: one chunk
    out = MLP(*params, X, Y_DATA)                  # Y in numpy: chunked like X
    assert out[5].chunks == ((13, 13, 13, 11), (4,))
    _assert_same(dask.compute(*out, scheduler="threads"), want)


def test_mean_is_global_sum_over_global_count():
    x = sg.placeholder("x", shape=(None,))
    f = sg.function([x], [sg.reduce_mean(x), sg.reduce_max(x), sg.reduce_min(x)])
    data = np.concatenate([[100.0], RNG.normal(size=9)])
    got = dask.compute(*f(da.from_array(data, chunks=(1, 9))), scheduler="threads")
    np.testing.assert_allclose(got[0], data.mean(), **TIGHT)
    assert abs(got[0] - (data[0] + data[1:].mean()) / 2) > 1.0   # not a mean of means
    assert got[1] == data.max() and got[2] == data.min()


def test_normalisation_by_a_batch_sum_runs_in_exact_passes():
    x = sg.placeholder("x", shape=(None,))
    s = sg.reduce_sum(x)
    share = x / s
    penalty = sg.reduce_sum(sg.square(share))
    f = sg.function([x], [sg.log(s), share, penalty, sg.gradients(penalty, x)[0]])
    data = RNG.uniform(0.5, 1.5, 23)
    want = f(data)
    got = f(da.from_array(data, chunks=5))
    assert len(f._dask_plan.passes) == 3    # s, then sum(share^2) and share, then grad
    _assert_same(dask.compute(*got, scheduler="threads"), want)


def test_gradient_of_a_batch_maximum():
    x = sg.placeholder("x", shape=(None, 2))
    m = sg.reduce_max(x)
    f = sg.function([x], [m, sg.gradients(m, x)[0]])
    data = RNG.normal(size=(9, 2))
    data[7, 1] = data[2, 0] = 5.0                 # a tie in different chunks
    got = dask.compute(*f(da.from_array(data, chunks=(3, 2))), scheduler="threads")
    _assert_same(got, f(data))
    assert got[1][7, 1] == got[1][2, 0] == 0.5


def test_single_output_unconnected_gradient_and_parameter_only_output():
    x = sg.placeholder("x", shape=(None, 3))
    w = sg.placeholder("w", shape=(3,))
    single = sg.function([x, w], sg.reduce_sum(x * w, axis=1))
    out = single(da.from_array(np.ones((5, 3)), chunks=2), np.arange(3.0))
    assert isinstance(out, da.Array) and out.chunks == ((2, 2, 1),)
    np.testing.assert_array_equal(out.compute(scheduler="threads"), np.full(5, 3.0))
    f = sg.function([x, w], [sg.gradients(sg.reduce_sum(w), x)[0], sg.exp(w)])
    none, ew = f(da.ones((4, 3), chunks=2), np.zeros(3))
    assert none is None
    np.testing.assert_array_equal(ew.compute(scheduler="threads"), np.ones(3))


def test_embedding_lookup_split_and_concat_along_other_axes():
    ids = sg.placeholder("ids", shape=(None,), dtype="int64")
    table = sg.placeholder("table", shape=(5, 3))
    x = sg.placeholder("x", shape=(None, 6))
    a, b = sg.split(x, 2, axis=1)
    loss = sg.reduce_mean(sg.square(sg.gather(table, ids))) + \
        sg.reduce_sum(sg.sin(sg.concat([a, 2.0 * b], axis=1)))
    f = sg.function([ids, table, x], [loss] + sg.gradients(loss, [table, x]))
    args = (RNG.integers(0, 5, 11), RNG.normal(size=(5, 3)), RNG.normal(size=(11, 6)))
    got = f(da.from_array(args[0], chunks=4), args[1], da.from_array(args[2], chunks=4))
    assert got[2].chunks == ((4, 4, 3), (6,))      # the table's gradient: one combined chunk
    _assert_same(dask.compute(*got, scheduler="threads"), f(*args))


def test_call_is_lazy():
    calls = []

    def make(block):
        calls.append(1)
        return block

    x = sg.placeholder("x", shape=(None,))
    f = sg.function([x], [sg.reduce_sum(sg.sin(x)), sg.cos(x)])
    data = da.arange(12.0, chunks=4).map_blocks(make, meta=np.empty((0,)))
    total, cos = f(data)
    assert calls == []                             # nothing ran at call time
    got = dask.compute(total, cos, scheduler="threads")
    assert len(calls) == 3
    np.testing.assert_allclose(got[0], np.sin(np.arange(12.0)).sum(), **TIGHT)


def test_batch_inputs_chunked_differently_is_an_error_naming_them():
    x = sg.placeholder("x", shape=(None,))
    y = sg.placeholder("y", shape=(None,))
    f = sg.function([x, y], sg.reduce_sum(x * y))
    with pytest.raises(ChunkError, match=r"'x' \(5, 5\); 'y' \(4, 6\)"):
        f(da.ones(10, chunks=5), da.ones(10, chunks=(4, 6)))
    with pytest.raises(ChunkError, match=r"'y' has 9 rows"):
        f(da.ones(10, chunks=5), np.ones(9))
    with pytest.raises(FeedError, match=r"argument 'y' is a dask array of dtype float32"):
        f(da.ones(10, chunks=5), da.ones(10, chunks=5, dtype=np.float32))


@pytest.mark.parametrize("build, node", [
    (lambda x: sg.cumsum(x, axis=0), r"'cumsum_\d+' \(cumsum"),
    (lambda x: sg.reshape(x, (-1,)), r"\(reshape.*reshapes the batch axis"),
    (lambda x: x[0], r"\(getitem.*indexes along the batch axis"),
    (lambda x: x + sg.constant(np.ones((4, 3))), r"length 4 along the batch axis"),
])
def test_unchunkable_graphs_name_the_node(build, node):
    x = sg.placeholder("x", shape=(None, 3))
    f = sg.function([x], sg.reduce_sum(build(x)))
    with pytest.raises(ChunkError, match=node):
        f(da.ones((4, 3), chunks=2))
    ones = np.ones((4, 3))                         # in memory, the same function still runs
    np.testing.assert_allclose(f(ones), sg.evaluate(f.outputs[0], {x: ones}), **TIGHT)


# --- pickling -----------------------------------------------------------------------------

def test_pickling_is_by_graph_and_key_and_rebuilds_once():
    data = pickle.dumps(MLP)
    assert len(data) < len(MLP.source) / 2         # no module, no source
    assert pickle.loads(data) is MLP               # the registry of this process
    del pickling._REGISTRY[MLP.key]
    rebuilt = pickle.loads(data)
    assert rebuilt is not MLP and rebuilt.key == MLP.key
    assert pickle.loads(data) is rebuilt           # rebuilt once
    _assert_same(rebuilt(*MLP_PARAMS, X_DATA, Y_DATA), MLP(*MLP_PARAMS, X_DATA, Y_DATA))


# --- two worker processes -----------------------------------------------------------------

def test_local_cluster_matches_in_memory_and_compiles_once_per_worker(client):
    want = MLP(*MLP_PARAMS, X_DATA, Y_DATA)
    X = da.from_array(X_DATA, chunks=((20, 20, 10), 4))
    Y = da.from_array(Y_DATA, chunks=((20, 20, 10), 1))
    W1 = da.from_array(MLP_PARAMS[0])              # a parameter as a single-chunk dask array
    for _ in range(2):
        _assert_same(client.compute(MLP(W1, *MLP_PARAMS[1:], X, Y), sync=True), want)
    key = MLP._dask_plan.passes[0].function.key

    def held():
        return {k: f.cache_hit for k, f in pickling._REGISTRY.items()}

    workers = client.run(held)
    assert len(workers) == 2
    # each worker that ran a task rebuilt the pass function once, from the module cache
    assert any(key in h for h in workers.values())
    assert all(h[key] for h in workers.values() if key in h)
