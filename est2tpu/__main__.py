"""`python -m est2tpu`."""

from __future__ import annotations

from est2tpu.cli import main

if __name__ == "__main__":
    main()
