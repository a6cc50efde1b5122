"""Benchmark workloads W1..W7; each module exposes ``systems()``."""

WORKLOADS = {
    "W1": "benchmarks.workloads.w1_elementwise",
    "W2": "benchmarks.workloads.w2_rosenbrock",
    "W3": "benchmarks.workloads.w3_pair_potential",
    "W4": "benchmarks.workloads.w4_mlp",
    "W5": "benchmarks.workloads.w5_latency",
    "W6": "benchmarks.workloads.w6_compile",
    "W7": "benchmarks.workloads.w7_stencil2d",
}
