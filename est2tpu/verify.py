"""`est2tpu verify`: run the user's program before and after migration and compare what its
Estimators returned.

The only part of est2tpu that runs user code. PROJECT is never written: it is copied (once
per run) into a temporary directory, one copy gets the migration (computed in memory through
`est2tpu.api`), and COMMAND runs in each copy with the hook of `est2tpu.runtime.verify_hook`
loaded through a ``sitecustomize.py`` on the child's ``PYTHONPATH`` only. The hook seeds
Python, NumPy and TensorFlow, defaults ``RunConfig.tf_random_seed`` and records every
``evaluate()`` result and the global step of every ``train()``.

This module returns data (`Verification`); `est2tpu.verify_table` renders it; the CLI prints
and exits.
"""

from __future__ import annotations

import enum
import json
import math
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from est2tpu.ftypes import Status, Target

if TYPE_CHECKING:
    from est2tpu.config import Config

__all__ = [
    "EXIT_AGREE",
    "EXIT_CANNOT_VERIFY",
    "EXIT_DISAGREE",
    "Verification",
    "VerifyError",
    "verify",
]

EXIT_AGREE = 0
EXIT_DISAGREE = 1  # the migrated program crashed, timed out or gave other numbers
EXIT_CANNOT_VERIFY = 2  # the original crashed / timed out / evaluated nothing; bad usage

DEFAULT_SEED = 20240611
DEFAULT_TIMEOUT_S = 1800.0

# The tf2 target's stated tolerance (README, tests/tf2): the facade runs the same model on
# other kernels and optimizer code, so numbers agree closely, not bit for bit. Accuracy-like
# metrics (in [0, 1]) within 0.03 absolute, the global step exactly, anything else (losses,
# errors) within 25% relative. The tpu-estimator target on CPU is bit-identical: no tolerance.
TF2_ABSOLUTE = 0.03
TF2_RELATIVE = 0.25
# What `verify --target tf2` adds to every TensorFlow seed of its reseeded original run.
TF2_SEED_SHIFT = 1
_ACCURACY_LIKE = re.compile(r"accuracy|auc|precision|recall")

# Not copied into the runs: version control, caches and virtual environments.
_IGNORED = shutil.ignore_patterns(
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    "*.pyc",
    ".venv*",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".ipynb_checkpoints",
)
_PYTHON = re.compile(r"python(\d+(\.\d+)*)?(\.exe)?$")
_TRACEBACK_LINES = 12


class VerifyError(Exception):
    """A usage error: nothing was run."""


class Verdict(str, enum.Enum):
    EQUAL = "equal"
    WITHIN = "within tolerance"
    DIFFERENT = "different"
    MISSING = "missing"


@dataclass
class Run:
    """One run of COMMAND in one copy."""

    label: str
    returncode: int | None  # None when it timed out
    seconds: float
    record: dict[str, Any] | None  # what the hook wrote; None if it wrote nothing
    stderr_tail: list[str]
    timed_out: bool = False
    workdir: Path | None = None  # what the run owns: its copy and its TMPDIR

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def metrics(self) -> dict[str, Any]:
        """Every recorded value by name: each evaluate()'s metrics, and the final global step."""
        out: dict[str, Any] = {}
        if self.record is None:
            return out
        evaluations = self.record.get("evaluations", [])
        for i, evaluation in enumerate(evaluations, 1):
            prefix = f"evaluate #{i} " if len(evaluations) > 1 else ""
            for key, value in (evaluation.get("metrics") or {}).items():
                out[f"{prefix}{key}"] = value
        if self.record.get("final_global_step") is not None:
            out["final global step"] = self.record["final_global_step"]
        return out

    @property
    def evaluations(self) -> int:
        return len((self.record or {}).get("evaluations", []))

    @property
    def trains(self) -> int:
        return len((self.record or {}).get("trains", []))


