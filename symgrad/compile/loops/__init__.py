"""Loops that stay loops (``sg.scan``, ``sg.fori_loop``, ``sg.while_loop``): their compiled
forms on the cpu targets (``cpu.py``: the body compiled once, the loop run over it;
``fused.py``: one njit loop where the body is one scalar kernel)."""
