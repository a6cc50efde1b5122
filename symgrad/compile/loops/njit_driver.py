"""A compiled body's driver rewritten as an njit function (for a fused ``sg.while_loop``).

The cpu driver (``cpu/driver.py``) of a loop body is Python: it allocates result buffers,
calls the njit loop kernels (``_k<i>_cpu``) and scalar kernels, and takes views between
them. Where every line of it is one of the forms below, the same lines run under numba,
and a while loop can call the whole body from one njit loop (``fused_while.py``):

- ``sh<i> = (20, 20)`` static loop shapes; ``o<i>_<j> = np.empty(sh<i>, np.float64)``
  (or ``np.zeros``; or of a shape of static dims and ``sh<i>[k]``: a keepdims sum's)
  result buffers;
- ``_k<i>_cpu(...)`` serial loop kernels, or ``_k<i>_cpu_native(...)`` (the loop as
  LLVM IR, ``cpu/native_loops.py``: the loop calls the module's numba function
  ``_k<i>_cpu`` instead); a parallel launch, a libm retry or a buffer reused from a dead
  value is not taken;
- ``v<n> = _s<i>_native(...)``: a scalar kernel, called as its njit form ``_s<i>``;
- ``v<n> = <a view or copy of values>`` (``o2_1.reshape(())``, ``v8[0]``);
- ``v<n> = S<n>(a, b)``: a structural step, taken only where it is ``sg.linalg.solve``
  of one matrix (read from the op record, not its name): ``lapack.solve_`` (LAPACK's
  dgesv, as numpy's solve), or ``sg.gather`` along axis 0 at constant indices in range;
- ``return [...]``.

Names of the body's module (kernels, constants ``C<n>``) are prefixed (``prefix``) and
bound from the module, so two drivers share one loop module. A numba error when the loop
compiles, or any exception while it runs (a singular matrix), hands the loop back to the
Python loop, which raises the error symgrad names.

Known debt: this re-reads symgrad's own driver text with regexes. The right source is the
plan, through the printer that wrote the driver (``cpu/driver.py``'s ``ModuleWriter``):
an njit-mode writer in ``cpu/`` (serial launches only, no argument checks, try block,
workspace or libm retry; structural steps from a table keyed by op record; the return a
tuple of copies) driven by the body's compiled function (a method of
``CompiledFunction``, so ``loops/`` imports nothing above it), which re-lowers its plan's
kernels and scalar regions (about 0.03 s for sg.odeint's dopri5 body, against ~2 s of
numba compile for the fused loop) and must reproduce this module's text and reasons
exactly, so the loop modules' cache keys stay the same.

>>> text = '''def run(*args, **kwargs):
...     try:
...         v0, v1 = args
...         if type(v0) is not ndarray:
...             v0 = check_(0, v0)
...         # kernel 0
...         sh0 = ()
...         o0_0 = np.empty(sh0, np.int64)
...         _k0_cpu(v0, o0_0)
...         v5 = o0_0
...         return [v5, v1]
...     except Fallback_:
...         return reference_(args)
... '''
>>> fn, names, why = driver_function(text, "body_", "b", lambda i: None)
>>> print(fn)
def body_(v0, v1):
    sh0 = ()
    o0_0 = np.empty(sh0, np.int64)
    b_k0_cpu(v0, o0_0)
    v5 = o0_0
    return (v5, v1,)
>>> names, why
(['_k0_cpu'], '')
"""

from __future__ import annotations

import re
from typing import Callable, Optional

import numpy as np

__all__ = ["driver_function"]

_NAME = re.compile(r"\b(_k\d+_cpu|_s\d+_native|_s\d+|C\d+|S\d+)\b")
_TUPLE = r"\((\d+, ?)*(\d+,?)?\)"
_SHAPE = re.compile(rf"^sh\d+ = {_TUPLE}$")
_DIM = r"(\d+|sh\d+\[\d+\])"       # a static dim, or one of a static shape (keepdims sums)
_DIMS = rf"\(({_DIM}, ?)*({_DIM},?)?\)"
_ALLOC = re.compile(rf"^o\d+_\d+ = np\.(empty|zeros)\((sh\d+|{_DIMS}), np\.\w+\)$")
_KERNEL = re.compile(r"^_k\d+_cpu(_native)?\(([\w\[\]]+(, )?)*\)$")
_SCALAR = re.compile(r"^v\d+ = (_s\d+)(_native)?\(((v|C)\d+(, )?)*\)$")
_STEP = re.compile(r"^v(\d+) = S(\d+)\(((v|C)\d+(, )?)*\)$")
_VIEW = re.compile(r"^v\d+ = [\w\[\]().,: -]+$")
_RETURN = re.compile(r"^return \[(.*)\]$")
_VALUE = re.compile(r"^(v\d+|C\d+|np\.array\((v|C)\d+, copy=True\))$")
_FORBIDDEN = re.compile(r"\b(S\d+|_s\d+_native|_k\d+_parallel|chunks_|[A-Za-z_]+_)\(")


