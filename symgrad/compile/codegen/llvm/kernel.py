"""A whole scalar kernel as one LLVM IR function: reads, statements, writes.

A scalar region (``compile/scalar``) printed as an njit function passes its reads
(``r0_3 = a0[1, 0]``), the call of its IR body and its element writes through numba's
front end, about 0.3 ms of CPU per statement: most of a large region's build. Here the
whole kernel is IR, and is a CPython function itself (``METH_FASTCALL``, ``native.py``
makes it): ``k(a0, a1, .., o0, o1, ..)`` reads the elements of the input arrays
through their data pointers and strides, runs the statements (``body.statements_ir``,
the same instructions as the IR bodies numba links) and stores each output element
into the C-contiguous arrays the caller allocated. It returns ``None``, or
``NotImplemented`` when an argument is not what the kernel was written for (not an
``ndarray``, another dtype, rank or shape, a byte-swapped dtype: no output touched) or a
linalg check failed (``body.RAISING_HELPERS``: outputs written, not to be read): the
caller then runs the numba function instead (which raises the check's error).

The array fields are read at numpy's ABI offsets (``PyArrayObject_fields``: data 16,
nd 24, dimensions 32, strides 40, descr 56; ``PyArray_Descr``: byteorder 26, type_num
28), which ``native.layout_ok`` checks once per process against a real array.

>>> text, _ = kernel_ir([("double", (2,), [((0,), "r0_0"), ((1,), "r0_1")])],
...                     [("Q0_*Q1_", ["r0_0", "r0_1"], "t0", ("double", "double"), "double")],
...                     [("double", (), [("t0", "double")])])
>>> print([line for line in text.split(chr(10)) if "fmul" in line or "store" in line])
['  %t0 = fmul reassoc nsz contract afn double %r0_0, %r0_1', '  store double %t0, ptr %w0.0']
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import chunks
from .body import RAISING_HELPERS, helper_declaration, statements_ir

TYPE_NUMS = {"double": 12, "i1": 0}          # NPY_DOUBLE, NPY_BOOL
ITEM_BYTES = {"double": 8, "i1": 1}
SWAPPED = 62                                 # ord(">"): a byte-swapped dtype
NDARRAY = "symgrad.ndarray_type"             # &PyArray_Type, ``native`` adds the symbol


def _field(lines: list, name: str, base: str, offset: int, kind: str) -> str:
    lines.append(f"  {name}.p = getelementptr inbounds i8, ptr {base}, i64 {offset}")
    lines.append(f"  {name} = load {kind}, ptr {name}.p")
    return name


def _type_test(lines: list, x: str) -> str:
    """An i1 operand, true when argument ``x`` is exactly an ``ndarray``."""
    t = _field(lines, f"{x}.type", x, 8, "ptr")
    lines.append(f"  {x}.c0 = icmp eq ptr {t}, @{NDARRAY}")
    return f"{x}.c0"


def _check_block(lines: list, x: str, kind: str, shape: tuple, ok: str, bad: str) -> None:
    """After the type test: rank, dtype, byte order and each dimension."""
    nd = _field(lines, f"{x}.nd", x, 24, "i32")
    descr = _field(lines, f"{x}.descr", x, 56, "ptr")
    num = _field(lines, f"{x}.num", descr, 28, "i32")
    order = _field(lines, f"{x}.order", descr, 26, "i8")
    tests = [f"icmp eq i32 {nd}, {len(shape)}", f"icmp eq i32 {num}, {TYPE_NUMS[kind]}",
             f"icmp ne i8 {order}, {SWAPPED}"]
    if shape:
        dims = _field(lines, f"{x}.dims", x, 32, "ptr")
        for d, size in enumerate(shape):
            lines.append(f"  {x}.dp{d} = getelementptr inbounds i64, ptr {dims}, i64 {d}")
            lines.append(f"  {x}.dim{d} = load i64, ptr {x}.dp{d}")
            tests.append(f"icmp eq i64 {x}.dim{d}, {size}")
    acc = None
    for j, test in enumerate(tests):
        lines.append(f"  {x}.k{j} = {test}")
        if acc is not None:
            lines.append(f"  {x}.a{j} = and i1 {acc}, {x}.k{j}")
            acc = f"{x}.a{j}"
        else:
            acc = f"{x}.k{j}"
    lines.append(f"  br i1 {acc}, label %{ok}, label %{bad}")


def _reads(lines: list, x: str, kind: str, shape: tuple, reads: list) -> None:
    """Loads of the elements ``reads`` ((index, name)) through the data pointer and the
    strides (any layout)."""
    data = _field(lines, f"{x}.data", x, 16, "ptr")
    strides = []
    if shape and reads:
        sp = _field(lines, f"{x}.strides", x, 40, "ptr")
        for d in range(len(shape)):
            lines.append(f"  {x}.sp{d} = getelementptr inbounds i64, ptr {sp}, i64 {d}")
            strides.append(_field(lines, f"{x}.st{d}", f"{x}.sp{d}", 0, "i64"))
    for index, name in reads:
        offset = None
        for d, i in enumerate(index):
            if i == 0:
                continue
            lines.append(f"  %{name}.o{d} = mul i64 {strides[d]}, {i}")
            term = f"%{name}.o{d}"
            if offset is not None:
                lines.append(f"  %{name}.s{d} = add i64 {offset}, {term}")
                term = f"%{name}.s{d}"
            offset = term
        at = data
        if offset is not None:
            lines.append(f"  %{name}.at = getelementptr inbounds i8, ptr {data}, i64 {offset}")
            at = f"%{name}.at"
        if kind == "double":
            lines.append(f"  %{name} = load double, ptr {at}")
        else:
            lines.append(f"  %{name}.b = load i8, ptr {at}")
            lines.append(f"  %{name} = icmp ne i8 %{name}.b, 0")


FILL_MIN = 16
"""Zero elements from which an output at least half zeros is zeroed by one ``memset``
and only its other elements are stored (a Jacobian's zeros: one call, not a store each)."""
_ZERO_BITS = ("0x0000000000000000", "false")     # +0.0 and false: all bytes zero (-0.0 is not)


def zero_filled(kind: str, elements: list) -> bool:
    """Whether an output of ``kind`` with ``elements`` ((value text, value kind)) is zeroed
    by one ``memset`` before its other elements are stored.

    >>> zero_filled("double", [("0x0000000000000000", "double")] * 16 + [("t0", "double")])
    True
    >>> zero_filled("double", [("0x8000000000000000", "double")] * 20)   # -0.0: stored
    False
    """
    zeros = sum(text in _ZERO_BITS for text, _ in elements)
    return zeros >= FILL_MIN and 2 * zeros >= len(elements)


def stores(kind: str, elements: list) -> int:
    """How many elements ``_writes`` stores one by one (LLVM's levels count them).

    >>> stores("double", [("0x0000000000000000", "double")] * 16 + [("t1", "double")])
    1
    """
    if not zero_filled(kind, elements):
        return len(elements)
    return sum(text not in _ZERO_BITS for text, _ in elements)


def _writes(lines: list, j: int, o: str, kind: str, elements: list, value: dict) -> bool:
    """Stores of the output's elements ((text, kind) in C order) into its data; a mostly
    zero output is zeroed by one ``memset`` first and its zeros are not stored. (A value
    stored at many elements is still stored at each: a loop over their offsets, tried,
    saved 0.08 s of the 100-species Jacobian's LLVM time and changed how LLVM's fast-math
    passes rounded a few elements.)"""
    if not _writable(kind, elements):
        return False
    data = _field(lines, f"%w{j}", o, 16, "ptr")
    fill = zero_filled(kind, elements)
    if fill:
        lines.append(_memset(data, kind, elements))
    _stores(lines, j, data, kind, [(flat, _operand(text, value), vkind)
                                   for flat, (text, vkind) in _stored(kind, elements)])
    return True


def _writable(kind: str, elements: list) -> bool:
    return all(kind == vkind or (kind == "double" and vkind == "i1") for _, vkind in elements)


def _memset(data: str, kind: str, elements: list) -> str:
    return (f"  call void @llvm.memset.p0.i64(ptr {data}, i8 0, i64 "
            f"{len(elements) * ITEM_BYTES[kind]}, i1 false)")


def _stored(kind: str, elements: list) -> list:
    """(flat index, (text, kind)) of the elements stored one by one."""
    fill = zero_filled(kind, elements)
    return [(flat, e) for flat, e in enumerate(elements) if not (fill and e[0] in _ZERO_BITS)]


def _operand(text: str, value: dict) -> str:
    return value.get(text) or (("%" + text) if text.isidentifier() and
                               text not in ("true", "false") else text)


def _stores(lines: list, j: int, data: str, kind: str, items: list) -> None:
    """Stores of (flat index, operand, operand kind) into output ``j``'s ``data``."""
    for flat, v, vkind in items:
        at = f"%w{j}.{flat}"
        lines.append(f"  {at} = getelementptr inbounds i8, ptr {data}, i64 "
                     f"{flat * ITEM_BYTES[kind]}")
        if kind == "double" and vkind == "i1":
            lines.append(f"  {at}.v = uitofp i1 {v} to double")
            v = f"{at}.v"
        elif kind == "i1":
            lines.append(f"  {at}.v = zext i1 {v} to i8")
            lines.append(f"  store i8 {at}.v, ptr {at}")
            continue
        lines.append(f"  store double {v}, ptr {at}")


def kernel_ir(inputs: list, steps: list, outputs: list,
              helpers: Optional[dict] = None, made: Optional[tuple] = None,
              chunk: Optional[int] = None) -> Optional[tuple]:
    """(IR module text of ``ptr @SYMBOL_(ptr self, ptr args, i64 nargs)``, helpers called),
    or None where a statement or an element is outside the subset.

    ``inputs``: (kind, static shape, [(index, read name)]) per input array (kind "double"
    or "i1"); ``steps``: as ``body.function_ir``'s; ``outputs``: (kind, shape, [(value
    text, value kind)] in C order) per output array, a value text being a statement's or a
    read's name or an LLVM constant (``0x...``, ``true``); ``made``: the steps'
    ``statements_ir`` when the caller has it. Past ``chunk`` statements (default
    ``chunks.CHUNK_STATEMENTS``) a deep kernel's statements are cut into functions
    (``chunks.py``)."""
    if made is None:
        made = statements_ir(steps, helpers)
    if made is None:
        return None
    body, value, declares, called = made[:4]
    if any(len(elements) != int(np.prod(shape, dtype=np.int64)) or
           not _writable(kind, elements) for kind, shape, elements in outputs):
        return None
    declares = set(declares)
    raising = any(spec.startswith(RAISING_HELPERS) for spec, _ in called)
    limit = chunks.CHUNK_STATEMENTS if chunk is None else chunk
    split = len(body) > limit and len(made) > 4 and chunks.deep(
        len(steps), sum(len(_stored(kind, elements)) for kind, _, elements in outputs))
    lines = _entry(inputs, len(outputs), raising, split)
    head, functions = "", []
    if split:
        p = chunks.plan(steps, body, value, made[4], _read_kinds(inputs),
                        [[(flat, _operand(text, value)) for flat, (text, _) in
                          _stored(kind, elements)] for kind, _, elements in outputs], limit)
        functions = _chunk_functions(p, inputs, outputs, body, raising)
        head = chunks.header(len(p.bounds), max(_chunk_size(p, k) for k in
                                                range(len(p.bounds))))
        lines += _run_chunks(p, len(inputs), outputs, raising, declares)
    else:
        for k, (kind, shape, reads) in enumerate(inputs):
            _reads(lines, f"%x{k}", kind, shape, reads)
        lines += body
        for j, (kind, shape, elements) in enumerate(outputs):
            o = f"%y{j}"
            _output(lines, j, len(inputs))
            _writes(lines, j, o, kind, elements, value)
    if raising:     # a linalg check failed: numba's function runs and raises its error
        lines += ["  %fail.r = load i32, ptr %fail", "  %failed = icmp ne i32 %fail.r, 0",
                  "  br i1 %failed, label %bad, label %done", "done:"]
    lines += ["  call void @Py_IncRef(ptr @_Py_NoneStruct)", "  ret ptr @_Py_NoneStruct",
              "bad:", "  call void @Py_IncRef(ptr @_Py_NotImplementedStruct)",
              "  ret ptr @_Py_NotImplementedStruct", "}"]
    for spec, kinds in sorted(called):
        declares.add(helper_declaration(spec, kinds))
    if any(zero_filled(kind, elements) for kind, _, elements in outputs):
        declares.add("declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)")
    declares |= {"declare void @Py_IncRef(ptr)", "@_Py_NoneStruct = external global i8",
                 "@_Py_NotImplementedStruct = external global i8",
                 f"@{NDARRAY} = external global i8"}
    attributes = ["attributes #0 = { nounwind }", "attributes #1 = { nounwind memory(read) }"]
    if split:
        attributes.append("attributes #2 = { nounwind noinline }")
    text = "\n".join(lines + functions + sorted(declares) + attributes)
    return head + text + "\n", tuple(sorted(called))


def _entry(inputs: list, n_outputs: int, raising: bool, split: bool) -> list:
    """The entry function's head: the argument count, each input's checks, ``run:``."""
    n = len(inputs) + n_outputs
    lines = ["define ptr @SYMBOL_(ptr %self, ptr %args, i64 %nargs) #0 {", "entry:",
             *(["  %fail = alloca i32", "  store i32 0, ptr %fail"] if raising else []),
             f"  %count = icmp eq i64 %nargs, {n}", "  br i1 %count, label %in0, label %bad"]
    if not inputs:
        lines[3 + 2 * raising] = "  br i1 %count, label %run, label %bad"
    for k, (kind, shape, _) in enumerate(inputs):
        x = f"%x{k}"
        lines.append(f"in{k}:")
        lines.append(f"  {x}.pp = getelementptr inbounds ptr, ptr %args, i64 {k}")
        lines.append(f"  {x} = load ptr, ptr {x}.pp")
        test = _type_test(lines, x)
        lines.append(f"  br i1 {test}, label %in{k}.b, label %bad")
        lines.append(f"in{k}.b:")
        _check_block(lines, x, kind, shape, f"in{k + 1}" if k + 1 < len(inputs) else "run",
                     "bad")
    lines.append("run:")
    return lines


def _output(lines: list, j: int, n_inputs: int) -> None:
    o = f"%y{j}"
    lines.append(f"  {o}.pp = getelementptr inbounds ptr, ptr %args, i64 {n_inputs + j}")
    lines.append(f"  {o} = load ptr, ptr {o}.pp")


def _read_kinds(inputs: list) -> dict:
    return {name: kind for kind, _, reads in inputs for _, name in reads}


def _chunk_size(p, c: int) -> int:
    """A chunk's statements, element reads and writes (what LLVM's levels count, as for a
    kernel of one function; its scratch loads and stores are placed beside the statements
    that use them and add little to LLVM's time)."""
    start, end = p.bounds[c]
    return (end - start) + len(p.reads[c]) + len(p.writes[c])


def _run_chunks(p, n_inputs: int, outputs: list, raising: bool, declares: set) -> list:
    """The entry's ``run:`` block of a chunked kernel: the scratch, the zero fills, a call
    of each chunk."""
    size = max(8, 8 * p.slots)
    heap = size > chunks.STACK_SCRATCH
    lines = []
    if heap:
        declares |= {"declare ptr @malloc(i64)", "declare void @free(ptr)",
                     "declare ptr @PyErr_NoMemory()"}
        lines += [f"  %sc = call ptr @malloc(i64 {size})", "  %sc.null = icmp eq ptr %sc, null",
                  "  br i1 %sc.null, label %nomem, label %sc.ok", "nomem:",
                  "  %nomem.r = call ptr @PyErr_NoMemory()", "  ret ptr null", "sc.ok:"]
    else:
        lines.append(f"  %sc = alloca i8, i64 {size}, align 16")
    for j, (kind, _, elements) in enumerate(outputs):
        if zero_filled(kind, elements):
            _output(lines, j, n_inputs)
            lines.append(_memset(_field(lines, f"%w{j}", f"%y{j}", 16, "ptr"), kind,
                                 elements))
    fail = ", ptr %fail" if raising else ""
    for c in range(len(p.bounds)):
        lines.append(f"  call void @SYMBOL_.c{c}(ptr %args, ptr %sc{fail})")
    if heap:
        lines.append("  call void @free(ptr %sc)")
    return lines


def _chunk_functions(p, inputs: list, outputs: list, body: list, raising: bool) -> list:
    """The chunks' functions: loads of their reads and live values, their statements,
    stores of the values later chunks read and of the output elements they compute."""
    index = {name: (k, index) for k, (_, _, reads) in enumerate(inputs)
             for index, name in reads}
    fail = ", ptr %fail" if raising else ""
    out = []
    for c, (start, end) in enumerate(p.bounds):
        lines = [f"define internal void @SYMBOL_.c{c}(ptr noalias %args, ptr noalias %sc"
                 f"{fail}) #2 {{", "entry:"]
        by_input: dict = {}
        for name in p.reads[c]:
            k, at = index[name]
            by_input.setdefault(k, []).append((at, name))
        for k in sorted(by_input):
            kind, shape, _ = inputs[k]
            x = f"%x{k}"
            lines.append(f"  {x}.pp = getelementptr inbounds ptr, ptr %args, i64 {k}")
            lines.append(f"  {x} = load ptr, ptr {x}.pp")
            _reads(lines, x, kind, shape, by_input[k])
        loads: dict = {}
        for op, slot, kind, first in p.live_in[c]:
            loads.setdefault(first, []).append((op, slot, kind))
        stored: dict = {}
        for op, slot, kind, entry in p.live_out[c]:
            stored.setdefault(entry, []).append((op, slot, kind))
        for entry in range(start, end):
            for op, slot, kind in loads.get(entry, ()):
                lines += _scratch(op, slot, kind, load=True)
            lines.append(body[entry])
            for op, slot, kind in stored.get(entry, ()):
                lines += _scratch(op, slot, kind, load=False)
        by_output: dict = {}
        for j, flat, op in p.writes[c]:
            by_output.setdefault(j, []).append((flat, op, outputs[j][2][flat][1]))
        for j in sorted(by_output):
            _output(lines, j, len(inputs))
            data = _field(lines, f"%w{j}", f"%y{j}", 16, "ptr")
            _stores(lines, j, data, outputs[j][0], by_output[j])
        out += lines + ["  ret void", "}"]
    return out


def _scratch(op: str, slot: int, kind: str, load: bool) -> list:
    """IR lines that load ``op`` from (or store it to) the chunks' scratch slot ``slot``
    (8 bytes each; an ``i1`` travels as an ``i8``).

    >>> _scratch("%v3", 2, "i1", load=False)[1:]
    ['  %v3.sb = zext i1 %v3 to i8', '  store i8 %v3.sb, ptr %v3.sp']
    """
    tag = "l" if load else "s"
    lines = [f"  {op}.{tag}p = getelementptr inbounds i8, ptr %sc, i64 {8 * slot}"]
    if kind == "i1" and load:
        return lines + [f"  {op}.lb = load i8, ptr {op}.lp", f"  {op} = icmp ne i8 {op}.lb, 0"]
    if kind == "i1":
        return lines + [f"  {op}.sb = zext i1 {op} to i8", f"  store i8 {op}.sb, ptr {op}.sp"]
    if load:
        return lines + [f"  {op} = load {kind}, ptr {op}.lp"]
    return lines + [f"  store {kind} {op}, ptr {op}.sp"]
