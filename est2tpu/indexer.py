"""Builds the project index (`est2tpu.index.ProjectIndex`) from parsed modules: one walk
per module collects defs, constants and relative imports, a second finds the Estimators
and the calls that use them."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path, PurePath
from typing import TypeVar, cast

import libcst as cst

from est2tpu.batching import (
    batch_calls,
    batch_size_arg,
    get_next_of_one_shot,
    int_literal,
    is_params_batch_size,
    is_structure,
    last_block,
    params_get_default,
    returned_value,
    returns_names,
    unpack_target,
)
from est2tpu.cstutil import (
    assigned_names,
    descendants,
    iter_calls,
    name_count,
    names_read,
    params_subscript,
    passes_params_on,
    target_names,
    walk,
)
from est2tpu.index import (
    BatchHelper,
    BatchSize,
    CallKey,
    CallKeys,
    CtorPlan,
    DirectCall,
    FnKey,
    InputFnPlan,
    Mode,
    ProjectIndex,
    SourceModule,
    UseSite,
    call_arg,
    model_fns_of,
    node_code,
    param_names,
)
from est2tpu.names import ImportTable, StatementWalker, dotted
from est2tpu.project import values as value_query
from est2tpu.scan import package_members
from est2tpu.tfapi import (
    ADD_METRICS,
    DEFAULT_NUMPY_BATCH,
    ESTIMATOR_CTORS,
    KERAS_TO_ESTIMATOR,
    NUMPY_INPUTS,
    PREMADE,
    RUN_METHODS,
    SHIM,
    SPEC_CTORS,
    TPU_ESTIMATOR_CTORS,
    USE_NAMES,
    call_kind,
    is_run_config_call,
    premade_refusal,
)

_T = TypeVar("_T")
# (scope, name) -> [(position, value)], in source order
_Bindings = dict[tuple[str, str], list[tuple[int, _T]]]


class _Scoped(cst.CSTVisitor):
    """Tracks the dotted path of enclosing defs/classes."""

    def __init__(self) -> None:
        self.scope: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scope.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scope.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scope.pop()

    @property
    def here(self) -> str:
        return ".".join(self.scope)


class _DefCollector(_Scoped):
    def __init__(self, src: SourceModule) -> None:
        super().__init__()
        self.src = src

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self.src.defs[self.here] = node

    def assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call) and is_run_config_call(self.src.imports, node.value):
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    self.src.run_config_vars.add(t.target.value)
        if self.scope:
            return
        for t in node.targets:
            for name in target_names(t.target):
                self.src.module_assigns[name] = self.src.module_assigns.get(name, 0) + 1
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if isinstance(target, cst.Name) and isinstance(node.value, cst.Integer):
            self.src.constants[target.value] = int(node.value.value, 0)

    # Defs, constants and imports are statements: the expressions under a simple statement
    # line hold none of them, so the walk never enters one (it dominates the cost).
    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        for small in node.body:
            if isinstance(small, cst.Assign):
                self.assign(small)
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)) and not self.scope:
                for name in target_names(small.target):
                    self.src.module_assigns[name] = self.src.module_assigns.get(name, 0) + 1
            elif isinstance(small, cst.Global):
                for item in small.names:  # rebound by a function: not one value for the run
                    self.src.module_assigns[item.name.value] = 2
            elif isinstance(small, cst.ImportFrom):
                self.import_from(small)
        return False

    visit_If = StatementWalker.visit_If

    def import_from(self, node: cst.ImportFrom) -> None:
        if not node.relative or isinstance(node.names, cst.ImportStar):
            return
        up = len(node.relative) - 1
        base = list(self.src.package[: len(self.src.package) - up] if up else self.src.package)
        if node.module is not None:
            base += (dotted(node.module) or "").split(".")
        for alias in node.names:
            name = dotted(alias.name) or ""
            bound = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                bound = alias.asname.name.value
            self.src.relative[bound] = ".".join([*base, name])


def _chained_factory_call(ix: Indexer, factory: FnKey, call: cst.Call) -> cst.Call | None:
    """The call a module-level factory returns, of another project function, with the
    factory's parameters replaced by what `call` passes (or their defaults)."""
    if "." in factory[1]:
        return None
    fn = ix.fn(factory)
    returned = _returned_call(fn)
    src = ix.modules[factory[0]]
    if returned is None or ix.resolve_fn(src, "", returned.func) is None:
        return None
    star = isinstance(fn.params.star_arg, cst.Param) or fn.params.star_kwarg is not None
    if star or any(a.star for a in call.args):
        return None
    values = _call_values(fn, call)
    locals_ = _assigned_in(fn)
    missing: list[str] = []

    def replace(name: str) -> cst.BaseExpression | None:
        if name in values:
            return values[name]
        if name in locals_ or name in param_names(fn):
            missing.append(name)
        return None

    result = _substituted(returned, replace)
    if missing or not isinstance(result, cst.Call):
        return None  # reads the factory's own locals: not expressible at the call site
    return result


def _calls_named(src: SourceModule, short: str) -> list[tuple[str, cst.Call]]:
    """The calls in a module of a name or attribute spelled `short`, with their scopes."""
    found: list[tuple[str, cst.Call]] = []

    class V(_Scoped):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else dotted(func)
            if name == short:
                found.append((self.here, node))

    walk(src.module, V())
    return found


def _subscript_head(expr: cst.BaseExpression) -> str:
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


# Dataset methods that neither drop, add nor repeat examples (a `.repeat(1)` aside).
_ONE_PASS_METHODS = frozenset(
    {"map", "batch", "shuffle", "prefetch", "cache", "make_one_shot_iterator", "get_next"}
)


