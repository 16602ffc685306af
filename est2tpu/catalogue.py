"""The rule catalogue: one markdown file per rule under `rules/`, read once."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from est2tpu.ftypes import RuleInfo, Safety, Target

REQUIRED_SECTIONS = ("What it does", "Why", "When it refuses", "References")
RULE_ID = re.compile(r"^[A-Z][A-Z0-9]*[0-9]{3}$")  # TPU001; E2T001 (engine-level)


def data_dir(name: str) -> Path:
    """`rules/` or `fixtures/`: inside the installed package, else at the repository root."""
    packaged = Path(__file__).parent / "_data" / name
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / name


def parse_entry(text: str, source: str) -> RuleInfo:
    """Parse one catalogue file: a `---` header of `key: value` lines, then the docs."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError(f"{source}: a catalogue entry starts with a '---' header")
    try:
        end = lines.index("---", 1)
    except ValueError:
        raise ValueError(f"{source}: the '---' header is not closed") from None
    meta: dict[str, str] = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"{source}: header line without ':': {line!r}")
        meta[key.strip()] = value.strip()
    for key in ("id", "name", "summary", "safety", "targets"):
        if not meta.get(key):
            raise ValueError(f"{source}: header lacks {key!r}")
    if not RULE_ID.match(meta["id"]):
        raise ValueError(f"{source}: bad rule id {meta['id']!r}")
    body = "\n".join(lines[end + 1 :]).strip() + "\n"
    sections: dict[str, str] = {}
    current: str | None = None
    for line in body.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return RuleInfo(
        id=meta["id"],
        name=meta["name"],
        summary=meta["summary"],
        safety=Safety(meta["safety"]),
        targets=tuple(Target(t.strip()) for t in meta["targets"].split(",")),
        docs=body,
        sections={k: v.strip() + "\n" for k, v in sections.items()},
    )


@functools.cache
def load() -> dict[str, RuleInfo]:
    """Every catalogue entry, by ID, in ID order."""
    entries: dict[str, RuleInfo] = {}
    for path in sorted(data_dir("rules").glob("*.md")):
        if path.stem.upper() == "README":
            continue
        info = parse_entry(path.read_text(encoding="utf-8"), path.name)
        if info.id != path.stem:
            raise ValueError(f"{path.name}: file name and id {info.id!r} differ")
        entries[info.id] = info
    return dict(sorted(entries.items()))


def markdown_table() -> str:
    """The README's rules table, generated from the catalogue."""
    lines = ["| ID | name | safety | targets | what it does |", "|---|---|---|---|---|"]
    for info in load().values():
        targets = ", ".join(t.value for t in info.targets)
        lines.append(
            f"| {info.id} | {info.name} | {info.safety.value} | {targets} | {info.summary} |"
        )
    return "\n".join(lines) + "\n"
