"""Where an input function batches: `.batch(N)` / `.padded_batch(N)` calls and
`params["batch_size"]`; read by the index builder and rewritten by TPU005."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from est2tpu.cstutil import walk
from est2tpu.index import call_arg
from est2tpu.names import dotted
from est2tpu.tfapi import BATCH_METHODS


def int_literal(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer)


def is_params_batch_size(expr: cst.BaseExpression) -> bool:
    """`params["batch_size"]` (either quote style)."""
    if not isinstance(expr, cst.Subscript) or dotted(expr.value) != "params":
        return False
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return False
    key = expr.slice[0].slice.value
    return isinstance(key, cst.SimpleString) and key.evaluated_value == "batch_size"


def batch_calls(fn: cst.FunctionDef) -> list[cst.Call]:
    """`.batch(...)`/`.padded_batch(...)` calls in a function body, not in nested defs."""
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