def _one_pass_over(src: SourceModule, fn: cst.FunctionDef) -> str | None:
    """The code of the arrays an input function yields each example of exactly once
    (`Dataset.from_tensor_slices(EVAL)...batch(...)`, EVAL bound once at module level), or
    None: then nothing tells how many examples an evaluation reads."""
    source: cst.BaseExpression | None = None
    for call in iter_calls(fn, into_defs=False):
        name = src.imports.tf_name(call.func) or ""
        if name == "data.Dataset.from_tensor_slices" and source is None and call.args:
            source = call.args[0].value
            continue
        if name == "data.make_one_shot_iterator":
            continue
        if not isinstance(call.func, cst.Attribute):
            return None
        method = call.func.attr.value
        once = (
            method == "repeat"
            and len(call.args) == 1
            and isinstance(call.args[0].value, cst.Integer)
            and call.args[0].value.value == "1"
        )
        if method not in _ONE_PASS_METHODS and not once:
            return None
    if source is None:
        return None
    names: list[str] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.append(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            return False

    walk(source, V())
    # read again at the call site: no call there (`np.random.rand(n)` would draw anew)
    plain = isinstance(source, (cst.Name, cst.Tuple, cst.Dict)) and not any(
        True for _ in iter_calls(source)
    )
    locals_ = _assigned_in(fn) | set(param_names(fn))
    if not plain or not names or any(n in locals_ or src.module_assigns.get(n) != 1 for n in names):
        return None
    return node_code(source)


def _names_in(code: str) -> set[str]:
    names: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

    walk(cst.parse_expression(code), V())
    return names


def _is_get_next(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "get_next"


# a flag or command-line argument named batch_size (absl's DEFINE_*, argparse's add_argument)
_BATCH_SIZE_FLAG = re.compile(r"""\(\s*(["'])(--)?batch_size\1""")


def _same_at_ctor(fn: cst.FunctionDef | cst.Module, value: cst.BaseExpression) -> bool:
    """A value in `fn` that the constructor later in `fn` computes alike: a literal, or
    attributes of parameters `fn` never rebinds (`hparams.train_batch_size`)."""
    if int_literal(value):
        return True
    if isinstance(fn, cst.Module):
        return False
    parts = (dotted(value) or "").split(".")
    return parts[0] in param_names(fn) and parts[0] not in _assigned_in(fn)


def _assigned_in(fn: cst.FunctionDef) -> set[str]:
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


class Indexer:
    """Builds a ProjectIndex from parsed modules."""

    def __init__(
        self,
        modules: Sequence[SourceModule],
        *,
        use_runtime: bool = True,
        follow_helpers: bool = False,
        unread: Sequence[PurePath] = (),
        switched_off: Callable[[str, str], bool] | None = None,
    ) -> None:
        # whether the run's selection (--select, --ignore, per-file ignores) switches a
        # rule off in a file (path, rule ID): a conversion whose rewrites need one stays undone
        self.switched_off = switched_off
        # files of the run the byte pre-filter skipped: the index never reads them, but a
        # helper's callers may be there
        self.unread = unread
        self.use_runtime = use_runtime
        self.follow_helpers = follow_helpers
        # The tf2 target (the only one that follows helpers): the facade's Estimator, which a
        # first run wrote, is an Estimator whose model_fn the tf2 rules still check, so a
        # refusal survives the migration as long as the code it names does.
        self.facade = follow_helpers
        self.modules = {m.path: m for m in modules}
        self.claimed: dict[str, list[str]] = {}  # dotted name -> the files it may name
        self.index = ProjectIndex()
        self.wrapped: set[int] = set()  # id() of calls an input_fn lambda makes
        # project functions that build and return an Estimator -> the constructions they
        # return (None: something else too)
        self.returned_ctors: dict[FnKey, set[CallKey | None]] = {}
        self.metric_fns: set[FnKey] = set()  # add_metrics' metric_fns: part of a model_fn
        # Estimators built with a parameter of the function that builds them as model_fn
        self.builder_params: list[tuple[_UseCollector, cst.Call, CtorPlan, FnKey, str]] = []
        # ... and with a parameter of it as params (`get_estimator(config, params)`)
        self.params_params: list[tuple[CtorPlan, FnKey, str]] = []
        self.collectors: dict[str, _UseCollector] = {}  # by module path, while building
        self.package_dirs: dict[tuple[PurePath, str], bool] = {}  # see `stands_for`
        self.consumers: dict[FnKey, list[str]] = {}  # see InputFnPlan.other_consumers
        self.excluded: set[str] = set()  # modules too deep to walk (see `build`)
        # Estimators the selection keeps from converting (see `build`) -> why
        self.forced: dict[CallKey, str] = {}
        # converted Estimators -> the files of the input functions they run
        self.ctor_files: dict[CallKey, set[str]] = {}
        self.unsized_forced: set[CallKey] = set()  # those of `forced` for want of a size
        self.ctor_sites: dict[CallKey, list[UseSite]] = {}  # Estimators -> their uses
        # converted Estimators -> the modes they train, evaluate and predict in
        self.ctor_modes: dict[CallKey, set[Mode]] = {}
        # Estimators bound to an attribute (`self.estimator = Estimator(...)`), whose calls
        # the index does not follow
        self.attribute_ctors: set[CallKey] = set()
        # Estimators -> the code of the params they are given
        self.ctor_params: dict[CallKey, str] = {}

    @staticmethod
    def source(
        path: str, module: cst.Module, names: Iterable[str], text: str | None = None
    ) -> SourceModule:
        names = list(names)
        longest = max(names, key=len) if names else ""
        package = tuple(longest.split(".")[:-1])
        if path.endswith("__init__.py"):
            package = tuple(longest.split(".")) if longest else ()
        src = SourceModule(path, module, ImportTable.from_module(module), package, {})
        src.text = module.code if text is None else text
        walk(module, _DefCollector(src))
        return src

    def register(self, src: SourceModule, names: Iterable[str]) -> None:
        for name in names:
            claimers = self.claimed.setdefault(name, [])
            if src.path not in claimers:
                claimers.append(src.path)

    # -- resolution ---------------------------------------------------------------------

    def module_for(self, dotted_name: str, near: str | None = None) -> SourceModule | None:
        """The module a dotted name means when `near` imports it (see `nearest_claim`)."""
        path = nearest_claim(self.claimed.get(dotted_name, []), dotted_name, near)
        return self.modules.get(path) if path else None

    def resolve_fn(self, src: SourceModule, scope: str, expr: cst.BaseExpression) -> FnKey | None:
        """The def an expression names, searching enclosing scopes, then imports."""
        name = dotted(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if not rest:
            parts = scope.split(".") if scope else []
            for i in range(len(parts), -1, -1):
                candidate = ".".join([*parts[:i], head])
                if candidate in src.defs:
                    return (src.path, candidate)
        target = src.relative.get(head) or src.imports.bindings.get(head)
        if target is None:
            return None
        full = f"{target}.{rest}" if rest else target
        parts = full.split(".")
        # `model.model_fn`, and `model.Models.model_fn` (a method of a class of the module)
        for cut in range(len(parts) - 1, max(len(parts) - 3, 0), -1):
            module_name, fn_name = ".".join(parts[:cut]), ".".join(parts[cut:])
            other = self.module_for(module_name, src.path) or self.sibling(src, module_name)
            if other is not None and fn_name in other.defs:
                return (other.path, fn_name)
        return None

    def sibling(self, src: SourceModule, module_name: str) -> SourceModule | None:
        """`from pkg.sub import model` in pkg/sub/task.py, when the run started below the
        package root (`est2tpu migrate pkg/sub`): no file claims `pkg.sub.model`, and the
        file beside the importer is it, since the directories it sits in are the package's.
        """
        package, _, last = module_name.rpartition(".")
        if not package:
            return None
        here = PurePath(src.path).parent
        dirs = here.parts[-len(package.split(".")) :]
        if tuple(package.split(".")[-len(dirs) :]) != dirs and not self.stands_for(here, package):
            return None
        other = self.module_for(last, src.path)
        return other if other is not None and PurePath(other.path).parent == here else None

    def texts_in(self, here: PurePath) -> dict[str, str]:
        """The files of the run in the directory `here`, by path, with their text."""
        texts = {p: m.text for p, m in self.modules.items() if PurePath(p).parent == here}
        for path in self.unread:
            if PurePath(path).parent == here and str(path) not in texts:
                try:
                    texts[str(path)] = Path(path).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    texts[str(path)] = ""
        return texts

    def stands_for(self, here: PurePath, package: str) -> bool:
        """Whether the directory `here` holds `package`'s modules taken out of their tree
        (`magenta/models/onsets/*.py` copied to `vendored/`), as a reader sees at a glance:
        at least two of its files import members of `package` by the package's name, at
        least two of those members are files of `here`, and one of those files imports the
        package too (the modules refer to each other through it). An unrelated module of
        the same name (`from other.pkg import model` beside a model.py of the project's
        own) shows none of that.
        """
        key = (here, package)
        if key not in self.package_dirs:
            texts = self.texts_in(here)
            files = {PurePath(path).stem: package_members(t, package) for path, t in texts.items()}
            importers = {stem for stem, members in files.items() if members}
            present = set().union(*files.values()) & files.keys()
            self.package_dirs[key] = (
                len(importers) >= 2 and len(present) >= 2 and bool(importers & present)
            )
        return self.package_dirs[key]

    def resolve_model_fn(
        self, src: SourceModule, scope: str, expr: cst.BaseExpression
    ) -> FnKey | None:
        """The def a model_fn argument names: a function (see `resolve_fn`), or a method of
        a class of this module, as `self.model_fn` inside the class, `Model.model_fn` or
        `Model(hparams).model_fn` (Estimator calls a bound method without `self`)."""
        key = self.resolve_fn(src, scope, expr)
        if key is not None or not isinstance(expr, cst.Attribute):
            return key
        owner = expr.value
        cls: str | None = None
        if isinstance(owner, cst.Call):
            owner = owner.func
        if isinstance(owner, cst.Attribute) and owner is not expr.value:
            # `model.Trainer(...).model_fn`: a method of a class of another module
            key = self.resolve_fn(src, scope, cst.Attribute(owner, expr.attr))
            return key if key is not None and "." in key[1] else None
        if isinstance(owner, cst.Name):
            parts = scope.split(".") if scope else []
            method = src.defs.get(scope)
            if (
                expr.value is owner
                and method is not None
                and len(parts) > 1
                and ".".join(parts[:-1]) not in src.defs  # a method, not a nested def
                and param_names(method)[:1] == [owner.value]
            ):
                cls = ".".join(parts[:-1])  # self.<method>, cls.<method>
            else:
                cls = _class_in_scope(src, parts, owner.value)
        if cls is None:
            return None
        key_name = f"{cls}.{expr.attr.value}"
        return (src.path, key_name) if key_name in src.defs else None

    def fn(self, key: FnKey) -> cst.FunctionDef:
        return self.modules[key[0]].defs[key[1]]

    # -- the pass -----------------------------------------------------------------------

    def build(self) -> ProjectIndex:
        """The index of the modules; a module nested too deeply for LibCST's visitors to
        walk (a valid file of 1,200 adjacent string literals) adds no roles, and the others
        are indexed without it: what its own file becomes is its own file's affair."""
        while True:
            try:
                index = self._build()
            except RecursionError:
                deep = {path for path, src in self.modules.items() if _too_deep(src.module)}
                if not deep - self.excluded:
                    raise
                self.excluded |= deep
                self._restart()
                continue
            unsized = self.unsized_training()
            refused = self.unselected_conversions() | unsized
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
        collectors = [_UseCollector(self, src) for src in self.modules.values()]
        self.collectors = {c.src.path: c for c in collectors}
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

    def mentioning(self, word: str) -> list[SourceModule]:
        """The project's modules whose text spells `word`."""
        return [src for src in self.modules.values() if word in src.text]

    def unread_mention(self, word: str) -> bool:
        """Does a file the pre-filter skipped spell `word` (a call est2tpu cannot see)?"""
        needle = word.encode()
        for path in self.unread:
            try:
                with open(path, "rb") as f:
                    if needle in f.read():
                        return True
            except OSError:
                return True  # unreadable now: it may call the helper
        return False

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
                for scope, call in _calls_named(src, short):
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

    def bind_builders(self, collectors: Sequence[_UseCollector]) -> None:
        """An Estimator whose model_fn is a parameter of the function that builds it runs
        what the project's calls of that function pass: one def of the project at every
        call, or the Estimator stays as it is."""
        for owner, node, plan, builder, param in self.builder_params:
            short = builder[1].rpartition(".")[2]
            passed: set[FnKey | None] = set()
            for at, _scope, bound in self.builder_calls(collectors, builder, param):
                passed.add(at.model_fn_of(bound) if bound is not None else None)
            if plan.tpu:
                plan.model_fn = next(iter(passed)) if len(passed) == 1 else None
                continue
            if len(passed) != 1 or None in passed:
                if len(passed) > 1 and None not in passed:
                    plan.refusal = (
                        f"Estimator left as it is: its model_fn is the parameter `{param}` of "
                        f"`{short}`, and the project's calls pass different functions; build "
                        "one TPUEstimator per model_fn by hand"
                    )
                continue
            plan.model_fn = next(iter(passed))
            assert plan.model_fn is not None
            plan.model_fn_reads_batch_size = _reads_params_batch_size(self.fn(plan.model_fn))
            plan.refusal = owner.ctor_refusal(node, plan)
            plan.convert = plan.refusal is None

    def refuse_reserved_keys_passed_in(self, collectors: Sequence[_UseCollector]) -> None:
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
                reserved = _reserved_keys_built_in(value)
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
        self, collectors: Sequence[_UseCollector], builder: FnKey, param: str
    ) -> Iterator[tuple[_UseCollector, str, cst.BaseExpression | None]]:
        """The project's calls of a function that builds an Estimator (`bind_builders`,
        `refuse_reserved_keys_passed_in`): each call's collector, set where the call is (see
        `_UseCollector.at`; set back after its calls), the call's scope, and what the call
        passes as `param`."""
        builder_fn = self.fn(builder)
        short = builder[1].rpartition(".")[2]
        for collector in collectors:
            saved = collector.scope, collector.seq
            try:
                for scope, call in collector.calls:
                    func = call.func
                    name = func.attr.value if isinstance(func, cst.Attribute) else dotted(func)
                    if (
                        name != short
                        or collector.ix.resolve_fn(collector.src, scope, func) != builder
                    ):
                        continue
                    bound = _bind(builder_fn, call).get(param)
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


class _TopLevel:
    """The top level of a project module, as the value query reads it from another module
    (`model.MODELS`): names bound once there by an assignment, and its defs."""

    def __init__(self, ix: Indexer, src: SourceModule) -> None:
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
        return self.ix.resolve_model_fn(self.src, "", expr) is not None

    def module_of(self, expr: cst.BaseExpression) -> value_query.Scope | None:
        return None


class _UseCollector(_Scoped):
    """Finds Estimator constructions and the calls that use them, in one module."""

    def __init__(self, indexer: Indexer, src: SourceModule) -> None:
        super().__init__()
        self.ix = indexer
        self.src = src
        # (scope, name) -> its bindings in source order, each with the position it is made
        # at: a name bound twice (the training input, later the evaluation one) means what
        # its live binding says at each use
        self.estimators: _Bindings[CallKey | None] = {}
        self.specs: _Bindings[tuple[Mode, cst.Call]] = {}
        self.numpy_inputs: _Bindings[cst.Call] = {}
        self.values: _Bindings[cst.BaseExpression] = {}  # names assigned a call or a lambda
        # names assigned anything (the value query's bindings: `fn = model_fn`,
        # `MODELS = {...}`, `model_fn = a if flag else b`)
        self.assigned: _Bindings[cst.BaseExpression] = {}
        self.seq = 0  # position in the walk: calls seen so far
        self.keys = CallKeys(src.path)
        self.node_keys: dict[int, CallKey] = {}  # id(call) -> its key
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

    def refuse_shim_only_uses(self) -> None:
        """Under --no-runtime, an Estimator fed by numpy/pandas_input_fn stays as it is."""
        for scope, _call, est_var, _mode, input_fn, seq in self.pending:
            with self.placed(scope, seq):
                ctor = self.lookup(self.estimators, est_var) if est_var else None
                numpy_call, _ = self.numpy_input(input_fn)
            plan = self.ix.index.ctors.get(ctor) if ctor is not None else None
            if plan is not None and numpy_call is not None and plan.convert:
                plan.convert = False
                plan.refusal = (
                    "Estimator left as it is: its numpy/pandas input functions need the "
                    "params-aware versions in est2tpu.runtime, which --no-runtime forbids"
                )

    def refuse_batch_size_in_unread_params(self) -> None:
        """An input_fn lambda that hands an object of the program's (`lambda:
        read_train(folder, hparams)`) to an input function batching by its `batch_size`
        (`.batch(hparams.batch_size)`, there or in a helper it calls), for an Estimator
        whose params est2tpu cannot read (a parameter, an HParams): those params are that
        object, most likely, and hold `batch_size`, a key TPUEstimator reserves (it raises
        ValueError when it is built). The Estimator stays as it is, reported where it is
        built: no batch size or params without the key can be given to it provably."""
        for scope, _call, est_var, _mode, input_fn, seq in self.pending:
            if (
                est_var is None
                or not isinstance(input_fn, cst.Lambda)
                or "params" in param_names(input_fn)
            ):
                continue
            with self.placed(scope, seq):
                ctor = self.estimator_of(est_var)
                key = self.input_fn_key(input_fn)
            plan = self.ix.index.ctors.get(ctor) if ctor is not None else None
            if (
                plan is None
                or not plan.convert
                or plan.params_keys is not None
                or plan.params_copy is not None
                or plan.params_batch is not None
                or key is None
            ):
                continue
            held = _batched_by_a_parameter(self.ix, key)
            if held is None:
                continue
            plan.convert = False
            plan.refusal = (
                f"Estimator left as it is: its input function `{self.code(input_fn)}` "
                f"batches by `{held[1]}` (in `{held[0]}`) of an object the lambda hands it, "
                "and est2tpu cannot read this Estimator's params: where they are that "
                "object, they hold 'batch_size', a key TPUEstimator reserves (it raises "
                "ValueError when it is built); build the TPUEstimator with params without "
                "it (tpu_runtime.params_without_batch_size(...): a dict or an HParams) and "
                "that size as its train/eval_batch_size, make the lambda take `params` and "
                "hand them on (TPUEstimator sets their batch_size), and batch with "
                "drop_remainder on TPU, by hand"
            )

    def spec_from_helper(
        self, arg: cst.BaseExpression, spec_var: str | None, mode: Mode
    ) -> cst.Call | None:
        """`train_spec = inputs.get_train_spec(path, args.batch_size)`, where the project
        function only returns `TrainSpec(make_input_fn(path, batch_size=batch_size), ...)`:
        that spec as this call makes it (the function's parameters replaced by what the call
        passes, its module's functions named through the module the call names), so that
        its input function is followed as if built here. The spec's rewrites and findings
        stay where the function returns it. None when any name of its input function means
        something only inside the function's module."""
        made = self.lookup(self.values, spec_var) if spec_var is not None else arg
        if not isinstance(made, cst.Call) or any(a.star for a in made.args):
            return None
        helper = self.ix.resolve_fn(self.src, self.here, made.func)
        if helper is None or "." in helper[1]:
            return None
        fn = self.ix.fn(helper)
        owner = self.ix.modules[helper[0]]
        returned = _returned_call(fn)
        name = owner.imports.tf_name(returned.func) if returned is not None else None
        if returned is None or name not in SPEC_CTORS or Mode(SPEC_CTORS[name]) is not mode:
            return None
        fn_arg = call_arg(returned, "input_fn", 0)
        if fn_arg is None or not isinstance(fn_arg.value, (cst.Call, cst.Name)):
            return None
        if isinstance(fn.params.star_arg, cst.Param) or fn.params.star_kwarg is not None:
            return None
        values = _call_values(fn, made)
        module: cst.BaseExpression | None = None
        reads = names_read(fn_arg.value)
        if helper[0] != self.src.path and any(
            read.value in owner.defs and read.value not in values for read in reads
        ):
            if not isinstance(made.func, cst.Attribute):
                return None  # `from inputs import get_train_spec`: its module has no name here
            module = made.func.value
        here = self.src.imports.bindings
        for read in reads:
            imported = owner.imports.bindings.get(read.value)
            if not (
                read.value in values
                or read.value in owner.defs
                or read.value in ("True", "False", "None")
                or (imported is not None and here.get(read.value) == imported)
            ):
                return None

        def replace(name: str) -> cst.BaseExpression | None:
            if name in values:
                return values[name]
            if name in owner.defs and module is not None:
                return cst.Attribute(module, cst.Name(name))
            return None

        input_fn = _substituted(fn_arg.value, replace)
        spec = cst.Call(returned.func, [cst.Arg(input_fn)])
        self.spec_sites[id(spec)] = (helper[0], helper[1], self.code(returned))
        return spec

    def helper_spec(
        self, arg: cst.BaseExpression, spec_var: str | None, est_name: str, mode: Mode
    ) -> None:
        """A TrainSpec/EvalSpec a project function builds and returns (`train_spec =
        inputs.get_train_spec(path, args.batch_size)`): est2tpu does not follow it, so its
        input function's batch size reaches no TPUEstimator; the spec says so."""
        made = self.lookup(self.values, spec_var) if spec_var is not None else arg
        if not isinstance(made, cst.Call):
            return
        helper = self.ix.resolve_fn(self.src, self.here, made.func)
        returned = _returned_call(self.ix.fn(helper)) if helper is not None else None
        if helper is None or returned is None:
            return
        owner = self.ix.modules[helper[0]]
        name = owner.imports.tf_name(returned.func)
        if name not in SPEC_CTORS or Mode(SPEC_CTORS[name]) is not mode:
            return
        key = (helper[0], helper[1], self.code(returned))
        spec = name.rpartition(".")[2]
        self.helper_specs.append((key, spec, self.code(made.func), est_name, self.here, self.seq))

    def finish(self) -> None:
        for site_key, spec, helper, holder, scope, seq in self.helper_specs:
            with self.placed(scope, seq):
                ctor = self.estimator_of(holder)
            plan = self.ix.index.ctors.get(ctor) if ctor is not None else None
            if plan is None or not (plan.convert or plan.tpu):
                continue
            size = "train_batch_size" if spec == "TrainSpec" else "eval_batch_size"
            self.ix.index.use_sites.setdefault(site_key, UseSite()).problems.append(
                f"this {spec} reaches train_and_evaluate through `{helper}(...)`, whose "
                "input function est2tpu cannot follow from the call (it reads names that "
                "only that function or its module has): its batch size reaches no "
                "TPUEstimator (it trains on CPU, fails on TPU); pass "
                f"{size}=<that batch size> to the TPUEstimator and batch by "
                "params['batch_size'] in the input function by hand"
            )
        for key, est_name, scope, seq in self.tande:
            with self.placed(scope, seq):
                ctor = self.estimator_of(est_name) if est_name else None
            self.ix.index.train_and_evaluate[key] = ctor
        for scope, call, est_var, mode, input_fn, seq in self.pending:
            self.seq = seq
            self.use(scope, call, est_var, mode, input_fn)

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
        self.assign_targets[id(node.value)] = target
        name = self.src.imports.tf_name(node.value.func)
        if name is None and call_kind(self.src.imports, node.value.func) is None:
            # `estimator = adanet.Estimator(...)` after `estimator = LinearClassifier(...)`:
            # the name no longer holds the Estimator est2tpu built (a project builder's
            # call is still followed through `values`)
            self.bind(self.estimators, target, None)
        if name in SPEC_CTORS:
            self.bind(self.specs, target, (Mode(SPEC_CTORS[name]), node.value))

    def bind(self, table: _Bindings[_T], name: str, value: _T) -> None:
        self.seq += 1  # a binding is a position of its own: a use before it never sees it
        table.setdefault((self.here, name), []).append((self.seq, value))

    def lookup(self, table: _Bindings[_T], name: str) -> _T | None:
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
        plan.params_keys = _dict_keys(literal) if params is not None else frozenset()
        if isinstance(literal, cst.Call) and binding is not None:
            # `params = FLAGS.flag_values_dict()` / `vars(args)`, with a batch_size flag
            if plan.model_fn_reads_batch_size:
                return (
                    f"params `{binding[1]}` holds every flag, 'batch_size' among them, a key "
                    "TPUEstimator reserves (and the model_fn reads it, which breaks export); "
                    "rename it and its readers by hand"
                )
            plan.params_copy = binding[1]
        if isinstance(literal, cst.Dict):
            reserved = sorted(
                str(el.key.evaluated_value)
                for el in literal.elements
                if isinstance(el, cst.DictElement)
                and isinstance(el.key, cst.SimpleString)
                and el.key.evaluated_value in ("batch_size", "context")
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
                    and el.key.evaluated_value == "batch_size"
                )
                if name_count(fn, name, keywords=False) == 2 and _same_at_ctor(fn, value):
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
        if isinstance(value, cst.Call) and flags and _BATCH_SIZE_FLAG.search(self.src.text):
            return (scope, name, fn), value
        return None, None

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
                defined.add(str(first.evaluated_value))
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

    def visit_Call(self, node: cst.Call) -> None:
        self.seq += 1
        kind = call_kind(self.src.imports, node.func)
        if kind is None and isinstance(node.func, (cst.Name, cst.Attribute)):
            self.calls.append((self.here, node))
            self.call_seq[id(node)] = self.seq
        if kind is not None:
            key = self.keys.next(self.here, kind)
            self.node_keys[id(node)] = key
            target = self.assign_targets.get(id(node))
            if kind == "ctor":
                self.ctor_seq[key] = self.seq
            if target is not None and kind == "ctor":
                self.bind(self.estimators, target, key)
            elif target is not None and kind == "numpy":
                self.bind(self.numpy_inputs, target, node)
        name = self.src.imports.tf_name(node.func)
        if name in ADD_METRICS:
            arg = call_arg(node, "metric_fn", 1)
            metric_fn = self.ix.resolve_fn(self.src, self.here, arg.value) if arg else None
            if metric_fn is not None:
                self.ix.metric_fns.add(metric_fn)
            return
        shim = self.shim_name(node.func) if name is None else None
        if shim == "evaluate":
            # `tpu_runtime.evaluate(estimator, input_fn, ..., examples=...)`: an evaluate()
            # a first run rewrote (its steps counted on TPU), of the same input function
            est = call_arg(node, "estimator", 0)
            arg = call_arg(node, "input_fn", 1)
            receiver = dotted(est.value) if est is not None else None
            if receiver is not None and arg is not None and self.runs_estimator(receiver):
                self.pending.append((self.here, node, receiver, Mode.EVAL, arg.value, self.seq))
            return
        if shim == "train_and_evaluate":
            name = "estimator.train_and_evaluate"  # the loop a first run wrote: same specs
        elif shim == "tf2.Estimator" and self.ix.facade:
            name = "estimator.Estimator"  # the facade's, a first run wrote: the same model_fn
        elif shim is not None and (shim == "model_to_estimator" or shim.startswith("premade.")):
            # A TPUEstimator a first run built (the Keras or premade builder): its input
            # functions are held to what TPUEstimator needs, as the original's were.
            plan = self.ix.index.ctors.setdefault(self.node_keys[id(node)], CtorPlan())
            plan.tpu = True
            plan.as_migrated = True
            self.tpu_ctor(node, plan)
            return
        if name is not None and name.startswith("estimator.") and name[10:] in PREMADE:
            plan = self.ix.index.ctors.setdefault(self.node_keys[id(node)], CtorPlan())
            plan.premade = True
            qualified = self.src.imports.qualify(node.func) or ""
            plan.refusal = premade_refusal(name[10:], qualified, node, self.ix.use_runtime)
            plan.convert = plan.refusal is None
            return
        if name in KERAS_TO_ESTIMATOR:
            plan = self.ix.index.ctors.setdefault(self.node_keys[id(node)], CtorPlan())
            plan.keras = True
            plan.convert = not any(a.star for a in node.args)
            if not plan.convert:
                plan.refusal = "model_to_estimator called with *args/**kwargs; convert it by hand"
            return
        if name in ESTIMATOR_CTORS:
            plan = self.ix.index.ctors.setdefault(self.node_keys[id(node)], CtorPlan())
            if "." in self.assign_targets.get(id(node), ""):
                self.ix.attribute_ctors.add(self.node_keys[id(node)])
            plan.tpu = name in TPU_ESTIMATOR_CTORS
            arg = call_arg(node, "model_fn", 0)
            fn_key = None
            if arg is not None:
                options = self.model_fn_choices(arg.value)
                fn_key = options[0] if options else None
                if options and len(options) > 1:
                    plan.model_fn_choices = options[1:]
                else:
                    fn_key = self.wrapped_model_fn(plan, arg.value, fn_key)
            plan.model_fn = fn_key
            if fn_key is None and arg is not None:
                self.model_fn_parameter(node, plan, arg.value)
            if fn_key is not None:
                plan.model_fn_reads_batch_size = any(
                    _reads_params_batch_size(self.ix.fn(key)) for key in model_fns_of(plan)
                )
            given = call_arg(node, "params", 3)
            if given is not None:
                self.ix.ctor_params[self.node_keys[id(node)]] = self.code(given.value)
            config = call_arg(node, "config", 2)
            plan.config_is_run_config = config is not None and self.is_run_config(config.value)
            if plan.tpu:
                self.wrapper_problem = None  # the user's own TPUEstimator: as it is
                self.tpu_ctor(node, plan)
            else:
                plan.refusal = self.ctor_refusal(node, plan) or self.ix.forced.get(
                    self.node_keys[id(node)]
                )
                plan.convert = plan.refusal is None
                params = call_arg(node, "params", 3)
                fn = self.src.defs.get(self.here)
                if (
                    plan.convert
                    and params is not None
                    and isinstance(params.value, cst.Name)
                    and fn is not None
                    and params.value.value in param_names(fn)
                    and self.lookup(self.values, params.value.value) is None
                ):
                    self.ix.params_params.append(
                        (plan, (self.src.path, self.here), params.value.value)
                    )
            return
        if name in SPEC_CTORS:
            arg = call_arg(node, "input_fn", 0)
            if arg is not None:
                self.pending.append(
                    (self.here, node, None, Mode(SPEC_CTORS[name]), arg.value, self.seq)
                )
            return
        if name == "estimator.train_and_evaluate":
            est = call_arg(node, "estimator", 0)
            est_name = dotted(est.value) if est else None
            self.tande.append((self.node_keys[id(node)], est_name, self.here, self.seq))
            for kw, pos in (("train_spec", 1), ("eval_spec", 2)):
                arg = call_arg(node, kw, pos)
                if arg is None or est_name is None:
                    continue
                spec_var = dotted(arg.value)
                spec = self.lookup(self.specs, spec_var) if spec_var else None
                spec_call = arg.value if isinstance(arg.value, cst.Call) else None
                mode = Mode.TRAIN if kw == "train_spec" else Mode.EVAL
                if spec is not None:
                    spec_call = spec[1]
                elif spec_call is not None or spec_var is not None:
                    inlined = self.spec_from_helper(arg.value, spec_var, mode)
                    if inlined is not None:
                        spec_call = inlined
                    else:
                        self.helper_spec(arg.value, spec_var, est_name, mode)
                if spec_call is not None:
                    fn_arg = call_arg(spec_call, "input_fn", 0)
                    if fn_arg is not None:
                        self.pending.append(
                            (self.here, spec_call, est_name, mode, fn_arg.value, self.seq)
                        )
            return
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in RUN_METHODS
            and isinstance(func.value, cst.Call)
            and call_kind(self.src.imports, func.value.func) == "ctor"
        ):
            # `tf.estimator.Estimator(...).train(input_fn)`: the Estimator is held by no
            # name; it gets one of its own, bound when its construction is walked, and the
            # use is recorded after it (`leave_Call`)
            arg = call_arg(node, "input_fn", 0)
            if arg is not None:
                held = f"<estimator of line {id(func.value)}>"
                self.assign_targets[id(func.value)] = held
                self.chained[id(node)] = (held, Mode(RUN_METHODS[func.attr.value]), arg.value)
            return
        if isinstance(func, cst.Attribute) and func.attr.value in RUN_METHODS:
            receiver = dotted(func.value)
            if receiver is None or not self.runs_estimator(receiver):
                return
            arg = call_arg(node, "input_fn", 0)
            if arg is not None:
                mode = Mode(RUN_METHODS[func.attr.value])
                self.pending.append((self.here, node, receiver, mode, arg.value, self.seq))

    def leave_Call(self, original_node: cst.Call) -> None:
        chained = self.chained.pop(id(original_node), None)
        if chained is not None:
            held, mode, input_fn = chained
            self.pending.append((self.here, original_node, held, mode, input_fn, self.seq))

    def runs_estimator(self, receiver: str) -> bool:
        """Whether a name may hold an Estimator: one built here, or maybe one a project
        function builds (the value of a call)."""
        held = self.lookup(self.values, receiver)
        return self.lookup(self.estimators, receiver) is not None or isinstance(held, cst.Call)

    def model_fn_parameter(self, node: cst.Call, plan: CtorPlan, expr: cst.BaseExpression) -> None:
        """`def build_estimator(model_fn, config): return Estimator(model_fn, ...)`: the
        model_fn is what the project's calls of the builder pass (`Indexer.bind_builders`)."""
        fn = self.src.defs.get(self.here)
        if fn is None or not isinstance(expr, cst.Name) or expr.value not in param_names(fn):
            return
        if self.lookup(self.values, expr.value) is None:  # not rebound before the Estimator
            self.ix.builder_params.append(
                (self, node, plan, (self.src.path, self.here), expr.value)
            )

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

    def at(self, scope: str, call: cst.Call) -> _UseCollector:
        """This collector set where `call` is, as when it was walked."""
        self.scope = scope.split(".") if scope else []
        self.seq = self.call_seq.get(id(call), self.seq)
        return self

    # -- the value query's view from this module (est2tpu.project.value_query.Scope) ----------

    def bound(self, name: str) -> cst.BaseExpression | None:
        return self.lookup(self.assigned, name)

    def is_definition(self, expr: cst.BaseExpression) -> bool:
        return self.ix.resolve_model_fn(self.src, self.here, expr) is not None

    def module_of(self, expr: cst.BaseExpression) -> value_query.Scope | None:
        name = dotted(expr)
        if name is None or name in self.src.defs:
            return None
        target = self.src.relative.get(name) or self.src.imports.bindings.get(name)
        other = self.ix.module_for(target, self.src.path) if target else None
        if other is None:
            return None
        return _TopLevel(self.ix, other)

    def model_fn_choices(self, expr: cst.BaseExpression) -> list[FnKey] | None:
        """The project defs an Estimator's model_fn argument may run (`model_fn = a if
        flag else b`, `MODELS[FLAGS.model]`: each; an alias: the one it names), or None
        when one of them is not a project def."""
        options = value_query.choices(self, expr)
        if len(options) == 1 and options[0][1] is expr:
            key = self.model_fn_of(expr)
            return [key] if key is not None else None
        keys = [
            self.model_fn_of(option)
            if where is self
            else self.ix.resolve_model_fn(where.src, "", option)
            if isinstance(where, _TopLevel)
            else None
            for where, option in options
        ]
        if not keys or any(key is None for key in keys):
            return None
        return list(dict.fromkeys(key for key in keys if key is not None))

    def model_fn_of(self, expr: cst.BaseExpression) -> FnKey | None:
        """The project def an Estimator's model_fn argument runs: named (see
        `Indexer.resolve_model_fn`), wrapped in `functools.partial`, returned by a project
        factory (`make_model_fn(hparams)`: the def it returns), or held in a name bound to
        one of those."""
        expr = _unwrap_partial(self, expr)
        key = self.ix.resolve_model_fn(self.src, self.here, expr)
        if key is not None:
            return key
        if isinstance(expr, cst.Name):
            held = self.lookup(self.values, expr.value)
            if isinstance(held, cst.Call):
                expr = _unwrap_partial(self, held)
                key = self.ix.resolve_model_fn(self.src, self.here, expr)
                if key is not None or expr is not held:
                    return key
        if isinstance(expr, cst.Call):
            factory = self.ix.resolve_fn(self.src, self.here, expr.func)
            if factory is not None and factory[1] in self.ix.modules[factory[0]].defs:
                return _returned_def(self.ix, factory)
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
            returned = _returned_call(fn)
            if returned is None or len(_body_statements(fn)) != 1:
                return fn_key
            wrapper, body = fn, returned
        else:
            return None
        if not isinstance(body, cst.Call) or any(a.star for a in body.args):
            return fn_key
        if any(list(iter_calls(a.value)) for a in body.args):
            return fn_key  # computes some of the model itself: it is (part of) the model_fn
        inner = self.ix.resolve_model_fn(src, scope, body.func)
        if inner is None or inner == fn_key:
            return fn_key
        inner_fn = self.ix.fn(inner)
        if isinstance(inner_fn.params.star_arg, cst.Param) or inner_fn.params.star_kwarg:
            return fn_key
        passed = _bind(inner_fn, body).get("params")
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

    def shim_name(self, func: cst.BaseExpression) -> str | None:
        """`premade.DNNClassifier` for `tpu_runtime.premade.DNNClassifier`, and so on."""
        qualified = self.src.imports.qualify(func) or ""
        return qualified[len(SHIM) :] if qualified.startswith(SHIM) else None

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

    # -- one use of an input function --------------------------------------------------

    def use(
        self,
        scope: str,
        call: cst.Call,
        est_var: str | None,
        mode: Mode,
        input_fn: cst.BaseExpression,
    ) -> None:
        saved, self.scope = self.scope, scope.split(".") if scope else []
        try:
            self.reach = {}
            ctor = self.estimator_of(est_var) if est_var else None
            plan = self.ix.index.ctors.get(ctor) if ctor is not None else None
            if est_var and (plan is None or not (plan.convert or plan.tpu)):
                # An estimator est2tpu leaves as it is: it passes its own params (no
                # "batch_size") to this input function, which may feed a TPUEstimator too.
                held = self.lookup(self.values, est_var)
                holder = self.code(held.func) if isinstance(held, cst.Call) else est_var
                self.consumer(input_fn, f"`{holder}`")
            if est_var and ctor is None:
                return  # a call's result, and not an Estimator the index knows of
            enclosing = self.src.defs.get(scope)
            if (
                est_var is None
                and isinstance(input_fn, cst.Name)
                and enclosing is not None
                and input_fn.value in param_names(enclosing)
                and self.lookup(self.assigned, input_fn.value) is None
            ):
                # `def get_train_spec(train_fn, steps): return TrainSpec(train_fn, ...)`: the
                # input function is what each call passes, followed where the spec it
                # returns reaches an Estimator (`spec_from_helper`, `helper_spec`)
                return
            # A spec by its place among the scope's specs (the rule's key_of), any other call
            # by its text.
            site_key = self.spec_sites.get(id(call)) or self.node_keys.get(
                id(call), (self.src.path, scope, self.code(call))
            )
            site = self.ix.index.use_sites.setdefault(site_key, UseSite())
            self.ctor_key = ctor
            self.ctor_scope = ctor[1] if ctor is not None else None
            self.ctor_path = ctor[0] if ctor is not None else None
            self.ctor_at = self.ctor_seq.get(ctor) if ctor is not None else None
            if plan is not None and (plan.convert or (plan.tpu and mode not in plan.off_tpu)):
                # Whether or not its input can be rewritten, this call runs a TPUEstimator.
                site.tpu = True
            if plan is not None and plan.convert and ctor is not None:
                self.ix.ctor_modes.setdefault(ctor, set()).add(mode)
            if ctor is not None:
                self.ix.ctor_sites.setdefault(ctor, []).append(site)
            result = self.analyse_input_fn(input_fn, mode, site, commit=False)
            commit = plan is not None and (
                plan.convert
                # A TPUEstimator (from a run that stopped before writing the input
                # function's file) with the batch size this input function uses, which it
                # cannot call yet: it takes no params.
                or (
                    plan.tpu
                    and site.lacks_params
                    and result is not None
                    and plan.tpu_batch_sizes.get(mode) == result.code
                )
                # A TPUEstimator as est2tpu writes it, whose input function reads its
                # params["batch_size"] already (written by that run, or by the user first),
                # or batches by the size it has: planned as the Estimator's a one-shot run
                # converts, so its batches (and its helpers') get what that run gives them
                # (drop_remainder on TPU). Any drop_remainder of its own stays.
                or (
                    plan.as_migrated
                    and mode not in plan.off_tpu
                    and (
                        result is None
                        or result.from_params
                        or plan.tpu_batch_sizes.get(mode) == result.code
                    )
                )
            )
            if commit and result is not None and not result.portable:
                site.problems.append(_not_at_ctor(result, self.ctor_where(scope, result)))
                commit = False
            elif (
                plan is not None
                and plan.tpu
                and mode not in plan.off_tpu
                and not commit
                and result is not None
                and not result.from_params
            ):
                # A TPUEstimator the project has (or a first run made) whose input function
                # still batches by a size of its own: what the original's refusal said holds.
                site.problems.append(
                    _batch_not_from_params(plan, result, self.ctor_where(scope, result))
                )
            if commit:
                self.analyse_input_fn(input_fn, mode, site, commit=True)
                if ctor is not None:
                    files = self.ix.ctor_files.setdefault(ctor, set())
                    files.add(site_key[0])
                    fn_key = self.input_fn_key(input_fn)
                    if fn_key is not None:
                        files.add(fn_key[0])
                if site.unsized and plan is not None:
                    plan.unsized_modes.add(mode)
        finally:
            self.scope = saved
        if plan is None or result is None or not commit:
            return
        plan.batch_sizes.setdefault(mode, []).append(result)

    def consumer(self, expr: cst.BaseExpression, what: str) -> None:
        """`expr` (an input function, or what makes one) reaches `what`, which est2tpu
        leaves as it is (InputFnPlan.other_consumers)."""
        key = self.input_fn_key(expr)
        if key is not None:
            self.ix.consumers.setdefault(key, []).append(what)

    def input_fn_key(self, expr: cst.BaseExpression, depth: int = 0) -> FnKey | None:
        """The project def an input_fn argument runs, as `analyse_input_fn` finds it (a def,
        a name bound to one, a factory's closure, a lambda or partial calling one), without
        planning anything."""
        expr = _unwrap_partial(self, expr)
        if isinstance(expr, cst.Lambda):
            expr = expr.body.func if isinstance(expr.body, cst.Call) else expr.body
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Call):
            factory = self.ix.resolve_fn(self.src, self.here, expr.value.func)
            index = _int_subscript(expr)
            if factory is None or index is None:
                return None
            return _returned_def(self.ix, factory, index)
        if isinstance(expr, cst.Call):
            factory = self.ix.resolve_fn(self.src, self.here, expr.func)
            if factory is None or factory[1] not in self.ix.modules[factory[0]].defs:
                return None
            return _returned_def(self.ix, factory)
        key = self.ix.resolve_fn(self.src, self.here, expr)
        if key is None and isinstance(expr, cst.Name) and depth < 4:
            value = self.lookup(self.values, expr.value)
            if value is not None:
                return self.input_fn_key(value, depth + 1)
        return key

    def passed_on(self) -> None:
        """Calls of code est2tpu does not migrate (not TensorFlow's, not the project's) that
        receive an input function the index plans a batch rewrite for: `adanet.Evaluator(
        input_fn=make_input("train", ...))` calls it with params of its own."""
        keys = {k for k, p in self.ix.index.input_fns.items() if p.batch_to_params}
        # names first: resolving every argument of every call would be costly
        names = {part for _, path in keys for part in path.split(".")}
        if not names:
            return
        used = {id(call) for _, call, *_ in self.pending}  # `use` saw these
        for scope, call in self.calls:
            if self.src.imports.tf_name(call.func) is not None or self.shim_name(call.func):
                continue
            if id(call) in used:
                continue
            args = [a for a in call.args if any(n in self.code(a.value) for n in names)]
            if not args:
                continue
            self.at(scope, call)
            if self.ix.resolve_fn(self.src, scope, call.func) is not None:
                continue  # a project function: the index follows what it does
            if _partial_of(self, call) is not None:
                continue  # the partial object is the input function, where it is used
            for arg in args:
                key = self.input_fn_key(arg.value)
                if key in keys:
                    self.ix.consumers.setdefault(key, []).append(f"`{self.code(call.func)}`")

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
            target_key = self.ix.resolve_fn(self.src, self.here, body.func)
            if target_key is None and _is_get_next(body):
                site.problems.append(
                    "the input_fn lambda returns tensors from an iterator (`get_next()`): "
                    "TPUEstimator on TPU needs the tf.data.Dataset itself, batched by "
                    "params['batch_size']; make it `lambda params: <the dataset>` by hand"
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
            bindings = _bind(fn, body)
        elif isinstance(expr, cst.Call):
            factory = self.ix.resolve_fn(self.src, self.here, expr.func)
            partial_of = _partial_of(self, expr)
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
                bindings = _bind(self.ix.fn(target_key), expr.with_changes(args=expr.args[1:]))
            elif factory is None:
                site.problems.append("input_fn comes from a call that is not in this project")
                return None
            else:
                inner = _returned_def(self.ix, factory)
                numpy_made = _returned_numpy_call(self.ix, factory) if inner is None else None
                if numpy_made is not None:
                    return self.numpy_factory(factory, numpy_made, expr, mode, site, commit)
                chained = (
                    _chained_factory_call(self.ix, factory, expr)
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
                bindings = _bind(self.ix.fn(factory), expr)
        elif isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Call):
            # one of the input functions a project factory returns together
            made = expr.value
            factory = self.ix.resolve_fn(self.src, self.here, made.func)
            index = _int_subscript(expr)
            inner = (
                _returned_def(self.ix, factory, index)
                if factory is not None and index is not None
                else None
            )
            if factory is None or inner is None:
                over = (
                    _lambda_over_local(self.ix.fn(factory), index)
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
            bindings = _bind(self.ix.fn(factory), made)
        else:
            target_key = self.ix.resolve_fn(self.src, self.here, expr)
            if target_key is None:
                site.problems.append(
                    "input_fn could not be resolved to a function in this project; it must "
                    "accept `params` and batch with params['batch_size']"
                )
                return None
        plan = self.ix.index.input_fns.setdefault(target_key, InputFnPlan())
        plan.modes.add(mode)
        fn = self.ix.fn(target_key)
        plan.helper_repeats = plan.helper_repeats or _helper_repeats(self.ix, target_key)
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
            plan.needs_params = True
            plan.direct = True
            if commit and mode is Mode.EVAL and target_key[0] == self.src.path:
                examples = _one_pass_over(self.src, fn)
                # read again where evaluate() is called: the module's names, not a local's
                user = self.src.defs.get(self.here)
                shadowed = (
                    _assigned_in(user) | set(param_names(user)) if user is not None else set()
                )
                if examples is not None and not shadowed & _names_in(examples):
                    site.examples_code = examples
        calls = batch_calls(fn)
        chain = _helper_chain(self.ix, target_key) if not calls else None
        if chain is not None:
            return self.through_helper(
                chain, target_key, factory, via_lambda, via_partial, bindings, mode, site, commit
            )
        if len(calls) != 1:
            if not calls:
                plan.problems.append(_why_unbatched(self.ix, target_key))
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

    def through_helper(
        self,
        chain: _HelperChain,
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
            default = chain.new_default or _default(self.ix.fn(first), chain.param)
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
            plan.helper_arg = _bind_index(self.ix.fn(first), chain.call).get(chain.param)
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
            spare = _unread_params(self.ix.fn(holder))
            if len(spare) == 1 and spare[0] in bindings:
                found = self.batch_from_call_site(mode, bindings[spare[0]])
                return dataclasses.replace(found, from_params=True)
            default = _default(self.ix.fn(holder), spare[0]) if len(spare) == 1 else None
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
                        site.lambda_batch_arg = _arg_index(via_lambda, bound)
                    return self.batch_from_call_site(mode, bound)
                default = _default(fn, name)
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
        head = (dotted(size) or "").partition(".")[0] or _subscript_head(size)
        if head and head in bindings and not isinstance(size, cst.Name):
            passed = bindings[head]
            moved = _substituted(size, lambda n: passed if n == head else None)
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
        elif head and head not in fn_params and head not in _assigned_in(fn):
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
        plan.problems.append(
            f"the batch size `{self.code_of(owner_src, size)}` is not a literal, a module "
            "constant or an argument; move it to the TPUEstimator and read params['batch_size']"
        )
        return None

    @staticmethod
    def binding_scope(owner_src: SourceModule, key: FnKey, head: str) -> str:
        """The def around the input function `key` that binds `head`, or "" (the module)."""
        parts = key[1].split(".")[:-1]
        for i in range(len(parts), 0, -1):
            fn = owner_src.defs.get(".".join(parts[:i]))
            if fn is not None and (head in param_names(fn) or head in _assigned_in(fn)):
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
            if head not in param_names(fn) and head not in _assigned_in(fn):
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
        key = self.ix.collectors[factory[0]].node_keys.get(id(numpy_call))
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
            bound = _bind(fn, call).get(size.value.value)
            default = _default(fn, size.value.value)
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
        elif _subscript_head(size.value) in param_names(fn) and not isinstance(
            size.value, cst.Name
        ):
            # `batch_size=hparams.batch_size` of an object the call passes: the same read
            # of what it passes, where the call is
            head = _subscript_head(size.value)
            bound = _bind(fn, call).get(head)
            batch = (
                self.batch_from_call_site(
                    mode, _substituted(size.value, lambda n: bound if n == head else None)
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

    def problem_count(self, site: UseSite) -> int:
        """The findings planned so far for this site and for the input functions."""
        plans = self.ix.index.input_fns.values()
        return len(site.problems) + sum(len(plan.problems) for plan in plans)

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
            builder = self.ix.resolve_fn(self.src, self.here, value.func)
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
                        for param, arg in _bind(self.ix.fn(builder), value).items()
                        if (path := dotted(arg)) is not None
                        and (
                            isinstance(arg, cst.Name)
                            or (caller is not None and path not in _assigned_attributes(caller))
                        )
                    }
                return key
        return None

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
            elif plan.batch_param is not None and plan.batch_param in _bind(fn, call):
                direct.batch = self.code(_bind(fn, call)[plan.batch_param])
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

    def numpy_input(self, expr: cst.BaseExpression) -> tuple[cst.Call | None, str]:
        """A numpy_input_fn/pandas_input_fn call used as the input_fn, and its scope."""
        if isinstance(expr, cst.Call) and call_kind(self.src.imports, expr.func) == "numpy":
            return expr, self.here  # TensorFlow's, or the shim's (migrated before)
        if isinstance(expr, cst.Name):
            hit = self.lookup(self.numpy_inputs, expr.value)
            if hit is not None:
                return hit, self.here
        return None, self.here

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
        head = parts[0] or _subscript_head(expr)  # `hparams["batch_size"]` reads hparams
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

    ctor_key: CallKey | None = None
    ctor_scope: str | None = None
    ctor_path: str | None = None
    ctor_at: int | None = None  # the constructor's position in this module's walk
    reach: dict[str, str] = {}  # noqa: RUF012 - replaced, never mutated

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

    @staticmethod
    def code_of(src: SourceModule, node: cst.CSTNode) -> str:
        return src.module.code_for_node(node)


# How deeply a module's LibCST tree may nest for the index's recursive walks (Python's
# default recursion limit is 1,000 frames; a walk takes one or two per level).
_MAX_TREE_DEPTH = 300


def _too_deep(module: cst.Module) -> bool:
    """Does the tree nest deeper than the index's walks can follow? Counted without
    recursion."""
    stack: list[tuple[cst.CSTNode, int]] = [(module, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > _MAX_TREE_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in node.children)
    return False


def nearest_claim(paths: Sequence[str], dotted_name: str, near: str | None) -> str | None:
    """Which of the files that may be imported as `dotted_name` an import in `near` means.

    One claimer is the answer. Several (`trainer/model.py` in each of a monorepo's
    trainers): the import can only reach a file whose import root (the directory the name
    counts from) holds the importing file, as on `sys.path` when that program runs; of
    those, the deepest root. A tie, or no importing file, is ambiguous: None.
    """
    if len(paths) == 1:
        return paths[0]
    if near is None:
        return None
    here = PurePath(near)
    depth = dotted_name.count(".") + 1
    ranked: list[tuple[int, str]] = []
    for path in paths:
        module = PurePath(path)
        module = module.parent if module.name == "__init__.py" else module.with_suffix("")
        if len(module.parents) < depth:
            continue
        root = module.parents[depth - 1]
        if here.is_relative_to(root):
            ranked.append((len(root.parts), path))
    ranked.sort(reverse=True)
    if not ranked or (len(ranked) > 1 and ranked[0][0] == ranked[1][0]):
        return None
    return ranked[0][1]


def _class_in_scope(src: SourceModule, scope: list[str], name: str) -> str | None:
    """The dotted path of the class `name` visible from `scope`, if it is one of this
    module's classes (a def path with methods under it that is not itself a def)."""
    for i in range(len(scope), -1, -1):
        candidate = ".".join([*scope[:i], name])
        if candidate in src.defs:
            return None  # a function: its nested defs are no attributes
        if any(key.startswith(f"{candidate}.") for key in src.defs):
            return candidate
    return None


def _not_at_ctor(result: BatchSize, where: str = "") -> str:
    return (
        f"the batch size `{result.code}` is not defined where the Estimator is built{where}; "
        "pass train/eval/predict_batch_size to the TPUEstimator by hand"
    )


def _batch_not_from_params(plan: CtorPlan, result: BatchSize, where: str = "") -> str:
    if not result.portable:
        return _not_at_ctor(result, where)  # the first run's words: a CI check repeats them
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


def _unwrap_partial(collector: _UseCollector, expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, cst.Call):
        qn = collector.src.imports.qualify(expr.func)
        if qn == "functools.partial" and expr.args:
            return expr.args[0].value
    return expr


def _partial_of(collector: _UseCollector, call: cst.Call) -> cst.BaseExpression | None:
    """The function a `functools.partial(f, ...)` call wraps."""
    if collector.src.imports.qualify(call.func) != "functools.partial":
        return None
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    return call.args[0].value


# Dataset methods that keep a repeated dataset endless.
_KEEPS_REPEATING = frozenset({"map", "batch", "prefetch", "shuffle", "cache"})


def _helper_repeats(ix: Indexer, key: FnKey) -> bool:
    """Whether the input function's dataset is made by a project helper that repeats it.

    `dataset = make(..., shuffle_and_repeat=True)` (the input function's first statement,
    and its only `.repeat` nowhere else) where `make` ends in `return D`, and its body is
    statements `D = ...`, one `if shuffle_and_repeat: D = D.<...>.repeat()` and then only
    `D = D.map/batch/prefetch/shuffle/cache(...)`, with the flag a literal True here.
    """
    fn = ix.fn(key)
    src = ix.modules[key[0]]
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else []
    first = body[0] if body else None
    if not isinstance(first, cst.SimpleStatementLine) or len(first.body) != 1:
        return False
    made = first.body[0]
    if not (isinstance(made, cst.Assign) and isinstance(made.value, cst.Call)):
        return False
    helper_key = ix.resolve_fn(src, key[1], made.value.func)
    if helper_key is None or helper_key == key:
        return False
    helper = ix.fn(helper_key)
    steps = helper.body.body if isinstance(helper.body, cst.IndentedBlock) else []
    last = steps[-1] if steps else None
    if not (
        isinstance(last, cst.SimpleStatementLine)
        and isinstance(last.body[0], cst.Return)
        and isinstance(last.body[0].value, cst.Name)
    ):
        return False
    name = last.body[0].value.value
    flags = _bind(helper, made.value)
    repeated = False
    for stmt in steps[:-1]:
        if repeated:
            # a nested def (the map function) leaves the dataset as it is
            if isinstance(stmt, cst.FunctionDef):
                continue
            if _kept_chain(stmt, name) not in _KEEPS_REPEATING:
                return False
            continue
        if isinstance(stmt, cst.If) and _repeats_when(stmt, name, flags):
            repeated = True
        elif any(_method(c) == "repeat" for c in iter_calls(stmt, into_defs=True)):
            return False
    return repeated


def _repeats_when(stmt: cst.If, name: str, flags: dict[str, cst.BaseExpression]) -> bool:
    """`if flag: D = D.<...>.repeat()` with `flag` passed as True."""
    flag = stmt.test
    passed = flags.get(flag.value) if isinstance(flag, cst.Name) else None
    if stmt.orelse is not None or not isinstance(stmt.body, cst.IndentedBlock):
        return False
    inner = stmt.body.body
    return (
        isinstance(passed, cst.Name)
        and passed.value == "True"
        and len(inner) == 1
        and _kept_chain(inner[0], name) == "repeat"
    )


def _method(call: cst.Call) -> str:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else ""


def _kept_chain(stmt: cst.BaseStatement, name: str) -> str | None:
    """`D = D.a(...).b(...)` -> "b" when every method of the chain keeps an endless dataset
    endless (or is the last, returned for the caller to judge); None otherwise."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    assign = stmt.body[0]
    if not (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0].target, cst.Name)
        and assign.targets[0].target.value == name
    ):
        return None
    expr: cst.BaseExpression = assign.value
    methods: list[str] = []
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        methods.append(expr.func.attr.value)
        expr = expr.func.value
    if not methods or not (isinstance(expr, cst.Name) and expr.value == name):
        return None
    if any(m not in _KEEPS_REPEATING for m in methods[1:]):
        return None
    return methods[0]


def _bind(fn: cst.FunctionDef, call: cst.Call) -> dict[str, cst.BaseExpression]:
    """Map a def's parameter names to the expressions a call passes for them."""
    names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    bound: dict[str, cst.BaseExpression] = {}
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for name, arg in zip(names, positional):
        bound[name] = arg.value
    for arg in call.args:
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg.value
    return bound


def _unread_params(fn: cst.FunctionDef) -> list[str]:
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


def _call_values(fn: cst.FunctionDef, call: cst.Call) -> dict[str, cst.BaseExpression]:
    """What each parameter of `fn` is in `call`: the argument bound to it, else its default
    (parameters with neither are left out)."""
    bound = _bind(fn, call)
    values: dict[str, cst.BaseExpression] = {}
    for name in param_names(fn):
        value = bound.get(name, _default(fn, name))
        if value is not None:
            values[name] = value
    return values


def _substituted(
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


def _default(fn: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params):
        if p.name.value == name and p.default is not None:
            return p.default
    return None


def _int_subscript(expr: cst.Subscript) -> int | None:
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    value = expr.slice[0].slice.value
    return int(value.value) if isinstance(value, cst.Integer) else None


def _arg_index(lam: cst.Lambda, value: cst.BaseExpression) -> int | None:
    body = lam.body
    assert isinstance(body, cst.Call)
    for i, arg in enumerate(body.args):
        if arg.value is value:
            return i
    return None


def _returned_def(ix: Indexer, factory: FnKey, index: int | None = None) -> FnKey | None:
    """The def nested in `factory` that it returns (element `index` of the tuple it
    returns, `return train_input_fn, eval_input_fn, vocabulary`)."""
    returned, _ = _returns(ix.fn(factory))
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


def _returns(
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


def _lambda_over_local(fn: cst.FunctionDef, index: int) -> str | None:
    """The name a factory binds (not a parameter) that the lambda it returns as element
    `index` reads: `dataset = ....batch(n)`, `return lambda: iterator(dataset), ...`."""
    returned, bound = _returns(fn)
    if len(returned) != 1 or not isinstance(returned[0], cst.Tuple):
        return None
    elements = returned[0].elements
    value = elements[index].value if index < len(elements) else None
    if isinstance(value, cst.Name) and len(bound.get(value.value, [])) == 1:
        value = bound[value.value][0]
    if not isinstance(value, cst.Lambda) or param_names(value):
        return None
    read = [
        n.value
        for n in names_read(value.body)
        if n.value not in param_names(fn) and _is_dataset_chain(bound.get(n.value, [])[-1:])
    ]
    return read[0] if read else None


_DATASET_METHODS = frozenset(
    ("batch", "padded_batch", "repeat", "shuffle", "map", "prefetch", "cache", "filter", "take")
)


def _is_dataset_chain(values: list[cst.BaseExpression]) -> bool:
    """A value made by a tf.data.Dataset method (`....batch(n)`, `.shuffle(k).repeat()`)."""
    return bool(values) and (
        isinstance(values[0], cst.Call)
        and isinstance(values[0].func, cst.Attribute)
        and values[0].func.attr.value in _DATASET_METHODS
    )


def _returned_numpy_call(ix: Indexer, factory: FnKey) -> cst.Call | None:
    """The numpy_input_fn/pandas_input_fn call a factory returns, directly or through a
    local name bound only to it: its one return."""
    returned, bound = _returns(ix.fn(factory))
    if len(returned) != 1:
        return None
    value = returned[0]
    if isinstance(value, cst.Name) and len(bound.get(value.value, [])) == 1:
        value = bound[value.value][0]
    imports = ix.modules[factory[0]].imports
    if isinstance(value, cst.Call) and call_kind(imports, value.func) == "numpy":
        return value
    return None


def _bind_index(fn: cst.FunctionDef, call: cst.Call) -> dict[str, int]:
    """Map a def's parameter names to the index in `call.args` of the argument for them."""
    names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    found: dict[str, int] = {}
    positional = [i for i, a in enumerate(call.args) if a.keyword is None and not a.star]
    for name, i in zip(names, positional):
        found[name] = i
    for i, arg in enumerate(call.args):
        if arg.keyword is not None:
            found[arg.keyword.value] = i
    return found


@dataclasses.dataclass
class _HelperChain:
    """An input function's `return helper(...)`, where the helper (or one it calls, passing
    its parameter on) batches by a parameter of its own."""

    call: cst.Call
    param: str  # the parameter of the first helper that carries the batch size
    size: cst.BaseExpression | None  # what the call passes for it (None: its default)
    helpers: list[FnKey]  # the helper called first ... the one that batches
    one_shot: bool  # the first returns <one-shot iterator over its dataset>.get_next()
    repeats: bool
    batch: cst.Call  # the call that makes the batches, in the last helper
    # the first helper batches by a module constant: it gains `param`, defaulting to it
    new_default: cst.Name | None = None
    # the input function unpacks the first helper's tensors into these names and returns a
    # structure of them: it maps that structure over the helper's dataset instead
    unpacked: list[str] | None = None
    # `param` is the params dict the helper batches by (`.batch(p["batch_size"])`), and
    # the input function passes it its own `params`, the ones the Estimator hands it
    passes_params: bool = False


_ITERATOR_METHODS = frozenset(
    {"make_one_shot_iterator", "make_initializable_iterator", "get_next", "__iter__"}
)


def _is_iterator_call(src: SourceModule, call: cst.Call) -> bool:
    name = src.imports.tf_name(call.func) or ""
    if name.startswith("data.") and name[5:] in _ITERATOR_METHODS:
        return True
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in _ITERATOR_METHODS


def _makes_one_shot(src: SourceModule, expr: cst.BaseExpression) -> bool:
    """`E.make_one_shot_iterator()` or `tf.compat.v1.data.make_one_shot_iterator(E)`."""
    if not isinstance(expr, cst.Call):
        return False
    if src.imports.tf_name(expr.func) == "data.make_one_shot_iterator":
        return len(expr.args) == 1 and expr.args[0].keyword is None and not expr.args[0].star
    func = expr.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "make_one_shot_iterator"
        and not expr.args
        and src.imports.tf_name(func) is None
    )


def _returns_one_shot(src: SourceModule, fn: cst.FunctionDef) -> bool:
    """The function ends in its one return, `return <one-shot iterator over E>.get_next()`
    (the iterator made in that return, or right before it in a name used nowhere else),
    and makes no other iterator: the form TPU005 turns into `return E`."""
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else []
    returned, _ = _returns(fn)
    iterators = [c for c in iter_calls(fn) if _is_iterator_call(src, c)]
    if len(returned) != 1 or not body or len(iterators) != 2:
        return False
    last = body[-1]
    if not (
        isinstance(last, cst.SimpleStatementLine)
        and len(last.body) == 1
        and isinstance(last.body[0], cst.Return)
    ):
        return False
    value = last.body[0].value
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "get_next"
        and not value.args
    ):
        return False
    held = value.func.value
    if _makes_one_shot(src, held):
        return True
    if not isinstance(held, cst.Name) or len(body) < 2:
        return False
    made = body[-2]
    return (
        isinstance(made, cst.SimpleStatementLine)
        and len(made.body) == 1
        and isinstance(made.body[0], cst.Assign)
        and len(made.body[0].targets) == 1
        and isinstance(made.body[0].targets[0].target, cst.Name)
        and made.body[0].targets[0].target.value == held.value
        and _makes_one_shot(src, made.body[0].value)
        and name_count(fn, held.value) == 2
    )


def _returns_unpacked_one_shot(src: SourceModule, fn: cst.FunctionDef) -> bool:
    """The function ends `a, b = <one-shot iterator over E>.get_next()`, `return a, b` (the
    iterator made there, or right before in a name used nowhere else), its one return, and
    makes no other iterator: it returns E's elements, as TPU005 makes it do."""
    body = list(fn.body.body) if isinstance(fn.body, cst.IndentedBlock) else []
    returned, _ = _returns(fn)
    iterators = [c for c in iter_calls(fn) if _is_iterator_call(src, c)]
    if len(returned) != 1 or len(body) < 2 or len(iterators) != 2:
        return False
    unpacked = unpack_target(body[-2])
    if unpacked is None or not returns_names(body[-1], unpacked[0]):
        return False
    names, value = unpacked
    if any(name_count(fn, name) != 2 for name in names):
        return False
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "get_next"
        and not value.args
    ):
        return False
    held = value.func.value
    if _makes_one_shot(src, held):
        return True
    made = unpack_target(body[-3]) if len(body) >= 3 else None
    return (
        isinstance(held, cst.Name)
        and made is not None
        and made[0] == [held.value]
        and _makes_one_shot(src, made[1])
        and name_count(fn, held.value) == 2
    )


def _unpacks_helper(fn: cst.FunctionDef) -> tuple[cst.Call, list[str]] | None:
    """The input function ends `a, b = helper(...)`, `return <a tuple or dict of a, b and
    module names>`: the call and the names."""
    block = last_block(fn)
    if block is None or len(block.body) < 2:
        return None
    unpacked = unpack_target(block.body[-2])
    value = returned_value(block.body[-1])
    if unpacked is None or value is None:
        return None
    names, call = unpacked
    if not isinstance(call, cst.Call) or len(names) < 2 or not is_structure(value):
        return None
    locals_ = (_assigned_in(fn) | set(param_names(fn))) - set(names)
    if _names_in(node_code(value)) & locals_:
        return None
    # the names hold the helper's tensors only for the return
    if any(name_count(fn, n) != 1 + name_count(value, n) for n in names):
        return None
    return call, names


def _returns_batched_dataset(ix: Indexer, helpers: list[FnKey], batch: cst.Call) -> bool:
    """The first helper ends `return D`, `D` bound from the dataset its chain batches (`D =
    D.shuffle(n).batch(b)` in it, or `D = <the next helper>(...)`), then only `D =
    D.<method>(...)`: it returns that tf.data.Dataset, as TPU005 makes a helper that ended
    `a, b = <one-shot iterator>.get_next()`, `return a, b` return it. An input function
    that unpacks it (`a, b = helper(...)`) unpacks a Dataset, which no Estimator's graph
    can iterate: that helper was migrated before its input function (a partial run, or a
    user's first module), which maps over the dataset as a one-shot run makes it do."""
    key = helpers[0]
    fn, src = ix.fn(key), ix.modules[key[0]]
    body = list(fn.body.body) if isinstance(fn.body, cst.IndentedBlock) else []
    value = returned_value(body[-1]) if body else None
    if not isinstance(value, cst.Name) or src.imports.tf_name(batch.func) is not None:
        return False
    name = value.value
    for stmt in reversed(body[:-1]):
        bound = unpack_target(stmt)
        if bound is None or bound[0] != [name]:
            return False
        made = bound[1]
        if len(helpers) == 1 and any(c is batch for c in iter_calls(made)):
            return True
        if (
            len(helpers) > 1
            and isinstance(made, cst.Call)
            and ix.resolve_fn(src, key[1], made.func) == helpers[1]
        ):
            return True
        root = made
        while isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute):
            root = root.func.value
        if not (isinstance(root, cst.Name) and root.value == name and root is not made):
            return False
    return False


def _has_repeat(fn: cst.FunctionDef) -> bool:
    return any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value == "repeat" for c in iter_calls(fn)
    )


def _helper_chain(ix: Indexer, key: FnKey) -> _HelperChain | None:
    """How an input function without `.batch(...)` of its own batches in a project helper
    whose value it returns, if a reader sees it at once: see `_HelperChain`."""
    fn = ix.fn(key)
    src = ix.modules[key[0]]
    returned, bound = _returns(fn)
    call = returned[0] if len(returned) == 1 else None
    if isinstance(call, cst.Name) and len(bound.get(call.value, [])) == 1:
        call = bound[call.value][0]  # `dataset = helper(...)`, `return dataset`
    unpacked = _unpacks_helper(fn) if len(returned) == 1 else None
    if unpacked is not None:
        call = unpacked[0]
    elif (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "map"
        and isinstance(call.func.value, cst.Call)
        and len(call.args) == 1
        and isinstance(call.args[0].value, cst.Lambda)
        and is_structure(call.args[0].value.body)
    ):
        # `helper(...).map(lambda a, b: ({"x": a}, b))`, as TPU005 writes the unpacking
        call = call.func.value
    if not isinstance(call, cst.Call) or any(a.star for a in call.args):
        return None
    first = ix.resolve_fn(src, key[1], call.func)
    if first is None or first == key:
        return None
    found = _batch_param(ix, first, 0)
    if found is None:
        return None
    param, helpers, one_shot, repeats, batch, new_default = found
    if unpacked is not None and not (one_shot or _returns_batched_dataset(ix, helpers, batch)):
        return None
    size = _bind(ix.fn(first), call).get(param) if new_default is None else None
    if _batches_by_params_of(ix, helpers, batch):
        # The helper batches by the dict it is given: only the input function's own
        # `params`, passed on as they came, are what TPUEstimator fills with its batch size.
        if not (
            isinstance(size, cst.Name)
            and size.value == "params"
            and "params" in param_names(fn)
            and "params" not in _assigned_in(fn)
        ):
            return None
        return _HelperChain(
            call,
            param,
            params_subscript(),
            helpers,
            one_shot,
            repeats or _has_repeat(fn),
            batch,
            None,
            unpacked[1] if unpacked is not None else None,
            passes_params=True,
        )
    if size is None and new_default is None and _default(ix.fn(first), param) is None:
        return None
    return _HelperChain(
        call,
        param,
        size,
        helpers,
        one_shot,
        repeats or _has_repeat(fn),
        batch,
        new_default,
        unpacked[1] if unpacked is not None else None,
    )


# tf.data transformations that map and batch in one, by their `batch_size` argument
_FUSED_BATCHING = frozenset({"data.experimental.map_and_batch", "contrib.data.map_and_batch"})


def _batch_param(
    ix: Indexer, key: FnKey, depth: int
) -> tuple[str, list[FnKey], bool, bool, cst.Call, cst.Name | None] | None:
    """The parameter a project function batches by (its one `.batch(p)` or
    `map_and_batch(f, p)`, or p passed on for the batch-size parameter of the one project
    function it calls that batches), the chain of functions down to that batch, whether it
    returns one-shot iterator tensors over its dataset, whether the chain repeats, the
    batching call, and (the first helper, batching by a module constant) that constant:
    the helper gains a `batch_size` parameter that defaults to it."""
    fn = ix.fn(key)
    src = ix.modules[key[0]]
    if isinstance(fn.params.star_arg, cst.Param) or fn.params.star_kwarg is not None:
        return None
    one_shot = False
    if any(_is_iterator_call(src, c) for c in iter_calls(fn)):
        # a dataset must come out of every helper but the first, which may return the
        # one-shot iterator's tensors over it (it returns the dataset itself then)
        if depth > 0 or not (_returns_one_shot(src, fn) or _returns_unpacked_one_shot(src, fn)):
            return None
        one_shot = True
    repeats = _has_repeat(fn)
    own = set(param_names(fn)) - _assigned_in(fn)
    calls = batch_calls(fn)
    fused = [c for c in iter_calls(fn) if src.imports.tf_name(c.func) in _FUSED_BATCHING]
    if len(calls) + len(fused) > 1:
        return None
    if calls or fused:
        batch = (calls or fused)[0]
        arg = batch_size_arg(batch) if calls else call_arg(batch, "batch_size", 1)
        if arg is not None and _params_subscript_of(arg.value) in own:
            # `.batch(p["batch_size"])`: `p` carries the batch size (see _HelperChain)
            return _params_subscript_of(arg.value) or "", [key], one_shot, repeats, batch, None
        if arg is None or not isinstance(arg.value, cst.Name):
            return None
        if arg.value.value in own:
            return arg.value.value, [key], one_shot, repeats, batch, None
        name = arg.value.value
        if (
            depth == 0
            and name in src.constants
            and name not in _assigned_in(fn)
            and "batch_size" not in param_names(fn)
            and not fn.params.kwonly_params
            and not isinstance(fn.params.star_arg, cst.ParamStar)
        ):
            return "batch_size", [key], one_shot, repeats, batch, arg.value
        return None
    if depth >= 2:
        return None
    found: list[tuple[str, list[FnKey], bool, bool, cst.Call, cst.Name | None]] = []
    for call in iter_calls(fn):
        callee = ix.resolve_fn(src, key[1], call.func)
        if callee is None or callee == key:
            continue
        inner = _batch_param(ix, callee, depth + 1)
        if inner is None:
            continue
        passed = _bind(ix.fn(callee), call).get(inner[0])
        if not isinstance(passed, cst.Name) or passed.value not in own:
            return None  # batched by something the caller computes: not one parameter
        found.append(
            (passed.value, [key, *inner[1]], one_shot, repeats or inner[3], inner[4], None)
        )
    return found[0] if len(found) == 1 else None


def _params_subscript_of(expr: cst.BaseExpression) -> str | None:
    """`p` of `p["batch_size"]`."""
    if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name)):
        return None
    renamed = expr.with_changes(value=cst.Name("params"))
    return expr.value.value if is_params_batch_size(renamed) else None


