"""The rule base class: a LibCST transformer that knows its file, its project and its ID."""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, cast

import libcst as cst

from est2tpu import catalogue
from est2tpu.cstpatch import RuleContext, schedule_import
from est2tpu.cstutil import IS_STATEMENT, is_multiline, starts, walk
from est2tpu.ftypes import Edit, Finding, Position, Safety, Target
from est2tpu.index import CallKey, CallKeys, InputFnPlan, ProjectIndex
from est2tpu.names import ImportTable, attr_chain
from est2tpu.pytree import PyTree
from est2tpu.tfapi import call_kind

# The modules the registry loads rules from: `est2tpu.rules.<id>_<name>`.
_RULE_MODULE = re.compile(r"est2tpu\.rules\.([a-z][a-z0-9]*[0-9]{3})_\w+")

RUNTIME_MODULE = "est2tpu.runtime"
RUNTIME_ALIAS = "tpu_runtime"


@dataclass
class FileState:
    """What rules share about the file being transformed (recomputed every pass)."""

    path: str
    index: ProjectIndex
    target: Target
    imports: ImportTable
    original: str = ""  # the text before any rule ran; findings point into it
    current: cst.Module | None = None  # the tree the running rule sees
    use_runtime: bool = True
    helpers_needed: set[str] = field(default_factory=set)
    findings: set[Finding] = field(default_factory=set)
    # The first line of each refused node's code, as its rule saw it (see engine._still_true).
    refused_code: dict[Finding, str] = field(default_factory=dict)
    # Set by a FINAL rule whose findings mean the migrated text cannot run (TF2004: an
    # Estimator API left where current TensorFlow has none): the file stays as it was.
    keep_original: bool = False
    edits: list[Edit] = field(default_factory=list)
    _line_maps: dict[int, list[int]] = field(default_factory=dict)
    # The engine's memo of generated code by tree (set while the rules run).
    code_of: Callable[[cst.Module], str] | None = None
    # The IDs of the rules that run (None: every rule of the target).
    rule_ids: frozenset[str] | None = None

    def runs(self, rule_id: str) -> bool:
        """Does the rule `rule_id` run on this file (is it selected)?"""
        return self.rule_ids is None or rule_id in self.rule_ids

    def original_line(self, line: int) -> int:
        """Map a line of the tree a rule sees back to the text before the migration."""
        if self.current is None:
            return line
        key = id(self.current)
        if key not in self._line_maps:
            self._line_maps.clear()
            code = self.code_of(self.current) if self.code_of else self.current.code
            self._line_maps[key] = line_map(self.original, code)
        mapping = self._line_maps[key]
        return mapping[line - 1] if 0 < line <= len(mapping) else line


def _equal_starts(seen: cst.Module, nodes: Sequence[cst.CSTNode]) -> dict[int, tuple[int, int]]:
    """Where nodes that are not in `seen` (a rule's transformer built them from a copy of a
    function) start, by id: at the first node of `seen` equal to each."""
    kinds = tuple({type(node) for node in nodes})
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, kinds):
                found.append(node)
            return True

    seen.visit(Collect())
    equal = {}
    for node in nodes:
        twin = next((c for c in found if type(c) is type(node) and c.deep_equals(node)), None)
        if twin is not None:
            equal[id(node)] = twin
    where = starts(seen, list(equal.values()))
    return {key: where[id(twin)] for key, twin in equal.items() if id(twin) in where}


def line_map(old: str, new: str) -> list[int]:
    """For each line of `new`, the 1-based line of `old` it came from.

    A changed line maps to the line it replaced; an inserted line to the line before it.
    Where a run of lines became a run of another length (one call expanded into several
    statements above a line another rule renamed), a changed line maps to the most similar
    line of the run it replaced, so a finding on it keeps its own line.
    """
    new_lines = new.splitlines()
    if old == new:
        return list(range(1, len(new_lines) + 1))
    old_lines = old.splitlines()
    # A line of a bracket or two (`    )`) anchors nothing: matched first, it would pair an
    # expanded call's closing line with another call's and misplace the lines between.
    matcher = difflib.SequenceMatcher(_trivial, old_lines, new_lines, autojunk=False)
    mapping = [1] * len(new_lines)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            similar = _most_similar(old_lines, i1, i2, new_lines[j]) if tag == "replace" else None
            if similar is not None:
                mapping[j] = similar + 1
            elif tag in ("equal", "replace") and i2 > i1:
                mapping[j] = i1 + min(j - j1, i2 - i1 - 1) + 1
            else:
                mapping[j] = max(i1, 1)
    return mapping


