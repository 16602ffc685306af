"""`verify --tpu`'s findings in the report formats of `est2tpu check` (`est2tpu.report`)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Group, RenderableType
from rich.text import Text

from est2tpu import report
from est2tpu.ftypes import FileResult, Finding, Position, Status, Target
from est2tpu.tpucheck import catalogue
from est2tpu.tpucheck.run import EXIT_ERRORS, EXIT_READY, TpuFinding, TpuVerification

# a train() entry's "xla_step": the step ran, XLA refused it, or it was not made
_XLA_STEP: dict[object, str] = {True: " with one XLA step on CPU", False: " (XLA refused its step)"}


def _message(finding: TpuFinding) -> str:
    return finding.message if finding.severity == "error" else f"warning: {finding.message}"


def file_results(result: TpuVerification) -> list[FileResult]:
    """One `FileResult` per file with findings, paths under PROJECT as the user gave it.

    A finding with no place in the project (TensorFlow raised from outside it) is put on
    PROJECT itself, line 1."""
    by_path: dict[str, list[TpuFinding]] = {}
    for finding in result.findings:
        by_path.setdefault(finding.path, []).append(finding)
    out = []
    for rel, findings in sorted(by_path.items()):
        path = result.project / rel if rel else result.project
        out.append(
            FileResult(
                path=Path(path),
                status=Status.UNCHANGED,
                findings=[
                    Finding(
                        f.id,
                        _message(f),
                        Position(max(f.line, 1), max(f.column, 1)),
                        path=str(path),
                    )
                    for f in findings
                ],
            )
        )
    return out


def formatted(result: TpuVerification, output: str) -> str:
    """The findings as ``json``, ``github``, ``sarif`` or ``junit`` text."""
    results = file_results(result)
    if output == "json":
        return report.json_report(results)
    if output == "github":
        return report.github_report(results)
    if output == "sarif":
        return report.sarif_report(results, list(catalogue.load().values()))
    if output == "junit":
        return report.junit_report(results)
    raise ValueError(f"unknown output format {output!r}")


def render(result: TpuVerification) -> RenderableType:
    """The findings, what was checked, and the verdict, for the terminal."""
    parts: list[RenderableType] = []
    for file_result in file_results(result):
        for line in report.finding_lines(file_result):
            parts.append(Text(line))
    shown = sorted({f.path for f in result.findings} & set(result.migrated_files))
    if shown:
        parts.append(
            Text(
                "lines in "
                + ", ".join(shown)
                + " are lines of the migrated code (`est2tpu migrate` writes it)"
            )
        )
    checked = ", ".join(
        f"{c['call']}()"
        + ("" if c.get("graph") else " (stopped by an error)")
        + _XLA_STEP.get(c.get("xla_step"), "")
        for c in result.checked
    )
    if checked:
        where = (
            "under XLA (the tf2 facade, one step)"
            if result.target is Target.TF2
            else f"on {result.cores} TPU cores (one host)"
        )
        parts.append(Text(f"checked {where}: {checked} in {result.seconds:.1f} s"))
    for note in result.notes:
        parts.append(Text(f"note: {note}"))
    for problem in result.problems:
        parts.append(Text(problem))
    if result.kept is not None:
        parts.append(Text(f"run kept in {result.kept}"))
    errors = len(result.errors)
    warnings = len(result.findings) - errors
    if result.exit_code == EXIT_READY:
        tail = f" ({warnings} warning(s))" if warnings else ""
        parts.append(Text(f"TPU-READY: every check passes{tail}"))
    elif result.exit_code == EXIT_ERRORS:
        parts.append(Text(f"NOT TPU-READY: {errors} error(s), {warnings} warning(s)"))
    else:
        parts.append(Text("CANNOT TELL: see above"))
    return Group(*parts)
