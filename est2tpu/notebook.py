"""Jupyter notebooks as one program: code cells joined, IPython syntax masked, split back.

Only the `source` of code cells ever changes. The new JSON is made by replacing those
values inside the original text, so indentation, key order, escaping and the final newline
stay exactly as they were and a JSON diff shows only the changed source lines.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]

from est2tpu.ftypes import Edit, Finding, MigrationError, Position

__all__ = ["Notebook", "cell_of", "load"]

#: The line that starts each code cell in the joined program.
SEPARATOR = "# __est2tpu_cell__ {}\n"
_SEPARATOR_RE = re.compile(r"^# __est2tpu_cell__ (\d+)\r?\n", re.MULTILINE)
# An import, so that a `!pip install` line at the top stays part of the import block and new
# imports are added after it (and after the user's own imports), not above it.
_PLACEHOLDER = "import __est2tpu_magic_{}__"
_PLACEHOLDER_RE = re.compile(r"^([ \t]*)import __est2tpu_magic_(\d+)__[ \t]*(\r?\n)?$")
_CELL_IN_PATH = re.compile(r"^(?P<path>.*):cell (?P<cell>\d+)$")

#: Cell magics whose body is Python: only their `%%` line is masked, the body is migrated.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

# `x = !ls`, `files = %sx ls`: an assignment from IPython syntax.
_MAGIC_ASSIGN = re.compile(r"^[\w.\[\]'\", ]+=\s*[!%]")


def cell_of(finding_path: str) -> tuple[str, int | None]:
    """Split a notebook finding's path (`nb.ipynb:cell 3`) into the file and the cell."""
    match = _CELL_IN_PATH.match(finding_path)
    if match is None:
        return finding_path, None
    return match.group("path"), int(match.group("cell"))


def _is_ipython(stripped: str) -> bool:
    if not stripped or stripped.startswith("#"):
        return False
    if stripped[0] in "%!?":
        return True
    # `obj?` / `obj??` help; a line ending in "?" is never valid Python outside a string.
    if stripped.endswith("?"):
        return True
    return _MAGIC_ASSIGN.match(stripped) is not None


@dataclass
class _CodeCell:
    index: int  # position in the notebook's cell list (0-based)
    text: str  # the source as the notebook holds it
    masked: str = ""
    start_line: int = 0  # first line of the cell in the joined program (1-based)
    added_newline: bool = False

    @property
    def number(self) -> int:
        """1-based position among all cells, markdown included (as a notebook shows them)."""
        return self.index + 1


