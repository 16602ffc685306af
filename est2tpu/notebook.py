"""Jupyter notebooks as one program: code cells joined, IPython syntax masked, split back.

Only the `source` of code cells ever changes. The new JSON is made by replacing those
values inside the original text, so indentation, key order, escaping and the final newline
stay exactly as they were and a JSON diff shows only the changed source lines.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]

from est2tpu.ftypes import Edit, Finding, MigrationError, Position
from est2tpu.scan import may_match

__all__ = ["MAGIC_CELL_ID", "Notebook", "cell_of", "load", "whole_cell_magic"]

#: The line that starts each code cell in the joined program.
SEPARATOR = "# __est2tpu_cell__ {}\n"
_SEPARATOR_RE = re.compile(r"^# __est2tpu_cell__ (\d+)\r?\n", re.MULTILINE)
# An import, so that a `!pip install` line at the top stays part of the import block and new
# imports are added after it (and after the user's own imports), not above it.
_PLACEHOLDER = "import __est2tpu_magic_{}__"
_PLACEHOLDER_RE = re.compile(r"^([ \t]*)import __est2tpu_magic_(\d+)__[ \t]*(\r?\n)?$")
_BARE_LF = re.compile(r"(?<!\r)\n")
_CELL_IN_PATH = re.compile(r"^(?P<path>.*):cell (?P<cell>\d+)$")

#: Cell magics whose body is Python: only their `%%` line is masked, the body is migrated.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

#: Line magics that act on their own line only: a cell that starts with one is a Python cell.
#: IPython's built-in line magics (`%lsmagic`), those of its bundled extensions, and Colab's.
#: Any other magic on a cell's first line (`%bash`, `%sh`, `%writefile`, `%bigquery`: the
#: Datalab / AI Platform notebooks' spelling of a cell magic) makes the whole cell a magic.
LINE_MAGICS = frozenset(
    """
    alias alias_magic autoawait autocall automagic autosave bookmark cat cd clear colors conda
    config connect_info cp debug dhist dirs doctest_mode ed edit env gui hist history
    killbgscripts ldir less lf lk ll load load_ext loadpy logoff logon logstart logstate
    logstop ls lsmagic lx macro magic mamba man matplotlib micromamba mkdir more mv notebook
    page pastebin pdb pdef pdoc pfile pinfo pinfo2 pip popd pprint precision prun psearch
    psource pushd pwd pycat pylab qtconsole quickref recall rehashx reload_ext rep rerun reset
    reset_selective rm rmdir run save sc set_env store sx system tb time timeit unalias
    unload_ext who who_ls whos xdel xmode
    autoreload aimport tensorboard tensorflow_version
    """.split()  # noqa: SIM905 - the word list reads as `%lsmagic` prints it
)

#: The engine-level ID of a magic cell left as it is although it holds Estimator code.
MAGIC_CELL_ID = "E2T002"

# `x = !ls`, `files = %sx ls`: an assignment from IPython syntax.
_MAGIC_ASSIGN = re.compile(r"^[\w.\[\]'\", ]+=\s*[!%]")
_FUTURE = re.compile(r"^from\s+__future__\s+import\b")
_WRITEFILE = re.compile(r"^%%?writefile\s+(?:-a\s+|--append\s+)?(?P<file>\S+)")


def cell_of(finding_path: str) -> tuple[str, int | None]:
    """Split a notebook finding's path (`nb.ipynb:cell 3`) into the file and the cell."""
    match = _CELL_IN_PATH.match(finding_path)
    if match is None:
        return finding_path, None
    return match.group("path"), int(match.group("cell"))


