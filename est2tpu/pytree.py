"""Python's own tree of a file, for the FINAL rules to report from without LibCST (`Rule.scan`).

One walk of `ast`'s tree gives what every such rule and the engine's checks need: its
nodes by type, how deep it nests, and which nodes sit inside f-strings. No LibCST here.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import cast

_LONE_CR = re.compile(r"\r(?!\n)")
# An f-string's opening (any prefix holding f): a text without one has no f-string.
_F_STRING = re.compile(r"\b(?:[fF][rR]?|[rR][fF])['\"]")


@dataclass
class PyTree:
    """A module's text and Python's tree of it, walked once."""

    text: str
    tree: ast.Module
    by_type: dict[type[ast.AST], list[ast.AST]] = field(default_factory=dict)
    in_fstrings: set[int] = field(default_factory=set)  # ids of nodes inside f-strings
    _lines: list[str] | None = None
    _imports: list[ast.Import | ast.ImportFrom] | None = None

    def of(self, *kinds: type[ast.AST]) -> list[ast.AST]:
        """Every node of these types (in no particular order)."""
        return [node for kind in kinds for node in self.by_type.get(kind, ())]

    def imports(self) -> list[ast.Import | ast.ImportFrom]:
        """Every import statement, in the text's order."""
        if self._imports is None:
            found = cast("list[ast.Import | ast.ImportFrom]", self.of(ast.Import, ast.ImportFrom))
            self._imports = sorted(found, key=lambda node: (node.lineno, node.col_offset))
        return self._imports

    def start(self, node: ast.AST) -> tuple[int, int]:
        """Where `node` starts as LibCST counts it: (line from 1, column from 0 in
        characters; Python's tree counts the column in UTF-8 bytes)."""
        line, column = node.lineno, node.col_offset  # type: ignore[attr-defined]
        text = self.line(line)
        if not text.isascii():
            column = len(text.encode("utf-8")[:column].decode("utf-8", "replace"))
        return line, column

    def starts(self, nodes: list[ast.AST]) -> dict[int, tuple[int, int]]:
        """`start` of each node, by id (as `cstutil.starts` gives LibCST's)."""
        return {id(node): self.start(node) for node in nodes}

    def line(self, number: int) -> str:
        """Line `number` (from 1) of the text, up to its `\\n` (a CRLF line keeps its `\\r`:
        lines are counted as Python and LibCST count them, and a lone CR never gets here)."""
        if self._lines is None:
            self._lines = self.text.split("\n")
        return self._lines[number - 1]


def read(text: str, max_depth: int) -> PyTree | None:
    """Python's tree of `text`, walked, when LibCST would place every node where Python
    does and would not refuse the text. None for text with a form feed, a vertical tab, a
    lone CR or a byte order mark, text Python cannot read, and a tree deeper than
    `max_depth` as `engine.too_deep` counts it: such a file is left to LibCST, which
    reports it as it always has."""
    if "\f" in text or "\v" in text or "\ufeff" in text or _LONE_CR.search(text):
        return None
    try:
        tree = compile(text, "<est2tpu>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    assert isinstance(tree, ast.Module)
    found = PyTree(text, tree)
    fstrings = _F_STRING.search(text) is not None
    if not _walk(found, max_depth, fstrings):
        return None
    if not fstrings and ast.JoinedStr in found.by_type:
        # An f-string the look for its opening missed: again, marking what is inside.
        found = PyTree(text, tree)
        _walk(found, max_depth, fstrings=True)
    return found


# The fields of each node type that may hold nodes (`ast.iter_child_nodes` looks at all),
# but `ctx`: a `Load`, `Store` or `Del` leaf under every name, attribute, subscript, starred,
# list and tuple (a third of a tree's nodes), which no rule asks for. Only its depth counts.
_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}
_HAS_CTX: dict[type[ast.AST], bool] = {}


def _walk(found: PyTree, max_depth: int, fstrings: bool) -> bool:
    """Fill `found.by_type` (expression contexts left out) and `found.in_fstrings`; False
    when the tree nests deeper than `max_depth` (the module at depth 1, each child one
    deeper, as `ast.iter_child_nodes` gives children: `Load` and `Store` contexts too)."""
    by_type = found.by_type
    inside = found.in_fstrings
    stack: list[tuple[ast.AST, int, bool]] = [(found.tree, 1, False)]
    pop, push = stack.pop, stack.append
    fields_of, has_ctx = _FIELDS, _HAS_CTX
    while stack:
        node, depth, in_f = pop()
        if depth > max_depth:
            return False
        kind = type(node)
        nodes = by_type.get(kind)
        if nodes is None:
            nodes = by_type[kind] = []
        nodes.append(node)
        if in_f:
            inside.add(id(node))
        elif fstrings and kind is ast.JoinedStr:
            in_f = True
        names = fields_of.get(kind)
        if names is None:
            names = fields_of[kind] = tuple(name for name in kind._fields if name != "ctx")
            has_ctx[kind] = "ctx" in kind._fields
        depth += 1
        if depth > max_depth and has_ctx[kind]:
            return False  # its context, a leaf one deeper
        for name in names:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                push((value, depth, in_f))
            elif type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push((item, depth, in_f))
    return True