@dataclass
class Notebook:
    """A parsed notebook and everything needed to write its code back in place."""

    raw: str
    cells: list[_CodeCell]
    spans: dict[tuple[object, ...], tuple[int, int]]
    placeholders: dict[int, str] = field(default_factory=dict)
    ensure_ascii: bool = False
    python: bool = True

    @property
    def program(self) -> str:
        """Every code cell, masked, joined into one module."""
        return "".join(SEPARATOR.format(c.number) + c.masked for c in self.cells)

    @property
    def head(self) -> str:
        """The first code cell's source (where `# est2tpu: skip-file` belongs)."""
        return self.cells[0].text if self.cells else ""

    def locate(self, line: int) -> tuple[int, int]:
        """(cell number, line in that cell) of a line of the joined program."""
        cell = self.cells[0]
        for candidate in self.cells:
            if candidate.start_line <= line:
                cell = candidate
        return cell.number, max(1, line - cell.start_line + 1)

    def locate_findings(self, findings: Iterable[Finding], path: str) -> list[Finding]:
        """Findings re-pointed from the joined program to `path:cell N`, line in the cell."""
        out = []
        for f in findings:
            number, line = self.locate(f.position.line)
            out.append(
                Finding(
                    f.rule_id,
                    f.message,
                    Position(line, f.position.column),
                    path=f"{path}:cell {number}",
                    fixable=f.fixable,
                )
            )
        return out

    def locate_edits(self, edits: Iterable[Edit]) -> list[Edit]:
        """Edits re-pointed to the line in their cell; the description starts `cell N: `."""
        out = []
        for e in edits:
            number, line = self.locate(e.position.line)
            out.append(
                Edit(
                    e.rule_id, Position(line, e.position.column), f"cell {number}: {e.description}"
                )
            )
        return out

    def render(self, program: str) -> str:
        """The notebook JSON with each code cell's source taken from the migrated program."""
        if program == self.program:
            return self.raw
        new_sources = self._split(program)
        replacements = []
        for cell, new in zip(self.cells, new_sources):
            if new != cell.text:
                start, end = self.spans[("cells", cell.index, "source")]
                replacements.append((start, end, self._source_json(cell, new)))
        text = self.raw
        for start, end, value in sorted(replacements, reverse=True):
            text = text[:start] + value + text[end:]
        json.loads(text)  # a broken notebook must never be written
        return text

    def _split(self, program: str) -> list[str]:
        marks = list(_SEPARATOR_RE.finditer(program))
        numbers = [int(m.group(1)) for m in marks]
        if numbers != [c.number for c in self.cells]:
            raise MigrationError("internal error: the cell boundaries were lost in the migration")
        # Anything before the first boundary (never expected) belongs to the first cell.
        prefix = program[: marks[0].start()] if marks else ""
        remaining = dict(self.placeholders)
        sources = []
        for i, (cell, mark) in enumerate(zip(self.cells, marks)):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(program)
            body = (prefix if i == 0 else "") + program[mark.end() : end]
            body = self._unmask(body, remaining)
            if cell.added_newline:
                # The cell had no final newline (the nbformat norm); keep it that way.
                body = body.rstrip("\n")
            sources.append(body)
        if remaining:
            raise MigrationError("internal error: IPython syntax was lost in the migration")
        return sources

    @staticmethod
    def _unmask(text: str, remaining: dict[int, str]) -> str:
        out = []
        for line in text.splitlines(keepends=True):
            match = _PLACEHOLDER_RE.match(line)
            if match is None:
                out.append(line)
                continue
            original = remaining.pop(int(match.group(2)), None)
            if original is None:
                raise MigrationError(
                    "internal error: IPython syntax was duplicated in the migration"
                )
            out.append(original.rstrip("\r\n") + (match.group(3) or ""))
        return "".join(out)

    def _source_json(self, cell: _CodeCell, new: str) -> str:
        key = ("cells", cell.index, "source")
        start, end = self.spans[key]
        old_json = self.raw[start:end]
        if not old_json.startswith("["):
            return json.dumps(new, ensure_ascii=self.ensure_ascii)
        old_items = []
        i = 0
        while ("cells", cell.index, "source", i) in self.spans:
            old_items.append(self.spans[("cells", cell.index, "source", i)])
            i += 1
        old_lines = [json.loads(self.raw[s:e]) for s, e in old_items]
        new_lines = new.splitlines(keepends=True)
        # Unchanged lines keep their exact old spelling (escapes included).
        tokens: list[str] = []
        matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
        for tag, a0, a1, b0, b1 in matcher.get_opcodes():
            if tag == "equal":
                tokens.extend(self.raw[s:e] for s, e in old_items[a0:a1])
            else:
                tokens.extend(
                    json.dumps(x, ensure_ascii=self.ensure_ascii) for x in new_lines[b0:b1]
                )
        if not old_items:
            return "[" + ", ".join(tokens) + "]"
        first = self.raw[start + 1 : old_items[0][0]]
        last = self.raw[old_items[-1][1] : end - 1]
        between = self.raw[old_items[0][1] : old_items[1][0]] if len(old_items) > 1 else "," + first
        if not tokens:
            return "[]"
        return "[" + first + between.join(tokens) + last + "]"


