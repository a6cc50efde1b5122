"""symgrad benchmark suite (see benchmarks/README.md)."""
