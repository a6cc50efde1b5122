"""The scalar pass's thresholds (module attributes, so tests can change them; both are
part of the compile key through the regions they choose, and of the warm key).

``SCALAR_ELEMENTS``: a node is worked per element only when it and each of its inputs
have at most this many elements (static shapes only). 64 covers the states, parameter
vectors and small matrices (8 x 8) of ODE steps and small models; beyond it a region's
statements grow with the elements (a 64 x 64 matmul would be 262,144 products) and loops
are the better code. ``MIN_STEPS``: a region becomes a scalar kernel when the kernel
planner would otherwise split it with at least this many structural steps.
``ENABLED``: False turns the pass off (every region planned as before).
"""

SCALAR_ELEMENTS = 64
MIN_STEPS = 2
ENABLED = True


def key() -> tuple:
    """What the folded-and-planned graph depends on here (the warm key)."""
    return (ENABLED, SCALAR_ELEMENTS, MIN_STEPS)