def _batches_by_params_of(ix: Indexer, helpers: list[FnKey], batch: cst.Call) -> bool:
    """Whether the helper chain's batch (in its last helper) reads `<a parameter>
    ["batch_size"]`: what the first helper passes on down is a params dict, not a size."""
    last = ix.fn(helpers[-1])
    arg = batch_size_arg(batch) if batch in batch_calls(last) else call_arg(batch, "batch_size", 1)
    return arg is not None and _params_subscript_of(arg.value) is not None


# Batching outside `.batch(...)`: TF1 queue readers (they return tensors, and TPUEstimator
# on TPU takes a tf.data.Dataset) and tf.data helpers that batch by an argument of their own.
_QUEUE_BATCHING = frozenset(
    {
        "train.batch",
        "train.shuffle_batch",
        "train.batch_join",
        "train.shuffle_batch_join",
        "train.maybe_batch",
        "train.maybe_shuffle_batch",
        "contrib.learn.io.read_batch_features",
        "contrib.learn.io.read_batch_examples",
        "contrib.learn.read_batch_features",
        "contrib.learn.read_batch_examples",
    }
)
_QUEUE_METHODS = frozenset({"dequeue_many", "dequeue_up_to"})
_DATASET_BATCHING = frozenset(
    {
        "data.experimental.make_csv_dataset",
        "data.experimental.make_batched_features_dataset",
        "data.experimental.map_and_batch",
        "data.experimental.group_by_window",
        "data.experimental.bucket_by_sequence_length",
        "contrib.data.make_csv_dataset",
        "contrib.data.make_batched_features_dataset",
        "contrib.data.map_and_batch",
        "contrib.data.group_by_window",
        "contrib.data.bucket_by_sequence_length",
        "contrib.data.sliding_window_batch",
    }
)
_GROUPED_BATCHING = frozenset({"group_by_window", "bucket_by_sequence_length"})
_NO_BATCH = (
    "TPUEstimator needs the input function to return a tf.data.Dataset batched by "
    "params['batch_size'] (drop_remainder on TPU)"
)


