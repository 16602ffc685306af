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
    walk,
    with_kwarg,
)
from est2tpu.index import CallKeys, call_arg
from est2tpu.rule import FileState, Rule
from est2tpu.tfapi import LEARN_RUN_CONFIG, call_kind, learn_run_config_maps

DEFAULT_ITERATIONS_PER_LOOP = 100
TPU_ONLY_ARGS = ("cluster", "tpu_config", "master", "evaluation_master")


class TpuRunConfig(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return state.imports.calls(state.original, "estimator.RunConfig", LEARN_RUN_CONFIG)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.kept: set[int] = set()  # RunConfig calls (by id) only kept Estimators are given

    def visit_Module(self, node: cst.Module) -> None:
        self.kept = self._for_kept_estimators(node)

    def _for_kept_estimators(self, module: cst.Module) -> set[int]:
        """The RunConfig calls that reach only Estimators left as they are (an Estimator
        TPU007 refuses, a premade TPU010 leaves): written as an Estimator's `config`
        argument, or bound to a name every Estimator construction of the module that is
        given that name as its `config` leaves as it is. The project index says which
        construction is kept (`CtorPlan.convert`), by the order the rules number them in."""
        ctors = self.state.index.ctors
        imports = self.state.imports
        keys = CallKeys(self.state.path)
        scope: list[str] = []
        calls: dict[int, bool] = {}  # id(config call) -> its Estimator is kept
        names: dict[str, set[bool]] = {}  # config name -> kept, for each Estimator given it
        bound: dict[int, str] = {}  # id(RunConfig call) -> the name it is assigned to

        class Configs(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                scope.append(node.name.value)

            def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
                scope.pop()

            def visit_ClassDef(self, node: cst.ClassDef) -> None:
                scope.append(node.name.value)

            def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
                scope.pop()

            def visit_Assign(self, node: cst.Assign) -> None:
                target = node.targets[0].target if len(node.targets) == 1 else None
                if isinstance(target, cst.Name) and isinstance(node.value, cst.Call):
                    bound[id(node.value)] = target.value

            def visit_Call(self, node: cst.Call) -> None:
                kind = call_kind(imports, node.func)
                if kind is None:
                    return
                plan = ctors.get(keys.next(".".join(scope), kind))
                if kind != "ctor" or plan is None:
                    return
                position = 2 if imports.tf_name(node.func) == "estimator.Estimator" else None
                arg = call_arg(node, "config", position)
                kept = not plan.convert and not plan.tpu
                if arg is None:
                    return
                if isinstance(arg.value, cst.Call):
                    calls[id(arg.value)] = kept
                elif isinstance(arg.value, cst.Name):
                    names.setdefault(arg.value.value, set()).add(kept)

        walk(module, Configs())
        kept_names = {name for name, kept in names.items() if kept == {True}}
        return {call for call, kept in calls.items() if kept} | {
            call for call, name in bound.items() if name in kept_names
        }

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


def _eq() -> cst.AssignEqual:
    return cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )
