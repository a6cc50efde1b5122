"""Loops that stay loops (``sg.scan``, ``sg.fori_loop``, ``sg.while_loop``, ``sg.cond``):
their compiled forms. Empty until that work lands."""