def _why_unbatched(ix: Indexer, key: FnKey, depth: int = 0, via: str | None = None) -> str:
    """The refusal for an input function without `.batch(...)`: what it batches with."""
    src = ix.modules[key[0]]
    fn = ix.fn(key)
    where = "the input function" if via is None else f"`{via}`, which the input function calls,"
    iterator = False
    for call in iter_calls(fn, into_defs=False):
        name = src.imports.tf_name(call.func) or ""
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
        if name in _QUEUE_BATCHING or method in _QUEUE_METHODS:
            return (
                f"{where} batches with the queue-based `{name or method}`: {_NO_BATCH}; "
                "rewrite it with tf.data by hand"
            )
        if name.rpartition(".")[2] in _GROUPED_BATCHING:
            # Each group's batches hold its own element shapes, and its last one is partial:
            # no one batch size and shape to give the TPU, which compiles for one.
            return (
                f"{where} batches with `{name.rpartition('.')[2]}(...)`, whose batches vary "
                "in size and shape from group to group (each group's last batch is partial): "
                f"{_NO_BATCH}, with one static shape; pad the elements to fixed lengths and "
                "batch by params['batch_size'] with drop_remainder on TPU by hand"
            )
        if name in _DATASET_BATCHING:
            return (
                f"{where} batches with `{name.rpartition('.')[2]}(...)`: {_NO_BATCH}; give "
                "it params['batch_size'] and static batches on TPU by hand"
            )
        iterator = iterator or method == "get_next"
        callee = ix.resolve_fn(src, key[1], call.func) if depth < 2 else None
        if callee is not None and callee != key:
            if batch_calls(ix.fn(callee)):
                held = _batch_size_of_parameter(ix.fn(callee))
                if held is not None:
                    # `.batch(params.batch_size)`: the helper reads the batch size from an
                    # object it is passed, which TPUEstimator's params can only be if the
                    # Estimator's own params stop holding it (the key is reserved).
                    return (
                        f"{where} batches inside `{callee[1]}`, a helper it calls, by "
                        f"`{held}` of an object it is passed: {_NO_BATCH}; pass the helper "
                        "the params TPUEstimator hands the input function (TPUEstimator sets "
                        "their batch_size: the key of a dict, the attribute of an HParams), "
                        "and build the TPUEstimator with params without batch_size (a key it "
                        "reserves: ValueError) and that size as its train/eval_batch_size, by "
                        "hand"
                    )
                return (
                    f"{where} batches inside `{callee[1]}`, a helper it calls: {_NO_BATCH}; "
                    "give the helper the batch size from params by hand"
                )
            why = _why_unbatched(ix, callee, depth + 1, via or callee[1])
            if why != _NOT_FOUND:
                return why
    if iterator:
        return (
            f"{where} returns tensors from an iterator (`get_next()`), with no `.batch(...)` "
            f"of its own: {_NO_BATCH}; return the dataset itself"
        )
    returned = _returned_call(fn)
    head = (dotted(returned.func) or "").partition(".")[0] if returned is not None else ""
    # An imported function, or an object the input function does not make itself (a closure
    # over a project object, `data.input_fn("train")`); never a dataset built in the body.
    followable = head in src.imports.bindings or head in src.relative
    outside = bool(head) and head not in _assigned_in(fn) and head not in param_names(fn)
    if (
        via is None
        and returned is not None
        and (followable or outside)
        and not src.imports.tf_name(returned.func)
    ):
        return (
            f"the input function has no `.batch(...)` of its own and returns what "
            f"`{node_code(returned.func)}(...)` makes: {_NO_BATCH}; make that batch by "
            "params['batch_size'] by hand"
        )
    return _NOT_FOUND


