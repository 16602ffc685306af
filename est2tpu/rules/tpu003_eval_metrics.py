"""TPU003: `eval_metric_ops={...}` -> `eval_metrics=(metric_fn, [tensors])`.

On TPU the metric ops cannot run inside the replicated computation: TPUEstimator ships
the tensors a `metric_fn` needs to the host and builds the metrics there. The metric
expressions move into a nested `metric_fn` whose arguments are exactly the local tensors
they read; Python values (params, mode, literals) stay closed over.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from est2tpu.cstutil import assigned_names, free_names, iter_calls, kwarg, unique_name, walk
from est2tpu.names import dotted
from est2tpu.rule import FileState, Rule

SPECS = frozenset({"estimator.EstimatorSpec"})
NOT_TENSORS = frozenset({"params", "mode", "config", "self"})


class Refusal(Exception):
    """A reason to leave the metrics as they are."""


@dataclass
class Atom:
    expr: cst.BaseExpression  # what the model_fn passes
    param: str  # what metric_fn calls it
    scalar: bool


class EvalMetrics(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return cls.file_has_model_fn(state)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if not self.in_model_fn() or not updated_node.deep_equals(original_node):
            return updated_node
        specs = [
            c
            for c in iter_calls(original_node)
            if self.tf_name(c.func) in SPECS and kwarg(c, "eval_metric_ops") is not None
        ]
        if not specs:
            return updated_node
        fn = original_node
        try:
            values = {id(s): kwarg(s, "eval_metric_ops").value for s in specs}  # type: ignore[union-attr]
            names = {dotted(v) for v in values.values() if isinstance(v, cst.Name)} - {"None"}
            inline = [s for s in specs if isinstance(values[id(s)], cst.Dict)]
            other = [s for s in specs if not isinstance(values[id(s)], (cst.Dict, cst.Name))]
            if other:
                raise Refusal(
                    "eval_metric_ops comes from an expression (a helper call?) whose metrics "
                    "cannot be lifted safely; build `metric_fn(tensors...)` returning the "
                    "dict and pass eval_metrics=(metric_fn, [tensors]) by hand"
                )
            for var in sorted(n for n in names if n):
                fn = self._lift_variable(fn, var)
            for spec in inline:
                fn = self._lift_inline(fn, spec)
            fn = _rename_kwargs(fn, self)
        except Refusal as why:
            self.refuse(specs[0], str(why))
            return updated_node
        self.record(original_node, "eval_metric_ops -> eval_metrics")
        return fn

    # -- atoms ----------------------------------------------------------------------------

    def _atoms(
        self, fn: cst.FunctionDef, exprs: Sequence[cst.CSTNode], own: str | None
    ) -> list[Atom]:
        locals_ = assigned_names(fn)
        reads: dict[str, list[cst.Name]] = {}
        for expr in exprs:
            for read in free_names(expr):
                if read.value in locals_ and read.value != own:
                    reads.setdefault(read.value, []).append(read)
        subscripted = _subscripts(exprs)
        atoms: list[Atom] = []
        used_params: set[str] = set()
        for name in sorted(reads):
            if name in NOT_TENSORS or self._python_value(locals_[name]):
                continue
            values = locals_[name]
            if any(
                isinstance(v, cst.Call)
                and (self.tf_name(v.func) or "").startswith(
                    ("metrics.", "compat.v1.metrics.", "keras.metrics.")
                )
                for v in values
            ):
                raise Refusal(
                    f"`{name}` holds a metric built outside the dict; build it inside "
                    "metric_fn by hand"
                )
            keys, sub_reads = subscripted.get(name, ({}, 0))
            if keys and sub_reads == len(reads[name]):
                # only ever read as name["key"]: pass each value, not the whole dict
                for key_text, sub in keys.items():
                    param = unique_name(_identifier(f"{name}_{key_text}"), used_params)
                    atoms.append(Atom(sub, param, False))
            else:
                param = unique_name(name, used_params)
                atoms.append(Atom(cst.Name(name), param, self._scalar(values)))
        return atoms

    def _python_value(self, values: list[cst.BaseExpression | None]) -> bool:
        def plain(v: cst.BaseExpression | None) -> bool:
            if isinstance(v, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
                return True
            if isinstance(v, cst.Name) and v.value in ("True", "False", "None"):
                return True
            if isinstance(v, cst.Subscript) and dotted(v.value) == "params":
                return True
            if isinstance(v, cst.Call) and dotted(v.func) in ("params.get", "len", "int", "float"):
                return True
            if isinstance(v, (cst.Tuple, cst.List)):
                return all(plain(e.value) for e in v.elements)
            return False

        return bool(values) and all(plain(v) for v in values)

    def _scalar(self, values: list[cst.BaseExpression | None]) -> bool:
        if len(values) != 1 or not isinstance(values[0], cst.Call):
            return False
        call = values[0]
        name = self.tf_name(call.func) or ""
        if name.startswith(("losses.", "compat.v1.losses.")):
            return True
        if name.split(".")[-1] in ("reduce_mean", "reduce_sum"):
            positional = [a for a in call.args if a.keyword is None]
            return len(positional) < 2 and kwarg(call, "axis") is None
        return False

    def _tensor_list(self, atoms: Sequence[Atom]) -> cst.List:
        elements = []
        for atom in atoms:
            expr = atom.expr
            if atom.scalar:
                # TPUEstimator concatenates metric tensors across shards on dim 0.
                expr = cst.Call(
                    self.tf("reshape"),
                    [cst.Arg(expr), cst.Arg(cst.List([cst.Element(cst.Integer("1"))]))],
                )
            elements.append(cst.Element(expr))
        return cst.List(elements)

    def _metric_fn(
        self, fn: cst.FunctionDef, atoms: Sequence[Atom], body: list[cst.BaseStatement]
    ) -> cst.FunctionDef:
        name = unique_name("metric_fn", set(assigned_names(fn)))
        replaced = [s.visit(_ReplaceAtoms(atoms)) for s in body]
        return cst.FunctionDef(
            name=cst.Name(name),
            params=cst.Parameters([cst.Param(cst.Name(a.param)) for a in atoms]),
            body=cst.IndentedBlock(replaced),  # type: ignore[arg-type]
        )

    # -- eval_metric_ops={...} inline -----------------------------------------------------

    def _lift_inline(self, fn: cst.FunctionDef, spec: cst.Call) -> cst.FunctionDef:
        arg = kwarg(spec, "eval_metric_ops")
        assert arg is not None
        metrics = arg.value
        assert isinstance(metrics, cst.Dict)
        if any(not isinstance(e, cst.DictElement) for e in metrics.elements):
            raise Refusal("eval_metric_ops uses **unpacking; lift the metrics by hand")
        atoms = self._atoms(fn, [metrics], None)
        moved = _dedent_continuations(metrics)
        metric_fn = self._metric_fn(fn, atoms, [cst.SimpleStatementLine([cst.Return(moved)])])
        value = cst.Tuple(
            [cst.Element(cst.Name(metric_fn.name.value)), cst.Element(self._tensor_list(atoms))]
        )
        new_spec = spec.with_changes(
            args=[
                a.with_changes(keyword=cst.Name("eval_metrics"), value=value) if a is arg else a
                for a in spec.args
            ]
        )
        return _insert_before_statement(fn, spec, metric_fn, new_spec)

    # -- eval_metric_ops=m, m built in statements ----------------------------------------

    def _lift_variable(self, fn: cst.FunctionDef, var: str) -> cst.FunctionDef:
        block, indices = _defining_statements(fn, var)
        statements = [block.body[i] for i in indices]
        between = [block.body[i] for i in range(indices[0], indices[-1] + 1) if i not in indices]
        atoms = self._atoms(fn, statements, var)
        bases = {_base_name(a.expr) for a in atoms}
        for stmt in between:
            if bases & set(_assigned_in(stmt)):
                raise Refusal(
                    f"a tensor the metrics read is reassigned while `{var}` is being built; "
                    "lift the metrics by hand"
                )
        metric_fn = self._metric_fn(
            fn,
            atoms,
            [*statements, cst.SimpleStatementLine([cst.Return(cst.Name(var))])],
        )
        assign = cst.SimpleStatementLine(
            [
                cst.Assign(
                    [cst.AssignTarget(cst.Name(var))],
                    cst.Tuple(
                        [
                            cst.Element(cst.Name(metric_fn.name.value)),
                            cst.Element(self._tensor_list(atoms)),
                        ]
                    ),
                )
            ]
        )
        first = statements[0]
        new_body: list[cst.BaseStatement] = []
        for i, stmt in enumerate(block.body):
            if i in indices:
                if i == indices[-1]:
                    leading = (
                        first.leading_lines if isinstance(first, cst.SimpleStatementLine) else ()
                    )
                    new_body.append(metric_fn.with_changes(leading_lines=leading))
                    new_body.append(assign)
                continue
            new_body.append(stmt)
        new_block = block.with_changes(body=new_body)
        result = fn.deep_replace(block, new_block)
        assert isinstance(result, cst.FunctionDef)
        return result


def _rename_kwargs(fn: cst.FunctionDef, rule: EvalMetrics) -> cst.FunctionDef:
    class R(cst.CSTTransformer):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def leave_Call(self, o: cst.Call, u: cst.Call) -> cst.Call:
            if rule.tf_name(o.func) in SPECS and kwarg(u, "eval_metric_ops") is not None:
                return u.with_changes(
                    args=[
                        a.with_changes(keyword=cst.Name("eval_metrics"))
                        if a.keyword is not None and a.keyword.value == "eval_metric_ops"
                        else a
                        for a in u.args
                    ]
                )
            return u

    result = fn.visit(R())
    assert isinstance(result, cst.FunctionDef)
    return result


class _ReplaceAtoms(cst.CSTTransformer):
    def __init__(self, atoms: Sequence[Atom]) -> None:
        self.subs = [a for a in atoms if isinstance(a.expr, cst.Subscript)]

    def leave_Subscript(
        self, original_node: cst.Subscript, updated_node: cst.Subscript
    ) -> cst.BaseExpression:
        for atom in self.subs:
            if original_node.deep_equals(atom.expr):
                return cst.Name(atom.param)
        return updated_node


def _subscripts(exprs: Sequence[cst.CSTNode]) -> dict[str, tuple[dict[str, cst.Subscript], int]]:
    """name -> ({key text: node}, number of reads) for reads like `predictions["classes"]`."""
    found: dict[str, tuple[dict[str, cst.Subscript], int]] = {}

    class V(cst.CSTVisitor):
        def visit_Subscript(self, node: cst.Subscript) -> None:
            if not isinstance(node.value, cst.Name) or len(node.slice) != 1:
                return
            index = node.slice[0].slice
            if not isinstance(index, cst.Index):
                return
            key = index.value
            if isinstance(key, cst.SimpleString):
                text = str(key.evaluated_value)
            elif isinstance(key, cst.Integer):
                text = key.value
            else:
                return
            keys, reads = found.get(node.value.value, ({}, 0))
            keys.setdefault(text, node)
            found[node.value.value] = (keys, reads + 1)

    for e in exprs:
        walk(e, V())
    return found


def _dedent_continuations(metrics: cst.Dict) -> cst.Dict:
    """A dict moved from inside a call to a `return` of its own: its continuation lines
    were indented for the call; take that extra indentation off (the closing brace's)."""
    closing = metrics.rbrace.whitespace_before
    if not isinstance(closing, cst.ParenthesizedWhitespace):
        return metrics
    extra = closing.last_line.value

    class Dedent(cst.CSTTransformer):
        def leave_ParenthesizedWhitespace(
            self,
            original_node: cst.ParenthesizedWhitespace,
            updated_node: cst.ParenthesizedWhitespace,
        ) -> cst.ParenthesizedWhitespace:
            text = updated_node.last_line.value
            if updated_node.indent and text.startswith(extra):
                return updated_node.with_changes(last_line=cst.SimpleWhitespace(text[len(extra) :]))
            return updated_node

    result = metrics.visit(Dedent())
    assert isinstance(result, cst.Dict)
    return result


def _base_name(expr: cst.BaseExpression) -> str | None:
    """`x` for an atom `x` or `x["key"]`."""
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    return dotted(expr)


def _identifier(text: str) -> str:
    text = re.sub(r"\W", "_", text)
    return text if text[:1].isalpha() or text[:1] == "_" else f"_{text}"


def _assigned_in(stmt: cst.CSTNode) -> list[str]:
    out: list[str] = []

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Name):
                out.append(node.target.value)

    walk(stmt, V())
    return out


