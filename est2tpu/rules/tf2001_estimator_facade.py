"""TF2001: the Estimator API -> the tf2 facade (`est2tpu.runtime.tf2`), names kept."""

from __future__ import annotations

import libcst as cst
from libcst.codemod.visitors import RemoveImportsVisitor

from est2tpu.cstutil import (
    descendants,
    ending_as,
    explode,
    is_multiline,
    iter_calls,
    target_names,
    too_long,
    with_kwarg,
)
from est2tpu.cstutil import kwarg as cst_kwarg
from est2tpu.index import node_code
from est2tpu.names import canonical_tf, in_estimator_only_module
from est2tpu.rule import FileState, Rule
from est2tpu.rules._tf2 import FACADE_MODULE, facade
from est2tpu.rules._tf2001_names import (
    CONTRIB_RUN_CONFIG_ARGS,
    CONTRIB_STRATEGIES,
    CONTRIB_STRATEGY_ARGS,
    DISTRIBUTE_CONFIG,
    DISTRIBUTE_CONFIG_ARGS,
    DISTRIBUTE_CONFIG_QUALIFIED,
    FACADE_HOOKS,
    FACADE_NAMES,
    HOOK_ADVICE,
    HOOK_POSITIONS,
    KERAS_TO_ESTIMATOR_NAMES,
    NAMESPACES,
    UNSUPPORTED_ARGS,
    UNSUPPORTED_POSITIONS,
    private_name,
)
from est2tpu.rules._tf2001_optimizers import TF1_OPTIMIZERS, Plan, TF1OptimizerTranslation, is_none
from est2tpu.rules._tf2001_premade import (
    DNN_EXACT_COLUMNS,
    EXACT_COLUMNS,
    OPTIMIZER_NAMES,
    PREMADE_FACADE,
    V1_COMMON_PREFIX,
    PremadeChecks,
    builds_other_estimator,
)
from est2tpu.tfapi import V1_PARTITIONER


def _fills(arg: cst.Arg, index: int, positions: dict[int, str]) -> str | None:
    """The parameter an argument fills: its keyword, or the name at its position."""
    if arg.keyword is not None:
        return arg.keyword.value
    return None if arg.star else positions.get(index)


def _nothing(expr: cst.BaseExpression) -> bool:
    """`None`, `[]` or `()`: an argument that asks for nothing."""
    if isinstance(expr, cst.Name):
        return expr.value == "None"
    return isinstance(expr, (cst.List, cst.Tuple)) and not expr.elements


def why_not(canonical: str) -> str:
    """The finding for an Estimator API name the facade does not offer."""
    short = canonical.rsplit(".", 1)[-1]
    if builds_other_estimator(canonical):
        return (
            f"premade {short} has no exact tf2 mapping (the facade reproduces "
            f"{', '.join(PREMADE_FACADE)} only): write its model_fn (or a Keras model under "
            "`est2tpu.runtime.tf2.strategy().scope()`) by hand"
        )
    if canonical in ("estimator.tpu.TPUEstimator", "estimator.tpu.TPUEstimatorSpec"):
        return (
            f"`tf.{canonical}` has no equivalent in the tf2 facade (est2tpu.runtime.tf2), "
            "which runs a model_fn written for tf.estimator.Estimator: migrate the file's "
            "Estimator version (before `est2tpu migrate` made it a TPUEstimator) with "
            "--target tf2, or port it by hand"
        )
    return (
        f"`tf.{canonical}` has no equivalent in the tf2 facade (est2tpu.runtime.tf2); "
        "replace it by hand"
    )


