#!/usr/bin/env bash
# The one call a session with a GPU makes (docs/cuda.md "Benchmark"): versions, the CUDA
# tests on the device (NUMBA_ENABLE_CUDASIM=0), then `python -m benchmarks.cuda_bench`,
# everything into one log.
#
#   bash benchmarks/gpu_check.sh                      # log: benchmarks/results/gpu_check.log
#   bash benchmarks/gpu_check.sh /tmp/out/gpu.log     # another log
#   BENCH_ARGS=--quick bash benchmarks/gpu_check.sh   # small benchmark sizes
#
# Environment: PYTHON (default python), BENCH_ARGS (passed to cuda_bench), TEST_TIMEOUT
# and BENCH_TIMEOUT (seconds, default 330 and 240: together under a 600 s call). Exit
# status: that of the tests, or of the benchmark when the tests passed.
set -u
cd "$(dirname "$0")/.."
LOG=${1:-benchmarks/results/gpu_check.log}
PY=${PYTHON:-python}
mkdir -p "$(dirname "$LOG")"
export NUMBA_ENABLE_CUDASIM=0
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"   # this checkout's symgrad

{
    echo "# gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi -L 2>&1 || echo "nvidia-smi: not found"
    "$PY" - <<'EOF'
import importlib
for name in ("numba", "numba_cuda", "numpy", "sympy", "cupy", "torch", "jax"):
    try:
        module = importlib.import_module(name)
        print(f"{name} {getattr(module, '__version__', '?')}")
    except Exception as exc:  # noqa: BLE001 - absent or broken: say so
        print(f"{name}: {type(exc).__name__}: {exc}")
try:
    from numba import cuda
    print("numba.cuda available:", cuda.is_available())
except Exception as exc:  # noqa: BLE001
    print("numba.cuda:", exc)
EOF

    echo
    echo "## CUDA tests, NUMBA_ENABLE_CUDASIM=0"
    timeout "${TEST_TIMEOUT:-330}" "$PY" -m pytest -q -rfEs --tb=short -p no:cacheprovider \
        --durations=10 tests/test_cuda*.py tests/test_ops_cuda_completeness.py
    tests_rc=$?
    echo "pytest rc=$tests_rc"

    echo
    echo "## python -m benchmarks.cuda_bench ${BENCH_ARGS:-}"
    # shellcheck disable=SC2086 - BENCH_ARGS is a list of options
    timeout "${BENCH_TIMEOUT:-240}" "$PY" -m benchmarks.cuda_bench ${BENCH_ARGS:-}
    bench_rc=$?
    echo "cuda_bench rc=$bench_rc"
    [ "$tests_rc" -ne 0 ] && exit "$tests_rc"
    exit "$bench_rc"
} 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
