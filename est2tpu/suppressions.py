"""Suppression comments: `# est2tpu: ignore[ID,...]`, `# est2tpu: ignore`, `# est2tpu: skip-file`.

Suppressions only silence findings (like ruff's `noqa`); they never stop a rewrite.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from est2tpu.ftypes import Finding, Position

__all__ = ["UNUSED_ID", "Suppression", "apply", "find", "skips_file"]

#: The engine-level ID of an unused suppression (catalogue entry `rules/E2T001.md`).
UNUSED_ID = "E2T001"

#: `# est2tpu: skip-file` counts only in a file's first lines, as a header.
SKIP_FILE_LINES = 10

_IGNORE = re.compile(r"#\s*est2tpu:\s*ignore(?:\[(?P<ids>[^\]]*)\])?(?![\w-])", re.IGNORECASE)
_SKIP_FILE = re.compile(r"#\s*est2tpu:\s*skip-file\b", re.IGNORECASE)


@dataclass(frozen=True)
class Suppression:
    """One ignore comment: the line it silences, and the IDs (None: every ID)."""

    line: int  # the line whose findings it silences
    position: Position  # where the comment itself is
    ids: tuple[str, ...] | None
    text: str  # the comment as written, for messages


def skips_file(text: str) -> bool:
    """Whether `# est2tpu: skip-file` appears in one of the first ten lines."""
    if _SKIP_FILE.search(text) is None:  # nowhere, so in no line (without the split)
        return False
    head = text.splitlines()[:SKIP_FILE_LINES]
    return any(_SKIP_FILE.search(line) for line in head)


def _comments(text: str) -> Iterable[tuple[int, int, str, bool]]:
    """(line, column, comment, alone on its line) for every comment in ``text``."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        # Not tokenizable (the caller will fail on parse anyway): fall back to a line scan.
        for number, line in enumerate(text.splitlines(), 1):
            at = line.find("#")
            if at >= 0:
                yield number, at, line[at:], not line[:at].strip()
        return
    lines = text.splitlines()
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            alone = not lines[row - 1][:col].strip() if row - 1 < len(lines) else True
            yield row, col, tok.string, alone


def find(text: str) -> list[Suppression]:
    """Every ignore comment in ``text``.

    A comment trailing code silences its own line; a comment alone on a line silences the
    next line (and its own, harmlessly).
    """
    found: list[Suppression] = []
    if _IGNORE.search(text) is None:
        return found  # tokenizing a 45,000-line module to find no comment took seconds
    for line, col, comment, alone in _comments(text):
        match = _IGNORE.search(comment)
        if match is None:
            continue
        raw = match.group("ids")
        ids = (
            None
            if raw is None
            else tuple(part.strip().upper() for part in raw.split(",") if part.strip())
        )
        found.append(
            Suppression(
                line=line + 1 if alone else line,
                position=Position(line, col + 1 + match.start()),
                ids=ids or None,
                text=match.group(0),
            )
        )
    return found


def apply(
    findings: Iterable[Finding],
    suppressions: Iterable[Suppression],
    *,
    enabled: Callable[[str], bool],
    path: str = "-",
) -> list[Finding]:
    """Drop suppressed findings; add an ``E2T001`` finding per unused suppression.

    ``enabled(rule_id)`` says whether a rule ran; an ID that did not run cannot be judged
    unused, and unused suppressions are reported only when ``E2T001`` itself is enabled.
    """
    sups = list(suppressions)
    used: set[tuple[int, str | None]] = set()
    kept = []
    for finding in findings:
        silenced = False
        for i, sup in enumerate(sups):
            if sup.line != finding.position.line:
                continue
            if sup.ids is None:
                used.add((i, None))
                silenced = True
            elif any(finding.rule_id.startswith(x) for x in sup.ids):
                used.update((i, x) for x in sup.ids if finding.rule_id.startswith(x))
                silenced = True
        if not silenced:
            kept.append(finding)
    if not enabled(UNUSED_ID):
        return kept
    for i, sup in enumerate(sups):
        if sup.ids is None:
            if (i, None) not in used:
                kept.append(_unused(sup, "nothing to ignore on this line", path))
            continue
        unused = [x for x in sup.ids if (i, x) not in used and enabled(x)]
        if unused:
            kept.append(_unused(sup, f"no {', '.join(unused)} finding on this line", path))
    return kept


def _unused(sup: Suppression, why: str, path: str) -> Finding:
    return Finding(
        UNUSED_ID,
        f"unused suppression `{sup.text.strip()}`: {why}; remove it",
        sup.position,
        path=path,
    )