def _defining_statements(fn: cst.FunctionDef, var: str) -> tuple[cst.IndentedBlock, list[int]]:
    """The block and indices of `var = {...}` and the `var[k] = ...`/`var.update` after it."""
    blocks: list[cst.IndentedBlock] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
            blocks.append(node)

    walk(fn, V())
    found: list[tuple[cst.IndentedBlock, int, str]] = []
    other_reads = 0
    for block in blocks:
        for i, stmt in enumerate(block.body):
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            kind = _statement_kind(stmt, var)
            if kind is not None:
                found.append((block, i, kind))
            elif any(n.value == var for n in free_names(stmt)) and not _only_spec_use(stmt, var):
                other_reads += 1
    inits = [f for f in found if f[2] == "init"]
    if len(inits) != 1:
        raise Refusal(
            f"`{var}` is not built by exactly one `{var} = {{...}}`; lift the metrics by hand"
        )
    block, start, _ = inits[0]
    if other_reads or any(f[0] is not block or f[1] < start for f in found):
        raise Refusal(
            f"`{var}` is used or changed outside one straight run of statements; lift the "
            "metrics by hand"
        )
    return block, [f[1] for f in found]


def _only_spec_use(stmt: cst.SimpleStatementLine, var: str) -> bool:
    """The statement reads `var` only as `eval_metric_ops=var`."""
    reads = [n for n in free_names(stmt) if n.value == var]
    uses = 0
    for call in iter_calls(stmt):
        arg = kwarg(call, "eval_metric_ops")
        if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == var:
            uses += 1
    return uses == len(reads)


