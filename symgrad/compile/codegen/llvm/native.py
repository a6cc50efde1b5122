"""A kernel's IR (``kernel.py``) compiled by LLVM into a CPython function.

The IR is added to a code library of numba's CPU codegen (numba's LLVM layer: its target
machine, its JIT and symbol resolution, the njit helpers linked as numba links a callee,
its object-code serialisation), optimised by numba's own pipeline up to ``NUMBA_PASSES``
statements (numba's results bit for bit) and at O1 above (``opt_level``), so that LLVM's
time stays linear in the statements; a kernel cut into chunks (``chunks.py``) at
``CHUNK_LEVELS``.
The compiled function is wrapped as a builtin (``METH_FASTCALL``): a call from Python is a
C call, with no argument typing and no dispatcher.

``compile_kernel`` returns (function, serialised library); ``load_kernel`` makes the
function from a serialised library (object code and the bitcode numba keeps beside it,
``pack``/``unpack``), without running LLVM's passes or code generation.
"""

from __future__ import annotations

import ctypes
import hashlib
import struct
from typing import Optional

from .body import helper_symbol, linked as calls
from .chunks import chunking
from .kernel import NDARRAY

METH_FASTCALL = 0x0080
_SYMBOLS: list = []
_LAYOUT: list = []


NUMBA_PASSES = 2_000


def opt_level(statements: int) -> int:
    """LLVM's optimisation level for a kernel of ``statements``: 3, numba's own pipeline
    (its per-function and module passes, so the results are numba's bit for bit), up to
    ``NUMBA_PASSES`` statements; 1 above (about 20% less time than O2 or numba's O3 at
    7,000 statements, and LLVM's time stays linear; results within a few ulp, as the
    bodies past ``body.REASSOC_STATEMENTS`` already are). Measured on the kernels of
    ``benchmarks/build_time.py``'s (d) and (f) (CPU s of LLVM, numba's passes / O1, same
    code generation): 2,050 statements 1.04 / 0.52 s, 8,578: 6.3 / 4.6 s, 14,424: 0.45 /
    0.24 s, the calls as fast (8.1, 56-58, 6.6 us): numba's pipeline is kept to 2,000.

    >>> opt_level(300), opt_level(50_000)
    (3, 1)
    """
    return 3 if statements <= NUMBA_PASSES else 1


CHUNK_LEVELS = ("short", 1)
"""(IR passes, code generation) of a kernel cut into chunks (``chunks.py``): ``jit.SHORT``
(``jit.SHORT_PASSES``: sroa, instcombine, simplifycfg) and code generation -O1 without the
machine scheduler (``jit.emit``). IR passes -O1 and code generation -O1 ran as fast per
call as numba's pipeline and code generation -O3 (RK4 500 steps, 145 chunks of 500: 20.9 /
20.6 us; 25 layers, 17 chunks: 34.9 / 36.2 us) at 60% of their LLVM time (RK4: 3.6 / 5.4 s
CPU, loaded machine); the short passes and no scheduler take 25 layers' LLVM time from 4.4
to about 2.6 s at the same speed; code generation -O0 spills every value (25.5 and 75
us)."""


def levels(ir_text: str, size: int) -> tuple:
    """(IR passes, code generation) levels of a kernel's IR of ``size`` (statements, reads
    and writes): ``CHUNK_LEVELS`` when it is cut into chunks, else ``opt_level`` and
    ``codegen_level`` of its size.

    >>> levels("; symgrad chunks 4 largest 510\\ndefine ...", 2_000)
    ('short', 1)
    >>> levels("", 800)
    (3, 2)
    """
    if chunking(ir_text) is not None:
        return CHUNK_LEVELS
    return opt_level(size), codegen_level(size)


def symbol_of(ir_text: str) -> str:
    return "symgrad_kernel_" + hashlib.sha256(ir_text.encode()).hexdigest()[:24]


