"""Estimator construction sites: what keeps a construction from becoming a TPUEstimator
(its params, its config, its model_fn), and TPUEstimators already in the source."""

from __future__ import annotations

import re

import libcst as cst

from est2tpu.cstutil import (
    iter_calls,
    literal_text,
    name_count,
    names_read,
    target_names,
    walk,
)
from est2tpu.index import (
    CtorPlan,
    Mode,
    call_arg,
    param_names,
)
from est2tpu.names import ImportTable, dotted
from est2tpu.project.calls import dict_keys, same_at_ctor
from est2tpu.project.scope import UseScope
from est2tpu.tfapi import (
    is_run_config_call,
)

# a flag or command-line argument named batch_size (absl's DEFINE_*, argparse's add_argument)
BATCH_SIZE_FLAG = re.compile(r"""\(\s*(["'])(--)?batch_size\1""")


def config_argument(imports: ImportTable, node: cst.Call) -> cst.Arg | None:
    """An Estimator construction's `config` argument: the keyword, or the third positional
    argument of `tf.estimator.Estimator`."""
    position = 2 if imports.tf_name(node.func) == "estimator.Estimator" else None
    return call_arg(node, "config", position)


def config_of(imports: ImportTable, node: cst.Call) -> str | None:
    """What `CtorPlan.config` says of this construction's `config` argument: "()" for a
    call written there, the name for a name, None for no argument or another expression."""
    arg = config_argument(imports, node)
    if arg is not None and isinstance(arg.value, cst.Call):
        return "()"
    if arg is not None and isinstance(arg.value, cst.Name):
        return arg.value.value
    return None


