"""The `est2tpu` command line: a thin layer over `est2tpu.api` that writes files and exits."""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.text import Text

from est2tpu import api, report, textio
from est2tpu.discovery import discover
from est2tpu.ftypes import FileResult, MigrationError, Status, Target
from est2tpu.writer import write_atomic

__all__ = ["app", "main"]

#: Exit codes, shared by every command.
EXIT_OK = 0
EXIT_FINDINGS = 1  # something would change (check) or needs manual work
EXIT_ERROR = 2  # usage error, missing path, or a file that could not be processed

#: Show a progress bar only for runs long enough to need one.
PROGRESS_MIN_FILES = 20

app = typer.Typer(
    name="est2tpu",
    help="Migrate TensorFlow Estimator code to Cloud TPU (TPUEstimator or TF2 TPUStrategy).",
    no_args_is_help=True,
    add_completion=False,
    # Markdown mode reflows docstring paragraphs instead of keeping their line breaks.
    rich_markup_mode="markdown",
    # Locals would print users' source code into bug reports.
    pretty_exceptions_show_locals=False,
)


class _Mode(enum.Enum):
    WRITE = "write"
    DIFF = "diff"
    CHECK = "check"


def _stderr() -> Console:
    # Built per command so that the stream (and so TTY/NO_COLOR detection) is the current one.
    return Console(stderr=True, highlight=False)


def _stdout() -> Console:
    return Console(highlight=False)


PathsArg = Annotated[
    list[str],
    typer.Argument(
        help="Files or directories to process; '-' reads source from stdin.",
        metavar="PATH",
        show_default=False,
    ),
]
TargetOpt = Annotated[
    Target,
    typer.Option("--target", "-t", help="What the migrated code is written for."),
]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option(help="Run only these rule IDs or ID prefixes (comma-separated, repeatable)."),
]
IgnoreOpt = Annotated[
    list[str] | None,
    typer.Option(help="Skip these rule IDs or ID prefixes (comma-separated, repeatable)."),
]
ExcludeOpt = Annotated[
    list[str] | None,
    typer.Option(help="Skip files matching this gitignore-style pattern (repeatable)."),
]
NoRuntimeOpt = Annotated[
    bool,
    typer.Option(
        "--no-runtime",
        help="Emit plain TensorFlow (TPU resolution helpers copied into each file) instead "
        "of importing est2tpu.runtime.",
    ),
]
QuietOpt = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="Print only findings and errors, no summary."),
]


