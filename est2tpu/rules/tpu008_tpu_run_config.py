"""TPU008: `tf.estimator.RunConfig(...)` (and a `tf.contrib.learn.RunConfig(...)` with only
keywords the core one has) -> TPU `RunConfig` with a `TPUConfig` and a cluster."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstutil import explode, is_multiline, kwarg, one_per_line, too_long, with_kwarg
from est2tpu.rule import FileState, Rule
from est2tpu.tfapi import LEARN_RUN_CONFIG, learn_run_config_maps

DEFAULT_ITERATIONS_PER_LOOP = 100
TPU_ONLY_ARGS = ("cluster", "tpu_config", "master", "evaluation_master")


class TpuRunConfig(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return state.imports.calls(state.original, "estimator.RunConfig", LEARN_RUN_CONFIG)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self.tf_name(original_node.func)
        learn = name == LEARN_RUN_CONFIG and learn_run_config_maps(original_node)
        if name != "estimator.RunConfig" and not learn:
            return updated_node  # TPU014 reports a contrib.learn one with other arguments
        if any(kwarg(original_node, a) is not None for a in TPU_ONLY_ARGS):
            return updated_node
        call = updated_node.with_changes(func=self.tf("compat.v1.estimator.tpu.RunConfig"))
        call = with_kwarg(call, "cluster", cst.Call(self.runtime("cluster_resolver")))
        tpu_config = cst.Call(
            self.tf("compat.v1.estimator.tpu.TPUConfig"),
            [
                cst.Arg(
                    # 100 on a TPU, 1 elsewhere (see est2tpu.runtime.iterations_per_loop).
                    cst.Call(
                        self.runtime("iterations_per_loop"),
                        [cst.Arg(cst.Integer(str(DEFAULT_ITERATIONS_PER_LOOP)))],
                    ),
                    keyword=cst.Name("iterations_per_loop"),
                    equal=_eq(),
                ),
                cst.Arg(
                    self.tf("compat.v1.estimator.tpu.InputPipelineConfig.PER_HOST_V2"),
                    keyword=cst.Name("per_host_input_for_training"),
                    equal=_eq(),
                ),
            ],
        )
        depth = self.call_depth()
        if not one_per_line(call) and (
            is_multiline(original_node) or too_long(with_kwarg(call, "tpu_config", tpu_config))
        ):
            call = explode(call, depth)
        if one_per_line(call):
            tpu_config = explode(tpu_config, depth=depth + 1)
        call = with_kwarg(call, "tpu_config", tpu_config)
        self.record(
            original_node, f"{'tf.contrib.learn.' if learn else ''}RunConfig -> TPU RunConfig"
        )
        return call


def _eq() -> cst.AssignEqual:
    return cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )
