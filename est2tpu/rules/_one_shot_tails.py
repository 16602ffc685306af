"""Rewrites of input functions that hand out a one-shot iterator's tensors (or unpack a
helper's), so that they return the dataset: which tails can be mapped over each element,
and the mapped function."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import libcst as cst

from est2tpu.batching import (
    is_get_next,
    one_shot_dataset,
    returned_value,
    returns_names,
    unpack_target,
)
from est2tpu.cstutil import (
    free_names,
    iter_calls,
    name_count,
    params_subscript,
    target_names,
    unique_name,
    walk,
    with_kwarg,
)
from est2tpu.index import UseSite, node_code
from est2tpu.rule import Rule


def map_unpacked(fn: cst.FunctionDef, code: str, names: list[str]) -> cst.FunctionDef:
    """`a, b = helper(...)` then `return {"x": a}, b` -> `return helper(...).map(lambda a,
    b: ({"x": a}, b))`: the helper returns its dataset, whose elements are what its iterator
    gave, and the structure is built from each element as it was from the tensors."""

    class Map(cst.CSTTransformer):
        def leave_IndentedBlock(
            self, o: cst.IndentedBlock, u: cst.IndentedBlock
        ) -> cst.IndentedBlock:
            body = list(u.body)
            if len(body) < 2:
                return u
            unpacked = unpack_target(body[-2])
            value = returned_value(body[-1])
            if unpacked is None or value is None or node_code(unpacked[1]) != code:
                return u
            if isinstance(value, cst.Tuple) and not value.lpar:
                value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            mapped = cst.Call(
                cst.Attribute(unpacked[1], cst.Name("map")),
                [
                    cst.Arg(
                        cst.Lambda(
                            cst.Parameters(
                                [
                                    cst.Param(
                                        cst.Name(n),
                                        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                                        if i < len(names) - 1
                                        else cst.MaybeSentinel.DEFAULT,
                                    )
                                    for i, n in enumerate(names)
                                ]
                            ),
                            value,
                        )
                    )
                ],
            )
            last = body[-1]
            assert isinstance(last, cst.SimpleStatementLine)
            ret = last.body[0]
            assert isinstance(ret, cst.Return)
            assign = body[-2]
            assert isinstance(assign, cst.SimpleStatementLine)
            new = last.with_changes(
                body=[ret.with_changes(value=mapped)],
                leading_lines=[*assign.leading_lines, *last.leading_lines],
            )
            return u.with_changes(body=[*body[:-2], new])

    result = fn.visit(Map())
    assert isinstance(result, cst.FunctionDef)
    return result


def unpacked_one_shot(rule: Rule, fn: cst.FunctionDef) -> cst.FunctionDef | None:
    """A helper ending `a, b = <one-shot iterator over E>.get_next()`, `return a, b` (the
    iterator made there or in the statement before) returns E (the index checked that the
    names and the iterator are used nowhere else)."""
    if not isinstance(fn.body, cst.IndentedBlock) or len(fn.body.body) < 2:
        return None
    body = list(fn.body.body)
    unpacked = unpack_target(body[-2])
    if unpacked is None or not returns_names(body[-1], unpacked[0]):
        return None
    value = unpacked[1]
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
        return None
    held = value.func.value
    dataset = one_shot_of(rule, held)
    cut = 2
    if dataset is None and isinstance(held, cst.Name) and len(body) >= 3:
        made = unpack_target(body[-3])
        if made is not None and made[0] == [held.value]:
            dataset, cut = one_shot_of(rule, made[1]), 3
    if dataset is None:
        return None
    last = body[-1]
    assert isinstance(last, cst.SimpleStatementLine)
    ret = last.body[0]
    assert isinstance(ret, cst.Return)
    leading = [
        line
        for stmt in body[-cut:]
        if isinstance(stmt, cst.SimpleStatementLine)
        for line in stmt.leading_lines
    ]
    new = last.with_changes(body=[ret.with_changes(value=dataset)], leading_lines=leading)
    return fn.with_changes(body=fn.body.with_changes(body=[*body[:-cut], new]))


def lambda_with_params(lam: cst.Lambda, site: UseSite) -> cst.Lambda:
    """`lambda: f(x, 32)` -> `lambda params: f(x, params["batch_size"])` (or passing
    params=params on to an `f` that reads the batch size from them)."""
    body = lam.body
    assert isinstance(body, cst.Call)
    args = list(body.args)
    if site.lambda_batch_arg is not None and site.lambda_batch_arg < len(args):
        args[site.lambda_batch_arg] = args[site.lambda_batch_arg].with_changes(
            value=params_subscript()
        )
    elif site.lambda_forward_params:
        body = with_kwarg(body, "params", cst.Name("params"))
        args = list(body.args)
    return lam.with_changes(
        params=cst.Parameters([cst.Param(cst.Name("params"))]),
        body=body.with_changes(args=args),
    )


def repeats(fn: cst.FunctionDef) -> bool:
    class V(cst.CSTVisitor):
        found = False

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value == "repeat":
                V.found = True

    v = V()
    walk(fn, v)
    return V.found


ITERATOR_METHODS = frozenset(
    {"make_one_shot_iterator", "make_initializable_iterator", "get_next", "__iter__"}
)


def iterator_method(rule: Rule, call: cst.Call) -> str | None:
    """`make_one_shot_iterator` for `ds.make_one_shot_iterator()` and
    `tf.compat.v1.data.make_one_shot_iterator(ds)`, and so on for the iterator API."""
    name = rule.tf_name(call.func)
    if name is not None and name.startswith("data.") and name[5:] in ITERATOR_METHODS:
        return name[5:]
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in ITERATOR_METHODS:
        return call.func.attr.value
    return None


def one_shot_of(rule: Rule, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The dataset `E` of `E.make_one_shot_iterator()` / `make_one_shot_iterator(E)`."""
    return one_shot_dataset(expr, rule.tf_name)


