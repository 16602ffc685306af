"""Import-alias name resolution: every spelling of a TensorFlow symbol to one canonical name.

LibCST's ``QualifiedNameProvider`` builds full scope analysis, which costs seconds on large
files. Estimator code reaches TensorFlow through module aliases, so a file-wide table of
import bindings resolves every spelling we care about at a fraction of the cost.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from typing import Any

import libcst as cst

from est2tpu.cstutil import descendants, target_names, walk
from est2tpu.pytree import PyTree
from est2tpu.scan import code_only, may_spell

_AMBIGUOUS = "<ambiguous>"
# (module, obj, asname), as LibCST's RemoveImportsVisitor.remove_unused_import takes them.
ImportForm = tuple[str, str | None, str | None]

# Roots under which the public TensorFlow API lives, longest first. Everything after the
# root is the canonical name: `tf.compat.v1.estimator.Estimator`,
# `tensorflow_estimator.estimator.Estimator` and `tf.estimator.Estimator` are all
# `estimator.Estimator`.
_TF_ROOTS = (
    "tensorflow.compat.v1.",
    "tensorflow.compat.v2.",
    "tensorflow_estimator.compat.v1.",
    "tensorflow_estimator.compat.v2.",
    "tensorflow_estimator.",
    "tensorflow.",
)
_PRIVATE = ("tensorflow.python.", "tensorflow_estimator.python.")
_COMPAT = ("compat.v1.", "compat.v2.")  # the same length: one slice strips either
_TF_MODULES = {
    "tensorflow": "",
    "tensorflow.compat.v1": "",
    "tensorflow.compat.v2": "",
    "tensorflow_estimator": "",
}


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None.

    By exact type, not `isinstance`: LibCST's node classes are abstract-base classes, and
    `isinstance` against one is a Python-level call (`ABCMeta.__instancecheck__`). The
    index and the rules ask this of every call's function, a million checks over a module
    of 8,000 calls; no LibCST node class derives from `Attribute` or `Name`."""
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def ast_dotted(node: ast.expr) -> str | None:
    """`dotted` of Python's tree: `a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _module_name(node: cst.BaseExpression) -> str:
    name = dotted(node)
    assert name is not None
    return name


def canonical_tf(qualified: str | None) -> str | None:
    """The TensorFlow-relative name of a qualified name, or None if it is not TensorFlow.

    TensorFlow's private modules (`tensorflow.python.*`) are not its API: None. TensorFlow's
    compat modules hold compat modules again (`tf.compat.v1.compat.v1.X` is `tf.compat.v1.X`):
    each is read through.
    """
    if qualified is None or qualified.startswith(_PRIVATE):
        return None
    if qualified in _TF_MODULES:
        return _TF_MODULES[qualified]
    for root in _TF_ROOTS:
        if qualified.startswith(root):
            rest = qualified[len(root) :]
            if root.startswith("tensorflow."):
                while rest.startswith(_COMPAT):
                    rest = rest[len(_COMPAT[0]) :]
                if rest in ("compat.v1", "compat.v2"):
                    return ""
            return rest
    return None


def _meaning(target: str) -> str:
    """What a binding means to the rules: TensorFlow's API by its canonical name (so
    `tensorflow` and `tensorflow.compat.v1` agree), anything else by its qualified name."""
    canonical = canonical_tf(target)
    return target if canonical is None else f"tensorflow:{canonical}"


def _resolve(targets: list[str]) -> str:
    """One target for every binding a name gets from imports (`try: import
    tensorflow.compat.v1 as tf / except ImportError: import tensorflow as tf`; an import
    under `if tf.__version__ ...`): the bindings agree when they mean the same API, and
    `tensorflow` itself is preferred, as `tf.compat.v1.X` spelled through it works under
    either binding. Bindings that disagree make the name ambiguous."""
    if len({_meaning(t) for t in targets}) > 1:
        return _AMBIGUOUS
    return "tensorflow" if "tensorflow" in targets else targets[0]


class ImportTable:
    """Names bound by import statements anywhere in one module.

    A name bound by several imports resolves through all of them: to their common meaning,
    or, when they mean different things, to nothing (refusing is better than guessing);
    `ambiguous` then names the targets.
    """

    def __init__(
        self,
        bindings: dict[str, str],
        forms: dict[str, ImportForm] | None = None,
        ambiguous: dict[str, tuple[str, ...]] | None = None,
        conflicts: dict[str, Any] | None = None,
    ) -> None:
        self.bindings = bindings
        self._forms = forms or {}
        #: Names bound to imports that mean different things, with every target.
        self.ambiguous = ambiguous or {}
        #: For each ambiguous name, the import that bound it to a second meaning (a LibCST
        #: node, or an `ast` one for a table `from_ast`).
        self.conflicts = {n: node for n, node in (conflicts or {}).items() if n in self.ambiguous}

    @classmethod
    def from_module(cls, module: cst.Module) -> ImportTable:
        return cls._from_entries(_cst_entries(module))

    @classmethod
    def from_ast(cls, tree: PyTree) -> ImportTable:
        """The same table from Python's own tree of the same text (`conflicts` then holds
        `ast` import statements): for a file no rule rewrites, read without LibCST."""
        return cls._from_entries(_ast_entries(tree))

    @classmethod
    def _from_entries(cls, entries: Iterable[_Entry]) -> ImportTable:
        targets: dict[str, list[str]] = {}
        forms: dict[str, ImportForm] = {}
        conflicts: dict[str, Any] = {}
        for name, target, form, where in entries:
            seen = targets.setdefault(name, [])
            if target not in seen:
                if seen and _meaning(target) != _meaning(seen[0]):
                    conflicts.setdefault(name, where)
                seen.append(target)
            forms.setdefault(name, form)
        bindings = {name: _resolve(seen) for name, seen in targets.items()}
        ambiguous = {
            name: tuple(seen) for name, seen in targets.items() if bindings[name] == _AMBIGUOUS
        }
        return cls(bindings, forms, ambiguous, conflicts)

    def ambiguous_tensorflow(self) -> dict[str, tuple[str, ...]]:
        """The ambiguous names one of whose imports is TensorFlow or the Estimator: every use
        of them is left unresolved, so the rules may miss an Estimator API behind them."""
        return {
            name: seen
            for name, seen in self.ambiguous.items()
            if any(canonical_tf(t) is not None or in_estimator_only_module(t) for t in seen)
        }

    def import_form(self, name: str) -> ImportForm | None:
        """How the module imports `name`, as RemoveImportsVisitor.remove_unused_import's
        (module, obj, asname): `import a.b as x` is ("a.b", None, "x"), `from a import b`
        is ("a", "b", None); the first import binding it. LibCST keeps one alias per module
        to remove, so scheduling a guessed form can cancel the right one."""
        return self._forms.get(name)

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """The fully qualified name an expression refers to through imports, or None."""
        name = dotted(node)
        return None if name is None else self.qualify_dotted(name)

    def qualify_dotted(self, name: str) -> str | None:
        """`qualify` of the dotted name `a.b.c`."""
        head, _, rest = name.partition(".")
        target = self.bindings.get(head)
        if target is None or target == _AMBIGUOUS:
            return None
        return f"{target}.{rest}" if rest else target

    def tf_name(self, node: cst.BaseExpression) -> str | None:
        """Canonical TensorFlow name (`estimator.Estimator`) of an expression, or None."""
        return canonical_tf(self.qualify(node))

    def alias_for(self, module: str) -> str | None:
        """A local name bound to exactly `module`, preferring the conventional short one."""
        names = sorted(
            (name for name, target in self.bindings.items() if target == module),
            key=lambda n: (n != "tf", len(n), n),
        )
        return names[0] if names else None

    def bound_names(self) -> set[str]:
        return set(self.bindings)

    def spellings(self, canonical: str) -> list[str]:
        """Every text under which the canonical TensorFlow name can appear in this module.

        `estimator.RunConfig` with `import tensorflow as tf` is `tf.estimator.RunConfig` or
        `tf.compat.v1.estimator.RunConfig`; with `from tensorflow import estimator as est`
        it is `est.RunConfig`. A cheap substring test on these tells whether a rule that
        looks for that name can find anything in the file.
        """
        out: list[str] = []
        for name, target in self.bindings.items():
            if target == _AMBIGUOUS:
                continue
            bound = canonical_tf(target)
            if bound is None:
                continue
            if bound == canonical:
                out.append(name)
            elif bound == "":
                out.append(f"{name}.{canonical}")
                if target in ("tensorflow", "tensorflow_estimator"):
                    out.append(f"{name}.compat.v1.{canonical}")
                    out.append(f"{name}.compat.v2.{canonical}")
                if target == "tensorflow":
                    out.append(f"{name}.compat.v1.compat.v1.{canonical}")
            elif canonical.startswith(bound + "."):
                out.append(f"{name}.{canonical[len(bound) + 1 :]}")
        return out

    def may_use(self, text: str, *canonicals: str) -> bool:
        """Does `text` spell any of these canonical names through this module's imports?"""
        return any(s in text for c in canonicals for s in self.spellings(c))

    def uses(self, text: str, *canonicals: str) -> bool:
        """Does the code (not its comments and strings) spell any of these names?

        Unlike `may_use`, spaces and line breaks inside a dotted name do not hide it. The
        last part of a spelling is one identifier that the raw text must hold: a cheap
        test first, so the tokenizer runs only on files that may use the names.
        """
        return self._in_code(text, canonicals, "")

    def calls(self, text: str, *canonicals: str) -> bool:
        """`uses`, for a call of one of these names (`name(`)."""
        return self._in_code(text, canonicals, "(")

    def _in_code(self, text: str, canonicals: tuple[str, ...], after: str) -> bool:
        return spelled_in_code(text, [s for c in canonicals for s in self.spellings(c)], after)


