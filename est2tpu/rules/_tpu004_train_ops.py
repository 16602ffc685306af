"""The TF1 train-op builders TPU004 expands into an explicit optimizer it can wrap:
`tf.contrib.layers.optimize_loss` and `create_train_op` (contrib.training, TF-Slim, tf_slim),
each as the statements TensorFlow 1.15 runs. Not a rule (the registry skips `_` modules)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from est2tpu.cstpatch import schedule_removal
from est2tpu.cstutil import assigned_names, iter_calls, literal_text, pure_read, unique_name, walk
from est2tpu.names import dotted
from est2tpu.rule import Rule


class Refusal(Exception):
    """The builder call cannot be expanded; the message says what to do by hand."""


def api_name(canonical: str | None) -> str:
    """A canonical TensorFlow name without the `compat.v1.` that `tf.compat.v1.X` keeps under
    `import tensorflow.compat.v1 as tf` (TensorFlow's compat.v1 has a compat.v1 of its own)."""
    name = canonical or ""
    while name.startswith("compat.v1."):
        name = name[len("compat.v1.") :]
    return name


def is_tf1_optimizer_class(rule: Rule, expr: cst.BaseExpression) -> bool:
    """`tf.compat.v1.train.AdamOptimizer` in any spelling: `tf.train.X` under
    `import tensorflow.compat.v1 as tf`, `tf.compat.v1.train.X` under either import,
    `from tensorflow.compat.v1 import train`, `from tensorflow.compat.v1.train import X`."""
    name = api_name(rule.tf_name(expr))
    return name.startswith("train.") and name.endswith("Optimizer")


def _is_tf1_optimizer(rule: Rule, call: cst.Call) -> bool:
    return is_tf1_optimizer_class(rule, call.func)


def _expand_assigned(
    rule: Rule,
    original: cst.FunctionDef,
    fn: cst.FunctionDef,
    calls: list[cst.Call],
    plan: Callable[[cst.Call, cst.Name, set[str]], tuple[list[cst.BaseStatement], str | None]],
    unassigned: str,
    repeated: str | None = None,
) -> tuple[cst.FunctionDef, set[str]]:
    """Each `name = <one of calls>` on a line of its own in the model_fn `original` ->
    the statements `plan` makes of it (it raises Refusal to leave it), placed in `fn`
    (the model_fn as the rule has rewritten it so far); the names `plan` says must be
    wrapped come back with it. A call of `calls` anywhere else gets the finding
    `unassigned`, and with `repeated` set every call gets that one when there are several."""
    if not calls:
        return fn, set()
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
        if repeated is not None and len(calls) > 1:
            rule.refuse(small.value, repeated)
            continue
        try:
            new, forced = plan(small.value, small.targets[0].target, taken)
        except Refusal as why:
            rule.refuse(small.value, str(why))
            continue
        plans.append((stmt, new, forced))
    for call in calls:
        if id(call) not in handled:
            rule.refuse(call, unassigned)
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


def expand_optimize_loss(
    rule: Rule, original: cst.FunctionDef, fn: cst.FunctionDef
) -> tuple[cst.FunctionDef, set[str]]:
    """`train_op = tf.contrib.layers.optimize_loss(...)` -> the statements TF 1.15's
    contrib/layers/python/layers/optimizers.py runs: the optimizer (by name, class,
    instance or callable), the learning-rate decay, the UPDATE_OPS dependency, the
    gradients clipped by global norm, apply_gradients, and its default summaries under
    the OptimizeLoss scope's tags. The optimizer is then wrapped like any other (the
    names in the second value are wrapped whatever builds them)."""
    calls = [
        c
        for c in iter_calls(original)
        if (rule.tf_name(c.func) or "") in ("contrib.layers.optimize_loss", "layers.optimize_loss")
    ]

    def plan(
        call: cst.Call, target: cst.Name, taken: set[str]
    ) -> tuple[list[cst.BaseStatement], str | None]:
        return optimize_loss_plan(rule, call, target, taken)

    return _expand_assigned(
        rule,
        original,
        fn,
        calls,
        plan,
        "optimize_loss is not assigned to a name on a line of its own; write "
        "`train_op = tf.contrib.layers.optimize_loss(...)` and re-run",
        repeated="optimize_loss is called more than once in this model_fn (scopes "
        "OptimizeLoss, OptimizeLoss_1, ...); create each optimizer by hand and wrap "
        "it in tf.compat.v1.tpu.CrossShardOptimizer when params['use_tpu']",
    )


def expand_create_train_op(
    rule: Rule, original: cst.FunctionDef, fn: cst.FunctionDef
) -> tuple[cst.FunctionDef, set[str]]:
    """`train_op = tf.contrib.training.create_train_op(loss, optimizer)` (also
    `slim.learning.create_train_op`, tf_slim's) -> the statements TF 1.15's
    contrib/training/python/training/training.py runs: the loss made to wait for the
    UPDATE_OPS, the optimizer's compute_gradients over the trainable variables,
    apply_gradients with the global step, and the loss, checked for inf/nan, returned
    after the update. The optimizer is then wrapped like any other."""

    def plan(
        call: cst.Call, target: cst.Name, taken: set[str]
    ) -> tuple[list[cst.BaseStatement], str | None]:
        new, name = create_train_op_plan(rule, call, target, taken)
        head = (dotted(call.func) or "").partition(".")[0]
        form = rule.state.imports.import_form(head)
        if form is not None and form[0].startswith("tf_slim"):
            # tf_slim is not TensorFlow's: its import goes when nothing else uses it
            schedule_removal(rule.context, *form)
        return new, name

    return _expand_assigned(
        rule,
        original,
        fn,
        [c for c in iter_calls(original) if is_create_train_op(rule, c)],
        plan,
        "create_train_op is not assigned to a name on a line of its own; write "
        "`train_op = create_train_op(loss, optimizer)` and re-run",
    )


def is_create_train_op(rule: Rule, call: cst.Call) -> bool:
    name = rule.tf_name(call.func) or ""
    if name in ("contrib.training.create_train_op", "contrib.slim.learning.create_train_op"):
        return True
    qualified = rule.state.imports.qualify(call.func) or ""
    return qualified in ("tf_slim.learning.create_train_op", "tf_slim.create_train_op")


def create_train_op_plan(
    rule: Rule, call: cst.Call, target: cst.Name, taken: set[str]
) -> tuple[list[cst.BaseStatement], str]:
    code = cst.Module([]).code_for_node
    names = ("total_loss", "optimizer", "global_step")
    args: dict[str, cst.BaseExpression] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            raise Refusal("create_train_op with *args/**kwargs: pass them by keyword")
        key = arg.keyword.value if arg.keyword is not None else (names[i] if i < len(names) else "")
        if not key:
            raise Refusal("create_train_op with more than three positional arguments")
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
            raise Refusal(
                f"create_train_op(..., {key}=...) is not rewritten; write the optimizer's "
                "compute_gradients/apply_gradients by hand"
            )
    if "total_loss" not in args or "optimizer" not in args:
        raise Refusal("create_train_op without a loss or an optimizer")
    check = args.get("check_numerics")
    if check is not None and code(check) not in ("True", "False"):
        raise Refusal("create_train_op(check_numerics=...) that is not True or False")

    def tf(name: str) -> str:
        return code(rule.tf(name))

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
        out.append(f'{loss} = {tf("debugging.check_numerics")}({loss}, "LossTensor is inf or nan")')
    out.append(
        f"with {tf('control_dependencies')}([{grad_updates}]):\n"
        f"    {target.value} = {tf('identity')}({loss})"
    )
    return [cst.parse_statement(line + "\n") for line in out], opt


def optimize_loss_plan(
    rule: Rule, call: cst.Call, target: cst.Name, taken: set[str]
) -> tuple[list[cst.BaseStatement], str | None]:
    code = cst.Module([]).code_for_node
    names = ("loss", "global_step", "learning_rate", "optimizer")
    args: dict[str, cst.BaseExpression] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            raise Refusal("optimize_loss with *args/**kwargs: pass them by keyword")
        key = arg.keyword.value if arg.keyword is not None else (names[i] if i < len(names) else "")
        if not key:
            raise Refusal("optimize_loss with more than four positional arguments")
        args[key] = arg.value
    supported = {*names, "clip_gradients", "learning_rate_decay_fn", "update_ops",
                 "summaries", "name"}  # fmt: skip
    for key, value in args.items():
        if key not in supported and not (isinstance(value, cst.Name) and value.value == "None"):
            raise Refusal(
                f"optimize_loss(..., {key}=...) is not rewritten; create the optimizer by "
                "hand and wrap it in tf.compat.v1.tpu.CrossShardOptimizer when "
                "params['use_tpu']"
            )
    if "loss" not in args or "optimizer" not in args:
        raise Refusal("optimize_loss without loss or optimizer")

    def tf(name: str) -> str:
        return code(rule.tf(name))

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
            raise Refusal("optimize_loss(name=...) that is not a string literal")
        scope = str(literal_text(value))
    summaries = {"loss", "learning_rate", "global_gradient_norm"}
    if not none("summaries"):
        value = args["summaries"]
        if not isinstance(value, (cst.List, cst.Tuple)) or not all(
            isinstance(e.value, cst.SimpleString) for e in value.elements
        ):
            raise Refusal("optimize_loss(summaries=...) that is not a literal list")
        summaries = {
            str(literal_text(e.value))
            for e in value.elements
            if isinstance(e.value, cst.SimpleString)  # each is, as tested above
        }
        if summaries & {"gradients", "gradient_norm"}:
            raise Refusal(
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
            raise Refusal("optimize_loss(learning_rate=<int>) raises in TensorFlow")
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
                and rule.state.imports.qualify(value.func) == "functools.partial"
            )
            if at_run_time and not rule.has_runtime("optimize_loss_learning_rate"):
                raise Refusal(
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
                helper = code(rule.runtime("optimize_loss_learning_rate"))
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
        kind = str(literal_text(optimizer))
        if lr is None:
            raise Refusal("optimize_loss with an optimizer name and no learning rate")
        if kind == "Momentum":
            lines.append(f"{opt} = {tf('compat.v1.train.MomentumOptimizer')}({lr}, momentum=0.9)")
        elif kind in classes:
            lines.append(f"{opt} = {tf('compat.v1.train.' + classes[kind])}(learning_rate={lr})")
        else:
            raise Refusal(f"optimize_loss(optimizer={kind!r}) is not a TensorFlow name")
    elif isinstance(optimizer, cst.Call) and _is_tf1_optimizer(rule, optimizer):
        lines.append(f"{opt} = {code(optimizer)}")
    elif isinstance(optimizer, (cst.Name, cst.Attribute)) and is_tf1_optimizer_class(
        rule, optimizer
    ):
        if lr is None:
            raise Refusal("optimize_loss with an optimizer class and no learning rate")
        lines.append(f"{opt} = {code(optimizer)}(learning_rate={lr})")
    elif isinstance(optimizer, cst.Lambda):
        fn_name = fresh("optimizer_fn")
        lines.append(f"{fn_name} = {code(optimizer)}")
        lines.append(f"{opt} = {fn_name}({lr if lr is not None else ''})")
        forced = opt
    else:
        raise Refusal(
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
            f"{updates} = {tf('compat.v1.get_collection')}({tf('compat.v1.GraphKeys')}.UPDATE_OPS)"
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
                f"{norms}, _ = {tf('clip_by_global_norm')}([g for g, _ in {grads}], {code(clip)})"
            )
            lines.append(f"{applied} = list(zip({norms}, [v for _, v in {grads}]))")
        elif isinstance(clip, cst.Lambda):
            lines.append(f"{applied} = ({code(clip)})({grads})")
        elif pure_read(clip) and rule.has_runtime("optimize_loss_clip_gradients"):
            # `hparams.clip_norm`: a float, a callable or None only when the model_fn
            # runs; the shim takes the branch TensorFlow took then. A read, so evaluating
            # it again for the summary below gives the same value.
            helper = code(rule.runtime("optimize_loss_clip_gradients"))
            lines.append(f"{applied} = {helper}({code(clip)}, {grads})")
            run_time_clip = code(clip)
        else:
            raise Refusal(
                "optimize_loss(clip_gradients=...) is neither a float literal, a lambda, "
                "a name nor an attribute or item of one: est2tpu cannot tell how TensorFlow would "
                "clip; bind the value to a name first"
            )
    if "loss" in summaries:
        lines.append(f'{scalar}("{scope}/loss", {loss})')
    if not none("clip_gradients") and "global_gradient_norm" in summaries:
        clipped_norm = f"{tf('linalg.global_norm')}([g for g, _ in {applied}])"
        clipped_summary = f'{scalar}("{scope}/global_norm/clipped_gradient_norm", {clipped_norm})'
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
