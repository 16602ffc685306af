"""TPU011: `tf.keras.estimator.model_to_estimator(...)` -> a TPUEstimator from the shim."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstutil import explode, is_multiline, too_long, with_kwarg
from est2tpu.index import resolved_batch_sizes
from est2tpu.rule import FileState, Rule
from est2tpu.rules._tpu011_optimizers import optimizer_refusal
from est2tpu.tfapi import KERAS_TO_ESTIMATOR


class KerasModelToEstimator(Rule):
    KEYED = True

    @classmethod
    def applies(cls, state: FileState) -> bool:
        # The index saw the calls themselves (not mentions in docstrings).
        return any(key[0] == state.path and plan.keras for key, plan in state.index.ctors.items())

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.tf_name(original_node.func) not in KERAS_TO_ESTIMATOR:
            return updated_node
        key = self.key_of(original_node)
        plan = self.state.index.ctors.get(key) if key is not None else None
        if plan is None or not plan.convert:
            if plan is not None and plan.unmappable_optimizer is not None:
                reason = optimizer_refusal(plan.unmappable_optimizer)
            else:
                reason = (
                    plan.refusal if plan and plan.refusal else "model_to_estimator left as it is"
                )
            self.refuse(original_node, reason)
            return updated_node
        if not self.has_runtime("model_to_estimator"):
            self.refuse(
                original_node,
                "model_to_estimator needs est2tpu.runtime.model_to_estimator to become a "
                "TPUEstimator, which --no-runtime forbids; write a model_fn by hand",
            )
            return updated_node
        problems: list[str] = list(dict.fromkeys(plan.problems))
        sizes = resolved_batch_sizes(plan, problems)
        for problem in problems:
            self.refuse(original_node, problem)
        call = updated_node.with_changes(func=self.runtime("model_to_estimator"))
        for mode, code in sizes.items():
            call = with_kwarg(call, f"{mode.value}_batch_size", cst.parse_expression(code))
        if not is_multiline(original_node) and too_long(call):
            call = explode(call, self.call_depth())
        self.record(original_node, "model_to_estimator -> TPUEstimator from the Keras model")
        return call
