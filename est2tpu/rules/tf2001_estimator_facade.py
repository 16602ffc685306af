"""TF2001: the Estimator API -> the tf2 facade (`est2tpu.runtime.tf2`), names kept."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstpatch import schedule_removal
from est2tpu.cstutil import (
    descendants,
    iter_calls,
    target_names,
)
from est2tpu.index import node_code
from est2tpu.names import canonical_tf, in_estimator_only_module
from est2tpu.rule import FileState, Rule
from est2tpu.rules._tf2 import FACADE_MODULE, drop_estimator_import, facade
from est2tpu.rules._tf2001_input_fns import lambda_dataset, refusals, returns_dataset
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
from est2tpu.rules._tf2005_facade import PREMADE_RULE, PremadeFacadeBase, is_premade


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


class EstimatorFacade(Rule):
    KEYED = True  # looks Estimator constructions up in the index by order

    @classmethod
    def applies(cls, state: FileState) -> bool:
        """The file names the Estimator API in its code, imports a name from it, or calls
        train/evaluate/predict on an Estimator the index saw."""
        if Rule.file_has_input_fn(state):
            return True  # its input functions return datasets (see `leave_FunctionDef`)
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
        # TF2005's plan of the module's premade calls (None: TF2005 does not run, and
        # premades are left whole)
        self.premades: PremadeFacadeBase | None = None
        self._hook_names: dict[str, bool] | None = None  # name -> only facade hooks bound
        self._module: cst.Module = cst.Module(body=[])
        # RunConfig args (by id) -> what replaces them: the DistributeConfig's strategies as
        # RunConfig's own arguments, or nothing (the facade picks the same strategy)
        self.distribute: dict[int, list[cst.Arg]] = {}
        # TF1 GradientDescentOptimizer calls a Keras model is compiled with (by id)
        self.keras_sgd: set[int] = set()
        # an input function hands out iterator tensors no rewrite proves: the module's
        # Estimator names stay, and TF2004 keeps the file whole
        self.whole = False

    def tf_name(self, node: cst.BaseExpression) -> str | None:
        """TensorFlow's canonical name, also for the private Estimator names the facade has."""
        return super().tf_name(node) or private_name(self.state.imports.qualify(node))

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node
        # An import of an Estimator-only module goes once nothing uses what it binds: also
        # one the file never used (current TensorFlow cannot import it; LibCST removes an
        # import only when it is unused when the rule is done).
        imports = self.state.imports
        for name, target in imports.bindings.items():
            form = imports.import_form(name) if in_estimator_only_module(target) else None
            if form is not None:
                schedule_removal(self.context, *form)
        for call, message in refusals(self, node):
            self.whole = True
            self.refuse(call, message)
        self._plan_keras_optimizers(node)
        if self.state.runs(PREMADE_RULE):
            self.premades = PremadeFacadeBase(self.context, self.state)
            self.premades.visit_Module(node)

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

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        """An input function the project uses returns its dataset, not a one-shot
        iterator's tensors (`_tf2001_input_fns`)."""
        if self.whole or self.input_fn_plan() is None:
            return updated_node
        return returns_dataset(self, original_node, updated_node)

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        return updated_node if self.whole else lambda_dataset(self, updated_node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.inner.add(id(node.value))
        self.attrs.add(id(node.attr))

    def visit_Call(self, node: cst.Call) -> None:
        canonical = self.tf_name(node.func)
        new = FACADE_NAMES.get(canonical or "")
        if new is None and canonical is None:
            self.check_method_hooks(node)
        if new is None:
            if is_premade(canonical):
                # TF2005's. A premade it does not map (or that it does not run for) keeps its
                # arguments too (its RunConfig stays a tf.estimator.RunConfig): never half a
                # migration. One it maps gets its arguments migrated here.
                kept = node.func if self.premades is not None and self.premades.maps(node) else node
                self.keep.update(id(n) for n in descendants(kept))
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
                schedule_removal(self.context, *form)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
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
            return self._facade_hook_class(value.func)
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
                        and self._facade_hook_class(node.value.func)
                    )
                    for target in targets:
                        if isinstance(target, cst.Name):
                            name = target.value
                            self._hook_names[name] = self._hook_names.get(name, True) and is_hook
        return self._hook_names.get(value.value, False)

    def _facade_hook_class(self, func: cst.BaseExpression) -> bool:
        """A TensorFlow hook the facade has, or the facade's own (this rule's output, read
        again by the next pass)."""
        if self.tf_name(func) in FACADE_HOOKS:
            return True
        qualified = self.state.imports.qualify(func) or ""
        return qualified.startswith(f"{FACADE_MODULE}.hooks.")

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        return self._rewrite(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._rewrite(original_node, updated_node)

    def _rewrite(
        self, original: cst.Name | cst.Attribute, updated: cst.BaseExpression
    ) -> cst.BaseExpression:
        if self.whole or id(original) in self.keep or id(original) in self.attrs:
            return updated
        qualified = self.state.imports.qualify(original)
        canonical = self.tf_name(original)
        if qualified is None or canonical is None:
            return updated
        new = FACADE_NAMES.get(canonical)
        if new is not None:
            drop_estimator_import(self, original)
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
        if canonical.startswith("estimator.") and not is_premade(canonical):
            self.refuse(original, why_not(canonical))  # premades are TF2005's
        return updated
