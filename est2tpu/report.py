"""Rendering of results for people: diffs, finding and failure lines, summary and rule tables.

Only renders; never writes files and never decides exit codes (that is the CLI's job).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from est2tpu import __version__
from est2tpu.ftypes import Edit, FileResult, Finding, RuleInfo, Status

if TYPE_CHECKING:
    from rich.table import Table

# rich's text, urllib and the notebook reader are imported where they are used: a check
# that prints finding lines needs none of them.

__all__ = [
    "FORMATS",
    "Summary",
    "failure_line",
    "finding_lines",
    "github_report",
    "json_report",
    "junit_report",
    "rule_markdown",
    "rules_table",
    "sarif_report",
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
    # An absolute path reads `a/tmp/x.py`, as git spells it, not `a//tmp/x.py`.
    path = result.path.as_posix().lstrip("/")
    return "".join(_diff_lines(old, new, path))


def finding_lines(result: FileResult) -> list[str]:
    """One ``path:line:col: ID message`` line per finding, in position order.

    In a notebook the path names the cell and the line is counted in it:
    ``nb.ipynb:cell 3:5:1: ID message``.
    """
    lines = []
    for f in sorted(result.findings, key=lambda f: (f.position, f.rule_id)):
        loc = finding_location(result, f)
        path = loc.path if loc.cell is None else f"{loc.path}:cell {loc.cell}"
        lines.append(f"{path}:{loc.line}:{loc.column}: {f.rule_id} {f.message}")
    return lines


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
        if result.findings:
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
    from rich.table import Table  # here: `check --quiet` (a pre-commit hook) prints none

    table = Table(title="est2tpu summary", show_header=False, title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("files scanned", str(summary.scanned))
    table.add_row("skipped", str(summary.skipped))
    table.add_row("would change" if dry_run else "changed", str(summary.changed))
    table.add_row("unchanged", str(summary.unchanged))
    table.add_row("failed", str(summary.failed))
    for rule_id, count in sorted(summary.findings.items()):
        table.add_row(f"findings {rule_id}", str(count))
    return table


#: Below this many columns `rules_table` puts each rule's name, safety, targets and summary
#: in one cell (the five-column table leaves the summary a word per line at 80 columns).
RULES_TABLE_WIDE = 110


def rules_table(rules: Iterable[RuleInfo], width: int | None = None) -> Table:
    """Every rule: ID, name, safety, targets, summary; narrower than RULES_TABLE_WIDE
    columns, two columns: the ID, and the rest as one block per rule."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="est2tpu rules", title_justify="left")
    table.add_column("ID", no_wrap=True)
    if width is not None and width < RULES_TABLE_WIDE:
        table.add_column("name · safety · targets / summary", overflow="fold")
        for rule in rules:
            targets = ", ".join(t.value for t in rule.targets)
            head = Text(f"{rule.name} · {rule.safety.value} · {targets}", style="bold")
            table.add_row(rule.id, Text.assemble(head, "\n", rule.summary))
        return table
    # Short columns never wrap; the summary folds (instead of "…") so it is never cut off.
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


def rule_markdown(rule: RuleInfo, example: tuple[str, str, str] | None = None) -> str:
    """A rule's documentation as one markdown document, headed by its ID and name.

    ``example`` is a fixture (case name, before, after); it is appended as a diff.
    """
    meta = f"*{rule.summary}*\n\nSafety: `{rule.safety.value}` · Targets: " + ", ".join(
        f"`{t.value}`" for t in rule.targets
    )
    text = f"# {rule.id}: {rule.name}\n\n{meta}\n\n{rule.docs.strip()}\n"
    if example is not None:
        case, before, after = example
        diff = "".join(_diff_lines(before, after, f"{case}.py"))
        text += (
            f"\n## Example\n\nFrom `fixtures/{rule.id}/{case}.before.py`:\n\n```diff\n{diff}```\n"
        )
    return text


# --- machine-readable reports (check --output-format) ------------------------------------

FORMATS = ("text", "json", "github", "sarif", "junit")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/est2tpu/est2tpu"
_EDIT_CELL = re.compile(r"^cell (\d+): (.*)$", re.DOTALL)


@dataclass(frozen=True)
class Location:
    """Where a finding or edit is: the file, the notebook cell (1-based) if any, line, column."""

    path: str
    cell: int | None
    line: int
    column: int


def finding_location(result: FileResult, finding: Finding) -> Location:
    """A finding's file (notebook findings carry `nb.ipynb:cell N` in their path)."""
    if ":cell " not in finding.path:  # no cell to split off (`cell_of` would say so too)
        return Location(str(result.path), None, finding.position.line, finding.position.column)
    from est2tpu.notebook import cell_of

    path, cell = cell_of(finding.path)
    if path != str(result.path):
        path, cell = str(result.path), None
    return Location(path, cell, finding.position.line, finding.position.column)


def edit_location(result: FileResult, edit: Edit) -> tuple[Location, str]:
    """An edit's location and description (notebook edits start `cell N: `)."""
    cell = None
    description = edit.description
    if result.path.suffix == ".ipynb":
        match = _EDIT_CELL.match(description)
        if match:
            cell, description = int(match.group(1)), match.group(2)
    return Location(str(result.path), cell, edit.position.line, edit.position.column), description


def _display_path(path: str) -> str:
    return Path(path).as_posix() if path != "-" else path


def _in_cell(loc: Location, text: str) -> str:
    return text if loc.cell is None else f"cell {loc.cell}: {text}"


def _summary_dict(summary: Summary) -> dict[str, object]:
    return {
        "files": summary.scanned,
        "skipped": summary.skipped,
        "changed": summary.changed,
        "unchanged": summary.unchanged,
        "failed": summary.failed,
        "findings": dict(sorted(summary.findings.items())),
    }


