"""The doctests of this package need dask: skipped when it is not installed."""

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("dask") else ["*.py"]
