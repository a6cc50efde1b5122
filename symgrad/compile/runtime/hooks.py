"""Hooks that packages above the compiler fill in, kept in a module that imports nothing, so
that filling them in does not load the compiler (``import symgrad`` stays light)."""

DISTRIBUTED: dict = {"call_dask": None, "reduce_function": None}
"""Set by ``symgrad.distributed`` when imported (``import symgrad`` imports it; it imports
dask only when a call with dask arrays arrives): how a call with dask arrays runs and how a
compiled function pickles. The distributed package builds on the compiler, not the reverse."""
