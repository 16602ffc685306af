"""Facts about the Keras model a `model_to_estimator` call is given: the optimizers it is
compiled with, as the program writes them.

The model is followed with the value query from the call: a name compiled in the scope that
passes it (`model.compile(...)`; `model_to_estimator(keras_model=model)`), or a project
function that builds, compiles and returns it (`keras_model=build_model()`, or a name bound
to that call), in this module or another. Each `compile` gives its optimizer argument
(Keras' default `"rmsprop"` when it has none), itself followed with the value query in the
scope of the `compile`: a string (`"adam"`), or a `keras.optimizers` class called with
keyword arguments. Which of them the runtime maps exactly, and why not, is `why_unmappable`,
whose table a test holds equal to the runtime's (`est2tpu.runtime.keras`); what follows from
it for the migration is TPU011's decision.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst

from est2tpu.cstutil import literal_text
from est2tpu.index import SourceModule, call_arg, param_names
from est2tpu.names import dotted
from est2tpu.project import values as value_query
from est2tpu.project.facts import ProjectFacts
from est2tpu.project.scope import TopLevel

# `tensorflow.keras.optimizers.Adam`, `keras.optimizers.legacy.SGD`,
# `tensorflow.compat.v1.keras.optimizers.Nadam`, `tf_keras.optimizers.experimental.AdamW`
_KERAS_OPTIMIZER = re.compile(r"(?:^|\.)keras\.optimizers\.(?:legacy\.|experimental\.)?(\w+)$")
# How many project functions a model is followed through (`build` returning `compile_it(m)`).
_MAX_FACTORIES = 3


class Unknown:
    """A keyword argument whose value is no literal: what it holds is known at run time."""

    def __repr__(self) -> str:
        return "Unknown()"


UNKNOWN = Unknown()


@dataclass(frozen=True)
class CompiledOptimizer:
    """One optimizer a model is compiled with: a Keras class name (`Adam`) or the string
    the program gives (`"nadam"`), and its keyword arguments' literal values (`UNKNOWN`
    when not a literal)."""

    name: str
    from_string: bool
    settings: dict[str, object] = field(default_factory=dict)


# Keras optimizer classes (lower-cased) the runtime maps exactly.
MAPPED = ("sgd", "adam", "rmsprop", "adagrad")
# Keras optimizer settings with no TF1 counterpart: any of them set (not None/0/False) makes
# the optimizer unmappable.
UNMAPPABLE_SETTINGS = (
    "weight_decay",
    "clipnorm",
    "clipvalue",
    "global_clipnorm",
    "use_ema",
    "amsgrad",
)


def why_unmappable(optimizer: CompiledOptimizer) -> str | None:
    """Why the runtime cannot map this optimizer exactly; None when it can, or when only
    the run shows it (a setting that is no literal)."""
    shown = f'"{optimizer.name}"' if optimizer.from_string else f"{optimizer.name}(...)"
    if optimizer.name.lower() not in MAPPED:
        return f"{shown} has no exact tf.compat.v1.train equivalent"
    for key in UNMAPPABLE_SETTINGS:
        value = optimizer.settings.get(key)
        if value is not UNKNOWN and value:
            return f"{optimizer.name}({key}={value!r}) has no exact tf.compat.v1.train equivalent"
    return None


class BodyScope:
    """A function's body, as the value query reads it: a name assigned once in the body
    holds that value; defs and modules are named as from the function."""

    def __init__(self, ix: ProjectFacts, src: SourceModule, path: str) -> None:
        self.ix = ix
        self.src = src
        self.path = path
        body = src.defs[path] if path else src.module
        self.assigned: dict[str, list[cst.BaseExpression]] = {}
        self.compiles: dict[str, list[cst.Call]] = {}
        self.returned: list[cst.BaseExpression] = []
        body.visit(_BodyFacts(self, body))

    def bound(self, name: str) -> cst.BaseExpression | None:
        fn = self.src.defs.get(self.path)
        if fn is not None and name in param_names(fn):
            return None  # what each call passes (`if optimizer is None: optimizer = ...`)
        values = self.assigned.get(name, [])
        if values:
            return values[0] if len(values) == 1 else None
        # a name of the module (`OPTIMIZER = "adam"` above the def), bound once there
        return TopLevel(self.ix, self.src).bound(name) if self.path else None

    def is_definition(self, expr: cst.BaseExpression) -> bool:
        return self.ix.resolve_callable(self.src, self.path, expr) is not None

    def module_of(self, expr: cst.BaseExpression) -> value_query.Scope | None:
        return _module_of(self, expr)


def _module_of(scope: BodyScope, expr: cst.BaseExpression) -> value_query.Scope | None:
    name = dotted(expr)
    if name is None or name in scope.src.defs:
        return None
    target = scope.src.relative.get(name) or scope.src.imports.bindings.get(name)
    other = scope.ix.module_for(target, scope.src.path) if target else None
    return TopLevel(scope.ix, other) if other is not None else None


class _BodyFacts(cst.CSTVisitor):
    """The assignments, `<name>.compile(...)` calls and returns of one body, not of the
    functions and classes nested in it."""

    def __init__(self, scope: BodyScope, body: cst.CSTNode) -> None:
        self.scope = scope
        self.body = body

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.body

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.scope.assigned.setdefault(target.target.value, []).append(node.value)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.scope.returned.append(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "compile"
            and isinstance(func.value, cst.Name)
        ):
            self.scope.compiles.setdefault(func.value.value, []).append(node)


def compiled_optimizers(
    ix: ProjectFacts, src: SourceModule, here: str, call: cst.Call
) -> list[CompiledOptimizer] | None:
    """The optimizers the model `call` (a `model_to_estimator`) is given may be compiled
    with; None when the program does not show them all (no `compile` found, an optimizer
    that is neither a string nor a Keras optimizer class's call, `**kwargs`)."""
    arg = call_arg(call, "keras_model", 0)
    if arg is None:
        return None
    return _optimizers_of(ix, BodyScope(ix, src, here), arg.value, 0)


def _optimizers_of(
    ix: ProjectFacts, scope: BodyScope, expr: cst.BaseExpression, depth: int
) -> list[CompiledOptimizer] | None:
    if depth > _MAX_FACTORIES:
        return None
    if isinstance(expr, cst.Name) and expr.value in scope.compiles:
        found: list[CompiledOptimizer] = []
        for compile_call in scope.compiles[expr.value]:
            optimizer = _optimizer(scope, compile_call)
            if optimizer is None:
                return None
            found.append(optimizer)
        return found
    held = value_query.choices(scope, expr)
    if len(held) != 1:
        return None
    value = held[0][1]
    if not isinstance(value, cst.Call):
        return None
    key = ix.resolve_fn(scope.src, scope.path, value.func)
    if key is None:
        return None
    factory = BodyScope(ix, ix.modules[key[0]], key[1])
    if len(factory.returned) != 1:
        return None
    return _optimizers_of(ix, factory, factory.returned[0], depth + 1)


def _optimizer(scope: BodyScope, compile_call: cst.Call) -> CompiledOptimizer | None:
    if any(a.star for a in compile_call.args):
        return None
    arg = call_arg(compile_call, "optimizer", 0)
    if arg is None:
        return CompiledOptimizer("rmsprop", from_string=True)  # Keras' default
    held = value_query.choices(scope, arg.value)
    if len(held) != 1:
        return None
    value = held[0][1]
    if isinstance(value, cst.SimpleString):
        text = literal_text(value)
        return CompiledOptimizer(str(text), from_string=True)
    if not isinstance(value, cst.Call) or any(a.star for a in value.args):
        return None
    qualified = scope.src.imports.qualify(value.func) or ""
    match = _KERAS_OPTIMIZER.search(qualified)
    if match is None:
        return None
    settings: dict[str, object] = {}
    for a in value.args:
        if a.keyword is not None:
            settings[a.keyword.value] = _literal(a.value)
    return CompiledOptimizer(match.group(1), from_string=False, settings=settings)


def _literal(expr: cst.BaseExpression) -> object:
    try:
        return ast.literal_eval(cst.Module([]).code_for_node(expr))
    except (ValueError, SyntaxError, TypeError):
        return UNKNOWN