class _Spans:
    """Where each code cell's `source` (and each of its items) lies in the JSON text."""

    _WS = re.compile(r"[ \t\n\r]*")
    _SCALAR = re.compile(
        r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|NaN|-?Infinity"
    )

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: dict[tuple[object, ...], tuple[int, int]] = {}

    def _ws(self, pos: int) -> int:
        match = self._WS.match(self.text, pos)
        assert match is not None
        return match.end()

    def value(self, pos: int, path: tuple[object, ...]) -> int:
        pos = self._ws(pos)
        start = pos
        char = self.text[pos : pos + 1]
        if char == "{":
            pos = self._ws(pos + 1)
            if self.text[pos] == "}":
                pos += 1
            else:
                while True:
                    pos = self._ws(pos)
                    key, pos = scanstring(self.text, pos + 1)
                    pos = self._ws(pos) + 1  # ':'
                    pos = self._ws(self.value(pos, (*path, key)))
                    pos += 1
                    if self.text[pos - 1] == "}":
                        break
        elif char == "[":
            pos = self._ws(pos + 1)
            if self.text[pos] == "]":
                pos += 1
            else:
                i = 0
                while True:
                    pos = self._ws(self.value(pos, (*path, i)))
                    i += 1
                    pos += 1
                    if self.text[pos - 1] == "]":
                        break
        elif char == '"':
            _, pos = scanstring(self.text, pos + 1)
        else:
            match = self._SCALAR.match(self.text, pos)
            if match is None:
                raise ValueError(f"unexpected JSON at offset {pos}")
            pos = match.end()
        if len(path) >= 3 and path[0] == "cells" and path[2] == "source":
            self.spans[path] = (start, pos)
        return pos


def _mask_cell(cell: _CodeCell, placeholders: dict[int, str]) -> None:
    lines = cell.text.splitlines(keepends=True)
    out = []
    continued = False
    whole_cell = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if i == 0 and stripped.startswith("%%"):
            name = stripped[2:].split(None, 1)[0] if stripped[2:] else ""
            # `%%bash`, `%%writefile`: the body is not Python; mask all of it.
            whole_cell = name not in PYTHON_CELL_MAGICS
            masked = True
        else:
            masked = whole_cell or continued or _is_ipython(stripped)
        if masked:
            number = len(placeholders)
            placeholders[number] = line
            indent = "" if whole_cell or continued else line[: len(line) - len(line.lstrip())]
            eol = line[len(line.rstrip("\r\n")) :]
            out.append(indent + _PLACEHOLDER.format(number) + eol)
            continued = line.rstrip("\r\n").endswith("\\")
        else:
            out.append(line)
    masked_text = "".join(out)
    if masked_text and not masked_text.endswith("\n"):
        masked_text += "\n"
        cell.added_newline = True
    cell.masked = masked_text


def load(data: bytes) -> Notebook:
    """Parse a notebook; raises MigrationError with a one-line reason (naming the cell)."""
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MigrationError(f"cannot read notebook: not UTF-8 ({exc.reason})") from None
    if raw.startswith("\ufeff"):
        raise MigrationError("cannot read notebook: it starts with a byte-order mark")
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise MigrationError(f"cannot read notebook: invalid JSON: {exc}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("cells"), list):
        raise MigrationError("cannot read notebook: no 'cells' list (nbformat 4 is required)")
    scanner = _Spans(raw)
    scanner.value(0, ())
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    kernelspec = metadata.get("kernelspec")
    language_info = metadata.get("language_info")
    language = (kernelspec.get("language") if isinstance(kernelspec, dict) else None) or (
        language_info.get("name", "python") if isinstance(language_info, dict) else "python"
    )
    nb = Notebook(
        raw=raw,
        cells=[],
        spans=scanner.spans,
        ensure_ascii=not any(ord(c) > 127 for c in raw)
        and re.search(r"\\u[0-9a-fA-F]{4}", raw) is not None,
        python=str(language).lower() == "python",
    )
    from est2tpu.engine import parse  # LibCST loads only when a notebook is read

    line = 1
    for index, cell in enumerate(obj["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        code = _CodeCell(index, text)
        _mask_cell(code, nb.placeholders)
        code.start_line = line + 1
        line += 1 + code.masked.count("\n")
        try:
            parse(code.masked)
        except MigrationError as exc:
            reason = str(exc).removeprefix("cannot parse: ")
            raise MigrationError(f"cannot parse cell {code.number}: {reason}") from None
        nb.cells.append(code)
    return nb