def _reserved_keys_built_in(value: cst.BaseExpression | None) -> list[str]:
    """The keys TPUEstimator reserves that an object is built with: a dict literal's, or a
    call's keyword arguments (`HParams(batch_size=64)`, `dict(batch_size=64)`)."""
    if isinstance(value, cst.Dict):
        keys = {
            str(el.key.evaluated_value)
            for el in value.elements
            if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString)
        }
    elif isinstance(value, cst.Call):
        keys = {a.keyword.value for a in value.args if a.keyword is not None}
    else:
        return []
    return sorted(keys & {"batch_size", "context"})


def _batched_by_a_parameter(ix: Indexer, key: FnKey) -> tuple[str, str] | None:
    """The def (the input function, or a project helper it calls) and the batch size, when
    it batches by `p.batch_size` / `p["batch_size"]` of a parameter `p` of its own."""
    fn = ix.fn(key)
    if batch_calls(fn):
        held = _batch_size_of_parameter(fn)
        return (key[1], held) if held is not None else None
    src = ix.modules[key[0]]
    for call in iter_calls(fn, into_defs=False):
        callee = ix.resolve_fn(src, key[1], call.func)
        if callee is not None and callee != key and batch_calls(ix.fn(callee)):
            held = _batch_size_of_parameter(ix.fn(callee))
            if held is not None:
                return callee[1], held
    return None


