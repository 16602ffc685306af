"""TPU010: premade estimators -> a TPUEstimator built from TensorFlow's canned model function
(`est2tpu.runtime.premade`), or a finding that says why not and what to do."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstutil import explode, is_multiline, too_long, with_kwarg
from est2tpu.index import resolved_batch_sizes
from est2tpu.rule import FileState, Rule
from est2tpu.tfapi import PREMADE


class PremadeEstimator(Rule):
    KEYED = True

    @classmethod
    def applies(cls, state: FileState) -> bool:
        # The index saw the calls themselves (not mentions in docstrings).
        return any(key[0] == state.path and plan.premade for key, plan in state.index.ctors.items())

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self.tf_name(original_node.func) or ""
        head, _, short = name.rpartition(".")
        if head != "estimator" or short not in PREMADE:
            return updated_node
        key = self.key_of(original_node)
        plan = self.state.index.ctors.get(key) if key is not None else None
        if plan is None or not plan.convert:
            reason = plan.refusal if plan is not None else None
            self.refuse(original_node, reason or f"premade {short} left as it is")
            return updated_node
        problems: list[str] = list(dict.fromkeys(plan.problems))
        sizes = resolved_batch_sizes(plan, problems)
        for problem in problems:
            self.refuse(original_node, problem)
        call = updated_node.with_changes(func=self.runtime(f"premade.{short}"))
        for mode, code in sizes.items():
            call = with_kwarg(call, f"{mode.value}_batch_size", cst.parse_expression(code))
        if not is_multiline(original_node) and too_long(call):
            call = explode(call, self.call_depth())
        self.record(original_node, f"premade {short} -> TPUEstimator from its canned model_fn")
        return call
