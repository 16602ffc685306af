"""The command-line half of `verify --tpu`: runs the check, prints its report, returns the exit
code (the CLI exits with it)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from est2tpu import verify as cpu_verify
from est2tpu.tpucheck import output as tpu_output
from est2tpu.tpucheck import run as tpu_run

EXIT_USAGE = 2


def main(
    project: Path,
    command: Sequence[str],
    output: str,
    out: Console,
    err: Console,
    *,
    timeout: float | None = None,
    **options: Any,
) -> int:
    """Run `tpu_run.verify_tpu` with ``options``; the report in ``output`` (text or one of the
    machine formats) on ``out``, progress and problems on ``err``."""
    try:
        result = tpu_run.verify_tpu(
            project,
            command,
            timeout=tpu_run.DEFAULT_TIMEOUT_S if timeout is None else timeout,
            progress=lambda message: err.out(message, highlight=False),
            **options,
        )
    except cpu_verify.VerifyError as exc:
        err.print(Text(f"error: {exc}"))
        return EXIT_USAGE
    if output == "text":
        out.print(tpu_output.render(result))
    else:
        sys.stdout.write(tpu_output.formatted(result, output))
        sys.stdout.flush()
        for problem in result.problems:
            err.print(Text(problem))
    return result.exit_code
