"""Rendering of results for people: diffs, finding and failure lines, summary and rule tables.

Only renders; never writes files and never decides exit codes (that is the CLI's job).
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from rich.table import Table

from est2tpu.ftypes import FileResult, RuleInfo, Status

__all__ = [
    "Summary",
    "failure_line",
    "finding_lines",
    "rule_markdown",
    "rules_table",
    "summary_table",
    "unified_diff",
]

_NO_NEWLINE = "\\ No newline at end of file\n"


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _diff_lines(old: str, new: str, path: str) -> Iterator[str]:
    for line in difflib.unified_diff(_lines(old), _lines(new), f"a/{path}", f"b/{path}"):
        if line.endswith(("\n", "\r")):
            yield line
        else:
            # A last line without a line ending: say so, as git and diff do, so that the
            # diff still applies with `patch`/`git apply`.
            yield line + "\n"
            yield _NO_NEWLINE


def unified_diff(result: FileResult) -> str:
    """The unified diff (``a/``, ``b/`` prefixes) of a result's old and new text; "" if none."""
    old = result.old_text or ""
    new = result.new_text if result.new_text is not None else old
    if old == new:
        return ""
    path = result.path.as_posix()
    return "".join(_diff_lines(old, new, path))


def finding_lines(result: FileResult) -> list[str]:
    """One ``path:line:col: ID message`` line per finding, in position order."""
    path = str(result.path)
    return [
        f"{path}:{f.position.line}:{f.position.column}: {f.rule_id} {f.message}"
        for f in sorted(result.findings, key=lambda f: (f.position, f.rule_id))
    ]


def failure_line(result: FileResult) -> str:
    """``path: error: reason`` for a result that could not be processed."""
    reason = " ".join((result.error or "unknown error").split())
    return f"{result.path}: error: {reason}"


@dataclass
class Summary:
    """Counts over a run, fed one result at a time."""

    scanned: int = 0
    skipped: int = 0
    changed: int = 0
    unchanged: int = 0
    failed: int = 0
    findings: Counter[str] = field(default_factory=Counter)

    def add(self, result: FileResult) -> None:
        """Count one (final) result."""
        self.scanned += 1
        if result.status is Status.SKIPPED:
            self.skipped += 1
        elif result.status is Status.CHANGED:
            self.changed += 1
        elif result.status is Status.FAILED:
            self.failed += 1
        else:
            self.unchanged += 1
        self.findings.update(f.rule_id for f in result.findings)

    @classmethod
    def of(cls, results: Iterable[FileResult]) -> Summary:
        """The summary of several results."""
        summary = cls()
        for result in results:
            summary.add(result)
        return summary

    @property
    def total_findings(self) -> int:
        """Findings over all files and rules."""
        return sum(self.findings.values())


def summary_table(summary: Summary, *, dry_run: bool) -> Table:
    """The end-of-run table; ``dry_run`` says "would change" instead of "changed"."""
    table = Table(title="est2tpu summary", show_header=False, title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("files scanned", str(summary.scanned))
    table.add_row("skipped by pre-filter", str(summary.skipped))
    table.add_row("would change" if dry_run else "changed", str(summary.changed))
    table.add_row("unchanged", str(summary.unchanged))
    table.add_row("failed", str(summary.failed))
    for rule_id, count in sorted(summary.findings.items()):
        table.add_row(f"findings {rule_id}", str(count))
    return table


def rules_table(rules: Iterable[RuleInfo]) -> Table:
    """Every rule: ID, name, safety, targets, summary."""
    table = Table(title="est2tpu rules", title_justify="left")
    # Short columns never wrap; the summary folds (instead of "…") so it is never cut off.
    table.add_column("ID", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("safety", no_wrap=True)
    table.add_column("targets", no_wrap=True)
    table.add_column("summary", overflow="fold")
    for rule in rules:
        table.add_row(
            rule.id,
            rule.name,
            rule.safety.value,
            ", ".join(t.value for t in rule.targets),
            rule.summary,
        )
    return table


def rule_markdown(rule: RuleInfo) -> str:
    """A rule's documentation as one markdown document, headed by its ID and name."""
    meta = f"*{rule.summary}*\n\nSafety: `{rule.safety.value}` · Targets: " + ", ".join(
        f"`{t.value}`" for t in rule.targets
    )
    return f"# {rule.id}: {rule.name}\n\n{meta}\n\n{rule.docs.strip()}\n"
