"""Generated code in the file's own style, applied to a migrated text after the rules.

- An import est2tpu adds goes where the file's sorted import block puts it, as isort and
  ruff's `I001` sort a block: sections (`__future__`, standard library, third party, first
  party, relative) one blank line apart, `import x` lines before `from x import y` lines
  within a section, modules in case-insensitive order. A block that mixes sections in one
  group of lines is not sorted by any of them: the import stays where LibCST put it.
  A notebook's masked lines (magics, `__future__`) and cell boundaries stay where they are.
- A line the migration made (a line the original does not have) that is longer than the
  file's limit is wrapped at its widest brackets: a call that starts and ends on it gets its
  arguments one per line, one indentation step (the file's own) deeper, with a trailing
  comma; a line of a multi-line call that holds whole arguments gets one line per argument
  at its own indentation; a generated def's plain parameters go one per line. A line still
  too long is wrapped again inside. The limit is the line length the project's linter
  configuration sets (`line_limit`), else the file's longest line, and never under 79.

Both work on the text with Python's own tree (`ast`): neither changes a line the migration
did not write, and a text `ast` cannot read is returned as it is.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass

from est2tpu.lintconfig import configured_line_length

__all__ = ["configured_line_length", "line_limit", "place_imports", "restyle", "wrap_long_lines"]

PEP8_LIMIT = 79
_MAX_WRAPS = 16  # rounds of wrapping (each reads the text again): one per level of nesting

FUTURE, STDLIB, THIRD_PARTY, FIRST_PARTY, LOCAL = range(5)
# The line a notebook's joined program starts each cell with (`notebook.SEPARATOR`).
_CELL_MARK = "# __est2tpu_cell__ "
# What a notebook's masked lines import (`notebook._PLACEHOLDER`).
_MASK_PREFIX = "__est2tpu_magic_"
_PLAIN_IMPORT = re.compile(r"import [\w.]+( as \w+)?$")


def restyle(source: str, new: str, path: str) -> str:
    """`new` (the migration of `source`) with its added imports placed and its long new
    lines wrapped; `new` itself when it is `source`, `ast` cannot read either, or the
    result would not compile."""
    if new == source:
        return new
    styled = wrap_long_lines(source, place_imports(source, new), line_limit(source, path))
    if styled != new:
        try:
            compile(styled, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):  # a layout this module got wrong: not used
            return new
    return styled


# -- imports -------------------------------------------------------------------------------


@dataclass
class _Entry:
    """One statement of the leading import block: its lines (comments above it included)."""

    lines: list[str]
    blank_before: int
    section: int
    key: tuple[str, str, str]
    straight: bool  # `import x`, not `from x import y`


def place_imports(source: str, new: str) -> str:
    """`new` with each `import x` / `import x as y` line of its leading import block that
    `source`'s block does not have moved to where the sorted block puts it."""
    # Cheap first: a line `import x` / `import x as y` that the source does not have.
    known = set(source.splitlines())
    if not any(_PLAIN_IMPORT.match(line) and line not in known for line in new.splitlines()):
        return new
    old_tree, new_tree = _parse_head(source), _parse_head(new)
    if old_tree is None or new_tree is None:
        return new
    old_forms = {_form(n) for n in _leading_imports(old_tree)}
    block = _leading_imports(new_tree)
    # A notebook's masked line (a magic, a shell command, a `__future__` import) stands
    # where it is: the block to sort starts after the last one.
    masks = [i for i, n in enumerate(block) if _masked(n)]
    block = block[masks[-1] + 1 :] if masks else block
    added = [
        n
        for n in block
        if isinstance(n, ast.Import)
        and len(n.names) == 1
        and n.lineno == n.end_lineno
        and _form(n) not in old_forms
    ]
    if not added or len({n.lineno for n in block}) != len(block):
        return new  # nothing added, or two statements on one line
    lines = new.splitlines(keepends=True)
    added_lines = {n.lineno - 1 for n in added}
    if any(lines[i].strip() != ast.unparse(n) for i, n in zip(sorted(added_lines), added)):
        return new  # not one plain statement alone on its line
    kept = [n for n in block if n.lineno - 1 not in added_lines]
    # The block's lines, from the first kept statement to the last one's end (the comments
    # above the first statement stay above the block: a file's header).
    start = min([*added_lines, *([kept[0].lineno - 1] if kept else [])])
    end = max(n.end_lineno or n.lineno for n in block)
    if any(lines[i].startswith(_CELL_MARK) for i in range(start + 1, end)):
        return new  # a notebook's imports across cells: each cell is sorted on its own
    entries: list[_Entry] = []
    previous_end = start - 1
    for node in kept:
        first = max(_comment_start(lines, node.lineno - 1), previous_end + 1)
        between = [i for i in range(previous_end + 1, first) if i not in added_lines]
        blank = sum(1 for i in between if not lines[i].strip())
        if any(lines[i].strip() for i in between):
            return new  # something other than blank lines between two imports
        own = [
            lines[i] for i in range(first, (node.end_lineno or node.lineno)) if i not in added_lines
        ]
        entries.append(_Entry(own, blank, _section(node), _key(node), isinstance(node, ast.Import)))
        previous_end = (node.end_lineno or node.lineno) - 1
    if not _sections_apart(entries):
        return new
    _name_party(entries)
    for node in sorted(added, key=_key):
        _insert(entries, _Entry([lines[node.lineno - 1]], 0, _section(node), _key(node), True))
    first_added = lines[min(added_lines)]
    eol = first_added[len(first_added.rstrip("\r\n")) :] or "\n"  # the file's line ending
    out: list[str] = []
    for entry in entries:
        out.extend([eol] * entry.blank_before)
        out.extend(entry.lines)
    tail = [
        line
        for i, line in enumerate(lines[start:end], start)
        if i > previous_end and i not in added_lines
    ]
    if any(line.strip() for line in tail):
        return new
    return "".join([*lines[:start], *out, *tail, *lines[end:]])


