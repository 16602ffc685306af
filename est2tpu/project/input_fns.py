"""Input-function analysis: each input function an Estimator runs, followed through names,
lambdas, partials, factories and helpers, and planned to take params."""

from __future__ import annotations

import libcst as cst

from est2tpu.batching import (
    batch_calls,
    batch_size_arg,
    get_next_of_one_shot,
)
from est2tpu.index import (
    BatchSize,
    FnKey,
    InputFnPlan,
    Mode,
    UseSite,
    call_arg,
    param_names,
)
from est2tpu.names import dotted
from est2tpu.project.batch_sources import BatchSources
from est2tpu.project.calls import (
    assigned_in,
    bind_call,
    chained_factory_call,
    int_subscript,
    names_in,
    returned_def,
)
from est2tpu.project.input_shapes import (
    helper_chain,
    is_get_next,
    lambda_over_local,
    one_pass_over,
    repeats_in_helper,
    returned_numpy_call,
    why_unbatched,
)
from est2tpu.project.scope import partial_inner
from est2tpu.tfapi import (
    DEFAULT_NUMPY_BATCH,
    NUMPY_INPUTS,
    SHIM,
)


def defined_twice(what: str) -> str:
    """The problem of an input function whose name the scope using it binds to more than one
    def (a tutorial's second `def input_fn` for predict, defs in the branches of an `if`)."""
    return (
        f"{what} is defined more than once in its module and the call may run either def, "
        "so est2tpu cannot plan its batch size; give each def its own name"
    )