@dataclass
class Row:
    """One metric compared."""

    name: str
    original: Any
    migrated: Any
    verdict: Verdict
    allowed: float = 0.0  # the difference the comparison accepted
    spread: float | None = None  # between the original's own runs, when they differ


@dataclass
class Verification:
    """Everything `verify` learned; `exit_code` is 0 only when the programs agree."""

    target: Target
    command: list[str]
    originals: list[Run] = field(default_factory=list)
    migrated: Run | None = None
    rows: list[Row] = field(default_factory=list)
    migration_notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    nondeterministic: list[str] = field(default_factory=list)
    # tf2: the original under other TensorFlow seeds, and the metrics it moves (by how much)
    reseeded: Run | None = None
    seed_moved: list[str] = field(default_factory=list)
    exit_code: int = EXIT_CANNOT_VERIFY
    kept: Path | None = None
    changed_files: list[str] = field(default_factory=list)  # relative to the project

    @property
    def agree(self) -> bool:
        return self.exit_code == EXIT_AGREE


def verify(
    project: Path,
    command: Sequence[str],
    *,
    target: Target | None = None,
    python: str | None = None,
    runs: int = 2,
    timeout: float = DEFAULT_TIMEOUT_S,
    migrated_dir: Path | None = None,
    seed: int = DEFAULT_SEED,
    keep: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Verification:
    """Migrate a copy of ``project``, run ``command`` in copies of both and compare.

    ``python`` replaces COMMAND's interpreter: for the migrated copy on the tf2 target (an
    interpreter with current TensorFlow), for both copies on the tpu-estimator target. ``migrated_dir``: an already migrated (perhaps
    hand-edited) tree to run instead of migrating ``project``. Raises `VerifyError` on a usage
    error, before anything runs.
    """
    project = Path(project).resolve()
    if not project.is_dir():
        raise VerifyError(f"{project} is not a directory")
    if not command:
        raise VerifyError("no COMMAND given: put it after `--`, e.g. -- python train.py")
    if runs < 1:
        raise VerifyError("--runs must be at least 1")
    migrated_command = with_interpreter(command, python)
    if migrated_dir is not None and not Path(migrated_dir).is_dir():
        raise VerifyError(f"{migrated_dir} is not a directory")
    config = project_config(project)
    target = target or config.target or Target.TPU_ESTIMATOR
    if target is Target.TPU_ESTIMATOR:
        # Both programs need the same TensorFlow (<= 2.15): one interpreter runs both.
        command = migrated_command
    say = progress or (lambda _message: None)
    result = Verification(target=target, command=list(command))

    tmp = Path(tempfile.mkdtemp(prefix="est2tpu-verify-"))
    try:
        hooks = hook_dir(tmp / "hook")
        migrated_src = tmp / "migrated-source" / project.name
        if migrated_dir is None:
            say(f"migrating a copy of {project} (target {target.value})")
            if not migrate_copy(project, migrated_src, target, config, result):
                result.exit_code = EXIT_CANNOT_VERIFY
                return result
        else:
            copy_tree(Path(migrated_dir).resolve(), migrated_src, result)
            result.migration_notes.append(f"migrated copy: {migrated_dir} (not migrated again)")

        for i in range(1, runs + 1):
            label = f"original #{i}" if runs > 1 else "original"
            say(f"running {label}: {' '.join(command)}")
            run = run_command(
                label,
                project,
                project,
                list(command),
                tmp / f"original-{i}",
                hooks,
                seed,
                timeout,
            )
            result.originals.append(run)
            if not run.ok:
                break  # a crashing original crashes again: one traceback is enough
        if target is Target.TF2 and runs > 1 and result.originals[-1].ok:
            from est2tpu.runtime import verify_hook

            # Current TensorFlow draws other initial values than TF 2.15 under the same
            # seeds: how far that alone moves the metrics, the original shows under
            # other TensorFlow seeds.
            label = f"original, TensorFlow seeds + {TF2_SEED_SHIFT}"
            say(f"running {label}: {' '.join(command)}")
            result.reseeded = run_command(
                label,
                project,
                project,
                list(command),
                tmp / "original-reseeded",
                hooks,
                seed,
                timeout,
                {verify_hook.TF_SEED_SHIFT_ENV: str(TF2_SEED_SHIFT)},
            )
        if result.originals[0].ok:
            say(f"running migrated: {' '.join(migrated_command)}")
            result.migrated = run_command(
                "migrated",
                migrated_src,
                project,
                migrated_command,
                tmp / "migrated",
                hooks,
                seed,
                timeout,
            )
        _compare(result)
        return result
    finally:
        if keep:
            result.kept = tmp
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def with_interpreter(command: Sequence[str], python: str | None) -> list[str]:
    """COMMAND with its interpreter replaced by ``python`` (unchanged when None)."""
    out = list(command)
    if python is None:
        return out
    if not out or not _PYTHON.search(os.path.basename(out[0])):
        shown = out[0] if out else ""
        raise VerifyError(
            f"--python replaces COMMAND's interpreter, but {shown!r} is not one; "
            "start COMMAND with python"
        )
    out[0] = python
    return out


def project_config(project: Path) -> Config:
    """The project's ``[tool.est2tpu]`` settings; `VerifyError` when they cannot be read."""
    from est2tpu.config import ConfigError, load_for

    try:
        return load_for([project])
    except ConfigError as exc:
        raise VerifyError(f"cannot read the project's configuration: {exc}") from None


def copy_tree(source: Path, dest: Path, result: Verification) -> None:
    """Copy ``source`` to ``dest`` without version control, caches, virtual environments and
    special files (FIFOs, sockets, devices: reading one would block or fail); each special
    file skipped is noted in ``result`` once."""
    skipped: list[str] = []
    ignore = _ignore_special(
        _IGNORED,
        lambda directory, name: skipped.append(
            os.path.relpath(os.path.join(directory, name), source)
        ),
    )
    shutil.copytree(source, dest, symlinks=True, ignore=ignore)
    for name in skipped:
        note = f"skipped {name}: not a regular file (a FIFO, socket or device is not copied)"
        if note not in result.migration_notes:
            result.migration_notes.append(note)


def hook_dir(path: Path) -> Path:
    """A directory for the child's PYTHONPATH: our ``sitecustomize`` and the est2tpu package
    (the migrated code imports its runtime; the child interpreter may not have it)."""
    package = Path(__file__).resolve().parent
    shutil.copytree(package, path / "est2tpu", ignore=shutil.ignore_patterns("__pycache__"))
    (path / "sitecustomize.py").write_text(
        '"""Written by `est2tpu verify` for one run: seeds the program and records what its '
        'Estimators return."""\n'
        "from est2tpu.runtime import verify_hook\n\n"
        "verify_hook.install()\n",
        encoding="utf-8",
    )
    return path


def migrate_copy(
    project: Path, dest: Path, target: Target, config: Config, result: Verification
) -> bool:
    """Copy ``project`` to ``dest`` and write the migration (computed in memory from
    ``project``, with its ``[tool.est2tpu]`` settings) into the copy only. False (with the
    reasons in ``result``) when a file cannot be migrated."""
    from est2tpu import api, textio

    results = list(
        api.migrate_paths(
            [project],
            target=target,
            select=config.select,
            ignore=config.ignore,
            exclude=[*(config.exclude or ()), *config.extend_exclude],
            use_runtime=True if config.runtime is None else config.runtime,
            per_file_ignores=config.ignores_for if config.per_file_ignores else None,
        )
    )
    copy_tree(project, dest, result)
    failed = [r for r in results if r.status is Status.FAILED]
    for r in failed:
        result.problems.append(f"{r.path}: cannot be migrated: {r.error}")
    if failed:
        return False
    changed = 0
    for r in results:
        findings = [f.render() for f in r.findings]
        result.migration_notes.extend(findings)
        if not r.changed or r.new_text is None:
            continue
        target_file = dest / r.path.resolve().relative_to(project)
        data = textio.encode(r.new_text, r.encoding, r.bom)
        # A copied symlink may point back into PROJECT: replace the link, never write through.
        mode = target_file.stat().st_mode
        target_file.unlink()
        target_file.write_bytes(data)
        os.chmod(target_file, mode & 0o7777)
        result.changed_files.append(str(target_file.relative_to(dest)))
        changed += 1
    if changed == 0:
        result.migration_notes.insert(0, "the migration changed no file")
    else:
        result.migration_notes.insert(0, f"the migration changed {changed} file(s)")
    return True


def run_command(
    label: str,
    source: Path,
    project: Path,
    command: list[str],
    workdir: Path,
    hook_dir: Path,
    seed: int,
    timeout: float,
    extra_env: dict[str, str] | None = None,
) -> Run:
    """Run ``command`` in a fresh copy of ``source`` (so no checkpoint of another run is
    resumed); paths into ``project`` in the command and PYTHONPATH point at the copy.
    ``extra_env``: more variables for the child (the TPU check's)."""
    from est2tpu.runtime import verify_hook

    copy = workdir / project.name
    shutil.copytree(source, copy, symlinks=True, ignore=_ignore_special(_IGNORED))
    (workdir / "tmp").mkdir()
    record = workdir / "record.json"
    argv = [_in_copy(arg, project, copy) for arg in command]
    env = dict(os.environ)
    pythonpath = [
        _in_copy(p, project, copy) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p
    ]
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(hook_dir), *pythonpath]),
            verify_hook.SEED_ENV: str(seed),
            verify_hook.RECORD_ENV: str(record),
            verify_hook.HOOK_DIR_ENV: str(hook_dir),
            verify_hook.PROJECT_ENV: str(copy),
            "PYTHONHASHSEED": str(seed % 4294967296),
            "PYTHONDONTWRITEBYTECODE": "1",
            # Estimators without model_dir train in tempfile.mkdtemp(): one per run.
            "TMPDIR": str(workdir / "tmp"),
            **(extra_env or {}),
        }
    )
    stdout_path, stderr_path = workdir / "stdout.txt", workdir / "stderr.txt"
    start = time.monotonic()
    timed_out = False
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=copy,
                env=env,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            return Run(label, 127, 0.0, None, [f"cannot start {argv[0]}: {exc.strerror}"])
        try:
            returncode: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            returncode = None
        except BaseException:
            _kill_group(proc)  # Ctrl-C: never leave the user's program running
            raise
    seconds = time.monotonic() - start
    data: dict[str, Any] | None = None
    if record.is_file():
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
        except ValueError:
            data = None
    stderr = stderr_path.read_text(encoding="utf-8", errors="replace")
    # The copy is deleted when verify ends: name files by the path the user knows.
    shown = str(project) if source == project else f"<migrated copy of {project}>"
    stderr = stderr.replace(str(copy), shown)
    return Run(label, returncode, seconds, data, _traceback_tail(stderr), timed_out, workdir)


