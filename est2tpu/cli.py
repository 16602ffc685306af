"""The `est2tpu` command line: a thin layer over `est2tpu.api` that writes files and exits."""

from __future__ import annotations

import enum
import json
import signal
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

from est2tpu import __version__, api, nbdiff, report, scope, streams, textio
from est2tpu.cache import Cache, default_dir
from est2tpu.catalogue import data_dir
from est2tpu.config import Config, ConfigError, load_for
from est2tpu.console import LazyConsole
from est2tpu.ftypes import FileResult, MigrationError, Status, Target
from est2tpu.nbdiff import NotebookDiff
from est2tpu.streams import PROGRESS_MIN_FILES, ProgressBar, SafeStream, usable
from est2tpu.writer import write_file

__all__ = ["PROGRESS_MIN_FILES", "app", "main"]

#: Exit codes, shared by every command.
EXIT_OK = 0
EXIT_FINDINGS = 1  # something would change (check) or needs manual work
EXIT_ERROR = 2  # usage error, missing path, or a file that could not be processed

app = typer.Typer(
    name="est2tpu",
    help="Migrate TensorFlow Estimator code to Cloud TPU (TPUEstimator or TF2 TPUStrategy).",
    no_args_is_help=True,
    add_completion=False,
    # Markdown mode reflows docstring paragraphs instead of keeping their line breaks.
    rich_markup_mode="markdown",
    # Locals would print users' source code into bug reports.
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
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


def _stderr() -> LazyConsole:
    # Built per command so that the stream (and so TTY/NO_COLOR detection) is the current one.
    return LazyConsole(stderr=True)


def _error(message: str) -> None:
    """A usage or config error: one line on stderr, never wrapped."""
    _stderr().out(f"error: {' '.join(message.split())}", highlight=False)


def _stdout() -> LazyConsole:
    return LazyConsole()


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
        metavar="FILE",
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
        help="Where to keep the results cache [default: est2tpu in $XDG_CACHE_HOME, or in "
        "~/.cache].",
        metavar="DIR",
        file_okay=False,
        show_default=False,
    ),
]
NotebookDiffOpt = Annotated[
    NotebookDiff,
    typer.Option(
        "--notebook-diff",
        help="How --diff shows a notebook: cells (each changed cell's source lines) or json "
        "(the diff of the file itself, which git apply applies).",
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
    exclude: list[str]  # --exclude: gitignore lines matched from each path and from here
    replaced: bool  # --exclude replaces the config's `exclude`
    use_runtime: bool
    config: Config
    quiet: bool = False
    verbose: bool = False
    output: OutputFormat = OutputFormat.TEXT
    cache: bool = True
    cache_dir: Path | None = None
    notebook_diff: NotebookDiff = NotebookDiff.CELLS
    given: list[Path] = field(default_factory=list)  # the paths named, stdin aside


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
    notebook_diff: NotebookDiffOpt = NotebookDiff.CELLS,
) -> None:
    """Rewrite Estimator code in place (atomically, keeping encoding, line endings and mode).

    With '-', read source from stdin and print the migrated code to stdout.
    Exit 0 when every file was processed and nothing needs manual work, 1 when findings
    remain (with --diff, also when a file would change), 2 when any file could not be
    processed.
    """
    mode = _Mode.DIFF if diff else _Mode.WRITE
    options = _options(paths, config, target, select, ignore, exclude, no_runtime)
    if options is None:
        raise typer.Exit(EXIT_ERROR)
    options.quiet, options.verbose = quiet, verbose
    options.cache, options.cache_dir = not no_cache, cache_dir
    options.notebook_diff = notebook_diff
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
    notebook_diff: NotebookDiffOpt = NotebookDiff.CELLS,
) -> None:
    """Report what migrate would do, and change no file (for CI).

    Exit 0 when nothing would change and no finding remains, 1 when something would change
    or a finding remains, 2 on a usage error, a missing path, or a file that could not be
    processed.
    """
    if diff and output_format not in (OutputFormat.TEXT, OutputFormat.JSON):
        _error("--diff goes with --output-format text or json")
        raise typer.Exit(EXIT_ERROR)
    options = _options(paths, config, target, select, ignore, exclude, no_runtime)
    if options is None:
        raise typer.Exit(EXIT_ERROR)
    options.quiet, options.verbose, options.output = quiet, verbose, output_format
    options.cache, options.cache_dir = not no_cache, cache_dir
    options.notebook_diff = notebook_diff
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
        _error(f"unknown rule ID {rule_id!r}; `est2tpu rules` lists them all")
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
            _stdout().rich,
            _stderr().rich,
            timeout=timeout,
            cores=tpu_cores,
            target=target,
            python=python,
            migrated_dir=migrated,
            keep=keep,
            strict_shapes=strict_shapes,
        )
        raise typer.Exit(code)
    from rich.text import Text

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
    try:
        config = load_for(paths, config_file)
    except ConfigError as exc:
        _error(str(exc))
        return None
    select_ids = _split_ids(select) if select else config.select
    ignore_ids = _split_ids(ignore) if ignore else list(config.ignore)
    pfi = [i for ids in config.per_file_ignores.values() for i in ids]
    unknown = _unknown_ids([*(select_ids or ()), *ignore_ids, *pfi])
    if unknown:
        _error(f"unknown rule ID(s): {', '.join(unknown)}; `est2tpu rules` lists them")
        return None
    chosen_target = target or config.target or Target.TPU_ESTIMATOR
    if not _selected_rules(chosen_target, select_ids, ignore_ids):
        # A run of no rule would "pass" every check; that is never what was meant.
        chosen = "all rules" if select_ids is None else f"--select {','.join(select_ids)!r}"
        minus = f" minus --ignore {','.join(ignore_ids)!r}" if ignore_ids else ""
        _error(
            f"{chosen}{minus} leaves no rule to run for --target "
            f"{chosen_target.value}; `est2tpu rules` lists them"
        )
        return None
    use_runtime = runtime if runtime is not None else config.runtime
    return _Options(
        target=chosen_target,
        select=select_ids,
        ignore=ignore_ids,
        exclude=list(exclude or ()),
        replaced=bool(exclude),
        use_runtime=True if use_runtime is None else use_runtime,
        config=config,
    )


