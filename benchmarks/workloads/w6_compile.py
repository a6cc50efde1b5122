"""W6 compile time: random elementwise graphs (200 / 2,000 nodes, 4 vector
inputs), value + gradients w.r.t. all 4 inputs.

Each (system, graph) is measured in fresh subprocesses: "cold" with a new empty
cache directory (SYMGRAD_CACHE_DIR, NUMBA_CACHE_DIR, and the frameworks' own
persistent caches pointed at it), then "warm": a second fresh subprocess with
the same cache directory.  Compile time = construction + first call - one
steady-state call.  The symgrad probe also reports sg.gradients alone.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks import frameworks, harness

TITLE = "compile time, random elementwise graph, value + 4 gradients"
KIND = "compile"
DIFF = ("x0", "x1", "x2", "x3")

UNARY_BOUNDED = {"sin": 1.0, "cos": 1.0, "tanh": 1.0, "sigmoid": 1.0, "arctan": math.pi / 2}
UNARY_GROWING = ("exp", "square")
BINARY = ("add", "sub", "mul")
MAX_BOUND = 1e3


def cases(quick):
    n = 10**4 if quick else 10**5
    return [{"label": "200 nodes", "nodes": 200, "N": n},
            {"label": "2000 nodes", "nodes": 2000, "N": n}]


def make_graph(nodes, seed=0):
    """[(op, a, b)], operands index earlier entries (0..3 are the inputs).
    An interval bound per node keeps every value finite (exp/square/mul only
    where the bound stays below MAX_BOUND)."""
    rng = np.random.default_rng(seed)
    bound = [1.0] * 4
    # the first four nodes read one input each, so every input is connected
    graph = [(str(rng.choice(list(UNARY_BOUNDED))), i, -1) for i in range(4)]
    bound += [UNARY_BOUNDED[op] for op, _, _ in graph]
    while len(graph) < nodes:
        m = len(bound)

        def pick():
            if rng.random() < 0.7:
                return int(rng.integers(max(0, m - 8), m))
            return int(rng.integers(0, m))
        r = rng.random()
        a = pick()
        if r < 0.45:
            op = str(rng.choice(list(UNARY_BOUNDED)))
            b, nb = -1, UNARY_BOUNDED[op]
        elif r < 0.55:
            op = str(rng.choice(UNARY_GROWING))
            b = -1
            nb = math.exp(bound[a]) if op == "exp" and bound[a] < 20 else (
                bound[a] ** 2 if op == "square" else math.inf)
        else:
            op = str(rng.choice(BINARY))
            b = pick()
            nb = bound[a] * bound[b] if op == "mul" else bound[a] + bound[b]
        if nb > MAX_BOUND:
            continue
        graph.append((op, a, b))
        bound.append(nb)
    return graph


def sinks(graph):
    used = set()
    for _, a, b in graph:
        used.add(a)
        used.add(b)
    return [4 + i for i in range(len(graph)) if 4 + i not in used]


def build(ops, graph, xs):
    """Evaluate the graph with an array namespace; returns sum(sum of sinks)."""
    vals = list(xs)
    for op, a, b in graph:
        va = vals[a]
        if op == "add":
            v = va + vals[b]
        elif op == "sub":
            v = va - vals[b]
        elif op == "mul":
            v = va * vals[b]
        elif op == "square":
            v = va * va
        else:
            v = getattr(ops, op)(va)
        vals.append(v)
    total = None
    for i in sinks(graph):
        total = vals[i] if total is None else total + vals[i]
    return ops.sum(total)


def reference(graph, xs):
    """numpy by hand: forward sweep, then a hand-written reverse sweep."""
    vals = list(xs)
    with np.errstate(all="ignore"):
        for op, a, b in graph:
            va = vals[a]
            vb = vals[b] if b >= 0 else None
            v = {"add": lambda: va + vb, "sub": lambda: va - vb, "mul": lambda: va * vb,
                 "square": lambda: va * va, "sin": lambda: np.sin(va),
                 "cos": lambda: np.cos(va), "tanh": lambda: np.tanh(va),
                 "sigmoid": lambda: 1.0 / (1.0 + np.exp(-va)),
                 "arctan": lambda: np.arctan(va), "exp": lambda: np.exp(va)}[op]()
            vals.append(v)
        adj = [None] * len(vals)
        sk = sinks(graph)
        value = float(np.sum(sum(vals[i] for i in sk)))
        for i in sk:
            adj[i] = np.ones_like(xs[0])

        def acc(i, g):
            adj[i] = g if adj[i] is None else adj[i] + g
        for k in range(len(graph) - 1, -1, -1):
            g = adj[4 + k]
            if g is None:
                continue
            op, a, b = graph[k]
            va, v = vals[a], vals[4 + k]
            if op == "add":
                acc(a, g)
                acc(b, g)
            elif op == "sub":
                acc(a, g)
                acc(b, -g)
            elif op == "mul":
                acc(a, g * vals[b])
                acc(b, g * va)
            elif op == "square":
                acc(a, 2.0 * g * va)
            elif op == "sin":
                acc(a, g * np.cos(va))
            elif op == "cos":
                acc(a, -g * np.sin(va))
            elif op == "tanh":
                acc(a, g * (1.0 - v * v))
            elif op == "sigmoid":
                acc(a, g * v * (1.0 - v))
            elif op == "arctan":
                acc(a, g / (1.0 + va * va))
            elif op == "exp":
                acc(a, g * v)
    grads = [adj[i] if adj[i] is not None else np.zeros_like(xs[0]) for i in range(4)]
    return [np.float64(value), *grads]


def make_inputs(n):
    rng = np.random.default_rng(6)
    return [rng.uniform(-1.0, 1.0, n) for _ in range(4)]


# ----------------------------------------------------------------------------
# one probe = one fresh process
# ----------------------------------------------------------------------------

def _probe_symgrad(target, graph, xs, ph):
    ops = frameworks._sg_ops()
    sg = ops.mod
    t = time.perf_counter()
    phs = [sg.placeholder(f"x{i}", shape=(len(xs[0]),)) for i in range(4)]
    value = build(ops, graph, phs)
    ph["graph build"] = time.perf_counter() - t
    t = time.perf_counter()
    grads = sg.gradients(value, phs)
    ph["sg.gradients"] = time.perf_counter() - t
    t = time.perf_counter()
    fn = sg.function(phs, [value, *grads], target=target)
    ph["sg.function"] = time.perf_counter() - t
    return lambda: fn(*xs)


def _probe_jax(graph, xs, ph, cache):
    jax, jnp, ops = frameworks._jax()
    jax.config.update("jax_compilation_cache_dir", os.path.join(cache, "jax"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    f = jax.jit(jax.value_and_grad(lambda *a: build(ops, graph, a), argnums=(0, 1, 2, 3)))
    args = [jnp.asarray(x) for x in xs]

    def call():
        v, g = f(*args)
        jax.block_until_ready((v, g))
        return [v, *g]
    return call


def _probe_torch(graph, xs, ph):
    torch, ops = frameworks._torch()
    fwd = torch.compile(lambda *a: build(ops, graph, a))
    leaves = [torch.from_numpy(x).requires_grad_(True) for x in xs]

    def call():
        v = fwd(*leaves)
        return [v.detach(), *torch.autograd.grad(v, leaves)]
    return call


def _probe_pytensor(graph, xs, ph):
    pytensor, pt, ops = frameworks._pytensor()
    t = time.perf_counter()
    vs = [pt.dvector(f"x{i}") for i in range(4)]
    cost = build(ops, graph, vs)
    grads = pytensor.grad(cost, vs)
    ph["pytensor.grad"] = time.perf_counter() - t
    fn = pytensor.function(vs, [cost, *grads])
    return lambda: fn(*xs)


def probe_main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    system, nodes, n, cache = argv[0], int(argv[1]), int(argv[2]), argv[3]
    res = {"status": "ok", "phases": {}}
    try:
        graph = make_graph(nodes)
        xs = make_inputs(n)
        ref = reference(graph, xs)
        ph = res["phases"]
        t0 = time.perf_counter()
        if system.startswith("symgrad"):
            call = _probe_symgrad(system.split()[1], graph, xs, ph)
        elif system == "jax":
            call = _probe_jax(graph, xs, ph, cache)
        elif system == "torch.compile":
            call = _probe_torch(graph, xs, ph)
        elif system == "pytensor":
            call = _probe_pytensor(graph, xs, ph)
        else:
            raise ValueError(system)
        out = call()
        first = time.perf_counter() - t0
        steady = []
        for _ in range(3):
            t = time.perf_counter()
            call()
            steady.append(time.perf_counter() - t)
        steady = sorted(steady)[1]
        ok, err, msg = harness.check(out, ref)
        res.update(construct_and_first_call=first, steady_call=steady,
                   compile=max(0.0, first - steady), max_rel_err=err)
        if not ok:
            res.update(status="WRONG", detail=msg)
    except frameworks.NotInstalled as exc:
        res = {"status": "not installed", "detail": str(exc)[:120]}
    except Exception as exc:
        res = {"status": "error", "detail": harness.short_error(exc)}
    sys.stdout.write("W6PROBE " + json.dumps(res) + "\n")
    sys.stdout.flush()


def _spawn(system, case, cache, timeout):
    env = dict(os.environ)
    env["SYMGRAD_CACHE_DIR"] = os.path.join(cache, "symgrad")
    env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
    env["PYTENSORFLAGS"] = "compiledir=" + os.path.join(cache, "pytensor")
    env["PYTHONPATH"] = harness.ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-c", "from benchmarks.workloads import w6_compile as w; w.probe_main()",
           system, str(case["nodes"]), str(case["N"]), cache]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           cwd=harness.ROOT, env=env)
    except subprocess.TimeoutExpired:
        return {"status": "error", "detail": f"timeout after {timeout} s"}
    wall = time.perf_counter() - t
    for line in p.stdout.splitlines():
        if line.startswith("W6PROBE "):
            r = json.loads(line[len("W6PROBE "):])
            r["process_wall"] = wall
            return r
    tail = (p.stderr.strip().splitlines() or ["probe died"])[-1]
    return {"status": "error", "detail": f"rc={p.returncode}: {tail[:140]}"}


_TIMED_OUT = set()   # systems whose smaller graph already hit the timeout

SYSTEMS = ("symgrad cpu", "symgrad parallel", "jax", "torch.compile", "pytensor")


def systems():
    """Compile-time workload: systems are measured by subprocess probes."""
    return {s: None for s in SYSTEMS}


def _fmt_phases(r):
    parts = [f"{k} {v:.3g}s" for k, v in r.get("phases", {}).items()]
    if "steady_call" in r:
        parts.append(f"steady call {r['steady_call'] * 1e3:.3g}ms")
    if "process_wall" in r:
        parts.append(f"process {r['process_wall']:.3g}s")
    return ", ".join(parts)


def run_compile(wkey, case, opts, log):
    mod = sys.modules[__name__]
    rows = []
    graph = make_graph(case["nodes"])
    xs = make_inputs(case["N"])
    t = time.perf_counter()
    reference(graph, xs)
    ref_t = time.perf_counter() - t
    rows.append(harness._row(wkey, mod, case, "numpy by hand (reference tape), run time",
                             median=ref_t, runs=1,
                             detail=f"{len(sinks(graph))} sinks; N={case['N']}"))
    for system in SYSTEMS:
        if opts.get("systems") and system not in opts["systems"]:
            continue
        if system in _TIMED_OUT:
            rows.append(harness._row(wkey, mod, case, f"{system}: cold compile", status="error",
                                     detail="skipped: the smaller graph timed out"))
            continue
        cache = tempfile.mkdtemp(prefix="symgrad-bench-cache-")
        try:
            for phase in ("cold", "warm"):
                log(f"  [{wkey} {case['label']}] {system} {phase} ...")
                r = _spawn(system, case, cache, opts["compile_timeout_s"])
                name = f"{system}: {phase} compile"
                if r["status"] != "ok":
                    if "timeout" in r.get("detail", ""):
                        _TIMED_OUT.add(system)
                    rows.append(harness._row(wkey, mod, case, name, status=r["status"],
                                             detail=r.get("detail", "")))
                    break
                rows.append(harness._row(wkey, mod, case, name, median=r["compile"], runs=1,
                                         detail=_fmt_phases(r), phases=r.get("phases"),
                                         steady_call_s=r["steady_call"],
                                         max_rel_err=r.get("max_rel_err")))
                if phase == "cold" and "sg.gradients" in r.get("phases", {}):
                    rows.append(harness._row(wkey, mod, case, f"{system}: sg.gradients alone",
                                             median=r["phases"]["sg.gradients"], runs=1))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return rows
