"""Test configuration: the CUDA simulator before numba is imported, hypothesis profiles."""

import atexit
import os
import shutil
import tempfile

# numba.cuda runs on the CPU simulator unless a real GPU run asks otherwise
# (NUMBA_ENABLE_CUDASIM=0 in the environment).
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

# The suite never writes into the user's own cache or key: a temporary directory per run.
_SCRATCH = tempfile.mkdtemp(prefix="symgrad-tests-")
os.environ["SYMGRAD_CACHE_DIR"] = os.path.join(_SCRATCH, "cache")
os.environ["SYMGRAD_KEY_FILE"] = os.path.join(_SCRATCH, "key", "cache.key")
atexit.register(shutil.rmtree, _SCRATCH, True)

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "default", deadline=None, max_examples=25,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", deadline=None, max_examples=300)
settings.load_profile(os.environ.get("SYMGRAD_HYPOTHESIS_PROFILE", "default"))


def pytest_runtest_setup(item):
    """``@pytest.mark.simulator_only(reason=...)``: skipped on a GPU, with the reason."""
    marker = item.get_closest_marker("simulator_only")
    if marker is None:
        return
    import pytest
    reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
    if not reason:
        pytest.fail(f"{item.nodeid}: @pytest.mark.simulator_only needs a reason")
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        pytest.skip(f"simulator only: {reason}")
