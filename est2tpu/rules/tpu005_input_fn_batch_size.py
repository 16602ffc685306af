"""TPU005: input functions take `params` and batch by params["batch_size"], statically."""

from __future__ import annotations

import libcst as cst

from est2tpu.batching import (
    batch_calls,
    batch_size_arg,
    get_next_of_one_shot,
    is_params_batch_size,
    params_batch_size_or,
)
from est2tpu.cstutil import (
    add_param,
    has_param,
    iter_calls,
    kwarg,
    params_subscript,
    rewritten,
    with_kwarg,
)
from est2tpu.index import InputFnPlan, Mode, UseSite, node_code, scopes_in
from est2tpu.rule import FileState, Rule
from est2tpu.rules._one_shot_tails import (
    iterator_method,
    iterator_tail,
    lambda_with_params,
    map_tail,
    map_unpacked,
    one_shot_return,
    repeats,
    unpacked_one_shot,
)
from est2tpu.tfapi import RUN_METHODS, SHIM, SPEC_CTORS


class InputFnBatchSize(Rule):
    KEYED = True  # TrainSpec/EvalSpec sites are keyed by order

    @classmethod
    def applies(cls, state: FileState) -> bool:
        return (
            cls.file_has_input_fn(state)
            or any(
                path == state.path
                for path, _, _ in (*state.index.direct_calls, *state.index.bound_lambdas)
            )
            or any(path == state.path for path, _ in state.index.batch_helpers)
        )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.defs: list[cst.FunctionDef] = []  # enclosing defs, innermost last
        self._lambda_bodies: set[int] = set()  # id() of the calls lambdas return
        # the scopes of this file that hold a lambda or a direct call the index planned: a
        # node's code (its key there) is generated only in those
        index, path = self.state.index, self.state.path
        self._lambda_scopes = scopes_in(index.bound_lambdas, path)
        self._direct_scopes = scopes_in(index.direct_calls, path)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.defs.append(node)

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        try:
            return self._input_fn(original_node, updated_node)
        finally:
            self.defs.pop()

    def _input_fn(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        plan = self.input_fn_plan()
        if plan is None:
            return self._batch_helper(original_node, updated_node)
        for problem in dict.fromkeys(plan.problems):
            self.refuse(original_node, problem)
        fn = updated_node
        if plan.needs_params and not has_param(fn, "params"):
            fn = add_param(fn, "params")
            self.record(original_node, "input function takes params")
        if plan.helper_call is not None:
            return self._helper_call(original_node, fn, plan)
        calls = batch_calls(original_node)
        if len(calls) != 1:
            return fn
        if plan.feeds_tpu:
            fn = self._return_dataset(original_node, fn)
        target = calls[0]
        drop: cst.BaseExpression | None = None
        if plan.committed and plan.modes and Mode.PREDICT not in plan.modes:
            drop = self._on_tpu(fn)
        elif plan.committed and Mode.PREDICT in plan.modes and plan.modes - {Mode.PREDICT}:
            if plan.direct and not any(has_param(f, "mode") for f in self.defs):
                # The Estimator passes `mode` to an input function that asks for it.
                fn = add_param(fn, "mode")
                self.record(original_node, "input function takes mode")
            if any(has_param(f, "mode") for f in [*self.defs[:-1], fn]):
                # The Estimator mode is in scope: static batches for train/eval, while
                # predict keeps its last partial batch (TPUEstimator pads it).
                drop = cst.BooleanOperation(
                    self._on_tpu(fn),
                    cst.And(),
                    cst.Comparison(
                        cst.Name("mode"),
                        [
                            cst.ComparisonTarget(
                                cst.NotEqual(), self.tf("estimator.ModeKeys.PREDICT")
                            )
                        ],
                    ),
                )
            else:
                self.refuse(
                    target,
                    "this input function feeds predict and train/eval: predict keeps the "
                    "last partial batch, train/eval on TPU need drop_remainder=True; give "
                    "it a `mode` argument or split it",
                )
        to_params = plan.batch_to_params
        if (
            Mode.TRAIN in plan.modes
            and plan.committed
            and not plan.helper_repeats
            and not repeats(original_node)
        ):
            self.refuse(
                original_node,
                "the training input does not .repeat(); on TPU the infeed must not run dry "
                "before `steps`: repeat the dataset (and bound training by steps)",
            )
        rule, fed = self, plan

        class Batch(cst.CSTTransformer):
            def leave_Call(self, o: cst.Call, u: cst.Call) -> cst.Call:
                if not o.deep_equals(target):
                    return u
                arg = batch_size_arg(u)
                if to_params and arg is not None and not is_params_batch_size(arg.value):
                    u = u.with_changes(
                        args=[
                            a.with_changes(value=rule._params_batch(fed, a.value))
                            if a is arg
                            else a
                            for a in u.args
                        ]
                    )
                    rule.record(o, "batch size read from params['batch_size']")
                if drop is not None and kwarg(u, "drop_remainder") is None:
                    u = with_kwarg(u, "drop_remainder", drop)
                    rule.record(o, "static batch shape on TPU (drop_remainder)")
                return u

        return rewritten(fn, Batch())

    # Helpers: input functions that batch in a project helper they return.
    def _helper_call(
        self, original_node: cst.FunctionDef, fn: cst.FunctionDef, plan: InputFnPlan
    ) -> cst.FunctionDef:
        """`return make_batches(files, 64)` -> `return make_batches(files,
        params["batch_size"])`: the helper batches by what TPUEstimator passes (64 moved to
        its batch size; the helper gets static batches on TPU, see `_batch_helper`)."""
        if Mode.TRAIN in plan.modes and plan.committed and not plan.helper_repeats:
            self.refuse(
                original_node,
                "the training input does not .repeat(); on TPU the infeed must not run dry "
                "before `steps`: repeat the dataset (and bound training by steps)",
            )
        code, index = plan.helper_call, plan.helper_arg
        assert code is not None
        if plan.helper_unpacked is not None:
            fn = map_unpacked(fn, code, plan.helper_unpacked)
            self.record(original_node, "input function maps what it returned over the dataset")
        if plan.helper_param is None:
            return fn  # the batch size reaches the helper as it is (a lambda passes it)
        if index is None and plan.other_consumers:
            self.refuse(
                original_node,
                "this input function also feeds "
                f"{', '.join(plan.other_consumers)}, which est2tpu leaves as it is and which "
                "passes no params['batch_size']; its helper's own batch size is not in "
                "scope here: pass params.get('batch_size', <that size>) to the helper by hand",
            )
            return fn
        param: str = plan.helper_param
        rule = self

        class PassBatchSize(cst.CSTTransformer):
            def leave_Call(self, o: cst.Call, u: cst.Call) -> cst.Call:
                if node_code(o) != code:
                    return u
                if index is None:
                    if kwarg(u, param) is not None:
                        return u
                    rule.record(o, "the helper batches by params['batch_size']")
                    return with_kwarg(u, param, params_subscript())
                if is_params_batch_size(u.args[index].value):
                    return u
                rule.record(o, "the helper batches by params['batch_size']")
                return u.with_changes(
                    args=[
                        a.with_changes(value=rule._params_batch(plan, a.value)) if i == index else a
                        for i, a in enumerate(u.args)
                    ]
                )

        return rewritten(fn, PassBatchSize())

    @staticmethod
    def _params_batch(plan: InputFnPlan, own: cst.BaseExpression) -> cst.BaseExpression:
        """What a rewritten batch reads: params["batch_size"], or its own size `own` where
        code est2tpu leaves as it is (no batch_size in its params) calls it too."""
        return params_batch_size_or(own) if plan.other_consumers else params_subscript()

    def _batch_helper(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        """A project function that makes input functions' batches: the one that batches gets
        static batches on TPU (it has no TPUEstimator params of its own: the runtime says
        whether one runs on a TPU), and batches by a new `batch_size` parameter where it
        batched by a module constant (the constant is its default); the one they return
        returns its dataset."""
        helper = self.state.index.batch_helpers.get((self.state.path, self.here))
        if helper is None:
            return updated_node
        fn = updated_node
        if helper.return_dataset:
            unpacked = unpacked_one_shot(self, fn)
            if unpacked is not None:
                self.record(original_node, "helper returns its dataset, not iterator tensors")
                fn = unpacked
            else:
                fn = self._return_dataset(original_node, fn)
        code = helper.batch
        if code is None:
            return fn
        if Mode.PREDICT in helper.modes and len(helper.modes) > 1:
            target = next((c for c in iter_calls(original_node) if node_code(c) == code), None)
            self.refuse(
                target or original_node,
                "this helper makes the batches of input functions for predict and for "
                "train/eval: predict keeps the last partial batch, train/eval on TPU need "
                "drop_remainder=True; give it the mode, or split it, by hand",
            )
            return fn
        drop = None if Mode.PREDICT in helper.modes else cst.Call(self.runtime("use_tpu"))
        new_param = helper.new_param
        rule = self

        class Static(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn

            def leave_Call(self, o: cst.Call, u: cst.Call) -> cst.Call:
                if node_code(o) != code:
                    return u
                if new_param is not None:
                    size = kwarg(u, "batch_size") or u.args[1]
                    u = u.with_changes(
                        args=[
                            a.with_changes(value=cst.Name(new_param[0])) if a is size else a
                            for a in u.args
                        ]
                    )
                    rule.record(o, "the helper batches by a batch_size parameter of its own")
                if drop is not None and kwarg(u, "drop_remainder") is None:
                    rule.record(o, "static batch shape on TPU (drop_remainder)")
                    u = with_kwarg(u, "drop_remainder", drop)
                return u

        result = rewritten(fn, Static())
        if new_param is not None and not has_param(result, new_param[0]):
            params = result.params
            last = params.params[-1] if params.params else None
            new = cst.Param(
                cst.Name(new_param[0]),
                default=cst.Name(new_param[1]),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            )
            listed = list(params.params)
            if last is not None and not isinstance(last.comma, cst.Comma):
                listed[-1] = last.with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                )
            elif last is not None:
                new = new.with_changes(comma=last.comma)
            result = result.with_changes(params=params.with_changes(params=[*listed, new]))
        return result

    def _return_dataset(
        self, original_node: cst.FunctionDef, fn: cst.FunctionDef
    ) -> cst.FunctionDef:
        """A batched input function that returns `iterator.get_next()` of a one-shot iterator
        over its dataset returns the dataset itself.

        est2tpu's TPU RunConfig feeds the TPU PER_HOST_V2, which needs a tf.data.Dataset;
        on CPU the Estimator makes the iterator over that dataset itself and sees the same
        batches in the same order (a 20-step CPU run of both forms trains to equal weights).
        """
        made = [c for c in iter_calls(original_node) if iterator_method(self, c) is not None]
        if not made:
            return fn
        # name the iterator's making, not the get_next() that wraps it
        made.sort(key=lambda c: not (iterator_method(self, c) or "").startswith("make_"))
        found = one_shot_return(self, original_node)
        if found is None:
            tail = iterator_tail(self, original_node)
            if tail is not None and len(fn.body.body) == len(original_node.body.body):
                self.record(
                    original_node, "input function returns its dataset, not iterator tensors"
                )
                return map_tail(self, fn, tail)
            self.refuse(
                made[0],
                f"the input function returns tensors from an iterator "
                f"(`{iterator_method(self, made[0])}(...)`, not a one-shot iterator's "
                "`get_next()` whose value the rest of the function only restructures with "
                "TensorFlow ops): TPUEstimator's PER_HOST_V2 input (est2tpu's TPU RunConfig) "
                "needs the tf.data.Dataset itself on TPU; return the batched dataset by hand",
            )
            return fn
        ret, dataset, assign = found

        class ReturnDataset(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is fn

            def leave_Return(self, o: cst.Return, u: cst.Return) -> cst.Return:
                return u.with_changes(value=dataset) if o.deep_equals(ret) else u

            def leave_SimpleStatementLine(
                self, o: cst.SimpleStatementLine, u: cst.SimpleStatementLine
            ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
                if assign is None:
                    return u
                if o.deep_equals(assign):
                    return cst.RemoveFromParent()
                if len(o.body) == 1 and o.body[0].deep_equals(ret):
                    # the blank lines and comments above the iterator stay above the return
                    return u.with_changes(leading_lines=[*assign.leading_lines, *u.leading_lines])
                return u

        self.record(original_node, "input function returns its dataset, not iterator tensors")
        result = fn.visit(ReturnDataset())
        assert isinstance(result, cst.FunctionDef)
        return result

    def _on_tpu(self, fn: cst.FunctionDef) -> cst.BaseExpression:
        """True exactly when TPUEstimator runs this input function for a TPU.

        On TPU (and only there: not with use_tpu=False, nor for evaluation with
        eval_on_tpu=False) TPUEstimator adds its TPUContext to the params it passes,
        under the reserved key "context"; CPU batches then keep every example.  A helper
        without `params` in scope asks the runtime whether the TPUEstimator uses a TPU.
        """
        if any(has_param(f, "params") for f in [*self.defs[:-1], fn]):
            return cst.Comparison(
                cst.SimpleString('"context"'), [cst.ComparisonTarget(cst.In(), cst.Name("params"))]
            )
        return cst.Call(self.runtime("use_tpu"))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.state.index.direct_calls:
            updated_node = self._direct_call(original_node, updated_node)
        name = self.tf_name(original_node.func)
        method = (
            original_node.func.attr.value if isinstance(original_node.func, cst.Attribute) else None
        )
        if name not in SPEC_CTORS and method not in RUN_METHODS:
            return updated_node
        sites = self.state.index.use_sites
        key = self.key_of(original_node)  # a spec's (see call_kind)
        keyed = sites.get(key) if key is not None else None
        # a run method, or the spec a project function returns to its callers, by its text
        by_text = sites.get((self.state.path, self.here, node_code(original_node)))
        site = keyed.joined(by_text) if keyed and by_text else keyed or by_text
        if site is None:
            return updated_node
        for problem in dict.fromkeys(site.problems):
            self.refuse(original_node, problem)
        # `tpu_runtime.evaluate(estimator, input_fn, ...)`, a first run's: its steps are counted
        shim = (self.state.imports.qualify(original_node.func) or "").startswith(SHIM)
        if shim:
            return updated_node
        if method == "evaluate" and site.tpu and kwarg(original_node, "steps") is None:
            positional = [a for a in original_node.args if a.keyword is None]
            # under --no-runtime there is no tpu_runtime.evaluate: the finding stays
            if len(positional) < 2 and not site.problems and self.state.use_runtime:
                # On TPU the runtime counts the steps: a numpy/pandas input knows its
                # length, and so do the arrays a from_tensor_slices input reads once; of
                # any other input it counts the whole batches once (tf.data cardinality
                # says when it repeats without end). Elsewhere it evaluates to the end of
                # the input, as before.
                updated_node = self._lambda_takes_params(original_node, updated_node, site)
                assert isinstance(updated_node.func, cst.Attribute)
                self.record(original_node, "evaluate() steps counted from the input on TPU")
                call = updated_node.with_changes(
                    func=self.runtime("evaluate"),
                    args=[cst.Arg(updated_node.func.value), *updated_node.args],
                )
                if site.examples_code is not None:
                    call = with_kwarg(call, "examples", cst.parse_expression(site.examples_code))
                return call
            if len(positional) < 2:
                self.refuse(
                    original_node,
                    "evaluate() without steps: TPU evaluation cannot stop at the end of the "
                    "input; pass steps=<eval examples // eval_batch_size>",
                )
        if name == "estimator.EvalSpec" and site.tpu:
            steps = kwarg(original_node, "steps")
            if (
                steps is not None
                and isinstance(steps.value, cst.Name)
                and steps.value.value == "None"
            ):
                return self._eval_spec_to_the_end(original_node, updated_node, site)
        return self._lambda_takes_params(original_node, updated_node, site)

    def _lambda_takes_params(
        self, original_node: cst.Call, updated_node: cst.Call, site: UseSite
    ) -> cst.Call:
        """The call with its input_fn lambda taking `params` (where the site needs it)."""
        if not site.lambda_params:
            return updated_node
        arg = kwarg(updated_node, "input_fn") or next(
            (a for a in updated_node.args if a.keyword is None), None
        )
        if arg is None or not isinstance(arg.value, cst.Lambda):
            return updated_node
        lam = arg.value
        if has_param(lam, "params"):
            return updated_node
        self.record(original_node, "input_fn lambda takes params")
        new_lam = lambda_with_params(self._lambda_dataset(lam), site)
        return updated_node.with_changes(
            args=[a.with_changes(value=new_lam) if a is arg else a for a in updated_node.args]
        )

    def _eval_spec_to_the_end(
        self, original_node: cst.Call, updated_node: cst.Call, site: UseSite
    ) -> cst.Call:
        """`EvalSpec(input_fn, steps=None)` evaluates to the end of the input.

        tpu_runtime.train_and_evaluate (TPU012) keeps that on CPU/GPU and on a TPU, which
        cannot see the end, evaluates the whole batches of an input whose length it knows:
        the shim's numpy/pandas input functions carry it; an input function that reads
        module-level arrays once is marked with them by `tpu_runtime.sized_input_fn`; of
        any other, the runtime counts the whole batches once.
        """
        arg = kwarg(updated_node, "input_fn") or next(
            (a for a in updated_node.args if a.keyword is None), None
        )
        if arg is not None and self._sized_call(arg.value):
            return updated_node  # marked by a run before
        if site.problems or not self.state.use_runtime or arg is None:
            pass
        elif site.examples_code is not None and isinstance(arg.value, cst.Name):
            self.record(original_node, "EvalSpec(steps=None) counts its input's steps on TPU")
            marked = with_kwarg(
                cst.Call(self.runtime("sized_input_fn"), [cst.Arg(arg.value)]),
                "examples",
                cst.parse_expression(site.examples_code),
            )
            return updated_node.with_changes(
                args=[a.with_changes(value=marked) if a is arg else a for a in updated_node.args]
            )
        else:
            # the shim's numpy/pandas input knows its length; of any other input,
            # tpu_runtime.train_and_evaluate counts the whole batches on TPU
            # (est2tpu.runtime.inputs.whole_batches)
            self.record(original_node, "EvalSpec(steps=None) counts its input's steps on TPU")
            return updated_node
        self.refuse(
            original_node,
            "EvalSpec(steps=None): TPU evaluation cannot stop at the end of the input, and "
            "without est2tpu.runtime (--no-runtime) nothing counts the input's batches; give "
            "a number of steps",
        )
        return updated_node

    def _sized_call(self, expr: cst.BaseExpression) -> bool:
        qualified = self.state.imports.qualify(expr.func) if isinstance(expr, cst.Call) else None
        return qualified == "est2tpu.runtime.sized_input_fn"

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self._lambda_bodies.add(id(node.body))
        return True

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        if self.here not in self._lambda_scopes:
            return updated_node
        site = self.state.index.bound_lambdas.get(
            (self.state.path, self.here, node_code(original_node))
        )
        if site is None or has_param(updated_node, "params"):
            return updated_node
        self.record(original_node, "input_fn lambda takes params")
        return lambda_with_params(self._lambda_dataset(updated_node), site)

    def _lambda_dataset(self, lam: cst.Lambda) -> cst.Lambda:
        """`lambda: make(...).make_one_shot_iterator().get_next()` returns `make(...)`: the
        Estimator makes that same one-shot iterator over a returned dataset on CPU, and
        TPUEstimator's PER_HOST_V2 input needs the dataset itself."""
        dataset = get_next_of_one_shot(lam.body, self.tf_name)
        if not isinstance(dataset, cst.Call):
            return lam
        self.record(lam, "input_fn lambda returns its dataset, not iterator tensors")
        return lam.with_changes(body=dataset)

    # Direct calls, kept apart from the rest.
    def _direct_call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        """A call the project makes itself of an input function that gains `params` passes
        the batch size the TPUEstimator would (the same value on CPU). The same text as a
        lambda's body (`lambda: input_fn()` beside `input_fn()`) is the lambda's: the
        lambda's rewrite hands it TPUEstimator's params instead."""
        if id(original_node) in self._lambda_bodies or self.here not in self._direct_scopes:
            return updated_node
        direct = self.state.index.direct_calls.get(
            (self.state.path, self.here, node_code(original_node))
        )
        if direct is None:
            return updated_node
        if direct.batch is None:
            self.refuse(original_node, direct.problem or "pass params by hand")
            return updated_node
        params = cst.Dict(
            [cst.DictElement(cst.SimpleString('"batch_size"'), cst.parse_expression(direct.batch))]
        )
        self.record(original_node, "direct call passes params={'batch_size': ...}")
        return with_kwarg(updated_node, "params", params)