def spelled_in_code(text: str, spellings: list[str], after: str = "") -> bool:
    """Does the code of `text` (not its comments and strings) hold one of these dotted
    spellings, followed by `after`? The last part of a spelling is one identifier that the
    raw text must hold: `may_spell` tests the raw text first (it finds that identifier, then
    what stands around it), so the tokenizer runs only where a spelling may be."""
    if not may_spell(text, spellings, after):
        return False
    code = code_only(text)
    return any(s + after in code for s in spellings)


def _imports(module: cst.Module) -> Iterator[cst.Import | cst.ImportFrom]:
    collector = _ImportCollector()
    walk(module, collector)
    return iter(collector.found)


# What one import binds: (name, target, form, the import statement), in the module's order.
_Entry = tuple[str, str, ImportForm, Any]


def _cst_entries(module: cst.Module) -> Iterator[_Entry]:
    for node in _imports(module):
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _module_name(alias.name)
                if alias.asname is not None:
                    as_name = alias.asname.name
                    if isinstance(as_name, cst.Name):
                        yield as_name.value, full, (full, None, as_name.value), node
                else:
                    top = full.split(".")[0]
                    yield top, top, (full, None, None), node
        else:
            if node.relative or node.module is None:
                continue
            base = _module_name(node.module)
            if isinstance(node.names, cst.ImportStar):
                continue
            for alias in node.names:
                name = _module_name(alias.name)
                bound, asname = name, None
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    bound = asname = alias.asname.name.value
                yield bound, f"{base}.{name}", (base, name, asname), node