def _ignore_special(
    base: Callable[[str, list[str]], set[str]],
    on_skip: Callable[[str, str], None] | None = None,
) -> Callable[[str, list[str]], set[str]]:
    """``base``, and every name that is not a regular file, directory or symlink (told to
    ``on_skip``)."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        base_out = set(base(directory, names))
        out = set(base_out)
        for name in names:
            try:
                mode = os.lstat(os.path.join(directory, name)).st_mode
            except OSError:
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                out.add(name)
                if on_skip is not None and name not in base_out:
                    on_skip(directory, name)
        return out

    return ignore


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _in_copy(arg: str, project: Path, copy: Path) -> str:
    """A path into PROJECT as the same path in the copy; a path into what is not copied (a
    virtual environment inside PROJECT, its interpreter) and any other argument unchanged."""
    root = str(project)
    if arg == root or arg.startswith(root + os.sep):
        mapped = str(copy) + arg[len(root) :]
        first = Path(arg[len(root) :].lstrip(os.sep)).parts[:1]
        if not first or (copy / first[0]).exists() or not (project / first[0]).exists():
            return mapped
    return arg


def _traceback_tail(stderr: str) -> list[str]:
    """The last lines of the last traceback in ``stderr`` (else of stderr itself)."""
    lines = stderr.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent")]
    if starts:
        lines = lines[starts[-1] :]
    return lines[-_TRACEBACK_LINES:]


def _numbers(value: Any) -> list[float] | None:
    """A metric as a flat list of floats, or None when it is not numeric."""
    if isinstance(value, bool):
        return [float(value)]
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, list):
        out: list[float] = []
        for item in value:
            sub = _numbers(item)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


def difference(a: Any, b: Any) -> float | None:
    """The largest absolute difference between two metrics; None when not comparable."""
    x, y = _numbers(a), _numbers(b)
    if x is None or y is None or len(x) != len(y):
        return None
    if any(math.isnan(p) != math.isnan(q) for p, q in zip(x, y, strict=True)):
        return math.inf
    return max((abs(p - q) for p, q in zip(x, y, strict=True) if not math.isnan(p)), default=0.0)


def _allowed(name: str, value: Any, target: Target) -> float:
    """The difference the target's stated tolerance accepts for one metric."""
    if target is not Target.TF2 or name.endswith("global_step") or name == "final global step":
        return 0.0
    if _ACCURACY_LIKE.search(name):
        return TF2_ABSOLUTE
    numbers = _numbers(value) or [0.0]
    return TF2_RELATIVE * max(abs(n) for n in numbers)


