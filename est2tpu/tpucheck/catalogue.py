"""The catalogue of the TPU1xx findings of `verify --tpu`: ``rules/verify/TPU1xx.md``.

They are findings of a run, not rules of the migration: no rewrite, no fixture folder, no
``--select``. Each entry has the catalogue's header with a ``severity:`` line (error or
warning) and the headings of `HEADINGS`.
"""

from __future__ import annotations

import functools

from est2tpu.catalogue import data_dir, parse_entry
from est2tpu.ftypes import RuleInfo

FOLDER = "verify"
HEADINGS = ("What it does", "Why", "How to fix", "References")


@functools.cache
def load() -> dict[str, RuleInfo]:
    """Every TPU1xx entry, by ID."""
    entries: dict[str, RuleInfo] = {}
    for path in sorted((data_dir("rules") / FOLDER).glob("*.md")):
        info = parse_entry(path.read_text(encoding="utf-8"), path.name)
        if info.id != path.stem:
            raise ValueError(f"{path.name}: file name and id {info.id!r} differ")
        entries[info.id] = info
    return entries


def severity(rule_id: str) -> str:
    """The ``severity:`` header of an entry (error or warning)."""
    path = data_dir("rules") / FOLDER / f"{rule_id}.md"
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip() == "---":
            break
        key, _, value = line.partition(":")
        if key.strip() == "severity":
            return value.strip()
    raise ValueError(f"{path.name}: header lacks 'severity'")