class CtorSites(UseScope):
    """An Estimator's construction: what keeps it from converting, and a TPUEstimator
    built in the source."""

    def ctor_plan(self, node: cst.Call) -> CtorPlan:
        """The plan of the Estimator construction `node`, with its `config` argument."""
        plan = self.ix.index.ctors.setdefault(self.node_keys[id(node)], CtorPlan())
        plan.config = config_of(self.src.imports, node)
        return plan

    def ctor_refusal(self, node: cst.Call, plan: CtorPlan) -> str | None:
        """Why this Estimator cannot become a TPUEstimator, or None."""
        if self.wrapper_problem is not None:
            problem, self.wrapper_problem = self.wrapper_problem, None
            return problem
        if plan.model_fn is None:
            return (
                "Estimator left as it is: its model_fn is not a function defined in this "
                "project, so its EstimatorSpecs cannot be converted; build a TPUEstimator "
                "by hand"
            )
        if any(a.star for a in node.args):
            return "Estimator built from *args/**kwargs; convert it by hand"
        params = call_arg(node, "params", 3)
        literal = params.value if params is not None else None
        binding: tuple[str, str, cst.FunctionDef | cst.Module] | None = None
        if isinstance(literal, cst.Name):
            binding, literal = self.params_dict(node, literal.value)
        plan.params_keys = dict_keys(literal) if params is not None else frozenset()
        flags = self.flags_holder(literal) if isinstance(literal, cst.Call) else None
        if flags is not None and (binding is not None or self.defines_batch_size_flag(flags)):
            # `params = FLAGS.flag_values_dict()` / `vars(args)`, with a batch_size flag: the
            # TPUEstimator gets a copy without the key, and fills it from its batch sizes
            assert isinstance(literal, cst.Call)
            plan.params_copy = binding[1] if binding is not None else self.code(literal)
            if plan.model_fn_reads_batch_size:
                if self.ix.mentioning("export_saved") or self.ix.mentioning("export_savedmodel"):
                    return (
                        "params holds every flag, 'batch_size' among them, a key TPUEstimator "
                        "reserves and fills when it trains, evaluates and predicts, not when "
                        "it exports, and the model_fn reads it; hand the model_fn the batch "
                        "size another way by hand"
                    )
                plan.flags_batch = f"{self.code(flags)}.batch_size"
                plan.params_batch = plan.flags_batch
        if isinstance(literal, cst.Dict):
            reserved = sorted(
                str(literal_text(el.key))
                for el in literal.elements
                if isinstance(el, cst.DictElement)
                and isinstance(el.key, cst.SimpleString)
                and literal_text(el.key) in ("batch_size", "context")
            )
            if "context" in reserved or (reserved and plan.model_fn_reads_batch_size):
                return (
                    f"params uses the key(s) {', '.join(map(repr, reserved))} that "
                    "TPUEstimator reserves (and the model_fn reads them, which breaks "
                    "export); rename them and their readers by hand"
                )
            if reserved and binding is not None:
                scope, name, fn = binding
                value = next(
                    el.value
                    for el in literal.elements
                    if isinstance(el, cst.DictElement)
                    and isinstance(el.key, cst.SimpleString)
                    and literal_text(el.key) == "batch_size"
                )
                if name_count(fn, name, keywords=False) == 2 and same_at_ctor(fn, value):
                    plan.params_binding = (scope, name)
                    plan.params_batch = self.code(value)
                else:
                    # Read elsewhere too (`steps = n // params["batch_size"]`): the dict
                    # keeps its key, and the TPUEstimator gets a copy without it, made
                    # where the Estimator copied the dict it was given.
                    plan.params_copy = name
                    plan.params_batch = f'{name}["batch_size"]'
        # (the tf2 facade reserves no key; a name bound to the flags' dict lost its key above)
        flags_call, flagged = (
            self.reserved_flags(params.value)
            if params
            and not self.ix.facade
            and plan.params_copy is None
            and plan.params_binding is None
            else ("", [])
        )
        if flagged:
            return (
                f"params is `{flags_call}`, the values of the flags, which hold "
                f"{', '.join(map(repr, flagged))}, a key TPUEstimator reserves (it raises "
                "ValueError); pass params without it (TPUEstimator's params['batch_size'] "
                "is the per-shard batch size) by hand"
            )
        config = call_arg(node, "config", 2)
        if config is not None and not self.ix.use_runtime and not plan.config_is_run_config:
            return (
                "the config's type cannot be seen here and --no-runtime forbids "
                "tpu_runtime.ensure_tpu_run_config; pass a tf.compat.v1.estimator.tpu.RunConfig "
                "by hand"
            )
        return None

    def params_dict(
        self, node: cst.Call, name: str
    ) -> tuple[tuple[str, str, cst.FunctionDef | cst.Module] | None, cst.Dict | cst.Call | None]:
        """What `name` is bound to, once, where the Estimator `node` is built (its function,
        or the module): a dict literal, or a dict of the program's flags
        (`FLAGS.flag_values_dict()`, `vars(args)`) when the module defines a batch_size
        flag. Not when anything else binds the name or takes keys out of the dict."""
        key = self.node_keys.get(id(node))
        scope = key[1] if key is not None else ""
        fn: cst.FunctionDef | cst.Module
        if scope in self.src.defs:
            fn = self.src.defs[scope]
        elif not scope and self.src.module_assigns.get(name) == 1:
            fn = self.src.module  # a script's or a notebook's params, bound once
        else:
            return None, None
        bound: list[cst.BaseExpression] = []

        class V(cst.CSTVisitor):
            def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
                return inner is fn

            def visit_ClassDef(self, inner: cst.ClassDef) -> bool:
                return False

            def visit_Assign(self, assign: cst.Assign) -> None:
                if any(name in target_names(t.target) for t in assign.targets):
                    bound.append(assign.value)

            def visit_AugAssign(self, node: cst.AugAssign) -> None:
                if name in target_names(node.target):
                    bound.append(node.value)

            def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
                if name in target_names(node.target):
                    bound.append(node.annotation.annotation)

            def visit_For(self, node: cst.For) -> None:
                if name in target_names(node.target):
                    bound.append(node.iter)

            def visit_AsName(self, node: cst.AsName) -> None:
                if name in target_names(node.name):
                    bound.append(node.name)

            def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
                if name in target_names(node.target):
                    bound.append(node.value)

            def visit_Del(self, node: cst.Del) -> None:
                if name in {n.value for n in names_read(node.target)}:
                    bound.append(node.target)

            def visit_Call(self, node: cst.Call) -> None:
                func = node.func
                if (
                    isinstance(func, cst.Attribute)
                    and isinstance(func.value, cst.Name)
                    and func.value.value == name
                    and func.attr.value in ("pop", "popitem", "clear", "update")
                ):
                    bound.append(node)

        walk(fn, V())
        if len(bound) != 1 or (isinstance(fn, cst.FunctionDef) and name in param_names(fn)):
            return None, None
        value = bound[0]
        if isinstance(value, cst.Dict):
            return (scope, name, fn), value
        flags = isinstance(value, cst.Call) and (
            (
                not value.args
                and isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "flag_values_dict"
            )
            or (
                dotted(value.func) == "vars"
                and len(value.args) == 1
                and "vars" not in self.src.imports.bindings
            )
        )
        if isinstance(value, cst.Call) and flags and BATCH_SIZE_FLAG.search(self.src.text):
            return (scope, name, fn), value
        return None, None

    def defines_batch_size_flag(self, holder: cst.BaseExpression) -> bool:
        """Whether the module that makes the flags `holder` holds (this one, or the project
        module it is imported from: `from settings import args`) defines a batch_size flag."""
        if BATCH_SIZE_FLAG.search(self.src.text):
            return True
        head = (dotted(holder) or "").partition(".")[0]
        target = self.src.relative.get(head) or self.src.imports.bindings.get(head)
        module = self.ix.module_for(target.rpartition(".")[0], self.src.path) if target else None
        return module is not None and BATCH_SIZE_FLAG.search(module.text) is not None

    def flags_holder(self, call: cst.Call) -> cst.BaseExpression | None:
        """The object whose values a dict of the program's flags is made of: `args` in
        `vars(args)`, `FLAGS` in `FLAGS.flag_values_dict()`; None for another call."""
        func = call.func
        if (
            not call.args
            and isinstance(func, cst.Attribute)
            and func.attr.value == "flag_values_dict"
        ):
            return func.value
        if (
            dotted(func) == "vars"
            and len(call.args) == 1
            and not call.args[0].keyword
            and not call.args[0].star
            and "vars" not in self.src.imports.bindings
        ):
            return call.args[0].value
        return None

    def reserved_flags(self, expr: cst.BaseExpression) -> tuple[str, list[str]]:
        """The keys TPUEstimator reserves that `FLAGS.flag_values_dict()` (passed as params,
        or a name bound to it) holds: the flags this module defines under those names; and
        that call's code."""
        held: cst.BaseExpression | None = expr
        if isinstance(expr, cst.Name):
            held = self.lookup(self.values, expr.value)
        if not (
            isinstance(held, cst.Call)
            and isinstance(held.func, cst.Attribute)
            and held.func.attr.value == "flag_values_dict"
        ):
            return "", []
        receiver = held.func.value
        if isinstance(receiver, cst.Name) and receiver.value in self.module_values:
            receiver = self.module_values[receiver.value]
        if not (self.src.imports.qualify(receiver) or "").endswith("flags.FLAGS"):
            return "", []
        defined: set[str] = set()
        for call in iter_calls(self.src.module):
            qualified = self.src.imports.qualify(call.func) or ""
            module, _, define = qualified.rpartition(".")
            first = call.args[0].value if call.args else None
            if (
                module.endswith("flags")
                and define.startswith("DEFINE_")
                and isinstance(first, cst.SimpleString)
            ):
                defined.add(str(literal_text(first)))
        return self.code(held), sorted(defined & {"batch_size", "context"})

    def is_run_config(self, expr: cst.BaseExpression) -> bool:
        """A RunConfig call, its `.replace(...)`, or a name assigned one in this module."""
        if isinstance(expr, cst.Call):
            if is_run_config_call(self.src.imports, expr):
                return True
            func = expr.func
            return (
                isinstance(func, cst.Attribute)
                and func.attr.value == "replace"
                and self.is_run_config(func.value)
            )
        return isinstance(expr, cst.Name) and expr.value in self.src.run_config_vars

    def tpu_ctor(self, node: cst.Call, plan: CtorPlan) -> None:
        """What an existing TPUEstimator construction says about its input functions."""
        for mode in Mode:
            size = call_arg(node, f"{mode.value}_batch_size", None)
            if size is not None:
                plan.tpu_batch_sizes[mode] = self.code(size.value)
        for keyword, modes in (("use_tpu", set(Mode)), ("eval_on_tpu", {Mode.EVAL})):
            arg = call_arg(node, keyword, None)
            if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False":
                plan.off_tpu |= modes
        use_tpu = call_arg(node, "use_tpu", None)
        func = use_tpu.value.func if use_tpu and isinstance(use_tpu.value, cst.Call) else None
        if func is not None and (
            self.shim_name(func) == "use_tpu"
            # its --no-runtime stand-in, a def of this module
            or (
                isinstance(func, cst.Name)
                and func.value == "_est2tpu_use_tpu"
                and func.value in self.src.defs
            )
        ):
            # On a TPU exactly when the runtime finds one: the value est2tpu builds a
            # TPUEstimator with, and the drop_remainder it gives helpers with no params.
            plan.as_migrated = True
