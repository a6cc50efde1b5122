"""numba's LLVM settings without importing numba: an all-IR build's LLVM step.

``native.py`` compiles a kernel's IR with numba's CPU codegen (its target machine, pass
pipelines and JIT). Importing numba costs about 0.2 s CPU, more than a small kernel's
whole LLVM step, so where numba is not imported yet (``standalone``) and the kernel links
no njit helper, the same steps are taken here with llvmlite alone: a target machine of
numba's JIT options (host CPU and features, static relocation on x86, the JIT code
model), numba's pass pipelines as ``numba.core.codegen`` builds them (per-function passes,
the "cheap" module passes, the full module passes, its reference-count pruning pass) and
object code loaded into an MCJIT engine of the kernel's own, which lives as long as the
kernel's builtin function (dropping the function frees its code). The machine code is the
one numba's codegen makes of the same IR, so the results are the same bit for bit
(``tests/test_jit_standalone.py``), and the serialised library is ``native.pack``'s: a
cached kernel loads on either path.

Where numba's configuration could differ from these defaults (a ``NUMBA_*`` setting of the
codegen in the environment or a ``.numba_config.yaml``), or numba is imported already,
``standalone`` is False and ``native.py`` uses numba's codegen as before.

>>> isinstance(standalone(), bool)
True
"""

from __future__ import annotations

import os
import sys
import threading

CODEGEN_SETTINGS = ("NUMBA_OPT", "NUMBA_LOOP_VECTORIZE", "NUMBA_SLP_VECTORIZE",
                    "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_ENABLE_AVX",
                    "NUMBA_LLVM_REFPRUNE_PASS", "NUMBA_LLVM_REFPRUNE_FLAGS",
                    "NUMBA_USE_LLVMLITE_MEMORY_MANAGER", "NUMBA_DISABLE_JIT",
                    "NUMBA_ENABLE_PROFILING", "NUMBA_DUMP_OPTIMIZED", "NUMBA_DUMP_ASSEMBLY",
                    "NUMBA_DEBUGINFO", "NUMBA_BOUNDSCHECK", "NUMBA_FASTMATH")
"""numba's settings that change its codegen's output: any of them set, numba's codegen runs."""
_AVX_OFF_CPUS = frozenset({"corei7-avx", "core-avx-i", "sandybridge", "ivybridge"})
_STATE: dict = {}
LOCK = threading.RLock()
"""Held while LLVM compiles or loads a kernel here (numba's global compiler lock's role)."""


def standalone() -> bool:
    """Whether the LLVM step may run without numba: numba is not imported and nothing
    configures its codegen away from its defaults."""
    if "numba" in sys.modules or os.path.exists(".numba_config.yaml"):
        return False
    return not any(name in os.environ for name in CODEGEN_SETTINGS)


def _ll():
    import llvmlite.binding as ll

    if not _STATE:
        ll.initialize_native_target()
        ll.initialize_native_asmprinter()
        _STATE["ready"] = True
    return ll


def _features(ll) -> str:
    """The host's features as numba's ``get_host_cpu_features`` gives them (AVX off where
    numba's ``avx_default`` turns it off)."""
    try:
        features = ll.get_host_cpu_features()
    except RuntimeError:
        return ""
    if ll.get_host_cpu_name() in _AVX_OFF_CPUS or not _os_supports_avx():
        for name in features:
            if name.startswith("avx"):
                features[name] = False
    return features.flatten()


def _os_supports_avx() -> bool:
    """numba's ``_os_supports_avx``: on x86 Linux, whether /proc/cpuinfo lists avx."""
    import platform

    if not sys.platform.startswith("linux") or \
            platform.machine() not in ("i386", "i586", "i686", "x86_64"):
        return True
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                head, _, body = line.partition(":")
                if head.strip() == "flags" and "avx" in body.split():
                    return True
    except OSError:
        return True
    return False


def machine(level: int):
    """A new target machine of numba's JIT options at code generation level ``level`` (an
    MCJIT engine owns the machine it is made with: one each)."""
    ll = _ll()
    triple = ll.get_process_triple()
    arch = ll.Target.from_default_triple().name
    reloc = "static" if arch.startswith("x86") else "pic" if arch.startswith("ppc") \
        else "default"
    if "features" not in _STATE:
        _STATE["features"] = _features(ll)
    return ll.Target.from_triple(triple).create_target_machine(
        opt=level, cpu=ll.get_host_cpu_name(), reloc=reloc, codemodel="jitdefault",
        features=_STATE["features"], jit=True)


