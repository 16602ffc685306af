"""TPU007: `tf.estimator.Estimator(...)` -> `tf.compat.v1.estimator.tpu.TPUEstimator(...)`."""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from est2tpu.cstpatch import RuleContext
from est2tpu.cstutil import (
    add_param,
    assigned_names,
    ending_as,
    explode,
    has_param,
    is_multiline,
    kwarg,
    literal_text,
    passes_params_on,
    splats_params,
    too_long,
    with_kwarg,
)
from est2tpu.index import Mode, node_code, resolved_batch_sizes, scopes_in
from est2tpu.rule import FileState, Rule

# Positional parameters of Estimator; TPUEstimator shares the first four.
ESTIMATOR_POSITIONAL = ("model_fn", "model_dir", "config", "params", "warm_start_from")
# The keys TPUEstimator adds to the params it gives a model_fn (tpu_estimator.py,
# _ModelFnWrapper._call_model_fn): 'batch_size' when it trains, evaluates and predicts,
# 'use_tpu' always, 'context' on TPU.
_ADDED_KEYS = ("batch_size", "use_tpu", "context")
_UNKNOWN = "Estimator left as it is: it was not seen when the project was indexed"


class TpuEstimator(Rule):
    KEYED = True

    @classmethod
    def applies(cls, state: FileState) -> bool:
        return (
            any(key[0] == state.path for key in state.index.ctors)
            or any(key[0] == state.path for key in state.index.model_fn_wrappers)
            or any(fn[0] == state.path for fn in state.index.model_fn_wrappers.values())
            or any(path == state.path for path, _ in state.index.model_fns)
        )

    def __init__(self, context: RuleContext, state: FileState) -> None:
        super().__init__(context, state)
        self._defs: list[cst.FunctionDef | cst.ClassDef] = []  # the nodes of self.scope
        # the scopes of this file that hold a model_fn wrapper lambda: a lambda's code (its
        # key there) is generated only in those
        self._wrapper_scopes = scopes_in(state.index.model_fn_wrappers, state.path)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._defs.append(node)
        return True

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._defs.append(node)
        return True

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        self._defs.pop()
        return updated_node

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        if self.here not in self._wrapper_scopes:
            return updated_node
        key = (self.state.path, self.here, node_code(original_node))
        if key not in self.state.index.model_fn_wrappers or has_param(updated_node, "params"):
            return updated_node
        self.record(original_node, "the model_fn wrapper passes TPUEstimator's params on")
        return updated_node.with_changes(
            params=_with_lambda_param(updated_node.params), body=_forward(updated_node.body)
        )

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self._defs.pop()
        wrappers = self.state.index.model_fn_wrappers
        if (self.state.path, self.here) in wrappers.values() and not has_param(
            updated_node, "params"
        ):
            # what its wrapper passes on (by keyword: after the parameters it has)
            updated_node = add_param(updated_node, "params")
        if (self.state.path, self.here, "") not in wrappers or has_param(updated_node, "params"):
            return updated_node

        updated = updated_node

        class Forward(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is updated

            def leave_Return(self, o: cst.Return, u: cst.Return) -> cst.Return:
                return u.with_changes(value=_forward(u.value)) if u.value is not None else u

        self.record(original_node, "the model_fn wrapper passes TPUEstimator's params on")
        forwarded = updated_node.visit(Forward())
        assert isinstance(forwarded, cst.FunctionDef)
        return add_param(forwarded, "params")

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if passes_params_on(original_node):
            return self._params_splat(original_node, updated_node)
        if self.tf_name(original_node.func) != "estimator.Estimator":
            return updated_node
        key = self.key_of(original_node)
        plan = self.state.index.ctors.get(key) if key is not None else None
        if plan is None or not plan.convert:
            self.refuse(original_node, plan.refusal if plan and plan.refusal else _UNKNOWN)
            return updated_node
        problems = list(dict.fromkeys(plan.problems))
        sizes = resolved_batch_sizes(plan, problems)
        params_arg = kwarg(original_node, "params") or _positional(original_node, 3)
        user_batch: cst.DictElement | None = None
        if params_arg is not None and isinstance(params_arg.value, cst.Dict):
            user_batch = next(
                (
                    el
                    for el in params_arg.value.elements
                    if isinstance(el, cst.DictElement)
                    and isinstance(el.key, cst.SimpleString)
                    and literal_text(el.key) == "batch_size"
                ),
                None,
            )
        for problem in problems:
            self.refuse(original_node, problem)
        call = _keyword_positionals(updated_node)
        if plan.params_copy is not None:
            call = _with_params(
                call,
                cst.parse_expression(
                    f"{{key: value for key, value in {plan.params_copy}.items() "
                    'if key != "batch_size"}'
                ),
            )
        if plan.params_batch is not None:
            # The key leaves the dict the name holds (leave_Assign), or the copy the
            # TPUEstimator gets: its value, as for a literal below.
            for mode in Mode:
                sizes.setdefault(mode, plan.params_batch)
        if user_batch is not None:
            # The input functions already read params["batch_size"]: TPUEstimator fills it
            # from the constructor's batch sizes (the same value on CPU, per-shard on TPU).
            call = _without_params_key(call, user_batch)
            for mode in Mode:
                sizes.setdefault(mode, node_code(user_batch.value))
        # A dict bound to a name has lost its key already (params_batch / params_copy).
        held = (
            None
            if plan.params_copy is not None or plan.params_batch is not None
            else _batch_size_held_by(params_arg, sizes.values())
        )
        if held is not None and params_arg is not None:
            # `Estimator(params=hparams)` and `hparams["batch_size"]` as the batch size:
            # TPUEstimator refuses params holding its reserved key, and fills it itself.
            wrapped = cst.Call(
                self.runtime("params_without_batch_size"), [cst.Arg(params_arg.value)]
            )
            call = call.with_changes(
                args=[
                    a.with_changes(value=wrapped) if a.value.deep_equals(params_arg.value) else a
                    for a in call.args
                ]
            )
            if plan.model_fn_reads_batch_size:
                self.refuse(
                    original_node,
                    "the model_fn reads params['batch_size'], which TPUEstimator fills when it "
                    "trains, evaluates and predicts, not when it exports: hand the model_fn "
                    "the batch size another way for export by hand",
                )
            if held == "attribute":
                self.refuse(
                    original_node,
                    f"the batch size `{node_code(params_arg.value)}.batch_size` is an attribute "
                    "of this Estimator's params, and TPUEstimator gives the input functions "
                    "those params with its own batch size: where they are an HParams, read "
                    "`params.batch_size` in the input functions (est2tpu wrote "
                    "params['batch_size']) by hand",
                )
        unread = (
            node_code(params_arg.value)
            if params_arg is not None and plan.params_keys is None and plan.params_copy is None
            else None
        )
        for mode in sorted(plan.unsized_modes - set(sizes), key=list(Mode).index):
            if unread is not None:
                # The params the Estimator hands the input function (itself, or a helper it
                # passes them to) are its own: they hold the size, unseen here.
                self.refuse(
                    original_node,
                    f"the {mode.value} input function batches by params['batch_size'] of the "
                    "params the Estimator hands it (itself, or a helper it passes them to), "
                    f"so the Estimator's params `{unread}`, which est2tpu cannot read here, "
                    "hold 'batch_size' (unless that input function was migrated before), a "
                    "key TPUEstimator reserves (it raises ValueError when it is built); pass "
                    f"params=tpu_runtime.params_without_batch_size({unread}) and "
                    f"{mode.value}_batch_size=<that batch size> to the TPUEstimator by hand",
                )
                continue
            self.refuse(
                original_node,
                f"the {mode.value} input function reads params['batch_size'] already (migrated "
                f"before?), and its batch size is no longer in the code; pass "
                f"{mode.value}_batch_size=<its batch size> to the TPUEstimator by hand",
            )
        config = kwarg(call, "config") or _positional(call, 2)
        if config is None:
            call = with_kwarg(call, "config", cst.Call(self.runtime("run_config")))
        elif not plan.config_is_run_config:
            call = call.with_changes(
                args=[
                    a.with_changes(
                        value=cst.Call(self.runtime("ensure_tpu_run_config"), [cst.Arg(a.value)])
                    )
                    if a is config
                    else a
                    for a in call.args
                ]
            )
        call = with_kwarg(call, "use_tpu", cst.Call(self.runtime("use_tpu")))
        for mode, code in sizes.items():
            call = with_kwarg(call, f"{mode.value}_batch_size", cst.parse_expression(code))
        call = call.with_changes(func=self.tf("compat.v1.estimator.tpu.TPUEstimator"))
        if not is_multiline(original_node) and too_long(call):
            call = explode(call, self.call_depth())
        self.record(original_node, "Estimator -> TPUEstimator")
        return call

    def _params_splat(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        """`helper(features, **params)` in a model_fn: TPUEstimator's params hold its own
        keys too ('batch_size', 'use_tpu', and 'context' on TPU), which the callee would get
        as unexpected keyword arguments (TypeError). They are filtered out where the
        program's own params provably lack them (a dict literal, or none)."""
        model_fn = self._enclosing_model_fn()
        if model_fn is None:
            return updated_node
        plans = [
            plan
            for plan in self.state.index.ctors.values()
            if plan.convert and plan.model_fn == (self.state.path, ".".join(model_fn[0]))
        ]
        if not plans:
            return updated_node
        keys = [plan.params_keys for plan in plans]
        call = node_code(original_node.func)
        condition = f"key not in {_ADDED_KEYS!r}".replace("'", '"')
        manual = (
            f"pass `**{{key: value for key, value in params.items() if {condition}}}` (less "
            "the keys the Estimator's own params hold) by hand"
        )
        if model_fn[1]:
            self.refuse(
                original_node,
                f"`{call}(..., **params)` passes on params, which the model_fn binds again, "
                "and TPUEstimator's params hold its own keys too ('batch_size', 'use_tpu', "
                f"'context' on TPU), which `{call}` would get as arguments; {manual}",
            )
            return updated_node
        known = [k for k in keys if k is not None]
        # A program's own 'batch_size' passed on this way makes TPU007 refuse the Estimator
        # (export calls the model_fn without it), so only 'use_tpu' can be the program's.
        overwritten = sorted(set().union(*known) & set(_ADDED_KEYS))
        if len(known) < len(keys) or overwritten:
            why = (
                f"the Estimator's own params hold {', '.join(map(repr, overwritten))}, which "
                "TPUEstimator overwrites"
                if overwritten
                else "est2tpu cannot tell which keys the Estimator's own params hold"
            )
            self.refuse(
                original_node,
                f"`{call}(..., **params)` passes on TPUEstimator's params, which hold its own "
                f"keys too ('batch_size', 'use_tpu', 'context' on TPU), and {why}; {manual}",
            )
            return updated_node
        filtered = cst.parse_expression(
            f"{{key: value for key, value in params.items() if {condition}}}"
        )
        call_node = updated_node.with_changes(
            args=[
                a.with_changes(value=filtered) if splats_params(a) else a for a in updated_node.args
            ]
        )
        if not is_multiline(original_node) and too_long(call_node):
            call_node = explode(call_node, self.call_depth())
        self.record(original_node, "**params passes on the program's keys, not TPUEstimator's")
        return call_node

    def _enclosing_model_fn(self) -> tuple[list[str], bool] | None:
        """The scope of the model_fn whose `params` a splat here reads, and whether that
        model_fn binds `params` again; None outside a model_fn, or when a def nested in it
        binds a `params` of its own."""
        model_fns = self.state.index.model_fns
        for depth in range(len(self.scope), 0, -1):
            scope = self.scope[:depth]
            if (self.state.path, ".".join(scope)) not in model_fns:
                continue
            inner = self._defs[depth - 1 :]
            defs = [fn for fn in inner if isinstance(fn, cst.FunctionDef)]
            if len(defs) < len(inner) or any("params" in assigned_names(fn) for fn in defs[1:]):
                return None  # a class between them, or a `params` of a nested def's own
            return scope, len(assigned_names(defs[0]).get("params", [])) > 1
        return None

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        """`params = {"batch_size": ..., ...}` for a TPUEstimator built with `params=params`:
        TPUEstimator refuses the reserved key, and fills it itself from its batch sizes."""
        target = original_node.targets[0].target if len(original_node.targets) == 1 else None
        if not isinstance(target, cst.Name) or not isinstance(updated_node.value, cst.Dict):
            return updated_node
        if not any(
            key[0] == self.state.path
            and plan.convert
            and plan.params_binding == (self.here, target.value)
            for key, plan in self.state.index.ctors.items()
        ):
            return updated_node
        value = updated_node.value
        kept = [
            el
            for el in value.elements
            if not (
                isinstance(el, cst.DictElement)
                and isinstance(el.key, cst.SimpleString)
                and literal_text(el.key) == "batch_size"
            )
        ]
        if len(kept) == len(value.elements):
            return updated_node
        kept = ending_as(kept, value.elements)
        self.record(original_node, "reserved params key 'batch_size' -> TPUEstimator batch sizes")
        return updated_node.with_changes(value=value.with_changes(elements=kept))


def _batch_size_held_by(params: cst.Arg | None, sizes: Iterable[str]) -> str | None:
    """How a batch size reads `batch_size` of the very name passed as params: "subscript"
    (`hparams["batch_size"]`), "attribute" (`hparams.batch_size`), or None."""
    if params is None or not isinstance(params.value, cst.Name):
        return None
    name = params.value.value
    for code in sizes:
        expr = cst.parse_expression(code)
        if (
            isinstance(expr, cst.Attribute)
            and expr.attr.value == "batch_size"
            and isinstance(expr.value, cst.Name)
            and expr.value.value == name
        ):
            return "attribute"
        if (
            isinstance(expr, cst.Subscript)
            and isinstance(expr.value, cst.Name)
            and expr.value.value == name
            and len(expr.slice) == 1
            and isinstance(expr.slice[0].slice, cst.Index)
            and isinstance(expr.slice[0].slice.value, cst.SimpleString)
            and literal_text(expr.slice[0].slice.value) == "batch_size"
        ):
            return "subscript"
    return None


def _positional(call: cst.Call, index: int) -> cst.Arg | None:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index] if len(positional) > index else None


def _keyword_positionals(call: cst.Call) -> cst.Call:
    """Estimator's 5th positional (warm_start_from) is TPUEstimator's use_tpu: use keywords."""
    args = []
    position = 0
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            if position >= 4:
                arg = arg.with_changes(
                    keyword=cst.Name(ESTIMATOR_POSITIONAL[position]),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                )
            position += 1
        args.append(arg)
    return call.with_changes(args=args)


def _with_params(call: cst.Call, value: cst.BaseExpression) -> cst.Call:
    params = kwarg(call, "params") or _positional(call, 3)
    return call.with_changes(
        args=[a.with_changes(value=value) if a is params else a for a in call.args]
    )


def _without_params_key(call: cst.Call, element: cst.DictElement) -> cst.Call:
    def strip(arg: cst.Arg) -> cst.Arg:
        if not isinstance(arg.value, cst.Dict):
            return arg
        elements = arg.value.elements
        kept = ending_as([e for e in elements if not e.deep_equals(element)], elements)
        return arg.with_changes(value=arg.value.with_changes(elements=kept))

    params = kwarg(call, "params") or _positional(call, 3)
    return call.with_changes(args=[strip(a) if a is params else a for a in call.args])


def _forward(body: cst.BaseExpression | None) -> cst.BaseExpression:
    """The model_fn call a wrapper makes, passing `params=params` on."""
    assert isinstance(body, cst.Call)
    return with_kwarg(body, "params", cst.Name("params"))


def _with_lambda_param(params: cst.Parameters) -> cst.Parameters:
    """`lambda features, labels, mode` -> `lambda features, labels, mode, params`."""
    listed = list(params.params)
    new = cst.Param(cst.Name("params"))
    if listed:
        listed[-1] = listed[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    return params.with_changes(params=[*listed, new])