def one_shot_return(
    rule: Rule, fn: cst.FunctionDef
) -> tuple[cst.Return, cst.BaseExpression, cst.SimpleStatementLine | None] | None:
    """The function's one return, `return <one-shot iterator over E>.get_next()`, with E and
    the statement that made the iterator (`it = E.make_one_shot_iterator()` right before the
    return, `it` used nowhere else), or None when that is not exactly what it does."""
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else []
    returns = return_statements(fn)
    if len(returns) != 1 or not body:
        return None
    last = body[-1]
    if not (
        isinstance(last, cst.SimpleStatementLine)
        and len(last.body) == 1
        and last.body[0] is returns[0]
    ):
        return None
    ret = returns[0]
    value = ret.value
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "get_next"
        and not value.args
    ):
        return None
    held = value.func.value
    dataset = one_shot_of(rule, held)
    if dataset is not None:
        others = [c for c in iter_calls(fn) if iterator_method(rule, c) is not None]
        return (ret, dataset, None) if len(others) == 2 else None
    if not isinstance(held, cst.Name) or len(body) < 2:
        return None
    made = body[-2]
    if not (
        isinstance(made, cst.SimpleStatementLine)
        and len(made.body) == 1
        and isinstance(made.body[0], cst.Assign)
        and len(made.body[0].targets) == 1
        and isinstance(made.body[0].targets[0].target, cst.Name)
        and made.body[0].targets[0].target.value == held.value
    ):
        return None
    dataset = one_shot_of(rule, made.body[0].value)
    uses = name_count(fn, held.value)
    others = [c for c in iter_calls(fn) if iterator_method(rule, c) is not None]
    if dataset is None or uses != 2 or len(others) != 2:
        return None
    return ret, dataset, made


def return_statements(fn: cst.FunctionDef) -> list[cst.Return]:
    found: list[cst.Return] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_Return(self, node: cst.Return) -> None:
            found.append(node)

    walk(fn, V())
    return found


# Iterators: the statements after `get_next()` that only restructure its value.
@dataclasses.dataclass(frozen=True)
class Tail:
    start: int  # index of the first statement replaced (the iterator's, or get_next()'s)
    target: cst.BaseExpression  # what get_next() is assigned to: a name or a tuple of names
    dataset: cst.BaseExpression  # the dataset the one-shot iterator reads
    body: Sequence[cst.BaseStatement]  # the statements after get_next(), the last a return
    identity: bool  # the tail returns the get_next() value exactly as it came


# Methods that read or restructure a dict of tensors; the map function gets its own copy.
STRUCTURE_METHODS = frozenset({"pop", "get", "copy", "keys", "values", "items", "update"})
PLAIN_BUILTINS = frozenset({"dict", "tuple", "list", "len", "zip", "int", "float", "str"})
# TensorFlow functions whose result is not a pure function of their arguments, or that act
# outside the dataset (a map function would run them once per element, in tf.data's graph).
IMPURE_TF = (
    "random",
    "summary",
    "print",
    "Print",
    "py_func",
    "py_function",
    "numpy_function",
    "Variable",
    "variable",
    "assign",
    "placeholder",
    "truncated_normal",
    "multinomial",
    "dropout",
    "io.gfile",
    "io.write",
    "write_file",
    "debugging",
    "train.",
    "collection",
    "Session",
    "data.",
    "get_",
)


