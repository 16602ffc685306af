"""TPU004's train-op chains in the rule's terms (the index finds them,
`est2tpu.project.train_ops`): a def of the chain takes a keyword-only flag, False by
default, and passes it on; the model_fns TPUEstimator runs pass `params["use_tpu"]`. Any
other caller (a plain Estimator's model_fn, a script, another module) passes nothing and runs
the def as before. Not a rule (the registry skips `_` modules)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from est2tpu.cstutil import assigned_names, iter_calls
from est2tpu.index import TrainOpLink, node_code
from est2tpu.names import dotted
from est2tpu.project.train_ops import BUILDERS, OPTIMIZER_METHODS
from est2tpu.rule import Rule
from est2tpu.rules._tpu004_train_ops import api_name, is_tf1_optimizer_class

__all__ = ["OPTIMIZER_METHODS"]


def refuse_unwrappable(rule: Rule, fn: cst.FunctionDef) -> None:
    """A TF1 optimizer created in the arguments of a call that is not TensorFlow's
    (`make_train_op(loss, tf.compat.v1.train.AdamOptimizer(0.1))`): the callee uses it
    where the caller cannot wrap it."""
    for call in iter_calls(fn):
        if (
            rule.tf_name(call.func) is not None
            or (dotted(call.func) or "").rpartition(".")[2] in BUILDERS
        ):
            continue  # TensorFlow's, or a builder the rule expands (TF-Slim's too)
        for arg in call.args:
            if isinstance(arg.value, cst.Call) and is_tf1_optimizer_class(rule, arg.value.func):
                callee = dotted(call.func) or "the function called"
                rule.refuse(
                    arg.value,
                    f"a TF1 optimizer is created in the call of `{callee}` that uses it, "
                    "where on TPU each core would apply its own gradients: assign it to a "
                    "variable first, then `if params['use_tpu']: optimizer = "
                    "tf.compat.v1.tpu.CrossShardOptimizer(optimizer)`, and pass that",
                )


def refuse_links(rule: Rule, fn: cst.FunctionDef, link: TrainOpLink | None) -> None:
    """The findings the index left at calls in this def: a callee the flag cannot reach, an
    optimizer applied here but built where it cannot be wrapped."""
    if link is None or not link.unfollowed:
        return
    for call in iter_calls(fn):
        message = link.unfollowed.get(node_code(call.func))
        if message is not None:
            rule.refuse(call, message)


def refuse_starred(rule: Rule, fn: cst.FunctionDef, link: TrainOpLink | None) -> None:
    """A call of a link that passes `**kwargs`: the flag may be among them or clash with
    them, so it is not added."""
    if link is None:
        return
    for call in iter_calls(fn):
        flag = link.passes.get(node_code(call.func))
        if flag is not None and any(a.star == "**" for a in call.args) and not _passes(call, flag):
            rule.refuse(
                call,
                f"`{node_code(call.func)}` builds the train op and wraps its optimizer in "
                f"CrossShardOptimizer when its `{flag}` is true, and this call passes `**` "
                f"arguments: pass `{flag}=params['use_tpu']` (or the flag of the function "
                "around it) by hand, or on TPU each core applies its own gradients",
            )


def _passes(call: cst.Call, flag: str) -> bool:
    return any(a.keyword is not None and a.keyword.value == flag for a in call.args)


def flag_calls(fn: cst.FunctionDef, link: TrainOpLink | None) -> list[cst.Call]:
    """The def's calls of links of its chain that do not pass their flag yet."""
    if link is None or not link.passes:
        return []
    return [
        call
        for call in iter_calls(fn)
        if (flag := link.passes.get(node_code(call.func))) is not None and _flaggable(call, flag)
    ]


def pass_flags(
    statements: list[cst.BaseStatement], link: TrainOpLink, value: cst.BaseExpression
) -> list[cst.BaseStatement]:
    """The statements with `flag=<value>` added to their calls of the chain's links."""

    class Pass(cst.CSTTransformer):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
            # (also in a lambda: it reads the flag, or params, of the def around it)
            flag = link.passes.get(node_code(original_node.func))
            if flag is None or not _flaggable(updated_node, flag):
                return updated_node
            return updated_node.with_changes(args=_with_keyword(updated_node.args, flag, value))

    block = cst.IndentedBlock(body=statements).visit(Pass())
    assert isinstance(block, cst.IndentedBlock)
    return list(block.body)


