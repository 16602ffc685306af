"""Run the user's program once under TPU semantics and collect the TPU1xx findings.

PROJECT is never written: a migrated copy (the migration computed in memory, as
`est2tpu verify` makes it) runs COMMAND with the verify hook and
``$EST2TPU_VERIFY_TPU_CORES`` set. Returns data (`TpuVerification`); the CLI prints and exits.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from est2tpu import verify as cpu_verify
from est2tpu.ftypes import Target

EXIT_READY = 0
EXIT_ERRORS = 1
EXIT_CANNOT_TELL = 2

DEFAULT_CORES = 8
DEFAULT_TIMEOUT_S = 600.0


@dataclass
class TpuFinding:
    """One finding, in the project's terms (``path`` relative to PROJECT; "" when unknown)."""

    id: str
    severity: str
    path: str
    line: int
    column: int
    message: str


@dataclass
class TpuVerification:
    """What `verify --tpu` learned; ``exit_code`` 0 only when something was checked and no
    error was found."""

    project: Path
    target: Target
    cores: int
    command: list[str]
    findings: list[TpuFinding] = field(default_factory=list)
    checked: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    migrated_files: list[str] = field(default_factory=list)
    seconds: float = 0.0
    exit_code: int = EXIT_CANNOT_TELL
    kept: Path | None = None

    @property
    def errors(self) -> list[TpuFinding]:
        return [f for f in self.findings if f.severity == "error"]


def verify_tpu(
    project: Path,
    command: Sequence[str],
    *,
    cores: int = DEFAULT_CORES,
    target: Target | None = None,
    python: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    migrated_dir: Path | None = None,
    keep: bool = False,
    strict_shapes: bool = False,
    progress: Callable[[str], None] | None = None,
) -> TpuVerification:
    """Migrate a copy of ``project`` (or take ``migrated_dir``) and run ``command`` in it once,
    with the program's TPUEstimator taking its TPU path for ``cores`` cores on one host.

    ``python`` replaces COMMAND's interpreter (current TensorFlow for the tf2 target, whose
    Estimator facade runs one train step under XLA). ``strict_shapes``: on the tf2 target,
    input dimensions unknown at graph time are errors, not warnings. Raises `cpu_verify.VerifyError` on a usage
    error, before anything runs.
    """
    project = Path(project).resolve()
    if not project.is_dir():
        raise cpu_verify.VerifyError(f"{project} is not a directory")
    if not command:
        raise cpu_verify.VerifyError("no COMMAND given: put it after `--`, e.g. -- python train.py")
    if cores < 1:
        raise cpu_verify.VerifyError("--tpu-cores must be at least 1")
    if migrated_dir is not None and not Path(migrated_dir).is_dir():
        raise cpu_verify.VerifyError(f"{migrated_dir} is not a directory")
    argv = cpu_verify.with_interpreter(command, python)
    config = cpu_verify.project_config(project)
    target = target or config.target or Target.TPU_ESTIMATOR
    say = progress or (lambda _message: None)
    result = TpuVerification(project, target, cores, list(argv))
    tmp = Path(tempfile.mkdtemp(prefix="est2tpu-verify-tpu-"))
    try:
        hook_dir = cpu_verify.hook_dir(tmp / "hook")
        source = tmp / "migrated-source" / project.name
        cpu = cpu_verify.Verification(target=target, command=list(argv))
        if migrated_dir is None:
            say(f"migrating a copy of {project} (target {target.value})")
            if not cpu_verify.migrate_copy(project, source, target, config, cpu):
                result.problems.extend(cpu.problems)
                return result
            result.migrated_files = list(cpu.changed_files)
        else:
            cpu_verify.copy_tree(Path(migrated_dir).resolve(), source, cpu)
        result.notes.extend(n for n in cpu.migration_notes if n.startswith("skipped"))
        say(f"running under TPU semantics ({cores} cores): {' '.join(argv)}")
        from est2tpu.runtime import tpu_verify, tpu_verify_tf2

        # No TPU is asked anything: the runtime resolves none from $TPU_NAME.
        env = {tpu_verify.CORES_ENV: str(cores), "TPU_NAME": ""}
        if strict_shapes:
            env[tpu_verify_tf2.STRICT_SHAPES_ENV] = "1"
        run = cpu_verify.run_command(
            "TPU check",
            source,
            project,
            list(argv),
            tmp / "run",
            hook_dir,
            cpu_verify.DEFAULT_SEED,
            timeout,
            extra_env=env,
        )
        result.seconds = run.seconds
        _judge(result, run)
        return result
    finally:
        if keep:
            result.kept = tmp
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _judge(result: TpuVerification, run: cpu_verify.Run) -> None:
    """Fill findings, notes, problems and the exit code from the run."""
    tpu = (run.record or {}).get("tpu") or {}
    for item in tpu.get("findings", []):
        result.findings.append(
            TpuFinding(
                item["id"],
                item["severity"],
                item["path"],
                int(item["line"]),
                int(item["column"]),
                item["message"],
            )
        )
    result.checked = list(tpu.get("checked", []))
    result.notes.extend(tpu.get("notes", []))
    if tpu.get("ended"):
        result.notes.append(f"the program was ended at {tpu['ended']}")
    internal = tpu.get("internal", [])
    for failure in internal:
        result.problems.append(f"est2tpu's own check failed ({failure})")
    if not run.ok:
        result.problems.append(cpu_verify.failure_text(run))
    elif run.record is None:
        result.problems.append(
            "the program ran, but the verify hook recorded nothing: COMMAND must start a "
            "Python program (the hook loads through PYTHONPATH's sitecustomize)"
        )
    if not result.checked and not result.errors:
        result.problems.append(
            "no TPUEstimator (or tf2 Estimator facade) train() or evaluate() was reached: "
            "nothing was checked (does COMMAND train? does the migration leave an Estimator "
            "it does not convert?)"
        )
    if result.errors:
        result.exit_code = EXIT_ERRORS
    elif result.problems:
        result.exit_code = EXIT_CANNOT_TELL
    else:
        result.exit_code = EXIT_READY