def iterator_tail(rule: Rule, fn: cst.FunctionDef) -> Tail | None:
    """`T = <one-shot iterator over E>.get_next()` (or `it = <one-shot over E>` right before
    `T = it.get_next()`) at the top of the function's body, followed by statements that
    compute the return value from T alone: Python-level branches (on `mode`, params, ...),
    assignments, subscripts, dict methods and pure TensorFlow ops.  Then the function can
    return E mapped by those statements: the Estimator makes the same iterator over it on
    CPU and sees the same values in the same order.  None when that is not provable."""
    if not isinstance(fn.body, cst.IndentedBlock) or fn.asynchronous is not None:
        return None
    body = fn.body.body
    iterator_calls = [c for c in iter_calls(fn) if iterator_method(rule, c) is not None]
    if len(iterator_calls) != 2:
        return None
    for at, stmt in enumerate(body):
        assign = single_assign(stmt)
        if assign is None or not is_get_next(assign.value):
            continue
        target = assign.targets[0].target
        if not names_target(target):
            return None
        assert isinstance(assign.value, cst.Call) and isinstance(assign.value.func, cst.Attribute)
        held = assign.value.func.value
        start = at
        dataset = one_shot_dataset(held, rule.tf_name)
        if dataset is None:
            made = single_assign(body[at - 1]) if at > 0 else None
            if (
                not isinstance(held, cst.Name)
                or made is None
                or not isinstance(made.targets[0].target, cst.Name)
                or made.targets[0].target.value != held.value
                or name_count(fn, held.value) != 2
            ):
                return None
            dataset = one_shot_dataset(made.value, rule.tf_name)
            start = at - 1
        if dataset is None:
            return None
        tail = body[at + 1 :]
        if not restructures(rule, fn, body[:start], target, tail):
            return None
        return Tail(start, target, dataset, tail, returns_as_is(target, tail))
    return None


def single_assign(stmt: cst.BaseStatement) -> cst.Assign | None:
    if (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Assign)
        and len(stmt.body[0].targets) == 1
    ):
        return stmt.body[0]
    return None


def names_target(target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Name):
        return True
    return (
        isinstance(target, cst.Tuple)
        and len(target.elements) > 1
        and all(
            isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements
        )
    )


def returns_as_is(target: cst.BaseExpression, tail: Sequence[cst.BaseStatement]) -> bool:
    """`return T` after `T = ...get_next()`, `return a, b` after `a, b = ...get_next()`."""
    if len(tail) != 1 or not isinstance(tail[0], cst.SimpleStatementLine):
        return False
    ret = tail[0].body[0]
    if not isinstance(ret, cst.Return) or ret.value is None:
        return False
    return target_names(ret.value) == target_names(target) and type(ret.value) is type(target)


def restructures(
    rule: Rule,
    fn: cst.FunctionDef,
    before: Sequence[cst.BaseStatement],
    target: cst.BaseExpression,
    tail: Sequence[cst.BaseStatement],
) -> bool:
    """Whether `tail` only computes a return value from the get_next() value `target`."""
    if not tail or not isinstance(tail[-1], cst.SimpleStatementLine):
        return False
    if not isinstance(tail[-1].body[-1], cst.Return):
        return False
    element = set(target_names(target))
    local: set[str] = set(element)
    tail_block = cst.IndentedBlock(body=list(tail))
    for stmt_targets in tail_assign_targets(tail_block):
        local.update(target_names(stmt_targets))
    # The tail's own names are new: none is read or bound before (a closure would see them).
    params = fn.params
    outside = {
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
    }
    outside |= {n.value for stmt in before for n in all_names(stmt)}
    if (local - element) & outside:
        return False
    if len(return_statements(fn)) != len(returns_in(tail_block)):
        return False  # every return of the function is in the tail
    return statements_ok(rule, tail, element, local)


