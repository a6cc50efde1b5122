"""System factories shared by the workloads: symgrad, JAX, PyTorch, PyTensor.

Each workload module defines ``loss(ops, *args)`` once, written against a tiny
array namespace ``ops`` (``ops.sin``, ``ops.sum(x, axis)``, ``ops.where`` ...),
and this module turns it into a ``factory(data) -> call`` for every system.
All third-party frameworks are optional: a factory raises ``NotInstalled`` when
its import fails, and the harness reports that system as "not installed".

Argument layout of a workload module ``mod``:
  mod.DIFF    names of the inputs the gradients are taken with respect to
  mod.INPUTS  further runtime inputs (fed at call time, not differentiated)
  mod.CONSTS  arrays embedded as graph constants
``loss(ops, *DIFF, *INPUTS, *CONSTS)`` returns a scalar.

Every ``call`` returns ``[value, grad_1, ..., grad_k]``.  For KIND == "array"
the call takes no arguments (inputs are converted once, outside the timed
region); for KIND == "latency" it takes the Python floats ``data['call_args']``.
"""

import numpy as np


class NotInstalled(Exception):
    """Raised by a factory whose framework cannot be imported."""


# ----------------------------------------------------------------------------
# array namespaces
# ----------------------------------------------------------------------------

class _Ops:
    name = "?"


def _sg_ops():
    try:
        import symgrad as sg
    except ImportError as exc:  # pragma: no cover - depends on the library state
        raise RuntimeError(f"cannot import symgrad: {exc}") from exc
    missing = [n for n in ("placeholder", "constant", "gradients", "function",
                           "reduce_sum", "where") if not hasattr(sg, n)]
    if missing:
        raise RuntimeError("symgrad lacks " + ", ".join("sg." + m for m in missing)
                           + " (not implemented yet)")
    o = _Ops()
    o.name = "symgrad"
    o.mod = sg
    for n in ("sin", "cos", "exp", "log1p", "tanh", "sigmoid", "arctan", "square",
              "where"):
        setattr(o, n, getattr(sg, n, None))
    o.sum = lambda x, axis=None: sg.reduce_sum(x, axis=axis)
    o.mean = lambda x, axis=None: sg.reduce_mean(x, axis=axis)
    o.const = lambda a: sg.constant(a)
    return o


def _jax():
    try:
        import jax
    except ImportError as exc:
        raise NotInstalled(str(exc)) from exc
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    o = _Ops()
    o.name = "jax"
    for n in ("sin", "cos", "exp", "log1p", "tanh", "arctan", "square", "where"):
        setattr(o, n, getattr(jnp, n))
    o.sigmoid = jax.nn.sigmoid
    o.sum = lambda x, axis=None: jnp.sum(x, axis=axis)
    o.mean = lambda x, axis=None: jnp.mean(x, axis=axis)
    o.const = jnp.asarray
    return jax, jnp, o


def _torch():
    try:
        import torch
    except ImportError as exc:
        raise NotInstalled(str(exc)) from exc
    o = _Ops()
    o.name = "torch"
    for n in ("sin", "cos", "exp", "log1p", "tanh", "sigmoid", "arctan", "square",
              "where"):
        setattr(o, n, getattr(torch, n))
    o.sum = lambda x, axis=None: torch.sum(x) if axis is None else torch.sum(x, dim=axis)
    o.mean = lambda x, axis=None: torch.mean(x) if axis is None else torch.mean(x, dim=axis)
    o.const = lambda a: torch.from_numpy(np.ascontiguousarray(a))
    return torch, o


def _pytensor():
    try:
        import pytensor
        import pytensor.tensor as pt
    except ImportError as exc:
        raise NotInstalled(str(exc)) from exc
    o = _Ops()
    o.name = "pytensor"
    for n in ("sin", "cos", "exp", "log1p", "tanh", "sigmoid", "arctan", "square"):
        setattr(o, n, getattr(pt, n))
    o.where = pt.switch
    o.sum = lambda x, axis=None: pt.sum(x, axis=axis)
    o.mean = lambda x, axis=None: pt.mean(x, axis=axis)
    o.const = pt.constant
    return pytensor, pt, o


# ----------------------------------------------------------------------------
# factories
# ----------------------------------------------------------------------------

def _names(mod):
    return (tuple(getattr(mod, "DIFF", ())), tuple(getattr(mod, "INPUTS", ())),
            tuple(getattr(mod, "CONSTS", ())))


def _is_latency(mod):
    return getattr(mod, "KIND", "array") == "latency"


