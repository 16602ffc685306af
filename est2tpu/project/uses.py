"""The walk of one module that finds Estimator constructions and the calls that use them
(train, evaluate, predict, specs, train_and_evaluate)."""

from __future__ import annotations

import libcst as cst

from est2tpu.cstutil import (
    names_read,
)
from est2tpu.index import (
    Mode,
    UseSite,
    call_arg,
    model_fns_of,
    param_names,
)
from est2tpu.names import dotted
from est2tpu.project.batch_sources import batch_not_from_params, not_at_ctor
from est2tpu.project.calls import (
    call_values,
    reads_params_batch_size,
    returned_call,
    substituted,
)
from est2tpu.project.ctor_sites import CtorSites
from est2tpu.project.input_fns import InputFns
from est2tpu.project.input_shapes import batched_by_a_parameter
from est2tpu.project.keras_models import compiled_optimizers, why_unmappable
from est2tpu.project.scope import partial_inner
from est2tpu.tfapi import (
    ADD_METRICS,
    ESTIMATOR_CTORS,
    KERAS_TO_ESTIMATOR,
    PREMADE,
    RUN_METHODS,
    SPEC_CTORS,
    TPU_ESTIMATOR_CTORS,
    call_kind,
    feature_column_calls,
    is_column_kind,
    premade_refusal,
)