def layout_ok() -> bool:
    """Whether numpy's array and dtype structs have the offsets ``kernel.py`` reads (checked
    once per process on a strided float64 array)."""
    if not _LAYOUT:
        import numpy as np

        ok = False
        try:
            a = np.zeros((3, 4))[:, ::2]
            at = id(a)
            ptr = ctypes.c_void_p.from_address
            dims, strides = ptr(at + 32).value, ptr(at + 40).value
            descr = ptr(at + 56).value
            ok = (ctypes.sizeof(ctypes.c_void_p) == 8 and ptr(at + 8).value == id(np.ndarray)
                  and ptr(at + 16).value == a.ctypes.data
                  and ctypes.c_int.from_address(at + 24).value == 2
                  and ctypes.c_int64.from_address(dims + 8).value == 2
                  and ctypes.c_int64.from_address(strides).value == 32
                  and ctypes.c_int.from_address(descr + 28).value == np.dtype("f8").num
                  and ctypes.c_char.from_address(descr + 26).value == b"=")
        except Exception:        # noqa: BLE001 - a layout we cannot read: numba's path
            ok = False
        _LAYOUT.append(ok)
    return _LAYOUT[0]


def _add_symbols() -> None:
    import llvmlite.binding as ll
    import numpy as np

    if not _SYMBOLS:
        ll.add_symbol(NDARRAY, id(np.ndarray))
        _SYMBOLS.append(True)


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


def _builtin(address: int, name: str, keep: object):
    """A builtin function calling the ``METH_FASTCALL`` function at ``address``; ``keep``
    (the library) lives as long as it does."""
    method = _MethodDef(name.encode(), address, METH_FASTCALL, None)
    new = ctypes.pythonapi.PyCFunction_NewEx
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object,
                                                   ctypes.py_object]
    holder = _Holder(method, keep)
    fn = new(ctypes.addressof(method), holder, None)   # self: what keeps the code alive
    return fn


class _Holder:
    """The ``self`` of a kernel's builtin: its method record and code library."""

    def __init__(self, method, library):
        self.method, self.library = method, library


CODEGEN_O3 = 500
CODEGEN_O2 = 1_000
_MACHINES: dict = {}


def codegen_level(statements: int) -> int:
    """The code generator's level (instruction selection, scheduling, register
    allocation): numba's O3 up to ``CODEGEN_O3`` statements, O2 up to ``CODEGEN_O2``, O0
    above. Above O0 the greedy register allocator's time grows faster than the block
    wherever many values live long (a gradient's forward values), and the block is
    already optimised by the IR passes; O0's fast allocator spills more. Measured on a
    loaded 2-core machine (LLVM CPU s / us per call, IR passes -O1):

    ======================================  ==============  ==============
    kernel (statements)                     code gen -O0    code gen -O2
    ======================================  ==============  ==============
    5 layers of roll(tanh(h @ W)) (2,050)   0.52 s / 8.1    1.44 s / 6.6
    RK4, 100 steps, value + grad (14,424)   0.24 s / 6.6    0.96 s / 4.2
    RK4, 500 steps, value + grad (72,132)   2.0 s / 35      16.9 s / 22
    25 layers (8,578)                       4.6 s / 58      15 s / 35 (O1)
    ======================================  ==============  ==============

    and a mass-action Jacobian of 1,011 statements took 0.9 s at O1 against 0.06 s at O0:
    the time per statement above O0 depends on how many values live long, which the
    statement count does not tell. O2 is kept to ``CODEGEN_O2`` statements, where it adds
    at most about a second and gains 20-35% per call; above, O0 keeps the build linear
    and the per-call cost of the larger kernels stays (see docs/compile_time.md).

    >>> codegen_level(100), codegen_level(800), codegen_level(5_000)
    (3, 2, 0)
    """
    if statements <= CODEGEN_O3:
        return 3
    return 2 if statements <= CODEGEN_O2 else 0


def _machine(codegen, level: int):
    """A target machine of numba's options (CPU, features, relocation, code model) at
    code generation level ``level``."""
    import llvmlite.binding as ll

    if level not in _MACHINES:
        options = dict(opt=level)
        codegen._customize_tm_options(options)
        target = ll.Target.from_triple(ll.get_process_triple())
        _MACHINES[level] = target.create_target_machine(**options)
    return _MACHINES[level]


def _optimise(codegen, module, level, inline: tuple = ()) -> None:
    """numba's pipeline (level 3: its per-function passes, then its cheap and full module
    passes), one module pipeline at ``level``, or (``jit.SHORT``) the chunks' short list
    (``jit.short_passes``, the linked helpers named in ``inline`` inlined)."""
    from . import jit

    module.data_layout = codegen._data_layout
    if level == jit.SHORT:
        jit.short_passes(module, codegen._tm, inline)
    elif level >= 3:
        for function in module.functions:
            if not function.is_declaration:
                fpm, pb = codegen._function_pass_manager()
                fpm.run(function, pb)
        cheap, pb = codegen._module_pass_manager(loop_vectorize=codegen._loopvect,
                                                 slp_vectorize=False, opt=codegen._opt_level,
                                                 cost="cheap")
        cheap.run(module, pb)
        full, pb = codegen._module_pass_manager()
        full.run(module, pb)
    else:
        pm, pb = codegen._module_pass_manager(opt=level, loop_vectorize=False,
                                              slp_vectorize=False)
        pm.run(module, pb)


