"""TPU010: premade (canned) estimators cannot become TPUEstimators: say why and what to do."""

from __future__ import annotations

import libcst as cst

from est2tpu.rule import FileState, Rule
from est2tpu.tfapi import PREMADE


class PremadeEstimator(Rule):
    ID = "TPU010"

    @classmethod
    def applies(cls, state: FileState) -> bool:
        # The index saw the calls themselves (not mentions in docstrings).
        return any(key[0] == state.path and plan.premade for key, plan in state.index.ctors.items())

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self.tf_name(original_node.func) or ""
        head, _, short = name.rpartition(".")
        if head == "estimator" and short in PREMADE:
            self.refuse(
                original_node,
                f"premade {short} has no TPUEstimator form (TPUEstimator needs a model_fn); "
                "use `--target tf2` (Keras model under TPUStrategy) or write a model_fn",
            )
        return updated_node
