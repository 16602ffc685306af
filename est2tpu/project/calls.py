"""Facts about one function or call, read from its syntax: arguments bound to parameters,
what a function returns, the names it assigns."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import libcst as cst

from est2tpu.batching import (
    int_literal,
    is_params_batch_size,
)
from est2tpu.cstutil import (
    descendants,
    literal_text,
    passes_params_on,
    target_names,
    walk,
)
from est2tpu.index import (
    FnKey,
    SourceModule,
    param_names,
)
from est2tpu.names import dotted
from est2tpu.project.facts import ProjectFacts, Scoped


def positional_names(fn: cst.FunctionDef, call: cst.Call) -> list[str]:
    """The parameters a call's positional arguments fill, in order: a method called through
    an instance or its class (`self.input_fn(x, y)`, `cls.make(x)`) fills them after its
    receiver (`self`, `cls`)."""
    names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    decorators = {dotted(d.decorator) for d in fn.decorators}
    receiver = "cls" if "classmethod" in decorators else "self"
    if (
        isinstance(call.func, cst.Attribute)
        and names[:1] == [receiver]
        and "staticmethod" not in decorators
    ):
        return names[1:]
    return names


def instance_receiver(fn: cst.FunctionDef) -> str | None:
    """The first parameter of a def taken as a method of an instance (`self`), unless it is
    a staticmethod or classmethod (whether the def is in a class is the caller's to know)."""
    names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    decorators = {dotted(d.decorator) for d in fn.decorators}
    if not names or decorators & {"staticmethod", "classmethod"}:
        return None
    return names[0]


def bind_call(fn: cst.FunctionDef, call: cst.Call) -> dict[str, cst.BaseExpression]:
    """Map a def's parameter names to the expressions a call passes for them."""
    names = positional_names(fn, call)
    bound: dict[str, cst.BaseExpression] = {}
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for name, arg in zip(names, positional):
        bound[name] = arg.value
    for arg in call.args:
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg.value
    return bound


def bind_index(fn: cst.FunctionDef, call: cst.Call) -> dict[str, int]:
    """Map a def's parameter names to the index in `call.args` of the argument for them."""
    names = positional_names(fn, call)
    found: dict[str, int] = {}
    positional = [i for i, a in enumerate(call.args) if a.keyword is None and not a.star]
    for name, i in zip(names, positional):
        found[name] = i
    for i, arg in enumerate(call.args):
        if arg.keyword is not None:
            found[arg.keyword.value] = i
    return found


def unread_params(fn: cst.FunctionDef) -> list[str]:
    """Parameters the body never reads (`params`, `mode`, `config` aside: TPUEstimator
    passes them whether they are read or not)."""
    read: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            read.add(node.value)

    walk(fn.body, V())
    return [
        p.name.value
        for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)
        if p.name.value not in read and p.name.value not in ("params", "mode", "config")
    ]


def call_values(fn: cst.FunctionDef, call: cst.Call) -> dict[str, cst.BaseExpression]:
    """What each parameter of `fn` is in `call`: the argument bound to it, else its default
    (parameters with neither are left out)."""
    bound = bind_call(fn, call)
    values: dict[str, cst.BaseExpression] = {}
    for name in param_names(fn):
        value = bound.get(name, default_of(fn, name))
        if value is not None:
            values[name] = value
    return values


def substituted(
    expr: cst.BaseExpression, replace: Callable[[str], cst.BaseExpression | None]
) -> cst.BaseExpression:
    """`expr` with each variable name `replace` maps to something replaced by it (attribute
    and keyword names are names, not variables: they stay)."""

    class Substitute(cst.CSTTransformer):
        def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
            replaced = replace(original_node.value)
            return updated_node if replaced is None else replaced

        def leave_Attribute(
            self, original_node: cst.Attribute, updated_node: cst.Attribute
        ) -> cst.Attribute:
            return updated_node.with_changes(attr=original_node.attr)

        def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
            return updated_node.with_changes(keyword=original_node.keyword)

    return cast(cst.BaseExpression, expr.visit(Substitute()))


def default_of(fn: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params):
        if p.name.value == name and p.default is not None:
            return p.default
    return None


def int_subscript(expr: cst.Subscript) -> int | None:
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    value = expr.slice[0].slice.value
    return int(value.value) if isinstance(value, cst.Integer) else None


def arg_index(lam: cst.Lambda, value: cst.BaseExpression) -> int | None:
    body = lam.body
    assert isinstance(body, cst.Call)
    for i, arg in enumerate(body.args):
        if arg.value is value:
            return i
    return None


def returns(
    fn: cst.FunctionDef,
) -> tuple[list[cst.BaseExpression | None], dict[str, list[cst.BaseExpression]]]:
    """What `fn`'s own returns return (not those of defs or lambdas inside it), and what its
    plain names are assigned."""
    returned: list[cst.BaseExpression | None] = []
    bound: dict[str, list[cst.BaseExpression]] = {}

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            returned.append(node.value)

        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    bound.setdefault(t.target.value, []).append(node.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, cst.Name):
                bound.setdefault(node.target.value, []).append(node.value)

    walk(fn, V())
    return returned, bound


def returned_call(fn: cst.FunctionDef) -> cst.Call | None:
    """The call a function returns, when it has one return and returns a call."""
    returned, _ = returns(fn)
    value = returned[0] if len(returned) == 1 else None
    return value if isinstance(value, cst.Call) else None


