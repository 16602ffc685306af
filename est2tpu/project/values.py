"""The value query: which expressions a name or attribute may hold at a point of a module.

Every rule's planning asks it the same way: a model_fn, an input function, a batch size are
each followed from where they are used, through assignments and aliases (`fn = model_fn`),
both arms of a conditional (`model_fn = a if flag else b`), the element of a dict literal a
key picks (`MODELS["cnn"]`, or every element for a key read at run time: `MODELS[FLAGS.net]`),
back to an expression the caller recognises (a project def, a factory's call, a lambda, a
`functools.partial`, a literal). The caller's scope says what a name is bound to where it
stands (`Scope`); this module only combines those answers.
"""

from __future__ import annotations

from typing import Protocol

import libcst as cst

from est2tpu.cstutil import literal_text

# How many names a value is followed through before the query gives up (a cycle, or a chain
# no program writes).
MAX_DEPTH = 8


class Scope(Protocol):
    """Where a value is asked for: the bindings live there."""

    def bound(self, name: str) -> cst.BaseExpression | None:
        """The value `name` was last assigned before this point (in this scope, or the
        one binding of an enclosing scope), or None when it is not a plain assignment's."""

    def is_definition(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` names a def (function or method) of the project from here."""

    def module_of(self, expr: cst.BaseExpression) -> Scope | None:
        """The top level of the project module `expr` names from here (`model` after
        `import model`), where its names are bound; None when it names none."""


Choice = tuple[Scope, cst.BaseExpression]  # an expression, and where it is to be read


def choices(scope: Scope, expr: cst.BaseExpression, depth: int = 0) -> list[Choice]:
    """The expressions `expr` may evaluate to, each with the scope it is to be read in, as
    far as the program shows it; `expr` itself when it is not a name bound here, a
    conditional, an attribute of a bound name or a project module, or a pick from a dict
    literal. An empty list: a pick with a literal key that no element has."""
    if depth > MAX_DEPTH:
        return [(scope, expr)]
    if isinstance(expr, cst.IfExp):
        return [*choices(scope, expr.body, depth + 1), *choices(scope, expr.orelse, depth + 1)]
    if isinstance(expr, cst.Name):
        if scope.is_definition(expr):
            return [(scope, expr)]
        held = scope.bound(expr.value)
        if held is None or held is expr:
            return [(scope, expr)]
        return choices(scope, held, depth + 1)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        if scope.is_definition(expr):
            return [(scope, expr)]
        module = scope.module_of(expr.value)
        if module is not None:
            # `model.MODELS`: the value the module binds the name to, read there
            if module.bound(expr.attr.value) is not None:
                return choices(module, expr.attr, depth + 1)
            return [(scope, expr)]
        # `trainer = Trainer(); trainer.model_fn`: the attribute of what the name holds
        owners = choices(scope, expr.value, depth + 1)
        if [o for _, o in owners] != [expr.value]:
            return [(where, expr.with_changes(value=owner)) for where, owner in owners]
        return [(scope, expr)]
    if isinstance(expr, cst.Subscript):
        picked = _dict_pick(scope, expr, depth)
        if picked is not None:
            return [c for where, value in picked for c in choices(where, value, depth + 1)]
    return [(scope, expr)]


def _dict_pick(scope: Scope, expr: cst.Subscript, depth: int) -> list[Choice] | None:
    """`MODELS["cnn"]` or `MODELS[flag]` where MODELS holds a dict literal: the elements the
    key may pick (the one of a literal key; all of them otherwise)."""
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    holders = choices(scope, expr.value, depth + 1)
    if len(holders) != 1 or not isinstance(holders[0][1], cst.Dict):
        return None
    where, held = holders[0]
    assert isinstance(held, cst.Dict)
    elements = held.elements
    if not all(isinstance(e, cst.DictElement) for e in elements):
        return None  # `{**base, ...}`: elements the literal does not show
    key = expr.slice[0].slice.value
    if isinstance(key, cst.SimpleString):
        wanted = literal_text(key)
        return [
            (where, e.value)
            for e in elements
            if isinstance(e, cst.DictElement)
            and isinstance(e.key, cst.SimpleString)
            and literal_text(e.key) == wanted
        ]
    return [(where, e.value) for e in elements]
