"""TPU008: `tf.estimator.RunConfig(...)` (and a `tf.contrib.learn.RunConfig(...)` with only
keywords the core one has) -> TPU `RunConfig` with a `TPUConfig` and a cluster."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstutil import (
    explode,
    is_multiline,
    kwarg,
    one_per_line,
    too_long,
    with_kwarg,
)
from est2tpu.index import CtorPlan
from est2tpu.project.ctor_sites import config_argument
from est2tpu.rule import FileState, Rule
from est2tpu.tfapi import LEARN_RUN_CONFIG, learn_run_config_maps

DEFAULT_ITERATIONS_PER_LOOP = 100
TPU_ONLY_ARGS = ("cluster", "tpu_config", "master", "evaluation_master")


class TpuRunConfig(Rule):
    KEYED = True  # Estimator constructions are looked up in the index by order

    @classmethod
    def applies(cls, state: FileState) -> bool:
        return state.imports.calls(state.original, "estimator.RunConfig", LEARN_RUN_CONFIG)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.kept: set[int] = set()  # RunConfig calls (by id) only kept Estimators are given
        self.kept_names: set[str] = set()

    # The RunConfig calls that reach only Estimators left as they are (an Estimator TPU007
    # refuses, a premade TPU010 leaves): written as such an Estimator's `config` argument,
    # or bound to a name that every Estimator construction of the module given that name as
    # its `config` leaves as it is. The project index holds each construction's `config`
    # argument and whether it converts (`CtorPlan.config`, `CtorPlan.convert`).

    def visit_Module(self, node: cst.Module) -> None:
        given: dict[str, set[bool]] = {}  # config name -> kept, for each Estimator given it
        for key, plan in self.state.index.ctors.items():
            if key[0] == self.state.path and plan.config not in (None, "()"):
                given.setdefault(str(plan.config), set()).add(_kept(plan))
        self.kept_names = {name for name, kept in given.items() if kept == {True}}

    def visit_Assign(self, node: cst.Assign) -> None:
        target = node.targets[0].target if len(node.targets) == 1 else None
        if (
            isinstance(target, cst.Name)
            and isinstance(node.value, cst.Call)
            and target.value in self.kept_names
        ):
            self.kept.add(id(node.value))

    def visit_Call(self, node: cst.Call) -> None:
        key = self.key_of(node)
        plan = self.state.index.ctors.get(key) if key is not None else None
        if plan is not None and plan.config == "()" and _kept(plan):
            arg = config_argument(self.state.imports, node)
            if arg is not None:
                self.kept.add(id(arg.value))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = self.tf_name(original_node.func)
        learn = name == LEARN_RUN_CONFIG and learn_run_config_maps(original_node)
        if name != "estimator.RunConfig" and not learn:
            return updated_node  # TPU014 reports a contrib.learn one with other arguments
        if any(kwarg(original_node, a) is not None for a in TPU_ONLY_ARGS):
            return updated_node
        if id(original_node) in self.kept:
            # The Estimator it reaches stays tf.estimator's (its finding says why): a TPU
            # RunConfig would send its session to the TPU worker's master.
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


def _kept(plan: CtorPlan) -> bool:
    return not plan.convert and not plan.tpu


def _eq() -> cst.AssignEqual:
    return cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )
