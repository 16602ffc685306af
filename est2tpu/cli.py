"""The `est2tpu` command line: a thin layer over `est2tpu.api` that writes files and exits."""

from __future__ import annotations

import contextlib
import enum
import json
import os
import signal
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from est2tpu import __version__, api, report, textio
from est2tpu.cache import Cache, default_dir
from est2tpu.catalogue import data_dir
from est2tpu.config import Config, ConfigError, load_for
from est2tpu.discovery import parse_ignore_lines
from est2tpu.ftypes import FileResult, MigrationError, Status, Target
from est2tpu.writer import write_file

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


def _print_version(value: bool) -> None:
    if value:
        _stdout().out(f"est2tpu {__version__}", highlight=False)
        raise typer.Exit(EXIT_OK)


@app.callback()
def _app(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Migrate TensorFlow Estimator code to Cloud TPU (TPUEstimator or TF2 TPUStrategy)."""


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
    Target | None,
    typer.Option(
        "--target",
        "-t",
        help="What the migrated code is written for [default: tpu-estimator, or the config's].",
        show_default=False,
    ),
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
    bool | None,
    typer.Option(
        "--runtime/--no-runtime",
        help="--no-runtime: emit plain TensorFlow (TPU resolution helpers copied into each "
        "file) instead of importing est2tpu.runtime [default: --runtime, or the config's].",
        show_default=False,
    ),
]
QuietOpt = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="Print only findings and errors, no summary."),
]
VerboseOpt = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="Also name every file and its status, and the config."),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="Read [tool.est2tpu] from this file instead of the nearest pyproject.toml.",
        dir_okay=False,
        show_default=False,
    ),
]


NoCacheOpt = Annotated[
    bool,
    typer.Option("--no-cache", help="Neither read nor write the cache of per-file results."),
]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Where to keep the results cache [default: $XDG_CACHE_HOME/est2tpu].",
        file_okay=False,
        show_default=False,
    ),
]


class OutputFormat(str, enum.Enum):
    """How `check` reports (to stdout)."""

    TEXT = "text"
    JSON = "json"
    GITHUB = "github"
    SARIF = "sarif"
    JUNIT = "junit"


@dataclass
class _Options:
    """One run's settings: the command line over the configuration."""

    target: Target
    select: list[str] | None
    ignore: list[str]
    exclude: list[str]
    use_runtime: bool
    config: Config
    quiet: bool = False
    verbose: bool = False
    output: OutputFormat = OutputFormat.TEXT
    cache: bool = True
    cache_dir: Path | None = None


@app.command()
def migrate(
    paths: PathsArg,
    target: TargetOpt = None,
    diff: Annotated[
        bool, typer.Option("--diff", help="Print unified diffs to stdout and change no file.")
    ] = False,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    exclude: ExcludeOpt = None,
    no_runtime: NoRuntimeOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    config: ConfigOpt = None,
    no_cache: NoCacheOpt = False,
    cache_dir: CacheDirOpt = None,
) -> None:
    """Rewrite Estimator code in place (atomically, keeping encoding, line endings and mode).

    With '-', read source from stdin and print the migrated code to stdout.
    Exit 0 when every file was processed and nothing needs manual work, 1 when findings
    remain, 2 when any file could not be processed.
    """
    mode = _Mode.DIFF if diff else _Mode.WRITE
    options = _options(paths, config, target, select, ignore, exclude, no_runtime)
    if options is None:
        raise typer.Exit(EXIT_ERROR)
    options.quiet, options.verbose = quiet, verbose
    options.cache, options.cache_dir = not no_cache, cache_dir
    raise typer.Exit(_run(paths, mode, options, show_diff=diff))


@app.command()
def check(
    paths: PathsArg,
    target: TargetOpt = None,
    diff: Annotated[
        bool,
        typer.Option(
            "--diff", help="Also print what would change, as unified diffs (text and json)."
        ),
    ] = False,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    exclude: ExcludeOpt = None,
    no_runtime: NoRuntimeOpt = None,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    config: ConfigOpt = None,
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--output-format",
            "-f",
            help="Report format on stdout: text (diagnostics on stderr), json, github "
            "(Actions annotations), sarif (2.1.0) or junit (XML).",
        ),
    ] = OutputFormat.TEXT,
    no_cache: NoCacheOpt = False,
    cache_dir: CacheDirOpt = None,
) -> None:
    """Report what migrate would do, and change no file (for CI).

    Exit 0 when nothing would change and no finding remains, 1 when something would change
    or a finding remains, 2 on a usage error, a missing path, or a file that could not be
    processed.
    """
    if diff and output_format not in (OutputFormat.TEXT, OutputFormat.JSON):
        _stderr().print(Text("error: --diff goes with --output-format text or json"))
        raise typer.Exit(EXIT_ERROR)
    options = _options(paths, config, target, select, ignore, exclude, no_runtime)
    if options is None:
        raise typer.Exit(EXIT_ERROR)
    options.quiet, options.verbose, options.output = quiet, verbose, output_format
    options.cache, options.cache_dir = not no_cache, cache_dir
    raise typer.Exit(_run(paths, _Mode.CHECK, options, show_diff=diff))


@app.command()
def rules() -> None:
    """List every rule: ID, name, safety, targets and summary."""
    out = _stdout()
    out.print(report.rules_table(api.all_rules(), width=out.width))


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
    text = report.rule_markdown(info, example=_example(info.id))
    out = _stdout()
    if out.is_terminal:
        # Here, not at the top: rich.markdown and markdown-it cost every run's start.
        from rich.markdown import Markdown

        out.print(Markdown(text))
    else:
        # Piped: the markdown itself is the most useful form.
        sys.stdout.write(text)


@app.command()
def verify(
    project: Annotated[
        Path,
        typer.Argument(
            help="The project directory (never written).", metavar="PROJECT", show_default=False
        ),
    ],
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="The program to run in each copy, after `--`, e.g. -- python train.py.",
            metavar="-- COMMAND...",
            show_default=False,
        ),
    ] = None,
    target: TargetOpt = None,
    python: Annotated[
        str | None,
        typer.Option(
            help="Interpreter in place of COMMAND's: for the migrated copy with --target tf2 "
            "(current TensorFlow), for both copies with --target tpu-estimator and --tpu "
            "[default: COMMAND's].",
            show_default=False,
        ),
    ] = None,
    tpu: Annotated[
        bool,
        typer.Option(
            "--tpu",
            help="Instead of comparing, run the migrated copy once with TPUEstimator's own TPU "
            "path on CPU and report what a TPU would reject (exit 0 TPU-ready, 1 errors, "
            "2 cannot tell).",
        ),
    ] = False,
    tpu_cores: Annotated[int, typer.Option(help="TPU cores on one host, for --tpu.", min=1)] = 8,
    strict_shapes: Annotated[
        bool,
        typer.Option(
            "--strict-shapes",
            help="With --tpu --target tf2: input dimensions unknown at graph time are errors.",
        ),
    ] = False,
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--output-format",
            "-f",
            help="Report format of --tpu on stdout: text, json, github, sarif or junit.",
        ),
    ] = OutputFormat.TEXT,
    runs: Annotated[
        int, typer.Option(help="Runs of the original, to learn whether it is deterministic.")
    ] = 2,
    timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds each run may take [default: 1800; 600 with --tpu].", show_default=False
        ),
    ] = None,
    migrated: Annotated[
        Path | None,
        typer.Option(
            help="Run this already migrated (perhaps hand-edited) tree instead of migrating "
            "PROJECT.",
            file_okay=False,
            show_default=False,
        ),
    ] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the temporary copies and say where.")
    ] = False,
) -> None:
    """Run COMMAND on a copy of PROJECT and on a migrated copy; compare what every
    Estimator train() and evaluate() returned.

    The only command that runs your code. Exit 0 when the results agree, 1 when they
    do not (or the migrated program fails), 2 when it cannot tell (the original fails,
    times out, evaluates nothing or shares state with the other runs; a usage error).

    With --tpu: run the migrated copy once, its TPUEstimator taking its TPU path for
    --tpu-cores cores, and report each problem a TPU would have at your line.
    """
    from est2tpu import verify as verifier

    if tpu:
        from est2tpu.tpucheck import command as tpu_command

        code = tpu_command.main(
            project,
            command or [],
            output_format.value,
            _stdout(),
            _stderr(),
            timeout=timeout,
            cores=tpu_cores,
            target=target,
            python=python,
            migrated_dir=migrated,
            keep=keep,
            strict_shapes=strict_shapes,
        )
        raise typer.Exit(code)
    if output_format is not OutputFormat.TEXT:
        _stderr().print(Text("error: --output-format goes with --tpu"))
        raise typer.Exit(EXIT_ERROR)
    try:
        result = verifier.verify(
            project,
            command or [],
            target=target,
            python=python,
            runs=runs,
            timeout=verifier.DEFAULT_TIMEOUT_S if timeout is None else timeout,
            migrated_dir=migrated,
            keep=keep,
            progress=lambda message: _stderr().out(message, highlight=False),
        )
    except verifier.VerifyError as exc:
        _stderr().print(Text(f"error: {exc}"))
        raise typer.Exit(EXIT_ERROR) from None
    from est2tpu.verify_table import render

    _stdout().print(render(result))
    raise typer.Exit(result.exit_code)


def _example(rule_id: str) -> tuple[str, str, str] | None:
    """The first fixture that shows the rule rewriting: (case name, before, after)."""
    folder = data_dir("fixtures") / rule_id
    for before in sorted(folder.glob("*.before.py")):
        case = before.name[: -len(".before.py")]
        after = folder / f"{case}.after.py"
        if case.startswith(("noop_", "refuse_")) or not after.is_file():
            continue
        return case, before.read_text(encoding="utf-8"), after.read_text(encoding="utf-8")
    return None


def _split_ids(values: Sequence[str] | None) -> list[str]:
    return [part.strip().upper() for v in values or () for part in v.split(",") if part.strip()]


def _unknown_ids(patterns: Iterable[str]) -> list[str]:
    known = [r.id for r in api.all_rules()]
    return [p for p in patterns if not any(k.startswith(p) for k in known)]


def _selected_rules(
    target: Target, select: Sequence[str] | None, ignore: Sequence[str]
) -> list[str]:
    """The IDs a run would apply (the same prefix logic as the engine's `is_selected`)."""
    return [
        r.id
        for r in api.all_rules()
        if target in r.targets
        and (select is None or any(r.id.startswith(p) for p in select))
        and not any(r.id.startswith(p) for p in ignore)
    ]


def _options(
    paths: Sequence[str],
    config_file: Path | None,
    target: Target | None,
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    exclude: Sequence[str] | None,
    runtime: bool | None,
) -> _Options | None:
    """Merge the command line over the configuration; None (after saying why) on an error."""
    err = _stderr()
    try:
        config = load_for(paths, config_file)
    except ConfigError as exc:
        err.print(Text(f"error: {exc}"))
        return None
    select_ids = _split_ids(select) if select else config.select
    ignore_ids = _split_ids(ignore) if ignore else list(config.ignore)
    pfi = [i for ids in config.per_file_ignores.values() for i in ids]
    unknown = _unknown_ids([*(select_ids or ()), *ignore_ids, *pfi])
    if unknown:
        err.print(
            Text(f"error: unknown rule ID(s): {', '.join(unknown)}; `est2tpu rules` lists them")
        )
        return None
    chosen_target = target or config.target or Target.TPU_ESTIMATOR
    if not _selected_rules(chosen_target, select_ids, ignore_ids):
        # A run of no rule would "pass" every check; that is never what was meant.
        chosen = "all rules" if select_ids is None else f"--select {','.join(select_ids)!r}"
        minus = f" minus --ignore {','.join(ignore_ids)!r}" if ignore_ids else ""
        err.print(
            Text(
                f"error: {chosen}{minus} leaves no rule to run for --target "
                f"{chosen_target.value}; `est2tpu rules` lists them"
            ),
            soft_wrap=True,
        )
        return None
    excludes = list(exclude) if exclude else list(config.exclude or ())
    use_runtime = runtime if runtime is not None else config.runtime
    return _Options(
        target=chosen_target,
        select=select_ids,
        ignore=ignore_ids,
        exclude=[*excludes, *config.extend_exclude],
        use_runtime=True if use_runtime is None else use_runtime,
        config=config,
    )


def _force_excluded(path: Path, options: _Options) -> bool:
    """Whether the config's excludes name a file given explicitly (as pre-commit gives them)."""
    config = options.config
    if config.path is None:
        return False
    patterns = parse_ignore_lines([*(config.exclude or ()), *config.extend_exclude], config.root)
    try:
        rel = Path(os.path.abspath(path)).relative_to(config.root)
    except ValueError:
        return False
    parts = rel.parts
    for i in range(1, len(parts) + 1):
        sub = "/".join(parts[:i])
        is_dir = i < len(parts)
        if any(p.matches(sub, is_dir) and not p.negate for p in patterns):
            return True
    return False


def _run(paths: Sequence[str], mode: _Mode, options: _Options, *, show_diff: bool) -> int:
    err = _stderr()
    if paths.count("-") > 1:
        err.print(Text("error: '-' (stdin) can be given only once"))
        return EXIT_ERROR
    if options.cache and options.cache_dir is not None:
        problem = _cache_dir_problem(options.cache_dir, paths)
        if problem is not None:
            err.print(Text(f"error: --cache-dir {options.cache_dir}: {problem}"), soft_wrap=True)
            return EXIT_ERROR
    text = options.output is OutputFormat.TEXT
    if options.verbose and options.config.path is not None:
        err.out(f"config: {options.config.path}", highlight=False)

    summary = report.Summary()
    collected: list[FileResult] = []
    if "-" in paths:
        result = _stdin(mode, options, summary, err, show_diff=show_diff and text)
        collected.append(result)
    file_paths = []
    for p in paths:
        if p == "-":
            continue
        if Path(p).is_file() and _force_excluded(Path(p), options):
            if options.verbose:
                err.out(f"excluded {p} (config)", highlight=False)
            continue
        file_paths.append(Path(p))
    if file_paths:
        config = options.config
        bar = _ProgressBar(err)
        results = api.migrate_paths(
            file_paths,
            target=options.target,
            select=options.select,
            ignore=options.ignore,
            exclude=options.exclude,
            use_runtime=options.use_runtime,
            per_file_ignores=config.ignores_for if config.per_file_ignores else None,
            cache=_cache(options, file_paths),
            progress=bar.show if err.is_terminal else None,
        )
        for result in bar.done_on_first(results):
            _handle(result, mode, err, show_diff=show_diff and text, options=options)
            summary.add(result)
            collected.append(result)
            if text:
                for line in report.finding_lines(result):
                    err.out(line, highlight=False)
    if not text:
        _write_report(collected, options.output, with_diff=show_diff)
    if not options.quiet:
        err.print(report.summary_table(summary, dry_run=mode is not _Mode.WRITE))

    if summary.failed:
        return EXIT_ERROR
    if summary.total_findings:
        return EXIT_FINDINGS
    if mode is _Mode.CHECK and summary.changed:
        return EXIT_FINDINGS
    return EXIT_OK


def _cache_dir_problem(cache_dir: Path, paths: Sequence[str]) -> str | None:
    """Why a --cache-dir cannot be used, or None.

    A symlink would take the cache's writes wherever it points (out of the project); a
    directory that holds a path to migrate would hide it behind the cache's `*` .gitignore.
    """
    if cache_dir.is_symlink():
        return "is a symlink; give the directory it points to, or another one"
    real = os.path.realpath(cache_dir)
    for p in paths:
        if p != "-" and _is_within(os.path.realpath(p), real):
            return f"holds {p}, which is to be migrated; keep the cache in a directory of its own"
    return None


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _cache(options: _Options, roots: Sequence[Path]) -> Cache | None:
    """The results cache for this run's settings, or None with --no-cache."""
    if not options.cache:
        return None
    settings = json.dumps(
        [
            options.target.value,
            None if options.select is None else sorted(options.select),
            sorted(options.ignore),
            options.use_runtime,
        ]
    )
    return Cache(options.cache_dir or default_dir(), settings, roots)


