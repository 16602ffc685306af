"""The project's modules as the index reads them: their defs, constants and imports, and
what a dotted name or a function expression resolves to across modules."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePath

import libcst as cst

from est2tpu.cstutil import (
    target_names,
    walk,
)
from est2tpu.index import (
    CallKey,
    CtorPlan,
    FnKey,
    Mode,
    ProjectIndex,
    SourceModule,
    UseSite,
    param_names,
)
from est2tpu.names import ImportTable, StatementWalker, dotted
from est2tpu.scan import package_members
from est2tpu.tfapi import (
    is_run_config_call,
)


class Scoped(cst.CSTVisitor):
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


class DefCollector(Scoped):
    def __init__(self, src: SourceModule) -> None:
        super().__init__()
        self.src = src

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        if self.here in self.src.defs:
            self.src.redefined.add(self.here)
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


# How deeply a module's LibCST tree may nest for the index's recursive walks (Python's
# default recursion limit is 1,000 frames; a walk takes one or two per level).
MAX_TREE_DEPTH = 300


def too_deep(module: cst.Module) -> bool:
    """Does the tree nest deeper than the index's walks can follow? Counted without
    recursion."""
    stack: list[tuple[cst.CSTNode, int]] = [(module, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
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


def class_in_scope(src: SourceModule, scope: list[str], name: str) -> str | None:
    """The dotted path of the class `name` visible from `scope`, if it is one of this
    module's classes (a def path with methods under it that is not itself a def)."""
    for i in range(len(scope), -1, -1):
        candidate = ".".join([*scope[:i], name])
        if candidate in src.defs:
            return None  # a function: its nested defs are no attributes
        if any(key.startswith(f"{candidate}.") for key in src.defs):
            return candidate
    return None


class ProjectFacts:
    """The project's modules and what their names resolve to, with the state a build
    of the index fills in (`est2tpu.project.build.Indexer`)."""

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
        # Estimators built with a parameter of the function that builds them as params
        # (`get_estimator(config, params)`)
        self.params_params: list[tuple[CtorPlan, FnKey, str]] = []
        # module path -> id(call) -> its key, as each module's walk finds them
        self.node_keys: dict[str, dict[int, CallKey]] = {}
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
        walk(module, DefCollector(src))
        return src

    def register(self, src: SourceModule, names: Iterable[str]) -> None:
        for name in names:
            claimers = self.claimed.setdefault(name, [])
            if src.path not in claimers:
                claimers.append(src.path)

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

    def redefined_fn(self, src: SourceModule, scope: str, expr: cst.BaseExpression) -> bool:
        """Does the expression, used in `scope`, name a def that this scope itself defines
        more than once? A use among the defs runs the def bound where it stands (the
        tutorial's train call before its second `def input_fn`, or either branch of an
        `if`), which `resolve_fn`, answering the last, cannot tell. A use inside another
        function runs the def bound when that function is called, after the module ran, as
        an import binds the last def the imported module ran: `resolve_fn`'s answer."""
        key = self.resolve_fn(src, scope, expr)
        return (
            key is not None
            and key[0] == src.path
            and key[1] in src.redefined
            and key[1].rpartition(".")[0] == scope
        )

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

    def resolve_callable(
        self, src: SourceModule, scope: str, expr: cst.BaseExpression
    ) -> FnKey | None:
        """The def a model_fn or input_fn argument names: a function (see `resolve_fn`), or a
        method of a class of this module, as `self.model_fn` inside the class,
        `Model.model_fn` or `Model(hparams).model_fn` (Estimator calls a bound method
        without `self`)."""
        key = self.resolve_fn(src, scope, expr)
        if key is not None or not isinstance(expr, cst.Attribute):
            return key
        owner = expr.value
        cls: str | None = None
        if isinstance(owner, cst.Call):
            owner = owner.func
            if isinstance(owner, cst.Name):
                # `Model(hparams).model_fn`, `Model` imported from another module
                key = self.resolve_fn(src, scope, cst.Attribute(owner, expr.attr))
                if key is not None and "." in key[1]:
                    return key
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
                cls = class_in_scope(src, parts, owner.value)
        if cls is None:
            return None
        key_name = f"{cls}.{expr.attr.value}"
        return (src.path, key_name) if key_name in src.defs else None

    def fn(self, key: FnKey) -> cst.FunctionDef:
        return self.modules[key[0]].defs[key[1]]

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