def _compare(result: Verification) -> None:
    """Fill rows, problems and the exit code from the runs."""
    first = result.originals[0]
    if not first.ok:
        result.problems.append(failure_text(first))
        result.exit_code = EXIT_CANNOT_VERIFY
        return
    if first.record is None:
        result.problems.append(
            "the original ran, but the verify hook recorded nothing: COMMAND must start a "
            "Python program (the hook loads through PYTHONPATH's sitecustomize)"
        )
        result.exit_code = EXIT_CANNOT_VERIFY
        return
    if not first.evaluations:
        trained = f" (train() ran {first.trains} time(s))" if first.trains else ""
        result.problems.append(
            "nothing evaluated: the original never called Estimator.evaluate()"
            f"{trained}, so there are no metrics to compare; run a COMMAND that evaluates"
        )
        result.exit_code = EXIT_CANNOT_VERIFY
        return

    shared = _shared_state(result)
    if shared:
        result.problems.extend(shared)
        result.exit_code = EXIT_CANNOT_VERIFY
        return

    baseline = first.metrics
    spreads: dict[str, float] = {}
    for other in result.originals[1:]:
        if not other.ok:
            result.problems.append(failure_text(other) + " (the first run succeeded)")
            continue
        theirs = other.metrics
        for name, value in baseline.items():
            diff = difference(value, theirs.get(name)) if name in theirs else math.inf
            if diff is None:
                diff = 0.0 if value == theirs.get(name) else math.inf
            if diff > 0:
                spreads[name] = max(spreads.get(name, 0.0), diff)
    for name, moved in spreads.items():
        result.nondeterministic.append(
            f"{name}: {format_value(baseline[name])} vs {format_value(_second(result, name))} "
            f"(differs by {moved:.3g})"
        )

    reseeded = _reseeded_spreads(result, baseline)
    migrated = result.migrated
    assert migrated is not None
    ours = migrated.metrics if migrated.record is not None else {}
    disagree = False
    for name, value in baseline.items():
        spread = spreads.get(name)
        allowed = _allowed(name, value, result.target)
        if spread is not None:
            # The program itself moves this much between two runs under the same seeds:
            # the migrated run is held to twice that.
            allowed = max(allowed, 2 * spread)
        if name in reseeded:
            # Other initial values alone move it this much (tf2): twice that, too.
            allowed = max(allowed, 2 * reseeded[name])
        if name not in ours:
            result.rows.append(Row(name, value, None, Verdict.MISSING, allowed, spread))
            disagree = True
            continue
        got = ours[name]
        diff = difference(value, got)
        if value == got:
            verdict = Verdict.EQUAL
        elif diff is not None and diff <= allowed:
            verdict = Verdict.WITHIN
        else:
            verdict = Verdict.DIFFERENT
            disagree = True
        result.rows.append(Row(name, value, got, verdict, allowed, spread))
    for name in sorted(set(ours) - set(baseline)):
        result.rows.append(Row(name, None, ours[name], Verdict.MISSING))
        disagree = True
    if not migrated.ok:
        result.problems.append(failure_text(migrated))
        disagree = True
    elif migrated.evaluations != first.evaluations:
        result.problems.append(
            f"the original called evaluate() {first.evaluations} time(s), the migrated "
            f"program {migrated.evaluations} time(s)"
        )
        disagree = True
    result.exit_code = EXIT_DISAGREE if disagree else EXIT_AGREE


