"""Scalar sympy printed as numba source: the printer (``printer``), power chains
(``powers``) and square-root comparisons (``rootcmp``). Target independent."""