def symgrad_factory(mod, target):
    """symgrad: build the graph from ``mod.symgrad_loss`` (or ``mod.loss``),
    ``sg.gradients`` w.r.t. DIFF, ``sg.function(..., target=target)``."""
    loss = getattr(mod, "symgrad_loss", mod.loss)
    diff, inputs, consts = _names(mod)

    def factory(data):
        ops = _sg_ops()
        sg = ops.mod
        if _is_latency(mod):
            phs = [sg.placeholder(n, shape=()) for n in diff + inputs]
        else:
            phs = [sg.placeholder(n, shape=tuple(np.shape(data[n]))) for n in diff + inputs]
        cs = [ops.const(data[n]) for n in consts]
        value = loss(ops, *phs, *cs)
        grads = sg.gradients(value, phs[:len(diff)])
        fn = sg.function(phs, [value, *grads], target=target)
        if _is_latency(mod):
            return fn
        arrays = [data[n] for n in diff + inputs]
        return lambda: fn(*arrays)
    return factory


def jax_factory(mod):
    diff, inputs, consts = _names(mod)

    def factory(data):
        jax, jnp, ops = _jax()
        k = len(diff)

        def f(*args):
            return mod.loss(ops, *args)

        if _is_latency(mod):
            vg = jax.jit(jax.value_and_grad(f, argnums=tuple(range(k))))

            def call(*args):
                v, g = vg(*args)
                jax.block_until_ready((v, g))
                return [v, *g]
            return call
        args = [jnp.asarray(data[n]) for n in diff + inputs + consts]
        vg = jax.jit(jax.value_and_grad(f, argnums=tuple(range(k))))

        def call():
            v, g = vg(*args)
            jax.block_until_ready((v, g))
            return [v, *g]
        return call
    return factory


def torch_factory(mod, compiled=False):
    diff, inputs, consts = _names(mod)

    def factory(data):
        torch, ops = _torch()
        fwd = (lambda *a: mod.loss(ops, *a))
        if compiled:
            if not hasattr(torch, "compile"):
                raise NotInstalled("torch.compile not available")
            fwd = torch.compile(fwd)
        k = len(diff)

        if _is_latency(mod):
            def call(*args):
                ts = [torch.tensor(a, dtype=torch.float64, requires_grad=(i < k))
                      for i, a in enumerate(args)]
                v = fwd(*ts)
                g = torch.autograd.grad(v, ts[:k])
                return [v.detach(), *g]
            return call
        others = [torch.from_numpy(np.ascontiguousarray(data[n])) for n in inputs + consts]
        leaves = [torch.from_numpy(np.ascontiguousarray(data[n])).requires_grad_(True)
                  for n in diff]

        def call():
            v = fwd(*leaves, *others)
            g = torch.autograd.grad(v, leaves)
            return [v.detach(), *g]
        return call
    return factory


def pytensor_factory(mod):
    diff, inputs, consts = _names(mod)

    def factory(data):
        pytensor, pt, ops = _pytensor()
        if _is_latency(mod):
            vs = [pt.dscalar(n) for n in diff + inputs]
        else:
            vs = [pt.tensor(name=n, dtype="float64", shape=tuple(np.shape(data[n])))
                  for n in diff + inputs]
        cs = [ops.const(data[n]) for n in consts]
        cost = mod.loss(ops, *vs, *cs)
        grads = pytensor.grad(cost, vs[:len(diff)])
        fn = pytensor.function(vs, [cost, *grads])
        if _is_latency(mod):
            return fn
        arrays = [data[n] for n in diff + inputs]
        return lambda: fn(*arrays)
    return factory


def standard_systems(mod):
    """The library-based systems for a workload module, in table order."""
    return {
        "symgrad cpu": symgrad_factory(mod, "cpu"),
        "symgrad parallel": symgrad_factory(mod, "parallel"),
        "jax": jax_factory(mod),
        "torch eager": torch_factory(mod, compiled=False),
        "torch.compile": torch_factory(mod, compiled=True),
        "pytensor": pytensor_factory(mod),
    }


# numba fastmath flags that keep NaN/inf semantics (no 'nnan', no 'ninf')
FASTMATH = {"contract", "afn", "reassoc", "arcp", "nsz"}

def assemble(mod, hand):
    """symgrad entries first, then the hand-written baselines, then frameworks."""
    std = standard_systems(mod)
    out = {k: std.pop(k) for k in ("symgrad cpu", "symgrad parallel")}
    out.update(hand)
    out.update(std)
    return out