class EstimatorFacade(Rule, PremadeChecks, TF1OptimizerTranslation):
    KEYED = True  # looks Estimator constructions up in the index by order

    @classmethod
    def applies(cls, state: FileState) -> bool:
        """The file names the Estimator API in its code, imports a name from it, or calls
        train/evaluate/predict on an Estimator the index saw."""
        if any(path == state.path for path, _, _ in state.index.use_sites):
            return True
        for target in state.imports.bindings.values():
            if private_name(target) is not None:
                return True
            if target == FACADE_MODULE:
                return True  # a first run's output: its refusals must survive
            name = canonical_tf(target)
            if name is not None and (
                name == "estimator" or name.startswith(("estimator.", "keras.estimator"))
            ):
                return True
        return state.imports.uses(
            state.original, "estimator", "keras.estimator", "contrib.learn", "contrib.estimator"
        )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.inner: set[int] = set()  # Attribute/Name nodes that head a longer chain
        self.keep: set[int] = set()  # nodes left as they are because their call is refused
        self.attrs: set[int] = set()  # the Name after a dot (`.model_to_estimator`): no name
        self.premade_ok: set[int] = set()  # funcs of premade calls that map exactly
        self._columns: list[str] | None = None  # feature-column kinds this module builds
        self._hook_names: dict[str, bool] | None = None  # name -> only facade hooks bound
        self._module: cst.Module = cst.Module(body=[])
        # RunConfig args (by id) -> what replaces them: the DistributeConfig's strategies as
        # RunConfig's own arguments, or nothing (the facade picks the same strategy)
        self.distribute: dict[int, list[cst.Arg]] = {}
        # TF1 GradientDescentOptimizer calls a Keras model is compiled with (by id)
        self.keras_sgd: set[int] = set()
        # premade calls (by id) -> why they stay (None: they map), decided before the walk
        # since a TF1 optimizer they are given may be built (and rewritten) before them
        self.premade_why: dict[int, str | None] = {}
        self.tf1_optimizers: dict[int, Plan] = {}  # TF1 optimizer calls -> their Keras form
        self.v1_premades: set[int] = set()  # premades given one: TF 1.x's V1 classes
        # V1 premade calls (by id) -> the partitioner argument they drop ("" for none)
        self.v1_partitioned: dict[int, str] = {}
        # V1 premade calls (by id) -> the Keras legacy optimizer their name or default is
        # (`Adagrad(learning_rate=0.05)`), when the V2 facade's would differ
        self.v1_optimizer: dict[int, str] = {}

    def tf_name(self, node: cst.BaseExpression) -> str | None:
        """TensorFlow's canonical name, also for the private Estimator names the facade has."""
        return super().tf_name(node) or private_name(self.state.imports.qualify(node))

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node
        self._plan_keras_optimizers(node)
        self._plan_premades(node)

    def _plan_premades(self, module: cst.Module) -> None:
        """Decide every premade call of the module, with the TF1 optimizers it is given."""
        scopes: list[cst.Module | cst.FunctionDef] = [module]
        scopes += [n for n in descendants(module) if isinstance(n, cst.FunctionDef)]
        for scope in scopes:
            for call in iter_calls(scope):
                canonical = self.tf_name(call.func) or ""
                short = canonical.rsplit(".", 1)[-1]
                if canonical != f"estimator.{short}" or short not in PREMADE_FACADE:
                    continue
                plans: dict[int, Plan] = {}
                why = self.premade_refusal(call, short, scope, plans)
                self.premade_why[id(call)] = why
                if why is None and (plans or id(call) in self.v1_partitioned):
                    self.tf1_optimizers.update(plans)
                    self.v1_premades.add(id(call))

    def _plan_keras_optimizers(self, module: cst.Module) -> None:
        """A Keras model compiled with TF1's `GradientDescentOptimizer(lr)` in a module that
        converts models with model_to_estimator: TF 2.15 wrapped it (Keras' TFOptimizer),
        var -= lr * grad; current Keras takes no TF1 optimizer and the facade clones the
        model's optimizer from its Keras config, so it becomes Keras' legacy `SGD(lr)`, the
        same update. The optimizer is the call itself or a name bound once, to it."""
        calls = list(iter_calls(module, into_defs=True))
        if not any(
            self.tf_name(c.func) in KERAS_TO_ESTIMATOR_NAMES
            # the facade's, a first run wrote: its refusals must survive the migration
            or self.state.imports.qualify(c.func) == f"{FACADE_MODULE}.model_to_estimator"
            for c in calls
        ):
            return
        if self.state.imports.alias_for("tensorflow") is None:
            return
        # name -> what each binding binds (None: not a plain assignment), and its mentions
        bound: dict[str, list[cst.BaseExpression | None]] = {}
        mentions: dict[str, int] = {}
        for node in descendants(module):
            if isinstance(node, cst.Name):
                mentions[node.value] = mentions.get(node.value, 0) + 1
            elif isinstance(node, cst.Arg) and node.keyword is not None:
                mentions[node.keyword.value] = mentions.get(node.keyword.value, 0) - 1
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    for name in target_names(t.target):
                        simple = isinstance(t.target, cst.Name)
                        bound.setdefault(name, []).append(node.value if simple else None)
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                for name in target_names(node.target):
                    bound.setdefault(name, []).append(None)
        for call in calls:
            if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "compile"):
                continue
            arg = next(
                (a for a in call.args if a.keyword is not None and a.keyword.value == "optimizer"),
                call.args[0] if call.args and call.args[0].keyword is None else None,
            )
            value = arg.value if arg is not None else None
            candidates = [value]
            if isinstance(value, cst.Name):
                candidates = bound.get(value.value, [])
                # bound once, and named only there and here: no other code sees a TF1 optimizer
                if len(candidates) != 1 or mentions[value.value] != 2:
                    value = None
                else:
                    value = candidates[0]
            if isinstance(value, cst.Call) and self._tf1_gradient_descent(value):
                self.keras_sgd.add(id(value))
            elif any(isinstance(c, cst.Call) and self._tf1_optimizer(c) for c in candidates):
                self.refuse(
                    call,
                    "a Keras model compiled with a TF1 optimizer (tf.compat.v1.train.*) for "
                    "model_to_estimator: the tf2 facade clones the model's optimizer from its "
                    "Keras config, which a TF1 optimizer lacks; compile with a "
                    "tf.keras.optimizers.legacy optimizer (est2tpu maps a "
                    "GradientDescentOptimizer(learning_rate) bound to a name used only here "
                    "to SGD(learning_rate), the same update), then re-run",
                )

    def _tf1_optimizer(self, call: cst.Call) -> bool:
        name = self.tf_name(call.func) or ""
        return name.startswith("train.") and name.endswith("Optimizer")

    def _tf1_gradient_descent(self, call: cst.Call) -> bool:
        """`tf.(compat.v1.)train.GradientDescentOptimizer(learning_rate)`, nothing else."""
        if self.tf_name(call.func) != "train.GradientDescentOptimizer":
            return False
        if len(call.args) != 1 or call.args[0].star:
            return False
        keyword = call.args[0].keyword
        return keyword is None or keyword.value == "learning_rate"

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.inner.add(id(node.value))
        self.attrs.add(id(node.attr))

    def visit_Call(self, node: cst.Call) -> None:
        canonical = self.tf_name(node.func)
        new = FACADE_NAMES.get(canonical or "")
        if new is None and canonical is None:
            self.check_method_hooks(node)
        if new is None:
            short = (canonical or "").rsplit(".", 1)[-1]
            if canonical == f"estimator.{short}" and short in PREMADE_FACADE:
                why = self.premade_why.get(id(node), "")
                if why == "":  # not seen before the walk (never: every call is)
                    why = self.premade_refusal(node, short, self._module, {})
                if why is None:
                    self.premade_ok.add(id(node.func))
                    return
                self.refuse(node.func, why)
                self.keep.update(id(n) for n in descendants(node))
                return
            if canonical is not None and builds_other_estimator(canonical):
                # A refused estimator keeps its arguments too (its RunConfig stays a
                # tf.estimator.RunConfig): never half a migration.
                self.refuse(node.func, why_not(canonical))
                self.keep.update(id(n) for n in descendants(node))
            return
        if canonical == "contrib.learn.RunConfig":
            bad_args = [
                a.keyword.value if a.keyword is not None else "positional arguments"
                for a in node.args
                if a.keyword is None or a.keyword.value not in CONTRIB_RUN_CONFIG_ARGS
            ]
            if bad_args:
                self.refuse(
                    node,
                    f"tf.contrib.learn.RunConfig({', '.join(bad_args)}): only "
                    f"{', '.join(sorted(CONTRIB_RUN_CONFIG_ARGS))}, by keyword, map to the tf2 "
                    "facade's RunConfig (the others configured TF1's session and cluster); "
                    "drop the others or name them, then re-run",
                )
                self.keep.add(id(node.func))
                return
        if new == "RunConfig" and not self.distribute_config(node):
            return
        positions = UNSUPPORTED_POSITIONS.get(new, {})
        bad = [
            name
            for i, a in enumerate(node.args)
            if (name := _fills(a, i, positions)) in UNSUPPORTED_ARGS.get(new, ())
            and not _nothing(a.value)
            and not (name in ("hooks", "training_hooks") and self._facade_hooks(a.value))
            and id(a) not in self.distribute
        ]
        if any(a.star for a in node.args):
            self.refuse(
                node,
                f"{new}(*args/**kwargs): the tf2 facade's {new} cannot be checked against "
                "arguments it cannot see; spell them out, then re-run",
            )
            self.keep.add(id(node.func))
            return
        if new == "Estimator":
            key = self.key_of(node)
            plan = self.state.index.ctors.get(key) if key is not None else None
            if plan is None or plan.model_fn is None:
                self.refuse(
                    node,
                    "Estimator left as it is: its model_fn is not a function defined in this "
                    "project, so its TF1 calls cannot be migrated; migrate it by hand",
                )
                self.keep.add(id(node.func))
                return
        if bad:
            how = (
                "the facade chooses the strategy (est2tpu.runtime.tf2.strategy())"
                if new == "RunConfig"
                else "move the hooks' work into the model_fn or around train/evaluate"
            )
            self.refuse(
                node,
                f"{new}({', '.join(bad)}) has no equivalent in the tf2 facade; remove "
                f"{'it' if len(bad) == 1 else 'them'} ({how}), then re-run",
            )
            self.keep.add(id(node.func))

    def distribute_config(self, node: cst.Call) -> bool:
        """`RunConfig(experimental_distribute=DistributeConfig(train_distribute=T,
        eval_distribute=E))`: TF's RunConfig copies T and E into its own train_distribute and
        eval_distribute (TF 2.15 `distribute/estimator_training.py` init_run_config), so they
        become those arguments, which the facade honours; TF 1.x contrib strategies the facade
        picks for the host itself are dropped instead. False when it refused the call."""
        if any(a.star for a in node.args):
            return True  # refused whole by visit_Call: nothing changes
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value != "experimental_distribute":
                continue
            value = arg.value
            if _nothing(value) or not isinstance(value, cst.Call):
                return True
            if not (
                self.tf_name(value.func) == DISTRIBUTE_CONFIG
                or self.state.imports.qualify(value.func) == DISTRIBUTE_CONFIG_QUALIFIED
            ):
                return True  # not a DistributeConfig written here: refused as an argument
            why = None
            fields: dict[str, cst.BaseExpression] = {}
            for i, field in enumerate(value.args):
                name = _fills(field, i, dict(enumerate(DISTRIBUTE_CONFIG_ARGS)))
                if name is None or name not in DISTRIBUTE_CONFIG_ARGS:
                    why = "arguments est2tpu cannot read"
                elif not _nothing(field.value):
                    fields[name] = field.value
            given = {a.keyword.value for a in node.args if a.keyword is not None}
            if "remote_cluster" in fields:
                why = (
                    "remote_cluster (a standalone client driving a remote cluster: the facade "
                    "trains in the process that calls it; run the program on the cluster's "
                    "workers with TF_CONFIG, where the facade picks MultiWorkerMirroredStrategy)"
                )
            elif given & set(fields):
                why = "a strategy given twice (TensorFlow raises a ValueError)"
            if why is not None:
                self.refuse(
                    node,
                    f"RunConfig(experimental_distribute=DistributeConfig(...)) with {why} has "
                    "no equivalent in the tf2 facade; pass train_distribute / eval_distribute "
                    "to RunConfig, or remove it (the facade chooses the strategy "
                    "(est2tpu.runtime.tf2.strategy())), then re-run",
                )
                self.keep.add(id(node.func))
                return False
            if fields and all(self._host_strategy(v) for v in fields.values()):
                self.distribute[id(arg)] = []
            else:
                self.distribute[id(arg)] = [
                    cst.Arg(
                        keyword=cst.Name(name),
                        value=expr,
                        equal=cst.AssignEqual(
                            whitespace_before=cst.SimpleWhitespace(""),
                            whitespace_after=cst.SimpleWhitespace(""),
                        ),
                    )
                    for name, expr in fields.items()
                ]
            self._drop_distribute_config(value.func)
        return True

    def _host_strategy(self, value: cst.BaseExpression) -> bool:
        """A TF 1.x contrib strategy the facade picks for the host itself (see
        CONTRIB_STRATEGIES), its arguments only GPU counts."""
        return (
            isinstance(value, cst.Call)
            and self.tf_name(value.func) in CONTRIB_STRATEGIES
            and all(
                a.keyword is not None and a.keyword.value in CONTRIB_STRATEGY_ARGS
                for a in value.args
            )
        )

    def _drop_distribute_config(self, func: cst.BaseExpression) -> None:
        """`from tensorflow.python.distribute.distribute_config import DistributeConfig`
        goes once unused (LibCST removes it only then)."""
        if isinstance(func, cst.Name):
            form = self.state.imports.import_form(func.value)
            if form is not None:
                RemoveImportsVisitor.remove_unused_import(self.context, *form)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        alias = self.state.imports.alias_for("tensorflow")
        plan = self.tf1_optimizers.get(id(original_node))
        if plan is not None:
            canonical = self.tf_name(original_node.func)
            self.record(
                original_node,
                f"tf.{canonical} given to a premade estimator -> "
                f"tf.keras.optimizers.legacy.{plan.keras} (the same update)",
            )
            keras_call = self._keras_optimizer(updated_node, plan, f"{alias}")
            if self._explode(original_node, keras_call):
                keras_call = explode(keras_call, self.call_depth())
            return keras_call
        if id(original_node) in self.v1_premades:
            updated_node = self._v1_arguments(original_node, updated_node, f"{alias}")
        if (
            id(original_node) in self.v1_premades
            and cst_kwarg(original_node, "loss_reduction") is None
        ):
            self.record(
                original_node,
                "a premade given a TF1 optimizer is TF 1.x's V1 class, whose loss_reduction "
                "defaults to SUM -> loss_reduction=tf.keras.losses.Reduction.SUM",
            )
            updated_node = with_kwarg(
                updated_node,
                "loss_reduction",
                cst.parse_expression(f"{alias}.keras.losses.Reduction.SUM"),
            )
            if self._explode(original_node, updated_node):
                updated_node = explode(updated_node, self.call_depth())
        if id(original_node) in self.v1_premades:
            updated_node = self._relaid(original_node, updated_node)
        if id(original_node) in self.keras_sgd:
            alias = self.state.imports.alias_for("tensorflow")
            self.record(
                original_node,
                "TF1 GradientDescentOptimizer of a Keras model -> "
                "tf.keras.optimizers.legacy.SGD (the same update)",
            )
            func = cst.parse_expression(f"{alias}.keras.optimizers.legacy.SGD")
            arg = updated_node.args[0].with_changes(
                keyword=cst.Name("learning_rate") if updated_node.args[0].keyword else None
            )
            return updated_node.with_changes(func=func, args=[arg])
        if not any(id(a) in self.distribute for a in original_node.args):
            return updated_node
        args: list[cst.Arg] = []
        for i, (old, new) in enumerate(zip(original_node.args, updated_node.args)):
            if id(old) not in self.distribute:
                args.append(new)
                continue
            hoisted = self.distribute[id(old)]
            names = ", ".join(a.keyword.value for a in hoisted if a.keyword is not None)
            self.record(
                old,
                "RunConfig(experimental_distribute=DistributeConfig(...)) -> "
                + (names or "the facade's strategy"),
            )
            # Each new argument ends as an argument before it ended (the line break and
            # indent of a multi-line call); the last ends as the replaced one did.
            between = updated_node.args[i - 1].comma if i > 0 else cst.MaybeSentinel.DEFAULT
            for j, arg in enumerate(hoisted):
                args.append(arg.with_changes(comma=new.comma if j == len(hoisted) - 1 else between))
            if not hoisted and args and i == len(original_node.args) - 1:
                args[-1] = args[-1].with_changes(comma=new.comma)
        if not args:
            return updated_node.with_changes(
                args=(), whitespace_before_args=cst.SimpleWhitespace("")
            )
        return updated_node.with_changes(args=args)

    def _explode(self, original: cst.Call, new: cst.Call) -> bool:
        """Lay a call that grew too long out one argument per line; only outside other
        multi-line calls (inside them, a dict or list would need a deeper indent)."""
        return not is_multiline(original) and too_long(new) and self.call_depth() == 1

    def check_method_hooks(self, node: cst.Call) -> None:
        """`estimator.train/evaluate/predict(..., hooks=...)` on an Estimator the index saw:
        the facade runs no SessionRunHooks (saving_listeners it calls like TF1)."""
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in HOOK_POSITIONS:
            return
        if (self.state.path, self.here, node_code(node)) not in self.state.index.use_sites:
            return
        positions = {HOOK_POSITIONS[func.attr.value]: "hooks"}
        for i, arg in enumerate(node.args):
            if func.attr.value == "train" and self._facade_hooks(arg.value):
                continue
            if _fills(arg, i, positions) == "hooks" and not _nothing(arg.value):
                self.refuse(
                    node,
                    f"`.{func.attr.value}(hooks=...)`: the tf2 facade runs no SessionRunHooks; "
                    "move the hooks' work into the model_fn or around the call, then re-run",
                )
                return

    def _facade_hooks(self, value: cst.BaseExpression) -> bool:
        """A list or tuple written here of calls to hooks the facade has."""
        if not isinstance(value, (cst.List, cst.Tuple)) or not value.elements:
            return False
        return all(
            isinstance(e, cst.Element) and self._facade_hook(e.value) for e in value.elements
        )

    def _facade_hook(self, value: cst.BaseExpression) -> bool:
        """A call to a hook the facade has, or a name every assignment in the module of
        which is one."""
        if isinstance(value, cst.Call):
            return self.tf_name(value.func) in FACADE_HOOKS
        if not isinstance(value, cst.Name):
            return False
        if self._hook_names is None:
            self._hook_names = {}
            for node in descendants(self._module):
                if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    targets = (
                        [t.target for t in node.targets]
                        if isinstance(node, cst.Assign)
                        else [node.target]
                    )
                    is_hook = (
                        isinstance(node, cst.Assign)
                        and isinstance(node.value, cst.Call)
                        and self.tf_name(node.value.func) in FACADE_HOOKS
                    )
                    for target in targets:
                        if isinstance(target, cst.Name):
                            name = target.value
                            self._hook_names[name] = self._hook_names.get(name, True) and is_hook
        return self._hook_names.get(value.value, False)

    def premade_refusal(
        self,
        node: cst.Call,
        short: str,
        scope: cst.Module | cst.FunctionDef,
        plans: dict[int, Plan],
    ) -> str | None:
        """Why this premade call cannot become the facade's (None: it maps exactly). The
        TF1 optimizers it is given, and how each maps, go into `plans`."""
        manual = (
            "write its model_fn (or a Keras model under "
            "`est2tpu.runtime.tf2.strategy().scope()`) by hand"
        )
        qualified = self.state.imports.qualify(node.func) or ""
        if ".compat.v1." in qualified:
            return (
                f"tf.compat.v1.estimator.{short} is the V1 premade (TF1 optimizers, heads and "
                f"metrics), which the facade does not reproduce; use tf.estimator.{short} "
                f"(V2) if its behaviour is acceptable, or {manual}"
            )
        if any(a.star for a in node.args):
            return (
                f"{short}(*args/**kwargs): the arguments cannot be checked; spell them out, "
                "then re-run"
            )
        params = PREMADE_FACADE[short]
        args: dict[str, cst.BaseExpression] = {}
        for i, arg in enumerate(node.args):
            if arg.keyword is not None:
                args[arg.keyword.value] = arg.value
            elif i < len(params):
                args[params[i]] = arg.value
        bad: list[str] = []
        partitioner = V1_PARTITIONER[short]
        partitioned = cst_kwarg(node, partitioner) is not None
        # Only TF 1.x's V1 class takes it (TF 2.15's V2 raises a TypeError); it is dropped
        # (see V1_PARTITIONER), so its value must be one whose evaluation does nothing else.
        if partitioned and not self._plain_partitioner(args.pop(partitioner)):
            bad.append(
                f"{partitioner}= (an expression whose evaluation may do more than build "
                "a partitioner, which dropping the argument would drop: bind it to a name "
                "before the call)"
            )
        unknown = sorted(set(args) - set(params))
        if unknown:
            return f"{short}({', '.join(unknown)}): not an argument of tf.estimator.{short}"
        optimizer = args.get("optimizer")
        tf1 = None if optimizer is None else self._tf1_optimizers(node, optimizer, scope)
        if isinstance(tf1, str):
            bad.append(f"optimizer {tf1}")
        elif tf1 is not None or partitioned:
            if tf1 is not None:
                plans.update(tf1)
            else:
                named = self._v1_named_optimizer(short, optimizer)
                if named.startswith("("):
                    bad.append(f"optimizer {named}")
                elif named:
                    self.v1_optimizer[id(node)] = named
            self.v1_partitioned[id(node)] = partitioner if partitioned else ""
            # A TF1 optimizer makes this TF 1.x's V1 class (TF 2.15's V2 raises a
            # ValueError for one), as a partitioner does; V1's positional order differs
            # after these.
            common = V1_COMMON_PREFIX[short]
            if any(a.keyword is None for a in node.args[common:]):
                bad.append(
                    f"positional arguments after {PREMADE_FACADE[short][common - 1]} (TF 1.x's "
                    f"{short} orders its parameters differently from TF 2.15's)"
                )
        elif optimizer is not None and not self._exact_optimizer(optimizer):
            bad.append(
                "optimizer (only a name "
                f"{', '.join(repr(n) for n in OPTIMIZER_NAMES)}, a "
                "`tf.keras.optimizers.legacy.*(...)` call, or a TF1 "
                f"{', '.join(sorted({n[6:-9] for n in TF1_OPTIMIZERS}))} optimizer written "
                "here or bound only to such calls in the same function maps exactly)"
            )
        if "label_vocabulary" in args and not is_none(args["label_vocabulary"]):
            bad.append(
                "label_vocabulary (string labels cannot reach a TPU: map them to class ids "
                "in the input_fn)"
            )
        if "warm_start_from" in args and not is_none(args["warm_start_from"]):
            bad.append(
                "warm_start_from (an Estimator checkpoint is name-based; the facade's are "
                "object-based)"
            )
        reduction = args.get("loss_reduction")
        if reduction is not None and not self._exact_reduction(reduction):
            bad.append(
                "loss_reduction (only tf.losses.Reduction.SUM_OVER_BATCH_SIZE or SUM, written "
                "here or the only value of a name in the module)"
            )
        dnn = short.startswith("DNN")
        kinds = self.column_kinds(DNN_EXACT_COLUMNS if dnn else EXACT_COLUMNS)
        if kinds:
            exact = (
                "only numeric, bucketized, integer-id categorical (identity, weighted) "
                "columns through indicator_column or embedding_column are mapped exactly"
                if dnn
                else "only numeric_column is mapped exactly"
            )
            bad.append(f"feature columns {', '.join(kinds)} ({exact})")
        if not bad:
            return None
        return (
            f"premade {short} left as it is: {'; '.join(bad)} has no exact equivalent in the "
            f"tf2 facade's {short}; change {'it' if len(bad) == 1 else 'them'} and re-run, "
            f"or {manual}"
        )

    def _v1_arguments(self, original: cst.Call, updated: cst.Call, alias: str) -> cst.Call:
        """A V1 premade's partitioner dropped and its optimizer name (or default) written as
        the Keras legacy optimizer that makes V1's update."""
        partitioner = self.v1_partitioned.get(id(original), "")
        if partitioner:
            self.record(
                original,
                f"{partitioner}= of TF 1.x's V1 premade dropped: partitioning shards the "
                "variables over parameter servers and leaves the model's function and updates "
                "as they are",
            )
            args = [a for a in updated.args if a.keyword is None or a.keyword.value != partitioner]
            updated = updated.with_changes(args=ending_as(args, updated.args))
        keras = self.v1_optimizer.get(id(original))
        if keras is not None:
            value = cst.parse_expression(f"{alias}.keras.optimizers.legacy.{keras}")
            self.record(
                original,
                "TF 1.x's V1 premade builds a named (or its default) optimizer as TF1's class at "
                f"its own learning rate -> optimizer=tf.keras.optimizers.legacy.{keras}",
            )
            short = (self.tf_name(original.func) or "").rsplit(".", 1)[-1]
            params = PREMADE_FACADE[short]  # V1's order up to `optimizer` (V1_COMMON_PREFIX)
            given = [
                i
                for i, a in enumerate(updated.args)
                if (a.keyword.value if a.keyword is not None else params[i]) == "optimizer"
            ]
            if given:
                args = list(updated.args)
                args[given[0]] = args[given[0]].with_changes(value=value)
                updated = updated.with_changes(args=args)
            else:
                updated = with_kwarg(updated, "optimizer", value)
        return updated

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        return self._rewrite(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._rewrite(original_node, updated_node)

    def _rewrite(
        self, original: cst.Name | cst.Attribute, updated: cst.BaseExpression
    ) -> cst.BaseExpression:
        if id(original) in self.keep or id(original) in self.attrs:
            return updated
        qualified = self.state.imports.qualify(original)
        canonical = self.tf_name(original)
        if qualified is None or canonical is None:
            return updated
        new = FACADE_NAMES.get(canonical)
        if new is None and id(original) in self.premade_ok:
            new = canonical.rsplit(".", 1)[-1]
        if new is not None:
            self._drop_import(original)
            self.record(original, f"tf.{canonical} -> {FACADE_MODULE}.{new}")
            return facade(self, new)
        if id(original) in self.inner or canonical in NAMESPACES:
            return updated
        if any(canonical.startswith(f"{name}.") for name in FACADE_NAMES):
            return updated  # `ModeKeys.TRAIN`: its `ModeKeys` part was rewritten
        short = canonical.rsplit(".", 1)[-1]
        if canonical in (f"estimator.{short}", f"train.{short}") and short in HOOK_ADVICE:
            self.refuse(
                original,
                f"`tf.{canonical}` has no equivalent in the tf2 facade: it {HOOK_ADVICE[short]}",
            )
            return updated
        if canonical.startswith("estimator."):
            self.refuse(original, why_not(canonical))
        return updated

    def _drop_import(self, node: cst.Name | cst.Attribute) -> None:
        """`tfe.Estimator` (or `Estimator`) became the facade's: once nothing else uses
        `tfe`, its import of an Estimator-only module goes (current TensorFlow cannot import
        it). LibCST removes it only if it is unused when the rule is done; an import of
        `tensorflow` itself stays."""
        head: cst.BaseExpression = node
        while isinstance(head, cst.Attribute):
            head = head.value
        if not isinstance(head, cst.Name):
            return
        imports = self.state.imports
        target = imports.bindings.get(head.value)
        if not (isinstance(node, cst.Name) or in_estimator_only_module(target)):
            return
        form = imports.import_form(head.value)
        if form is not None:
            RemoveImportsVisitor.remove_unused_import(self.context, *form)
