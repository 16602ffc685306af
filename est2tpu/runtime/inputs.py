"""Params-aware ``numpy_input_fn`` / ``pandas_input_fn`` (placeholder, filled below)."""