def _body_lines(source: str) -> Optional[list]:
    """The lines of ``run``'s try block after the argument checks (None: not found)."""
    lines = source.splitlines()
    try:
        start = next(k for k, x in enumerate(lines) if x.startswith("def run("))
    except StopIteration:
        return None
    out, seen_args = [], False
    for x in lines[start + 1:]:
        s = x.strip()
        if not seen_args:
            seen_args = s.endswith("= args")
            continue
        if x.startswith("    except"):
            break
        if s.startswith("if type(v") or re.match(r"^v\d+ = check_\(", s):
            continue
        out.append(s)
    return out if seen_args else None


def _step_form(node, args: list) -> Optional[str]:
    """The njit form of a structural step (None: numba cannot run it as numpy does):
    ``sg.linalg.solve`` of one matrix; ``sg.gather`` along axis 0 at constant indices in
    range (checked here, as the numpy step checks them every call)."""
    from ...ops.indexing.records import gather
    from ...ops.linalg.records import solve_op
    if node is None:
        return None
    if node.op is solve_op and len(node.shape) == 2:
        return f"lapack_solve_({args[0]}, {args[1]}, {bool(node.attrs['adjoint'])})"
    if node.op is gather and node.attrs["axis"] == 0 and node.inputs[1].is_const:
        indices, n = node.inputs[1].value, node.inputs[0].shape[0]
        if np.ndim(indices) == 1 and np.asarray(indices).dtype.kind in "iu" and \
                isinstance(n, int) and ((0 <= indices) & (indices < n)).all():
            return f"{args[0]}[{args[1]}]"
    return None


MAX_SCALAR_LINES = 256
"""The most element reads and writes a scalar kernel called from a fused loop may have:
the loop calls its njit form (``_s<i>``), whose numba compile grows with them (~1 ms a
line and more: seconds for a 20 x 20 Jacobian), where the driver calls the kernel compiled
whole as LLVM IR (no numba front end). 256 (was 64): ``sg.odeint``'s dopri5 step with its
output rows (21 times x 2 states: 160) fuses; the fused loop is compiled only after the
Python loop has spent ``fused_while.PAYBACK_S``, which bounds what a larger compile costs."""


def _scalar_lines(source: str, function: str) -> int:
    """Element reads and writes of ``def <function>(`` in a module's source."""
    lines = source.split(f"\ndef {function}(", 1)[-1].split("\n\n", 1)[0].splitlines()
    return sum(1 for x in lines if re.match(r"^    (r\d+_\d+ = a|o\d+\[)", x))


def driver_function(source: str, name: str, prefix: str, step_node: Callable) -> tuple:
    """(text of ``def <name>(v0, ...)``, names bound from the body's module, "") or
    (None, [], reason). ``step_node(n)`` is the plan node ``v<n>`` (a structural step's),
    or None."""
    lines = _body_lines(source)
    if lines is None:
        return None, [], "the body's driver has no recognisable argument list"
    head = next((x for x in source.splitlines() if x.strip().endswith("= args")), "")
    params = head.strip()[:-len("= args")].strip().rstrip(",")
    body, names = [], []
    for s in lines:
        code = s.split("  #")[0].rstrip()
        if not code or code.startswith("#"):
            continue
        m = _RETURN.match(code)
        if m:
            items = [v.strip() for v in  # a copy's comma does not split it
                     re.split(r",(?![^(]*\))", m.group(1)) if v.strip()]
            if not all(_VALUE.match(v) for v in items):
                return None, [], f"the body returns a value the loop cannot take: {code}"
            items = [re.sub(r"np\.array\(((v|C)\d+), copy=True\)", r"\1.copy()", v)
                     for v in items]
            body.append(f"return ({''.join(v + ', ' for v in items).rstrip(' ')})")
            break
        step = _STEP.match(code)
        if step:
            node = step_node(int(step.group(2)))
            args = code.split("(", 1)[1].rstrip(")").split(", ")
            form = _step_form(node, args)
            if form is None:
                what = getattr(getattr(node, "op", None), "name", "unknown")
                return None, [], f"the body has a {what} step (numpy), not a kernel"
            code = f"v{step.group(1)} = {form}"
        elif _SCALAR.match(code) and \
                _scalar_lines(source, _SCALAR.match(code).group(1)) > MAX_SCALAR_LINES:
            function = _SCALAR.match(code).group(1)
            return None, [], (f"scalar kernel {function} reads and writes "
                              f"{_scalar_lines(source, function)} elements (numba would "
                              f"compile its njit form; at most MAX_SCALAR_LINES="
                              f"{MAX_SCALAR_LINES})")
        elif "np.matmul(" in code:
            return None, [], f"the body has a matmul step (numba has no np.matmul): {code}"
        elif _FORBIDDEN.search(code) and not _SCALAR.match(code):
            return None, [], f"the body's driver calls what numba cannot: {code}"
        elif not (_SHAPE.match(code) or _ALLOC.match(code) or _KERNEL.match(code) or
                  _SCALAR.match(code) or _VIEW.match(code)):
            return None, [], f"the body's driver has a line the loop cannot run: {code}"
        code = code.replace("_native(", "(")

        def rename(m: re.Match) -> str:
            token = m.group(1)
            if token not in names:
                names.append(token)
            return prefix + token
        body.append(_NAME.sub(rename, code))
    else:
        return None, [], "the body's driver has no return"
    text = f"def {name}({params}):\n" + "".join(f"    {x}\n" for x in body)
    if any("lapack_solve_(" in x for x in body):
        names.append("lapack_solve_")
    return text.rstrip("\n"), names, ""
