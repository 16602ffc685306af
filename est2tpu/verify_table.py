"""The table `est2tpu verify` prints: a column per run when the terminal holds it, else a line
per run and metric; numbers are never cut."""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from est2tpu.verify import (
    EXIT_AGREE,
    EXIT_DISAGREE,
    Run,
    Verdict,
    Verification,
    difference,
    format_value,
)

__all__ = ["render"]


def _cell(value: Any) -> str:
    """A metric for the table: a float to 12 significant digits (the verdict column tells
    equal from different exactly), anything else as `format_value` writes it."""
    if isinstance(value, float) and len(repr(value)) > 14:
        return f"{value:.12g}"
    return format_value(value)


def _exit_text(run: Run | None) -> str:
    if run is None:
        return "not run"
    if run.timed_out:
        return "timed out"
    return str(run.returncode)


def _wide_table(
    title: str, labels: list[str], rows: list[list[str]], footer: list[list[str]]
) -> Table:
    """A column per run."""
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    for i, label in enumerate(labels, 1):
        # A column never narrower than its longest word: numbers are never cut mid-digit.
        widest = max((len(word) for r in rows + footer for word in r[i].split()), default=1)
        table.add_column(label, justify="right", overflow="fold", min_width=widest)
    table.add_column("result")
    for cells in rows:
        table.add_row(*cells)
    if rows:
        table.add_section()
    for cells in footer:
        table.add_row(*cells)
    return table


def _long_table(
    title: str, labels: list[str], rows: list[list[str]], footer: list[list[str]]
) -> Table:
    """A line per run and metric, for a terminal too narrow for `_wide_table`."""
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("run")
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("result")
    for cells in rows + footer:
        for i, label in enumerate(labels, 1):
            first = i == 1
            table.add_row(cells[0] if first else "", label, cells[i], cells[-1] if first else "")
        table.add_section()
    return table


class _Fitting:
    """The wide table when the terminal holds it, else the long one."""

    def __init__(self, wide: Table, long: Table, cells: list[list[str]]) -> None:
        self.wide, self.long = wide, long
        # Every column as wide as its longest word, its padding, and the borders.
        columns = zip(*cells, strict=True) if cells else []
        words = [
            max((len(w) for cell in column for w in cell.split()), default=1) for column in columns
        ]
        self.needed = sum(width + 2 for width in words) + len(words) + 1

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.wide if self.needed <= options.max_width else self.long


def render(result: Verification) -> RenderableType:
    """The table and the verdict, for the terminal."""
    others = result.originals[1:]
    rows: list[list[str]] = []
    for row in result.rows:
        cells = [row.name, _cell(row.original)]
        cells += [_cell(run.metrics.get(row.name)) for run in others]
        verdict = row.verdict.value
        if row.verdict is Verdict.WITHIN:
            verdict += f" (±{row.allowed:.3g})"
        elif row.verdict is Verdict.DIFFERENT:
            moved = difference(row.original, row.migrated)
            if moved is not None:
                verdict += f" (by {moved:.3g})"
        rows.append([*cells, _cell(row.migrated), verdict])
    labels = [run.label for run in result.originals] + ["migrated"]
    footer = [
        [
            "exit code",
            *[_exit_text(run) for run in result.originals],
            _exit_text(result.migrated),
            "",
        ],
        [
            "wall time",
            *[f"{run.seconds:.1f} s" for run in result.originals],
            f"{result.migrated.seconds:.1f} s" if result.migrated else "-",
            "",
        ],
    ]
    title = f"est2tpu verify (target {result.target.value})"
    header = ["metric", *labels, "result"]
    table = _Fitting(
        _wide_table(title, labels, rows, footer),
        _long_table(title, labels, rows, footer),
        [header, *rows, *footer],
    )
    parts: list[RenderableType] = [table]
    for note in result.migration_notes:
        parts.append(Text(f"migration: {note}"))
    if result.nondeterministic:
        parts.append(
            Text(
                "non-deterministic: the original's own runs differ under the same seeds "
                "(compared with twice that difference as tolerance):\n  "
                + "\n  ".join(result.nondeterministic)
            )
        )
    elif len(result.originals) > 1 and all(r.ok for r in result.originals) and result.rows:
        parts.append(Text(f"deterministic: the original's {len(result.originals)} runs agree"))
    if result.seed_moved:
        parts.append(
            Text(
                "initial values: under other TensorFlow seeds (current TensorFlow draws other "
                "initial values than TF 2.15) the original's metrics move (compared with twice "
                "that difference as tolerance):\n  " + "\n  ".join(result.seed_moved)
            )
        )
    elif result.reseeded is not None and result.reseeded.ok:
        parts.append(
            Text("initial values: the original's metrics stay under other TensorFlow seeds")
        )
    for problem in result.problems:
        parts.append(Text(problem))
    if result.kept is not None:
        parts.append(Text(f"runs kept in {result.kept}"))
    if result.exit_code == EXIT_AGREE:
        parts.append(Text("AGREE: the migrated program gives the original's results"))
    elif result.exit_code == EXIT_DISAGREE:
        parts.append(Text("DISAGREE: the migrated program does not give the original's results"))
    else:
        parts.append(Text("CANNOT VERIFY: see above"))
    return Group(*parts)
