"""Leaf types shared by every layer: targets, findings, file results, rule metadata."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path


class Target(str, enum.Enum):
    """What the migrated code is written for."""

    TPU_ESTIMATOR = "tpu-estimator"
    TF2 = "tf2"


class Safety(str, enum.Enum):
    """How much a human should look at a rule's rewrite."""

    SAFE = "safe"
    REVIEW = "review"


class Status(str, enum.Enum):
    """What happened to one file."""

    UNCHANGED = "unchanged"  # parsed, nothing to do
    SKIPPED = "skipped"  # pre-filter: cannot contain anything a rule touches
    CHANGED = "changed"  # new text differs from the old
    FAILED = "failed"  # could not be processed; the file is left untouched


@dataclass(frozen=True, order=True)
class Position:
    """1-based line, 1-based column (as editors show them)."""

    line: int
    column: int


@dataclass(frozen=True)
class Finding:
    """Something a rule could not (or would not) rewrite and a human must do by hand."""

    rule_id: str
    message: str
    position: Position
    path: str = "-"
    fixable: bool = False

    def render(self) -> str:
        return f"{self.path}:{self.position.line}:{self.position.column}: {self.rule_id} {self.message}"


@dataclass(frozen=True)
class Edit:
    """A rewrite a rule applied: the rule and where it touched the original text."""

    rule_id: str
    position: Position
    description: str


@dataclass
class FileResult:
    """Everything the engine learned about one file. The engine never writes it."""

    path: Path
    status: Status
    old_text: str | None = None
    new_text: str | None = None
    findings: list[Finding] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    error: str | None = None  # one line, for FAILED
    # How to write the new text back exactly as the file was stored.
    encoding: str = "utf-8"
    bom: bool = False
    newline: str = "\n"

    @property
    def changed(self) -> bool:
        return self.status is Status.CHANGED


@dataclass(frozen=True)
class RuleInfo:
    """A rule's catalogue entry (`rules/<ID>.md`)."""

    id: str
    name: str
    summary: str
    safety: Safety
    targets: tuple[Target, ...]
    docs: str  # the markdown body, with the fixed headings
    sections: dict[str, str] = field(default_factory=dict, compare=False, hash=False)


class MigrationError(Exception):
    """A per-file failure with a one-line reason (never a traceback to the user)."""
