"""The statement shapes TPU009 reads when it moves summaries to host_call: a summary under a
Python-value test, a loop writing one summary per metric, the names a block assigns, and
keeping `config` for the host function. Not a rule (the registry skips `_` modules)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from est2tpu.cstutil import names_read, pure_read, walk


def summary_guard(stmt: cst.BaseStatement) -> tuple[cst.BaseExpression, cst.BaseStatement] | None:
    """(test, statement) of `if <read>:` / `if <read> is (not) None:` over one statement and
    no else (TPU004 writes `if hparams.clip_norm is not None:` before the summary TF 1.15's
    optimize_loss wrote only with clipping); `<read>` is a name, an attribute or a literal
    item of one, read again on the host."""
    if not (
        isinstance(stmt, cst.If)
        and stmt.orelse is None
        and isinstance(stmt.body, cst.IndentedBlock)
        and len(stmt.body.body) == 1
    ):
        return None
    test = stmt.test
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        only = test.comparisons[0]
        if (
            isinstance(only.operator, (cst.Is, cst.IsNot))
            and isinstance(only.comparator, cst.Name)
            and only.comparator.value == "None"
        ):
            test = test.left
    if not pure_read(test):
        return None
    return stmt.test, stmt.body.body[0]


def metrics_loop(stmt: cst.BaseStatement) -> tuple[cst.BaseStatement, str, str, str] | None:
    """(the one statement of its body, key name, value name, dict name) for `for key, value
    in <dict>.items():` with one statement in its body and no else."""
    if not (
        isinstance(stmt, cst.For)
        and stmt.orelse is None
        and stmt.asynchronous is None
        and isinstance(stmt.body, cst.IndentedBlock)
        and len(stmt.body.body) == 1
        and isinstance(stmt.target, cst.Tuple)
        and len(stmt.target.elements) == 2
        and all(isinstance(e.value, cst.Name) for e in stmt.target.elements)
        and isinstance(stmt.iter, cst.Call)
        and not stmt.iter.args
        and isinstance(stmt.iter.func, cst.Attribute)
        and stmt.iter.func.attr.value == "items"
        and isinstance(stmt.iter.func.value, cst.Name)
    ):
        return None
    key, value = (e.value for e in stmt.target.elements)
    assert isinstance(key, cst.Name) and isinstance(value, cst.Name)
    if key.value == value.value:
        return None
    return stmt.body.body[0], key.value, value.value, stmt.iter.func.value.value


def keep_config(fn: cst.FunctionDef) -> cst.FunctionDef | None:
    """The model_fn without `config` in its `del` statements (the host_call reads it after
    the model_fn returns; deleting a parameter only unbinds a local). None when a `del`
    deletes nothing else and is a block's only statement, or `config` is deleted in a
    nested block or by a form this does not read."""
    body = fn.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    top = list(body.body)
    new_top: list[cst.BaseStatement] = []
    for st in top:
        if (
            isinstance(st, cst.SimpleStatementLine)
            and len(st.body) == 1
            and isinstance(st.body[0], cst.Del)
        ):
            target = st.body[0].target
            if isinstance(target, cst.Name) and target.value == "config":
                continue
            if (
                isinstance(target, cst.Tuple)
                and not target.lpar
                and any(
                    isinstance(e.value, cst.Name) and e.value.value == "config"
                    for e in target.elements
                )
            ):
                kept = [
                    e.value
                    for e in target.elements
                    if not (isinstance(e.value, cst.Name) and e.value.value == "config")
                ]
                new_target: cst.BaseDelTargetExpression = (
                    kept[0]  # type: ignore[assignment]
                    if len(kept) == 1
                    else cst.Tuple(
                        [
                            cst.Element(
                                v,
                                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                                if k < len(kept) - 1
                                else cst.MaybeSentinel.DEFAULT,
                            )
                            for k, v in enumerate(kept)
                        ],
                        lpar=[],
                        rpar=[],
                    )
                )
                new_top.append(st.with_changes(body=[st.body[0].with_changes(target=new_target)]))
                continue
        new_top.append(st)
    if not new_top:
        return None
    result = fn.with_changes(body=body.with_changes(body=new_top))
    deleted = False

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is result

        def visit_Del(self, node: cst.Del) -> None:
            nonlocal deleted
            deleted = deleted or any(n.value == "config" for n in names_read(node.target))

    walk(result, V())
    return None if deleted else result


def assigned_in(statements: Sequence[cst.BaseStatement]) -> set[str]:
    """Names the statements bind (nested blocks included, nested defs and lambdas not)."""
    names: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            names.add(node.name.value)
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(n.value for n in names_in(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(n.value for n in names_in(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            names.update(n.value for n in names_in(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(n.value for n in names_in(node.target))

        def visit_AsName(self, node: cst.AsName) -> None:
            names.update(n.value for n in names_in(node.name))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            names.update(n.value for n in names_in(node.target))

    for st in statements:
        walk(st, V())
    return names


def names_in(target: cst.CSTNode) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in names_in(el.value)]
    if isinstance(target, cst.StarredElement):
        return names_in(target.value)
    return []


def docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
