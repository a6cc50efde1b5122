"""What generated kernels import at run time: scalar helpers (``support``,
``support_v2``), vectorisable math (``vecmath``) and the threaded matmul
(``threaded_matmul``). Nothing here imports the rest of the compiler."""
