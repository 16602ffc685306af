"""Builds the project index (`est2tpu.index.ProjectIndex`) from parsed modules: one walk
per module collects defs, constants and relative imports, a second finds the Estimators
and the calls that use them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import PurePath

import libcst as cst

from est2tpu.cstutil import (
    assigned_names,
    gc_paused,
    iter_calls,
)
from est2tpu.index import (
    CallKey,
    FnKey,
    Mode,
    ProjectIndex,
    model_fns_of,
    node_code,
    param_names,
)
from est2tpu.names import dotted
from est2tpu.project.calls import (
    assigned_attributes,
    assigned_in,
    bind_call,
    calls_named,
    reads_params_batch_size,
    reserved_keys_built_in,
)
from est2tpu.project.facts import ProjectFacts, too_deep
from est2tpu.project.scope import rebased, set_from_parameter
from est2tpu.project.train_ops import link_train_ops
from est2tpu.project.uses import UseCollector


class Indexer(ProjectFacts):
    """Builds a ProjectIndex from parsed modules."""

    collectors: Sequence[UseCollector] = ()  # the last build's, one per module

    def build(self) -> ProjectIndex:
        """The index of the modules; a module nested too deeply for LibCST's visitors to
        walk (a valid file of 1,200 adjacent string literals) adds no roles, and the others
        are indexed without it: what its own file becomes is its own file's affair."""
        with gc_paused():
            return self._build_until_settled()

    def _build_until_settled(self) -> ProjectIndex:
        while True:
            try:
                index = self._build()
            except RecursionError:
                deep = {path for path, src in self.modules.items() if too_deep(src.module)}
                if not deep - self.excluded:
                    raise
                self.excluded |= deep
                self._restart()
                continue
            unsized = self.unsized_training()
            refused = self.unselected_conversions() | unsized | self.flags_batch_changed()
            if not refused:
                return index
            self.forced.update(refused)
            self.unsized_forced.update(unsized)
            self._restart()

    def unsized_training(self) -> dict[CallKey, str]:
        """Estimators planned to convert that train, or held by an attribute whose calls the
        index does not see (`self.estimator = Estimator(...)`), with no train batch size found for their TPUEstimator: its examples/sec hook
        multiplies that size, so it crashes on CPU too. They stay as they are; the problems
        their input functions met say why."""
        found: dict[CallKey, str] = {}
        for key, plan in self.index.ctors.items():
            if not plan.convert or key in self.forced:
                continue
            modes = self.ctor_modes.get(key)
            if Mode.TRAIN not in (modes or ()) and (modes or key not in self.attribute_ctors):
                continue
            if plan.batch_sizes.get(Mode.TRAIN) or Mode.TRAIN in plan.unsized_modes:
                continue
            if plan.params_batch is not None:
                continue
            problems = [p for site in self.ctor_sites.get(key, ()) for p in site.problems]
            why = f" ({problems[0]})" if problems else ""
            if modes:
                found[key] = (
                    "Estimator left as it is: a TPUEstimator without train_batch_size fails "
                    "when it trains, on CPU too, and est2tpu finds no batch size for its "
                    f"training input that the constructor can read{why}; convert it by hand"
                )
            else:
                found[key] = (
                    "Estimator left as it is: a TPUEstimator without train_batch_size fails "
                    "when it trains, on CPU too, and est2tpu sees none of its train, evaluate "
                    "or predict calls (they reach it through the attribute that holds it), so "
                    "it finds no batch size for the constructor; convert it by hand, with "
                    "train_batch_size"
                )
        return found

    def flags_batch_changed(self) -> dict[CallKey, str]:
        """Estimators given all the flags as params (`vars(args)`) whose model_fn reads
        params["batch_size"], which the TPUEstimator fills from its batch sizes: an input
        function batching by another size than that flag would change what the model_fn
        reads, so the Estimator stays as it is."""
        found: dict[CallKey, str] = {}
        for key, plan in self.index.ctors.items():
            if not plan.convert or key in self.forced or plan.flags_batch is None:
                continue
            others = sorted(
                code
                for code in {b.code for sizes in plan.batch_sizes.values() for b in sizes}
                if code != plan.flags_batch and not self.passed_flag(key, code, plan.flags_batch)
            )
            if others:
                found[key] = (
                    "Estimator left as it is: its params hold every flag, 'batch_size' among "
                    "them, a key TPUEstimator reserves and fills with its own batch sizes, and "
                    f"the model_fn reads params['batch_size'] ({plan.flags_batch}) while an "
                    f"input function batches by {others[0]}; TPUEstimator would hand the "
                    "model_fn that size instead. Convert it by hand"
                )
        return found

    def passed_flag(self, key: CallKey, code: str, flag: str) -> bool:
        """Whether `self.<attr>` (`code`), read in a method of the class that builds the
        Estimator `key`, is the flag `flag` (`args.batch_size`): `__init__` alone sets it, from
        its parameter, and every call of the class, in the Estimator's module, passes `flag`
        with the module's own binding of its name."""
        path, scope, _ = key
        cls, _, _ = scope.rpartition(".")
        _, dot, attr = code.partition(".")
        src = self.modules[path]
        init = src.defs.get(f"{cls}.__init__")
        if not cls or not dot or "." in attr or init is None or not self.collectors:
            return False
        param = set_from_parameter(init, attr)
        methods = [
            m for name, m in src.defs.items() if name.rpartition(".")[0] == cls and m is not init
        ]
        if param is None or any(code in assigned_attributes(m) for m in methods):
            return False
        head = flag.partition(".")[0]
        passed = list(self.builder_calls(self.collectors, (path, f"{cls}.__init__"), param))
        for at, where, bound in passed:
            caller = at.src.defs.get(where)
            if (
                at.src.path != path
                or bound is None
                or node_code(bound) != flag
                or (caller is not None and head in assigned_in(caller) | set(param_names(caller)))
            ):
                return False
        return bool(passed)

    def unselected_conversions(self) -> dict[CallKey, str]:
        """Estimators the run makes TPUEstimators of (TPU007 is on where they are built)
        while the selection switches off a rewrite they need in another file: TPU006 where
        the model_fn is, TPU005 and TPU013 where the input functions are. A TPUEstimator
        without them crashes (an input function without params, an EstimatorSpec on TPU),
        so the Estimator stays as it is. (With TPU007 off, the run makes no TPUEstimator:
        its other rewrites are a partial migration that a run with TPU007 completes.)"""
        if self.switched_off is None:
            return {}
        found: dict[CallKey, str] = {}
        for key, plan in self.index.ctors.items():
            if not plan.convert or key in self.forced or self.switched_off(key[0], "TPU007"):
                continue
            needs: list[tuple[str, tuple[str, ...]]] = [
                (fn[0], ("TPU006",)) for fn in model_fns_of(plan)
            ]
            needs += [(path, ("TPU005", "TPU013")) for path in sorted(self.ctor_files.get(key, ()))]
            for path, rules in needs:
                off = [r for r in rules if self.switched_off(path, r)]
                if off:
                    found[key] = (
                        f"Estimator left as it is: the rule selection switches off "
                        f"{', '.join(off)} in {PurePath(path).name}, whose rewrites a "
                        "TPUEstimator of it needs (without them it crashes when it runs); "
                        f"select {', '.join(off)} there, or convert it by hand"
                    )
                    break
        return found

    def _restart(self) -> None:
        """Forget what a build learned; keep the parsed modules but the excluded ones."""
        kept = {p: m for p, m in self.modules.items() if p not in self.excluded}
        claimed, excluded = self.claimed, self.excluded
        forced, unsized_forced = self.forced, self.unsized_forced
        Indexer.__init__(
            self,
            list(kept.values()),
            use_runtime=self.use_runtime,
            follow_helpers=self.follow_helpers,
            unread=self.unread,
            switched_off=self.switched_off,
        )
        self.claimed = {
            name: [p for p in paths if p not in excluded] for name, paths in claimed.items()
        }
        self.excluded, self.forced, self.unsized_forced = excluded, forced, unsized_forced

    def _build(self) -> ProjectIndex:
        collectors = [UseCollector(self, src) for src in self.modules.values()]
        self.collectors = collectors
        self.node_keys = {c.src.path: c.node_keys for c in collectors}
        for collector in collectors:
            collector.collect()
        self.bind_builders(collectors)
        if not self.facade:  # (the tf2 facade reserves no params key)
            self.refuse_reserved_keys_passed_in(collectors)
            for collector in collectors:
                collector.refuse_batch_size_in_unread_params()
        if not self.use_runtime:
            for collector in collectors:
                collector.refuse_shim_only_uses()
        # A model_fn shared with an Estimator that stays must stay too: a plain Estimator
        # rejects TPUEstimatorSpec.
        kept = {
            key
            for p in self.index.ctors.values()
            if not p.convert and not p.tpu
            for key in model_fns_of(p)
        }
        for plan in self.index.ctors.values():
            if plan.convert and kept.intersection(model_fns_of(plan)):
                plan.convert = False
                plan.refusal = (
                    "Estimator left as it is: its model_fn is shared with an Estimator that "
                    "cannot be converted"
                )
        for plan in self.index.ctors.values():
            if (
                plan.wrapper_forwards
                and plan.wrapper
                and plan.model_fn
                and (plan.convert or plan.tpu)
            ):
                self.index.model_fn_wrappers[plan.wrapper] = plan.model_fn
        self.index.model_fns = {
            key for p in self.index.ctors.values() if p.convert or p.tpu for key in model_fns_of(p)
        }
        for (path, _, _), plan in self.index.ctors.items():
            for key in model_fns_of(plan):
                if key in kept and key not in self.index.model_fns:
                    self.index.kept_model_fns.setdefault(key, set()).add(path)
        for collector in collectors:
            collector.finish()
        self.check_batch_helpers()
        for collector in collectors:
            collector.direct_calls()
            collector.passed_on()
        for key, consumers in self.consumers.items():
            if key in self.index.input_fns:
                self.index.input_fns[key].other_consumers = list(dict.fromkeys(consumers))
        if not self.facade:  # TPU004 runs for TPUEstimator only
            self.index.train_op_links = link_train_ops(self, self.index.model_fns)
        if self.follow_helpers:
            self.index.model_fn_helpers = (
                self.helpers_of(
                    {
                        key
                        for p in self.index.ctors.values()
                        if not p.keras and not p.premade
                        for key in model_fns_of(p)
                    }
                    | self.metric_fns
                )
                | self.metric_fns
            )
        return self.index

    def check_batch_helpers(self) -> None:
        """A helper that makes input functions' batches and that the project also uses as an
        input function itself would read params["batch_size"] twice over: those input
        functions stay as they are, with a finding. A helper that returns one-shot iterator
        tensors returns its dataset once it feeds a TPUEstimator: every call the project makes
        of it must be an input function's return, or the helper stays as it is and a finding
        says why."""
        helpers = self.index.batch_helpers
        shared = [key for key in helpers if key in self.index.input_fns]
        blocked = {caller for key in shared for caller in helpers[key].callers}
        grown = True
        while grown:  # every input function of a chain with a blocked one stays too
            touched = [h for h in helpers.values() if h.callers & blocked]
            grown = any(not h.callers <= blocked for h in touched)
            blocked.update(c for h in touched for c in h.callers)
        for caller in blocked:
            plan = self.index.input_fns[caller]
            plan.helper_call = None
            plan.problems.append(
                "the input function batches in a helper that the project passes as an input "
                f"function too ({', '.join(f'`{k[1]}`' for k in shared)}: it reads "
                "params['batch_size'] itself): give this one params['batch_size'] for the "
                "helper's batch size by hand"
            )
        self.index.batch_helpers = {k: h for k, h in helpers.items() if not h.callers & blocked}
        for key, helper in self.index.batch_helpers.items():
            if not helper.return_dataset:
                continue
            short = key[1].rpartition(".")[2]
            outside = self.unread_mention(short)
            for src in self.mentioning(short):
                for scope, call in calls_named(src, short):
                    if self.resolve_fn(src, scope, call.func) != key:
                        continue
                    caller = (src.path, scope)
                    user = self.index.input_fns.get(caller)
                    if caller not in helper.callers or user is None or not user.committed:
                        outside = True
            if not outside:
                continue
            helper.return_dataset = False
            for caller in helper.callers:
                self.index.input_fns[caller].problems.append(
                    f"`{key[1]}`, whose value the input function returns, returns tensors "
                    "from a one-shot iterator, and the project calls it elsewhere too: "
                    "TPUEstimator's PER_HOST_V2 input (est2tpu's TPU RunConfig) needs the "
                    "tf.data.Dataset itself on TPU; return the batched dataset from a "
                    "function of its own by hand"
                )

    def bind_builders(self, collectors: Sequence[UseCollector]) -> None:
        """An Estimator whose model_fn is a parameter of the function that builds it runs
        what the project's calls of that function pass: one def of the project at every
        call, or the Estimator stays as it is."""
        for owner, node, plan, builder, param, member in (
            (c, *params) for c in collectors for params in c.builder_params
        ):
            short = builder[1].rpartition(".")[2]
            passed: set[FnKey | None] = set()
            for at, _scope, bound in self.builder_calls(collectors, builder, param):
                if bound is not None and member is not None:
                    # `self.model.model_fn`: the member of what this call passes as `model`
                    keys = at.model_fn_choices(rebased(member, bound))
                    passed.add(keys[0] if keys is not None and len(keys) == 1 else None)
                else:
                    passed.add(at.model_fn_of(bound) if bound is not None else None)
            if plan.tpu:
                plan.model_fn = next(iter(passed)) if len(passed) == 1 else None
                continue
            if len(passed) != 1 or None in passed:
                if len(passed) > 1 and None not in passed:
                    what = f"the parameter `{param}` of `{short}`"
                    if member is not None:
                        cls = builder[1].rpartition(".")[0] if short == "__init__" else ""
                        what = (
                            f"`{node_code(member)}`, a member of {what}"
                            if not cls
                            else f"`{node_code(member)}`, a member of what `{cls}(...)` is "
                            f"given as `{param}`"
                        )
                    plan.refusal = (
                        f"Estimator left as it is: its model_fn is {what}, and the project's "
                        "calls pass different functions; build one TPUEstimator per model_fn "
                        "by hand"
                    )
                continue
            plan.model_fn = next(iter(passed))
            assert plan.model_fn is not None
            plan.model_fn_reads_batch_size = reads_params_batch_size(self.fn(plan.model_fn))
            plan.refusal = owner.ctor_refusal(node, plan)
            plan.convert = plan.refusal is None

    def refuse_reserved_keys_passed_in(self, collectors: Sequence[UseCollector]) -> None:
        """An Estimator whose params are a parameter of the function that builds it
        (`def get_estimator(name, config, params): ... Estimator(model_fn, params=params)`)
        gets what the project's calls of that function pass. Where one of them passes an
        object built with a reserved key (`HParams(..., batch_size=64)`, `dict(batch_size=
        64)`, `{"batch_size": 64}`, here or bound to a name once before the call),
        TPUEstimator raises ValueError when it is built: the Estimator stays as it is."""
        for plan, builder, param in self.params_params:
            if not plan.convert:
                continue
            short = builder[1].rpartition(".")[2]
            for at, scope, bound in self.builder_calls(collectors, builder, param):
                value = bound
                if isinstance(bound, cst.Name):
                    value = at.lookup(at.values, bound.value)
                    caller = at.src.defs.get(scope)
                    held = assigned_names(caller).get(bound.value, []) if caller else []
                    if value is None and len(held) == 1:
                        value = held[0]  # `params = {"batch_size": 16, ...}`, once
                reserved = reserved_keys_built_in(value)
                if reserved and plan.convert:
                    given = (
                        f"`{bound.value}`, an object"
                        if isinstance(bound, cst.Name)
                        else "an object"
                    )
                    plan.convert = False
                    plan.refusal = (
                        f"Estimator left as it is: its params are `{param}`, a parameter "
                        f"of `{short}`, which a call in {PurePath(at.src.path).name} "
                        f"gives {given} built with {', '.join(map(repr, reserved))}, a "
                        "key TPUEstimator reserves "
                        "(it raises ValueError when it is built): build the TPUEstimator "
                        "with params without it (tpu_runtime.params_without_batch_size"
                        "(...): a dict or an HParams) and that size as its "
                        "train/eval/predict_batch_size, and read the batch size from the "
                        "params TPUEstimator hands the input functions, by hand"
                    )

    def builder_calls(
        self, collectors: Sequence[UseCollector], builder: FnKey, param: str
    ) -> Iterator[tuple[UseCollector, str, cst.BaseExpression | None]]:
        """The project's calls of a function that builds an Estimator (`bind_builders`,
        `refuse_reserved_keys_passed_in`): each call's collector, set where the call is (see
        `UseCollector.at`; set back after its calls), the call's scope, and what the call
        passes as `param`."""
        builder_fn = self.fn(builder)
        short = builder[1].rpartition(".")[2]
        cls, _, method = builder[1].rpartition(".")
        if method == "__init__":
            short = cls.rpartition(".")[2]  # `Trainer(...)` runs `Trainer.__init__`
        for collector in collectors:
            saved = collector.scope, collector.seq
            try:
                for scope, call in collector.calls:
                    func = call.func
                    name = func.attr.value if isinstance(func, cst.Attribute) else dotted(func)
                    passing = call
                    if method == "__init__" and name == short:
                        func = cst.Attribute(func, cst.Name("__init__"))
                        passing = call.with_changes(func=func)  # arguments fill after self
                        if collector.ix.resolve_callable(collector.src, scope, func) != builder:
                            continue
                    elif (
                        name != short
                        or collector.ix.resolve_fn(collector.src, scope, func) != builder
                    ):
                        continue
                    bound = bind_call(builder_fn, passing).get(param)
                    yield collector.at(scope, call), scope, bound
            finally:
                collector.scope, collector.seq = saved

    def helpers_of(self, roots: set[FnKey]) -> set[FnKey]:
        """Project defs the roots call by a name this index resolves, transitively."""
        found: set[FnKey] = set()
        todo = list(roots)
        while todo:
            key = todo.pop()
            src = self.modules.get(key[0])
            fn = src.defs.get(key[1]) if src is not None else None
            if src is None or fn is None:
                continue
            for call in iter_calls(fn, into_defs=True):
                callee = self.resolve_fn(src, key[1], call.func)
                if callee is not None and callee not in found and callee not in roots:
                    found.add(callee)
                    todo.append(callee)
        return found