def compile_kernel(ir_text: str, helpers: tuple, statements: int) -> tuple:
    """(builtin function, serialised library) of a kernel's IR (``@SYMBOL_``): optimised
    at ``opt_level``, turned into object code at ``codegen_level`` (``levels``), and loaded into numba's
    JIT as numba loads a cached library (the one path for a compile and a cache hit).
    Without helpers to link and while numba is not imported, the same steps run through
    llvmlite alone (``jit.py``) and the code loads into an engine of its own."""
    import llvmlite.binding as ll

    from . import jit

    symbol = symbol_of(ir_text)
    text = ir_text.replace("@SYMBOL_", "@" + symbol)
    if not helpers and jit.standalone():     # numba's steps without importing numba
        with jit.LOCK:
            _add_symbols()
            data = pack((symbol, "object", jit.compile_object(
                text, *levels(ir_text, statements))))
        return _loaded(ir_text, data)
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    from .link import _helper

    codegen = cpu_target.target_context.codegen()
    with global_compiler_lock:
        _add_symbols()
        linked, lib_names = [], []
        for spec, kinds in calls(helpers):
            cres = _helper(spec, kinds)
            linked.append(cres.library)
            lib_names.append(cres.fndesc.llvm_func_name)
            text = text.replace("@" + helper_symbol(spec, kinds) + "(",
                                f'@"{cres.fndesc.llvm_func_name}"(')
        module = ll.parse_assembly(text)
        module.triple = ll.get_process_triple()
        module.verify()
        for library in linked:
            module.link_in(library._get_module_for_linking(), preserve=True)
        opt, machine = levels(ir_text, statements)
        _optimise(codegen, module, opt, tuple(lib_names))
        obj = jit.emit(_machine(codegen, machine), module, opt == jit.SHORT)
        data = pack((symbol, "object", (obj, module.as_bitcode())))
    return _loaded(ir_text, data)


def _loaded(ir_text: str, data: bytes) -> tuple:
    fn = load_kernel(ir_text, data)
    if fn is None:
        raise RuntimeError(f"symgrad: kernel {symbol_of(ir_text)} compiled but did not load")
    return fn, data


def load_kernel(ir_text: str, data: bytes):
    """The builtin function of a kernel from ``compile_kernel``'s serialised library, or
    None if ``data`` is not one (a foreign or truncated payload)."""
    from . import jit

    symbol = symbol_of(ir_text)
    state = unpack(data, symbol)
    if state is None:
        return None
    if jit.standalone():       # no numba import: the object code in an engine of its own
        with jit.LOCK:
            _add_symbols()
            address, engine = jit.load(state[2][0], symbol)
        return _builtin(address, symbol, engine) if address else None
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    codegen = cpu_target.target_context.codegen()
    with global_compiler_lock:
        _add_symbols()
        library = codegen.unserialize_library(state)
        address = library.get_pointer_to_function(symbol)
    if not address:
        return None
    return _builtin(address, symbol, library)


MAGIC = b"symgrad-native-1\0"


def pack(state: tuple) -> bytes:
    """numba's ``(name, 'object', (object code, bitcode))`` as bytes (no pickle)."""
    name, kind, (obj, bitcode) = state
    head = name.encode()
    return MAGIC + struct.pack("<QQQ", len(head), len(obj), len(bitcode)) + head + obj + bitcode


def unpack(data: bytes, symbol: str) -> Optional[tuple]:
    """``pack``'s state, if ``data`` is one for library ``symbol``."""
    at = len(MAGIC)
    if not data.startswith(MAGIC) or len(data) < at + 24:
        return None
    n_name, n_obj, n_bc = struct.unpack("<QQQ", data[at:at + 24])
    at += 24
    if len(data) != at + n_name + n_obj + n_bc:
        return None
    name = data[at:at + n_name].decode(errors="replace")
    if name != symbol:
        return None
    obj = data[at + n_name:at + n_name + n_obj]
    return name, "object", (obj, data[at + n_name + n_obj:])
