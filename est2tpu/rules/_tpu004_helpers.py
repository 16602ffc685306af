"""The module-level defs a model_fn calls to build its train op (`train_op =
make_train_op(loss)`, where the def creates a TF1 optimizer and calls `minimize` itself):
TPU004 wraps their optimizer under a keyword-only flag, False by default, that the model_fns
TPUEstimator runs pass as `params["use_tpu"]`. Any other caller (a plain Estimator's
model_fn, a script, another module) passes nothing and runs the def as before. Not a rule
(the registry skips `_` modules)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from est2tpu.cstutil import assigned_names, iter_calls, walk
from est2tpu.names import dotted
from est2tpu.rule import Rule
from est2tpu.rules._tpu004_train_ops import api_name, is_tf1_optimizer_class

OPTIMIZER_METHODS = frozenset({"minimize", "compute_gradients", "apply_gradients"})
_BUILDERS = ("optimize_loss", "create_train_op")
_CROSS_SHARD = "CrossShardOptimizer"


class TrainOpHelpers:
    """The module's defs that TPU model_fns call by name, and the flag of each migrated one."""

    def __init__(self, module: cst.Module, path: str, model_fns: set[tuple[str, str]]) -> None:
        counts: dict[str, int] = {}
        defs: dict[str, cst.FunctionDef] = {}
        alias_of: dict[str, str] = {}
        for stmt in module.body:
            if isinstance(stmt, cst.FunctionDef):
                defs[stmt.name.value] = stmt
                counts[stmt.name.value] = counts.get(stmt.name.value, 0) + 1
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    for name in _bound(small):
                        counts[name] = counts.get(name, 0) + 1
                    if (
                        isinstance(small, cst.Assign)
                        and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)
                        and isinstance(small.value, cst.Name)
                    ):
                        alias_of[small.targets[0].target.value] = small.value.value
        scopes = {scope for at, scope in model_fns if at == path}
        # defs bound once at module level (a def redefined or reassigned is not followed)
        self.defs = {n: fn for n, fn in defs.items() if counts[n] == 1 and n not in scopes}
        # `make = make_train_op`, bound once: calls of `make` are calls of the def
        self.aliases = {a: d for a, d in alias_of.items() if counts.get(a) == 1 and d in self.defs}
        self.model_fns = _defs_at(module, scopes)
        # def name -> the keyword-only flag its wrap tests
        self.flags: dict[str, str] = {}
        for name, fn in self.defs.items():
            flag = _migrated_flag(fn)
            if flag is not None:
                self.flags[name] = flag
        self.migrated: dict[int, cst.FunctionDef] = {}  # id(original def) -> migrated def
        self._locals: dict[int, set[str]] = {}  # id(model_fn) -> its local names

    def resolve(self, model_fn: cst.FunctionDef, func: cst.BaseExpression) -> str | None:
        """The module-level def a call in the model_fn names (not a local of the model_fn)."""
        if not isinstance(func, cst.Name):
            return None
        locals_ = self._locals.get(id(model_fn))
        if locals_ is None:
            locals_ = self._locals[id(model_fn)] = set(assigned_names(model_fn))
        if func.value in locals_:
            return None
        name = self.aliases.get(func.value, func.value)
        return name if name in self.defs else None

    def candidates(self) -> dict[str, cst.FunctionDef]:
        """The defs the module's TPU model_fns call by name."""
        found: dict[str, cst.FunctionDef] = {}
        for fn in self.model_fns:
            for call in iter_calls(fn):
                name = self.resolve(fn, call.func)
                if name is not None:
                    found[name] = self.defs[name]
        return found

    def calls_to_flag(self, model_fn: cst.FunctionDef) -> list[cst.Call]:
        """The model_fn's calls of migrated defs that do not pass the flag yet."""
        return [
            call
            for call in iter_calls(model_fn)
            if (name := self.resolve(model_fn, call.func)) in self.flags
            and _flaggable(call, self.flags[name])
        ]

    def pass_flag(
        self,
        statements: list[cst.BaseStatement],
        model_fn: cst.FunctionDef,
        test: cst.BaseExpression,
    ) -> list[cst.BaseStatement]:
        """The model_fn's statements with `flag=<test>` added to its calls of migrated defs."""
        helpers = self

        class Pass(cst.CSTTransformer):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

            def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
                name = helpers.resolve(model_fn, updated_node.func)
                flag = helpers.flags.get(name or "")
                if flag is None or not _flaggable(updated_node, flag):
                    return updated_node
                return updated_node.with_changes(args=_with_keyword(updated_node.args, flag, test))

        block = cst.IndentedBlock(body=statements).visit(Pass())
        assert isinstance(block, cst.IndentedBlock)
        return list(block.body)

    def refuse_unwrappable(self, rule: Rule, model_fn: cst.FunctionDef) -> None:
        """A TF1 optimizer created in the arguments of a call that is not TensorFlow's
        (`make_train_op(loss, tf.compat.v1.train.AdamOptimizer(0.1))`): the callee uses it
        where the model_fn cannot wrap it."""
        for call in iter_calls(model_fn):
            if (
                rule.tf_name(call.func) is not None
                or (dotted(call.func) or "").rpartition(".")[2] in _BUILDERS
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


def refuse_unfollowed(rule: Rule, model_fn: cst.FunctionDef, bindings: dict[str, str]) -> None:
    """A model_fn that trains with no optimizer call of its own and whose EstimatorSpec's
    train_op comes from an imported function (`train_op = optimization.make_train_op(loss)`,
    directly or through a name bound once): that function builds the train op where the rule
    does not follow it. A call that passes anything named `use_tpu` is taken to handle TPU."""
    locals_ = assigned_names(model_fn)
    sources: list[cst.Call] = []
    for call in iter_calls(model_fn):
        func = call.func
        name = dotted(func) or ""
        if (
            isinstance(func, cst.Attribute) and func.attr.value in OPTIMIZER_METHODS
        ) or name.rpartition(".")[2] in _BUILDERS:
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
        called = dotted(source.func)
        if (
            called is None
            or rule.tf_name(source.func) is not None
            or called.split(".")[0] not in bindings
            or called.split(".")[0] in locals_
            or _mentions_use_tpu(source)
        ):
            continue
        rule.refuse(
            source,
            f"the train op comes from `{called}`, imported, which est2tpu does not follow: if it "
            "builds a TF1 optimizer, wrap that in tf.compat.v1.tpu.CrossShardOptimizer when "
            "params['use_tpu'] is true (pass params['use_tpu'] to it), or on TPU each core "
            "applies its own gradients",
        )


def _mentions_use_tpu(call: cst.Call) -> bool:
    for node in iter_calls(call, into_defs=True):
        for arg in node.args:
            if "use_tpu" in cst.Module([]).code_for_node(arg.value) or (
                arg.keyword is not None and "use_tpu" in arg.keyword.value
            ):
                return True
    return False


def builds_an_optimizer(rule: Rule, fn: cst.FunctionDef) -> bool:
    """Does the def (not its nested defs) train with an optimizer of its own: a call of
    `minimize`/`compute_gradients`/`apply_gradients`, `optimize_loss` or `create_train_op`,
    and no CrossShardOptimizer already?"""
    uses = False
    for call in iter_calls(fn):
        name = dotted(call.func) or ""
        if name.rpartition(".")[2] == _CROSS_SHARD:
            return False
        if (
            (isinstance(call.func, cst.Attribute) and call.func.attr.value in OPTIMIZER_METHODS)
            or api_name(rule.tf_name(call.func)).endswith(_BUILDERS)
            or name.rpartition(".")[2] in _BUILDERS
        ):
            uses = True
    return uses


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


def _bound(small: cst.BaseSmallStatement) -> list[str]:
    """Names a module-level small statement binds by assignment or import."""
    if isinstance(small, cst.Assign):
        return [t.target.value for t in small.targets if isinstance(t.target, cst.Name)]
    if isinstance(small, (cst.AnnAssign, cst.AugAssign)) and isinstance(small.target, cst.Name):
        return [small.target.value]
    if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(
        small.names, cst.ImportStar
    ):
        return [
            (a.asname.name.value if a.asname and isinstance(a.asname.name, cst.Name) else "")
            or (dotted(a.name) or "").split(".")[0]
            for a in small.names
        ]
    return []


def _migrated_flag(fn: cst.FunctionDef) -> str | None:
    """The keyword-only flag (default False) of a def whose body wraps an optimizer under
    `if <flag>:`, as TPU004 migrates one."""
    flags = {
        p.name.value
        for p in fn.params.kwonly_params
        if isinstance(p.default, cst.Name) and p.default.value == "False"
    }
    found: list[str] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_If(self, node: cst.If) -> None:
            if (
                isinstance(node.test, cst.Name)
                and node.test.value in flags
                and any(
                    (dotted(c.func) or "").endswith(_CROSS_SHARD) for c in iter_calls(node.body)
                )
            ):
                found.append(node.test.value)

    walk(fn, V())
    return found[0] if found else None


def _defs_at(module: cst.Module, scopes: set[str]) -> list[cst.FunctionDef]:
    """The defs whose dotted scope (`model_fn`, `Model.model_fn`) is one of `scopes`."""
    found: list[cst.FunctionDef] = []
    stack: list[str] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            stack.append(node.name.value)
            if ".".join(stack) in scopes:
                found.append(node)

        def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
            stack.pop()

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            stack.append(node.name.value)

        def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
            stack.pop()

    walk(module, V())
    return found
