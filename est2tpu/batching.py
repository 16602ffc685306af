"""Where an input function batches: `.batch(N)` / `.padded_batch(N)` calls and
`params["batch_size"]`; read by the index builder and rewritten by TPU005."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from est2tpu.cstutil import literal_text, walk
from est2tpu.index import call_arg
from est2tpu.names import dotted
from est2tpu.tfapi import BATCH_METHODS


def int_literal(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer)


def is_params_batch_size(expr: cst.BaseExpression) -> bool:
    """`params["batch_size"]` (either quote style), or `params.get("batch_size", E)`."""
    if params_get_default(expr) is not None:
        return True
    if not isinstance(expr, cst.Subscript) or dotted(expr.value) != "params":
        return False
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return False
    key = expr.slice[0].slice.value
    return isinstance(key, cst.SimpleString) and literal_text(key) == "batch_size"


def params_get_default(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`E` of `params.get("batch_size", E)`: the batch size of an input function that
    also feeds code passing no batch size (InputFnPlan.other_consumers)."""
    if not (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "get"
        and dotted(expr.func.value) == "params"
        and len(expr.args) == 2
        and all(a.keyword is None and not a.star for a in expr.args)
    ):
        return None
    key = expr.args[0].value
    if isinstance(key, cst.SimpleString) and literal_text(key) == "batch_size":
        return expr.args[1].value
    return None


def params_batch_size_or(own: cst.BaseExpression) -> cst.Call:
    """`params.get("batch_size", own)`."""
    return cst.Call(
        cst.Attribute(cst.Name("params"), cst.Name("get")),
        [
            cst.Arg(
                cst.SimpleString('"batch_size"'),
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
            ),
            cst.Arg(own),
        ],
    )


def batch_calls(fn: cst.FunctionDef) -> list[cst.Call]:
    """`.batch(...)`/`.padded_batch(...)` calls in a function body, not in nested defs.

    Asked again for the same def at every use of it as an input function (a module calling
    `evaluate` 8,000 times asked it 24,000 times, each a walk of the def): a def's tree never
    changes, so its answer is kept (`_BATCH_CALLS`).
    """
    known = _BATCH_CALLS.get(fn)
    if known is None:
        if len(_BATCH_CALLS) >= _BATCH_CALLS_KEPT:
            _BATCH_CALLS.clear()
        known = _BATCH_CALLS[fn] = tuple(_batch_calls(fn))
    return list(known)


# A def's `batch_calls`, by the def (LibCST nodes hash and compare by identity, and the key
# keeps its def alive, so that no other node takes its id); cleared when it holds this many.
_BATCH_CALLS: dict[cst.FunctionDef, tuple[cst.Call, ...]] = {}
_BATCH_CALLS_KEPT = 1024


def _batch_calls(fn: cst.FunctionDef) -> list[cst.Call]:
    found: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in BATCH_METHODS:
                found.append(node)

    walk(fn, V())
    return found


def batch_size_arg(call: cst.Call) -> cst.Arg | None:
    return call_arg(call, "batch_size", 0)


_ONE_SHOT = "data.make_one_shot_iterator"


def one_shot_dataset(
    expr: cst.BaseExpression, tf_name: Callable[[cst.BaseExpression], str | None]
) -> cst.BaseExpression | None:
    """The dataset `E` of `E.make_one_shot_iterator()` / `tf...data.make_one_shot_iterator(E)`.

    A one-shot iterator (unlike an initializable one) needs nothing run before its first
    `get_next()`: the Estimator makes exactly that iterator over a returned dataset.
    """
    if not isinstance(expr, cst.Call):
        return None
    if tf_name(expr.func) == _ONE_SHOT:
        if len(expr.args) == 1 and expr.args[0].keyword is None and not expr.args[0].star:
            return expr.args[0].value
        return None
    func = expr.func
    if (
        isinstance(func, cst.Attribute)
        and func.attr.value == "make_one_shot_iterator"
        and not expr.args
        and tf_name(func) is None
    ):
        return func.value
    return None


def is_get_next(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "get_next"
        and not expr.args
    )


def get_next_of_one_shot(
    expr: cst.BaseExpression, tf_name: Callable[[cst.BaseExpression], str | None]
) -> cst.BaseExpression | None:
    """The dataset `E` of `<one-shot iterator over E>.get_next()` written in one expression."""
    if not is_get_next(expr):
        return None
    assert isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
    return one_shot_dataset(expr.func.value, tf_name)


def unpack_target(node: cst.BaseStatement) -> tuple[list[str], cst.BaseExpression] | None:
    """`a, b = value` (or `a = value`), a simple statement line: the names and the value."""
    if not (
        isinstance(node, cst.SimpleStatementLine)
        and len(node.body) == 1
        and isinstance(node.body[0], cst.Assign)
        and len(node.body[0].targets) == 1
    ):
        return None
    target = node.body[0].targets[0].target
    names = _plain_names(target)
    return (names, node.body[0].value) if names else None


def returned_value(node: cst.BaseStatement) -> cst.BaseExpression | None:
    if (
        isinstance(node, cst.SimpleStatementLine)
        and len(node.body) == 1
        and isinstance(node.body[0], cst.Return)
    ):
        return node.body[0].value
    return None


def _plain_names(expr: cst.BaseExpression) -> list[str]:
    """`a` -> [a]; `a, b` / `(a, b)` -> [a, b]; anything else -> []."""
    if isinstance(expr, cst.Name):
        return [expr.value]
    if isinstance(expr, cst.Tuple) and all(
        isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in expr.elements
    ):
        return [e.value.value for e in expr.elements if isinstance(e.value, cst.Name)]
    return []


def returns_names(node: cst.BaseStatement, names: Sequence[str]) -> bool:
    """`return a, b` for names [a, b], in that order."""
    value = returned_value(node)
    return value is not None and _plain_names(value) == list(names) and bool(names)


def last_block(fn: cst.FunctionDef) -> cst.IndentedBlock | None:
    """The block a function's last statement sits in, through trailing `with` blocks."""
    block = fn.body if isinstance(fn.body, cst.IndentedBlock) else None
    while block is not None and block.body and isinstance(block.body[-1], cst.With):
        inner = block.body[-1].body
        block = inner if isinstance(inner, cst.IndentedBlock) else None
    return block


_NOT_STRUCTURE = (
    cst.Call,
    cst.Lambda,
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.BooleanOperation,
    cst.Comparison,
    cst.Subscript,
    cst.IfExp,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.Await,
    cst.Yield,
    cst.NamedExpr,
    cst.StarredElement,
    cst.StarredDictElement,
    cst.FormattedString,
)


def is_structure(expr: cst.BaseExpression) -> bool:
    """Tuples, lists and dicts of names, attributes and literals: computes nothing, so it
    builds the same value from a dataset element as from iterator tensors."""

    class V(cst.CSTVisitor):
        ok = True

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, _NOT_STRUCTURE):
                V.ok = False
            return V.ok

    walk(expr, V())
    return V.ok