def _run(paths: Sequence[str], mode: _Mode, options: _Options, *, show_diff: bool) -> int:
    err = _stderr()
    if paths.count("-") > 1:
        _error("'-' (stdin) can be given only once")
        return EXIT_ERROR
    if options.cache and options.cache_dir is not None:
        problem = scope.cache_dir_problem(options.cache_dir, paths)
        if problem is not None:
            _error(f"--cache-dir {options.cache_dir}: {problem}")
            return EXIT_ERROR
    text = options.output is OutputFormat.TEXT
    if options.verbose and options.config.path is not None:
        err.out(f"config: {options.config.path}", highlight=False)

    summary = report.Summary()
    collected: list[FileResult] = []
    if "-" in paths:
        result = _stdin(mode, options, err, show_diff=show_diff and text)
        summary.add(result)
        collected.append(result)
    file_paths = []
    for p in paths:
        if p == "-":
            continue
        if Path(p).is_file() and options.config.excludes(Path(p), options.replaced):
            if options.verbose:
                err.out(f"excluded {p} (config)", highlight=False)
            continue
        file_paths.append(Path(p))
    options.given = file_paths
    if file_paths:
        for result in _results(file_paths, mode, options, err):
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
    if mode is not _Mode.WRITE and summary.changed:
        # `check`, and `migrate --diff` as ruff and pyupgrade treat --diff: a check.
        return EXIT_FINDINGS
    return EXIT_OK


def _results(
    given: list[Path], mode: _Mode, options: _Options, err: LazyConsole
) -> Iterator[FileResult]:
    """The results of the files given. A file named on its own is migrated with the project
    around it (read, never reported nor written), so that what it imports is known; a
    named file whose migration goes with a file that is not named and would change too is
    not written."""
    named = [p for p in given if not p.is_dir()]
    config_root = options.config.root if options.config.path is not None else None
    context = [p for p in scope.around(named, config_root) if p not in given]
    if options.verbose:
        for path in context:
            err.out(f"project: {path} (read, not reported, for the files named)", highlight=False)
    config = options.config
    bar = ProgressBar(err.rich) if err.is_terminal else None  # drawn on a terminal only
    results: Iterator[FileResult] = api.migrate_paths(
        [*given, *context],
        target=options.target,
        select=options.select,
        ignore=options.ignore,
        exclude=[*options.exclude, *config.exclude_patterns(options.replaced)],
        use_runtime=options.use_runtime,
        per_file_ignores=config.ignores_for if config.per_file_ignores else None,
        cache=_cache(options, [*given, *context]),
        progress=bar.show if bar is not None else None,
    )
    if bar is not None:
        results = bar.done_on_first(results)
    if not context:
        yield from results
        return
    mine: list[FileResult] = []
    around: list[FileResult] = []
    for result in results:
        path = result.path
        inside = path in named or any(root in path.parents for root in given if root.is_dir())
        (mine if inside else around).append(result)
    pending = [r for r in around if r.changed]
    for result in mine:
        other = next((o for o in pending if scope.related(result, o)), None)
        if mode is _Mode.WRITE and result.changed and other is not None:
            result.status, result.new_text = Status.FAILED, result.old_text
            result.error = (
                f"not written: its migration goes with {other.path}, which is not named and "
                "would change too; name both, or migrate the directory"
            )
        yield result


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
    # Every format is a UTF-8 document, whatever the locale says stdout's encoding is.
    streams.write_stdout(rendered.encode("utf-8", "backslashreplace"))


