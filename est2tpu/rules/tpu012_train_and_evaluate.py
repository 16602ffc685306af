"""TPU012: `tf.estimator.train_and_evaluate(...)` on a TPUEstimator -> the shim's explicit loop."""

from __future__ import annotations

import libcst as cst

from est2tpu.rule import RUNTIME_MODULE, FileState, Rule


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
        if plan is None and self.state.use_runtime and self._shim_is_welcome():
            # Whatever the estimator is, the shim's function is the same call: it runs
            # tf.estimator.train_and_evaluate itself on anything not training on a TPU.
            self.record(original_node, "train_and_evaluate -> the shim's, whatever the estimator")
            return updated_node.with_changes(func=self.runtime("train_and_evaluate"))
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

    def _shim_is_welcome(self) -> bool:
        """May an estimator built elsewhere go to the shim? When the file uses the shim
        anyway (other rewrites, or an earlier run, import it: the evidence survives a
        partial migration) or the project builds a TPUEstimator, which the estimator could
        be. Otherwise the import would be the file's only change, for nothing provable."""
        if any(
            target == RUNTIME_MODULE or target.startswith(RUNTIME_MODULE + ".")
            for target in self.state.imports.bindings.values()
        ):
            return True
        return any(plan.convert or plan.tpu for plan in self.state.index.ctors.values())