def whole_cell_magic(text: str) -> str | None:
    """The magic line (`%%bash`, `%bash`, `%%writefile m.py`) that makes a whole cell not
    Python, or None. IPython drops a cell's leading blank lines before looking for `%%`."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("%"):
            return None
        cell = stripped.startswith("%%")
        name = stripped.lstrip("%").split(None, 1)[0] if stripped.lstrip("%") else ""
        python = name in PYTHON_CELL_MAGICS if cell else name in LINE_MAGICS
        return None if python else stripped
    return None


class _Lexer:
    """The tokenizer's view of a cell, one physical line at a time: where strings, brackets,
    comments and backslash continuations are. IPython's transformers act only on logical
    line starts outside strings, so only there is `%`, `!` or `?` IPython syntax."""

    def __init__(self) -> None:
        self.quote: str | None = None
        self.depth = 0
        self.joined = False

    @property
    def at_start(self) -> bool:
        """Does the next physical line start a logical line?"""
        return self.quote is None and self.depth == 0 and not self.joined

    def feed(self, line: str) -> str:
        """The code of one line: strings as `''`, no comment."""
        body = line.rstrip("\r\n")
        code: list[str] = []
        self.joined = False
        i, n = 0, len(body)
        while i < n:
            char = body[i]
            if self.quote is not None:
                if char == "\\":
                    i += 2
                elif body.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    code.append("''")
                else:
                    i += 1
                continue
            if char == "#":
                break
            if char in "'\"":
                self.quote = char * 3 if body.startswith(char * 3, i) else char
                i += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and i == n - 1:
                self.joined = True
                break
            code.append(char)
            i += 1
        if self.quote in ("'", '"') and not body.endswith("\\"):
            self.quote = None  # an unterminated string: the parser reports it
        return "".join(code)


@dataclass
class _CodeCell:
    index: int  # position in the notebook's cell list (0-based)
    text: str  # the source as the notebook holds it
    masked: str = ""
    start_line: int = 0  # first line of the cell in the joined program (1-based)
    added_newline: bool = False
    magic: str | None = None  # the first line of a whole-cell magic: not part of the program

    @property
    def crlf(self) -> bool:
        """Does every line of the cell end in CRLF (so lines added to it must too)?"""
        return "\r\n" in self.text and "\n" not in self.text.replace("\r\n", "")

    @property
    def number(self) -> int:
        """1-based position among all cells, markdown included (as a notebook shows them)."""
        return self.index + 1


@dataclass
class Notebook:
    """A parsed notebook and everything needed to write its code back in place."""

    raw: str
    cells: list[_CodeCell]  # the code cells that are the program
    spans: dict[tuple[object, ...], tuple[int, int]]
    magic_cells: list[_CodeCell] = field(default_factory=list)  # left byte-for-byte
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
        first = min(self.cells + self.magic_cells, key=lambda c: c.index, default=None)
        return first.text if first is not None else ""

    def magic_findings(self, path: str) -> list[Finding]:
        """A finding for each magic cell left as it is although its body is Python that uses
        names est2tpu migrates: a `%%writefile model.py` cell writes the module that a later
        cell or a trainer package imports, and that code is not migrated here."""
        out = []
        for cell in self.magic_cells:
            assert cell.magic is not None
            body = cell.text.split(cell.magic, 1)[1].partition("\n")[2]
            if not may_match(body.encode("utf-8")) or not _is_python(body):
                continue
            magic = cell.magic.split(None, 1)[0]
            writes = _WRITEFILE.match(cell.magic)
            if writes is not None:
                name = writes.group("file")
                fix = (
                    f"run the cell, then migrate the file it writes (`est2tpu migrate {name}`) "
                    f"and put the migrated code back in the cell; or make it a Python cell"
                )
            else:
                fix = "migrate that code by hand, or make it a Python cell"
            message = (
                f"`{magic}` cell left as it is: its body is Python that uses the Estimator API, "
                f"and est2tpu does not migrate code inside a cell magic; {fix}"
            )
            out.append(
                Finding(MAGIC_CELL_ID, message, Position(1, 1), path=f"{path}:cell {cell.number}")
            )
        return out

    def locate(self, line: int) -> tuple[int, int]:
        """(cell number, line in that cell) of a line of the joined program."""
        if not self.cells:
            return 1, line
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
            if cell.crlf:
                # The joined program's line ending is LF (the separators'): lines the rules
                # added get the cell's own.
                body = _BARE_LF.sub("\r\n", body)
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


class _DuplicateKey(Exception):
    def __init__(self, path: tuple[object, ...], key: str) -> None:
        where = f"cell {int(str(path[1])) + 1}" if len(path) == 2 else "the notebook"
        super().__init__(
            f"cannot read notebook: {where} has the key {json.dumps(key)} twice (JSON readers "
            f"disagree on which one counts): remove one"
        )


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
                # Keys of the notebook and of its cells: JSON readers disagree on which of two
                # equal keys counts (and a rewrite of one would leave the other).
                cell = len(path) == 2 and path[0] == "cells"
                keys: set[str] | None = set() if cell or not path else None
                while True:
                    pos = self._ws(pos)
                    key, pos = scanstring(self.text, pos + 1)
                    if keys is not None:
                        if key in keys:
                            raise _DuplicateKey(path, key)
                        keys.add(key)
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


def _is_python(text: str) -> bool:
    try:
        compile(text, "<cell>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def _placeholder(line: str, indent: str, placeholders: dict[int, str]) -> str:
    number = len(placeholders)
    placeholders[number] = line
    eol = line[len(line.rstrip("\r\n")) :]
    return indent + _PLACEHOLDER.format(number) + eol


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _mask_cell(cell: _CodeCell, placeholders: dict[int, str]) -> None:
    """Mask the IPython syntax of a Python cell: `%magic`, `!shell`, `?obj`, `obj?`,
    `x = !ls` at the start of a logical line, and `from __future__` imports (they must open
    a file, and in the joined program they would not)."""
    lines = cell.text.splitlines(keepends=True)
    out: list[str] = []
    lexer = _Lexer()
    shell_continues = False
    shell_indent = ""  # of the magic or shell line; its continuation lines are in its block
    start = 0  # where the current logical line starts in `out`
    code: list[str] = []  # its code, without strings and comments
    for line in lines:
        if shell_continues:  # a magic or shell line continued with a backslash
            out.append(_placeholder(line, shell_indent, placeholders))
            shell_continues = line.rstrip("\r\n").endswith("\\")
            continue
        if lexer.at_start:
            stripped = line.strip()
            if stripped and (stripped[0] in "%!?" or _MAGIC_ASSIGN.match(stripped)):
                # IPython drops the indentation of a cell's first line (` !gcloud ...`
                # pasted with a space), so that line opens no block: its placeholder starts
                # the program's line; a line in a block keeps its block's indentation.
                opens_cell = not any(text.strip() for text in out)
                shell_indent = "" if opens_cell else _indent(line)
                out.append(_placeholder(line, shell_indent, placeholders))
                shell_continues = line.rstrip("\r\n").endswith("\\")
                continue
            start, code = len(out), []
        code.append(lexer.feed(line))
        out.append(line)
        if not lexer.at_start:
            continue
        logical = "".join(code).strip()
        # `obj?`, `obj??`: help, when `?` ends the logical line's code (not a comment's).
        if logical.endswith("?") or _FUTURE.match(logical):
            indent = _indent(out[start])
            out[start:] = [_placeholder(text, indent, placeholders) for text in out[start:]]
    masked_text = "".join(out)
    if masked_text and not masked_text.endswith("\n"):
        masked_text += "\n"
        cell.added_newline = True
    cell.masked = masked_text


def _is_python_kernel(metadata: dict[str, object]) -> bool:
    """Does the notebook's metadata say Python (or say nothing)? A kernelspec without
    `language` (R's `ir`) is named by its kernel: only a Python-looking name is Python."""
    kernelspec = metadata.get("kernelspec")
    language_info = metadata.get("language_info")
    if isinstance(kernelspec, dict) and kernelspec.get("language"):
        return str(kernelspec["language"]).lower() == "python"
    if isinstance(language_info, dict) and language_info.get("name"):
        return str(language_info["name"]).lower() == "python"
    if isinstance(kernelspec, dict) and (kernelspec.get("name") or kernelspec.get("display_name")):
        names = f"{kernelspec.get('name', '')} {kernelspec.get('display_name', '')}".lower()
        return re.search(r"python|(?:^|[-_ ])py(?:thon)?\d*(?:$|[-_ ])", names) is not None
    return True


def load(data: bytes, *, check_cells: bool = True) -> Notebook:
    """Parse a notebook; raises MigrationError with a one-line reason (naming the cell).

    Each Python cell must parse on its own (LibCST), or the notebook fails naming the cell:
    joined, a cell's unclosed bracket could swallow the next cell. `check_cells=False` skips
    that parse for bytes already known to pass it (the results cache remembers them), so
    that a warm run never loads LibCST.
    """
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MigrationError(f"cannot read notebook: not UTF-8 ({exc.reason})") from None
    if raw.startswith("\ufeff"):
        raise MigrationError("cannot read notebook: it starts with a byte-order mark")
    try:
        obj = json.loads(raw)
        scanner = _Spans(raw)
        if isinstance(obj, dict):
            scanner.value(0, ())
    except json.JSONDecodeError as exc:
        raise MigrationError(f"cannot read notebook: invalid JSON: {exc}") from None
    except RecursionError:
        raise MigrationError("cannot read notebook: its JSON is nested too deeply") from None
    except _DuplicateKey as exc:
        raise MigrationError(str(exc)) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("cells"), list):
        raise MigrationError("cannot read notebook: no 'cells' list (nbformat 4 is required)")
    metadata = obj.get("metadata")
    nb = Notebook(
        raw=raw,
        cells=[],
        spans=scanner.spans,
        ensure_ascii=not any(ord(c) > 127 for c in raw)
        and re.search(r"\\u[0-9a-fA-F]{4}", raw) is not None,
        python=_is_python_kernel(metadata if isinstance(metadata, dict) else {}),
    )
    line = 1
    for index, cell in enumerate(obj["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or "source" not in cell:
            continue
        source = cell["source"]
        if isinstance(source, list) and all(isinstance(item, str) for item in source):
            text = "".join(source)
        elif isinstance(source, str):
            text = source
        else:
            raise MigrationError(
                f"cannot read notebook: the source of cell {index + 1} is not text "
                f"(a string or a list of strings)"
            )
        code = _CodeCell(index, text, magic=whole_cell_magic(text))
        if code.magic is not None:
            nb.magic_cells.append(code)
            continue
        _mask_cell(code, nb.placeholders)
        code.start_line = line + 1
        line += 1 + code.masked.count("\n")
        if check_cells:
            _check_cell(code)
        nb.cells.append(code)
    return nb


def _check_cell(cell: _CodeCell) -> None:
    """Raise MigrationError naming the cell when its masked source does not parse."""
    from est2tpu.checks import parse  # LibCST loads only when a cell has to be parsed

    try:
        parse(cell.masked)
    except MigrationError as exc:
        reason = str(exc).removeprefix("cannot parse: ")
        raise MigrationError(f"cannot parse cell {cell.number}: {reason}") from None
