"""Where a model_fn binds and reads a name: the statements, blocks and paths TPU003 follows
to find how the eval metrics dict is built and where its tensors come from. Not a rule
(the registry skips `_`-prefixed modules)."""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence

import libcst as cst

from est2tpu.cstutil import (
    free_names,
    indented_blocks,
    iter_calls,
    kwarg,
    target_names,
    walk,
)
from est2tpu.names import dotted


def statement_position(fn: cst.FunctionDef, stmt: cst.CSTNode) -> int:
    order: list[cst.CSTNode] = []

    class V(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            order.append(node)

    walk(fn, V())
    return next(i for i, n in enumerate(order) if n is stmt)


def used_only_by(
    fn: cst.FunctionDef,
    built: Sequence[cst.SimpleStatementLine],
    users: Sequence[cst.CSTNode],
) -> list[cst.SimpleStatementLine]:
    """The metric statements of `built` whose names nothing but `users` (the metrics moving
    into metric_fn) and the other metric statements read: they move instead of being copied.
    One still read elsewhere (a training summary of its update op) stays as well."""
    inside = {id(n) for node in [*built, *users] for n in free_names(node)}
    out = []
    for stmt in built:
        names = set(assigned_in(stmt))
        elsewhere = [n for n in free_names(fn.body) if n.value in names and id(n) not in inside]
        if not elsewhere:
            out.append(stmt)
    return out


def assigned_in(stmt: cst.CSTNode) -> list[str]:
    out: list[str] = []

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            out.extend(target_names(node.target))

    walk(stmt, V())
    return out


def bindings(node: cst.CSTNode) -> collections.Counter[str]:
    """How often each name is bound in `node`, counted as `assigned_names` counts."""
    out: collections.Counter[str] = collections.Counter()

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            out[n.name.value] += 1
            return False

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            out.update(target_names(n.target))

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            out.update(target_names(n.target))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            out.update(target_names(n.target))

        def visit_For(self, n: cst.For) -> None:
            out.update(target_names(n.target))

        def visit_WithItem(self, n: cst.WithItem) -> None:
            if n.asname is not None:
                out.update(target_names(n.asname.name))

    walk(node, V())
    return out


def only_fills(stmt: cst.BaseCompoundStatement, var: str) -> bool:
    """`stmt` reads `var` only to set its items (`var[k] = ...`, `var.update(...)`)."""
    reads = [n for n in free_names(stmt) if n.value == var]
    if not reads:
        return False
    sets: list[cst.SimpleStatementLine] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if statement_kind(node, var) == "set":
                sets.append(node)

    walk(stmt, V())
    in_sets = {id(n) for st in sets for n in free_names(st) if n.value == var}
    # a set's value must not read the dict either (`var[k] = var[j]`)
    for st in sets:
        small = st.body[0]
        value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
        if value is not None and any(n.value == var for n in free_names(value)):
            return False
    return all(id(n) in in_sets for n in reads)


def header_reads(stmt: cst.BaseStatement, var: str) -> bool:
    """`stmt` reads `var` outside the simple statements of its blocks (a loop's iterable,
    an if's test, a with item): those reads are seen by no other check."""
    total = sum(n.value == var for n in free_names(stmt))
    inner: list[cst.SimpleStatementLine] = []

    class V(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            inner.append(node)
            return False

    walk(stmt, V())
    return total > sum(n.value == var for st in inner for n in free_names(st))


def unchanged_between(
    fn: cst.FunctionDef, stmt: cst.SimpleStatementLine, use: cst.CSTNode, name: str
) -> bool:
    """`stmt` and the statement holding `use` are in one block, with no loop around `use`
    and no binding of `name` from `stmt` to it: the tensors passed at `use` are those that
    `stmt` read."""
    holder = holding_block(fn, use)
    if holder is None:
        return False
    block, at = holder
    index = next((i for i, st in enumerate(block.body[:at]) if st is stmt), None)
    if index is None:
        return False
    return not any(bindings(st)[name] for st in block.body[index : at + 1])


def holding_block(fn: cst.FunctionDef, use: cst.CSTNode) -> tuple[cst.IndentedBlock, int] | None:
    """The innermost block of the model_fn with a statement holding `use`, and its index;
    None when a loop holds it."""
    holder: tuple[cst.IndentedBlock, int] | None = None
    for block in indented_blocks(fn, into_defs=False):  # outer blocks first
        for i, stmt in enumerate(block.body):
            if contains(stmt, use):
                holder = (block, i)
                if isinstance(stmt, (cst.For, cst.While)):
                    return None
    return holder


def reaching_binding(
    fn: cst.FunctionDef, name: str, use: cst.CSTNode
) -> cst.SimpleStatementLine | None:
    """The binding of `name` that every path to `use` goes through last, when the model_fn
    binds it in several places (a metric built again in each mode's branch): a statement of
    the block that holds `use`, before it, with no other binding of `name` in between and no
    loop around `use` (a later binding could come round to it)."""
    holder = holding_block(fn, use)
    if holder is None:
        return None
    block, at = holder
    if bindings(block.body[at])[name] and not isinstance(block.body[at], cst.SimpleStatementLine):
        return None
    for stmt in reversed(block.body[:at]):
        if bindings(stmt)[name]:
            return stmt if isinstance(stmt, cst.SimpleStatementLine) else None
    return None


def only_spec_use(stmt: cst.SimpleStatementLine, var: str) -> bool:
    """The statement reads `var` only as `eval_metric_ops=var`."""
    reads = [n for n in free_names(stmt) if n.value == var]
    uses = 0
    for call in iter_calls(stmt):
        arg = kwarg(call, "eval_metric_ops")
        if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == var:
            uses += 1
    return uses == len(reads)


def statement_kind(
    stmt: cst.SimpleStatementLine,
    var: str,
    helper: Callable[[cst.BaseExpression], bool] | None = None,
) -> str | None:
    if len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if (
        isinstance(small, cst.Assign)
        and len(small.targets) > 1
        and isinstance(small.value, cst.Name)
        and small.value.value == "None"
        and all(isinstance(t.target, cst.Name) for t in small.targets)
        and any(dotted(t.target) == var for t in small.targets)
    ):
        return "none"  # `loss = train_op = var = None`: the modes without metrics
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Name) and target.value == var:
            value = small.value
            if isinstance(value, cst.Dict) or (
                isinstance(value, cst.Call) and dotted(value.func) == "dict"
            ):
                return "init"
            if isinstance(value, cst.Name) and value.value == "None":
                return "none"
            if helper is not None and helper(value):
                return "init"
            return "reassign"
        if isinstance(target, cst.Subscript) and dotted(target.value) == var:
            return "set"
    if (
        isinstance(small, cst.Expr)
        and isinstance(small.value, cst.Call)
        and dotted(small.value.func) == f"{var}.update"
    ):
        return "set"
    return None


def contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    class V(cst.CSTVisitor):
        hit = False

        def on_visit(self, n: cst.CSTNode) -> bool:
            if n is target:
                V.hit = True
            return not V.hit

    v = V()
    walk(node, v)
    return V.hit


def find_equal(node: cst.CSTNode, target: cst.CSTNode) -> cst.CSTNode:
    found: list[cst.CSTNode] = []

    class V(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if not found and n.deep_equals(target):
                found.append(n)
            return not found

    walk(node, V())
    return found[0]
