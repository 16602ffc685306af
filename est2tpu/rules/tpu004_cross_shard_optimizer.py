"""TPU004: wrap a model_fn's TF1 optimizer in CrossShardOptimizer when running on TPU."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import libcst as cst

from est2tpu.cstutil import (
    add_param,
    assigned_names,
    descendants,
    has_param,
    indented_blocks,
    iter_calls,
    names_read,
    unique_name,
)
from est2tpu.index import TrainOpLink, node_code
from est2tpu.names import canonical_tf, dotted, module_aliases
from est2tpu.project.train_ops import OPTIMIZER_METHODS, whole_statement_values
from est2tpu.rule import FileState, Rule
from est2tpu.rules._tpu004_helpers import (
    add_flag_param,
    flag_calls,
    pass_flags,
    refuse_links,
    refuse_starred,
    refuse_unfollowed,
    refuse_unwrappable,
)
from est2tpu.rules._tpu004_train_ops import (
    api_name,
    expand_create_train_op,
    expand_optimize_loss,
    is_tf1_optimizer_class,
)


class CrossShardOptimizer(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return cls.file_has_model_fn(state) or any(
            path == state.path for path, _ in state.index.train_op_links
        )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # id(statement after which the branches assigning an optimizer join) -> its name
        self.joins: dict[int, str] = {}
        # optimizers a helper returns: wrapped only if they are TF1 optimizers, not yet wrapped
        self.guarded: set[str] = set()
        # module-level names bound once to a TensorFlow name (`train = tf.compat.v1.train`)
        self.aliases: dict[str, str] = {}

    def visit_Module(self, node: cst.Module) -> None:
        self.aliases = module_aliases(node, self.state.imports)

    def tf_name(self, node: cst.BaseExpression) -> str | None:
        """TensorFlow's canonical name, also through a module-level alias of a TensorFlow
        name (`train.AdamOptimizer` after `train = tf.compat.v1.train`)."""
        found = super().tf_name(node)
        if found is not None or not self.aliases:
            return found
        head, _, rest = (dotted(node) or "").partition(".")
        target = self.aliases.get(head)
        if target is None:
            return None
        return canonical_tf(f"{target}.{rest}" if rest else target)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        link = self.state.index.train_op_links.get((self.state.path, self.here))
        if self.in_model_fn():
            return self._migrate_model_fn(original_node, updated_node, link)
        if link is None:
            return updated_node
        return self._migrate_link(original_node, updated_node, link)

    def _migrate_link(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef, link: TrainOpLink
    ) -> cst.FunctionDef:
        """A def of a TPU model_fn's train-op chain (the index's `train_op_links`): its own
        optimizer is wrapped when the keyword-only flag (False by default) is true, and it
        passes the flag on to the chain's next defs; its callers in the chain pass it."""
        refuse_links(self, original_node, link)
        refuse_starred(self, original_node, link)
        refuse_unwrappable(self, original_node)
        flag = link.flag
        if flag is None:
            return updated_node
        refused = sum(1 for _, _, refusal in self._pending if refusal)
        found = self._targets(original_node, updated_node, link.wraps, link=True)
        targets: set[str] = set()
        if isinstance(found, tuple):
            updated_node, targets = found
        else:
            updated_node = found
        if (
            link.trains
            and not targets
            # no finding of `_targets` says why already
            and sum(1 for _, _, refusal in self._pending if refusal) == refused
            and "CrossShardOptimizer" not in node_code(original_node)
        ):
            self.refuse(
                original_node,
                "this function applies an optimizer est2tpu cannot tell is one it may wrap "
                f"(not a TF1 optimizer built here): wrap it in "
                f"tf.compat.v1.tpu.CrossShardOptimizer under `if {flag}:` (the flag the "
                "model_fn now passes), or on TPU each core applies its own gradients",
            )
        body = updated_node.body
        assert isinstance(body, cst.IndentedBlock)
        statements = list(body.body)
        if flag_calls(original_node, link):
            statements = pass_flags(statements, link, cst.Name(flag))
            self.record(original_node, f"`{flag}` passed on to the train op's helpers")
        statements = self._insert(statements, targets, cst.Name(flag))
        if targets:
            self.record(
                original_node, f"optimizer wrapped in CrossShardOptimizer when `{flag}` is passed"
            )
        updated_node = updated_node.with_changes(body=body.with_changes(body=statements))
        if flag not in {p.name.value for p in updated_node.params.kwonly_params}:
            updated_node = add_flag_param(updated_node, flag)
        return updated_node

    def _targets(
        self,
        original_node: cst.FunctionDef,
        updated_node: cst.FunctionDef,
        passed: Collection[str] = (),
        *,
        link: bool = False,
    ) -> cst.FunctionDef | tuple[cst.FunctionDef, set[str]]:
        """The def with its train-op builders expanded and the optimizers to wrap in it;
        the def alone when there are none."""
        self.guarded = set()
        split = self._split_inline(updated_node)
        if split is not updated_node:
            self.record(original_node, "optimizer created and used in one expression: split")
            updated_node = split
        expanded, forced = expand_optimize_loss(self, original_node, updated_node)
        if expanded is not updated_node:
            self.record(original_node, "optimize_loss -> an explicit optimizer")
            updated_node = expanded
        expanded, more = expand_create_train_op(self, original_node, updated_node)
        if expanded is not updated_node:
            self.record(original_node, "create_train_op -> an explicit optimizer")
            updated_node = expanded
            forced = forced | more
        # (and optimizers it hands to a def that applies them: TrainOpLink.wraps)
        used = self._optimizer_receivers(updated_node) | set(passed)
        splittable = whole_statement_values(original_node)
        for call in iter_calls(original_node):
            if (
                isinstance(call.func, cst.Attribute)
                and call.func.attr.value in OPTIMIZER_METHODS
                and isinstance(call.func.value, cst.Call)
                and self._is_tf1_optimizer(call.func.value)
                and id(call) not in splittable
                and not link  # the index's finding (TrainOpLink.unfollowed) says it
            ):
                self.refuse(
                    call,
                    "the optimizer is created and used in one expression; assign it to a "
                    "variable so it can be wrapped in CrossShardOptimizer on TPU",
                )
        targets = self._wrappable(updated_node, used, original_node) | forced
        self.guarded -= forced  # built by the optimize_loss/create_train_op expansion
        if not targets:
            return updated_node
        return updated_node, targets

    def _migrate_model_fn(
        self,
        original_node: cst.FunctionDef,
        updated_node: cst.FunctionDef,
        link: TrainOpLink | None,
    ) -> cst.FunctionDef:
        refuse_unwrappable(self, original_node)
        refuse_links(self, original_node, link)
        refuse_starred(self, original_node, link)
        refuse_unfollowed(self, original_node, link)
        found = self._targets(original_node, updated_node, link.wraps if link else set())
        targets: set[str] = set()
        if isinstance(found, tuple):
            updated_node, targets = found
        else:
            updated_node = found
        calls = flag_calls(original_node, link)
        if not targets and not calls:
            return updated_node
        locals_ = assigned_names(updated_node)
        if not has_param(updated_node, "params"):
            if "params" in locals_:
                self.refuse(
                    original_node,
                    "the model_fn has a local named `params` but no params argument; "
                    "CrossShardOptimizer needs params['use_tpu']: rename the local by hand",
                )
                return updated_node
            updated_node = add_param(updated_node, "params")
        body = updated_node.body
        assert isinstance(body, cst.IndentedBlock)
        test: cst.BaseExpression = cst.parse_expression(
            "params.use_tpu" if _params_read_by_attribute(updated_node) else 'params["use_tpu"]'
        )
        statements = list(body.body)
        if len(locals_.get("params", ())) > 1:
            # `params = {...}` / `params = params or {}` in the model_fn: the rebound dict
            # has no "use_tpu" (KeyError at training), so it is read before the rebinding,
            # first thing in the body, where `params` is still TPUEstimator's.
            flag = unique_name("use_tpu", set(locals_))
            read = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(flag))], test)])
            at = 1 if statements and _is_docstring(statements[0]) else 0
            statements.insert(at, read)
            test = cst.Name(flag)
        if calls and link is not None:
            statements = pass_flags(statements, link, test)
            self.record(original_node, "train-op helper told params['use_tpu']")
        new_body = body.with_changes(body=self._insert(statements, targets, test))
        if targets:
            self.record(original_node, "optimizer wrapped in CrossShardOptimizer on TPU")
        return updated_node.with_changes(body=new_body)

    def _split_inline(self, fn: cst.FunctionDef) -> cst.FunctionDef:
        """`train_op = tf.train.XOptimizer(...).minimize(...)` as a whole statement becomes
        `optimizer = tf.train.XOptimizer(...)` then `train_op = optimizer.minimize(...)`, so
        the optimizer can be wrapped."""
        rule = self
        taken = set(assigned_names(fn))

        class Split(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn

            def leave_IndentedBlock(
                self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
            ) -> cst.IndentedBlock:
                body: list[cst.BaseStatement] = []
                for stmt in updated_node.body:
                    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
                    if (
                        isinstance(stmt, cst.SimpleStatementLine)
                        and len(stmt.body) == 1
                        and isinstance(small, cst.Assign)
                        and isinstance(small.value, cst.Call)
                        and isinstance(small.value.func, cst.Attribute)
                        and small.value.func.attr.value in OPTIMIZER_METHODS
                        and isinstance(small.value.func.value, cst.Call)
                        and rule._is_tf1_optimizer(small.value.func.value)
                    ):
                        name = unique_name("optimizer", taken)
                        func = small.value.func
                        create = cst.SimpleStatementLine(
                            [cst.Assign([cst.AssignTarget(cst.Name(name))], func.value)],
                            leading_lines=stmt.leading_lines,
                        )
                        use = stmt.with_changes(
                            leading_lines=(),
                            body=[
                                small.with_changes(
                                    value=small.value.with_changes(
                                        func=func.with_changes(value=cst.Name(name))
                                    )
                                )
                            ],
                        )
                        body += [create, use]
                    else:
                        body.append(stmt)
                return updated_node.with_changes(body=body)

        result = fn.visit(Split())
        assert isinstance(result, cst.FunctionDef)
        return result if not result.deep_equals(fn) else fn

    def _is_tf1_optimizer(self, call: cst.Call) -> bool:
        return is_tf1_optimizer_class(self, call.func)

    def _built_by_a_helper(self, value: cst.BaseExpression | None) -> bool:
        """A call of something that is not TensorFlow's (a project function, in this module
        or another, a factory, a method): what it returns is known only when it runs."""
        return isinstance(value, cst.Call) and self.tf_name(value.func) is None

    def _optimizer_receivers(self, fn: cst.FunctionDef) -> set[str]:
        receivers = set()
        for call in iter_calls(fn):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in OPTIMIZER_METHODS:
                name = dotted(call.func.value)
                if name is not None:
                    receivers.add(name)
        return receivers

    def _wrappable(self, fn: cst.FunctionDef, used: set[str], anchor: cst.FunctionDef) -> set[str]:
        """Optimizer variables assigned once from a TF1 optimizer and used to train."""
        out = set()
        for name, values in assigned_names(fn).items():
            if name not in used:
                continue
            tf1 = [v for v in values if isinstance(v, cst.Call) and self._is_tf1_optimizer(v)]
            wrapped = [
                v
                for v in values
                if isinstance(v, cst.Call) and api_name(self.tf_name(v.func)) in _CROSS_SHARD
            ]
            if wrapped:
                continue  # already migrated
            if len(tf1) == 1 and len(values) == 1:
                out.add(name)
            elif len(values) == 1 and self._built_by_a_helper(values[0]):
                # `optimizer = build_optimizer(params)`: wrapped when it is a TF1 optimizer
                # that is not wrapped yet, which only the running model_fn can tell.
                out.add(name)
                self.guarded.add(name)
            elif (
                tf1
                and all(isinstance(v, cst.Call) for v in values)
                and (join := _join_point(fn, name, len(values)))
            ):
                # Chosen in if/elif/else (a TF1 optimizer in one branch, maybe a third-party
                # Optimizer subclass in another): wrapped once, after the branches join.
                out.add(name)
                self.joins[id(join)] = name
            elif tf1:
                self.refuse(
                    anchor,
                    f"optimizer `{name}` is assigned more than once; wrap it in "
                    "tf.compat.v1.tpu.CrossShardOptimizer when params['use_tpu'] by hand",
                )
        return out

    def _insert(
        self,
        statements: Sequence[cst.BaseStatement],
        targets: set[str],
        test: cst.BaseExpression,
    ) -> list[cst.BaseStatement]:
        """The statements with the wrap after each assignment of a target, at any depth
        below them (not into nested defs and classes).

        One transformer visits every block once, innermost first, and each block is given
        only its own assignments: a block must not be handed back to `_insert` after its
        children were processed, or the inserted `name = CrossShardOptimizer(name)` (an
        assignment of the target itself) gets wrapped again, without end.
        """
        rule = self

        class Into(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False

            def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                return False

            def leave_IndentedBlock(
                self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
            ) -> cst.IndentedBlock:
                joins = [rule.joins.get(id(st)) for st in original_node.body]
                return updated_node.with_changes(
                    body=rule._insert_here(updated_node.body, joins, targets, test)
                )

        block = cst.IndentedBlock(body=list(statements)).visit(Into())
        assert isinstance(block, cst.IndentedBlock)
        return list(block.body)

    def _insert_here(
        self,
        statements: Sequence[cst.BaseStatement],
        joins: Sequence[str | None],
        targets: set[str],
        test: cst.BaseExpression,
    ) -> list[cst.BaseStatement]:
        joined = set(self.joins.values())
        out: list[cst.BaseStatement] = []
        for stmt, join in zip(statements, joins):
            out.append(stmt)
            if join is not None:
                out.append(self._wrap(join, test))
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if (
                        isinstance(small, cst.Assign)
                        and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)
                        and small.targets[0].target.value in targets
                        and small.targets[0].target.value not in joined
                    ):
                        out.append(self._wrap(small.targets[0].target.value, test))
        return out

    def _wrap(self, name: str, test: cst.BaseExpression) -> cst.If:
        wrapper = self.tf("compat.v1.tpu.CrossShardOptimizer")
        assign = cst.SimpleStatementLine(
            [
                cst.Assign(
                    [cst.AssignTarget(cst.Name(name))],
                    cst.Call(wrapper, [cst.Arg(cst.Name(name))]),
                )
            ]
        )
        if name in self.guarded:
            code = cst.Module([]).code_for_node
            test = cst.parse_expression(
                f"(\n    {code(test)}\n"
                f"    and isinstance({name}, {code(self.tf('compat.v1.train.Optimizer'))})\n"
                f"    and not isinstance({name}, {code(wrapper)})\n)"
            )
        return cst.If(test=test, body=cst.IndentedBlock([assign]))


# What a dict and an HParams both answer: reading one of these says nothing of which it is.
_DICT_ATTRIBUTES = frozenset(dir(dict))


def _params_read_by_attribute(fn: cst.FunctionDef) -> bool:
    """Whether the model_fn reads `params.name` (or `alias.name` for an `alias = params`):
    its params is then an HParams, where TPUEstimator sets `use_tpu` with add_hparam and
    `params["use_tpu"]` is a TypeError."""
    locals_ = assigned_names(fn)
    aliases = {"params"} | {
        name
        for name, values in locals_.items()
        if len(values) == 1 and isinstance(values[0], cst.Name) and values[0].value == "params"
    }
    if len(locals_.get("params", ())) > 1:
        return False  # rebound: what it reads may not be TPUEstimator's params
    return any(
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value in aliases
        and node.attr.value not in _DICT_ATTRIBUTES
        for node in descendants(fn.body)
    )


_CROSS_SHARD = frozenset({"tpu.CrossShardOptimizer", "contrib.tpu.CrossShardOptimizer"})


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _assigns(stmt: cst.BaseStatement, name: str) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Assign)
        and len(stmt.body[0].targets) == 1
        and isinstance(stmt.body[0].targets[0].target, cst.Name)
        and stmt.body[0].targets[0].target.value == name
    )