def _reseeded_spreads(result: Verification, baseline: dict[str, Any]) -> dict[str, float]:
    """How far each metric moved in the original run under other TensorFlow seeds (tf2), with
    a line per moved metric in `seed_moved`; a reseeded run that failed is a problem."""
    run = result.reseeded
    if run is None:
        return {}
    if not run.ok:
        result.problems.append(failure_text(run) + " (the first run succeeded)")
        return {}
    moved: dict[str, float] = {}
    theirs = run.metrics
    for name, value in baseline.items():
        if name not in theirs:
            continue
        diff = difference(value, theirs[name])
        if diff is not None and 0 < diff < math.inf:
            moved[name] = diff
            result.seed_moved.append(
                f"{name}: {format_value(value)} vs {format_value(theirs[name])} "
                f"(differs by {diff:.3g})"
            )
    return moved


def _shared_state(result: Verification) -> list[str]:
    """Why the runs may have seen each other's checkpoints: a model_dir outside the run's own
    copy (the same absolute path in every run), or a checkpoint there before the run."""
    out: list[str] = []
    runs = [*result.originals, *([result.migrated] if result.migrated else [])]
    for run in runs:
        if run.record is None or run.workdir is None:
            continue
        own = str(run.workdir.resolve())
        for entry in run.record.get("model_dirs", []):
            path = str(entry.get("path", ""))
            real = os.path.realpath(path)
            if not (real == own or real.startswith(own + os.sep)):
                out.append(
                    f"{run.label} used model_dir {path}, outside its copy of the project: "
                    "every run reads and writes the same checkpoints there, so their results "
                    "cannot be compared; give model_dir as a relative path or a flag that "
                    "COMMAND sets"
                )
            elif entry.get("checkpoint_before"):
                out.append(
                    f"{run.label} started from a checkpoint that was in {path} before it ran "
                    "(copied with the project?): remove it from PROJECT"
                )
    return list(dict.fromkeys(out))


def _second(result: Verification, name: str) -> Any:
    for run in result.originals[1:]:
        if name in run.metrics and run.metrics[name] != result.originals[0].metrics[name]:
            return run.metrics[name]
    return None


def failure_text(run: Run) -> str:
    """Why a run failed: its timeout, or its exit code and the end of its output."""
    if run.timed_out:
        return f"{run.label} timed out after {run.seconds:.0f} s and was stopped"
    tail = "\n".join("    " + line for line in run.stderr_tail)
    return f"{run.label} crashed (exit code {run.returncode}); the end of its output:\n{tail}"


def format_value(value: Any) -> str:
    """A metric as the notes and the table show it."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        text = json.dumps(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return str(value)