def _batch_size_of_parameter(fn: cst.FunctionDef) -> str | None:
    """`p.batch_size` / `p["batch_size"]`, `p` a parameter `fn` never rebinds, when that is
    what its one `.batch(...)` batches by."""
    calls = batch_calls(fn)
    arg = batch_size_arg(calls[0]) if len(calls) == 1 else None
    if arg is None:
        return None
    size = arg.value
    own = set(param_names(fn)) - _assigned_in(fn)
    if _params_subscript_of(size) in own:
        return node_code(size)
    if (
        isinstance(size, cst.Attribute)
        and size.attr.value == "batch_size"
        and isinstance(size.value, cst.Name)
        and size.value.value in own
    ):
        return node_code(size)
    return None


def _body_statements(fn: cst.FunctionDef) -> list[cst.BaseStatement]:
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


def _returned_call(fn: cst.FunctionDef) -> cst.Call | None:
    """The call a function returns, when it has one return and returns a call."""
    returned, _ = _returns(fn)
    value = returned[0] if len(returned) == 1 else None
    return value if isinstance(value, cst.Call) else None


_NOT_FOUND = (
    "no `.batch(...)` call found in the input function; TPUEstimator needs "
    "a static batch of params['batch_size']"
)


def _reads_params_batch_size(fn: cst.FunctionDef) -> bool:
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


def _dict_keys(value: cst.BaseExpression | None) -> frozenset[str] | None:
    """The keys of a dict literal whose keys are all strings written out, else None."""
    if not isinstance(value, cst.Dict):
        return None
    keys: set[str] = set()
    for element in value.elements:
        if not isinstance(element, cst.DictElement) or not isinstance(
            element.key, cst.SimpleString
        ):
            return None
        keys.add(str(element.key.evaluated_value))
    return frozenset(keys)


def _assigned_attributes(fn: cst.FunctionDef) -> set[str]:
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
