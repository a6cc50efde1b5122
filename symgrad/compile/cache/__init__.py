"""Cache and trust: generated modules stored by key (``modules``), the compile key
(``key``), authenticated files (``trust``), numba's own cache files sealed the same way
(``numba_files``) and the warm path keyed by the unfolded graph (``warm``)."""
