"""A rule's transform over a tree (`transform`): LibCST's `tree.visit(rule)`, calling the
rule where it does something and rebuilding only what changed.

LibCST's transform calls the visitor's `on_visit`/`on_leave` at every node and builds every
node again, changed or not: a rule's pass over a module cost about the same wherever the
rule acted, and each pass of the fixpoint made a whole new tree. Here the rule is called
at the node types it hooks (its own `visit_<Type>`/`leave_<Type>`, the defs and calls
`Rule` tracks its scope and enclosing calls by, the statements when it enters only some),
in LibCST's order (`cstutil.child_fields`), and a node is built again only when one of its
children changed: a node the rule left alone is the same object in the new tree, and a
tree no rule changed is the tree it was. The rule gets the same calls with the same nodes
as under LibCST, and `updated_node` holds the same code; `tests/test_rulewalk.py` holds the
two to the same text on the fixtures and on every kind of syntax.
"""

from __future__ import annotations

import inspect
import re
from typing import cast

import libcst as cst
from libcst._nodes import op as _op
from libcst._nodes import whitespace as _whitespace

from est2tpu.cstutil import IS_NODE, IS_STATEMENT, LEAVES, child_fields

# The LibCST helper that visits each child field (`visit_required`, `visit_optional`,
# `visit_sentinel`, `visit_sequence`, `visit_body_sequence`, ...), by class and field: what
# becomes of a child the rule removes depends on it.
_HELPER = re.compile(r'(visit_\w+)\(\s*self,\s*"(\w+)"')
_HELPERS: dict[type, dict[str, set[str]]] = {}
_HOOKED: dict[type[cst.CSTTransformer], frozenset[str] | None] = {}


def _helpers(cls: type) -> dict[str, set[str]]:
    found = _HELPERS.get(cls)
    if found is None:
        found = {}
        try:
            source = inspect.getsource(cls._visit_and_replace_children)  # type: ignore[attr-defined]
        except (AttributeError, OSError, TypeError):
            source = ""
        for helper, field in _HELPER.findall(source):
            found.setdefault(field, set()).add(helper)
        _HELPERS[cls] = found
    return found


def hooked(rule_cls: type[cst.CSTTransformer]) -> frozenset[str] | None:
    """The node type names the rule is called at (see the module's doc); None when the
    rule defines attribute hooks (`visit_<Type>_<field>`), which only LibCST's walk calls."""
    if rule_cls not in _HOOKED:
        own: set[str] = set()
        attribute_hooks = False
        for name in dir(rule_cls):
            kind, _, rest = name.partition("_")
            if kind not in ("visit", "leave") or not rest:
                continue
            if getattr(rule_cls, name) is getattr(cst.CSTTransformer, name, None):
                continue
            if "_" in rest:
                attribute_hooks = True
            own.add(rest)
        _HOOKED[rule_cls] = (
            None if attribute_hooks else frozenset({"FunctionDef", "ClassDef", "Call", *own})
        )
    return _HOOKED[rule_cls]


# Whitespace, comments, operators and brackets: nodes whose children are only such nodes.
# A rule that hooks none of them is not walked through them (half the nodes of a module).
TRIVIA = frozenset(
    cls
    for module in (_op, _whitespace)
    for cls in vars(module).values()
    if inspect.isclass(cls) and issubclass(cls, cst.CSTNode) and cls.__module__ == module.__name__
) | {
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.Asynchronous,
}
TRIVIA_NAMES = frozenset(cls.__name__ for cls in TRIVIA)
_SKIPS: dict[frozenset[str], frozenset[type]] = {}


def skipped(names: frozenset[str]) -> frozenset[type]:
    """The node types a walk calling a rule at `names` need not enter: the trivia, and the
    names and literals (`cstutil.LEAVES`, a third of the rest) it does not hook, unless it
    hooks some trivia."""
    found = _SKIPS.get(names)
    if found is None:
        found = _SKIPS[names] = (
            frozenset()
            if names & TRIVIA_NAMES
            else TRIVIA | {cls for cls in LEAVES if cls.__name__ not in names}
        )
    return found


