"""The cost model that chooses scalar kernels (issue 29 item 2, compile/scalar/cost.py):
no size cliff for graphs built entry by entry (x[i] or sg.unstack), a 121-entry matrix
is one scalar kernel, a 64 x 64 matmul stays loops, explain gives the numbers, and the
settings are part of the warm key."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import symgrad as sg
from symgrad.compile.cache import warm
from symgrad.compile.plan.fold import fold_graph
from symgrad.compile.plan.hoist import hoist_invariants
from symgrad.compile.scalar import SCALAR_KERNEL, settings
from symgrad.compile.scalar.cost import admissible, estimate, statements
from symgrad.compile.scalar.elements import region_code
from symgrad.compile.scalar.graph import scalar_graph
from symgrad.ops.indexing import records as I


def _entries(n: int, how: str):
    x = sg.placeholder("x", shape=(n,))
    e = [x[i] for i in range(n)] if how == "getitem" else sg.unstack(x)
    return x, sg.stack([e[i] * e[(i + 1) % n] for i in range(n)])


def _scalar_kernels(f) -> int:
    return sum(getattr(u, "node", None) is not None and u.node.op is SCALAR_KERNEL
               for u in f.plan.units)


@pytest.mark.parametrize("how", ["getitem", "unstack"])
@pytest.mark.parametrize("n", [60, 70, 121, 400])
def test_entry_by_entry_graphs_are_one_scalar_kernel_at_every_size(n, how):
    x, y = _entries(n, how)
    graph = fold_graph([y])
    g, regions = scalar_graph(graph)
    assert len(regions) == 1 and len(regions[0].members) == len(graph.order) - 1
    assert [n.op for n in g.order][1:] == [SCALAR_KERNEL, g.order[2].op]   # and its output
    (choice,) = graph.scalar_choices
    assert choice.chosen and choice.estimate.statements == n
    assert choice.estimate.steps == n + 1           # n picks and the stack as loops


@pytest.mark.parametrize("n, grad", [(70, True), (121, False)])
def test_values_as_evaluate_and_no_loops(n, grad):
    v = np.random.default_rng(n).normal(size=n)
    for how in ("getitem", "unstack"):
        x, y = _entries(n, how)
        loss = sg.reduce_sum(y * sg.sin(y))
        outputs = [loss, y] + (sg.gradients(loss, [x]) if grad else [])
        f = sg.function([x], outputs)
        assert _scalar_kernels(f) == 1 and f.plan.kernels == []
        for got, want in zip(f(v), sg.evaluate(outputs, {x: v})):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_unstack_and_getitem_give_the_same_plan():
    plans = []
    for how in ("getitem", "unstack"):
        _, y = _entries(121, how)
        graph = fold_graph([y])
        _, (region,) = scalar_graph(graph)
        code, reads, results = region_code(region.members, region.inputs, region.outputs)
        e = graph.scalar_choices[0].estimate
        plans.append((len(region.members), len(code), reads[0].shape,
                      [r.shape for r in results], e))
    assert plans[0] == plans[1]


def test_a_121_entry_matrix_is_one_scalar_kernel():
    """A mass-matrix-like 11 x 11 matrix built entry by entry from an 11-vector."""
    q = sg.placeholder("q", shape=(11,))
    rows = [sg.stack([sg.cos(q[i] - q[j]) * float(11 - max(i, j)) for j in range(11)])
            for i in range(11)]
    m = sg.stack(rows)
    f = sg.function([q], m)
    assert _scalar_kernels(f) == 1 and f.plan.kernels == []
    v = np.linspace(-1.0, 1.0, 11)
    np.testing.assert_allclose(f(v), sg.evaluate(m, {q: v}), rtol=1e-14)


def test_dense_64x64_matmul_and_tanh_stay_loops():
    a = sg.placeholder("a", shape=(64, 64))
    graph = fold_graph([sg.tanh(sg.matmul(a, a))])
    assert [statements(n) for n in graph.order[1:]] == [64 ** 3, 64 ** 2]
    assert not any(admissible(n) for n in graph.order[1:])
    assert scalar_graph(graph)[1] == []
    # 8 x 8 (512 products) is worked per element, as before the cost model
    b = sg.placeholder("b", shape=(8, 8))
    y = sg.reduce_sum(sg.matmul(b, sg.transpose(b))[1:])
    f = sg.function([b], [y] + sg.gradients(y, [b]))
    assert _scalar_kernels(f) == 1


def test_explain_gives_the_cost_numbers(monkeypatch):
    x = sg.placeholder("x", shape=(70,))
    y = sg.stack([x[i] * x[(i + 1) % 70] for i in range(70)])
    text = sg.function([x], y).explain()
    assert "scalar kernel 0  per element, straight-line  141 nodes" in text
    assert "  cost: scalar ~1.07 us (70 statements) vs loops ~72 us (1 kernel, 71 steps)" in text
    v = sg.placeholder("v", shape=(1000,))      # two steps, 4,000 element ops: loops
    z = sg.reverse(sg.exp(sg.sin(sg.roll(v, 1, 0)) * v), 0) * 2.0
    text = sg.function([v], z).explain()
    assert "scalar kernel 0" not in text
    assert "not one scalar kernel, by the scalar cost model:\n  6 nodes from 'roll_" in text
    assert "': scalar ~5 us (4,000 statements) vs loops ~4 us (1 kernel, 2 steps)" in text
    assert text.count("; loops are faster") == 1
    monkeypatch.setattr(settings, "BUILD_BASE_US", 0.0)    # no build budget
    monkeypatch.setattr(settings, "BUILD_PER_NODE_US", 0.0)
    monkeypatch.setattr(settings, "BUILD_UNIT_US", 0.0)    # loops free to build
    text = sg.function([x], y).explain()
    assert "scalar kernel 0" not in text and "over the program's build budget ~0 s" in text


def _coefficients_and_vector(dtype: str):
    c = sg.placeholder("c", shape=(3,), dtype=dtype)
    x = sg.placeholder("x", shape=(1000,), dtype=dtype)
    coef = sg.stack([c[0] * c[1], c[2] - c[0], sg.sin(c[1])])
    big = coef[0] * sg.sin(x) + coef[1] * x
    return fold_graph([sg.stack([sg.reduce_sum(big) * c[0], c[2] * coef[2]])])


def test_a_region_over_budget_keeps_its_lighter_nodes():
    """Small float32 coefficients feed a 1000-vector: by run time one region, over the
    build budget (numba compiles a float32 kernel: each element read or written costs
    build time, superlinear), so the vector's nodes leave it and the coefficients stay a
    scalar kernel."""
    graph = _coefficients_and_vector("float32")
    _, regions = scalar_graph(graph)
    assert regions and all(m.shape != (1000,) for r in regions for m in r.members)
    assert any(not ch.chosen and any(m.shape == (1000,) for m in ch.members)
               for ch in graph.scalar_choices)
    assert not any(ch.estimate.ir for ch in graph.scalar_choices)


def test_a_float64_region_is_costed_as_llvm_ir(monkeypatch):
    """The same in float64 is written as LLVM IR (linear build, ~0.1 ms a statement): by
    total cost (run time over ``BUILD_CALLS`` calls plus build) the vector's 4,000
    statements save ~1 us a call for ~0.3 s more build, so they stay loops; weighed over
    many more calls the whole region is one scalar kernel (issue 29: the IR path's
    constants; with numba's the vector's nodes leave it even so, as in float32 above)."""
    graph = _coefficients_and_vector("float64")
    _, regions = scalar_graph(graph)
    assert regions and all(m.shape != (1000,) for r in regions for m in r.members)
    assert any("loops are faster (over 1e+05 calls" in ch.text() for ch in graph.scalar_choices)
    monkeypatch.setattr(settings, "BUILD_CALLS", 1e9)
    graph = _coefficients_and_vector("float64")
    _, regions = scalar_graph(graph)
    assert len(regions) == 1 and any(m.shape == (1000,) for m in regions[0].members)
    (choice,) = graph.scalar_choices
    e = choice.estimate
    assert choice.chosen and e.ir and e.build_us == (
        settings.BUILD_IR_STATEMENT_US * e.statements +
        settings.BUILD_IR_ELEMENT_US * (e.reads + e.writes) +
        settings.BUILD_IR_NODE_US * e.nodes) and e.nodes == len(choice.members)
    numba = dataclasses.replace(e, ir=False)
    assert numba.build_us > 10 * e.build_us


def test_getitem_grads_fed_by_a_region_cost_steps():
    """A getitem_grad outside a region, of a region value, is fused into the loop kernel
    in the loop form and a numpy step (``SCATTER_CALLS`` calls) after a scalar kernel."""
    x = sg.placeholder("x", shape=(3,))
    y = sg.stack([x[0] * x[1], x[2] - x[0]])
    graph = fold_graph([y])
    e = estimate(graph.order[1:], graph)
    assert e.scatters == (0, 0)
    fed = dataclasses.replace(e, scatters=(2, 100))
    assert fed.scalar_ns == pytest.approx(e.scalar_ns + 2 * settings.SCATTER_CALLS *
                                          settings.DISPATCH_NS + 100 * settings.ELEMENT_NS)


def test_estimate_counts_reads_of_picks_only():
    x = sg.placeholder("x", shape=(5000,))
    graph = fold_graph([sg.stack([x[0] * x[1], x[2] - x[0]])])
    e = estimate(graph.order[1:], graph)
    assert (e.reads, e.writes, e.statements) == (3, 2, 2)


def test_every_setting_is_in_the_warm_key(monkeypatch):
    assert len(settings.key()) == len(settings.NAMES)
    names = {name for room, name, _ in warm.fold_settings() if room == "scalar"}
    assert names == set(settings.NAMES)
    before = warm.fold_settings()
    monkeypatch.setattr(settings, "BUILD_PER_NODE_US", 1.0)
    assert warm.fold_settings() != before


def test_linalg_rules_count_their_statements():
    """A small solve is costed by its own rule (LU statements), a matrix above the rule's
    size is never admissible (LAPACK stays)."""
    from symgrad.compile.plan.fold import fold_graph
    from symgrad.compile.scalar import cost
    from symgrad.compile.scalar.linalg_elements import MAX_N

    small = fold_graph([sg.linalg.solve(sg.placeholder("a4", (4, 4)),
                                        sg.placeholder("b4", (4, 1)))])
    node = [n for n in small.order if n.op is sg.linalg.solve(
        sg.placeholder("u", (2, 2)), sg.placeholder("v", (2, 1))).op][0]
    assert 0 < cost.statements(node) < cost.UNBOUNDED and cost.admissible(node)
    n = MAX_N + 1
    big = fold_graph([sg.linalg.solve(sg.placeholder("an", (n, n)),
                                      sg.placeholder("bn", (n, 1)))])
    node = [m for m in big.order if m.op is node.op][0]
    assert cost.statements(node) == cost.UNBOUNDED and not cost.admissible(node)


# --- the structure of values (compile/scalar/structure.py): estimates vs real statements ---

def _real_and_estimated(graph) -> tuple:
    """(statements region_code makes for every node the pass may work per element as one
    region, the estimate of that region, the dense count): no compile."""
    from symgrad.compile.scalar import cost, select
    members = [n for n in graph.order if select._static(n)]
    ids = {id(n) for n in members}
    inputs = []
    for n in members:
        inputs += [i for i in n.inputs if id(i) not in ids and not i.is_const and
                   all(i is not j for j in inputs)]
    wanted = {id(o) for o in graph.outputs}
    outputs = [n for n in members if id(n) in wanted or
               any(id(c) not in ids for c in graph.consumers[id(n)])]
    code, _, _ = region_code(members, inputs, outputs)
    found = cost.known(graph, select._countable(graph))
    return (len(code), sum(statements(n, found) for n in members),
            sum(statements(n) for n in members))


def _kinetics(n: int, seed: int = 0):
    """The mass-action network of benchmarks/build_time.py (case b): n species, 2n random
    bimolecular reactions, from sympy; rhs and its Jacobian."""
    from benchmarks.build_time import kinetics_model
    states, rhs = kinetics_model(n, seed)
    x = sg.placeholder("x", (n,))
    y = sg.reshape(sg.from_sympy(rhs, {s: x[i] for i, s in enumerate(states)}), (n,))
    return x, [y, sg.jacobian(y, x)]


def _pendulum(links: int):
    """Case a of benchmarks/build_time.py: rhs = [u, solve(M, F)] and its Jacobian."""
    from benchmarks.build_time import _sg_a, _model
    (x,), outputs, _ = _sg_a(sg, links, _model("a", links))
    return x, outputs


@pytest.mark.parametrize("build, size", [(_kinetics, 20), (_pendulum, 2)])
def test_estimates_track_the_statements_a_kernel_emits(build, size):
    """A Jacobian's rows are mostly exact zeros and equal elements: the estimate stays
    within a small factor of the statements the element rules emit (never below half),
    where the dense count is many times over."""
    _, outputs = build(size)
    real, estimated, dense = _real_and_estimated(fold_graph(outputs))
    assert 0.5 * real <= estimated <= 2.5 * real, (real, estimated)
    if build is _kinetics:
        assert dense > 5 * real, (real, dense)


def test_sums_of_rows_in_zeros_emit_no_statements():
    """Sums of getitem_grads into zeros at distinct entries are the entries themselves;
    a zero factor of a symbol stays a statement (``0.0*x``), once per distinct value."""
    from symgrad.compile.scalar import cost
    x = sg.placeholder("x", shape=(50,))
    loss = sg.reduce_sum(sg.stack([x[i] * x[i + 1] for i in range(0, 48, 2)]))
    graph = fold_graph(sg.gradients(loss, [x]))
    found = cost.known(graph)
    sums = [n for n in graph.order if n.kind == "elementwise" and n.shape == (50,)]
    assert sums and all(statements(n, found) <= 1 for n in sums)
    assert all(statements(n) == 50 for n in sums)
    seed = sg.constant(np.eye(5)[2])
    s = sg.placeholder("s", shape=())
    graph = fold_graph([seed * sg.sin(s)])
    (node,) = [n for n in graph.order if n.shape == (5,) and not n.is_const]
    assert statements(node, cost.known(graph)) == 1       # 0.0*t (1*t is t)
    assert _real_and_estimated(graph)[:2] == (2, 2)       # and t = sin(s)


def test_a_100_species_network_is_one_scalar_kernel():
    """Case b's 100-species rhs and Jacobian (3,000 nodes): one scalar kernel by the model
    (counted densely its Jacobian was 131,000 statements and the region was refused)."""
    _, outputs = _kinetics(100)
    graph = fold_graph(outputs)
    g, regions = scalar_graph(graph)
    assert len(regions) == 1
    assert not any(n.kind == "elementwise" for n in g.order)      # no loop kernel left
    (choice,) = [c for c in graph.scalar_choices if c.chosen]
    assert choice.estimate.statements < 10_000 < sum(map(statements, choice.members))


def test_a_121_entry_mass_matrix_and_its_jacobian_are_one_scalar_kernel():
    """An 11 x 11 mass-matrix-like M(q), solve(M, f(q)) and the Jacobian (the pendulum's
    form): one scalar kernel, the batched products of the Jacobian included."""
    q = sg.placeholder("q", shape=(11,))
    m = sg.stack([sg.stack([sg.cos(q[i] - q[j]) * float(11 - max(i, j)) + (i == j)
                            for j in range(11)]) for i in range(11)])
    f = sg.reshape(sg.stack([sg.sin(q[i]) * q[(i + 1) % 11] for i in range(11)]), (11, 1))
    y = sg.linalg.solve(m, f)[:, 0]
    graph = fold_graph([y, sg.jacobian(y, q)])
    _, regions = scalar_graph(graph)
    assert len(regions) == 1
    assert not any(not c.chosen for c in graph.scalar_choices)
    fn = sg.function([q], [y, sg.jacobian(y, q)])
    assert _scalar_kernels(fn) == 1 and fn.plan.kernels == []
    v = np.linspace(-0.5, 0.5, 11)
    for got, want in zip(fn(v), sg.evaluate([y, sg.jacobian(y, q)], {q: v})):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_the_program_bound_on_admission_keeps_64x64_matmuls_out():
    """A node is admissible while its extra statements cost at most the calls the
    program's steps could save (``cost.units``): a 64 x 64 matmul among a few steps is
    not; the same product among thousands of steps would be weighed by its region."""
    from symgrad.compile.scalar import cost
    a = sg.placeholder("a", shape=(64, 64))
    graph = fold_graph([sg.tanh(sg.matmul(a, sg.transpose(a)))[1:]])
    saved = cost.units(graph)
    assert saved <= 4
    found = cost.known(graph)
    assert not any(admissible(n, found, saved) for n in graph.order[1:] if n.op is not None
                   and statements(n) >= 64 ** 3)
    assert scalar_graph(graph)[1] == []
    node = [n for n in graph.order if statements(n) == 64 ** 3][0]
    assert admissible(node, found, 64 ** 3)


# --- estimate in one pass: the same numbers as the four passes it replaced ----------------

def _estimate_in_passes(members: list, graph, found=None):
    """``cost.estimate`` as it was (four passes over the members), for comparison."""
    from symgrad.compile.plan.oprules import FUSED_REDUCTIONS, S
    from symgrad.compile.scalar.cost import (Estimate, _IR_CHARS, _PICKS, size_of,
                                             splits)
    from symgrad.compile.scalar.step_cost import steps_ns
    ids = {id(m) for m in members}
    read: dict = {}
    for m in members:
        for i in m.inputs:
            if id(i) not in ids and not i.is_const:
                whole = size_of(i.shape)
                part = size_of(m.shape) if m.op in _PICKS else whole
                read[id(i)] = min(whole, read.get(id(i), 0) + part)
    wanted = {id(o) for o in graph.outputs if o is not None}
    scatters = {id(c): size_of(c.shape) for m in members for c in graph.consumers[id(m)]
                if c.op is S.getitem_grad and id(c) not in ids and c.inputs[0] is m}
    writes = sum(size_of(m.shape) for m in members if id(m) in wanted or
                 any(id(c) not in ids for c in graph.consumers[id(m)]))
    ir = all(m.dtype.char in _IR_CHARS and all(
        i.is_const or i.dtype.char in _IR_CHARS for i in m.inputs) for m in members)
    return Estimate(sum(statements(m, found) for m in members), sum(read.values()), writes,
                    len({m.inputs[0].shape if m.op in FUSED_REDUCTIONS else m.shape
                         for m in members if not splits(m)}),
                    sum(map(splits, members)), ir, (len(scatters), sum(scatters.values())),
                    steps_ns(members), len(members))


def _programs():
    x = sg.placeholder("x", shape=(12,))
    i = sg.placeholder("i", shape=(4,), dtype=np.int64)
    m = sg.placeholder("m", shape=(4, 4))
    y = sg.stack([x[k] * x[(k + 1) % 12] for k in range(12)])
    z = sg.reduce_sum(sg.tanh(sg.matmul(m, m)), axis=0) + sg.cast(i, np.float64)
    yield [y, sg.gradients(sg.reduce_sum(y * y), x)[0]]
    yield [z, sg.gradients(sg.reduce_sum(z), m)[0]]
    yield _kinetics(8)[1]
    yield _pendulum(2)[1]


@pytest.mark.parametrize("k", range(4))
def test_estimate_in_one_pass_is_the_estimate_in_passes(k, monkeypatch):
    """Every region the pass weighs (densely, then on the values' structure) and the
    graph's whole order as one region get the same estimate from both."""
    from symgrad.compile.scalar import cost, select
    seen = []

    def both(members, graph, found=None):
        got = cost.estimate(members, graph, found)
        assert got == _estimate_in_passes(members, graph, found)
        seen.append(found)
        return got
    monkeypatch.setattr(select, "estimate", both)
    graph = fold_graph(list(_programs())[k])
    scalar_graph(graph)
    assert seen
    every = [n for n in graph.order if not n.is_const]
    for f in (None, seen[-1]):
        assert cost.estimate(every, graph, f) == _estimate_in_passes(every, graph, f)


def _planned(outputs, inputs):
    """The folded graph as the compiler weighs it (hoisted), and its scalar regions."""
    graph, _ = hoist_invariants(fold_graph(outputs, inputs))
    return graph, scalar_graph(graph)[1]


def _index_kinetics(n: int, how: str):
    """Mass action written with index arrays (benchmarks/build_time.py b_idx, b_mat): rhs
    and its Jacobian."""
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.integers(0, n, 2 * n) for _ in range(4))
    k = rng.uniform(0.1, 2.0, 2 * n)
    x = sg.placeholder("x", shape=(n,))
    rates = k * x[a] * x[b]
    if how == "idx":
        rhs = sg.unsorted_segment_sum(sg.concat([-rates, -rates, rates, rates], 0),
                                      np.concatenate([a, b, c, d]), n)
    else:
        s = np.zeros((n, 2 * n))
        for ids, sign in ((a, -1.0), (b, -1.0), (c, 1.0), (d, 1.0)):
            np.add.at(s, (ids, np.arange(2 * n)), sign)
        rhs = sg.matmul(s, rates[:, None])[:, 0]
    return [rhs, sg.jacobian(rhs, x)], [x]


