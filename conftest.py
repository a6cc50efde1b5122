"""Every pytest run, the doctests of symgrad/ included (``pytest symgrad``), compiles into
a temporary module cache with a temporary key, never into the user's own
(tests/conftest.py does the same for tests/)."""

import atexit
import os
import shutil
import tempfile

_SCRATCH = tempfile.mkdtemp(prefix="symgrad-doctests-")
os.environ["SYMGRAD_CACHE_DIR"] = os.path.join(_SCRATCH, "cache")
os.environ["SYMGRAD_KEY_FILE"] = os.path.join(_SCRATCH, "key", "cache.key")
atexit.register(shutil.rmtree, _SCRATCH, True)