def _insert(entries: list[_Entry], new: _Entry) -> None:
    """Put `new` in its section at its sorted place, or make it a section of its own
    between the sections around it (one blank line apart)."""
    sections = _sections(entries)
    same = [s for s in sections if entries[s[0]].section == new.section]
    if same:
        first, last = same[0]
        for i in range(first, last + 1):
            if not entries[i].straight or entries[i].key > new.key:
                if i == first:  # the blank lines above the section stay above it
                    new.blank_before, entries[i].blank_before = entries[i].blank_before, 0
                entries.insert(i, new)
                return
        entries.insert(last + 1, new)
        return
    later = [s for s in sections if entries[s[0]].section > new.section]
    if later:
        first = later[0][0]
        new.blank_before, entries[first].blank_before = entries[first].blank_before, 1
        entries.insert(first, new)
        return
    new.blank_before = 1 if entries else 0
    entries.append(new)


def _sections(entries: list[_Entry]) -> list[tuple[int, int]]:
    """(first, last) index of each run of entries with no blank line between them."""
    out: list[tuple[int, int]] = []
    for i, entry in enumerate(entries):
        if i == 0 or entry.blank_before:
            out.append((i, i))
        else:
            out[-1] = (out[-1][0], i)
    return out


def _sections_apart(entries: list[_Entry]) -> bool:
    """Each run of lines holds one section, in order: a block isort or ruff could have
    sorted (first and third party are told apart later, by `_name_party`)."""
    seen = []
    for first, last in _sections(entries):
        kinds = {entries[i].section for i in range(first, last + 1)}
        if len(kinds) != 1:
            return False
        seen.append(kinds.pop())
    return seen == sorted(seen)


def _name_party(entries: list[_Entry]) -> None:
    """Absolute imports outside the standard library are third party, or first party (the
    project's own modules, which the file alone cannot tell): of two such sections the
    second is first party; a single one is third party."""
    runs = [s for s in _sections(entries) if entries[s[0]].section == THIRD_PARTY]
    if len(runs) == 2:
        first, last = runs[1]
        for i in range(first, last + 1):
            entries[i].section = FIRST_PARTY


def _comment_start(lines: list[str], index: int) -> int:
    """The first of the comment lines right above line `index` (or `index`)."""
    while index > 0 and lines[index - 1].lstrip().startswith("#"):
        index -= 1
    return index


def _leading_imports(tree: ast.Module) -> list[ast.stmt]:
    """The import statements at the top of the module, after its docstring."""
    body = tree.body
    start = (
        1
        if body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
        else 0
    )
    out: list[ast.stmt] = []
    for node in body[start:]:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            break
        out.append(node)
    return out


def _masked(node: ast.stmt) -> bool:
    return isinstance(node, ast.Import) and node.names[0].name.startswith(_MASK_PREFIX)


def _form(node: ast.stmt) -> str:
    return ast.dump(node, annotate_fields=False, include_attributes=False)


def _key(node: ast.stmt) -> tuple[str, str, str]:
    if isinstance(node, ast.Import):
        alias = node.names[0]
        return alias.name.lower(), alias.name, alias.asname or ""
    assert isinstance(node, ast.ImportFrom)
    module = "." * node.level + (node.module or "")
    return module.lower(), module, ""


def _section(node: ast.stmt) -> int:
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return LOCAL
        module = node.module or ""
    else:
        assert isinstance(node, ast.Import)
        module = node.names[0].name
    if module == "__future__":
        return FUTURE
    if module.partition(".")[0] in sys.stdlib_module_names:
        return STDLIB
    return THIRD_PARTY


