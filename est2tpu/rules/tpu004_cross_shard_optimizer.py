"""TPU004: wrap a model_fn's TF1 optimizer in CrossShardOptimizer when running on TPU."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.codemod.visitors import RemoveImportsVisitor

from est2tpu.cstutil import (
    add_param,
    assigned_names,
    descendants,
    has_param,
    indented_blocks,
    iter_calls,
    names_read,
    pure_read,
    unique_name,
    walk,
)
from est2tpu.names import dotted
from est2tpu.rule import FileState, Rule

OPTIMIZER_METHODS = frozenset({"minimize", "compute_gradients", "apply_gradients"})


class CrossShardOptimizer(Rule):
    @classmethod
    def applies(cls, state: FileState) -> bool:
        return cls.file_has_model_fn(state)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # id(statement after which the branches assigning an optimizer join) -> its name
        self.joins: dict[int, str] = {}

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if not self.in_model_fn():
            return updated_node
        split = self._split_inline(updated_node)
        if split is not updated_node:
            self.record(original_node, "optimizer created and used in one expression: split")
            updated_node = split
        expanded, forced = self._expand_optimize_loss(original_node, updated_node)
        if expanded is not updated_node:
            self.record(original_node, "optimize_loss -> an explicit optimizer")
            updated_node = expanded
        expanded, more = self._expand_create_train_op(original_node, updated_node)
        if expanded is not updated_node:
            self.record(original_node, "create_train_op -> an explicit optimizer")
            updated_node = expanded
            forced = forced | more
        used = self._optimizer_receivers(updated_node)
        splittable = _whole_statement_values(original_node)
        for call in iter_calls(original_node):
            if (
                isinstance(call.func, cst.Attribute)
                and call.func.attr.value in OPTIMIZER_METHODS
                and isinstance(call.func.value, cst.Call)
                and self._is_tf1_optimizer(call.func.value)
                and id(call) not in splittable
            ):
                self.refuse(
                    call,
                    "the optimizer is created and used in one expression; assign it to a "
                    "variable so it can be wrapped in CrossShardOptimizer on TPU",
                )
        targets = self._wrappable(updated_node, used, original_node) | forced
        if not targets:
            return updated_node
        locals_ = assigned_names(updated_node)
        if not has_param(updated_node, "params"):
            if "params" in locals_:
                self.refuse(
                    original_node,
                    "the model_fn has a local named `params` but no params argument; "
                    "CrossShardOptimizer needs params['use_tpu']: rename the local by hand",
                )
                return updated_node
            updated_node = add_param(updated_node, "params")
        body = updated_node.body
        assert isinstance(body, cst.IndentedBlock)
        test: cst.BaseExpression = cst.parse_expression(
            "params.use_tpu" if _params_read_by_attribute(updated_node) else 'params["use_tpu"]'
        )
        statements = list(body.body)
        if len(locals_.get("params", ())) > 1:
            # `params = {...}` / `params = params or {}` in the model_fn: the rebound dict
            # has no "use_tpu" (KeyError at training), so it is read before the rebinding,
            # first thing in the body, where `params` is still TPUEstimator's.
            flag = unique_name("use_tpu", set(locals_))
            read = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(flag))], test)])
            at = 1 if statements and _is_docstring(statements[0]) else 0
            statements.insert(at, read)
            test = cst.Name(flag)
        new_body = body.with_changes(body=self._insert(statements, targets, test))
        self.record(original_node, "optimizer wrapped in CrossShardOptimizer on TPU")
        return updated_node.with_changes(body=new_body)

    def _expand_optimize_loss(
        self, original: cst.FunctionDef, fn: cst.FunctionDef
    ) -> tuple[cst.FunctionDef, set[str]]:
        """`train_op = tf.contrib.layers.optimize_loss(...)` -> the statements TF 1.15's
        contrib/layers/python/layers/optimizers.py runs: the optimizer (by name, class,
        instance or callable), the learning-rate decay, the UPDATE_OPS dependency, the
        gradients clipped by global norm, apply_gradients, and its default summaries under
        the OptimizeLoss scope's tags. The optimizer is then wrapped like any other (the
        names in the second value are wrapped whatever builds them)."""
        plans: list[tuple[cst.SimpleStatementLine, list[cst.BaseStatement], str | None]] = []
        taken = set(assigned_names(fn))
        handled: set[int] = set()

        class V(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is original

            def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
                stmts.append(node)

        stmts: list[cst.SimpleStatementLine] = []
        walk(original, V())
        calls = [
            c
            for c in iter_calls(original)
            if (self.tf_name(c.func) or "")
            in ("contrib.layers.optimize_loss", "layers.optimize_loss")
        ]
        if not calls:
            return fn, set()
        for stmt in stmts:
            small = stmt.body[0] if len(stmt.body) == 1 else None
            if not (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and isinstance(small.value, cst.Call)
                and small.value in calls
            ):
                continue
            handled.add(id(small.value))
            if len(calls) > 1:
                self.refuse(
                    small.value,
                    "optimize_loss is called more than once in this model_fn (scopes "
                    "OptimizeLoss, OptimizeLoss_1, ...); create each optimizer by hand and wrap "
                    "it in tf.compat.v1.tpu.CrossShardOptimizer when params['use_tpu']",
                )
                continue
            try:
                new, forced = self._optimize_loss_plan(small.value, small.targets[0].target, taken)
            except _Refusal as why:
                self.refuse(small.value, str(why))
                continue
            plans.append((stmt, new, forced))
        for call in calls:
            if id(call) not in handled:
                self.refuse(
                    call,
                    "optimize_loss is not assigned to a name on a line of its own; write "
                    "`train_op = tf.contrib.layers.optimize_loss(...)` and re-run",
                )
        if not plans:
            return fn, set()

        class T(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn

            def leave_IndentedBlock(
                self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
            ) -> cst.IndentedBlock:
                body: list[cst.BaseStatement] = []
                for st in updated_node.body:
                    for old, new, _ in plans:
                        if st.deep_equals(old):
                            assert isinstance(st, cst.SimpleStatementLine)
                            body += [new[0].with_changes(leading_lines=st.leading_lines), *new[1:]]
                            break
                    else:
                        body.append(st)
                return updated_node.with_changes(body=body)

        result = fn.visit(T())
        assert isinstance(result, cst.FunctionDef)
        return result, {f for _, _, f in plans if f is not None}

    def _expand_create_train_op(
        self, original: cst.FunctionDef, fn: cst.FunctionDef
    ) -> tuple[cst.FunctionDef, set[str]]:
        """`train_op = tf.contrib.training.create_train_op(loss, optimizer)` (also
        `slim.learning.create_train_op`, tf_slim's) -> the statements TF 1.15's
        contrib/training/python/training/training.py runs: the loss made to wait for the
        UPDATE_OPS, the optimizer's compute_gradients over the trainable variables,
        apply_gradients with the global step, and the loss, checked for inf/nan, returned
        after the update. The optimizer is then wrapped like any other."""
        plans: list[tuple[cst.SimpleStatementLine, list[cst.BaseStatement]]] = []
        forced: set[str] = set()
        taken = set(assigned_names(fn))
        calls = [c for c in iter_calls(original) if self._is_create_train_op(c)]
        if not calls:
            return fn, set()
        handled: set[int] = set()

        class V(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is original

            def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
                stmts.append(node)

        stmts: list[cst.SimpleStatementLine] = []
        walk(original, V())
        for stmt in stmts:
            small = stmt.body[0] if len(stmt.body) == 1 else None
            if not (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and isinstance(small.value, cst.Call)
                and any(small.value is c for c in calls)
            ):
                continue
            handled.add(id(small.value))
            try:
                new, name = self._create_train_op_plan(small.value, small.targets[0].target, taken)
            except _Refusal as why:
                self.refuse(small.value, str(why))
                continue
            plans.append((stmt, new))
            forced.add(name)
            head = (dotted(small.value.func) or "").partition(".")[0]
            form = self.state.imports.import_form(head)
            if form is not None and form[0].startswith("tf_slim"):
                # tf_slim is not TensorFlow's: its import goes when nothing else uses it
                RemoveImportsVisitor.remove_unused_import(self.context, *form)
        for call in calls:
            if id(call) not in handled:
                self.refuse(
                    call,
                    "create_train_op is not assigned to a name on a line of its own; write "
                    "`train_op = create_train_op(loss, optimizer)` and re-run",
                )
        if not plans:
            return fn, set()

        class T(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn

            def leave_IndentedBlock(
                self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
            ) -> cst.IndentedBlock:
                body: list[cst.BaseStatement] = []
                for st in updated_node.body:
                    for old, new in plans:
                        if st.deep_equals(old):
                            assert isinstance(st, cst.SimpleStatementLine)
                            body += [new[0].with_changes(leading_lines=st.leading_lines), *new[1:]]
                            break
                    else:
                        body.append(st)
                return updated_node.with_changes(body=body)

        result = fn.visit(T())
        assert isinstance(result, cst.FunctionDef)
        return result, forced

    def _is_create_train_op(self, call: cst.Call) -> bool:
        name = self.tf_name(call.func) or ""
        if name in ("contrib.training.create_train_op", "contrib.slim.learning.create_train_op"):
            return True
        qualified = self.state.imports.qualify(call.func) or ""
        return qualified in ("tf_slim.learning.create_train_op", "tf_slim.create_train_op")

    def _create_train_op_plan(
        self, call: cst.Call, target: cst.Name, taken: set[str]
    ) -> tuple[list[cst.BaseStatement], str]:
        code = cst.Module([]).code_for_node
        names = ("total_loss", "optimizer", "global_step")
        args: dict[str, cst.BaseExpression] = {}
        for i, arg in enumerate(call.args):
            if arg.star:
                raise _Refusal("create_train_op with *args/**kwargs: pass them by keyword")
            key = (
                arg.keyword.value
                if arg.keyword is not None
                else (names[i] if i < len(names) else "")
            )
            if not key:
                raise _Refusal("create_train_op with more than three positional arguments")
            args[key] = arg.value
        for key, value in args.items():
            is_none = isinstance(value, cst.Name) and value.value == "None"
            default = (
                (key == "check_numerics" and code(value) == "True")
                or (
                    key in ("summarize_gradients", "colocate_gradients_with_ops")
                    and code(value) == "False"
                )
                or (key == "clip_gradient_norm" and code(value) in ("0", "0.0"))
            )
            if key not in names and not (
                default
                or (is_none and key in ("update_ops", "variables_to_train", "transform_grads_fn",
                                        "aggregation_method", "gradient_multipliers"))
            ) and key != "check_numerics":  # fmt: skip
                raise _Refusal(
                    f"create_train_op(..., {key}=...) is not rewritten; write the optimizer's "
                    "compute_gradients/apply_gradients by hand"
                )
        if "total_loss" not in args or "optimizer" not in args:
            raise _Refusal("create_train_op without a loss or an optimizer")
        check = args.get("check_numerics")
        if check is not None and code(check) not in ("True", "False"):
            raise _Refusal("create_train_op(check_numerics=...) that is not True or False")

        def tf(name: str) -> str:
            return code(self.tf(name))

        out: list[str] = []
        optimizer = args["optimizer"]
        if isinstance(optimizer, cst.Name):
            opt = optimizer.value
        else:
            opt = unique_name("optimizer", taken)
            out.append(f"{opt} = {code(optimizer)}")
        loss = unique_name("total_loss", taken)
        update_ops = unique_name("update_ops", taken)
        grads = unique_name("grads", taken)
        grad_updates = unique_name("grad_updates", taken)
        step = args.get("global_step")
        if step is None:
            step_code = f"{tf('compat.v1.train.get_or_create_global_step')}()"
        else:
            step_code = code(step)
        out += [
            f"{loss} = {code(args['total_loss'])}",
            (
                f"{update_ops} = {tf('compat.v1.get_collection')}"
                f"({tf('compat.v1.GraphKeys')}.UPDATE_OPS)"
            ),
            (
                f"if {update_ops}:\n"
                f"    with {tf('control_dependencies')}({update_ops}):\n"
                f"        {loss} = {tf('identity')}({loss})"
            ),
            f"{grads} = {opt}.compute_gradients({loss}, {tf('compat.v1.trainable_variables')}())",
            f"{grad_updates} = {opt}.apply_gradients({grads}, global_step={step_code})",
        ]
        if check is None or code(check) == "True":
            out.append(
                f'{loss} = {tf("debugging.check_numerics")}({loss}, "LossTensor is inf or nan")'
            )
        out.append(
            f"with {tf('control_dependencies')}([{grad_updates}]):\n"
            f"    {target.value} = {tf('identity')}({loss})"
        )
        return [cst.parse_statement(line + "\n") for line in out], opt

    def _optimize_loss_plan(
        self, call: cst.Call, target: cst.Name, taken: set[str]
    ) -> tuple[list[cst.BaseStatement], str | None]:
        code = cst.Module([]).code_for_node
        names = ("loss", "global_step", "learning_rate", "optimizer")
        args: dict[str, cst.BaseExpression] = {}
        for i, arg in enumerate(call.args):
            if arg.star:
                raise _Refusal("optimize_loss with *args/**kwargs: pass them by keyword")
            key = (
                arg.keyword.value
                if arg.keyword is not None
                else (names[i] if i < len(names) else "")
            )
            if not key:
                raise _Refusal("optimize_loss with more than four positional arguments")
            args[key] = arg.value
        supported = {*names, "clip_gradients", "learning_rate_decay_fn", "update_ops",
                     "summaries", "name"}  # fmt: skip
        for key, value in args.items():
            if key not in supported and not (isinstance(value, cst.Name) and value.value == "None"):
                raise _Refusal(
                    f"optimize_loss(..., {key}=...) is not rewritten; create the optimizer by "
                    "hand and wrap it in tf.compat.v1.tpu.CrossShardOptimizer when "
                    "params['use_tpu']"
                )
        if "loss" not in args or "optimizer" not in args:
            raise _Refusal("optimize_loss without loss or optimizer")

        def tf(name: str) -> str:
            return code(self.tf(name))

        def none(key: str) -> bool:
            v = args.get(key)
            return v is None or (isinstance(v, cst.Name) and v.value == "None")

        def fresh(name: str) -> str:
            out = unique_name(name, taken)
            taken.add(out)
            return out

        scope = "OptimizeLoss"
        if not none("name"):
            value = args["name"]
            if not isinstance(value, cst.SimpleString):
                raise _Refusal("optimize_loss(name=...) that is not a string literal")
            scope = str(value.evaluated_value)
        summaries = {"loss", "learning_rate", "global_gradient_norm"}
        if not none("summaries"):
            value = args["summaries"]
            if not isinstance(value, (cst.List, cst.Tuple)) or not all(
                isinstance(e.value, cst.SimpleString) for e in value.elements
            ):
                raise _Refusal("optimize_loss(summaries=...) that is not a literal list")
            summaries = {str(e.value.evaluated_value) for e in value.elements}  # type: ignore[attr-defined]
            if summaries & {"gradients", "gradient_norm"}:
                raise _Refusal(
                    "optimize_loss(summaries=[...]) with per-variable gradient summaries "
                    "(gradients, gradient_norm); write them by hand"
                )
        step = (
            f"{tf('compat.v1.train.get_global_step')}()"
            if none("global_step")
            else code(args["global_step"])
        )
        lines: list[str] = []
        lr: str | None = None
        if not none("learning_rate"):
            value = args["learning_rate"]
            if isinstance(value, cst.Integer):
                raise _Refusal("optimize_loss(learning_rate=<int>) raises in TensorFlow")
            lr = code(value)
            if not none("learning_rate_decay_fn"):
                lr_name = fresh("learning_rate")
                value = args["learning_rate_decay_fn"]
                decay = code(value)
                # A lambda or a functools.partial is a function; anything else may hold
                # None when the model_fn runs, which TF 1.15 skipped (`if learning_rate is
                # not None and learning_rate_decay_fn is not None`), summary included.
                at_run_time = not isinstance(value, cst.Lambda) and not (
                    isinstance(value, cst.Call)
                    and self.state.imports.qualify(value.func) == "functools.partial"
                )
                if at_run_time and not self.has_runtime("optimize_loss_learning_rate"):
                    raise _Refusal(
                        "optimize_loss(learning_rate_decay_fn=...) that is no lambda may be "
                        "None when the model_fn runs, which --no-runtime leaves no helper to "
                        "decide; call it (or not) by hand"
                    )
                if isinstance(value, cst.Lambda) or (at_run_time and not pure_read(value)):
                    decay_name = fresh("learning_rate_decay_fn")
                    lines.append(f"{decay_name} = {decay}")
                    decay = decay_name
                tensor = f"{tf('convert_to_tensor')}({lr}, dtype={tf('float32')})"
                if at_run_time:
                    helper = code(self.runtime("optimize_loss_learning_rate"))
                    lines.append(f"{lr_name} = {helper}({decay}, {tensor}, {step})")
                else:
                    lines.append(f"{lr_name} = {decay}({tensor}, {step})")
                lr = lr_name
                if "learning_rate" in summaries:
                    summary = f'{tf("compat.v1.summary.scalar")}("{scope}/learning_rate", {lr})'
                    if at_run_time:
                        lines.append(f"if {decay} is not None:")
                        summary = "    " + summary
                    lines.append(summary)
        optimizer = args["optimizer"]
        opt = fresh("optimizer")
        forced: str | None = None
        classes = {"Adagrad": "AdagradOptimizer", "Adam": "AdamOptimizer",
                   "Ftrl": "FtrlOptimizer", "RMSProp": "RMSPropOptimizer",
                   "SGD": "GradientDescentOptimizer"}  # fmt: skip
        if isinstance(optimizer, cst.SimpleString):
            kind = str(optimizer.evaluated_value)
            if lr is None:
                raise _Refusal("optimize_loss with an optimizer name and no learning rate")
            if kind == "Momentum":
                lines.append(
                    f"{opt} = {tf('compat.v1.train.MomentumOptimizer')}({lr}, momentum=0.9)"
                )
            elif kind in classes:
                lines.append(
                    f"{opt} = {tf('compat.v1.train.' + classes[kind])}(learning_rate={lr})"
                )
            else:
                raise _Refusal(f"optimize_loss(optimizer={kind!r}) is not a TensorFlow name")
        elif isinstance(optimizer, cst.Call) and self._is_tf1_optimizer(optimizer):
            lines.append(f"{opt} = {code(optimizer)}")
        elif isinstance(optimizer, (cst.Name, cst.Attribute)) and (
            (self.tf_name(optimizer) or "").startswith("train.")
            and (self.tf_name(optimizer) or "").endswith("Optimizer")
        ):
            if lr is None:
                raise _Refusal("optimize_loss with an optimizer class and no learning rate")
            lines.append(f"{opt} = {code(optimizer)}(learning_rate={lr})")
        elif isinstance(optimizer, cst.Lambda):
            fn_name = fresh("optimizer_fn")
            lines.append(f"{fn_name} = {code(optimizer)}")
            lines.append(f"{opt} = {fn_name}({lr if lr is not None else ''})")
            forced = opt
        else:
            raise _Refusal(
                "optimize_loss(optimizer=...) is neither a name, a TF1 optimizer class or "
                "instance, nor a lambda: est2tpu cannot tell which it is; create the optimizer "
                "by hand and wrap it in tf.compat.v1.tpu.CrossShardOptimizer when "
                "params['use_tpu']"
            )
        loss = fresh("loss_with_updates")
        updates = fresh("update_ops")
        grads = fresh("gradients")
        if none("update_ops"):
            lines.append(
                f"{updates} = {tf('compat.v1.get_collection')}"
                f"({tf('compat.v1.GraphKeys')}.UPDATE_OPS)"
            )
        else:
            lines.append(f"{updates} = {code(args['update_ops'])}")
        lines.append(f"with {tf('control_dependencies')}({updates}):")
        lines.append(f"    {loss} = {tf('identity')}({code(args['loss'])})")
        lines.append(f"{grads} = {opt}.compute_gradients({loss})")
        norm = f"{tf('linalg.global_norm')}([g for g, _ in {grads}])"
        scalar = tf("compat.v1.summary.scalar")
        if "global_gradient_norm" in summaries:
            lines.append(f'{scalar}("{scope}/global_norm/gradient_norm", {norm})')
        clip = args.get("clip_gradients")
        applied = grads
        run_time_clip: str | None = None
        if not none("clip_gradients"):
            assert clip is not None
            # A name of its own for the clipped pairs: each name bound once keeps the
            # summaries below movable to host_call (TPU009).
            applied = fresh("clipped_gradients")
            if isinstance(clip, cst.Float):
                norms = fresh("clipped")
                lines.append(
                    f"{norms}, _ = {tf('clip_by_global_norm')}([g for g, _ in {grads}], "
                    f"{code(clip)})"
                )
                lines.append(f"{applied} = list(zip({norms}, [v for _, v in {grads}]))")
            elif isinstance(clip, cst.Lambda):
                lines.append(f"{applied} = ({code(clip)})({grads})")
            elif pure_read(clip) and self.has_runtime("optimize_loss_clip_gradients"):
                # `hparams.clip_norm`: a float, a callable or None only when the model_fn
                # runs; the shim takes the branch TensorFlow took then. A read, so evaluating
                # it again for the summary below gives the same value.
                helper = code(self.runtime("optimize_loss_clip_gradients"))
                lines.append(f"{applied} = {helper}({code(clip)}, {grads})")
                run_time_clip = code(clip)
            else:
                raise _Refusal(
                    "optimize_loss(clip_gradients=...) is neither a float literal, a lambda, "
                    "a name nor an attribute or item of one: est2tpu cannot tell how TensorFlow would "
                    "clip; bind the value to a name first"
                )
        if "loss" in summaries:
            lines.append(f'{scalar}("{scope}/loss", {loss})')
        if not none("clip_gradients") and "global_gradient_norm" in summaries:
            clipped_norm = f"{tf('linalg.global_norm')}([g for g, _ in {applied}])"
            clipped_summary = (
                f'{scalar}("{scope}/global_norm/clipped_gradient_norm", {clipped_norm})'
            )
            if run_time_clip is not None:
                # TensorFlow wrote it only when clip_gradients was not None
                lines.append(f"if {run_time_clip} is not None:")
                clipped_summary = "    " + clipped_summary
            lines.append(clipped_summary)
        updated = fresh("grad_updates")
        lines.append(f"{updated} = {opt}.apply_gradients({applied}, global_step={step})")
        lines.append(f"with {tf('control_dependencies')}([{updated}]):")
        lines.append(f"    {target.value} = {tf('identity')}({loss})")
        module = cst.parse_module("\n".join(lines) + "\n")
        return list(module.body), forced

    def _split_inline(self, fn: cst.FunctionDef) -> cst.FunctionDef:
        """`train_op = tf.train.XOptimizer(...).minimize(...)` as a whole statement becomes
        `optimizer = tf.train.XOptimizer(...)` then `train_op = optimizer.minimize(...)`, so
        the optimizer can be wrapped."""
        rule = self
        taken = set(assigned_names(fn))

        class Split(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn

            def leave_IndentedBlock(
                self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
            ) -> cst.IndentedBlock:
                body: list[cst.BaseStatement] = []
                for stmt in updated_node.body:
                    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
                    if (
                        isinstance(stmt, cst.SimpleStatementLine)
                        and len(stmt.body) == 1
                        and isinstance(small, cst.Assign)
                        and isinstance(small.value, cst.Call)
                        and isinstance(small.value.func, cst.Attribute)
                        and small.value.func.attr.value in OPTIMIZER_METHODS
                        and isinstance(small.value.func.value, cst.Call)
                        and rule._is_tf1_optimizer(small.value.func.value)
                    ):
                        name = unique_name("optimizer", taken)
                        func = small.value.func
                        create = cst.SimpleStatementLine(
                            [cst.Assign([cst.AssignTarget(cst.Name(name))], func.value)],
                            leading_lines=stmt.leading_lines,
                        )
                        use = stmt.with_changes(
                            leading_lines=(),
                            body=[
                                small.with_changes(
                                    value=small.value.with_changes(
                                        func=func.with_changes(value=cst.Name(name))
                                    )
                                )
                            ],
                        )
                        body += [create, use]
                    else:
                        body.append(stmt)
                return updated_node.with_changes(body=body)

        result = fn.visit(Split())
        assert isinstance(result, cst.FunctionDef)
        return result if not result.deep_equals(fn) else fn

    def _is_tf1_optimizer(self, call: cst.Call) -> bool:
        name = self.tf_name(call.func) or ""
        return name.startswith("train.") and name.endswith("Optimizer")

    def _optimizer_receivers(self, fn: cst.FunctionDef) -> set[str]:
        receivers = set()
        for call in iter_calls(fn):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in OPTIMIZER_METHODS:
                name = dotted(call.func.value)
                if name is not None:
                    receivers.add(name)
        return receivers

    def _wrappable(self, fn: cst.FunctionDef, used: set[str], anchor: cst.FunctionDef) -> set[str]:
        """Optimizer variables assigned once from a TF1 optimizer and used to train."""
        out = set()
        for name, values in assigned_names(fn).items():
            if name not in used:
                continue
            tf1 = [v for v in values if isinstance(v, cst.Call) and self._is_tf1_optimizer(v)]
            wrapped = [
                v
                for v in values
                if isinstance(v, cst.Call) and self.tf_name(v.func) in _CROSS_SHARD
            ]
            if wrapped:
                continue  # already migrated
            if len(tf1) == 1 and len(values) == 1:
                out.add(name)
            elif (
                tf1
                and all(isinstance(v, cst.Call) for v in values)
                and (join := _join_point(fn, name, len(values)))
            ):
                # Chosen in if/elif/else (a TF1 optimizer in one branch, maybe a third-party
                # Optimizer subclass in another): wrapped once, after the branches join.
                out.add(name)
                self.joins[id(join)] = name
            elif tf1:
                self.refuse(
                    anchor,
                    f"optimizer `{name}` is assigned more than once; wrap it in "
                    "tf.compat.v1.tpu.CrossShardOptimizer when params['use_tpu'] by hand",
                )
        return out

    def _insert(
        self,
        statements: Sequence[cst.BaseStatement],
        targets: set[str],
        test: cst.BaseExpression,
    ) -> list[cst.BaseStatement]:
        """The statements with the wrap after each assignment of a target, at any depth
        below them (not into nested defs and classes).

        One transformer visits every block once, innermost first, and each block is given
        only its own assignments: a block must not be handed back to `_insert` after its
        children were processed, or the inserted `name = CrossShardOptimizer(name)` (an
        assignment of the target itself) gets wrapped again, without end.
        """
        rule = self

        class Into(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False

            def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                return False

            def leave_IndentedBlock(
                self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
            ) -> cst.IndentedBlock:
                joins = [rule.joins.get(id(st)) for st in original_node.body]
                return updated_node.with_changes(
                    body=rule._insert_here(updated_node.body, joins, targets, test)
                )

        block = cst.IndentedBlock(body=list(statements)).visit(Into())
        assert isinstance(block, cst.IndentedBlock)
        return list(block.body)

    def _insert_here(
        self,
        statements: Sequence[cst.BaseStatement],
        joins: Sequence[str | None],
        targets: set[str],
        test: cst.BaseExpression,
    ) -> list[cst.BaseStatement]:
        joined = set(self.joins.values())
        out: list[cst.BaseStatement] = []
        for stmt, join in zip(statements, joins):
            out.append(stmt)
            if join is not None:
                out.append(self._wrap(join, test))
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if (
                        isinstance(small, cst.Assign)
                        and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)
                        and small.targets[0].target.value in targets
                        and small.targets[0].target.value not in joined
                    ):
                        out.append(self._wrap(small.targets[0].target.value, test))
        return out

    def _wrap(self, name: str, test: cst.BaseExpression) -> cst.If:
        wrapper = self.tf("compat.v1.tpu.CrossShardOptimizer")
        assign = cst.SimpleStatementLine(
            [
                cst.Assign(
                    [cst.AssignTarget(cst.Name(name))],
                    cst.Call(wrapper, [cst.Arg(cst.Name(name))]),
                )
            ]
        )
        return cst.If(test=test, body=cst.IndentedBlock([assign]))


# What a dict and an HParams both answer: reading one of these says nothing of which it is.
_DICT_ATTRIBUTES = frozenset(dir(dict))


def _params_read_by_attribute(fn: cst.FunctionDef) -> bool:
    """Whether the model_fn reads `params.name` (or `alias.name` for an `alias = params`):
    its params is then an HParams, where TPUEstimator sets `use_tpu` with add_hparam and
    `params["use_tpu"]` is a TypeError."""
    locals_ = assigned_names(fn)
    aliases = {"params"} | {
        name
        for name, values in locals_.items()
        if len(values) == 1 and isinstance(values[0], cst.Name) and values[0].value == "params"
    }
    if len(locals_.get("params", ())) > 1:
        return False  # rebound: what it reads may not be TPUEstimator's params
    return any(
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value in aliases
        and node.attr.value not in _DICT_ATTRIBUTES
        for node in descendants(fn.body)
    )


class _Refusal(Exception):
    """Why an optimize_loss call is left as it is."""


_CROSS_SHARD = frozenset({"tpu.CrossShardOptimizer", "contrib.tpu.CrossShardOptimizer"})


def _whole_statement_values(fn: cst.FunctionDef) -> set[int]:
    """ids of the values of `name = value` statements alone on their line (splittable)."""
    found: set[int] = set()

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if len(node.body) == 1 and isinstance(node.body[0], cst.Assign):
                found.add(id(node.body[0].value))

    walk(fn, V())
    return found


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _assigns(stmt: cst.BaseStatement, name: str) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Assign)
        and len(stmt.body[0].targets) == 1
        and isinstance(stmt.body[0].targets[0].target, cst.Name)
        and stmt.body[0].targets[0].target.value == name
    )


def _branch_assignments(stmt: cst.If, name: str) -> int:
    """How many branches of an if/elif/else chain assign `name` at their top level."""
    count = 0
    node: cst.If | cst.Else | None = stmt
    while node is not None:
        body = node.body
        if isinstance(body, cst.IndentedBlock):
            count += sum(_assigns(st, name) for st in body.body)
        node = node.orelse if isinstance(node, cst.If) else None
    return count


def _join_point(fn: cst.FunctionDef, name: str, bindings: int) -> cst.BaseStatement | None:
    """The statement after which every binding of `name` has happened: the last of a run of
    statements in one block that assign it directly or in the branches of an if/elif/else,
    with no read of it in between (it is used only once the branches joined)."""
    for block in indented_blocks(fn, into_defs=False):
        hits = []
        found = 0
        for i, st in enumerate(block.body):
            if _assigns(st, name):
                hits.append(i)
                found += 1
            elif isinstance(st, cst.If) and (n := _branch_assignments(st, name)):
                hits.append(i)
                found += n
        if found != bindings:
            continue
        run = block.body[hits[0] : hits[-1] + 1]
        names = [n for st in run for n in names_read(st) if n.value == name]
        targets = sum(_assigns(st, name) for st in run) + sum(
            _branch_assignments(st, name) for st in run if isinstance(st, cst.If)
        )
        if len(names) != targets:
            return None  # read before the branches join: wrapping after them is too late
        return block.body[hits[-1]]
    return None