def _write_report(results: list[FileResult], output: OutputFormat, *, with_diff: bool) -> None:
    if output is OutputFormat.JSON:
        rendered = report.json_report(results, with_diff=with_diff)
    elif output is OutputFormat.GITHUB:
        rendered = report.github_report(results)
    elif output is OutputFormat.SARIF:
        rendered = report.sarif_report(results, api.all_rules())
    else:
        rendered = report.junit_report(results)
    sys.stdout.write(rendered)
    sys.stdout.flush()


def _handle(
    result: FileResult, mode: _Mode, err: Console, *, show_diff: bool, options: _Options
) -> None:
    """Print, and in write mode write, one file's result. A failed write fails the result."""
    quiet = options.quiet or options.output is not OutputFormat.TEXT
    if result.status is Status.FAILED:
        err.out(report.failure_line(result), highlight=False)
        return
    if result.status is not Status.CHANGED:
        if options.verbose:
            err.out(f"{result.status.value} {result.path}", highlight=False)
        return
    if show_diff:
        _print_diff(result)
    if mode is _Mode.WRITE:
        try:
            lost = _write(result)
        except (OSError, MigrationError) as exc:
            result.status = Status.FAILED
            reason = getattr(exc, "strerror", None) or str(exc)
            result.error = f"cannot write: {reason}"
            err.out(report.failure_line(result), highlight=False)
            return
        if lost:
            # Said even with --quiet: the file is migrated, but not all of it was kept.
            err.out(f"migrated {result.path} ({'; '.join(lost)})", highlight=False)
        elif not quiet:
            err.out(f"migrated {result.path}", highlight=False)
    elif mode is _Mode.CHECK and not quiet:
        err.out(f"would migrate {result.path}", highlight=False)


def _write(result: FileResult) -> list[str]:
    """Write one migrated file; what of its metadata could not be kept."""
    assert result.new_text is not None and result.old_text is not None
    old = textio.encode(result.old_text, result.encoding, result.bom)
    # The file may have been edited since it was read; never overwrite someone's edit.
    if result.path.read_bytes() != old:
        raise MigrationError("the file changed on disk during the run; run est2tpu again")
    new = textio.encode(result.new_text, result.encoding, result.bom)
    return write_file(result.path, new).lost