def tail_assign_targets(block: cst.IndentedBlock) -> list[cst.BaseExpression]:
    found: list[cst.BaseExpression] = []

    class V(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            found.extend(t.target for t in node.targets)

    walk(block, V())
    return found


def returns_in(block: cst.IndentedBlock) -> list[cst.Return]:
    found: list[cst.Return] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            found.append(node)

    walk(block, V())
    return found


def statements_ok(
    rule: Rule, stmts: Sequence[cst.BaseStatement], element: set[str], local: set[str]
) -> bool:
    for stmt in stmts:
        if isinstance(stmt, cst.If):
            # Python-level branches only: a test on the tensors would differ under autograph
            if {n.value for n in free_names(stmt.test)} & local:
                return False
            if not statements_ok(rule, stmt.body.body, element, local):  # type: ignore[arg-type]
                return False
            orelse = stmt.orelse
            if isinstance(orelse, cst.If):
                if not statements_ok(rule, [orelse], element, local):
                    return False
            elif orelse is not None and not statements_ok(
                rule,
                orelse.body.body,  # type: ignore[arg-type]
                element,
                local,
            ):
                return False
            continue
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        for small in stmt.body:
            if not small_ok(rule, small, local):
                return False
    return True


def small_ok(rule: Rule, small: cst.BaseSmallStatement, local: set[str]) -> bool:
    if isinstance(small, cst.Pass):
        return True
    if isinstance(small, cst.Return):
        return small.value is not None and expr_ok(rule, small.value, local)
    if isinstance(small, cst.Assign):
        for t in small.targets:
            target = t.target
            if isinstance(target, cst.Subscript):
                if root(target) not in local or not expr_ok(rule, target, local):
                    return False
            elif not names_target(target):
                return False
        return expr_ok(rule, small.value, local)
    if isinstance(small, cst.Expr):
        value = small.value
        # a statement of its own may only change the get_next() structure
        return (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in STRUCTURE_METHODS
            and root(value.func.value) in local
            and expr_ok(rule, value, local)
        )
    if isinstance(small, cst.Del):
        return isinstance(small.target, cst.Subscript) and root(small.target) in local
    return False


def root(expr: cst.BaseExpression) -> str | None:
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def expr_ok(rule: Rule, expr: cst.BaseExpression, local: set[str]) -> bool:
    """Only calls of pure TensorFlow ops, plain builtins and dict methods on the value."""
    ok = True

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal ok
            name = rule.tf_name(node.func)
            if name is not None:
                ok = ok and not any(word in name for word in IMPURE_TF)
            elif isinstance(node.func, cst.Name):
                ok = ok and node.func.value in PLAIN_BUILTINS and node.func.value not in local
            elif isinstance(node.func, cst.Attribute):
                ok = ok and (
                    node.func.attr.value in STRUCTURE_METHODS and root(node.func.value) in local
                )
            else:
                ok = False

        def visit_Yield(self, node: cst.Yield) -> None:
            nonlocal ok
            ok = False

        def visit_Await(self, node: cst.Await) -> None:
            nonlocal ok
            ok = False

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            nonlocal ok
            ok = False

    walk(expr, V())
    return ok


def map_tail(rule: Rule, fn: cst.FunctionDef, tail: Tail) -> cst.FunctionDef:
    """The tail becomes a function mapped over the dataset, which the input function returns.

    A tuple target's names are the map function's parameters (tf.data unpacks a tuple
    element into them); a single name gets the whole element through a one-dataset zip,
    whatever its structure (Dataset.map would unpack a tuple into several arguments).
    """
    assert isinstance(fn.body, cst.IndentedBlock)
    body = list(fn.body.body)
    replaced = body[tail.start : len(body) - len(tail.body)]
    leading = [line for stmt in replaced for line in getattr(stmt, "leading_lines", ())]
    starts_apart = bool(leading) and leading[0].comment is None
    blank = [cst.EmptyLine(indent=False)] if tail.start > 0 and not starts_apart else []
    if tail.identity:
        ret = cst.SimpleStatementLine(
            [cst.Return(tail.dataset.with_changes(lpar=[], rpar=[]))],
            leading_lines=leading,
        )
        return fn.with_changes(body=fn.body.with_changes(body=[*body[: tail.start], ret]))
    taken = {n.value for n in all_names(fn)}
    name = unique_name("_features_and_labels", taken)
    names = target_names(tail.target)
    mapped: cst.BaseExpression = tail.dataset
    if isinstance(tail.target, cst.Name):
        mapped = cst.Call(
            rule.tf("data.Dataset.zip"),
            [cst.Arg(cst.Tuple([cst.Element(tail.dataset)]))],
        )
    inner = cst.FunctionDef(
        name=cst.Name(name),
        params=cst.Parameters([cst.Param(cst.Name(n)) for n in names]),
        body=cst.IndentedBlock(
            body=[
                tail.body[0].with_changes(leading_lines=[])
                if isinstance(tail.body[0], (cst.SimpleStatementLine, cst.If))
                else tail.body[0],
                *tail.body[1:],
            ]
        ),
        leading_lines=[*blank, *leading],
    )
    ret = cst.SimpleStatementLine(
        [cst.Return(cst.Call(cst.Attribute(mapped, cst.Name("map")), [cst.Arg(cst.Name(name))]))],
        leading_lines=[cst.EmptyLine(indent=False)],
    )
    return fn.with_changes(body=fn.body.with_changes(body=[*body[: tail.start], inner, ret]))


def all_names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    walk(node, V())
    return found
