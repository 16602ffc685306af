"""est2tpu: migrate TensorFlow Estimator code to Cloud TPU."""

# No `from __future__ import annotations`: under `python -m est2tpu` this module is imported
# while the working directory is still first on sys.path (see __main__), and a project's
# __future__.py would be run.

__version__ = "0.1.0"

# The public API, imported lazily: `import est2tpu.runtime` (generated code) must not pull in
# LibCST, and the runtime package imports this module first.
_API = {
    "migrate_source": "est2tpu.api",
    "migrate_paths": "est2tpu.api",
    "Target": "est2tpu.ftypes",
    "Status": "est2tpu.ftypes",
    "FileResult": "est2tpu.ftypes",
    "Finding": "est2tpu.ftypes",
}


def __getattr__(name: str) -> object:
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'est2tpu' has no attribute {name!r}")
