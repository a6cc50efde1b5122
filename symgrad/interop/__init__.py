"""Conversions between symgrad and other libraries (sympy expressions in: ``sympy_in``)."""
