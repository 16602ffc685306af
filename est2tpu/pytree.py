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
    if not _walk(found, max_depth):
        return None
    return found


# The fields of each node type that may hold nodes (`ast.iter_child_nodes` looks at all),
# but `ctx`: a `Load`, `Store` or `Del` leaf under every name, attribute, subscript, starred,
# list and tuple (a third of a tree's nodes), which no rule asks for. Only its depth counts.
_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}
_HAS_CTX: dict[type[ast.AST], bool] = {}


def _fields(kind: type[ast.AST]) -> tuple[str, ...]:
    names = _FIELDS[kind] = tuple(name for name in kind._fields if name != "ctx")
    _HAS_CTX[kind] = "ctx" in kind._fields
    return names


def _walk(found: PyTree, max_depth: int) -> bool:
    """Fill `found.by_type` (expression contexts left out) and `found.in_fstrings`; False
    when the tree nests deeper than `max_depth` (the module at depth 1, each child one
    deeper, as `ast.iter_child_nodes` gives children: `Load` and `Store` contexts too).

    Walked a level at a time: the nodes of one depth, then their children. A field's list
    may hold what is not a node (a `global` statement's names, a dict's `None` keys for
    `**`): it is passed over when its level comes."""
    by_type = found.by_type
    fields_of, has_ctx = _FIELDS, _HAS_CTX
    level: list[object] = [found.tree]
    depth = 1
    while level:
        deep = depth > max_depth
        below: list[object] = []
        push, extend = below.append, below.extend
        context = False  # a node of this level has an expression context, one deeper
        for node in level:
            kind = type(node)
            names = fields_of.get(kind)  # type: ignore[arg-type]
            if names is None:
                if not isinstance(node, ast.AST):
                    continue  # a name or None in a field's list
                names = _fields(kind)  # type: ignore[arg-type]
            if deep:
                return False
            nodes = by_type.get(kind)  # type: ignore[arg-type]
            if nodes is None:
                nodes = by_type[kind] = []  # type: ignore[index]
            nodes.append(node)  # type: ignore[arg-type]
            if has_ctx[kind]:  # type: ignore[index]
                context = True
            for name in names:
                value = getattr(node, name, None)
                if value is None:
                    continue
                if type(value) is list:
                    extend(value)
                elif isinstance(value, ast.AST):
                    push(value)
        if context and depth + 1 > max_depth:
            return False  # a context, a leaf one deeper
        depth += 1
        level = below
    if ast.JoinedStr in by_type:
        found.in_fstrings = _inside(by_type[ast.JoinedStr])
    return True


def _inside(fstrings: list[ast.AST]) -> set[int]:
    """The ids of every node under these f-strings (expression contexts left out, as in
    `_walk`)."""
    inside: set[int] = set()
    stack: list[object] = [
        value
        for node in fstrings
        for name in _FIELDS[type(node)]
        for value in _children(getattr(node, name, None))
    ]
    while stack:
        node = stack.pop()
        if not isinstance(node, ast.AST) or id(node) in inside:
            continue
        inside.add(id(node))
        names = _FIELDS.get(type(node))
        if names is None:
            names = _fields(type(node))
        for name in names:
            stack.extend(_children(getattr(node, name, None)))
    return inside


def _children(value: object) -> list[object]:
    if type(value) is list:
        return value
    return [value] if isinstance(value, ast.AST) else []