def json_report(results: Sequence[FileResult], *, with_diff: bool = False) -> str:
    """Every file (status, error, edits), every finding, and the summary, as JSON."""
    files = []
    findings = []
    for result in results:
        edits = []
        for edit in result.edits:
            loc, description = edit_location(result, edit)
            edits.append(
                {
                    "rule": edit.rule_id,
                    "line": loc.line,
                    "column": loc.column,
                    "cell": loc.cell,
                    "description": description,
                }
            )
        entry: dict[str, object] = {
            "path": _display_path(str(result.path)),
            "status": result.status.value,
            "changed": result.changed,
            "error": result.error,
            "edits": edits,
        }
        if with_diff:
            entry["diff"] = unified_diff(result)
        files.append(entry)
        for finding in result.findings:
            loc = finding_location(result, finding)
            findings.append(
                {
                    "path": _display_path(loc.path),
                    "cell": loc.cell,
                    "line": loc.line,
                    "column": loc.column,
                    "rule": finding.rule_id,
                    "message": finding.message,
                    "fixable": finding.fixable,
                }
            )
    doc = {
        "version": 1,
        "tool": {"name": "est2tpu", "version": __version__},
        "files": files,
        "findings": findings,
        "summary": _summary_dict(Summary.of(results)),
    }
    return json.dumps(doc, indent=2) + "\n"


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def _printable(text: str) -> str:
    """``text`` with what no UTF-8 document can hold spelled out: a byte of a file name
    that is not UTF-8 as ``\\xff``, a control character as ``\\x01``."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


# C0 controls but tab and newline, DEL, C1 controls, and what XML 1.0 forbids outright.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff]")


def github_report(results: Sequence[FileResult]) -> str:
    """GitHub Actions workflow commands: an error per file that failed, then a warning per
    finding, then one per rewrite still to make (GitHub shows the first ten warnings of a
    step: the findings, which need a person, come first)."""
    errors, findings, rewrites = [], [], []
    for result in results:
        path = _gh_prop(_printable(_display_path(str(result.path))))
        if result.status is Status.FAILED:
            reason = _printable(" ".join((result.error or "unknown error").split()))
            errors.append(f"::error file={path},title=est2tpu::{_gh_data(reason)}")
            continue
        if result.changed:
            edits = [edit_location(result, e) + (e.rule_id,) for e in result.edits]
            if not edits:
                loc = Location(str(result.path), None, 1, 1)
                edits = [(loc, "would be rewritten by `est2tpu migrate`", "est2tpu")]
            for loc, description, rule_id in edits:
                message = _printable(_in_cell(loc, f"would rewrite: {description}"))
                rewrites.append(
                    f"::warning file={path},line={loc.line},col={loc.column},"
                    f"title={_gh_prop(rule_id)}::{_gh_data(message)}"
                )
        for finding in sorted(result.findings, key=lambda f: (f.position, f.rule_id)):
            loc = finding_location(result, finding)
            message = _printable(_in_cell(loc, finding.message))
            findings.append(
                f"::warning file={path},line={loc.line},col={loc.column},"
                f"title={_gh_prop(finding.rule_id)}::{_gh_data(message)}"
            )
    return "".join(line + "\n" for line in [*errors, *findings, *rewrites])


def _sarif_uri(path: str) -> str:
    """An RFC 3986 URI reference for a file: `file://` for an absolute path, else relative;
    every byte of the name that is not unreserved is percent-encoded (`my%20model.py`,
    `c%231.py`), a name that is not UTF-8 by its own bytes."""
    import urllib.parse

    p = Path(path)
    if p.is_absolute():
        return p.as_uri()
    return urllib.parse.quote(os.fsencode(p.as_posix()), safe="/")


def _sarif_result(
    rule_id: str, index: dict[str, int], level: str, text: str, loc: Location
) -> dict[str, object]:
    result: dict[str, object] = {
        "ruleId": rule_id,
        "level": level,
        "message": {"text": _in_cell(loc, text)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _sarif_uri(loc.path)},
                    "region": {"startLine": loc.line, "startColumn": loc.column},
                }
            }
        ],
    }
    if rule_id in index:
        result["ruleIndex"] = index[rule_id]
    if loc.cell is not None:
        # SARIF has no notion of notebook cells: the region's line is the line in the cell.
        result["properties"] = {"cell": loc.cell}
    return result


def sarif_report(results: Sequence[FileResult], rules: Sequence[RuleInfo]) -> str:
    """SARIF 2.1.0: the catalogue as `tool.driver.rules`, a result per finding and rewrite,
    and a tool execution notification per file that failed."""
    driver_rules = []
    index: dict[str, int] = {}
    for i, rule in enumerate(rules):
        index[rule.id] = i
        full = rule.sections.get("What it does", rule.summary).strip()
        driver_rules.append(
            {
                "id": rule.id,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": full},
                "help": {"text": rule.docs, "markdown": rule.docs},
                "defaultConfiguration": {"level": "warning"},
                "properties": {
                    "safety": rule.safety.value,
                    "targets": [t.value for t in rule.targets],
                },
            }
        )
    sarif_results = []
    notifications = []
    for result in results:
        if result.status is Status.FAILED:
            reason = " ".join((result.error or "unknown error").split())
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": reason},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": _sarif_uri(str(result.path))}
                            }
                        }
                    ],
                }
            )
            continue
        if result.changed:
            for edit in result.edits:
                loc, description = edit_location(result, edit)
                sarif_results.append(
                    _sarif_result(
                        edit.rule_id, index, "warning", f"would rewrite: {description}", loc
                    )
                )
        for finding in sorted(result.findings, key=lambda f: (f.position, f.rule_id)):
            loc = finding_location(result, finding)
            sarif_results.append(
                _sarif_result(finding.rule_id, index, "warning", finding.message, loc)
            )
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "est2tpu",
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": driver_rules,
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not notifications,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": sarif_results,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def junit_report(results: Sequence[FileResult]) -> str:
    """JUnit XML: one testcase per file; a failure for each finding and for a rewrite still
    to make; an error for a file that could not be processed; skipped files marked so."""
    import xml.etree.ElementTree as ET

    suite = ET.Element("testsuite", name="est2tpu")
    counts = Counter[str]()
    for result in results:
        path = _printable(_display_path(str(result.path)))
        case = ET.SubElement(suite, "testcase", classname="est2tpu", name=path, file=path)
        counts["tests"] += 1
        if result.status is Status.FAILED:
            counts["errors"] += 1
            reason = _printable(" ".join((result.error or "unknown error").split()))
            ET.SubElement(case, "error", message=reason, type="FileFailed").text = reason
            continue
        if result.status is Status.SKIPPED:
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message="nothing for est2tpu to do")
            continue
        problems = []
        if result.changed:
            problems.append(("WouldRewrite", "would be rewritten by `est2tpu migrate`"))
            for edit in result.edits:
                loc, description = edit_location(result, edit)
                problems.append(
                    (edit.rule_id, _in_cell(loc, f"{loc.line}:{loc.column}: {description}"))
                )
        for finding in sorted(result.findings, key=lambda f: (f.position, f.rule_id)):
            loc = finding_location(result, finding)
            problems.append(
                (finding.rule_id, _in_cell(loc, f"{loc.line}:{loc.column}: {finding.message}"))
            )
        if problems:
            counts["failures"] += 1
            message = f"{len(result.findings)} finding(s)" + (
                ", would be rewritten" if result.changed else ""
            )
            failure = ET.SubElement(case, "failure", message=message, type="est2tpu")
            failure.text = _printable("\n".join(f"{kind}: {text}" for kind, text in problems))
    for key in ("tests", "failures", "errors", "skipped"):
        suite.set(key, str(counts[key]))
    root = ET.Element("testsuites", name="est2tpu")
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(counts[key]))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
