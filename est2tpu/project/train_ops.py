"""Which defs, from a model_fn TPUEstimator runs, build and apply a TF1 optimizer: the
train-op chain TPU004 threads a keyword-only `use_tpu=False` flag through.

A def reached from a TPU model_fn by calls the index resolves (a function of any module of
the project, a method through `self`, its class or an instance, a def nested in the caller,
a module-level alias or `functools.partial` of one) is a link of the chain when it trains
with an optimizer of its own (a local optimizer it calls `minimize`, `compute_gradients` or
`apply_gradients` on, `optimize_loss`, `create_train_op`, or a local optimizer it hands to a
def that applies it) or calls a link. Every link takes the flag, tests it to wrap its own
optimizer, and passes it on; the model_fn passes `params["use_tpu"]`. Where the flag cannot
be threaded (a method a class of the project overrides, a def defined twice, a file the run
switches TPU004 off in, an optimizer from outside the def), the call or use gets a finding
instead (`TrainOpLink.unfollowed`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from est2tpu.cstutil import assigned_names, iter_calls, unique_name, walk
from est2tpu.index import FnKey, SourceModule, TrainOpLink, node_code, param_names
from est2tpu.names import dotted
from est2tpu.project.calls import bind_call
from est2tpu.project.facts import ProjectFacts
from est2tpu.project.scope import TopLevel

OPTIMIZER_METHODS = frozenset({"minimize", "compute_gradients", "apply_gradients"})
BUILDERS = ("optimize_loss", "create_train_op")
CROSS_SHARD = "CrossShardOptimizer"
FLAG = "use_tpu"

__all__ = ["TrainOpLink", "link_train_ops"]


@dataclass
class _Def:
    key: FnKey
    fn: cst.FunctionDef
    flag: str | None  # an existing keyword-only use_tpu* flag (default False)
    handles_tpu: bool  # wraps in CrossShardOptimizer itself, or takes a use_tpu of its own
    own: bool  # trains with an optimizer it creates
    applies: set[str]  # its parameters it applies as optimizers
    edges: list[tuple[str, FnKey, cst.Call]] = field(default_factory=list)
    wraps: set[str] = field(default_factory=set)
    unfollowed: dict[str, str] = field(default_factory=dict)


def link_train_ops(ix: ProjectFacts, roots: set[FnKey]) -> dict[FnKey, TrainOpLink]:
    """The train-op chains of the model_fns TPUEstimator runs (`roots`), by def."""
    defs: dict[FnKey, _Def] = {}
    todo = sorted(roots)
    while todo:
        key = todo.pop()
        if key in defs:
            continue
        src = ix.modules.get(key[0])
        fn = src.defs.get(key[1]) if src is not None else None
        if src is None or fn is None:
            continue
        found = defs[key] = _summary(ix, src, key, fn, roots)
        todo += [callee for _, callee, _ in found.edges if callee not in defs]
    _pass_optimizers_up(defs)
    members = _members(ix, defs, roots)
    links: dict[FnKey, TrainOpLink] = {}
    for key, found in defs.items():
        if key not in roots and key not in members and not found.unfollowed:
            continue
        link = TrainOpLink(
            wraps=set(found.wraps), unfollowed=dict(found.unfollowed), trains=found.own
        )
        link.resolved = {code for code, _, _ in found.edges}
        if key in members and key not in roots:
            taken = set(assigned_names(found.fn))
            link.flag = found.flag or unique_name(FLAG, taken)
        links[key] = link
    for key, link in links.items():
        for code, callee, _ in defs[key].edges:
            target = links.get(callee)
            if callee in members and callee not in roots and target and target.flag:
                link.passes[code] = target.flag
    return links


def _summary(
    ix: ProjectFacts, src: SourceModule, key: FnKey, fn: cst.FunctionDef, roots: set[FnKey]
) -> _Def:
    params = param_names(fn)
    flag = _existing_flag(fn)
    code = node_code(fn)
    handles = (CROSS_SHARD in code and flag is None) or any(FLAG in p and p != flag for p in params)
    locals_ = assigned_names(fn)
    made = {n for n, values in locals_.items() if any(v is not None for v in values)}
    found = _Def(
        key, fn, flag, handles, own=flag is not None and CROSS_SHARD in code, applies=set()
    )
    if handles and key not in roots:
        return found
    whole = whole_statement_values(fn)
    for call in iter_calls(fn):
        func = call.func
        name = dotted(func) or ""
        if name.rpartition(".")[2] in BUILDERS:
            found.own = True
            continue
        if isinstance(func, cst.Attribute) and func.attr.value in OPTIMIZER_METHODS:
            receiver = func.value
            if isinstance(receiver, cst.Call) and id(call) not in whole:
                # `f(X(...).minimize(loss))`: no statement of its own to split
                found.unfollowed[node_code(func)] = (
                    "the optimizer is created and used in one expression; assign it to a "
                    "variable so it can be wrapped in CrossShardOptimizer on TPU"
                )
            elif isinstance(receiver, cst.Call) or (
                isinstance(receiver, cst.Name) and receiver.value in made
            ):
                found.own = True
            elif isinstance(receiver, cst.Name) and receiver.value in params:
                found.applies.add(receiver.value)
            elif dotted(receiver) is not None:
                found.unfollowed[node_code(func)] = (
                    f"the optimizer `{dotted(receiver)}` is applied here but built outside "
                    "this function, where est2tpu cannot wrap it: on TPU each core would apply "
                    "its own gradients; build it here, or wrap it in "
                    "tf.compat.v1.tpu.CrossShardOptimizer where it is built when "
                    "params['use_tpu'] is true (pass that down from the model_fn)"
                )
            continue
        if (src.imports.qualify(func) or "").startswith("tensorflow"):
            continue  # TensorFlow's (most calls of a model_fn): no project def
        callee = _resolve(ix, src, key[1], func, locals_)
        if callee is not None and callee != key:
            found.edges.append((node_code(func), callee, call))
    return found


def _resolve(
    ix: ProjectFacts,
    src: SourceModule,
    scope: str,
    func: cst.BaseExpression,
    locals_: dict[str, list[cst.BaseExpression | None]],
) -> FnKey | None:
    """The project def a call in `scope` runs: a nested def, a function or method the index
    resolves, a local bound once to one, or a module-level name bound once to one (`make = make_train_op`) or to a
    `functools.partial` of one (the flag passes through a partial as a keyword)."""
    if isinstance(func, cst.Name) and func.value in locals_:
        nested = f"{scope}.{func.value}"
        if nested in src.defs:
            return (src.path, nested)
        values = locals_[func.value]
        if len(values) == 1 and isinstance(values[0], (cst.Name, cst.Attribute)):
            # `make = build_train_op` in the def: bound once, to what the name means there
            bound = values[0]
            if not (isinstance(bound, cst.Name) and bound.value in locals_):
                return ix.resolve_callable(src, scope, bound)
        return None
    key = ix.resolve_callable(src, scope, func)
    if key is not None or not isinstance(func, cst.Name):
        return key
    value = TopLevel(ix, src).bound(func.value)
    if (
        isinstance(value, cst.Call)
        and src.imports.qualify(value.func) == "functools.partial"
        and value.args
        and value.args[0].keyword is None
        and not value.args[0].star
        and all(a.keyword is None or a.keyword.value != FLAG for a in value.args)
    ):
        value = value.args[0].value
    if isinstance(value, (cst.Name, cst.Attribute)):
        return ix.resolve_callable(src, "", value)
    return None


def _pass_optimizers_up(defs: dict[FnKey, _Def]) -> None:
    """A def that hands a local optimizer to a def applying that parameter trains with it
    (it is wrapped there); one that hands on a parameter of its own applies that one."""
    changed = True
    while changed:
        changed = False
        for found in defs.values():
            for code, callee, call in found.edges:
                target = defs.get(callee)
                if target is None or not target.applies:
                    continue
                bound = bind_call(target.fn, call)
                locals_ = assigned_names(found.fn)
                params = set(param_names(found.fn))
                for param in sorted(target.applies):
                    value = bound.get(param)
                    if value is None:
                        continue
                    if isinstance(value, cst.Name) and value.value in params:
                        if value.value not in found.applies:
                            found.applies.add(value.value)
                            changed = True
                    elif (
                        isinstance(value, cst.Name)
                        and locals_.get(value.value)
                        and all(v is not None for v in locals_[value.value])
                    ):
                        # a local (the rule wraps it where it is bound, or refuses)
                        if value.value not in found.wraps:
                            found.wraps.add(value.value)
                            found.own = changed = True
                    elif _creates_an_optimizer(value):
                        continue  # TPU004 says to assign it to a variable first
                    elif code not in found.unfollowed:
                        found.unfollowed[code] = (
                            f"`{code}` applies the optimizer it is given, which is built where "
                            "est2tpu cannot wrap it: on TPU each core would apply its own "
                            "gradients; assign it to a variable here and `if "
                            "params['use_tpu']: optimizer = "
                            "tf.compat.v1.tpu.CrossShardOptimizer(optimizer)` before passing it"
                        )
                        changed = True


def _creates_an_optimizer(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Call) and (dotted(value.func) or "").endswith("Optimizer")


def whole_statement_values(fn: cst.FunctionDef) -> set[int]:
    """ids of the values of `name = value` statements alone on their line (the rule splits
    `name = X(...).minimize(...)` there)."""
    found: set[int] = set()

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if len(node.body) == 1 and isinstance(node.body[0], cst.Assign):
                found.add(id(node.body[0].value))

    walk(fn, V())
    return found


def _members(ix: ProjectFacts, defs: dict[FnKey, _Def], roots: set[FnKey]) -> set[FnKey]:
    """The defs that train or call one that does, through calls that can pass the flag; a
    call that cannot gets a finding."""
    members = {key for key, found in defs.items() if found.own and key not in roots}
    blocked: dict[FnKey, str] = {}
    changed = True
    while changed:
        changed = False
        for key, found in defs.items():
            if key in members or key in roots or found.handles_tpu:
                continue
            if any(callee in members for _, callee, _ in found.edges):
                members.add(key)
                changed = True
    for key in sorted(members):
        why = _unflaggable(ix, defs, key)
        if why is not None:
            blocked[key] = why
    members -= blocked.keys()
    for found in defs.values():
        for code, callee, _ in found.edges:
            if callee in blocked and code not in found.unfollowed:
                found.unfollowed[code] = (
                    f"the train op is built in `{code}`, {blocked[callee]}: if it builds a TF1 "
                    "optimizer, wrap it in tf.compat.v1.tpu.CrossShardOptimizer when "
                    "params['use_tpu'] is true (pass params['use_tpu'] to it), or on TPU each "
                    "core applies its own gradients"
                )
    # a def whose only path to the optimizer went through a blocked def takes no flag
    changed = True
    while changed:
        changed = False
        for key in sorted(members):
            found = defs[key]
            if not found.own and not any(c in members for _, c, _ in found.edges):
                members.discard(key)
                changed = True
    return members


def _unflaggable(ix: ProjectFacts, defs: dict[FnKey, _Def], key: FnKey) -> str | None:
    """Why the def cannot take the flag, if it cannot."""
    path, name = key
    src = ix.modules[path]
    if name in src.redefined:
        return "defined more than once, so which one runs is not known"
    if ix.switched_off is not None and ix.switched_off(path, "TPU004"):
        return "in a file where TPU004 is switched off"
    owner, _, method = name.rpartition(".")
    if owner and owner not in src.defs:  # a method of a class
        short = owner.rpartition(".")[2]
        for sub, methods in _subclasses(ix, short):
            if method in methods:
                return (
                    f"a method that `{sub}`, a subclass, overrides (the override takes no "
                    "flag, so passing one could fail)"
                )
    return None


def _subclasses(ix: ProjectFacts, name: str) -> list[tuple[str, set[str]]]:
    """The project's classes that derive from a class called `name`, directly or not, by
    name, with the methods each defines."""
    classes: list[tuple[str, list[str], set[str]]] = []
    for src in ix.modules.values():
        if "class " not in src.text:
            continue
        for stmt in _class_defs(src.module):
            bases = [(dotted(b.value) or "").rpartition(".")[2] for b in stmt.bases]
            methods = {d.name.value for d in stmt.body.body if isinstance(d, cst.FunctionDef)}
            classes.append((stmt.name.value, bases, methods))
    found: list[tuple[str, set[str]]] = []
    names = {name}
    changed = True
    while changed:
        changed = False
        for cls, bases, methods in classes:
            if cls not in names and names.intersection(bases):
                names.add(cls)
                found.append((cls, methods))
                changed = True
    return found


def _class_defs(module: cst.Module) -> list[cst.ClassDef]:
    found: list[cst.ClassDef] = []

    class V(cst.CSTVisitor):
        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            found.append(node)

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            return False

    walk(module, V())
    return found


def _existing_flag(fn: cst.FunctionDef) -> str | None:
    """The keyword-only `use_tpu*=False` flag of a def TPU004 migrated already."""
    for p in fn.params.kwonly_params:
        if (
            p.name.value.startswith(FLAG)
            and isinstance(p.default, cst.Name)
            and p.default.value == "False"
        ):
            return p.name.value
    return None
