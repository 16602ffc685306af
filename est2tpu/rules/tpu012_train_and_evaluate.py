"""TPU012: `tf.estimator.train_and_evaluate(...)` on a TPUEstimator -> the shim's explicit loop."""

from __future__ import annotations

import libcst as cst

from est2tpu.rule import FileState, Rule


class TrainAndEvaluate(Rule):
    KEYED = True

    @classmethod
    def applies(cls, state: FileState) -> bool:
        # The index saw the calls themselves (not mentions in docstrings).
        return any(key[0] == state.path for key in state.index.train_and_evaluate)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.tf_name(original_node.func) != "estimator.train_and_evaluate":
            return updated_node
        key = self.key_of(original_node)
        if key is None or key not in self.state.index.train_and_evaluate:
            return updated_node
        ctor = self.state.index.train_and_evaluate[key]
        plan = self.state.index.ctors.get(ctor) if ctor is not None else None
        if plan is None:
            self.refuse(
                original_node,
                "train_and_evaluate on an estimator built elsewhere; if it is a TPUEstimator, "
                "use tpu_runtime.train_and_evaluate (an explicit train/evaluate loop)",
            )
            return updated_node
        if not (plan.convert or plan.tpu):
            return updated_node
        if not self.has_runtime("train_and_evaluate"):
            self.refuse(
                original_node,
                "train_and_evaluate does not drive a TPUEstimator well and --no-runtime "
                "forbids the shim's loop; write the train/evaluate loop by hand (seed 002 §6)",
            )
            return updated_node
        self.record(original_node, "train_and_evaluate -> explicit train/evaluate loop")
        return updated_node.with_changes(func=self.runtime("train_and_evaluate"))