def _ast_entries(tree: PyTree) -> Iterator[_Entry]:
    """`_cst_entries` from Python's tree: its import statements in the text's order."""
    for node in tree.imports():
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    yield alias.asname, alias.name, (alias.name, None, alias.asname), node
                else:
                    top = alias.name.split(".")[0]
                    yield top, top, (alias.name, None, None), node
        elif node.level == 0 and node.module is not None:
            for alias in node.names:
                if alias.name == "*":
                    break
                bound = alias.asname or alias.name
                form = (node.module, alias.name, alias.asname)
                yield bound, f"{node.module}.{alias.name}", form, node


class StatementWalker(cst.CSTVisitor):
    """A visitor that never enters an `if` test: for walks that only want statements."""

    def visit_If(self, node: cst.If) -> bool:
        walk(node.body, self)
        if node.orelse is not None:
            walk(node.orelse, self)
        return False


class _ImportCollector(StatementWalker):
    def __init__(self) -> None:
        self.found: list[cst.Import | cst.ImportFrom] = []

    def visit_Import(self, node: cst.Import) -> bool:
        self.found.append(node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.found.append(node)
        return False

    # Imports are statements: a simple statement line holds them directly, and nothing
    # inside an expression can. Skipping expressions keeps the walk cheap.
    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        for small in node.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                self.found.append(small)
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        walk(node.body, self)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        walk(node.body, self)
        return False


def attr_chain(name: str) -> cst.BaseExpression:
    """`a.b.c` as a CST expression."""
    parts = name.split(".")
    node: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


# Modules that exist only beside the Estimator (TensorFlow <= 2.15 with tensorflow_estimator,
# or TF 1's contrib): current TensorFlow has none of them.
ESTIMATOR_ONLY_MODULES = (
    "tensorflow_estimator",
    "tensorflow.estimator",
    "tensorflow.compat.v1.estimator",
    "tensorflow.compat.v2.estimator",
    "tensorflow.python.estimator",
    "tensorflow.keras.estimator",
    "tensorflow.compat.v1.keras.estimator",
    "tensorflow.python.keras.estimator",
    "tensorflow.contrib.estimator",
    "tensorflow.contrib.learn",
    "tensorflow.contrib.tpu",
)
_PRIVATE_ESTIMATOR = ("tensorflow_estimator.python.estimator.", "tensorflow.python.estimator.")


def in_estimator_only_module(qualified: str | None) -> bool:
    """Is this qualified name (a module or a name in one) Estimator-only?"""
    return qualified is not None and any(
        qualified == m or qualified.startswith(m + ".") for m in ESTIMATOR_ONLY_MODULES
    )


def estimator_name(imports: ImportTable, node: cst.BaseExpression) -> str | None:
    """The canonical name of an Estimator API, public or reached through tensorflow_estimator's
    private modules (`tensorflow_estimator.python.estimator.model_fn.EstimatorSpec` is
    `estimator.EstimatorSpec`), or None."""
    return estimator_name_of(imports.qualify(node))


def estimator_name_of(qualified: str | None) -> str | None:
    """`estimator_name` of a qualified name."""
    if qualified is None:
        return None
    if qualified.startswith(_PRIVATE_ESTIMATOR):
        # The private `EstimatorV2`, `LinearClassifierV2`, ... are what TF 2 exports as
        # `tf.estimator.Estimator`, `tf.estimator.LinearClassifier`, ...
        short = qualified.rpartition(".")[2]
        return "estimator." + short.removesuffix("V2")
    return canonical_tf(qualified)


def single_assignments(module: cst.Module) -> dict[str, cst.Assign]:
    """Each name whose only binding anywhere in the module is one `name = value` (a single
    plain target): no other assignment, import, def, class, parameter, loop, `with`,
    `except`, walrus, `del`, `global` or `nonlocal` of it. Name -> that assignment."""
    found: dict[str, cst.Assign] = {}
    other: set[str] = set()
    for node in descendants(module):
        targets: list[cst.BaseExpression] = []
        if isinstance(node, cst.Assign):
            for t in node.targets:
                names = target_names(t.target)
                if isinstance(t.target, cst.Name) and len(node.targets) == 1:
                    if t.target.value in found:
                        other.add(t.target.value)
                    found[t.target.value] = node
                else:
                    other.update(names)
        elif isinstance(
            node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del)
        ):
            targets = [node.target]
        elif isinstance(node, (cst.WithItem, cst.ImportAlias, cst.ExceptHandler)):
            alias = node.asname if not isinstance(node, cst.ExceptHandler) else node.name
            if alias is not None:
                targets = [alias.name]
            if isinstance(node, cst.ImportAlias) and alias is None:
                targets = [node.name]
        elif isinstance(node, (cst.Param, cst.FunctionDef, cst.ClassDef)):
            targets = [node.name]
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            targets = [n.name for n in node.names]
        for bound in targets:
            other.update(target_names(bound))
            if isinstance(bound, cst.Name):
                other.add(bound.value)
    return {name: node for name, node in found.items() if name not in other}


def module_aliases(module: cst.Module, imports: ImportTable) -> dict[str, str]:
    """Module-level names bound once, to a TensorFlow name (`train = tf.compat.v1.train`,
    `Adam = tf.compat.v1.train.AdamOptimizer`), and nowhere else: name -> the qualified
    name it stands for."""
    top = {
        id(small)
        for statement in module.body
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
    }
    aliases: dict[str, str] = {}
    for name, assign in single_assignments(module).items():
        if id(assign) not in top or name in imports.bindings:
            continue
        qualified = imports.qualify(assign.value)
        if qualified is not None and canonical_tf(qualified) is not None:
            aliases[name] = qualified
    return aliases
