"""The numba side of a scalar body written as LLVM IR (``llvm_body``): an intrinsic.

``body_function(IR, ..)`` is bound in a generated module as ``_k<i>_point``; a loop calls
it like the numba body it replaces and gets a tuple. At the loop's code generation the
body's IR is added to the loop's code library (``_add_body``), optimised with the loop
and compiled into its object code (a library of its own would be optimised and compiled
once more, for nothing); the function is ``weak_odr`` and named by the hash of its text,
so loops sharing a body may each hold it. The njit helpers it calls are linked as numba
links a called function. A loop cached on disk holds the body: a cache hit parses no IR.
"""

from __future__ import annotations

import hashlib

from .body import RAISING_HELPERS, helper_symbol, linked, raise_code


def symbol_of(ir_text: str) -> str:
    """A symbol unique to the body's IR (equal IR, equal function)."""
    return "symgrad_body_" + hashlib.sha256(ir_text.encode()).hexdigest()[:24]


def _numba_types():
    from numba import types

    return {"double": types.float64, "float": types.float32, "i1": types.boolean}


def _helper(spec: str, kinds: tuple):
    """The compile result of njit helper ``spec`` for arguments of ``kinds`` (one float
    kind, which it returns)."""
    import importlib

    module, _, name = spec.partition(":")
    dispatcher = getattr(importlib.import_module(module), name)
    sig = tuple(_numba_types()[k] for k in kinds)
    dispatcher.compile(sig)
    cres = dispatcher.overloads[sig]
    if cres.signature.return_type != sig[0]:
        raise TypeError(f"symgrad LLVM body: helper {spec} returns "
                        f"{cres.signature.return_type}, {sig[0]} expected")
    return cres


def _add_body(library, symbol: str, ir_text: str, helpers: tuple) -> None:
    """Add the body's IR to ``library`` (the calling loop's), once per library: it is
    optimised with the loop and compiled once into the loop's object code (a library of
    its own would be optimised and compiled once more, for nothing). The helpers it calls
    are linked as numba links a called function."""
    import llvmlite.binding as ll

    added = getattr(library, "symgrad_bodies_", None)
    if added is None:
        added = library.symgrad_bodies_ = set()
    if symbol in added:
        return
    text = ir_text.replace("@SYMBOL_", "@" + symbol)
    for spec, kinds in linked(helpers):
        cres = _helper(spec, kinds)
        library.add_linking_library(cres.library)
        text = text.replace("@" + helper_symbol(spec, kinds) + "(",
                            f'@"{cres.fndesc.llvm_func_name}"(')
    module = ll.parse_assembly(text)
    module.verify()
    library.add_llvm_module(module)
    added.add(symbol)


def _raising(helpers: tuple) -> list:
    """(failure code, message) of each raising helper a body calls (``body.raise_code``)."""
    import importlib

    out = {}
    for spec, _ in helpers:
        if spec.startswith(RAISING_HELPERS):
            module, _, name = spec.partition(":")
            out[raise_code(spec)] = importlib.import_module(module).MESSAGES[name]
    return sorted(out.items())


def deferred_body(*args):
    """``body_function(*args)``, made when the calling generated module needs numba
    (``kernel_lib/deferred.py``; the module's namespace is the caller's globals)."""
    import sys

    from ...kernel_lib.deferred import Deferred, numba_imported

    if numba_imported():
        return body_function(*args)
    return Deferred(lambda: body_function(*args), sys._getframe(1).f_globals)


def body_function(ir_text: str, inputs: tuple, outputs: tuple, helpers: tuple = ()):
    """The numba intrinsic ``body(a0, ..) -> tuple`` that calls the IR function of
    ``ir_text`` (defined as ``@SYMBOL_``); ``inputs`` and ``outputs``: the kinds of the
    arguments and results ("double": float64, "float": float32, "i1": bool); ``helpers``:
    (spec, argument kinds) of the njit helpers it calls."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.core.errors import TypingError
    from numba.extending import intrinsic

    from ....errors import LinAlgError

    symbol = symbol_of(ir_text)
    raising = _raising(helpers)
    numba_types = _numba_types()
    expected = tuple(numba_types[k] for k in inputs)
    returned = types.Tuple([numba_types[k] for k in outputs])
    lltypes = {"double": ir.DoubleType(), "float": ir.FloatType(), "i1": ir.IntType(1)}

    def build(args):
        if tuple(args) != expected:
            raise TypingError(f"symgrad LLVM body {symbol}: arguments {expected} expected, "
                              f"got {args}")
        return returned(*args), codegen

    def codegen(context, builder, sig, args):
        _add_body(context.active_code_library, symbol, ir_text, helpers)
        d = ir.DoubleType()
        ret = ir.IntType(32) if raising else ir.VoidType()
        fnty = ir.FunctionType(ret, [lltypes[k] for k in inputs] + [d.as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
        out = cgutils.alloca_once(builder, ir.ArrayType(d, len(outputs)))
        ptr = builder.bitcast(out, d.as_pointer())
        status = builder.call(fn, list(args) + [ptr])
        for code, message in raising:
            failed = builder.icmp_unsigned("==", status, ir.Constant(ret, code))
            with builder.if_then(failed, likely=False):
                context.call_conv.return_user_exc(builder, LinAlgError, (message,))
        values = [builder.load(builder.bitcast(builder.gep(ptr, [ir.Constant(ir.IntType(64), j)]),
                                               lltypes[k].as_pointer()))
                  for j, k in enumerate(outputs)]
        return context.make_tuple(builder, sig.return_type, values)

    params = ", ".join(f"a{k}" for k in range(len(inputs)))
    comma = "," if len(inputs) == 1 else ""
    namespace: dict = {}
    exec(f"def body(typingctx, {params}):\n"       # noqa: S102 - a fixed parameter list
         f"    return build(({params}{comma}))", {"build": build}, namespace)
    return intrinsic(namespace["body"])
