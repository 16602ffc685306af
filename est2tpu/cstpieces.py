"""LibCST's tree of a long text, parsed a run of statements at a time.

LibCST's native parser holds the whole token stream of a text while it builds the tree:
for a module of 8,000 one-line calls it reaches about 500 MB and 4 s, where the same
statements parsed a few hundred lines at a time take 60 MB and 3 s. `parse` cuts a long
text at statement boundaries that Python's own tree (already built for the nesting check)
gives: in every block (the module's body, a def's, a loop's ...) that holds more than
`PIECE_LINES` lines of statements, runs of consecutive statements are parsed on their own,
in a wrapper at their own indentation, and spliced into the tree of the rest of the text
(the skeleton, where each run stands as one placeholder statement). The tree is the one
`cst.parse_module(text)` gives (`tests/test_cstpieces.py` holds them equal node for node):

- a run starts on the line after the statement before it ends and ends on the line its last
  statement ends, so the comments and blank lines before each statement stay its
  `leading_lines`, and lines holding two statements (`a; b`) are never cut;
- the first and the last statement of a block stay in the skeleton: the block's header,
  footer and indentation are parsed as before, and so is the first indented line of the
  text, from which LibCST reads the module's `default_indent`;
- a compound statement longer than a piece is not put in a run; its own blocks are cut.

Whatever does not fit (a line Python counts differently, a run LibCST refuses in the
wrapper) leaves the text to one whole parse.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

# A run is cut once it holds this many lines; blocks shorter than two runs are not cut.
PIECE_LINES = 400
# Python's line ends (what `ast` counts lines by), each kept with its line.
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_PLACEHOLDER = "_est2tpu_piece_"


@dataclass(frozen=True)
class _Run:
    start: int  # first line (0-based) of the run's text
    end: int  # one past its last line
    indent: str  # the whitespace its statements start with


def parse(text: str, tree: ast.Module | None, piece_lines: int | None = None) -> cst.Module:
    """`cst.parse_module(text)`, in pieces when `text` is long (see the module's doc).

    `tree` is Python's tree of `text` (None when Python cannot parse it: then the text is
    parsed whole, and fails or not as it always has). `piece_lines`: PIECE_LINES."""
    piece_lines = piece_lines or PIECE_LINES
    if tree is None or text.count("\n") < 2 * piece_lines or _PLACEHOLDER in text:
        return cst.parse_module(text)
    lines = _LINES.findall(text)
    runs = list(_runs(tree.body, lines, piece_lines, _first_indented(tree)))
    if not runs:
        return cst.parse_module(text)
    parts: list[str] = []
    at = 0
    for k, run in enumerate(runs):
        parts += lines[at : run.start]
        parts.append(f"{run.indent}{_PLACEHOLDER}{k}{_newline(lines[run.end - 1])}")
        at = run.end
    parts += lines[at:]
    skeleton = cst.parse_module("".join(parts))
    pieces = [_parse_run(lines, run, skeleton) for run in runs]
    if any(piece is None for piece in pieces):
        return cst.parse_module(text)
    splice = _Splice([p for p in pieces if p is not None])
    module = skeleton.visit(splice)
    if splice.placed != len(runs):
        return cst.parse_module(text)
    assert isinstance(module, cst.Module)
    return module


def _newline(line: str) -> str:
    stripped = line.rstrip("\r\n")
    return line[len(stripped) :] or "\n"


def _parse_run(
    lines: Sequence[str], run: _Run, skeleton: cst.Module
) -> Sequence[cst.BaseStatement] | None:
    # The wrapper opens with a block at the module's own indentation and line end, so that
    # LibCST reads the same defaults from it (a block's `indent`, a line's `newline` are
    # None where they equal them); then `pass` at the run's indentation, so that the
    # comments before the run's first statement stay its `leading_lines`.
    indent, newline = skeleton.default_indent, skeleton.default_newline
    head = f"if 1:{newline}{indent}pass{newline}"
    body = "".join(lines[run.start : run.end])
    try:
        if run.indent:
            module = cst.parse_module(f"{head}if 1:{newline}{run.indent}pass{newline}{body}")
            block = module.body[1]
            if not isinstance(block, cst.If) or not isinstance(block.body, cst.IndentedBlock):
                return None
            return block.body.body[1:]
        return cst.parse_module(f"{head}pass{newline}{body}").body[2:]
    except (cst.ParserSyntaxError, RecursionError):
        return None


class _Splice(cst.CSTTransformer):
    """Puts each run's statements where its placeholder stands."""

    def __init__(self, pieces: list[Sequence[cst.BaseStatement]]) -> None:
        super().__init__()
        self.pieces = pieces
        self.placed = 0

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return False

    def visit_BaseExpression(self, node: cst.BaseExpression) -> bool:
        return False

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        if len(updated_node.body) == 1:
            stmt = updated_node.body[0]
            if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Name):
                name = stmt.value.value
                if name.startswith(_PLACEHOLDER):
                    self.placed += 1
                    return cst.FlattenSentinel(self.pieces[int(name[len(_PLACEHOLDER) :])])
        return updated_node


def _first_line(stmt: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno] + [d.lineno for d in decorators]) - 1


def _first_indented(tree: ast.Module) -> int:
    """The first line (0-based) of the text's first indented block, from which LibCST
    reads `default_indent`: no run may start before or on it (-1 without one)."""
    first = -1
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        for block in _blocks(node):
            if block and block[0].lineno > getattr(node, "lineno", 0):
                line = _first_line(block[0])
                if first < 0 or line < first:
                    first = line
            stack.extend(block)
    return first


def _blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """The statement lists a node holds (each handler's and case's too)."""
    for name in ("body", "orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value
    for name in ("handlers", "cases"):
        for part in getattr(node, name, None) or ():
            yield part.body


def _runs(
    block: list[ast.stmt], lines: Sequence[str], piece_lines: int, first_indented: int
) -> Iterator[_Run]:
    """The runs of `block` (and of the blocks in its long statements), in text order."""
    if not block:
        return
    starts = [_first_line(s) for s in block]
    ends = [s.end_lineno or s.lineno for s in block]  # one past the last line, 0-based
    indent = _indent(lines, starts[0])
    cuttable = (
        indent is not None
        and ends[-1] - starts[0] >= 2 * piece_lines
        and all(ends[i] <= starts[i + 1] for i in range(len(block) - 1))
    )
    run: list[int] = []

    def close() -> Iterator[_Run]:
        if len(run) >= 2 and indent is not None:
            yield _Run(ends[run[0] - 1], ends[run[-1]], indent)
        run.clear()

    for i, stmt in enumerate(block):
        long = ends[i] - starts[i] > piece_lines
        if (
            cuttable
            and 0 < i < len(block) - 1
            and not long
            and starts[i] > first_indented
            and _indent(lines, starts[i]) == indent
        ):
            run.append(i)
            if ends[i] - ends[run[0] - 1] >= piece_lines:
                yield from close()
            continue
        yield from close()
        if long:
            for inner in _blocks(stmt):
                yield from _runs(inner, lines, piece_lines, first_indented)
    yield from close()


def _indent(lines: Sequence[str], line: int) -> str | None:
    """The whitespace a statement's first line starts with (None past the text's lines)."""
    if line >= len(lines):
        return None
    text = lines[line]
    return text[: len(text) - len(text.lstrip(" \t"))]