def _branch_assignments(stmt: cst.If, name: str) -> int:
    """How many branches of an if/elif/else chain assign `name` at their top level."""
    count = 0
    node: cst.If | cst.Else | None = stmt
    while node is not None:
        body = node.body
        if isinstance(body, cst.IndentedBlock):
            count += sum(_assigns(st, name) for st in body.body)
        node = node.orelse if isinstance(node, cst.If) else None
    return count


def _join_point(fn: cst.FunctionDef, name: str, bindings: int) -> cst.BaseStatement | None:
    """The statement after which every binding of `name` has happened: the last of a run of
    statements in one block that assign it directly or in the branches of an if/elif/else,
    with no read of it in between (it is used only once the branches joined)."""
    for block in indented_blocks(fn, into_defs=False):
        hits = []
        found = 0
        for i, st in enumerate(block.body):
            if _assigns(st, name):
                hits.append(i)
                found += 1
            elif isinstance(st, cst.If) and (n := _branch_assignments(st, name)):
                hits.append(i)
                found += n
        if found != bindings:
            continue
        run = block.body[hits[0] : hits[-1] + 1]
        names = [n for st in run for n in names_read(st) if n.value == name]
        targets = sum(_assigns(st, name) for st in run) + sum(
            _branch_assignments(st, name) for st in run if isinstance(st, cst.If)
        )
        if len(names) != targets:
            return None  # read before the branches join: wrapping after them is too late
        return block.body[hits[-1]]
    return None