def _parse_head(text: str) -> ast.Module | None:
    """The tree of the text's first lines, through its leading imports: cut before the
    first line that starts a statement other than an import at column 0 (the whole text
    when that cut does not parse)."""
    lines = text.splitlines(keepends=True)
    quoted = False  # inside a triple-quoted string (a docstring's text at column 0)
    for i, line in enumerate(lines):
        if (line.count('"""') + line.count("'''")) % 2:
            quoted = not quoted
            continue
        if i and not quoted and line[:1].isalpha() and not line.startswith(("import ", "from ")):
            head = _parse("".join(lines[:i]))
            if head is not None:
                return head
            break
    return _parse(text)


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


# -- long lines ----------------------------------------------------------------------------


def line_limit(source: str, path: str) -> int:
    """The length a line the migration writes may have: the configured one (see
    `configured_line_length`), else the original's longest line, and at least 79."""
    configured = configured_line_length(path)
    if configured is not None:
        return configured
    longest = max((len(line) for line in source.splitlines()), default=0)
    return max(longest, PEP8_LIMIT)


def wrap_long_lines(source: str, new: str, limit: int) -> str:
    """`new` with each line it has and `source` does not, longer than `limit`, wrapped at
    a call (see the module's docstring); lines it cannot wrap stay as they are."""
    original = set(source.splitlines())
    unit = _indent_unit(source)
    for _ in range(_MAX_WRAPS):
        lines = new.splitlines(keepends=True)
        long = [
            i
            for i, line in enumerate(lines)
            if len(line.rstrip("\r\n")) > limit and line.rstrip("\r\n") not in original
        ]
        if not long:
            return new
        tree = _parse(new)
        if tree is None:
            return new
        places = _places_by_line(tree, [i + 1 for i in long])
        wrapped_any = False
        # Bottom up: a wrap changes only its own line, so the lines above keep their
        # numbers and the tree's columns; what a wrap leaves too long waits for a new tree.
        for index in reversed(long):
            wrapped = next(
                (
                    text
                    for kind, node in places.get(index + 1, [])
                    if (text := _wrap(lines[index], index + 1, kind, node, unit)) is not None
                ),
                None,
            )
            if wrapped is not None:
                lines[index] = wrapped
                wrapped_any = True
        new = "".join(lines)
        if not wrapped_any:
            return new
    return new


_CALL, _RUN, _DEF = range(3)


def _places_by_line(tree: ast.Module, lines: list[int]) -> dict[int, list[tuple[int, ast.AST]]]:
    """Where each line can be wrapped, widest first (the outermost brackets): a call with
    arguments that starts and ends on it (`_CALL`), a multi-line call with arguments that
    are whole on it (`_RUN`: as wide as those arguments), a def whose plain parameters are
    on it (`_DEF`). Nothing inside an f-string; only in the top-level statements that hold
    one of `lines` (1-based)."""
    found: dict[int, list[tuple[int, int, ast.AST]]] = {}
    todo: list[ast.AST] = [
        node
        for node in tree.body
        if any(node.lineno <= line <= (node.end_lineno or node.lineno) for line in lines)
    ]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.JoinedStr):
            continue
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.args:
            found.setdefault(node.args.args[0].lineno, []).append((1 << 30, _DEF, node))
        if not isinstance(node, ast.Call):
            continue
        parts = _parts(node)
        if not parts:
            continue
        if node.lineno == node.end_lineno:
            width = (node.end_col_offset or 0) - node.col_offset
            found.setdefault(node.lineno, []).append((width, _CALL, node))
            continue
        for line in sorted({a.lineno for a in parts if a.lineno == a.end_lineno}):
            whole = [a for a in parts if a.lineno == a.end_lineno == line]
            width = (whole[-1].end_col_offset or 0) - whole[0].col_offset
            found.setdefault(line, []).append((width, _RUN, node))
    return {
        line: [(kind, node) for _, kind, node in sorted(places, key=lambda p: (-p[0], p[1]))]
        for line, places in found.items()
    }


def _parts(call: ast.Call) -> list[ast.expr | ast.keyword]:
    """The call's arguments, positional and keyword, in the order of the text."""
    parts: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    parts.sort(key=lambda a: (a.lineno, a.col_offset))
    return parts


