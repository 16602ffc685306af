"""`python -m est2tpu`."""

# No `from __future__ import annotations` here: even that import could be served by a file
# in the working directory before the entry below is dropped.
import sys

# `-m` puts the working directory first on sys.path, so a project's own difflib.py, typer.py
# or rich.py would be imported, that is run, in place of the real module. est2tpu never runs
# the project's code: drop that entry before anything else is imported.
if not getattr(sys.flags, "safe_path", False) and sys.path:
    import os

    if sys.path[0] in ("", os.getcwd()):
        del sys.path[0]

from est2tpu.cli import main  # only after sys.path is safe

if __name__ == "__main__":
    main()
