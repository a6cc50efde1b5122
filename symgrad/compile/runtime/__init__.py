"""The compiled function at call time: ``CompiledFunction`` (``compiled``), shape variants
for unknown dimensions (``variants``) and ``f.explain()`` (``explain``)."""
