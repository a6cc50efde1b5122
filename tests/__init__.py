"""symgrad's test suite."""