def _statement_kind(stmt: cst.SimpleStatementLine, var: str) -> str | None:
    if len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Name) and target.value == var:
            value = small.value
            if isinstance(value, cst.Dict) or (
                isinstance(value, cst.Call) and dotted(value.func) == "dict"
            ):
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


def _insert_before_statement(
    fn: cst.FunctionDef, spec: cst.Call, metric_fn: cst.FunctionDef, new_spec: cst.Call
) -> cst.FunctionDef:
    """Put `metric_fn` right before the statement holding `spec`, and swap in `new_spec`."""

    class T(cst.CSTTransformer):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def leave_IndentedBlock(
            self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
        ) -> cst.IndentedBlock:
            body: list[cst.BaseStatement] = []
            for orig, new in zip(original_node.body, updated_node.body):
                if isinstance(orig, cst.SimpleStatementLine) and _contains(orig, spec):
                    body.append(metric_fn.with_changes(leading_lines=orig.leading_lines))
                    new = new.with_changes(leading_lines=())
                    replaced = new.deep_replace(_find(new, spec), new_spec)
                    assert isinstance(replaced, cst.SimpleStatementLine)
                    new = replaced
                body.append(new)
            return updated_node.with_changes(body=body)

    result = fn.visit(T())
    assert isinstance(result, cst.FunctionDef)
    return result


def _contains(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    class V(cst.CSTVisitor):
        hit = False

        def on_visit(self, n: cst.CSTNode) -> bool:
            if n is target:
                V.hit = True
            return not V.hit

    v = V()
    walk(node, v)
    return V.hit


def _find(node: cst.CSTNode, target: cst.CSTNode) -> cst.CSTNode:
    found: list[cst.CSTNode] = []

    class V(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if not found and n.deep_equals(target):
                found.append(n)
            return not found

    walk(node, V())
    return found[0]