class InputFns(BatchSources):
    """What an input function handed to train/evaluate/predict or a spec is, and how it
    becomes one that takes params."""

    # the input functions analysed now feed an Estimator the index knows and leaves as it is
    kept = False

    def object_method(self, func: cst.BaseExpression) -> FnKey | None:
        """The def `obj.method` names when `obj` holds an object the program built from one
        of the project's classes (`dataset = DataSet(data_dir)` ... `dataset.train_input_fn`):
        the class's method, in this module or the one the class is imported from. `obj` is
        bound once in its scope (an object built in the branches of an `if`, of one class or
        a subclass overriding the method, may be either)."""
        if not isinstance(func, cst.Attribute):
            return None
        if isinstance(func.value, cst.Call):
            value: cst.BaseExpression | None = func.value  # `DataSet(d).train_input_fn(32)`
        elif isinstance(func.value, cst.Name):
            value = self.only_binding(self.values, func.value.value)
        else:
            return None
        if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Name | cst.Attribute):
            return None
        method = self.ix.resolve_fn(self.src, self.here, cst.Attribute(value.func, func.attr))
        local = f"{self.code(value.func)}.{func.attr.value}"
        if method is None and local in self.src.defs:
            method = (self.src.path, local)  # a class of this module
        return method if method is not None and "." in method[1] else None

    def untraced_factory(self, call: cst.Call) -> str:
        """Why the input_fn a call returns is not followed."""
        func = call.func
        head = (
            (dotted(func.value) or "").partition(".")[0] if isinstance(func, cst.Attribute) else ""
        )
        if head and head not in self.src.imports.bindings and head not in self.src.relative:
            return (
                f"input_fn comes from `{self.code(func)}(...)`, a method of an object est2tpu "
                "cannot trace to one of the project's classes (one `obj = Class(...)` in the "
                "scope that uses it); have the function it returns take `params` and batch "
                "with params['batch_size']"
            )
        return "input_fn comes from a call that is not in this project"

    def analyse_input_fn(
        self, expr: cst.BaseExpression, mode: Mode, site: UseSite, commit: bool, depth: int = 0
    ) -> BatchSize | None:
        """Plan the input function's rewrite; return the batch size it used, if known.

        Batch rewrites are planned only when `commit` (the call uses an Estimator that
        becomes a TPUEstimator, which will pass params["batch_size"]).
        """
        if (
            isinstance(expr, cst.Name)
            and depth < 4
            and self.ix.resolve_fn(self.src, self.here, expr) is None
        ):
            value = self.lookup(self.values, expr.value)
            if isinstance(value, cst.Lambda):
                return self.bound_lambda(expr.value, value, mode, site, commit, depth)
            if value is not None:
                other = self.other_branch(expr.value, value)
                if other is not None:
                    return self.both_branches(other, value, mode, site, commit, depth)
                return self.analyse_input_fn(value, mode, site, commit, depth + 1)
        if (
            isinstance(expr, cst.Call)
            and expr.args
            and self.shim_name(expr.func) == "sized_input_fn"
        ):
            # marked by a run before (EvalSpec(steps=None)): the input function it marks
            return self.analyse_input_fn(expr.args[0].value, mode, site, commit, depth + 1)
        bindings: dict[str, cst.BaseExpression] = {}
        via_lambda: cst.Lambda | None = None
        via_partial = False
        target_key: FnKey | None = None
        factory: FnKey | None = None
        numpy_call, _ = self.numpy_input(expr)
        if numpy_call is not None:
            if commit:
                site.tpu = True
                site.sized_input = True
                self.ix.index.numpy_inputs.add(self.node_keys[id(numpy_call)])
            name = self.src.imports.tf_name(numpy_call.func)
            site.lacks_params = name is not None
            if name is None and not (self.src.imports.qualify(numpy_call.func) or "").startswith(
                SHIM + "tf2."
            ):
                # The tpu-estimator shim's own numpy/pandas input function (code migrated
                # before): it batches by params["batch_size"]; the TPUEstimator has the size.
                return None
            numpy_batch = call_arg(numpy_call, "batch_size", NUMPY_INPUTS.get(name or "", 2))
            if numpy_batch is None:
                return BatchSize(mode, DEFAULT_NUMPY_BATCH, True)
            return self.batch_from_call_site(mode, numpy_batch.value)
        if isinstance(expr, cst.Lambda):
            if param_names(expr) and "params" not in param_names(expr):
                site.problems.append(
                    "the input_fn lambda takes arguments other than `params`; "
                    "make it `lambda params: ...` by hand"
                )
                return None
            body = expr.body
            iterated = get_next_of_one_shot(body, self.src.imports.tf_name)
            if isinstance(iterated, cst.Call):
                # `lambda: make(...).make_one_shot_iterator().get_next()`: the Estimator
                # makes that same iterator over the dataset `make(...)` returns; TPU005
                # drops the iterator and the lambda returns the dataset.
                body = iterated
                expr = expr.with_changes(body=body)
            if not isinstance(body, cst.Call):
                site.problems.append("the input_fn lambda does not call a function")
                return None
            target_key = self.ix.resolve_callable(self.src, self.here, body.func)
            if target_key is None and is_get_next(body):
                site.problems.append(
                    "the input_fn lambda returns tensors from an iterator (`get_next()`): "
                    "TPUEstimator on TPU needs the tf.data.Dataset itself, batched by "
                    "params['batch_size']; make it `lambda params: <the dataset>` by hand"
                )
                return None
            if self.ix.redefined_fn(self.src, self.here, body.func):
                site.problems.append(
                    defined_twice(
                        f"the function the input_fn lambda calls, `{self.code(body.func)}`,"
                    )
                )
                return None
            if target_key is None:
                site.problems.append(
                    "the function the input_fn lambda calls is not defined in this project"
                )
                return None
            via_lambda = expr
            self.ix.wrapped.add(id(body))
            fn = self.ix.fn(target_key)
            bindings = bind_call(fn, body)
        elif isinstance(expr, cst.Call):
            factory = self.ix.resolve_fn(self.src, self.here, expr.func) or self.object_method(
                expr.func
            )
            partial_of = partial_inner(self, expr)
            if factory is None and partial_of is not None:
                # TPUEstimator passes params (and mode, unless bound) to the partial object.
                target_key = self.ix.resolve_fn(self.src, self.here, partial_of)
                if target_key is None:
                    site.problems.append(
                        "input_fn is a functools.partial of a function not defined in this "
                        "project; it must accept `params` and batch with params['batch_size']"
                    )
                    return None
                via_partial = True
                bindings = bind_call(self.ix.fn(target_key), expr.with_changes(args=expr.args[1:]))
            elif factory is None:
                site.problems.append(self.untraced_factory(expr))
                return None
            else:
                inner = returned_def(self.ix, factory)
                numpy_made = returned_numpy_call(self.ix, factory) if inner is None else None
                if numpy_made is not None:
                    return self.numpy_factory(factory, numpy_made, expr, mode, site, commit)
                chained = (
                    chained_factory_call(self.ix, factory, expr)
                    if inner is None and factory[0] == self.src.path and depth < 4
                    else None
                )
                if chained is not None:
                    # `def make(pattern, params): return inputs.get_input_fn(pattern,
                    # batch_size=params.batch_size)`: the factory it calls, with this call
                    # site's arguments in place of make's parameters.
                    return self.analyse_input_fn(chained, mode, site, commit, depth + 1)
                if inner is None:
                    site.problems.append(
                        "the input_fn factory does not return a function defined inside it"
                    )
                    return None
                target_key = inner
                bindings = bind_call(self.ix.fn(factory), expr)
        elif isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Call):
            # one of the input functions a project factory returns together
            made = expr.value
            factory = self.ix.resolve_fn(self.src, self.here, made.func)
            index = int_subscript(expr)
            inner = (
                returned_def(self.ix, factory, index)
                if factory is not None and index is not None
                else None
            )
            if factory is None or inner is None:
                over = (
                    lambda_over_local(self.ix.fn(factory), index)
                    if factory is not None and index is not None
                    else None
                )
                site.problems.append(
                    f"input_fn is one of the values `{self.code(made.func)}(...)` returns, "
                    "and not a function defined in a project function that returns it; it "
                    "must accept `params` and batch with params['batch_size'] (a def that "
                    "builds its dataset inside it, not a lambda over a dataset built before)"
                    + (
                        f"; this lambda reads the dataset `{over}` that "
                        f"`{self.code(made.func)}` builds outside the graph the Estimator "
                        "makes, where TensorFlow 1.13 and later cannot use it (the original "
                        "fails too: 'must be from the same graph')"
                        if over is not None
                        else ""
                    )
                )
                return None
            target_key = inner
            bindings = bind_call(self.ix.fn(factory), made)
        else:
            if self.ix.redefined_fn(self.src, self.here, expr):
                site.problems.append(defined_twice(f"input_fn `{self.code(expr)}`"))
                return None
            target_key = self.ix.resolve_callable(self.src, self.here, expr)
            if target_key is None:
                site.problems.append(
                    "input_fn could not be resolved to a function in this project; it must "
                    "accept `params` and batch with params['batch_size']"
                )
                return None
        plan = self.ix.index.input_fns.setdefault(target_key, InputFnPlan())
        plan.modes.add(mode)
        fn = self.ix.fn(target_key)
        plan.helper_repeats = plan.helper_repeats or repeats_in_helper(self.ix, target_key)
        fn_params = param_names(fn)
        site.lacks_params = "params" not in (
            param_names(via_lambda) if via_lambda is not None else fn_params
        )
        plan.feeds_tpu = plan.feeds_tpu or site.tpu or commit
        if commit:
            plan.committed = True
            site.tpu = True
            site.lambda_params = via_lambda is not None
        if via_lambda is None:
            # A TPUEstimator passes params the input function must take; an Estimator the
            # index knows and leaves as it is calls it as before (its file stays as it was).
            # One it cannot see (a call's result) may be a TPUEstimator: params are kept
            # ready, which a plain Estimator passes too.
            plan.needs_params = plan.needs_params or commit or site.tpu or not self.kept
            plan.direct = True
            if commit and mode is Mode.EVAL and target_key[0] == self.src.path:
                examples = one_pass_over(self.src, fn)
                # read again where evaluate() is called: the module's names, not a local's
                user = self.src.defs.get(self.here)
                shadowed = assigned_in(user) | set(param_names(user)) if user is not None else set()
                if examples is not None and not shadowed & names_in(examples):
                    site.examples_code = examples
        calls = batch_calls(fn)
        chain = helper_chain(self.ix, target_key) if not calls else None
        if chain is not None:
            return self.through_helper(
                chain, target_key, factory, via_lambda, via_partial, bindings, mode, site, commit
            )
        if len(calls) != 1:
            if not calls:
                plan.problems.append(why_unbatched(self.ix, target_key))
            else:
                plan.problems.append(
                    "more than one `.batch(...)` call in the input function; rewrite the "
                    "one that makes the final batch to params['batch_size'] by hand"
                )
            return None
        size_arg = batch_size_arg(calls[0])
        if size_arg is None:
            return None
        return self.batch_size_of(
            size_arg.value,
            self.ix.modules[target_key[0]],
            target_key,
            factory,
            via_lambda,
            via_partial,
            bindings,
            mode,
            site,
            commit,
        )

    def both_branches(
        self,
        first: cst.BaseExpression,
        second: cst.BaseExpression,
        mode: Mode,
        site: UseSite,
        commit: bool,
        depth: int,
    ) -> BatchSize | None:
        """An input function chosen by if/else (fake data or real): both are migrated, and
        they must batch by one size, the one the TPUEstimator gets."""
        before = self.problem_count(site)
        sizes = [self.analyse_input_fn(first, mode, site, commit, depth + 1)]
        if sizes[0] is None and self.problem_count(site) > before:
            return None  # its finding says what to do; the other branch waits for it
        # (None without a finding: it reads params["batch_size"] already, migrated before,
        # and the other branch is migrated as one-shot run migrates it)
        sizes.append(self.analyse_input_fn(second, mode, site, commit, depth + 1))
        if sizes[0] is None or sizes[1] is None:
            return None
        if sizes[0].code != sizes[1].code:
            site.problems.append(
                f"the input functions chosen by if/else batch by different sizes "
                f"({sizes[0].code}, {sizes[1].code}); TPUEstimator takes one batch size per mode"
            )
            return None
        return sizes[1]

    def bound_lambda(
        self,
        name: str,
        lam: cst.Lambda,
        mode: Mode,
        site: UseSite,
        commit: bool,
        depth: int,
    ) -> BatchSize | None:
        """An input_fn name bound to a lambda: the lambda takes `params` where it is bound,
        as it would where it is passed."""
        scope = self.lambda_scopes.get(id(lam))
        called = any(dotted(call.func) == name for _, call in self.calls)
        if scope is None or called:
            site.problems.append(
                f"input_fn `{name}` holds a lambda that the program also calls itself; make "
                "it `lambda params: ...` and pass params (with 'batch_size') to both by hand"
            )
            return None
        inner = UseSite(tpu=site.tpu)
        result = self.analyse_input_fn(lam, mode, inner, commit, depth + 1)
        site.problems.extend(inner.problems)
        site.tpu = site.tpu or inner.tpu
        site.lacks_params = inner.lacks_params
        site.unsized = site.unsized or inner.unsized
        if inner.lambda_params:
            self.ix.index.bound_lambdas[(self.src.path, scope, self.code(lam))] = inner
        return result