def _passes(tm, opt: int, loop_vectorize: bool, module: bool):
    ll = _ll()
    pto = ll.create_pipeline_tuning_options()
    pto.speed_level = opt
    pto.slp_vectorization = False
    pto.loop_vectorization = loop_vectorize
    pb = ll.create_pass_builder(tm, pto)
    return (pb.getModulePassManager() if module else pb.getFunctionPassManager()), pb


def optimise(module, level: int) -> None:
    """numba's pipelines on ``module`` (``native._optimise``'s, built as
    ``numba.core.codegen.CPUCodegen`` builds them under numba's default settings)."""
    ll = _ll()
    tm = _STATE.get("tm3")
    if tm is None:
        tm = _STATE["tm3"] = machine(3)        # numba's codegen machine: config.OPT = 3
    module.data_layout = str(tm.target_data)
    prune = ll.RefPruneSubpasses.ALL
    if level >= 3:
        for function in module.functions:
            if not function.is_declaration:
                fpm, pb = _passes(tm, 3, True, module=False)
                fpm.add_refprune_pass(prune)
                fpm.run(function, pb)
        cheap, pb = _passes(tm, 0, False, module=True)   # numba's default "cheap" pass
        cheap.add_loop_rotate_pass()
        cheap.add_instruction_combine_pass()
        cheap.add_jump_threading_pass()
        cheap.add_refprune_pass(prune)
        cheap.run(module, pb)
    if level >= 3:
        full, pb = _passes(tm, 3, True, module=True)
    else:
        full, pb = _passes(tm, level, False, module=True)
    full.add_refprune_pass(prune)
    full.run(module, pb)


SHORT = "short"
"""The IR passes level of chunks (``native.CHUNK_LEVELS``): ``SHORT_PASSES`` alone."""

SHORT_PASSES = ("sroa", "instruction_combine", "simplify_cfg")
"""The IR passes of a kernel in chunks (after inlining its linked helpers): the chunk's
statements are already one straight block of SSA values with common subexpressions
shared, so -O1's other passes (GVN, early CSE, reassociation, the loop and inliner
machinery) cost 0.9 s of 25 layers' (f25) 1.0 s and bought nothing per call (36.8-37.6
us either way, loaded 2-core machine)."""


def short_passes(module, tm, inline: tuple = ()) -> None:
    """``SHORT_PASSES`` on ``module`` (functions named in ``inline``, linked helpers, are
    inlined first: LLVM's always-inliner)."""
    ll = _ll()
    for function in module.functions:
        if function.name in inline and not function.is_declaration:
            function.add_function_attribute("alwaysinline")
    pto = ll.create_pipeline_tuning_options()
    pto.speed_level = 0
    pto.loop_vectorization = pto.slp_vectorization = False
    pb = ll.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.add_always_inliner_pass()
    for name in SHORT_PASSES:
        getattr(pm, f"add_{name}_pass")()
    pm.run(module, pb)


def emit(tm, module, chunks: bool) -> bytes:
    """Object code of ``module``; for a kernel in chunks without LLVM's machine
    instruction scheduler (``-enable-misched=false``, an LLVM option of the whole process,
    set for this call and restored: callers hold ``LOCK`` or numba's compiler lock). In
    chunks of 500 straight-line statements the scheduler took a third of code generation
    (25 layers: 3.4 -> 2.4 s) and the calls are as fast (39.2 / 40.0 us)."""
    if not chunks:
        return tm.emit_object(module)
    ll = _ll()
    ll.set_option("", "-enable-misched=false")
    try:
        return tm.emit_object(module)
    finally:
        ll.set_option("", "-enable-misched=true")


def compile_object(text: str, opt, codegen: int) -> tuple:
    """(object code, bitcode) of a kernel's IR whose symbol is already named: passes at
    ``opt`` (``optimise``; ``SHORT``: ``short_passes``), code generation at ``codegen``."""
    ll = _ll()
    module = ll.parse_assembly(text)
    module.triple = ll.get_process_triple()
    module.verify()
    tm = machine(codegen)
    if opt == SHORT:
        module.data_layout = str(tm.target_data)
        short_passes(module, tm)
    else:
        optimise(module, opt)
    return emit(tm, module, opt == SHORT), module.as_bitcode()


def load(obj: bytes, symbol: str) -> tuple:
    """(address of ``symbol``, the engine that holds the code: keep it alive) of object
    code from ``compile_object``."""
    ll = _ll()
    engine = ll.create_mcjit_compiler(ll.parse_assembly(""), machine(3))
    engine.add_object_file(ll.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return engine.get_function_address(symbol), engine