@pytest.mark.parametrize("n,how", [(40, "idx"), (100, "idx"), (200, "idx"), (100, "mat")])
def test_index_array_kinetics_is_one_kernel_at_every_size(n, how):
    """No cliff (issue 29): the Jacobian's gather_grads are np.add.at scatters in the loop
    form (SCATTER_ELEMENT_NS per element, ~400 us a call at 100 species), so the whole
    program is one scalar kernel at 40, 100 and 200 species (main left the Jacobian to
    loops from 100 on, 510 us a call)."""
    graph, regions = _planned(*_index_kinetics(n, how))
    assert len(regions) == 1 and all(c.chosen for c in graph.scalar_choices)
    ops = {m.op for m in regions[0].members}
    assert I.gather_grad in ops and I.gather in ops
    (choice,) = graph.scalar_choices
    e = choice.estimate
    assert e.step_ns >= settings.SCATTER_ELEMENT_NS * 2 * n * 2 * n   # two (n, 2n) scatters
    assert e.loop_ns > 10 * e.scalar_ns


def test_a_dense_jacobian_of_a_128_vector_keeps_loops(monkeypatch):
    """benchmarks/jacobians.py (case e_jac): the dense (127, 128) Jacobian would run ~2 us
    faster a call as one scalar kernel but costs ~0.4 s more build: over BUILD_CALLS calls
    the loops cost less, so they stay (its small leading region is still a kernel); with
    the build weighed over very many calls it is chosen."""
    def jacobian():
        x = sg.placeholder("x", shape=(128,))
        y = sg.sin(x[1:]) * x[:-1] ** 2 + sg.exp(-x[1:])
        return [sg.jacobian(y, x)], [x]

    graph, regions = _planned(*jacobian())
    assert all(m.shape != (127, 128) for r in regions for m in r.members)
    (declined,) = [c for c in graph.scalar_choices if not c.chosen]
    e = declined.estimate
    assert e.scalar_ns < e.loop_ns and not e.faster and "loops are faster (over" in \
        declined.text()
    monkeypatch.setattr(settings, "BUILD_CALLS", 1e9)
    graph, regions = _planned(*jacobian())
    assert any(m.shape == (127, 128) for r in regions for m in r.members)
