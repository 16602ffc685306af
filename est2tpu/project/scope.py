"""The bindings of one module at a point of its walk, and the model_fn an Estimator runs
(through `est2tpu.project.values`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Self, TypeVar

import libcst as cst

from est2tpu.cstutil import (
    iter_calls,
    names_read,
    target_names,
    walk,
)
from est2tpu.index import (
    CallKey,
    CallKeys,
    CtorPlan,
    DirectCall,
    FnKey,
    InputFnPlan,
    Mode,
    SourceModule,
    UseSite,
    node_code,
    param_names,
)
from est2tpu.names import dotted
from est2tpu.project import values as value_query
from est2tpu.project.calls import (
    assigned_attributes,
    bind_call,
    body_statements,
    int_subscript,
    returned_call,
    returned_def,
)
from est2tpu.project.facts import ProjectFacts, Scoped
from est2tpu.tfapi import (
    SHIM,
    SPEC_CTORS,
    USE_NAMES,
    call_kind,
)

T = TypeVar("T")
# (scope, name) -> [(position, value)], in source order
Bindings = dict[tuple[str, str], list[tuple[int, T]]]


class TopLevel:
    """The top level of a project module, as the value query reads it from another module
    (`model.MODELS`): names bound once there by an assignment, and its defs."""

    def __init__(self, ix: ProjectFacts, src: SourceModule) -> None:
        self.ix = ix
        self.src = src

    def bound(self, name: str) -> cst.BaseExpression | None:
        if self.src.module_assigns.get(name) != 1:
            return None
        for stmt in self.src.module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and small.targets[0].target.value == name
                ):
                    return small.value
        return None

    def is_definition(self, expr: cst.BaseExpression) -> bool:
        return self.ix.resolve_callable(self.src, "", expr) is not None

    def module_of(self, expr: cst.BaseExpression) -> value_query.Scope | None:
        return None


def unwrap_partial(collector: UseScope | TopLevel, expr: cst.BaseExpression) -> cst.BaseExpression:
    """The function `functools.partial(f, ...)` wraps (`expr` itself when it is no partial),
    read where `collector` stands."""
    if isinstance(expr, cst.Call):
        qn = collector.src.imports.qualify(expr.func)
        if qn == "functools.partial" and expr.args:
            return expr.args[0].value
    return expr


def partial_inner(collector: UseScope, call: cst.Call) -> cst.BaseExpression | None:
    """The function a `functools.partial(f, ...)` call wraps."""
    if collector.src.imports.qualify(call.func) != "functools.partial":
        return None
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    return call.args[0].value


class UseScope(Scoped):
    """One module's bindings at the walk's position: what a name holds there (the value
    query's view from this module), the Estimators and specs it holds, and the model_fn an
    Estimator runs."""

    def __init__(self, indexer: ProjectFacts, src: SourceModule) -> None:
        super().__init__()
        self.ix = indexer
        self.src = src
        # (scope, name) -> its bindings in source order, each with the position it is made
        # at: a name bound twice (the training input, later the evaluation one) means what
        # its live binding says at each use
        self.estimators: Bindings[CallKey | None] = {}
        self.specs: Bindings[tuple[Mode, cst.Call]] = {}
        self.numpy_inputs: Bindings[cst.Call] = {}
        self.values: Bindings[cst.BaseExpression] = {}  # names assigned a call or a lambda
        # names assigned anything (the value query's bindings: `fn = model_fn`,
        # `MODELS = {...}`, `model_fn = a if flag else b`)
        self.assigned: Bindings[cst.BaseExpression] = {}
        self.seq = 0  # position in the walk: calls seen so far
        self.keys = CallKeys(src.path)
        self.node_keys: dict[int, CallKey] = {}  # id(call) -> its key
        # Estimators built with a parameter of the function that builds them as model_fn
        # (`Indexer.bind_builders`)
        # (`Indexer.bind_builders`), or a member of one (`model.model_fn`, `self.model.model_fn`
        # where `__init__` set `self.model = model`): the member read on what each call passes
        self.builder_params: list[
            tuple[cst.Call, CtorPlan, FnKey, str, cst.BaseExpression | None]
        ] = []
        self.assign_targets: dict[int, str] = {}  # id(assigned call) -> target name
        self.pending: list[tuple[str, cst.Call, str | None, Mode, cst.BaseExpression, int]] = []
        self.calls: list[tuple[str, cst.Call]] = []  # calls of project functions, maybe
        self.tande: list[tuple[CallKey, str | None, str, int]] = []  # train_and_evaluate
        self.call_seq: dict[int, int] = {}  # id(call of a project function, maybe) -> position
        # specs project functions return to a train_and_evaluate here: (the spec's site key,
        # TrainSpec/EvalSpec, the function, the estimator's name, scope, position)
        self.helper_specs: list[tuple[tuple[str, str, str], str, str, str, str, int]] = []
        self.lambda_scopes: dict[int, str] = {}  # id(lambda assigned to a name) -> its scope
        # where a name is first assigned in a scope, and where each Estimator is built: a
        # batch size named at the constructor must be bound before it (a notebook cell that
        # builds the Estimator, then sets `train_batch_size = 64`, then the input lambdas)
        self.first_bound: dict[tuple[str, str], int] = {}
        self.module_values: dict[str, cst.BaseExpression] = {}  # `name = <value>` at top level
        self.ctor_seq: dict[CallKey, int] = {}
        # `if`/`else` branches around the walk's position, innermost last: (id(If), 0 in its
        # body, 1 in its else); and the branch each bound value was bound in
        self.branches: list[tuple[int, int]] = []
        self.branch_of: dict[int, tuple[int, int]] = {}
        self.wrapper_problem: str | None = None  # why the model_fn wrapper just seen stays
        # id(a spec as a project function's call makes it) -> the site of the spec it returns
        self.spec_sites: dict[int, tuple[str, str, str]] = {}
        # id(`Estimator(...).train(...)`) -> the name its Estimator is held by, the mode,
        # the input function
        self.chained: dict[int, tuple[str, Mode, cst.BaseExpression]] = {}

    def collect(self) -> None:
        shim = any((target + ".").startswith(SHIM) for target in self.src.imports.bindings.values())
        if shim or self.src.imports.uses(self.src.text, *USE_NAMES):
            walk(self.src.module, self)

    def code(self, node: cst.CSTNode) -> str:
        return node_code(node)

    def visit_If(self, node: cst.If) -> None:
        self.branches.append((id(node), 0))

    def leave_If(self, original_node: cst.If) -> None:
        self.branches.pop()

    def visit_Else(self, node: cst.Else) -> None:
        self.branches[-1] = (self.branches[-1][0], 1)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            for bound in target_names(t.target):
                self.first_bound.setdefault((self.here, bound), self.seq)
            if not self.here and isinstance(t.target, cst.Name):
                self.module_values[t.target.value] = node.value
        if len(node.targets) != 1:
            return
        if isinstance(node.targets[0].target, cst.Name):
            self.bind(self.assigned, node.targets[0].target.value, node.value)
        unpacked = node.targets[0].target
        if isinstance(node.value, cst.Call) and isinstance(unpacked, cst.Tuple):
            # `train_fn, eval_fn = make_input_fns(...)`: each name holds one element of what
            # the call returns (`make_input_fns(...)[0]`, for the input function analysis)
            for i, element in enumerate(unpacked.elements):
                if isinstance(element, cst.StarredElement):
                    break
                if isinstance(element.value, cst.Name):
                    item = cst.Subscript(
                        node.value, [cst.SubscriptElement(cst.Index(cst.Integer(str(i))))]
                    )
                    self.bind(self.values, element.value.value, item)
                    if self.branches:
                        self.branch_of[id(item)] = self.branches[-1]
        if isinstance(node.targets[0].target, cst.Name) and isinstance(
            node.value, (cst.Call, cst.Lambda)
        ):
            self.bind(self.values, node.targets[0].target.value, node.value)
            if isinstance(node.value, cst.Lambda):
                self.lambda_scopes[id(node.value)] = self.here
        if not isinstance(node.value, cst.Call):
            return
        target = dotted(node.targets[0].target)
        if target is None:
            return
        if self.class_of_instance(target) is not None:
            # `self.estimator = self.create_estimator()`: what a method of the class (or a
            # project function) returns, which every method reads
            self.bind(self.values, target, node.value)
            self.bind_attribute(self.values, target, node.value)
        self.assign_targets[id(node.value)] = target
        name = self.src.imports.tf_name(node.value.func)
        if name is None and call_kind(self.src.imports, node.value.func) is None:
            # `estimator = adanet.Estimator(...)` after `estimator = LinearClassifier(...)`:
            # the name no longer holds the Estimator est2tpu built (a project builder's
            # call is still followed through `values`)
            self.bind(self.estimators, target, None)
        if name in SPEC_CTORS:
            self.bind(self.specs, target, (Mode(SPEC_CTORS[name]), node.value))

    def bind(self, table: Bindings[T], name: str, value: T) -> None:
        self.seq += 1  # a binding is a position of its own: a use before it never sees it
        table.setdefault((self.here, name), []).append((self.seq, value))

    def class_of_instance(self, target: str) -> str | None:
        """The class whose instance `target` (`self.estimator`) is an attribute of, when
        this walk is in one of its methods and `self` is the method's first parameter."""
        head, dot, _ = target.partition(".")
        fn = self.src.defs.get(self.here)
        owner = self.here.rpartition(".")[0]
        if not dot or fn is None or not owner or owner in self.src.defs:
            return None
        params = fn.params.params
        if not params or params[0].name.value != head:
            return None
        if any(dotted(d.decorator) in ("staticmethod", "classmethod") for d in fn.decorators):
            return None
        return owner

    def bind_attribute(self, table: Bindings[T], target: str, value: T) -> None:
        """`self.estimator = Estimator(...)` in a method: every method of the class reads
        it (bound at the class's scope, which the methods' lookups reach)."""
        owner = self.class_of_instance(target)
        if owner is not None:
            table.setdefault((owner, target), []).append((self.seq, value))

    def lookup(self, table: Bindings[T], name: str) -> T | None:
        """The binding of `name` live at the current position (`self.seq`).

        In the scope of the use: the last binding before it. In an enclosing scope, which
        runs before or after the function is called: its only binding, or else the last
        one before the use (notebook cells and scripts that call a function right after
        defining it); a use before several bindings is not resolved.
        """
        parts = self.here.split(".") if self.here else []
        for i in range(len(parts), -1, -1):
            bindings = table.get((".".join(parts[:i]), name))
            if not bindings:
                continue
            if i < len(parts) and len(bindings) == 1:
                return bindings[0][1]
            before = [value for seq, value in bindings if seq <= self.seq]
            return before[-1] if before else None
        return None

    def only_binding(self, table: Bindings[T], name: str) -> T | None:
        """`lookup`, when the scope that binds `name` binds it once only."""
        parts = self.here.split(".") if self.here else []
        for i in range(len(parts), -1, -1):
            bindings = table.get((".".join(parts[:i]), name))
            if bindings:
                return self.lookup(table, name) if len(bindings) == 1 else None
        return None

    @contextlib.contextmanager
    def placed(self, scope: str, seq: int) -> Iterator[None]:
        """This collector set where a use it recorded was (its def path and binding order),
        for lookups there; the def path is set back after (the order is not: what comes
        next sets its own)."""
        saved, self.scope = self.scope, scope.split(".") if scope else []
        self.seq = seq
        try:
            yield
        finally:
            self.scope = saved

    def at(self, scope: str, call: cst.Call) -> Self:
        """This collector set where `call` is, as when it was walked."""
        self.scope = scope.split(".") if scope else []
        self.seq = self.call_seq.get(id(call), self.seq)
        return self

    def bound(self, name: str) -> cst.BaseExpression | None:
        return self.lookup(self.assigned, name)

    def is_definition(self, expr: cst.BaseExpression) -> bool:
        return self.ix.resolve_callable(self.src, self.here, expr) is not None

    def module_of(self, expr: cst.BaseExpression) -> value_query.Scope | None:
        name = dotted(expr)
        if name is None or name in self.src.defs:
            return None
        target = self.src.relative.get(name) or self.src.imports.bindings.get(name)
        other = self.ix.module_for(target, self.src.path) if target else None
        if other is None:
            return None
        return TopLevel(self.ix, other)

    def leave_Return(self, original_node: cst.Return) -> None:
        if not self.here or self.here not in self.src.defs:
            return
        value = original_node.value
        key: CallKey | None = None
        if isinstance(value, cst.Call):
            key = self.node_keys.get(id(value))
        elif isinstance(value, cst.Name):
            key = self.lookup(self.estimators, value.value)
        if key is not None and not key[2].startswith("ctor#"):
            key = None
        self.ix.returned_ctors.setdefault((self.src.path, self.here), set()).add(key)

    def estimator_of(self, name: str) -> CallKey | None:
        """The Estimator construction a name holds: assigned here, or returned by the
        project function whose call it was assigned (`estimator = build_estimator(...)`)."""
        self.reach = {}
        key = self.lookup(self.estimators, name)
        if key is not None:
            return key
        value = self.lookup(self.values, name)
        if isinstance(value, cst.Call):
            builder = self.ix.resolve_callable(self.src, self.here, value.func)
            returned = self.ix.returned_ctors.get(builder) if builder is not None else None
            if builder is not None and returned is not None and len(returned) == 1:
                key = next(iter(returned))
                if key is not None:
                    # What the caller passes by name, the builder holds as its parameter
                    # (`build_estimator(config, flags)`: flags.batch_size is reachable there).
                    # So is an attribute it passes (`build_estimator(args.model_dir,
                    # args.batch_size)`) that this function never assigns.
                    caller = self.src.defs.get(self.here)
                    self.reach = {
                        path: param
                        for param, arg in bind_call(self.ix.fn(builder), value).items()
                        if (path := dotted(arg)) is not None
                        and (
                            isinstance(arg, cst.Name)
                            or (caller is not None and path not in assigned_attributes(caller))
                        )
                    }
                return key
        return None

    def numpy_input(self, expr: cst.BaseExpression) -> tuple[cst.Call | None, str]:
        """A numpy_input_fn/pandas_input_fn call used as the input_fn, and its scope."""
        if isinstance(expr, cst.Call) and call_kind(self.src.imports, expr.func) == "numpy":
            return expr, self.here  # TensorFlow's, or the shim's (migrated before)
        if isinstance(expr, cst.Name):
            hit = self.lookup(self.numpy_inputs, expr.value)
            if hit is not None:
                return hit, self.here
        return None, self.here

    def input_fn_key(self, expr: cst.BaseExpression, depth: int = 0) -> FnKey | None:
        """The project def an input_fn argument runs, as `analyse_input_fn` finds it (a def,
        a name bound to one, a factory's closure, a lambda or partial calling one), without
        planning anything."""
        expr = unwrap_partial(self, expr)
        if isinstance(expr, cst.Lambda):
            expr = expr.body.func if isinstance(expr.body, cst.Call) else expr.body
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Call):
            factory = self.ix.resolve_fn(self.src, self.here, expr.value.func)
            index = int_subscript(expr)
            if factory is None or index is None:
                return None
            return returned_def(self.ix, factory, index)
        if isinstance(expr, cst.Call):
            factory = self.ix.resolve_fn(self.src, self.here, expr.func)
            if factory is None and isinstance(expr.func, cst.Attribute):
                # `model.build_model_fn()`: a method of the instance `model` holds
                method = value_query.choices(self, expr.func)
                if len(method) == 1 and method[0][0] is self and method[0][1] is not expr.func:
                    factory = self.ix.resolve_callable(self.src, self.here, method[0][1])
            if factory is None or factory[1] not in self.ix.modules[factory[0]].defs:
                return None
            return returned_def(self.ix, factory)
        key = self.ix.resolve_callable(self.src, self.here, expr)
        if key is None and isinstance(expr, cst.Name) and depth < 4:
            value = self.lookup(self.values, expr.value)
            if value is not None:
                return self.input_fn_key(value, depth + 1)
        return key

    def consumer(self, expr: cst.BaseExpression, what: str) -> None:
        """`expr` (an input function, or what makes one) reaches `what`, which est2tpu
        leaves as it is (InputFnPlan.other_consumers)."""
        key = self.input_fn_key(expr)
        if key is not None:
            self.ix.consumers.setdefault(key, []).append(what)

    def shim_name(self, func: cst.BaseExpression) -> str | None:
        """`premade.DNNClassifier` for `tpu_runtime.premade.DNNClassifier`, and so on."""
        qualified = self.src.imports.qualify(func) or ""
        return qualified[len(SHIM) :] if qualified.startswith(SHIM) else None

    @staticmethod
    def code_of(src: SourceModule, node: cst.CSTNode) -> str:
        return src.module.code_for_node(node)

    @staticmethod
    def forward_params(
        plan: InputFnPlan, site: UseSite, via_lambda: cst.Lambda | None, commit: bool
    ) -> None:
        """The function's own `.batch(N)` becomes params["batch_size"]; a lambda that calls
        it must then hand `params` on."""
        if not commit:
            return
        plan.batch_to_params = True
        if via_lambda is not None:
            plan.needs_params = True
            site.lambda_forward_params = True

    def runs_estimator(self, receiver: str) -> bool:
        """Whether a name may hold an Estimator: one built here, or maybe one a project
        function builds (the value of a call)."""
        held = self.lookup(self.values, receiver)
        return self.lookup(self.estimators, receiver) is not None or isinstance(held, cst.Call)

    def other_branch(self, name: str, value: cst.BaseExpression) -> cst.BaseExpression | None:
        """The value `name` is given in the `if` branch when `value` is its binding in the
        `else` branch of the same `if` (both are live after it)."""
        where = self.branch_of.get(id(value))
        if where is None or where[1] != 1:
            return None
        for (scope, bound), values in self.values.items():
            if bound != name or scope != self.here:
                continue
            for _, other in values:
                if self.branch_of.get(id(other)) == (where[0], 0):
                    return other
        return None

    def problem_count(self, site: UseSite) -> int:
        """The findings planned so far for this site and for the input functions."""
        plans = self.ix.index.input_fns.values()
        return len(site.problems) + sum(len(plan.problems) for plan in plans)

    def direct_calls(self) -> None:
        """Calls the project makes itself of input functions that gain `params`."""
        # Resolving every call could parse modules the index never needed: match names first.
        names = {
            key[1].rpartition(".")[2]
            for key, plan in self.ix.index.input_fns.items()
            if plan.committed and plan.needs_params
        }
        for scope, call in self.calls:
            func = call.func
            short = func.attr.value if isinstance(func, cst.Attribute) else dotted(func)
            if short not in names or id(call) in self.ix.wrapped:
                continue
            key = self.ix.resolve_fn(self.src, scope, call.func)
            plan = self.ix.index.input_fns.get(key) if key is not None else None
            if key is None or plan is None or not plan.committed or not plan.needs_params:
                continue
            fn = self.ix.fn(key)
            if "params" in param_names(fn) or any(a.star for a in call.args):
                continue
            direct = DirectCall()
            name = self.code(call.func)
            if plan.direct and Mode.PREDICT in plan.modes and plan.modes - {Mode.PREDICT}:
                direct.problem = (
                    f"`{name}` gains `params` and `mode` arguments for TPUEstimator, and this "
                    "call passes neither; pass params={'batch_size': ...} and the mode by hand"
                )
            elif plan.batch_param is not None and plan.batch_param in bind_call(fn, call):
                direct.batch = self.code(bind_call(fn, call)[plan.batch_param])
            elif plan.batch_literal is not None:
                direct.batch = plan.batch_literal
            elif (
                plan.batch_code is not None
                and plan.batch_code[1] == self.src.path
                and (
                    not plan.batch_code[2]
                    or scope == plan.batch_code[2]
                    or scope.startswith(plan.batch_code[2] + ".")
                )
            ):
                direct.batch = plan.batch_code[0]
            else:
                direct.problem = (
                    f"`{name}` gains a `params` argument for TPUEstimator, and this call does "
                    "not pass it; pass params={'batch_size': <its batch size>} by hand"
                )
            self.ix.index.direct_calls[(self.src.path, scope, self.code(call))] = direct

    def model_fn_choices(self, expr: cst.BaseExpression) -> list[FnKey] | None:
        """The project defs an Estimator's model_fn argument may run (`model_fn = a if
        flag else b`, `MODELS[FLAGS.model]`: each; an alias: the one it names), or None
        when one of them is not a project def."""
        options = value_query.choices(self, expr)
        # `functools.partial(MODELS[hp.model], lr=...)`: what the partial wraps may be each
        # of several (the partial itself stays, around the converted def)
        expanded: list[value_query.Choice] = []
        for where, option in options:
            inner = (
                unwrap_partial(where, option) if isinstance(where, UseScope | TopLevel) else option
            )
            expanded += (
                value_query.choices(where, inner) if inner is not option else [(where, option)]
            )
        if len(expanded) != len(options) or any(
            e[1] is not o[1] for e, o in zip(expanded, options)
        ):
            options = expanded
        if len(options) == 1 and options[0][1] is expr:
            key = self.model_fn_of(expr)
            return [key] if key is not None else None
        keys = [
            self.model_fn_of(option)
            if where is self
            else self.ix.resolve_callable(where.src, "", option)
            if isinstance(where, TopLevel)
            else None
            for where, option in options
        ]
        if not keys or any(key is None for key in keys):
            return None
        return list(dict.fromkeys(key for key in keys if key is not None))

    def model_fn_of(self, expr: cst.BaseExpression) -> FnKey | None:
        """The project def an Estimator's model_fn argument runs: named (see
        `Indexer.resolve_callable`), wrapped in `functools.partial`, returned by a project
        factory (`make_model_fn(hparams)`: the def it returns), or held in a name bound to
        one of those."""
        expr = unwrap_partial(self, expr)
        key = self.ix.resolve_callable(self.src, self.here, expr)
        if key is not None:
            return key
        if isinstance(expr, cst.Name):
            held = self.lookup(self.values, expr.value)
            if isinstance(held, cst.Call):
                expr = unwrap_partial(self, held)
                key = self.ix.resolve_callable(self.src, self.here, expr)
                if key is not None or expr is not held:
                    return key
        if isinstance(expr, cst.Call):
            factory = self.ix.resolve_fn(self.src, self.here, expr.func)
            if factory is None and isinstance(expr.func, cst.Attribute):
                # `model.build_model_fn()`: a method of the instance `model` holds
                method = value_query.choices(self, expr.func)
                if len(method) == 1 and method[0][0] is self and method[0][1] is not expr.func:
                    factory = self.ix.resolve_callable(self.src, self.here, method[0][1])
            if factory is not None and factory[1] in self.ix.modules[factory[0]].defs:
                return returned_def(self.ix, factory)
        return None

    def wrapped_model_fn(
        self, plan: CtorPlan, expr: cst.BaseExpression, fn_key: FnKey | None
    ) -> FnKey | None:
        """The model_fn a wrapper runs: `lambda features, labels, mode: lr_model_fn(features,
        labels, mode, FLAGS)` (here, or held in a name), or a project def that only returns
        such a call. Its EstimatorSpecs are the ones to convert; the wrapper must take
        TPUEstimator's params and pass them on (`plan.wrapper`, which TPU007 rewrites).
        Anything else: `fn_key`, as resolved."""
        lam: cst.Lambda | None = None
        if isinstance(expr, cst.Lambda):
            lam, scope = expr, self.here
        elif isinstance(expr, cst.Name) and fn_key is None:
            held = self.lookup(self.values, expr.value)
            if isinstance(held, cst.Lambda):
                lam, scope = held, self.lambda_scopes.get(id(held), self.here)
        wrapper: cst.Lambda | cst.FunctionDef
        if lam is not None:
            src, wrapper, key = self.src, lam, (self.src.path, scope, self.code(lam))
            body = lam.body
        elif fn_key is not None:
            src, scope = self.ix.modules[fn_key[0]], fn_key[1]
            fn = self.ix.fn(fn_key)
            key = (fn_key[0], fn_key[1], "")
            returned = returned_call(fn)
            if returned is None or len(body_statements(fn)) != 1:
                return fn_key
            wrapper, body = fn, returned
        else:
            return None
        if not isinstance(body, cst.Call) or any(a.star for a in body.args):
            return fn_key
        if any(list(iter_calls(a.value)) for a in body.args):
            return fn_key  # computes some of the model itself: it is (part of) the model_fn
        inner = self.ix.resolve_callable(src, scope, body.func)
        if inner is None or inner == fn_key:
            return fn_key
        inner_fn = self.ix.fn(inner)
        if isinstance(inner_fn.params.star_arg, cst.Param) or inner_fn.params.star_kwarg:
            return fn_key
        passed = bind_call(inner_fn, body).get("params")
        if "params" in param_names(wrapper):
            if isinstance(passed, cst.Name) and passed.value == "params":
                plan.wrapper = key  # passes them on already (a run before rewrote it)
                return inner
            return fn_key
        if self.ix.facade:
            return inner  # the tf2 facade calls the wrapper as Estimator did: as it is
        read = names_read(wrapper.body)
        if passed is not None or any(n.value == "params" for n in read):
            self.wrapper_problem = (
                f"Estimator left as it is: its model_fn wraps `{self.code(body.func)}`, "
                "which it gives a `params` of its own, and TPUEstimator passes its params "
                "(with the batch size) to the model_fn; rename that argument by hand"
            )
            return inner  # its EstimatorSpecs stay right for the Estimator that stays
        plan.wrapper, plan.wrapper_forwards = key, True
        return inner

    def model_fn_parameter(self, node: cst.Call, plan: CtorPlan, expr: cst.BaseExpression) -> None:
        """`def build_estimator(model_fn, config): return Estimator(model_fn, ...)`: the
        model_fn is what the project's calls of the builder pass (`Indexer.bind_builders`)."""
        fn = self.src.defs.get(self.here)
        if fn is None:
            return
        if not isinstance(expr, cst.Name):
            member = self.parameter_member(fn, expr)
            if member is not None:
                self.builder_params.append((node, plan, *member, expr))
            return
        if expr.value not in param_names(fn):
            return
        if self.lookup(self.values, expr.value) is None:  # not rebound before the Estimator
            self.builder_params.append((node, plan, (self.src.path, self.here), expr.value, None))

    def parameter_member(
        self, fn: cst.FunctionDef, expr: cst.BaseExpression
    ) -> tuple[FnKey, str] | None:
        """`model.model_fn` or `model.build_model_fn()`, where `model` is a parameter of the
        function building the Estimator, or `self.model.<...>`, where the class's `__init__`
        alone sets `self.model = model` from its parameter: that function (or `__init__`)
        and the parameter, whose calls say what `model` is."""
        owner = member_owner(expr)
        if isinstance(owner, cst.Name):
            if owner.value in param_names(fn) and self.lookup(self.assigned, owner.value) is None:
                return (self.src.path, self.here), owner.value
            return None
        path = dotted(owner) if owner is not None else None
        cls = self.class_of_instance(path) if path is not None else None
        init = self.src.defs.get(f"{cls}.__init__") if cls is not None else None
        if path is None or cls is None or init is None:
            return None
        setters = [
            key
            for key, method in self.src.defs.items()
            if key.startswith(f"{cls}.")
            and key.count(".") == cls.count(".") + 1
            and f"{param_names(method)[0] if param_names(method) else ''}.{path.partition('.')[2]}"
            in assigned_attributes(method)
        ]
        if setters != [f"{cls}.__init__"]:
            return None
        param = set_from_parameter(init, path.partition(".")[2])
        return ((self.src.path, f"{cls}.__init__"), param) if param is not None else None


def member_owner(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """What `x.model_fn` or `x.build_model_fn()` (no arguments) reads a member of: `x`."""
    if isinstance(expr, cst.Call) and not expr.args:
        expr = expr.func
    return expr.value if isinstance(expr, cst.Attribute) else None


def rebased(expr: cst.BaseExpression, owner: cst.BaseExpression) -> cst.BaseExpression:
    """`x.model_fn` (or `x.build_model_fn()`) read on `owner` instead of `x`."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        return expr.with_changes(func=expr.func.with_changes(value=owner))
    assert isinstance(expr, cst.Attribute)
    return expr.with_changes(value=owner)


def set_from_parameter(init: cst.FunctionDef, attr: str) -> str | None:
    """The parameter of `__init__` its `self.<attr> = <parameter>` assigns, once, at the top
    of its body (not under a branch)."""
    params = param_names(init)
    if not params or not isinstance(init.body, cst.IndentedBlock):
        return None
    found: list[str] = []
    for stmt in init.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and dotted(small.targets[0].target) == f"{params[0]}.{attr}"
                and isinstance(small.value, cst.Name)
                and small.value.value in params[1:]
            ):
                found.append(small.value.value)
    return found[0] if len(found) == 1 else None