@app.command()
def migrate(
    paths: PathsArg,
    target: TargetOpt = Target.TPU_ESTIMATOR,
    diff: Annotated[
        bool, typer.Option("--diff", help="Print unified diffs to stdout and write nothing.")
    ] = False,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    exclude: ExcludeOpt = None,
    no_runtime: NoRuntimeOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Rewrite Estimator code in place (atomically, keeping encoding, line endings and mode).

    With '-', read source from stdin and print the migrated code to stdout.
    Exit 0 when every file was processed and nothing needs manual work, 1 when findings
    remain, 2 when any file could not be processed.
    """
    mode = _Mode.DIFF if diff else _Mode.WRITE
    raise typer.Exit(
        _run(
            paths,
            mode,
            target,
            select,
            ignore,
            exclude,
            quiet,
            show_diff=diff,
            use_runtime=not no_runtime,
        )
    )


@app.command()
def check(
    paths: PathsArg,
    target: TargetOpt = Target.TPU_ESTIMATOR,
    diff: Annotated[
        bool, typer.Option("--diff", help="Also print what would change, as unified diffs.")
    ] = False,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    exclude: ExcludeOpt = None,
    no_runtime: NoRuntimeOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Report what migrate would do, and never write anything (for CI).

    Exit 0 when nothing would change and no finding remains, 1 when something would change
    or a finding remains, 2 on a usage error, a missing path, or a file that could not be
    processed.
    """
    raise typer.Exit(
        _run(
            paths,
            _Mode.CHECK,
            target,
            select,
            ignore,
            exclude,
            quiet,
            show_diff=diff,
            use_runtime=not no_runtime,
        )
    )


@app.command()
def rules() -> None:
    """List every rule: ID, name, safety, targets and summary."""
    _stdout().print(report.rules_table(api.all_rules()))


@app.command()
def explain(
    rule_id: Annotated[str, typer.Argument(help="A rule ID, e.g. TPU001.", show_default=False)],
) -> None:
    """Print a rule's documentation."""
    try:
        info = api.get_rule(rule_id)
    except KeyError:
        _stderr().print(Text(f"error: unknown rule ID {rule_id!r}; `est2tpu rules` lists them all"))
        raise typer.Exit(EXIT_ERROR) from None
    text = report.rule_markdown(info)
    out = _stdout()
    if out.is_terminal:
        out.print(Markdown(text))
    else:
        # Piped: the markdown itself is the most useful form.
        sys.stdout.write(text)


def _split_ids(values: Sequence[str] | None) -> list[str]:
    return [part.strip().upper() for v in values or () for part in v.split(",") if part.strip()]


def _unknown_ids(patterns: Iterable[str]) -> list[str]:
    known = [r.id for r in api.all_rules()]
    return [p for p in patterns if not any(k.startswith(p) for k in known)]


def _run(
    paths: Sequence[str],
    mode: _Mode,
    target: Target,
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    exclude: Sequence[str] | None,
    quiet: bool,
    *,
    show_diff: bool,
    use_runtime: bool = True,
) -> int:
    err = _stderr()
    select_ids = _split_ids(select) if select else None
    ignore_ids = _split_ids(ignore)
    unknown = _unknown_ids([*(select_ids or ()), *ignore_ids])
    if unknown:
        err.print(
            Text(f"error: unknown rule ID(s): {', '.join(unknown)}; `est2tpu rules` lists them")
        )
        return EXIT_ERROR
    if paths.count("-") > 1:
        err.print(Text("error: '-' (stdin) can be given only once"))
        return EXIT_ERROR

    summary = report.Summary()
    if "-" in paths:
        _stdin(
            mode,
            target,
            select_ids,
            ignore_ids,
            summary,
            err,
            show_diff=show_diff,
            use_runtime=use_runtime,
        )
    file_paths = [Path(p) for p in paths if p != "-"]
    if file_paths:
        results = api.migrate_paths(
            file_paths,
            target=target,
            select=select_ids,
            ignore=ignore_ids,
            exclude=list(exclude or ()),
            use_runtime=use_runtime,
        )
        for result in _with_progress(results, file_paths, exclude or (), err):
            _handle(result, mode, err, show_diff=show_diff, quiet=quiet)
            summary.add(result)
            for line in report.finding_lines(result):
                err.out(line, highlight=False)
    if not quiet:
        err.print(report.summary_table(summary, dry_run=mode is not _Mode.WRITE))

    if summary.failed:
        return EXIT_ERROR
    if summary.total_findings:
        return EXIT_FINDINGS
    if mode is _Mode.CHECK and summary.changed:
        return EXIT_FINDINGS
    return EXIT_OK


def _handle(result: FileResult, mode: _Mode, err: Console, *, show_diff: bool, quiet: bool) -> None:
    """Print, and in write mode write, one file's result. A failed write fails the result."""
    if result.status is Status.FAILED:
        err.out(report.failure_line(result), highlight=False)
        return
    if result.status is not Status.CHANGED:
        return
    if show_diff:
        _print_diff(report.unified_diff(result))
    if mode is _Mode.WRITE:
        try:
            _write(result)
        except (OSError, MigrationError) as exc:
            result.status = Status.FAILED
            reason = getattr(exc, "strerror", None) or str(exc)
            result.error = f"cannot write: {reason}"
            err.out(report.failure_line(result), highlight=False)
            return
        if not quiet:
            err.out(f"migrated {result.path}", highlight=False)
    elif mode is _Mode.CHECK and not quiet:
        err.out(f"would migrate {result.path}", highlight=False)


def _write(result: FileResult) -> None:
    assert result.new_text is not None and result.old_text is not None
    old = textio.encode(result.old_text, result.encoding, result.bom)
    # The file may have been edited since it was read; never overwrite someone's edit.
    if result.path.read_bytes() != old:
        raise MigrationError("the file changed on disk during the run; run est2tpu again")
    write_atomic(result.path, textio.encode(result.new_text, result.encoding, result.bom))


def _stdin(
    mode: _Mode,
    target: Target,
    select: list[str] | None,
    ignore: list[str],
    summary: report.Summary,
    err: Console,
    *,
    show_diff: bool,
    use_runtime: bool = True,
) -> None:
    data = sys.stdin.buffer.read()
    try:
        decoded = textio.decode(data)
    except MigrationError as exc:
        result = FileResult(Path("-"), Status.FAILED, error=str(exc))
    else:
        result = api.migrate_source(
            decoded.text,
            target=target,
            path="-",
            select=select,
            ignore=ignore,
            use_runtime=use_runtime,
        )
        result.encoding, result.bom, result.newline = (
            decoded.encoding,
            decoded.bom,
            decoded.newline,
        )
    summary.add(result)
    if result.status is Status.FAILED:
        err.out(report.failure_line(result), highlight=False)
    if show_diff:
        _print_diff(report.unified_diff(result))
    elif mode is _Mode.WRITE:
        # A filter must not swallow its input: on failure the input goes through unchanged.
        if result.status is Status.FAILED or result.new_text is None:
            _write_stdout(data)
        else:
            _write_stdout(textio.encode(result.new_text, result.encoding, result.bom))
    for line in report.finding_lines(result):
        err.out(line, highlight=False)


def _write_stdout(data: bytes) -> None:
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (some embedders); best effort
        sys.stdout.write(data.decode("utf-8", errors="replace"))
    else:
        buffer.write(data)
        buffer.flush()


_DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan"}


def _print_diff(diff: str) -> None:
    if not diff:
        return
    out = _stdout()
    if out.is_terminal and out.color_system is not None and not out.no_color:
        for line in diff.splitlines():
            style = "bold" if line.startswith(("+++", "---")) else _DIFF_STYLES.get(line[:1])
            out.print(Text(line, style=style or ""), soft_wrap=True)
    else:
        # Raw text keeps "\r" and exact bytes, so the diff applies with patch/git apply.
        sys.stdout.write(diff)
        sys.stdout.flush()


def _with_progress(
    results: Iterator[FileResult], paths: Sequence[Path], exclude: Sequence[str], err: Console
) -> Iterator[FileResult]:
    """Pass results through, with a progress bar on a terminal for long runs."""
    if not err.is_terminal:
        yield from results
        return
    # Only on a terminal: walking twice is cheap next to parsing, and a bar needs a total.
    total = sum(1 for _ in discover(paths, exclude=exclude))
    if total <= PROGRESS_MIN_FILES:
        yield from results
        return
    columns = (TextColumn("migrating"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task("files", total=total)
        for result in results:
            yield result
            progress.advance(task)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="est2tpu")
