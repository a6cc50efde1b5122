"""TensorFlow conformance cases (``semantics/*.json``) and the harness that runs them."""
