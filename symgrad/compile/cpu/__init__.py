"""The CPU backend (targets ``cpu`` and ``parallel``): the generated module and its
``run()`` driver (``driver``), the nest loop writer (``nest_loop``), buffers kept between
calls (``workspace``, ``reuse``), the eager numba compile (``eager``) and numba's startup
costs (``numba_startup``)."""