def _stdin(
    mode: _Mode, options: _Options, summary: report.Summary, err: Console, *, show_diff: bool
) -> FileResult:
    data = sys.stdin.buffer.read()
    try:
        decoded = textio.decode(data)
    except MigrationError as exc:
        result = FileResult(Path("-"), Status.FAILED, error=str(exc))
    else:
        result = api.migrate_source(
            decoded.text,
            target=options.target,
            path="-",
            select=options.select,
            ignore=options.ignore,
            use_runtime=options.use_runtime,
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
        _print_diff(result)
    elif mode is _Mode.WRITE:
        # A filter must not swallow its input: on failure the input goes through unchanged.
        if result.status is Status.FAILED or result.new_text is None:
            _write_stdout(data)
        else:
            _write_stdout(textio.encode(result.new_text, result.encoding, result.bom))
    if options.output is OutputFormat.TEXT:
        for line in report.finding_lines(result):
            err.out(line, highlight=False)
    return result


def _write_stdout(data: bytes) -> None:
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (some embedders); best effort
        sys.stdout.write(data.decode("utf-8", errors="replace"))
    else:
        buffer.write(data)
        buffer.flush()


_DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan"}


def _print_diff(result: FileResult) -> None:
    diff = report.unified_diff(result)
    if not diff:
        return
    out = _stdout()
    if out.is_terminal and out.color_system is not None and not out.no_color:
        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        for line in diff.splitlines():
            # A file name that is not valid in the terminal's encoding must not end the run.
            line = line.encode(encoding, "replace").decode(encoding)
            style = "bold" if line.startswith(("+++", "---")) else _DIFF_STYLES.get(line[:1])
            out.print(Text(line, style=style or ""), soft_wrap=True)
    else:
        # Bytes, so that the diff applies with patch/git apply: "\r" kept, file names as the
        # filesystem spells them, code in the file's own encoding (whatever stdout's is).
        _write_stdout(_diff_bytes(diff, result.encoding))


def _diff_bytes(diff: str, encoding: str) -> bytes:
    lines = diff.splitlines(keepends=True)
    out = [line.encode(sys.getfilesystemencoding(), "surrogateescape") for line in lines[:2]]
    for line in lines[2:]:
        try:
            out.append(line.encode(encoding, "surrogateescape"))
        except (UnicodeEncodeError, LookupError):
            out.append(line.encode("utf-8", "backslashreplace"))
    return b"".join(out)


class _ProgressBar:
    """A progress bar on a terminal that moves through a run's stages (scanning, indexing,
    rewriting), shown only for runs long enough to need one."""

    def __init__(self, err: Console) -> None:
        self.err = err
        self.bar: Any = None  # a rich Progress, built when first shown
        self.task: Any = None
        self.started = False
        self.wanted: bool | None = None  # decided by the number of files found

    def show(self, stage: str, done: int, total: int) -> None:
        """`api.migrate_paths`'s progress callback."""
        if self.wanted is None:
            self.wanted = total > PROGRESS_MIN_FILES
        if not self.wanted:
            return
        if self.bar is None:
            # Imported here: a run that shows no bar (not a terminal) never loads it.
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            columns = (TextColumn("{task.description:>9}"), BarColumn(), MofNCompleteColumn())
            self.bar = Progress(*columns, console=self.err, transient=True)
            self.task = self.bar.add_task("", total=None)
        if not self.started:
            self.bar.start()
            self.started = True
        changed = stage != self.bar.tasks[0].description
        self.bar.update(self.task, description=stage, completed=done, total=total)
        if changed:  # every stage is drawn, however short (the bar redraws 10 times a second)
            self.bar.refresh()

    def done_on_first(self, results: Iterator[FileResult]) -> Iterator[FileResult]:
        """Pass results through; the bar goes when the first arrives (the work is done by
        then: results come in a fixed order once every file is migrated)."""
        try:
            for result in results:
                self.stop()
                yield result
        finally:
            self.stop()

    def stop(self) -> None:
        if self.started:
            self.bar.stop()
            self.started = False
        self.wanted = False


class _Interrupted(BaseException):
    """Ctrl-C or SIGTERM, kept apart from the KeyboardInterrupt that the CLI framework turns
    into exit 1."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum: int, frame: object) -> None:
    raise _Interrupted(signum)


class _PipeSafe:
    """A stream that, once its reader has gone (a closed pipe: `est2tpu migrate . | head`),
    drops further output instead of failing: the run goes on, so that the project is not
    left half-migrated because nobody reads the report."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._gone = False

    def _reader_gone(self) -> None:
        self._gone = True
        # Whatever is still buffered would fail again when Python flushes at exit.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def write(self, data: Any) -> int:
        if not self._gone:
            try:
                return int(self._stream.write(data))
            except BrokenPipeError:
                self._reader_gone()
        return len(data)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    @property
    def buffer(self) -> _PipeSafe:
        return _PipeSafe(self._stream.buffer) if not self._gone else self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


#: The signals that stop a run between two writes (each write holds them until it is done).
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def main() -> None:
    """Console-script entry point."""
    previous = {sig: signal.signal(sig, _on_signal) for sig in _STOP_SIGNALS}
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _PipeSafe(sys.stdout), _PipeSafe(sys.stderr)
    try:
        app(prog_name="est2tpu")
    except _Interrupted as stop:
        # Every file is whole (the writer holds these signals during a write); exit the way
        # shells expect after a signal.
        what = "interrupted" if stop.signum == signal.SIGINT else "terminated"
        sys.stderr.write(f"est2tpu: {what}; every file written so far is complete\n")
        raise SystemExit(128 + stop.signum) from None
    finally:
        sys.stdout, sys.stderr = streams
        for sig, handler in previous.items():
            signal.signal(sig, handler)
