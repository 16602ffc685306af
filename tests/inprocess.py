"""The est2tpu command line run in the test's own process.

A subprocess (`python -m est2tpu`) costs a fresh interpreter and every import, about a second
on the CI machine, and most tests that drive the CLI prove what it does to files and what it
prints, not how a process starts or stops. Those run it here, through typer's CliRunner and
the same `app` the console script runs, and get what a subprocess would give them: the exit
code, stdout and stderr. Tests of the process itself (signals, pipes, locales, `-m` and
sys.path, tracebacks) keep their subprocesses.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from typer.testing import CliRunner

from est2tpu.cli import app


def est2tpu(*args: str | Path) -> subprocess.CompletedProcess[str]:
    argv = [str(a) for a in args]
    # catch_exceptions=False: an internal error is the test's failure, with its traceback.
    done = CliRunner().invoke(app, argv, prog_name="est2tpu", catch_exceptions=False)
    return subprocess.CompletedProcess(argv, done.exit_code, done.stdout, done.stderr)
