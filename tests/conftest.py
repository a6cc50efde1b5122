"""pytest configuration shared by the test suite.

Registers the markers used by the conformance tests (``tests/test_conformance*.py``).
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Register custom markers so ``--strict-markers`` and ``-m`` work."""
    config.addinivalue_line("markers", "compiled: runs code compiled by sg.function")
    config.addinivalue_line("markers", "cuda: needs a GPU or NUMBA_ENABLE_CUDASIM=1")