def _trivial(line: str) -> bool:
    return len(line.strip()) <= 2


def _most_similar(old_lines: list[str], start: int, end: int, line: str) -> int | None:
    """The 0-based index in old_lines[start:end] of the line most like `line` (ties: the
    first), or None when none shares most of its text with it."""
    best: int | None = None
    best_ratio = 0.6
    for i in range(start, end):
        matcher = difflib.SequenceMatcher(None, old_lines[i].strip(), line.strip(), autojunk=False)
        if matcher.real_quick_ratio() > best_ratio and matcher.ratio() > best_ratio:
            best, best_ratio = i, matcher.ratio()
    return best


_ATTRIBUTE_HOOK = re.compile(r"(?:visit|leave)_[A-Z][A-Za-z]*_[a-z]\w*")


def _own(cls: type, name: str) -> Callable[..., object] | None:
    """`cls`'s method `name`, or None where it is missing or LibCST's own no-op."""
    found = getattr(cls, name, None)
    if found is None or found is getattr(cst.CSTTransformer, name, None):
        return None
    return cast("Callable[..., object]", found)


class Rule(cst.CSTTransformer):
    """One rule = one ID = one catalogue entry (`rules/<ID>.md`) = one `fixtures/<ID>/`.

    Subclasses rewrite nodes they can prove safe and call `refuse` for the rest, leaving
    those nodes exactly as they were. A plain CSTTransformer holding a `RuleContext` (where
    LibCST's import scheduling writes), not a ContextAwareTransformer: no rule uses matcher
    decorators, and gathering them cost 29 ms per rule per file plus a check at every node.
    """

    # A rule's metadata lives in its catalogue entry, `rules/<ID>.md`, and only there: a
    # rule in `est2tpu/rules/<id>_<name>.py` gets it when its class is created.
    ID: ClassVar[str]
    NAME: ClassVar[str]
    SAFETY: ClassVar[Safety]
    TARGETS: ClassVar[tuple[Target, ...]] = (Target.TPU_ESTIMATOR,)
    # Rules that look calls up in the index by their order (see index.call_kind) set this.
    KEYED: ClassVar[bool] = False
    # Rules that can say, node by node, what they act on set this and define `wanted`:
    # the engine then enters only the statements holding such a node (see `statements`).
    PRUNE: ClassVar[bool] = False
    # Report-only rules that name what the other rules left behind set this: the engine
    # walks the final tree with them once, read-only (`cstutil.walk`: nothing rebuilt),
    # after every other rule has converged and reported. They define no `leave_*` method.
    FINAL: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        rule_module = _RULE_MODULE.fullmatch(cls.__module__)
        if rule_module is not None:
            cls._read_catalogue(rule_module.group(1).upper())
        if cls.FINAL and any(name.startswith("leave_") for name in vars(cls)):
            raise TypeError(f"{cls.__name__}: a FINAL rule only reports; it has no leave_*")
        cls._ATTRIBUTE_HOOKS = any(
            _ATTRIBUTE_HOOK.fullmatch(name)
            and getattr(cls, name) is not getattr(cst.CSTTransformer, name, None)
            for name in dir(cls)
        )

    @classmethod
    def _read_catalogue(cls, rule_id: str) -> None:
        declared = sorted({"ID", "NAME", "SAFETY", "TARGETS"} & set(vars(cls)))
        if declared:
            raise TypeError(f"{cls.__name__}: {', '.join(declared)} belong in rules/{rule_id}.md")
        info = catalogue.load().get(rule_id)
        if info is None:
            raise TypeError(f"{cls.__module__}: no catalogue entry rules/{rule_id}.md")
        cls.ID, cls.NAME, cls.SAFETY, cls.TARGETS = info.id, info.name, info.safety, info.targets

    def __init__(self, context: RuleContext, state: FileState) -> None:
        super().__init__()
        self.context = context
        self.state = state
        self.scope: list[str] = []
        self._pending: list[tuple[cst.CSTNode, str, bool]] = []
        self._unless: dict[int, str] = {}  # id(refused node) -> the rule whose finding suffices
        self._keys = CallKeys(state.path)
        self._node_keys: dict[int, CallKey] = {}
        self.calls: list[cst.Call] = []  # enclosing calls, innermost last
        self._keep: set[int] | None = None  # statements to enter (None: all)
        # node class -> this rule's visit_<Type> and leave_<Type> (None: LibCST's no-op),
        # looked up per rule object: a rule object lives for one pass over one file
        self._methods: dict[type, tuple[Callable[..., object] | None, ...]] = {}
        self._skipped: set[int] = set()

    # -- pruning --------------------------------------------------------------------------

    def wanted(self, node: cst.CSTNode) -> bool:
        """For PRUNE rules: can the rule change or report anything at this very node?

        Must be True for every node whose visit/leave method would do anything; the rule
        is then not run inside statements that hold none (a LibCST transform rebuilds every
        node it enters, which is what a big file costs).
        """
        raise NotImplementedError

    def statements(self, module: cst.Module) -> set[int]:
        """The statements (ids, in `module`) holding a node this rule wants; the engine
        skips the rule when there are none, and the rule enters only these."""
        assert self.PRUNE and not self.KEYED  # skipping would renumber keyed calls
        keep: set[int] = set()
        stack: list[cst.CSTNode] = []
        rule = self

        class Mark(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                if IS_STATEMENT[type(node)]:
                    stack.append(node)
                if rule.wanted(node):
                    for statement in reversed(stack):
                        if id(statement) in keep:
                            break
                        keep.add(id(statement))
                return True

            def on_leave(self, original_node: cst.CSTNode) -> None:
                if IS_STATEMENT[type(original_node)]:
                    stack.pop()

        walk(module, Mark())
        self._keep = keep
        return keep

    # -- dispatch ---------------------------------------------------------------------
    #
    # LibCST's CSTTransformer finds `visit_<Type>` / `leave_<Type>` by formatting the name
    # and looking it up at every node, and calls `visit_<Type>_<field>` hooks around every
    # child field, through its own no-op methods where the rule defines none: on a fixture
    # project that was a fifth of a rule's pass. The same calls are made here, looked up
    # once per rule object and node type, and the no-ops are not called at all.

    _ATTRIBUTE_HOOKS: ClassVar[bool] = False  # does the class define `visit_<Type>_<field>`?

    def _dispatch(self, node: cst.CSTNode) -> tuple[Callable[..., object] | None, ...]:
        found = self._methods.get(type(node))
        if found is None:
            name = type(node).__name__
            found = self._methods[type(node)] = (
                _own(type(self), f"visit_{name}"),
                _own(type(self), f"leave_{name}"),
            )
        return found

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if self._ATTRIBUTE_HOOKS:
            super().on_visit_attribute(node, attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        if self._ATTRIBUTE_HOOKS:
            super().on_leave_attribute(original_node, attribute)

    # -- scope tracking (the dotted def path the index uses) ---------------------------

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._keep is not None and IS_STATEMENT[type(node)] and id(node) not in self._keep:
            self._skipped.add(id(node))
            return False
        # Exact types, not `isinstance` (an ABCMeta call on every LibCST class; parsed trees
        # hold LibCST's own classes only): this runs at every node of every rule's pass.
        cls = type(node)
        if cls is cst.FunctionDef or cls is cst.ClassDef:
            self.scope.append(cast("cst.FunctionDef | cst.ClassDef", node).name.value)
        elif cls is cst.Call:
            call = cast("cst.Call", node)
            if self.KEYED:
                kind = call_kind(self.state.imports, call.func)
                if kind is not None:
                    self._node_keys[id(node)] = self._keys.next(self.here, kind)
            self.calls.append(call)
        visit = self._dispatch(node)[0]
        return visit is None or visit(self, node) is not False

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        if self._skipped and id(original_node) in self._skipped:
            self._skipped.discard(id(original_node))
            return original_node  # never entered: exactly as it was
        leave = self._dispatch(original_node)[1]
        result = (
            updated_node
            if leave is None
            else cast(
                "cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]",
                leave(self, original_node, updated_node),
            )
        )
        cls = type(original_node)
        if cls is cst.FunctionDef or cls is cst.ClassDef:
            self.scope.pop()
        elif cls is cst.Call:
            self.calls.pop()
        return result

    def key_of(self, call: cst.Call) -> CallKey | None:
        """The index key of a call of a keyed kind (only in rules with KEYED = True)."""
        return self._node_keys.get(id(call))

    def call_depth(self) -> int:
        """Indentation levels for the arguments of the call being left, if laid out one per
        line: one more than the multi-line calls around it."""
        return 1 + sum(1 for call in self.calls[:-1] if is_multiline(call))

    @property
    def here(self) -> str:
        return ".".join(self.scope)

    @staticmethod
    def file_has_model_fn(state: FileState) -> bool:
        return any(path == state.path for path, _ in state.index.model_fns)

    @staticmethod
    def file_has_input_fn(state: FileState) -> bool:
        return any(path == state.path for path, _ in state.index.input_fns) or any(
            path == state.path for path, _, _ in state.index.use_sites
        )

    def in_model_fn(self) -> bool:
        """True inside a def the project uses as a model_fn (not in defs nested in it)."""
        return (self.state.path, self.here) in self.state.index.model_fns

    def input_fn_plan(self) -> InputFnPlan | None:
        return self.state.index.input_fns.get((self.state.path, self.here))

    # -- reporting ----------------------------------------------------------------------

    def refuse(self, node: cst.CSTNode, message: str, unless: str | None = None) -> None:
        """Leave `node` as it is and tell the user what to do by hand; say nothing if the
        rule `unless` already reported on the same node (its finding says it all)."""
        if unless is not None:
            self._unless[id(node)] = unless
        self._pending.append((node, message, True))

    def record(self, node: cst.CSTNode, description: str) -> None:
        self._pending.append((node, description, False))

    def flush(self, seen: cst.Module) -> None:
        """Turn what the rule reported into findings and edits, with positions.

        Positions cost a code generation of the tree, so they are computed once, after the
        rule ran, and only when it reported something. `seen` is the tree the rule saw.
        """
        if not self._pending:
            return
        positions = starts(seen, [node for node, _, _ in self._pending])
        missing = [node for node, _, _ in self._pending if id(node) not in positions]
        if missing:
            positions.update(_equal_starts(seen, missing))
        # A FINAL rule stays quiet where another rule's finding already explains the line.
        explained = {f.position.line for f in self.state.findings} if self.FINAL else set()
        for node, text, is_finding in self._pending:
            line, column = positions.get(id(node), (1, 0))
            column += 1
            if is_finding:
                pos = Position(self.state.original_line(line), column)
                if pos.line in explained:
                    continue
                other = self._unless.get(id(node))
                if other is not None and any(
                    f.rule_id == other and f.position == pos for f in self.state.findings
                ):
                    continue
                finding = Finding(self.ID, text, pos, self.state.path)
                self.state.findings.add(finding)
                if not self.FINAL and finding not in self.state.refused_code:
                    code = seen.code_for_node(node).strip()
                    self.state.refused_code[finding] = code.split("\n", 1)[0].strip()
            else:
                pos = Position(self.state.original_line(line), column)
                self.state.edits.append(Edit(self.ID, pos, text))
        self._pending.clear()
        self._unless.clear()

    @classmethod
    def applies(cls, state: FileState) -> bool:
        """A cheap test: can this rule change or report anything in this file at all?

        Rules that cannot are not run, which keeps big repositories fast.
        """
        return True

    @classmethod
    def scan(cls, tree: PyTree, state: FileState) -> list[tuple[ast.AST, str]] | None:
        """A FINAL rule's findings from Python's own tree of the file, as (node, message)
        in any order, for a file where no other rule applies: the pipeline then never
        parses it with LibCST (`pipeline._scanned`). They must be exactly what its walk of
        LibCST's tree of the same text reports (`tests/test_final_scan.py` holds them to
        it). None: this rule cannot tell without LibCST's tree, here or ever (the default).
        """
        return None

    # -- building references ------------------------------------------------------------

    def tf(self, name: str) -> cst.BaseExpression:
        """A reference to `tensorflow.<name>` through the file's own alias.

        `name` is relative to the tensorflow package (`compat.v1.estimator.tpu.TPUEstimator`).
        With `import tensorflow.compat.v1 as tf` the `compat.v1.` part is dropped.
        """
        imports = self.state.imports
        alias = imports.alias_for("tensorflow")
        if alias is not None:
            return attr_chain(f"{alias}.{name}")
        v1 = imports.alias_for("tensorflow.compat.v1")
        if v1 is not None and name.startswith("compat.v1."):
            return attr_chain(f"{v1}.{name[len('compat.v1.') :]}")
        if "tf" in imports.bound_names():
            schedule_import(self.context, "tensorflow")
            return attr_chain(f"tensorflow.{name}")
        schedule_import(self.context, "tensorflow", asname="tf")
        return attr_chain(f"tf.{name}")

    def runtime(self, name: str) -> cst.BaseExpression:
        """A reference to `est2tpu.runtime.<name>` (imported as `tpu_runtime`).

        With `--no-runtime` it is a plain-TensorFlow helper of the same name that the file
        gets a copy of (see `NO_RUNTIME_HELPERS`); names without one are refused upstream.
        """
        if not self.state.use_runtime:
            if name not in NO_RUNTIME_HELPERS:
                raise KeyError(name)
            self.state.helpers_needed.add(name)
            return cst.Name(f"_est2tpu_{name}")
        schedule_import(self.context, RUNTIME_MODULE, asname=RUNTIME_ALIAS)
        return attr_chain(f"{RUNTIME_ALIAS}.{name}")

    def has_runtime(self, name: str) -> bool:
        return self.state.use_runtime or name in NO_RUNTIME_HELPERS

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        needed: set[str] = set()
        todo = list(self.state.helpers_needed)
        while todo:  # the helpers the needed ones call, transitively
            name = todo.pop()
            if name not in needed:
                needed.add(name)
                todo.extend(NO_RUNTIME_HELPERS[name][0])
        defined = {
            stmt.name.value for stmt in updated_node.body if isinstance(stmt, cst.FunctionDef)
        }
        missing = [n for n in NO_RUNTIME_HELPERS if n in needed and f"_est2tpu_{n}" not in defined]
        if not missing:
            return updated_node
        schedule_import(self.context, "os")
        names = {
            "TPU": cst.Module([]).code_for_node(self.tf("compat.v1.estimator.tpu")),
            "RESOLVER": cst.Module([]).code_for_node(
                self.tf("distribute.cluster_resolver.TPUClusterResolver")
            ),
        }
        helpers = [cst.parse_statement(NO_RUNTIME_HELPERS[n][1].format(**names)) for n in missing]
        body = list(updated_node.body)
        at = 0
        for i, stmt in enumerate(body):
            if isinstance(stmt, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
            ):
                at = i + 1
        blank = cst.EmptyLine()
        helpers = [h.with_changes(leading_lines=[blank, blank]) for h in helpers]
        if at < len(body):
            body[at] = body[at].with_changes(leading_lines=[blank, blank])
        return updated_node.with_changes(body=[*body[:at], *helpers, *body[at:]])

    def tf_name(self, node: cst.BaseExpression) -> str | None:
        return self.state.imports.tf_name(node)


# Plain-TensorFlow stand-ins for the runtime shim, copied into a file under --no-runtime:
# name -> (helpers it calls, source). `{TPU}` is the file's spelling of
# tf.compat.v1.estimator.tpu, `{RESOLVER}` of TPUClusterResolver.
NO_RUNTIME_HELPERS: dict[str, tuple[tuple[str, ...], str]] = {
    "cluster_resolver": (
        (),
        """def _est2tpu_cluster_resolver():
    \"\"\"The TPU cluster (TPU_NAME, or this Cloud TPU VM), or None at once when there is none.\"\"\"
    tpu = os.environ.get("TPU_NAME")
    if not tpu and (os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")):
        tpu = "local"
    if not tpu:
        return None
    try:
        return {RESOLVER}(tpu=tpu)
    except ValueError:
        return None
""",
    ),
    "use_tpu": (
        ("cluster_resolver",),
        """def _est2tpu_use_tpu():
    return _est2tpu_cluster_resolver() is not None
""",
    ),
    "iterations_per_loop": (
        ("use_tpu",),
        """def _est2tpu_iterations_per_loop(n):
    \"\"\"n on a TPU; 1 elsewhere, where TPUEstimator would otherwise log after every step.\"\"\"
    return n if _est2tpu_use_tpu() else 1
""",
    ),
    "run_config": (
        ("cluster_resolver", "iterations_per_loop"),
        """def _est2tpu_run_config():
    return {TPU}.RunConfig(
        cluster=_est2tpu_cluster_resolver(),
        tpu_config={TPU}.TPUConfig(
            iterations_per_loop=_est2tpu_iterations_per_loop(100),
            per_host_input_for_training={TPU}.InputPipelineConfig.PER_HOST_V2,
        ),
    )
""",
    ),
}
