"""The plan: the folded graph (``fold``, ``rewrite``, ``hoist``), its regions, kernels and
steps (``regions``), fused scatters and stencil gathers (``scatter``, ``gather``, ``access``),
constant masks (``masks``) and what the compiler knows of each op record (``oprules``)."""