def _wrap(line: str, number: int, kind: int, node: ast.AST, unit: str) -> str | None:
    """`line` (line `number`) with the arguments or parameters of `node` one per line;
    None when the text they come from is not just them (a generator without its own
    parentheses, a comment, parameters with defaults or annotations)."""
    raw = line.encode("utf-8")  # ast's columns count bytes
    indent = line[: len(line) - len(line.lstrip())]
    newline = line[len(line.rstrip("\r\n")) :] or "\n"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _explode_def(raw, node, indent, unit, newline)
    assert isinstance(node, ast.Call)
    parts = _parts(node)
    if any(
        isinstance(a, ast.GeneratorExp) and raw[a.col_offset : a.col_offset + 1] != b"("
        for a in parts
        if a.lineno == number
    ):
        return None
    if kind == _RUN:
        return _split_run(raw, number, node, parts, indent, newline)
    texts = [_text(raw, a) for a in parts]
    end = node.end_col_offset or 0
    opening = raw.find(b"(", node.func.end_col_offset or 0)
    if opening < 0 or raw[end - 1 : end] != b")":
        return None
    if not _just(texts, raw[opening + 1 : end - 1].decode("utf-8").strip()):
        return None
    head = raw[: opening + 1].decode("utf-8")
    rest = raw[end - 1 :].decode("utf-8")
    body = "".join(f"{indent}{unit}{text},{newline}" for text in texts)
    return f"{head}{newline}{body}{indent}{rest}"


def _split_run(
    raw: bytes,
    number: int,
    call: ast.Call,
    parts: list[ast.expr | ast.keyword],
    indent: str,
    newline: str,
) -> str | None:
    """A line of a multi-line call that holds whole arguments of it, one after another:
    what comes before them (the end of the argument before, `},`) stays on the line;
    each argument gets a line of its own at the line's indentation; a `)` closing the call
    stays after the last one, or every argument ends with a comma."""
    whole = [i for i, a in enumerate(parts) if a.lineno == a.end_lineno == number]
    if not whole or whole != list(range(whole[0], whole[-1] + 1)):
        return None
    first, last = parts[whole[0]], parts[whole[-1]]
    before = raw[: first.col_offset].decode("utf-8").strip()
    if before:
        previous = parts[whole[0] - 1] if whole[0] else None
        if (
            previous is None
            or previous.end_lineno != number
            or raw[previous.end_col_offset : first.col_offset].strip() != b","
        ):
            return None
    elif len(whole) < 2:
        return None
    texts = [_text(raw, parts[i]) for i in whole]
    after = raw[last.end_col_offset :].decode("utf-8").rstrip("\r\n")
    closing = (call.end_lineno == number) and after.lstrip().startswith(")")
    between = raw[first.col_offset : last.end_col_offset].decode("utf-8")
    if not _just(texts, between) or not (closing or after.strip() in ("", ",")):
        return None
    out = [f"{indent}{before}{newline}"] if before else []
    for i, text in enumerate(texts):
        end = after.lstrip() if closing and i == len(texts) - 1 else ","
        out.append(f"{indent}{text}{end}{newline}")
    return "".join(out)


def _explode_def(
    raw: bytes, fn: ast.FunctionDef | ast.AsyncFunctionDef, indent: str, unit: str, newline: str
) -> str | None:
    """`def name(a, b, c):` on one line, plain parameters only (as the rules write a
    metric_fn or a host_call function), with its parameters one per line."""
    args = fn.args
    if (
        args.posonlyargs
        or args.vararg
        or args.kwonlyargs
        or args.kwarg
        or args.defaults
        or any(a.annotation is not None for a in args.args)
        or fn.returns is not None
        or fn.lineno != args.args[-1].end_lineno
    ):
        return None
    names = [a.arg for a in args.args]
    opening = raw.find(f"def {fn.name}(".encode())
    if opening < 0:
        return None
    opening += len(f"def {fn.name}(")
    closing = raw.find(b")", opening)
    if closing < 0 or not _just(names, raw[opening:closing].decode("utf-8").strip()):
        return None
    body = "".join(f"{indent}{unit}{name},{newline}" for name in names)
    head = raw[:opening].decode("utf-8")
    rest = raw[closing:].decode("utf-8")
    return f"{head}{newline}{body}{indent}{rest}"


def _text(raw: bytes, node: ast.expr | ast.keyword) -> str:
    return raw[node.col_offset : node.end_col_offset].decode("utf-8")


def _just(texts: list[str], inner: str) -> bool:
    """Is `inner` the arguments `texts`, comma-separated (a trailing comma allowed)?"""
    inner = inner.rstrip(",").strip()
    return ", ".join(texts) == inner or ",".join(texts) == inner.replace(", ", ",")


def _indent_unit(source: str) -> str:
    """The indentation one block level adds in `source` (four spaces when it has none)."""
    lines = source.splitlines()
    for i, line in enumerate(lines):
        code = line.split("#", 1)[0].rstrip()
        if not code.endswith(":"):
            continue
        for following in lines[i + 1 :]:
            if not following.strip() or following.lstrip().startswith("#"):
                continue
            outer = line[: len(line) - len(line.lstrip())]
            inner = following[: len(following) - len(following.lstrip())]
            if inner.startswith(outer) and len(inner) > len(outer):
                return inner[len(outer) :]
            break
    return "    "
