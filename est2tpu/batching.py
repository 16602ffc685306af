"""Where an input function batches: `.batch(N)` / `.padded_batch(N)` calls and
`params["batch_size"]`; read by the index builder and rewritten by TPU005."""

from __future__ import annotations

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
