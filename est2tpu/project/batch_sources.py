"""Batch-size sources: where an input function's batch size is bound (a literal, a flag,
an argument, a configuration object) and whether the TPUEstimator's constructor can name it."""

from __future__ import annotations

import dataclasses
from pathlib import PurePath

import libcst as cst

from est2tpu.batching import (
    int_literal,
    is_params_batch_size,
    params_get_default,
)
from est2tpu.cstutil import (
    iter_calls,
    names_read,
)
from est2tpu.index import (
    BatchHelper,
    BatchSize,
    CallKey,
    CtorPlan,
    FnKey,
    Mode,
    SourceModule,
    UseSite,
    call_arg,
    node_code,
    param_names,
)
from est2tpu.names import dotted
from est2tpu.project.calls import (
    arg_index,
    assigned_attributes,
    assigned_in,
    bind_call,
    bind_index,
    body_statements,
    default_of,
    instance_receiver,
    subscript_head,
    substituted,
    unread_params,
)
from est2tpu.project.input_shapes import HelperChain
from est2tpu.project.scope import UseScope
from est2tpu.tfapi import (
    DEFAULT_NUMPY_BATCH,
    NUMPY_INPUTS,
    SHIM,
    call_kind,
)


def not_at_ctor(result: BatchSize, where: str = "") -> str:
    return (
        f"the batch size `{result.code}` is not defined where the Estimator is built{where}; "
        "pass train/eval/predict_batch_size to the TPUEstimator by hand"
    )


def batch_not_from_params(plan: CtorPlan, result: BatchSize, where: str = "") -> str:
    if not result.portable:
        return not_at_ctor(result, where)  # the first run's words: a CI check repeats them
    given = plan.tpu_batch_sizes.get(result.mode)
    what = f"{result.mode.value}_batch_size"
    if given is None:
        return (
            f"the input function batches by `{result.code}`, not params['batch_size'], and "
            f"the TPUEstimator has no {what}: pass {what}={result.code} to it and batch by "
            "params['batch_size'] by hand"
        )
    return (
        f"the input function batches by `{result.code}`, not params['batch_size'] (the "
        f"TPUEstimator's {what} is `{given}`, which it shards per core on TPU): batch by "
        "params['batch_size'] by hand"
    )


class BatchSources(UseScope):
    """Where an input function's batch size comes from, and whether the TPUEstimator's
    constructor can name it."""

    # the Estimator the input function being analysed feeds (set by `UseCollector.use`):
    # its key, path, def path and binding position
    ctor_key: CallKey | None
    ctor_path: str | None
    ctor_scope: str | None
    ctor_at: int | None

    def batch_from_call_site(self, mode: Mode, expr: cst.BaseExpression) -> BatchSize:
        """A batch size passed at the use site: portable if it is a literal, or a name
        bound at module level or in the function where the call (and the Estimator) is."""
        text = self.code(expr)
        if is_params_batch_size(expr):  # a lambda migrated before passes it on
            return BatchSize(mode, text, True, from_params=True)
        if int_literal(expr):
            return BatchSize(mode, text, True)
        full = dotted(expr) or ""
        parts = full.split(".")
        if "." in full and full in self.reach:
            return BatchSize(mode, self.reach[full], True)
        if parts[0] in self.reach:
            return BatchSize(mode, ".".join([self.reach[parts[0]], *parts[1:]]), True)
        head = parts[0] or subscript_head(expr)  # `hparams["batch_size"]` reads hparams
        known = bool(head) and self.ctor_scope_knows(head)
        if not known and isinstance(expr, cst.Name) and self.src.module_assigns.get(text) == 1:
            # a module constant bound once, after the Estimator: its value, not its name
            value = self.src.constants.get(text) if self.ctor_path == self.src.path else None
            if value is not None:
                return BatchSize(mode, str(value), True)
            moved = self.module_values.get(text) if self.ctor_scope == "" else None
            if moved is not None and self.computable_at_ctor(moved):
                # `eval_batch_size = 100 if DEVELOP_MODE else 10000` after the Estimator:
                # the same expression, of names bound once before it, at the constructor
                return BatchSize(mode, self.code(moved), True)
        return BatchSize(mode, text, known)

    def batch_size_of(
        self,
        size: cst.BaseExpression,
        owner_src: SourceModule,
        target_key: FnKey,
        factory: FnKey | None,
        via_lambda: cst.Lambda | None,
        via_partial: bool,
        bindings: dict[str, cst.BaseExpression],
        mode: Mode,
        site: UseSite,
        commit: bool,
    ) -> BatchSize | None:
        """The batch size `size` (the input function's batch argument, as `owner_src`
        spells it) where the Estimator is built, and the rewrite that reads it from params."""
        plan = self.ix.index.input_fns[target_key]
        fn = self.ix.fn(target_key)
        fn_params = param_names(fn)
        own = params_get_default(size)
        if own is not None:
            # `params.get("batch_size", 64)`: migrated before, for a TPUEstimator and for
            # code that passes no batch size (`other_consumers`): 64 is the size it had.
            found = self.batch_size_of(
                own, owner_src, target_key, factory, via_lambda, via_partial, bindings, mode,
                site, commit,
            )  # fmt: skip
            return dataclasses.replace(found, from_params=True) if found is not None else None
        if is_params_batch_size(size):
            # Migrated before (by hand, or by a run that stopped after writing this file):
            # the size it had survives as the one argument that nothing reads any more.
            holder = factory if factory is not None else target_key
            if via_lambda is not None:
                return None  # the lambda passes params on: it was migrated with it
            spare = unread_params(self.ix.fn(holder))
            if len(spare) == 1 and spare[0] in bindings:
                found = self.batch_from_call_site(mode, bindings[spare[0]])
                return dataclasses.replace(found, from_params=True)
            default = default_of(self.ix.fn(holder), spare[0]) if len(spare) == 1 else None
            if default is not None and int_literal(default):
                code = self.code_of(self.ix.modules[holder[0]], default)
                return BatchSize(mode, code, True, from_params=True)
            if commit:
                site.unsized = True
            return None
        if int_literal(size):
            self.forward_params(plan, site, via_lambda, commit)
            plan.batch_literal = self.code_of(owner_src, size)
            return BatchSize(mode, self.code_of(owner_src, size), True)
        name = dotted(size)
        if isinstance(size, cst.Name) and name is not None:
            if name in fn_params and via_partial and name in bindings:
                plan.batch_to_params = plan.batch_to_params or commit
                return self.batch_from_call_site(mode, bindings[name])
            if name in fn_params:
                bound = bindings.get(name) if via_lambda is not None else None
                if via_lambda is not None and bound is not None:
                    if commit:
                        site.lambda_batch_arg = arg_index(via_lambda, bound)
                    return self.batch_from_call_site(mode, bound)
                default = default_of(fn, name)
                if default is not None and int_literal(default):
                    # its default: the lambda that calls it without it hands params on
                    self.forward_params(plan, site, via_lambda, commit)
                    plan.batch_to_params = plan.batch_to_params or commit
                    plan.batch_literal = self.code_of(owner_src, default)
                    plan.batch_param = name
                    return BatchSize(mode, self.code_of(owner_src, default), True)
                site.problems.append(
                    f"the batch size comes from argument `{name}`, which this call site does "
                    "not set; pass params['batch_size'] by hand"
                )
                return None
            if name in bindings:  # a parameter of the factory that returned the closure
                plan.batch_to_params = plan.batch_to_params or commit
                return self.batch_from_call_site(mode, bindings[name])
            if name in owner_src.constants:
                self.forward_params(plan, site, via_lambda, commit)
                plan.batch_literal = str(owner_src.constants[name])
                if owner_src.path == self.src.path:
                    return BatchSize(mode, name, True)
                return BatchSize(mode, str(owner_src.constants[name]), True)
        head = (dotted(size) or "").partition(".")[0] or subscript_head(size)
        if head and head in bindings and not isinstance(size, cst.Name):
            passed = bindings[head]
            moved = substituted(size, lambda n: passed if n == head else None)
        else:
            moved = size
        if (
            isinstance(moved, cst.Attribute)
            and self.ctor_key is not None
            and self.ix.ctor_params.get(self.ctor_key) == self.code(moved.value)
        ):
            pass  # an attribute of the Estimator's own params: TPUEstimator sets it anew
        elif head and head in bindings and not isinstance(size, cst.Name):
            # `.batch(flags_obj.batch_size)` of a parameter the call site binds (`lambda:
            # input_fn(flags_obj)`, `make_input_fn(hparams)`): the same read of what it
            # passes, where the call is
            self.forward_params(plan, site, via_lambda, commit)
            return self.batch_from_call_site(mode, moved)
        elif head and head not in fn_params and head not in assigned_in(fn):
            visible = self.visible_at_ctor(owner_src, target_key, head)
            if visible is not None and commit:
                plan.batch_code = (
                    self.code_of(owner_src, size),
                    owner_src.path,
                    self.binding_scope(owner_src, target_key, head),
                )
            if visible is not None:
                # A value bound once where the input function reads it (`EVAL_SEQUENCES = N
                # // 4`, `FLAGS.batch_size` with `FLAGS = flags.FLAGS` or imported,
                # `CONFIG["batch_size"]`, a closure's variable): the same value where the
                # Estimator is built, if the name is bound to it there too.
                self.forward_params(plan, site, via_lambda, commit)
                return BatchSize(mode, self.code_of(owner_src, size), visible)
        instance = self.instance_attribute_at_ctor(owner_src, target_key, size)
        if instance is not None:
            # `.batch(self.batch_size)` in a method of the class whose `__init__` sets
            # `self.batch_size` and then builds the Estimator: the same attribute there
            self.forward_params(plan, site, via_lambda, commit)
            return BatchSize(mode, instance, True)
        plan.problems.append(
            f"the batch size `{self.code_of(owner_src, size)}` is not a literal, a module "
            "constant or an argument; move it to the TPUEstimator and read params['batch_size']"
        )
        return None

    def instance_attribute_at_ctor(
        self, owner_src: SourceModule, target_key: FnKey, size: cst.BaseExpression
    ) -> str | None:
        """`self.batch_size` read by a method of the class that builds the Estimator in
        another method, which sets that attribute (once in the class) before it builds the
        Estimator: the attribute as the constructor's method spells it."""
        if not isinstance(size, cst.Attribute) or not isinstance(size.value, cst.Name):
            return None
        owner = target_key[1].rpartition(".")[0]
        fn = self.ix.fn(target_key)
        if (
            not owner
            or owner in owner_src.defs
            or self.ctor_path != owner_src.path
            or self.ctor_scope is None
            or self.ctor_scope.rpartition(".")[0] != owner
            or instance_receiver(fn) != size.value.value
        ):
            return None
        ctor_fn = owner_src.defs.get(self.ctor_scope)
        receiver = instance_receiver(ctor_fn) if ctor_fn is not None else None
        if ctor_fn is None or receiver is None:
            return None
        attribute = size.attr.value
        setters = [
            path
            for path, method in owner_src.defs.items()
            if path.rpartition(".")[0] == owner
            and f"{instance_receiver(method)}.{attribute}" in assigned_attributes(method)
        ]
        init = f"{owner}.__init__"
        if setters == [self.ctor_scope]:
            setter = ctor_fn
        elif setters == [init]:
            # set by __init__, and the Estimator built by another method: before __init__
            # calls any method of the instance, every method sees it
            setter = owner_src.defs[init]
        else:
            return None
        receiver_of_setter = instance_receiver(setter)
        set_as = f"{receiver_of_setter}.{attribute}"
        for stmt in body_statements(setter):
            if any(
                call_kind(owner_src.imports, c.func) == "ctor"
                or (
                    setter is not ctor_fn
                    and isinstance(c.func, cst.Attribute)
                    and dotted(c.func.value) == receiver_of_setter
                )
                for c in iter_calls(stmt)
            ):
                return None  # built (or a method run) before the attribute is set
            if isinstance(stmt, cst.SimpleStatementLine) and any(
                isinstance(small, cst.Assign)
                and any(dotted(t.target) == set_as for t in small.targets)
                for small in stmt.body
            ):
                return f"{receiver}.{attribute}"
        return None

    def through_helper(
        self,
        chain: HelperChain,
        target_key: FnKey,
        factory: FnKey | None,
        via_lambda: cst.Lambda | None,
        via_partial: bool,
        bindings: dict[str, cst.BaseExpression],
        mode: Mode,
        site: UseSite,
        commit: bool,
    ) -> BatchSize | None:
        """An input function that returns what a project helper makes, batched by the
        helper's parameter (`return make_batches(files, 64)`): the call passes
        params["batch_size"] for it, as the input function's own `.batch(64)` would read it."""
        plan = self.ix.index.input_fns[target_key]
        first = chain.helpers[0]
        if Mode.PREDICT in plan.modes and plan.modes - {Mode.PREDICT}:
            plan.problems.append(
                f"this input function feeds predict and train/eval, and `{first[1]}` makes its "
                "batches: predict keeps the last partial batch, train/eval on TPU need "
                "drop_remainder=True; split it, or give the helper the mode, by hand"
            )
            return None
        if chain.size is not None:
            result = self.batch_size_of(
                chain.size,
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
        else:
            # the call leaves the batch size to the helper's default (or the constant it
            # batches by, which becomes that default)
            owner = self.ix.modules[first[0]]
            default = chain.new_default or default_of(self.ix.fn(first), chain.param)
            result = None
            if default is not None and int_literal(default):
                result = BatchSize(mode, self.code_of(owner, default), True)
                plan.batch_literal = result.code
            elif isinstance(default, cst.Name) and default.value in owner.constants:
                same = owner.path == self.src.path
                text = default.value if same else str(owner.constants[default.value])
                result = BatchSize(mode, text, True)
                plan.batch_literal = str(owner.constants[default.value])
            if result is None:
                plan.problems.append(
                    f"`{first[1]}`, which makes the input function's batches, batches by its "
                    f"argument `{chain.param}`, whose default is no literal or module "
                    "constant; pass params['batch_size'] for it by hand"
                )
                return None
            self.forward_params(plan, site, via_lambda, commit)
        if chain.passes_params and commit and via_lambda is None and factory is None:
            # The helper batches by the params the input function is given: its call stays,
            # and reads TPUEstimator's batch size once the input function feeds one (whose
            # size the Estimator's params held: see TPU007).
            plan.helper_call = node_code(chain.call)
            plan.helper_param = None
            plan.helper_unpacked = chain.unpacked
        elif chain.passes_params:
            if commit:
                plan.problems.append(
                    f"`{first[1]}` batches by the params the input function passes it, and "
                    "the input function is reached through a lambda, partial or factory that "
                    "est2tpu does not follow for those params; give the helper "
                    "params['batch_size'] from TPUEstimator's params by hand"
                )
            return None
        elif not commit or (
            result is None and (chain.size is None or not is_params_batch_size(chain.size))
        ):
            # (a call passing params["batch_size"] already, migrated before, of unknown size:
            # its helpers still make the batches, and get what a one-shot run gives them)
            return result
        elif plan.batch_to_params or chain.unpacked is not None:
            plan.helper_call = node_code(chain.call)
            plan.helper_param = chain.param if plan.batch_to_params else None
            plan.helper_arg = bind_index(self.ix.fn(first), chain.call).get(chain.param)
            plan.helper_unpacked = chain.unpacked
        plan.helper_repeats = plan.helper_repeats or chain.repeats
        for key in chain.helpers:
            helper = self.ix.index.batch_helpers.setdefault(key, BatchHelper())
            helper.modes.add(mode)
            helper.callers.add(target_key)
        last = self.ix.index.batch_helpers[chain.helpers[-1]]
        last.batch = node_code(chain.batch)
        if chain.new_default is not None:
            last.new_param = (chain.param, chain.new_default.value)
        if chain.one_shot:
            self.ix.index.batch_helpers[first].return_dataset = True
        return result

    def numpy_factory(
        self,
        factory: FnKey,
        numpy_call: cst.Call,
        call: cst.Call,
        mode: Mode,
        site: UseSite,
        commit: bool,
    ) -> BatchSize | None:
        """A project function that returns a numpy_input_fn/pandas_input_fn call
        (`def make_input(x, y, batch_size=64): return numpy_input_fn(x, y, batch_size=...)`)
        is called for the input_fn: the call inside it becomes the shim's params-aware one
        and its batch size, as this call site sets it, moves to the TPUEstimator."""
        owner = self.ix.modules[factory[0]]
        key = self.ix.node_keys[factory[0]].get(id(numpy_call))
        name = owner.imports.tf_name(numpy_call.func)
        if name is None and (owner.imports.qualify(numpy_call.func) or "").startswith(
            SHIM + "tf2."
        ):
            name = "estimator.inputs.numpy_input_fn"  # the tf2 shim's: the same arguments
        if key is None or name is None:
            # The tpu-estimator shim's own (code migrated before): it batches by
            # params["batch_size"]; the TPUEstimator has the size.
            return None
        fn = self.ix.fn(factory)
        size = call_arg(numpy_call, "batch_size", NUMPY_INPUTS[name])
        batch: BatchSize | None
        if size is None:
            batch = BatchSize(mode, DEFAULT_NUMPY_BATCH, True)
        elif int_literal(size.value):
            batch = BatchSize(mode, self.code_of(owner, size.value), True)
        elif isinstance(size.value, cst.Name) and size.value.value in param_names(fn):
            bound = bind_call(fn, call).get(size.value.value)
            default = default_of(fn, size.value.value)
            if bound is not None:
                batch = self.batch_from_call_site(mode, bound)
            elif default is not None and int_literal(default):
                batch = BatchSize(mode, self.code_of(owner, default), True)
            elif isinstance(default, cst.Name) and default.value in owner.constants:
                same = owner.path == self.src.path
                text = default.value if same else str(owner.constants[default.value])
                batch = BatchSize(mode, text, True)
            else:
                batch = None
        elif subscript_head(size.value) in param_names(fn) and not isinstance(size.value, cst.Name):
            # `batch_size=hparams.batch_size` of an object the call passes: the same read
            # of what it passes, where the call is
            head = subscript_head(size.value)
            bound = bind_call(fn, call).get(head)
            batch = (
                self.batch_from_call_site(
                    mode, substituted(size.value, lambda n: bound if n == head else None)
                )
                if bound is not None
                else None
            )
        else:
            batch = None
        if batch is None:
            site.problems.append(
                f"the numpy/pandas input function made by `{factory[1]}` batches by "
                f"`{self.code_of(owner, size.value) if size else ''}`, which this call "
                "site does not set; pass the batch size to the TPUEstimator by hand"
            )
            return None
        site.lacks_params = True
        if commit:
            site.tpu = True
            site.sized_input = True
            self.ix.index.numpy_inputs.add(key)
        return batch

    @staticmethod
    def binding_scope(owner_src: SourceModule, key: FnKey, head: str) -> str:
        """The def around the input function `key` that binds `head`, or "" (the module)."""
        parts = key[1].split(".")[:-1]
        for i in range(len(parts), 0, -1):
            fn = owner_src.defs.get(".".join(parts[:i]))
            if fn is not None and (head in param_names(fn) or head in assigned_in(fn)):
                return ".".join(parts[:i])
        return ""

    def visible_at_ctor(self, owner_src: SourceModule, key: FnKey, head: str) -> bool | None:
        """Whether `head`, a name the input function `key` reads but does not bind, holds
        the same value where the Estimator is built: bound once at module level (or by an
        import) in the input function's module, when the Estimator is built there or in a
        module importing the same thing under that name; or a variable of the def around
        it, when the Estimator is built in that def after it is bound. None: not such a
        name (a builtin, a name bound twice)."""
        parts = key[1].split(".")[:-1]
        for i in range(len(parts), 0, -1):
            outer = ".".join(parts[:i])
            fn = owner_src.defs.get(outer)
            if fn is None:
                continue  # a class
            if head not in param_names(fn) and head not in assigned_in(fn):
                continue
            if owner_src.path != self.src.path or self.ctor_path != owner_src.path:
                return False
            if self.ctor_scope != outer:
                return False
            bound = self.first_bound.get((outer, head))
            return bound is None or self.ctor_at is None or bound < self.ctor_at
        imported = owner_src.imports.bindings.get(head) or owner_src.relative.get(head)
        if owner_src.module_assigns.get(head) != 1 and (
            imported is None or head in owner_src.module_assigns
        ):
            return None
        if self.ctor_path == owner_src.path:
            return True
        ctor_src = self.ix.modules.get(self.ctor_path) if self.ctor_path else None
        if ctor_src is None or imported is None:
            return False
        there = ctor_src.imports.bindings.get(head) or ctor_src.relative.get(head)
        return there == imported and head not in ctor_src.module_assigns

    def ctor_where(self, scope: str, result: BatchSize) -> str:
        """` (in `build_estimator`, model.py, which `args` does not reach)`, when the
        Estimator is built by another function than the one using it: the user's fix is to
        hand that function the batch size."""
        if self.ctor_scope is None or (
            self.ctor_scope == scope and self.ctor_path == self.src.path
        ):
            return ""
        head = (dotted(cst.parse_expression(result.code)) or "").split(".")[0]
        where = f"`{self.ctor_scope.rpartition('.')[2]}`" if self.ctor_scope else "module level"
        if self.ctor_path is not None and self.ctor_path != self.src.path:
            where += f", {PurePath(self.ctor_path).name}"
        reach = f", which `{head}` does not reach: give it the batch size" if head else ""
        return f" (in {where}{reach})"

    def computable_at_ctor(self, value: cst.BaseExpression) -> bool:
        """A module-level expression without calls whose names are all bound once, at module
        level, before the (module-level) Estimator: it has the same value there."""
        if self.ctor_path != self.src.path or self.ctor_at is None or any(iter_calls(value)):
            return False
        if not isinstance(value, (cst.Name, cst.Integer, cst.IfExp, cst.BinaryOperation)):
            return False
        return all(
            self.src.module_assigns.get(name.value) == 1
            and self.first_bound.get(("", name.value), self.ctor_at) < self.ctor_at
            for name in names_read(value)
        )

    def ctor_scope_knows(self, name: str) -> bool:
        if self.ctor_path is not None and self.ctor_path != self.src.path:
            return False  # built by a function in another module: only literals travel
        scope = self.ctor_scope
        bound = self.first_bound.get((scope, name)) if scope is not None else None
        if bound is not None and self.ctor_at is not None and bound >= self.ctor_at:
            return False  # first bound after the Estimator is built: unbound there
        if name in self.src.constants or name in self.src.imports.bindings:
            return True
        return scope is not None and scope == self.here
