"""TPU004: wrap a model_fn's TF1 optimizer in CrossShardOptimizer when running on TPU."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from est2tpu.cstutil import add_param, assigned_names, has_param, iter_calls
from est2tpu.names import dotted
from est2tpu.rule import FileState, Rule

OPTIMIZER_METHODS = frozenset({"minimize", "compute_gradients", "apply_gradients"})


class CrossShardOptimizer(Rule):
    ID = "TPU004"

    @classmethod
    def applies(cls, state: FileState) -> bool:
        return cls.file_has_model_fn(state)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if not self.in_model_fn():
            return updated_node
        used = self._optimizer_receivers(original_node)
        for call in iter_calls(original_node):
            name = self.tf_name(call.func) or ""
            if name in ("contrib.layers.optimize_loss", "layers.optimize_loss"):
                self.refuse(
                    call,
                    "tf.contrib.layers.optimize_loss cannot be wrapped for TPU; create the "
                    "optimizer, wrap it in tf.compat.v1.tpu.CrossShardOptimizer when "
                    "params['use_tpu'], and call optimizer.minimize(loss, global_step)",
                )
            elif (
                isinstance(call.func, cst.Attribute)
                and call.func.attr.value in OPTIMIZER_METHODS
                and isinstance(call.func.value, cst.Call)
                and self._is_tf1_optimizer(call.func.value)
            ):
                self.refuse(
                    call,
                    "the optimizer is created and used in one expression; assign it to a "
                    "variable so it can be wrapped in CrossShardOptimizer on TPU",
                )
        targets = self._wrappable(original_node, used)
        if not targets:
            return updated_node
        locals_ = assigned_names(original_node)
        if not has_param(original_node, "params"):
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
        new_body = body.with_changes(body=self._insert(body.body, targets))
        self.record(original_node, "optimizer wrapped in CrossShardOptimizer on TPU")
        return updated_node.with_changes(body=new_body)

    def _is_tf1_optimizer(self, call: cst.Call) -> bool:
        name = self.tf_name(call.func) or ""
        return name.startswith("train.") and name.endswith("Optimizer")

    def _optimizer_receivers(self, fn: cst.FunctionDef) -> set[str]:
        receivers = set()
        for call in iter_calls(fn):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in OPTIMIZER_METHODS:
                name = dotted(call.func.value)
                if name is not None:
                    receivers.add(name)
        return receivers

    def _wrappable(self, fn: cst.FunctionDef, used: set[str]) -> set[str]:
        """Optimizer variables assigned once from a TF1 optimizer and used to train."""
        out = set()
        for name, values in assigned_names(fn).items():
            if name not in used:
                continue
            tf1 = [v for v in values if isinstance(v, cst.Call) and self._is_tf1_optimizer(v)]
            wrapped = [
                v
                for v in values
                if isinstance(v, cst.Call) and self.tf_name(v.func) in _CROSS_SHARD
            ]
            if wrapped:
                continue  # already migrated
            if len(tf1) == 1 and len(values) == 1:
                out.add(name)
            elif tf1:
                self.refuse(
                    fn,
                    f"optimizer `{name}` is assigned more than once; wrap it in "
                    "tf.compat.v1.tpu.CrossShardOptimizer when params['use_tpu'] by hand",
                )
        return out

    def _insert(
        self, statements: Sequence[cst.BaseStatement], targets: set[str]
    ) -> list[cst.BaseStatement]:
        out: list[cst.BaseStatement] = []
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine):
                out.append(stmt)
                for small in stmt.body:
                    if (
                        isinstance(small, cst.Assign)
                        and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)
                        and small.targets[0].target.value in targets
                    ):
                        out.append(self._wrap(small.targets[0].target.value))
            elif isinstance(stmt, cst.BaseCompoundStatement):
                out.append(self._descend(stmt, targets))
            else:
                out.append(stmt)
        return out

    def _descend(self, stmt: cst.BaseCompoundStatement, targets: set[str]) -> cst.BaseStatement:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return stmt
        rule = self

        class Into(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False

            def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                return False

            def leave_IndentedBlock(
                self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
            ) -> cst.IndentedBlock:
                return updated_node.with_changes(body=rule._insert(updated_node.body, targets))

        result = stmt.visit(Into())
        assert isinstance(result, cst.BaseStatement)
        return result

    def _wrap(self, name: str) -> cst.If:
        wrapper = self.tf("compat.v1.tpu.CrossShardOptimizer")
        assign = cst.SimpleStatementLine(
            [
                cst.Assign(
                    [cst.AssignTarget(cst.Name(name))],
                    cst.Call(wrapper, [cst.Arg(cst.Name(name))]),
                )
            ]
        )
        test = cst.parse_expression('params["use_tpu"]')
        return cst.If(test=test, body=cst.IndentedBlock([assign]))


_CROSS_SHARD = frozenset({"tpu.CrossShardOptimizer", "contrib.tpu.CrossShardOptimizer"})