def body_statements(fn: cst.FunctionDef) -> list[cst.BaseStatement]:
    """A def's statements, without its docstring."""
    body = list(fn.body.body) if isinstance(fn.body, cst.IndentedBlock) else []
    first = body[0] if body else None
    if (
        isinstance(first, cst.SimpleStatementLine)
        and isinstance(first.body[0], cst.Expr)
        and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    ):
        body = body[1:]
    if isinstance(fn.body, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(fn.body.body)]
    return body


def assigned_in(fn: cst.FunctionDef) -> set[str]:
    """Names a function binds by assignment (its locals, nested defs aside)."""
    names: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(target_names(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(target_names(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(target_names(node.target))

    walk(fn, V())
    return names


def assigned_attributes(fn: cst.FunctionDef) -> set[str]:
    """The dotted attributes a def assigns (`args.output_dir = ...`), nested defs included."""
    assigned: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            for target in descendants(node.target):
                if isinstance(target, cst.Attribute) and (path := dotted(target)) is not None:
                    assigned.add(path)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if (path := dotted(node.target)) is not None:
                assigned.add(path)

    walk(fn, V())
    return assigned


def names_in(code: str) -> set[str]:
    names: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    walk(cst.parse_expression(code), V())
    return names


def subscript_head(expr: cst.BaseExpression) -> str:
    """The name a chain of constant subscripts and attributes starts from, or ""."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        if isinstance(expr, cst.Subscript) and not all(
            isinstance(e.slice, cst.Index)
            and isinstance(e.slice.value, (cst.SimpleString, cst.Integer))
            for e in expr.slice
        ):
            return ""
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else ""


def dict_keys(value: cst.BaseExpression | None) -> frozenset[str] | None:
    """The keys of a dict literal whose keys are all strings written out, else None."""
    if not isinstance(value, cst.Dict):
        return None
    keys: set[str] = set()
    for element in value.elements:
        if not isinstance(element, cst.DictElement) or not isinstance(
            element.key, cst.SimpleString
        ):
            return None
        keys.add(str(literal_text(element.key)))
    return frozenset(keys)


def same_at_ctor(fn: cst.FunctionDef | cst.Module, value: cst.BaseExpression) -> bool:
    """A value in `fn` that the constructor later in `fn` computes alike: a literal, or
    attributes of parameters `fn` never rebinds (`hparams.train_batch_size`)."""
    if int_literal(value):
        return True
    if isinstance(fn, cst.Module):
        return False
    parts = (dotted(value) or "").split(".")
    return parts[0] in param_names(fn) and parts[0] not in assigned_in(fn)


def returned_def(ix: ProjectFacts, factory: FnKey, index: int | None = None) -> FnKey | None:
    """The def nested in `factory` that it returns (element `index` of the tuple it
    returns, `return train_input_fn, eval_input_fn, vocabulary`)."""
    returned, _ = returns(ix.fn(factory))
    if index is not None:
        returned = [
            value.elements[index].value
            if isinstance(value, cst.Tuple)
            and index < len(value.elements)
            and all(not isinstance(e, cst.StarredElement) for e in value.elements)
            else None
            for value in returned
        ]
    names = [value.value for value in returned if isinstance(value, cst.Name)]
    if index is not None and len(names) != len(returned):
        return None
    if len(set(names)) != 1:
        return None
    key = f"{factory[1]}.{names[0]}"
    return (factory[0], key) if key in ix.modules[factory[0]].defs else None


def chained_factory_call(ix: ProjectFacts, factory: FnKey, call: cst.Call) -> cst.Call | None:
    """The call a module-level factory returns, of another project function, with the
    factory's parameters replaced by what `call` passes (or their defaults)."""
    if "." in factory[1]:
        return None
    fn = ix.fn(factory)
    returned = returned_call(fn)
    src = ix.modules[factory[0]]
    if returned is None or ix.resolve_fn(src, "", returned.func) is None:
        return None
    star = isinstance(fn.params.star_arg, cst.Param) or fn.params.star_kwarg is not None
    if star or any(a.star for a in call.args):
        return None
    values = call_values(fn, call)
    locals_ = assigned_in(fn)
    missing: list[str] = []

    def replace(name: str) -> cst.BaseExpression | None:
        if name in values:
            return values[name]
        if name in locals_ or name in param_names(fn):
            missing.append(name)
        return None

    result = substituted(returned, replace)
    if missing or not isinstance(result, cst.Call):
        return None  # reads the factory's own locals: not expressible at the call site
    return result


def calls_named(src: SourceModule, short: str) -> list[tuple[str, cst.Call]]:
    """The calls in a module of a name or attribute spelled `short`, with their scopes."""
    found: list[tuple[str, cst.Call]] = []

    class V(Scoped):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else dotted(func)
            if name == short:
                found.append((self.here, node))

    walk(src.module, V())
    return found


def reads_params_batch_size(fn: cst.FunctionDef) -> bool:
    class V(cst.CSTVisitor):
        found = False

        def visit_Subscript(self, node: cst.Subscript) -> None:
            if is_params_batch_size(node):
                V.found = True

        def visit_Call(self, node: cst.Call) -> None:
            # `helper(**params)` hands every key on, "batch_size" among them
            if passes_params_on(node):
                V.found = True

    walk(fn, V())
    return V.found


def reserved_keys_built_in(value: cst.BaseExpression | None) -> list[str]:
    """The keys TPUEstimator reserves that an object is built with: a dict literal's, or a
    call's keyword arguments (`HParams(batch_size=64)`, `dict(batch_size=64)`)."""
    if isinstance(value, cst.Dict):
        keys = {
            str(literal_text(el.key))
            for el in value.elements
            if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString)
        }
    elif isinstance(value, cst.Call):
        keys = {a.keyword.value for a in value.args if a.keyword is not None}
    else:
        return []
    return sorted(keys & {"batch_size", "context"})
