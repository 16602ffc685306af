"""TPU006: `EstimatorSpec(...)` in a model_fn -> `TPUEstimatorSpec(...)`."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstutil import free_names, kwarg, rename_kwarg
from est2tpu.rule import FileState, Rule

HOOK_ARGS = ("training_hooks", "evaluation_hooks", "prediction_hooks")


class TpuEstimatorSpec(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return cls.file_has_model_fn(state)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.model_fn_depth = 0
        self.locals_stack: list[set[str]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.in_model_fn():
            from est2tpu.cstutil import assigned_names

            self.locals_stack.append(
                set(assigned_names(node)) - {"params", "mode", "config", "self"}
            )

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if self.in_model_fn():
            self.locals_stack.pop()
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.tf_name(original_node.func) != "estimator.EstimatorSpec" or not self.in_model_fn():
            return updated_node
        positional = [a for a in original_node.args if a.keyword is None]
        if len(positional) > 4 or any(a.star for a in original_node.args):
            self.refuse(
                original_node,
                "EstimatorSpec with more than four positional arguments or *args/**kwargs; "
                "pass them by keyword, then re-run",
            )
            return updated_node
        if kwarg(original_node, "eval_metric_ops") is not None:
            self.refuse(
                original_node,
                "EstimatorSpec keeps eval_metric_ops (see TPU003), which TPUEstimatorSpec "
                "does not accept; convert the metrics first",
                unless="TPU003",  # its refusal on this spec says what to convert
            )
            return updated_node
        if kwarg(original_node, "training_chief_hooks") is not None:
            self.refuse(
                original_node,
                "TPUEstimatorSpec has no training_chief_hooks; move them to training_hooks "
                "or to the train() call by hand",
            )
            return updated_node
        call = updated_node
        scaffold = kwarg(call, "scaffold")
        if scaffold is not None:
            call = rename_kwarg(call, "scaffold", "scaffold_fn")
            call = call.with_changes(
                args=[
                    a.with_changes(value=cst.Lambda(cst.Parameters(), a.value))
                    if a.keyword is not None and a.keyword.value == "scaffold_fn"
                    else a
                    for a in call.args
                ]
            )
        local_names = self.locals_stack[-1] if self.locals_stack else set()
        for hook_arg in HOOK_ARGS:
            hooks = kwarg(original_node, hook_arg)
            if hooks is None:
                continue
            captured = sorted({n.value for n in free_names(hooks.value)} & local_names)
            if captured:
                self.refuse(
                    hooks,
                    f"{hook_arg} capture model tensors ({', '.join(captured)}); on TPU hooks "
                    "run on the host and cannot see them: use host_call or a metric instead",
                )
        self.record(original_node, "EstimatorSpec -> TPUEstimatorSpec")
        return call.with_changes(func=self.tf("compat.v1.estimator.tpu.TPUEstimatorSpec"))