def transform(tree: cst.Module, rule: cst.CSTTransformer) -> cst.Module:
    """`tree.visit(rule)`: the same calls of the rule, the same code, unchanged nodes kept."""
    names = hooked(type(rule))
    if names is None or getattr(rule, "_ATTRIBUTE_HOOKS", False):
        return tree.visit(rule)
    statements = getattr(rule, "_keep", None) is not None
    result = _visit(tree, rule, names, statements, skipped(names))
    if isinstance(result, cst.RemovalSentinel):
        return tree.with_changes(body=(), header=(), footer=())
    assert isinstance(result, cst.Module)
    return result


_Visited = cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]


def _visit(
    node: cst.CSTNode,
    rule: cst.CSTTransformer,
    names: frozenset[str],
    statements: bool,
    skip: frozenset[type],
) -> _Visited:
    cls = type(node)
    fields = child_fields(cls)
    if fields is None:
        return node.visit(rule)  # LibCST's own walk, calling the rule at every node
    hook = cls.__name__ in names or (statements and IS_STATEMENT[cls])
    changes: dict[str, object] = {}
    if not hook or rule.on_visit(node):
        for name in fields:
            value = getattr(node, name)
            kind = type(value)
            if kind in skip:
                continue
            if IS_NODE[kind]:
                new = _visit(value, rule, names, statements, skip)
                if new is not value:
                    changes[name] = _single(cls, name, value, new)
            elif kind is tuple or kind is list:
                items = _sequence(cls, name, value, rule, names, statements, skip)
                if items is not None:
                    changes[name] = items
    updated = node.with_changes(**changes) if changes else node
    if hook:
        return rule.on_leave(node, updated)
    return updated


def _single(cls: type, field: str, old: cst.CSTNode, new: _Visited) -> object:
    """A single child's new value, as LibCST's helper for the field makes it."""
    if isinstance(new, cst.FlattenSentinel):
        raise TypeError(
            f"We got a FlattenSentinel while visiting a {type(old).__name__}. This "
            "node's parent does not allow for it to be it to be replaced with a sequence."
        )
    if isinstance(new, cst.RemovalSentinel):
        helpers = _helpers(cls).get(field, set())
        if "visit_optional" in helpers:
            return None
        if "visit_sentinel" in helpers:
            return cst.MaybeSentinel.DEFAULT
        raise TypeError(
            f"We got a RemovalSentinel while visiting a {type(old).__name__}. This "
            "node's parent does not allow it to be removed."
        )
    return new


def _sequence(
    cls: type,
    field: str,
    items: tuple[object, ...] | list[object],
    rule: cst.CSTTransformer,
    names: frozenset[str],
    statements: bool,
    skip: frozenset[type],
) -> tuple[object, ...] | None:
    """A sequence field's new items (None when every item is the same object), as
    `visit_sequence` / `visit_body_sequence` make them."""
    body: bool | None = None  # asked of LibCST's helpers once an item changes
    out: list[object] = []
    changed = False
    for item in items:
        kind = type(item)
        if kind in skip or not IS_NODE[kind]:
            out.append(item)
            continue
        node = cast("cst.CSTNode", item)  # IS_NODE says so (`isinstance` is an ABC call)
        new = _visit(node, rule, names, statements, skip)
        if new is item:
            out.append(item)
            continue
        changed = True
        if isinstance(new, cst.RemovalSentinel):
            continue
        if body is None:
            body = "visit_body_sequence" in _helpers(cls).get(field, set())
        parts = list(new) if isinstance(new, cst.FlattenSentinel) else [new]
        for part in parts:
            if body and not node._is_removable() and part._is_removable():
                continue
            out.append(part)
    return tuple(out) if changed else None