def refuse_unfollowed(rule: Rule, model_fn: cst.FunctionDef, link: TrainOpLink | None) -> None:
    """A model_fn that trains with no optimizer call of its own and whose EstimatorSpec's
    train_op comes from a call the index does not follow (an installed package's function,
    a method of an object it is given), directly or through a name bound once: that call
    builds the train op where the rule cannot see. A call that passes anything named
    `use_tpu` is taken to handle TPU."""
    locals_ = assigned_names(model_fn)
    followed = link.resolved if link is not None else set()
    sources: list[cst.Call] = []
    for call in iter_calls(model_fn):
        func = call.func
        name = dotted(func) or ""
        if (
            isinstance(func, cst.Attribute) and func.attr.value in OPTIMIZER_METHODS
        ) or name.rpartition(".")[2] in BUILDERS:
            return  # it trains itself
        if not api_name(rule.tf_name(func)).endswith("EstimatorSpec"):
            continue
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value != "train_op":
                continue
            value = arg.value
            if isinstance(value, cst.Name) and len(locals_.get(value.value, ())) == 1:
                value = locals_[value.value][0] or value
            if isinstance(value, cst.Call):
                sources.append(value)
    for source in sources:
        code = node_code(source.func)
        if (
            rule.tf_name(source.func) is not None
            or code in followed
            or (link is not None and code in link.unfollowed)  # its own finding says it
            or _mentions_use_tpu(source)
            or _local_lambda(source.func, locals_)  # its calls are the model_fn's own
        ):
            continue
        called = dotted(source.func)
        where = (
            "imported, which est2tpu does not follow"
            if called is not None and called.split(".")[0] in rule.state.imports.bindings
            else "which est2tpu does not follow"
        )
        rule.refuse(
            source,
            f"the train op comes from `{code}`, {where}: if it builds a TF1 optimizer, wrap "
            "that in tf.compat.v1.tpu.CrossShardOptimizer when params['use_tpu'] is true (pass "
            "params['use_tpu'] to it), or on TPU each core applies its own gradients",
        )


def _local_lambda(
    func: cst.BaseExpression, locals_: dict[str, list[cst.BaseExpression | None]]
) -> bool:
    values = locals_.get(func.value, []) if isinstance(func, cst.Name) else []
    return len(values) == 1 and isinstance(values[0], cst.Lambda)


def _mentions_use_tpu(call: cst.Call) -> bool:
    for node in iter_calls(call, into_defs=True):
        for arg in node.args:
            if "use_tpu" in cst.Module([]).code_for_node(arg.value) or (
                arg.keyword is not None and "use_tpu" in arg.keyword.value
            ):
                return True
    return False


def add_flag_param(fn: cst.FunctionDef, flag: str) -> cst.FunctionDef:
    """`def f(loss)` -> `def f(loss, *, flag=False)`: no existing call changes meaning."""
    params = fn.params
    new = cst.Param(
        name=cst.Name(flag),
        default=cst.Name("False"),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )
    kwonly = list(params.kwonly_params)
    if kwonly and not isinstance(kwonly[-1].comma, cst.Comma):
        kwonly[-1] = kwonly[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    star = params.star_arg
    if isinstance(star, cst.MaybeSentinel):
        star = cst.ParamStar()
    changes: dict[str, object] = {"kwonly_params": [*kwonly, new], "star_arg": star}
    positional = list(params.params)
    if positional and not isinstance(positional[-1].comma, cst.Comma) and not params.kwonly_params:
        positional[-1] = positional[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        changes["params"] = positional
    return fn.with_changes(params=params.with_changes(**changes))


def _flaggable(call: cst.Call, flag: str) -> bool:
    return not any(
        (a.keyword is not None and a.keyword.value == flag) or a.star == "**" for a in call.args
    )


def _with_keyword(args: Sequence[cst.Arg], flag: str, value: cst.BaseExpression) -> list[cst.Arg]:
    out = list(args)
    new = cst.Arg(
        value=value,
        keyword=cst.Name(flag),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )
    if out:
        last = out[-1]
        if isinstance(last.comma, cst.Comma):
            return [*out, new.with_changes(comma=last.comma)]
        out[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return [*out, new]
