"""TF2002: TF1 layers, losses, metrics, optimizers and the global step in a model_fn -> the
tf2 facade's exact equivalents, from one table."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstpatch import schedule_removal
from est2tpu.cstutil import assigned_names, unique_name
from est2tpu.rule import FileState
from est2tpu.rules._tf2 import (
    KERAS_TOO,
    TABLE,
    PairUses,
    collection_refusal,
    facade,
    has_model_fn_code,
    model_fn_scopes,
    written_for_tf1,
)

COLLECTION = "get_collection"
# TF 1.x's train-op builders (contrib/training/python/training/training.py, which TF-Slim's
# learning.create_train_op calls): expanded into what they run, on the facade's optimizer.
CREATE_TRAIN_OP = frozenset(
    {
        "tensorflow.contrib.training.create_train_op",
        "tensorflow.contrib.slim.learning.create_train_op",
        "tensorflow.contrib.slim.create_train_op",
        "tf_slim.learning.create_train_op",
        "tf_slim.create_train_op",
        "tf_slim.training.create_train_op",
    }
)
_TRAIN_OP_PARAMS = ("total_loss", "optimizer", "global_step")
# Arguments whose value here is create_train_op's default (anything else stays, for TF2003).
_TRAIN_OP_DEFAULTS = {
    "update_ops": ("None",),
    "variables_to_train": ("None",),
    "transform_grads_fn": ("None",),
    "aggregation_method": ("None",),
    "gradient_multipliers": ("None",),
    "summarize_gradients": ("False",),
    "colocate_gradients_with_ops": ("False",),
    "clip_gradient_norm": ("0", "0.0"),
    "check_numerics": ("True", "False"),
}
_STEP_CALLS = ("get_global_step", "get_or_create_global_step")


class Tf1ModelFnApis(PairUses):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return has_model_fn_code(state)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.model_fns = model_fn_scopes(self.state)
        self.depth = 0  # > 0 inside a model_fn (nested defs included: helpers run there)
        self.taken: list[set[str]] = []  # names each enclosing def of the model_fn binds
        # ids of the `func` of loss-collection calls whose arguments the facade cannot keep
        # (TF2003 reports them; their names stay TF1's)
        self.kept: set[int] = set()
        # A file written for TF 1.x: its plain KERAS_TOO names are TF1's whatever the use.
        self.tf1_file = written_for_tf1(self.state) if self.model_fns else False

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        name = self.tf1_name(node.func) if self.depth else None
        if name is not None and collection_refusal(name, node) is not None:
            self.kept.add(id(node.func))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.depth or self.here in self.model_fns:
            self.depth += 1
            self.taken.append(set(assigned_names(node)))

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if self.depth:
            self.depth -= 1
            self.taken.pop()
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        """`train_op = tf.contrib.training.create_train_op(loss, optimizer)` -> what TF
        1.15's create_train_op runs: the loss made to wait for the UPDATE_OPS (the facade's
        list is empty: its layers update themselves), compute_gradients and apply_gradients
        of the optimizer (the facade's TF1 optimizer, over the model's trainable
        variables), the loss checked for inf/nan, and the train op the loss after the
        update. Any argument but those and their defaults: left for TF2003 to report."""
        if not self.depth or not self.taken or len(original_node.body) != 1:
            return updated_node
        old, new = original_node.body[0], updated_node.body[0]
        if not (
            isinstance(old, cst.Assign)
            and isinstance(new, cst.Assign)
            and len(old.targets) == 1
            and isinstance(old.targets[0].target, cst.Name)
            and isinstance(old.value, cst.Call)
            and isinstance(new.value, cst.Call)
            and (self.state.imports.qualify(old.value.func) or "") in CREATE_TRAIN_OP
        ):
            return updated_node
        tf = self.state.imports.alias_for("tensorflow")
        args = self._train_op_args(new.value)
        if tf is None or args is None:
            return updated_node
        code = cst.Module([]).code_for_node
        taken = self.taken[-1]

        def fresh(name: str) -> str:
            out = unique_name(name, taken)
            taken.add(out)
            return out

        lines: list[str] = []
        optimizer = args["optimizer"]
        if isinstance(optimizer, cst.Name):
            opt = optimizer.value
        else:
            opt = fresh("optimizer")
            lines.append(f"{opt} = {code(optimizer)}")
        loss, update_ops = fresh("total_loss"), fresh("update_ops")
        grads, grad_updates = fresh("grads"), fresh("grad_updates")
        runtime = code(facade(self, "get_collection")).rpartition(".")[0]
        lines += [
            f"{loss} = {code(args['total_loss'])}",
            f"{update_ops} = {runtime}.get_collection({runtime}.GraphKeys.UPDATE_OPS)",
            (
                f"if {update_ops}:\n    with {tf}.control_dependencies({update_ops}):\n"
                f"        {loss} = {tf}.identity({loss})"
            ),
            f"{grads} = {opt}.compute_gradients({loss})",
            (
                f"{grad_updates} = {opt}.apply_gradients(\n    {grads}, "
                f"global_step={runtime}.train.get_or_create_global_step()\n)"
            ),
        ]
        check = args.get("check_numerics")
        if check is None or code(check) == "True":
            lines.append(
                f'{loss} = {tf}.debugging.check_numerics({loss}, "LossTensor is inf or nan")'
            )
        target = old.targets[0].target.value
        lines.append(
            f"with {tf}.control_dependencies([{grad_updates}]):\n"
            f"    {target} = {tf}.identity({loss})"
        )
        self.record(original_node, "create_train_op -> the statements it ran, on the facade")
        head = code(old.value.func).partition(".")[0]
        form = self.state.imports.import_form(head)
        if form is not None and head != tf:
            # `slim` / tf_slim: gone in TF 2.x; the import goes once nothing else uses it
            schedule_removal(self.context, *form)
        statements = [cst.parse_statement(line + "\n") for line in lines]
        statements[0] = statements[0].with_changes(leading_lines=updated_node.leading_lines)
        return cst.FlattenSentinel(statements)

    def _train_op_args(self, call: cst.Call) -> dict[str, cst.BaseExpression] | None:
        """create_train_op's arguments by name, or None when one is not rewritten."""
        code = cst.Module([]).code_for_node
        args: dict[str, cst.BaseExpression] = {}
        for i, arg in enumerate(call.args):
            if arg.star:
                return None
            if arg.keyword is not None:
                key = arg.keyword.value
            elif i < len(_TRAIN_OP_PARAMS):
                key = _TRAIN_OP_PARAMS[i]
            else:
                return None
            if key in _TRAIN_OP_DEFAULTS and code(arg.value) not in _TRAIN_OP_DEFAULTS[key]:
                return None
            if key not in _TRAIN_OP_PARAMS and key not in _TRAIN_OP_DEFAULTS:
                return None
            args[key] = arg.value
        if "total_loss" not in args or "optimizer" not in args:
            return None
        step = args.get("global_step")
        # The facade advances its one step itself; any other step would not be TF1's.
        if step is not None and not (
            isinstance(step, cst.Call)
            and not step.args
            and code(step.func).rpartition(".")[2] in _STEP_CALLS
            and (self.state.imports.qualify(step.func) or "").startswith(
                ("tensorflow.", "est2tpu.runtime.tf2.")
            )
        ):
            return None
        return args

    def tf1_name(self, node: cst.BaseExpression) -> str | None:
        """`layers.dense` for `tf.compat.v1.layers.dense` (and for `tf.layers.dense`; for
        `tf.metrics.mean_squared_error` where its value is used as TF1's metric pair or the
        file was written for TF 1.x, `written_for_tf1`)."""
        qualified = self.state.imports.qualify(node)
        if qualified is None:
            return None
        for root, plain in (("tensorflow.compat.v1.", False), ("tensorflow.", True)):
            if qualified.startswith(root):
                name = qualified[len(root) :]
                mapping = TABLE.get(name)
                if name == COLLECTION:
                    return name
                if mapping is not None and (
                    not plain
                    or mapping.plain_is_tf1
                    or (name in KERAS_TOO and (self.tf1_file or id(node) in self.paired))
                ):
                    return name
                return None
        return None

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self.depth or self.tf1_name(original_node.func) != COLLECTION:
            return updated_node
        first = original_node.args[0].value if original_node.args else None
        if first is None or self.tf1_name(first) != "GraphKeys.UPDATE_OPS":
            return updated_node  # TF2003 reports other collections
        self.record(original_node, "get_collection(UPDATE_OPS) -> the facade's (empty) list")
        return updated_node.with_changes(func=facade(self, COLLECTION))

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if not self.depth:
            return updated_node
        name = self.tf1_name(original_node)
        if name is None or name == COLLECTION or id(original_node) in self.kept:
            return updated_node
        new = TABLE[name].new
        qualified = self.state.imports.qualify(original_node) or ""
        # The plain spelling (`tf.metrics.auc`) says it is TF 1's, as TF 2.x reads it otherwise.
        spelled = "tf.compat.v1." if "compat.v1." in qualified else "TF 1's tf."
        self.record(original_node, f"{spelled}{name} -> est2tpu.runtime.tf2.{new}")
        return facade(self, new)