def _handle(
    result: FileResult, mode: _Mode, err: LazyConsole, *, show_diff: bool, options: _Options
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
        streams.print_diff(nbdiff.diff(result, options.notebook_diff), result.encoding, _stdout())
    if mode is _Mode.WRITE:
        try:
            lost = _write(result, scope.trees(result.path, options.given))
        except (OSError, MigrationError) as exc:
            result.status = Status.FAILED
            if isinstance(exc, OSError):
                result.error = f"cannot write: {exc.strerror or exc}"
            else:
                result.error = str(exc)
            err.out(report.failure_line(result), highlight=False)
            return
        if lost:
            # Said even with --quiet: the file is migrated, but not all of it was kept.
            err.out(f"migrated {result.path} ({'; '.join(lost)})", highlight=False)
        elif not quiet:
            err.out(f"migrated {result.path}", highlight=False)
    elif mode is _Mode.CHECK and options.output is OutputFormat.TEXT:
        # Said even with --quiet: a check that fails names what fails it.
        err.out(f"would migrate {result.path}", highlight=False)


def _write(result: FileResult, trees: Sequence[str]) -> list[str]:
    """Write one migrated file; what of its metadata could not be kept."""
    assert result.new_text is not None and result.old_text is not None
    old = textio.encode(result.old_text, result.encoding, result.bom)
    new = textio.encode(result.new_text, result.encoding, result.bom)
    # The file may have been edited since it was read: never overwrite someone's edit.
    return write_file(result.path, new, expected=old, trees=trees).lost


def _stdin(mode: _Mode, options: _Options, err: LazyConsole, *, show_diff: bool) -> FileResult:
    data = sys.stdin.buffer.read()
    try:
        decoded = None if streams.is_notebook(data) else textio.decode(data)
    except MigrationError as exc:
        result = FileResult(Path("-"), Status.FAILED, error=str(exc))
    else:
        if decoded is None:
            result = api.migrate_notebook(
                data,
                target=options.target,
                path="-",
                select=options.select,
                ignore=options.ignore,
                use_runtime=options.use_runtime,
            )
        else:
            result = api.migrate_source(
                decoded.text,
                target=options.target,
                path="-",
                select=options.select,
                ignore=options.ignore,
                use_runtime=options.use_runtime,
            )
            result.encoding, result.bom = decoded.encoding, decoded.bom
            result.newline = decoded.newline
    if result.status is Status.FAILED:
        err.out(report.failure_line(result), highlight=False)
    elif result.changed and mode is _Mode.CHECK and options.output is OutputFormat.TEXT:
        err.out("would migrate -", highlight=False)
    if show_diff:
        streams.print_diff(nbdiff.diff(result, options.notebook_diff), result.encoding, _stdout())
    elif mode is _Mode.WRITE:
        # A filter must not swallow its input: on failure the input goes through unchanged.
        if result.status is Status.FAILED or result.new_text is None:
            streams.write_stdout(data)
        else:
            streams.write_stdout(textio.encode(result.new_text, result.encoding, result.bom))
    if options.output is OutputFormat.TEXT:
        for line in report.finding_lines(result):
            err.out(line, highlight=False)
    return result


class _Interrupted(BaseException):
    """Ctrl-C or SIGTERM, kept apart from the KeyboardInterrupt that the CLI framework turns
    into exit 1."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum: int, frame: object) -> None:
    raise _Interrupted(signum)


#: The signals that stop a run between two writes (each write holds them until it is done).
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


#: The command-line framework's own error class (click's, or the copy typer vendors).
_CLICK_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)


def _invoke() -> int:
    """Run the app; its exit code. A usage error is one line (`error: ...`) on stderr
    unless stderr is a terminal, where the framework shows it with its usage line."""
    try:
        done = app(prog_name="est2tpu", standalone_mode=False)
    except _CLICK_ERROR as exc:
        if sys.stderr.isatty() or type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # type: ignore[attr-defined]
        else:
            message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
            ctx = getattr(exc, "ctx", None)
            hint = f" (`{ctx.command_path} -h` for help)" if ctx is not None else ""
            sys.stderr.write(f"error: {message}{hint}\n")
        return int(getattr(exc, "exit_code", EXIT_ERROR))
    return done if isinstance(done, int) else EXIT_OK


def main() -> None:
    """Console-script entry point."""
    previous = {sig: signal.signal(sig, _on_signal) for sig in _STOP_SIGNALS}
    streams = sys.stdout, sys.stderr
    out, sys.stderr = SafeStream(usable(sys.stdout)), SafeStream(usable(sys.stderr))
    sys.stdout = out
    try:
        code = _invoke()
        if out.lost is not None:
            # The output was the point of the run (migrated code, a diff, a report).
            sys.stderr.write(f"est2tpu: error: cannot write the output: {out.lost}\n")
            code = EXIT_ERROR
        raise SystemExit(code)
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
