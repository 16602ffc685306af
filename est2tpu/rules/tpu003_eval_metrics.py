"""TPU003: `eval_metric_ops={...}` -> `eval_metrics=(metric_fn, [tensors])`.

On TPU the metric ops cannot run inside the replicated computation: TPUEstimator ships
the tensors a `metric_fn` needs to the host and builds the metrics there. The metric
expressions move into a nested `metric_fn` whose arguments are exactly the local tensors
they read; Python values (params, mode, literals) stay closed over.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst

from est2tpu.cstutil import (
    assigned_names,
    free_names,
    indented_blocks,
    iter_calls,
    kwarg,
    literal_text,
    scalar_tensor,
    unique_name,
    walk,
)
from est2tpu.names import dotted
from est2tpu.rule import FileState, Rule
from est2tpu.rules import _metric_flow as flow

SPECS = frozenset({"estimator.EstimatorSpec"})
NOT_TENSORS = frozenset({"params", "mode", "config", "self"})
# What builds a metric (a (value, update_op) pair): it runs on the host, inside metric_fn.
METRIC_PREFIXES = (
    "metrics.",
    "compat.v1.metrics.",
    "keras.metrics.",
    "contrib.metrics.",
    "estimator.metrics.",
)


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
            inline = [
                s
                for s in specs
                if isinstance(values[id(s)], cst.Dict) or self._helper(values[id(s)])
            ]
            other = [
                s
                for s in specs
                if not isinstance(values[id(s)], (cst.Dict, cst.Name))
                and not self._helper(values[id(s)])
            ]
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

    def _gather(
        self, fn: cst.FunctionDef, exprs: Sequence[cst.CSTNode], own: str | None
    ) -> tuple[list[Atom], list[cst.SimpleStatementLine]]:
        """The atoms `exprs` read, and the statements building the metrics they read from
        locals (`accuracy = tf.compat.v1.metrics.accuracy(...)` before the dict): those are
        copied into metric_fn, whose atoms then include what they read."""
        locals_ = assigned_names(fn)
        stmts: list[cst.SimpleStatementLine] = []
        metric_names: set[str] = set()
        pending = list(exprs)
        while pending:
            expr = pending.pop()
            for read in free_names(expr):
                name = read.value
                if name in metric_names or name == own or name not in locals_:
                    continue
                stmt = self._metric_statement(fn, name, locals_, expr)
                if stmt is None:
                    stmt = self._derived_statement(fn, name, locals_, expr)
                if stmt is None:
                    continue
                metric_names.update(flow.assigned_in(stmt))
                stmts.append(stmt)
                pending.append(stmt)
        stmts.sort(key=lambda st: flow.statement_position(fn, st))
        return self._atoms(fn, [*stmts, *exprs], own, metric_names), stmts

    def _helper(self, value: cst.BaseExpression | None) -> bool:
        """A call of the project's own function (`get_metrics(labels, logits)`, also from
        another module): it returns the metrics dict, so the call itself moves into
        metric_fn, with the tensors it is given."""
        return (
            isinstance(value, cst.Call)
            and dotted(value.func) is not None
            and self.tf_name(value.func) is None
            and dotted(value.func) not in ("dict", "None")
            and not (self.state.imports.qualify(value.func) or "").startswith(
                ("tensorflow", "tf_keras", "keras")
            )
        )

    def _is_metric(self, value: cst.BaseExpression | None) -> bool:
        return isinstance(value, cst.Call) and (self.tf_name(value.func) or "").startswith(
            METRIC_PREFIXES
        )

    def _metric_statement(
        self,
        fn: cst.FunctionDef,
        name: str,
        locals_: dict[str, list[cst.BaseExpression | None]],
        use: cst.CSTNode | None = None,
    ) -> cst.SimpleStatementLine | None:
        """`name = <metric>(...)` or `name, op = <metric>(...)`, the one binding of `name`
        (or the one that reaches `use`, see `flow.reaching_binding`), whose inputs are bound
        once (so they hold the same tensors where the dict is)."""
        found: list[cst.SimpleStatementLine] = []

        class V(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn

            def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
                if (
                    len(node.body) == 1
                    and isinstance(node.body[0], cst.Assign)
                    and name in flow.assigned_in(node)
                ):
                    found.append(node)

        walk(fn, V())
        if (
            len(found) > 1
            and len(locals_.get(name, ())) == len(found)  # all simple assignments
            and use is not None
            and (reaching := flow.reaching_binding(fn, name, use)) is not None
            and any(reaching is f for f in found)
            and isinstance(only := reaching.body[0], cst.Assign)
        ):
            found = [reaching]
            locals_ = {**locals_, name: [only.value]}
        if len(found) != 1 or len(locals_.get(name, ())) != 1:
            if any(self._is_metric(v) for v in locals_.get(name, ())):
                raise Refusal(
                    f"`{name}` holds a metric and is assigned more than once; build it "
                    "inside metric_fn by hand"
                )
            return None
        assign = found[0].body[0]
        assert isinstance(assign, cst.Assign)
        if len(assign.targets) != 1 or not self._is_metric(assign.value):
            return None
        for read in free_names(assign.value):
            if (
                read.value in locals_
                and len(locals_[read.value]) > 1
                and not (use is not None and flow.unchanged_between(fn, found[0], use, read.value))
            ):
                raise Refusal(
                    f"the metric `{name}` reads `{read.value}`, which is assigned more than "
                    "once; build the metric inside metric_fn by hand"
                )
        return found[0]

    def _derived_statement(
        self,
        fn: cst.FunctionDef,
        name: str,
        locals_: dict[str, list[cst.BaseExpression | None]],
        use: cst.CSTNode,
    ) -> cst.SimpleStatementLine | None:
        """`name = <expression of a metric's value>` (`perplexity = tf.exp(log_ppl_value)`
        after `log_ppl_value, log_ppl_update = tf.compat.v1.metrics.mean(...)`): passed in
        as a tensor, it would be the model_fn's copy of the metric, which nothing updates;
        it is computed in metric_fn from metric_fn's own metric instead. Bound once, by a
        statement of its own."""
        if len(locals_.get(name, ())) != 1:
            return None
        found: list[cst.SimpleStatementLine] = []

        class V(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn

            def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
                small = node.body[0] if len(node.body) == 1 else None
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and small.targets[0].target.value == name
                ):
                    found.append(node)

        walk(fn, V())
        if len(found) != 1:
            return None
        assign = found[0].body[0]
        assert isinstance(assign, cst.Assign)
        for read in free_names(assign.value):
            if (
                read.value in locals_
                and read.value != name
                and self._metric_statement(fn, read.value, locals_, use) is not None
            ):
                return found[0]
        return None

    def _atoms(
        self,
        fn: cst.FunctionDef,
        exprs: Sequence[cst.CSTNode],
        own: str | None,
        skip: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> list[Atom]:
        locals_ = assigned_names(fn)
        reads: dict[str, list[cst.Name]] = {}
        for expr in exprs:
            for read in free_names(expr):
                if read.value in locals_ and read.value != own and read.value not in skip:
                    reads.setdefault(read.value, []).append(read)
        # Names the moved statements bind themselves (a loop's variable, a temporary in
        # it) are computed inside metric_fn, not passed to it.
        inner: collections.Counter[str] = collections.Counter()
        for expr in exprs:
            inner.update(flow.bindings(expr))
        for name in [n for n in reads if inner[n] and inner[n] >= len(locals_[n])]:
            del reads[name]
        subscripted = _subscripts(exprs)
        atoms: list[Atom] = []
        used_params: set[str] = set()
        for name in sorted(reads):
            if name in NOT_TENSORS or self._python_value(locals_[name]):
                continue
            values = locals_[name]
            if any(self._is_metric(v) for v in values):
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
        return scalar_tensor(values, self.tf_name)

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
        if isinstance(metrics, cst.Dict) and any(
            not isinstance(e, cst.DictElement) for e in metrics.elements
        ):
            raise Refusal("eval_metric_ops uses **unpacking; lift the metrics by hand")
        atoms, built = self._gather(fn, [metrics], None)
        unused = flow.used_only_by(fn, built, [metrics])
        moved = _dedent_continuations(metrics) if isinstance(metrics, cst.Dict) else metrics
        metric_fn = self._metric_fn(
            fn, atoms, [*_copies(built), cst.SimpleStatementLine([cst.Return(moved)])]
        )
        value = cst.Tuple(
            [cst.Element(cst.Name(metric_fn.name.value)), cst.Element(self._tensor_list(atoms))]
        )
        new_spec = spec.with_changes(
            args=[
                a.with_changes(keyword=cst.Name("eval_metrics"), value=value) if a is arg else a
                for a in spec.args
            ]
        )
        return _remove(_insert_before_statement(fn, spec, metric_fn, new_spec), unused)

    # -- eval_metric_ops=m, m built in statements ----------------------------------------

    def _lift_variable(self, fn: cst.FunctionDef, var: str) -> cst.FunctionDef:
        block, indices = _defining_statements(fn, var, self._helper)
        statements = [block.body[i] for i in indices]
        between = [block.body[i] for i in range(indices[0], indices[-1] + 1) if i not in indices]
        atoms, built = self._gather(fn, statements, var)
        if any(b in statements for b in built):
            raise Refusal(f"a metric is built while `{var}` is being built; lift it by hand")
        unused = flow.used_only_by(fn, built, statements)
        bases = {_base_name(a.expr) for a in atoms}
        for stmt in between:
            if bases & set(flow.assigned_in(stmt)):
                raise Refusal(
                    f"a tensor the metrics read is reassigned while `{var}` is being built; "
                    "lift the metrics by hand"
                )
        metric_fn = self._metric_fn(
            fn,
            atoms,
            [
                *_copies(built),
                *statements,
                cst.SimpleStatementLine([cst.Return(cst.Name(var))]),
            ],
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
        return _remove(result, unused)


def _copies(stmts: Sequence[cst.SimpleStatementLine]) -> list[cst.SimpleStatementLine]:
    return [st.with_changes(leading_lines=()) for st in stmts]


def _remove(fn: cst.FunctionDef, stmts: Sequence[cst.SimpleStatementLine]) -> cst.FunctionDef:
    if not stmts:
        return fn
    # By shape: LibCST rebuilds the nodes it visits, so the lift's output shares no
    # identity with the statements found before it (each binds its names once, so the
    # shape is unique outside metric_fn, which this does not enter).

    class T(cst.CSTTransformer):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def leave_IndentedBlock(
            self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
        ) -> cst.IndentedBlock:
            kept = [
                new
                for old, new in zip(original_node.body, updated_node.body)
                if not any(old.deep_equals(st) for st in stmts)
            ]
            if len(kept) == len(updated_node.body):
                return updated_node
            return updated_node.with_changes(body=kept or [cst.SimpleStatementLine([cst.Pass()])])

    result = fn.visit(T())
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
                text = str(literal_text(key))
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


def _defining_statements(
    fn: cst.FunctionDef, var: str, helper: Callable[[cst.BaseExpression], bool]
) -> tuple[cst.IndentedBlock, list[int]]:
    """The block and indices of `var = {...}` and the `var[k] = ...`/`var.update` after it."""
    blocks = indented_blocks(fn, into_defs=False)
    found: list[tuple[cst.IndentedBlock, int, str]] = []
    other_reads = 0
    # Blocks inside a loop (or if/with) that only fills the dict (`for k in keys:
    # metrics[k] = ...`): the whole statement is one step of building it.
    inside_fills: set[int] = set()
    for block in blocks:
        for stmt in block.body:
            if isinstance(stmt, (cst.For, cst.If, cst.With)) and flow.only_fills(stmt, var):
                inside_fills.update(id(b) for b in indented_blocks(stmt))
    for block in blocks:
        if id(block) in inside_fills:
            continue
        for i, stmt in enumerate(block.body):
            if not isinstance(stmt, cst.SimpleStatementLine):
                if isinstance(stmt, cst.FunctionDef) and var in assigned_names(stmt):
                    continue  # its own `var` (a host_call_fn builds the dict again)
                if isinstance(stmt, (cst.For, cst.If, cst.With)) and flow.only_fills(stmt, var):
                    found.append((block, i, "set"))
                elif flow.header_reads(stmt, var):
                    # `for name, op in var.items():` (a summary per metric): the loop would
                    # iterate over (metric_fn, tensors)
                    other_reads += 1
                continue
            kind = flow.statement_kind(stmt, var, helper)
            if kind == "none":
                continue  # `var = None`: what the spec gets in the modes without metrics
            if kind is not None:
                found.append((block, i, kind))
            elif any(n.value == var for n in free_names(stmt)) and not flow.only_spec_use(
                stmt, var
            ):
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
                if isinstance(orig, cst.SimpleStatementLine) and flow.contains(orig, spec):
                    body.append(metric_fn.with_changes(leading_lines=orig.leading_lines))
                    new = new.with_changes(leading_lines=())
                    replaced = new.deep_replace(flow.find_equal(new, spec), new_spec)
                    assert isinstance(replaced, cst.SimpleStatementLine)
                    new = replaced
                body.append(new)
            return updated_node.with_changes(body=body)

    result = fn.visit(T())
    assert isinstance(result, cst.FunctionDef)
    return result
