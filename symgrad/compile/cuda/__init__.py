"""The CUDA backend (target ``cuda``, docs/cuda.md): kernels (``templates``, ``nest``,
``tiles``, ``signatures``), the generated driver (``driver``), device steps through CuPy
(``steps``), the runtime (``runtime``: the only module that imports numba.cuda), memory
(``memory``), rematerialisation (``remat``) and version shims (``compat``)."""