class UseCollector(InputFns, CtorSites):
    """Finds Estimator constructions and the calls that use them, in one module."""

    def refuse_shim_only_uses(self) -> None:
        """Under --no-runtime, an Estimator fed by numpy/pandas_input_fn stays as it is."""
        for scope, _call, est_var, _mode, input_fn, seq in self.pending:
            with self.placed(scope, seq):
                ctor = self.lookup(self.estimators, est_var) if est_var else None
                numpy_call, _ = self.numpy_input(input_fn)
            plan = self.ix.index.ctors.get(ctor) if ctor is not None else None
            if plan is not None and numpy_call is not None and plan.convert:
                plan.convert = False
                plan.refusal = (
                    "Estimator left as it is: its numpy/pandas input functions need the "
                    "params-aware versions in est2tpu.runtime, which --no-runtime forbids"
                )

    def refuse_batch_size_in_unread_params(self) -> None:
        """An input_fn lambda that hands an object of the program's (`lambda:
        read_train(folder, hparams)`) to an input function batching by its `batch_size`
        (`.batch(hparams.batch_size)`, there or in a helper it calls), for an Estimator
        whose params est2tpu cannot read (a parameter, an HParams): those params are that
        object, most likely, and hold `batch_size`, a key TPUEstimator reserves (it raises
        ValueError when it is built). The Estimator stays as it is, reported where it is
        built: no batch size or params without the key can be given to it provably."""
        for scope, _call, est_var, _mode, input_fn, seq in self.pending:
            if (
                est_var is None
                or not isinstance(input_fn, cst.Lambda)
                or "params" in param_names(input_fn)
            ):
                continue
            with self.placed(scope, seq):
                ctor = self.estimator_of(est_var)
                key = self.input_fn_key(input_fn)
            plan = self.ix.index.ctors.get(ctor) if ctor is not None else None
            if (
                plan is None
                or not plan.convert
                or plan.params_keys is not None
                or plan.params_copy is not None
                or plan.params_batch is not None
                or key is None
            ):
                continue
            held = batched_by_a_parameter(self.ix, key)
            if held is None:
                continue
            plan.convert = False
            plan.refusal = (
                f"Estimator left as it is: its input function `{self.code(input_fn)}` "
                f"batches by `{held[1]}` (in `{held[0]}`) of an object the lambda hands it, "
                "and est2tpu cannot read this Estimator's params: where they are that "
                "object, they hold 'batch_size', a key TPUEstimator reserves (it raises "
                "ValueError when it is built); build the TPUEstimator with params without "
                "it (tpu_runtime.params_without_batch_size(...): a dict or an HParams) and "
                "that size as its train/eval_batch_size, make the lambda take `params` and "
                "hand them on (TPUEstimator sets their batch_size), and batch with "
                "drop_remainder on TPU, by hand"
            )

    def spec_from_helper(
        self, arg: cst.BaseExpression, spec_var: str | None, mode: Mode
    ) -> cst.Call | None:
        """`train_spec = inputs.get_train_spec(path, args.batch_size)`, where the project
        function only returns `TrainSpec(make_input_fn(path, batch_size=batch_size), ...)`:
        that spec as this call makes it (the function's parameters replaced by what the call
        passes, its module's functions named through the module the call names), so that
        its input function is followed as if built here. The spec's rewrites and findings
        stay where the function returns it. None when any name of its input function means
        something only inside the function's module."""
        made = self.lookup(self.values, spec_var) if spec_var is not None else arg
        if not isinstance(made, cst.Call) or any(a.star for a in made.args):
            return None
        helper = self.ix.resolve_fn(self.src, self.here, made.func)
        if helper is None or "." in helper[1]:
            return None
        fn = self.ix.fn(helper)
        owner = self.ix.modules[helper[0]]
        returned = returned_call(fn)
        name = owner.imports.tf_name(returned.func) if returned is not None else None
        if returned is None or name not in SPEC_CTORS or Mode(SPEC_CTORS[name]) is not mode:
            return None
        fn_arg = call_arg(returned, "input_fn", 0)
        if fn_arg is None or not isinstance(fn_arg.value, (cst.Call, cst.Name)):
            return None
        if isinstance(fn.params.star_arg, cst.Param) or fn.params.star_kwarg is not None:
            return None
        values = call_values(fn, made)
        module: cst.BaseExpression | None = None
        reads = names_read(fn_arg.value)
        if helper[0] != self.src.path and any(
            read.value in owner.defs and read.value not in values for read in reads
        ):
            if not isinstance(made.func, cst.Attribute):
                return None  # `from inputs import get_train_spec`: its module has no name here
            module = made.func.value
        here = self.src.imports.bindings
        for read in reads:
            imported = owner.imports.bindings.get(read.value)
            if not (
                read.value in values
                or read.value in owner.defs
                or read.value in ("True", "False", "None")
                or (imported is not None and here.get(read.value) == imported)
            ):
                return None

        def replace(name: str) -> cst.BaseExpression | None:
            if name in values:
                return values[name]
            if name in owner.defs and module is not None:
                return cst.Attribute(module, cst.Name(name))
            return None

        input_fn = substituted(fn_arg.value, replace)
        spec = cst.Call(returned.func, [cst.Arg(input_fn)])
        self.spec_sites[id(spec)] = (helper[0], helper[1], self.code(returned))
        return spec

    def helper_spec(
        self, arg: cst.BaseExpression, spec_var: str | None, est_name: str, mode: Mode
    ) -> None:
        """A TrainSpec/EvalSpec a project function builds and returns (`train_spec =
        inputs.get_train_spec(path, args.batch_size)`): est2tpu does not follow it, so its
        input function's batch size reaches no TPUEstimator; the spec says so."""
        made = self.lookup(self.values, spec_var) if spec_var is not None else arg
        if not isinstance(made, cst.Call):
            return
        helper = self.ix.resolve_fn(self.src, self.here, made.func)
        returned = returned_call(self.ix.fn(helper)) if helper is not None else None
        if helper is None or returned is None:
            return
        owner = self.ix.modules[helper[0]]
        name = owner.imports.tf_name(returned.func)
        if name not in SPEC_CTORS or Mode(SPEC_CTORS[name]) is not mode:
            return
        key = (helper[0], helper[1], self.code(returned))
        spec = name.rpartition(".")[2]
        self.helper_specs.append((key, spec, self.code(made.func), est_name, self.here, self.seq))

    def finish(self) -> None:
        for site_key, spec, helper, holder, scope, seq in self.helper_specs:
            with self.placed(scope, seq):
                ctor = self.estimator_of(holder)
            plan = self.ix.index.ctors.get(ctor) if ctor is not None else None
            if plan is None or not (plan.convert or plan.tpu):
                continue
            size = "train_batch_size" if spec == "TrainSpec" else "eval_batch_size"
            self.ix.index.use_sites.setdefault(site_key, UseSite()).problems.append(
                f"this {spec} reaches train_and_evaluate through `{helper}(...)`, whose "
                "input function est2tpu cannot follow from the call (it reads names that "
                "only that function or its module has): its batch size reaches no "
                "TPUEstimator (it trains on CPU, fails on TPU); pass "
                f"{size}=<that batch size> to the TPUEstimator and batch by "
                "params['batch_size'] in the input function by hand"
            )
        for key, est_name, scope, seq in self.tande:
            with self.placed(scope, seq):
                ctor = self.estimator_of(est_name) if est_name else None
            self.ix.index.train_and_evaluate[key] = ctor
        for scope, call, est_var, mode, input_fn, seq in self.pending:
            self.seq = seq
            self.use(scope, call, est_var, mode, input_fn)

    def visit_Call(self, node: cst.Call) -> None:
        self.seq += 1
        kind = call_kind(self.src.imports, node.func)
        if kind is None and isinstance(node.func, (cst.Name, cst.Attribute)):
            self.calls.append((self.here, node))
            self.call_seq[id(node)] = self.seq
        if kind is not None:
            key = self.keys.next(self.here, kind)
            self.node_keys[id(node)] = key
            target = self.assign_targets.get(id(node))
            if kind == "ctor":
                self.ctor_seq[key] = self.seq
            if target is not None and kind == "ctor":
                self.bind(self.estimators, target, key)
                self.bind_attribute(self.estimators, target, key)
            elif target is not None and kind == "numpy":
                self.bind(self.numpy_inputs, target, node)
        name = self.src.imports.tf_name(node.func)
        if name in ADD_METRICS:
            arg = call_arg(node, "metric_fn", 1)
            metric_fn = self.ix.resolve_fn(self.src, self.here, arg.value) if arg else None
            if metric_fn is not None:
                self.ix.metric_fns.add(metric_fn)
            return
        shim = self.shim_name(node.func) if name is None else None
        if shim == "evaluate":
            # `tpu_runtime.evaluate(estimator, input_fn, ..., examples=...)`: an evaluate()
            # a first run rewrote (its steps counted on TPU), of the same input function
            est = call_arg(node, "estimator", 0)
            arg = call_arg(node, "input_fn", 1)
            receiver = dotted(est.value) if est is not None else None
            if receiver is not None and arg is not None and self.runs_estimator(receiver):
                self.pending.append((self.here, node, receiver, Mode.EVAL, arg.value, self.seq))
            return
        if shim == "train_and_evaluate":
            name = "estimator.train_and_evaluate"  # the loop a first run wrote: same specs
        elif shim == "tf2.Estimator" and self.ix.facade:
            name = "estimator.Estimator"  # the facade's, a first run wrote: the same model_fn
        elif shim is not None and (shim == "model_to_estimator" or shim.startswith("premade.")):
            # A TPUEstimator a first run built (the Keras or premade builder): its input
            # functions are held to what TPUEstimator needs, as the original's were.
            plan = self.ctor_plan(node)
            plan.tpu = True
            plan.as_migrated = True
            self.tpu_ctor(node, plan)
            return
        if name is not None and name.startswith("estimator.") and name[10:] in PREMADE:
            plan = self.ctor_plan(node)
            plan.premade = True
            qualified = self.src.imports.qualify(node.func) or ""
            called = feature_column_calls(self.src.module, self.src.imports.tf_name)
            columns = {short for name in called if is_column_kind(short := name.rsplit(".", 1)[-1])}
            plan.refusal = premade_refusal(
                name[10:], qualified, node, self.ix.use_runtime, columns
            ) or self.ix.forced.get(self.node_keys[id(node)])
            plan.convert = plan.refusal is None
            return
        if name in KERAS_TO_ESTIMATOR:
            plan = self.ctor_plan(node)
            plan.keras = True
            plan.convert = not any(a.star for a in node.args)
            if not plan.convert:
                plan.refusal = "model_to_estimator called with *args/**kwargs; convert it by hand"
                return
            optimizers = compiled_optimizers(self.ix, self.src, self.here, node) or ()
            reasons = [why for why in map(why_unmappable, optimizers) if why is not None]
            plan.unmappable_optimizer = reasons[0] if reasons else None
            plan.refusal = self.ix.forced.get(self.node_keys[id(node)])
            plan.convert = plan.unmappable_optimizer is None and plan.refusal is None
            return
        if name in ESTIMATOR_CTORS:
            plan = self.ctor_plan(node)
            if "." in self.assign_targets.get(id(node), ""):
                self.ix.attribute_ctors.add(self.node_keys[id(node)])
            plan.tpu = name in TPU_ESTIMATOR_CTORS
            arg = call_arg(node, "model_fn", 0)
            fn_key = None
            if arg is not None:
                options = self.model_fn_choices(arg.value)
                fn_key = options[0] if options else None
                if options and len(options) > 1:
                    plan.model_fn_choices = options[1:]
                else:
                    fn_key = self.wrapped_model_fn(plan, arg.value, fn_key)
            plan.model_fn = fn_key
            if fn_key is None and arg is not None:
                self.model_fn_parameter(node, plan, arg.value)
            if fn_key is not None:
                plan.model_fn_reads_batch_size = any(
                    reads_params_batch_size(self.ix.fn(key)) for key in model_fns_of(plan)
                )
            given = call_arg(node, "params", 3)
            if given is not None:
                self.ix.ctor_params[self.node_keys[id(node)]] = self.code(given.value)
            config = call_arg(node, "config", 2)
            plan.config_is_run_config = config is not None and self.is_run_config(config.value)
            if plan.tpu:
                self.wrapper_problem = None  # the user's own TPUEstimator: as it is
                self.tpu_ctor(node, plan)
            else:
                plan.refusal = self.ctor_refusal(node, plan) or self.ix.forced.get(
                    self.node_keys[id(node)]
                )
                plan.convert = plan.refusal is None
                params = call_arg(node, "params", 3)
                fn = self.src.defs.get(self.here)
                if (
                    plan.convert
                    and params is not None
                    and isinstance(params.value, cst.Name)
                    and fn is not None
                    and params.value.value in param_names(fn)
                    and self.lookup(self.values, params.value.value) is None
                ):
                    self.ix.params_params.append(
                        (plan, (self.src.path, self.here), params.value.value)
                    )
            return
        if name in SPEC_CTORS:
            arg = call_arg(node, "input_fn", 0)
            if arg is not None:
                self.pending.append(
                    (self.here, node, None, Mode(SPEC_CTORS[name]), arg.value, self.seq)
                )
            return
        if name == "estimator.train_and_evaluate":
            est = call_arg(node, "estimator", 0)
            est_name = dotted(est.value) if est else None
            self.tande.append((self.node_keys[id(node)], est_name, self.here, self.seq))
            for kw, pos in (("train_spec", 1), ("eval_spec", 2)):
                arg = call_arg(node, kw, pos)
                if arg is None or est_name is None:
                    continue
                spec_var = dotted(arg.value)
                spec = self.lookup(self.specs, spec_var) if spec_var else None
                spec_call = arg.value if isinstance(arg.value, cst.Call) else None
                mode = Mode.TRAIN if kw == "train_spec" else Mode.EVAL
                if spec is not None:
                    spec_call = spec[1]
                elif spec_call is not None or spec_var is not None:
                    inlined = self.spec_from_helper(arg.value, spec_var, mode)
                    if inlined is not None:
                        spec_call = inlined
                    else:
                        self.helper_spec(arg.value, spec_var, est_name, mode)
                if spec_call is not None:
                    fn_arg = call_arg(spec_call, "input_fn", 0)
                    if fn_arg is not None:
                        self.pending.append(
                            (self.here, spec_call, est_name, mode, fn_arg.value, self.seq)
                        )
            return
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in RUN_METHODS
            and isinstance(func.value, cst.Call)
            and call_kind(self.src.imports, func.value.func) == "ctor"
        ):
            # `tf.estimator.Estimator(...).train(input_fn)`: the Estimator is held by no
            # name; it gets one of its own, bound when its construction is walked, and the
            # use is recorded after it (`leave_Call`)
            arg = call_arg(node, "input_fn", 0)
            if arg is not None:
                held = f"<estimator of line {id(func.value)}>"
                self.assign_targets[id(func.value)] = held
                self.chained[id(node)] = (held, Mode(RUN_METHODS[func.attr.value]), arg.value)
            return
        if isinstance(func, cst.Attribute) and func.attr.value in RUN_METHODS:
            receiver = dotted(func.value)
            if receiver is None or not self.runs_estimator(receiver):
                return
            arg = call_arg(node, "input_fn", 0)
            if arg is not None:
                mode = Mode(RUN_METHODS[func.attr.value])
                self.pending.append((self.here, node, receiver, mode, arg.value, self.seq))

    def leave_Call(self, original_node: cst.Call) -> None:
        chained = self.chained.pop(id(original_node), None)
        if chained is not None:
            held, mode, input_fn = chained
            self.pending.append((self.here, original_node, held, mode, input_fn, self.seq))

    def use(
        self,
        scope: str,
        call: cst.Call,
        est_var: str | None,
        mode: Mode,
        input_fn: cst.BaseExpression,
    ) -> None:
        saved, self.scope = self.scope, scope.split(".") if scope else []
        try:
            self.reach = {}
            ctor = self.estimator_of(est_var) if est_var else None
            plan = self.ix.index.ctors.get(ctor) if ctor is not None else None
            if est_var and (plan is None or not (plan.convert or plan.tpu)):
                # An estimator est2tpu leaves as it is: it passes its own params (no
                # "batch_size") to this input function, which may feed a TPUEstimator too.
                held = self.lookup(self.values, est_var)
                holder = self.code(held.func) if isinstance(held, cst.Call) else est_var
                self.consumer(input_fn, f"`{holder}`")
            if est_var and ctor is None:
                return  # a call's result, and not an Estimator the index knows of
            enclosing = self.src.defs.get(scope)
            if (
                est_var is None
                and isinstance(input_fn, cst.Name)
                and enclosing is not None
                and input_fn.value in param_names(enclosing)
                and self.lookup(self.assigned, input_fn.value) is None
            ):
                # `def get_train_spec(train_fn, steps): return TrainSpec(train_fn, ...)`: the
                # input function is what each call passes, followed where the spec it
                # returns reaches an Estimator (`spec_from_helper`, `helper_spec`)
                return
            # A spec by its place among the scope's specs (the rule's key_of), any other call
            # by its text.
            site_key = self.spec_sites.get(id(call)) or self.node_keys.get(id(call))
            if site_key is None:
                site_key = (self.src.path, scope, self.code(call))
            site = self.ix.index.use_sites.setdefault(site_key, UseSite())
            self.ctor_key = ctor
            self.ctor_scope = ctor[1] if ctor is not None else None
            self.ctor_path = ctor[0] if ctor is not None else None
            self.ctor_at = self.ctor_seq.get(ctor) if ctor is not None else None
            if plan is not None and (plan.convert or (plan.tpu and mode not in plan.off_tpu)):
                # Whether or not its input can be rewritten, this call runs a TPUEstimator.
                site.tpu = True
            if plan is not None and plan.convert and ctor is not None:
                self.ix.ctor_modes.setdefault(ctor, set()).add(mode)
            if ctor is not None:
                self.ix.ctor_sites.setdefault(ctor, []).append(site)
            self.kept = plan is not None and not (plan.convert or plan.tpu)
            result = self.analyse_input_fn(input_fn, mode, site, commit=False)
            commit = plan is not None and (
                plan.convert
                # A TPUEstimator (from a run that stopped before writing the input
                # function's file) with the batch size this input function uses, which it
                # cannot call yet: it takes no params.
                or (
                    plan.tpu
                    and site.lacks_params
                    and result is not None
                    and plan.tpu_batch_sizes.get(mode) == result.code
                )
                # A TPUEstimator as est2tpu writes it, whose input function reads its
                # params["batch_size"] already (written by that run, or by the user first),
                # or batches by the size it has: planned as the Estimator's a one-shot run
                # converts, so its batches (and its helpers') get what that run gives them
                # (drop_remainder on TPU). Any drop_remainder of its own stays.
                or (
                    plan.as_migrated
                    and mode not in plan.off_tpu
                    and (
                        result is None
                        or result.from_params
                        or plan.tpu_batch_sizes.get(mode) == result.code
                    )
                )
            )
            if commit and result is not None and not result.portable:
                site.problems.append(not_at_ctor(result, self.ctor_where(scope, result)))
                commit = False
            elif (
                plan is not None
                and plan.tpu
                and mode not in plan.off_tpu
                and not commit
                and result is not None
                and not result.from_params
            ):
                # A TPUEstimator the project has (or a first run made) whose input function
                # still batches by a size of its own: what the original's refusal said holds.
                site.problems.append(
                    batch_not_from_params(plan, result, self.ctor_where(scope, result))
                )
            if commit:
                self.analyse_input_fn(input_fn, mode, site, commit=True)
                if ctor is not None:
                    files = self.ix.ctor_files.setdefault(ctor, set())
                    files.add(site_key[0])
                    fn_key = self.input_fn_key(input_fn)
                    if fn_key is not None:
                        files.add(fn_key[0])
                if site.unsized and plan is not None:
                    plan.unsized_modes.add(mode)
        finally:
            self.scope = saved
        if plan is None or result is None or not commit:
            return
        plan.batch_sizes.setdefault(mode, []).append(result)

    def passed_on(self) -> None:
        """Calls of code est2tpu does not migrate (not TensorFlow's, not the project's) that
        receive an input function the index plans a batch rewrite for: `adanet.Evaluator(
        input_fn=make_input("train", ...))` calls it with params of its own."""
        keys = {k for k, p in self.ix.index.input_fns.items() if p.batch_to_params}
        # names first: resolving every argument of every call would be costly
        names = {part for _, path in keys for part in path.split(".")}
        if not names:
            return
        used = {id(call) for _, call, *_ in self.pending}  # `use` saw these
        for scope, call in self.calls:
            if self.src.imports.tf_name(call.func) is not None or self.shim_name(call.func):
                continue
            if id(call) in used:
                continue
            args = [a for a in call.args if any(n in self.code(a.value) for n in names)]
            if not args:
                continue
            self.at(scope, call)
            if self.ix.resolve_fn(self.src, scope, call.func) is not None:
                continue  # a project function: the index follows what it does
            if partial_inner(self, call) is not None:
                continue  # the partial object is the input function, where it is used
            for arg in args:
                key = self.input_fn_key(arg.value)
                if key in keys:
                    self.ix.consumers.setdefault(key, []).append(f"`{self.code(call.func)}`")
