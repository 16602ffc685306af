"""The transform engine: one module's text to its migrated text (`migrate_module`): parse
once, set aside what no rule can act on, run the rules to a fixpoint, put back, verify.
Never prints or writes."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import libcst as cst

from est2tpu import cstutil, inert, layout, rulewalk
from est2tpu.checks import (  # noqa: F401 - re-exported: the engine's checks
    DEEP_FOR_RULES,
    MAX_NESTING,
    check_round_trip,
    nesting_depth,
    parse,
    too_deep,
    verify,
)
from est2tpu.cstpatch import AddImportsVisitor, CodemodContext, RemoveImportsVisitor, RuleContext
from est2tpu.cstutil import IS_NODE, child_fields, gc_paused, thaw
from est2tpu.ftypes import Finding, MigrationError, Target
from est2tpu.index import ProjectIndex, forget_codes, module_code
from est2tpu.names import ImportTable
from est2tpu.registry import rule_classes
from est2tpu.rule import FileState, Rule, line_map
from est2tpu.scan import PREFILTER_TOKENS, may_match  # noqa: F401 - re-exported

MAX_PASSES = 4
# A parsed tree of a text this long is frozen for the cyclic collector (`gc_paused`): below,
# what its collections cost is small, and freezing after each small parse would keep every
# cycle of garbage made meanwhile in a long run.
FROZEN_LINES = 2000


def _adds_imports(context: CodemodContext, head: cst.Module) -> bool:
    """Would AddImportsVisitor add anything to the module `head` was cut from? It gathers the imports already there by walking
    the whole tree, though it reads only the module's leading run of import statements
    (after a docstring or `__strict__` line), then walks it all again to change nothing when
    every requested import is already there: the usual case, since rules ask for
    `import tensorflow as tf` at every rewrite. Its own gathering over a module cut after
    that run decides the same thing without the walks: the cut keeps the first statement
    whatever it is, the import lines after it and the first statement that is not one,
    where the gathering stops (`_head`)."""
    visitor = AddImportsVisitor(context)
    visitor.visit_Module(head)
    return bool(
        visitor.module_imports
        or visitor.module_mapping
        or visitor.module_aliases
        or visitor.alias_mapping
    )


def _head(module: cst.Module) -> cst.Module:
    """The module cut after its leading imports (see `_adds_imports`)."""
    body = module.body
    end = 1 if body and isinstance(body[0], cst.SimpleStatementLine) else 0
    while end < len(body) and _is_import_line(body[end]):
        end += 1
    return module.with_changes(body=body[: end + 1])


def _add_imports(
    context: CodemodContext, module: cst.Module, head: cst.Module | None = None
) -> cst.Module:
    """`AddImportsVisitor(context).transform_module(module)`, run over the module's head
    only, the rest of the body appended as it is. The visitor changes nothing outside the
    head: it extends the `from` imports of the leading run, inserts new import lines after
    that run (after a docstring or `__strict__` line) and gives the first statement after
    them an empty line above. Over the whole module it also copied the tree for its
    metadata wrapper, gathered imports over all of it and rebuilt every node: every
    fixture's migration took 18.8 s of CPU with it, 16.6 s without.
    `tests/test_engine_imports.py` holds the two to the same text. `head`: `_head(module)`,
    where the caller has it already."""
    head = _head(module) if head is None else head
    done = AddImportsVisitor(context).transform_module(head)
    return module.with_changes(body=(*done.body, *module.body[len(head.body) :]))


def _is_import_line(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom))
    )


class _RuleRecursion(Exception):
    """A rule's visit ran out of stack (RecursionError), with the rule's ID."""

    def __init__(self, rule_id: str) -> None:
        super().__init__(rule_id)
        self.rule_id = rule_id


def is_selected(
    rule_id: str, select: Collection[str] | None = None, ignore: Collection[str] = ()
) -> bool:
    """Does `--select`/`--ignore` (IDs or ID prefixes, any case) let this rule ID through?"""

    def matches(patterns: Collection[str]) -> bool:
        return any(rule_id.startswith(p.upper()) for p in patterns)

    return (select is None or matches(select)) and not matches(ignore)


def select_rules(
    target: Target, select: Collection[str] | None = None, ignore: Collection[str] = ()
) -> list[type[Rule]]:
    """The rules that run for a target, honouring select/ignore (ID prefixes allowed)."""
    return [
        cls
        for cls in rule_classes()
        if target in cls.TARGETS and is_selected(cls.ID, select, ignore)
    ]


def parse_split(text: str, split: inert.Split | None) -> tuple[cst.Module, inert.Split | None]:
    """The tree the rules get: of `split`'s text (the inert defs set aside before the parse,
    `inert.split`) when there is one, else of the text. Whatever fails on the reduced text
    is left to the whole text, so that a file fails exactly as it always has."""
    # A tree holds no cycles (`cstutil.gc_paused`); a big one is frozen, never walked again.
    with gc_paused(freeze=text.count("\n") >= FROZEN_LINES):
        if split is not None:
            try:
                return parse(split.text), split
            except MigrationError:
                pass
        return parse(text), None


def migrate_module(
    source: str,
    *,
    path: str,
    index: ProjectIndex,
    target: Target,
    rules: Sequence[type[Rule]],
    use_runtime: bool = True,
    module: cst.Module | None = None,
    split: inert.Split | None = None,
) -> tuple[str, FileState]:
    """One module's migrated text, and what the rules found in it.

    `module` is the tree the caller parsed already (for the project index): of `split`'s
    text when `split` is given (see `parse_split`), else of `source`; without it the text
    is parsed here. The rules run to their fixpoint over that tree (`transform`, which sets
    aside what the split did not); the defs the split set aside are put back, byte for
    byte; a changed text must compile (`checks.verify`). When a rule reached into a
    placeholder after all, the whole text is migrated the slow way. MigrationError with a
    one-line reason when the text cannot be migrated.
    """
    parsed_here = module is None
    try:
        # Trees hold no cycles (`cstutil.gc_paused`): collections started while the rules
        # build nodes would walk the whole tree again and free nothing of it.
        with gc_paused():
            return _migrate_module(
                source,
                path=path,
                index=index,
                target=target,
                rules=rules,
                use_runtime=use_runtime,
                module=module,
                split=split,
            )
    finally:
        forget_codes()  # the codes of this module's nodes (`index.node_code`)
        if parsed_here:
            thaw()  # the tree parsed here is done with (`cstutil.gc_paused`)


def _migrate_module(
    source: str,
    *,
    path: str,
    index: ProjectIndex,
    target: Target,
    rules: Sequence[type[Rule]],
    use_runtime: bool = True,
    module: cst.Module | None = None,
    split: inert.Split | None = None,
) -> tuple[str, FileState]:
    if module is None:
        module, split = parse_split(source, split)
    new_text, state = transform(
        module,
        path=path,
        index=index,
        target=target,
        rules=rules,
        use_runtime=use_runtime,
        original_text=split.text if split is not None else source,
    )
    verified = False
    if split is not None:
        if new_text == split.text:
            return source, state
        restored = split.restore(new_text)
        if restored is None:
            whole = parse(source)
            return _migrate_module(
                source,
                path=path,
                index=index,
                target=target,
                rules=rules,
                use_runtime=use_runtime,
                module=whole,
            )
        # The defs set aside compiled on their own (`inert.split`): the rest must too.
        try:
            verify(new_text, path)
        except MigrationError:
            verify(restored, path, source)  # the whole text's own message
            raise
        new_text, verified = restored, True
    if new_text != source:
        new_text = layout.restyle(source, new_text, path)
    if new_text != source and not verified:
        verify(new_text, path, source)
    return new_text, state


def transform(
    module: cst.Module,
    *,
    path: str,
    index: ProjectIndex,
    target: Target,
    rules: Sequence[type[Rule]],
    use_runtime: bool = True,
    original_text: str | None = None,
) -> tuple[str, FileState]:
    """Run the rules in order, repeatedly, until a whole pass changes nothing.

    The last pass is the proof that a second run is a no-op: it ran every rule over the
    final text and changed nothing. A rule reports a refusal in the pass where it meets the
    node, each pointing into the original text; one made false by a later rewrite is not
    reported (see `_still_true`).
    """
    try:
        # Top-level defs no rule can act on are set aside (see `inert`): the rules see a
        # module with the same line numbers, and a big module costs about its parse.
        original = module.code if original_text is None else original_text
        reduced = inert.reduce(module, original, path, index)
        if reduced is not None:
            small_text, state = _transform(
                reduced.module,
                path=path,
                index=index,
                target=target,
                rules=rules,
                use_runtime=use_runtime,
                original_text=None,
            )
            if small_text == state.original:
                return original, state
            new_text = reduced.restore(small_text)
            if new_text is not None:
                return new_text, state
        return _transform(
            module,
            path=path,
            index=index,
            target=target,
            rules=rules,
            use_runtime=use_runtime,
            original_text=original,
        )
    except _RuleRecursion as exc:
        depth = nesting_depth(original_text if original_text is not None else module.code)
        if depth >= DEEP_FOR_RULES:
            # Deep nesting below MAX_NESTING can still exhaust the stack in a rule's visitor.
            raise MigrationError(
                f"cannot migrate: code nested too deeply for the rules ({depth} levels)"
            ) from None
        raise MigrationError(
            f"internal error: {exc.rule_id} recursed without end (RecursionError; the code "
            f"nests only {depth} levels deep)"
        ) from None
    except RecursionError:
        # Outside the rules: LibCST's own code generation or import walk.
        raise MigrationError("cannot migrate: code nested too deeply for the rules") from None


def _transform(
    module: cst.Module,
    *,
    path: str,
    index: ProjectIndex,
    target: Target,
    rules: Sequence[type[Rule]],
    use_runtime: bool,
    original_text: str | None,
) -> tuple[str, FileState]:
    original = module.code if original_text is None else original_text
    cstutil.INDENT.set(module.default_indent)  # what the rules' `explode` indents by
    state = FileState(
        path, index, target, ImportTable.from_module(module), original, use_runtime=use_runtime
    )
    state.rule_ids = frozenset(rule_cls.ID for rule_cls in rules)
    first = imports_of = module
    # Generated code of each tree met, by identity (the first tree's is taken to be the
    # text; `check_round_trip` below holds LibCST to that before a changed tree is used).
    codes: dict[int, str] = {id(first): original}
    kept: list[cst.Module] = [first]  # trees whose ids are in `codes` stay alive
    statements: dict[tuple[int, str, str], list[str]] = {}  # of the trees in `kept`

    def code_of(tree: cst.Module) -> str:
        if id(tree) not in codes:
            codes[id(tree)] = module_code(tree, statements)
            kept.append(tree)  # no other tree takes its id while its code is known
        return codes[id(tree)]

    state.code_of = code_of
    final = [rule_cls for rule_cls in rules if rule_cls.FINAL]
    rules = [rule_cls for rule_cls in rules if not rule_cls.FINAL]
    found: set[Finding] = set()  # by the passes before the current one
    caveats: set[Finding] = set()  # reported by a rule in a visit that changed the tree
    for _ in range(MAX_PASSES):
        before = module
        found |= state.findings
        state.findings = set()
        for rule_cls in rules:
            if module is not imports_of:  # a rule changed the tree: imports may have too
                state.imports, imports_of = ImportTable.from_module(module), module
            if not rule_cls.applies(state):
                continue
            state.current = seen = module
            context = RuleContext(path)
            rule = rule_cls(context, state)
            if rule_cls.PRUNE and not rule.statements(seen):
                continue  # nothing in this tree the rule acts on
            had = len(state.findings)
            try:
                module = rulewalk.transform(seen, rule)
                rule.flush(seen)
            except RecursionError:
                raise _RuleRecursion(rule_cls.ID) from None
            if module is not seen and len(state.findings) != had:
                # A finding on code its own rule replaced in the same visit is a caveat of
                # that rewrite (TPU007: converted, the batch size left to the user), never
                # stale because the code it names is gone.
                text = code_of(module)
                for finding in state.findings - found - caveats:
                    head = state.refused_code.get(finding)
                    if head is not None and head not in text:
                        caveats.add(finding)
            if context.scratch:  # imports scheduled (`cstpatch.RuleContext`)
                codemod = context.codemod_context()
                if context.scratch.get(AddImportsVisitor.CONTEXT_KEY):
                    leading = _head(module)
                    if _adds_imports(codemod, leading):
                        module = _add_imports(codemod, module, leading)
                if context.scratch.get(RemoveImportsVisitor.CONTEXT_KEY):
                    module = RemoveImportsVisitor(codemod).transform_module(module)
            kept.append(module)
        # No rule ran (the common case in a big repository) or none changed the text.
        if module is before or code_of(module) == code_of(before):
            break
    else:
        raise MigrationError(f"internal error: the rules did not converge in {MAX_PASSES} passes")
    state.findings |= caveats & found
    if found - state.findings:
        state.findings = _still_true(found, state.findings, state, code_of(module))
    for rule_cls in final:  # what the rules left behind, reported once, over the final tree
        if module is not imports_of:
            state.imports, imports_of = ImportTable.from_module(module), module
        if not rule_cls.applies(state):
            continue
        state.current = module
        rule = rule_cls(RuleContext(path), state)
        try:
            hooked = _hooked(rule_cls)
            _walk_final(module, rule, hooked, rulewalk.skipped(hooked))
            rule.flush(module)
        except RecursionError:
            raise _RuleRecursion(rule_cls.ID) from None
    state.current = None
    state.code_of = None
    if state.keep_original:  # a FINAL rule refused the file whole: no rewrite stands
        state.edits.clear()
    new_text = original if state.keep_original else code_of(module)
    if new_text != original:
        check_round_trip(first, original)
    return new_text, state


def _still_true(
    found: set[Finding], last: set[Finding], state: FileState, final: str
) -> set[Finding]:
    """The findings of every pass that still hold for the final text.

    The last pass ran every rule over the final text: what it reported holds. A refusal
    made in an earlier pass holds too when its rule reported it again on the same line,
    or when the refused code is still where it was: a rule meets a refused node in later
    passes only while it can still recognise it (TPU006 does not look again at a spec it
    made a TPUEstimatorSpec, while the hooks it refused are still in it). A refusal whose
    code a later rewrite replaced is stale (the first line of the refused node's code is no
    longer on a line that maps back to the finding's line).
    """
    again = {(f.rule_id, f.message, f.position.line) for f in last}
    lines = final.splitlines()
    origin = line_map(state.original, final)
    out = set(last)
    for finding in found - last:
        line = finding.position.line
        head = state.refused_code.get(finding)
        if (
            (finding.rule_id, finding.message, line) in again
            or head is None
            or any(head in text and origin[i] == line for i, text in enumerate(lines))
        ):
            out.add(finding)
    return out


_HOOKED: dict[type[Rule], frozenset[str]] = {}


def _hooked(rule_cls: type[Rule]) -> frozenset[str]:
    """The node types a rule does something at: those it defines `visit_<Type>` for, and
    the defs and calls `Rule` tracks its scope and enclosing calls by."""
    if rule_cls not in _HOOKED:
        own = {
            name.removeprefix("visit_")
            for name in dir(rule_cls)
            if name.startswith("visit_")
            and getattr(rule_cls, name) is not getattr(cst.CSTTransformer, name, None)
        }
        _HOOKED[rule_cls] = frozenset({"FunctionDef", "ClassDef", "Call", *own})
    return _HOOKED[rule_cls]


def _walk_final(
    node: cst.CSTNode, rule: Rule, hooked: frozenset[str], skip: frozenset[type] = frozenset()
) -> None:
    """`walk(node, _ReadOnly(rule))`, with the rule's methods called straight from the walk
    at the node types it hooks and no call at all at the others (most nodes): the FINAL
    rules walk every module they apply to whole, and the two calls per node were a third
    of that walk. Nodes of the types in `skip` (`rulewalk.skipped`) are not entered."""
    fields = child_fields(type(node))
    if fields is None:
        node.visit(_ReadOnly(rule))  # LibCST's own walk (see `cstutil.walk`)
        return
    hook = type(node).__name__ in hooked
    if not hook or rule.on_visit(node):
        for name in fields:
            value = getattr(node, name)
            kind = type(value)
            if kind in skip:
                continue
            if IS_NODE[kind]:
                _walk_final(value, rule, hooked, skip)
            elif kind is tuple or kind is list:
                for item in value:
                    if IS_NODE[type(item)] and type(item) not in skip:
                        _walk_final(item, rule, hooked, skip)
    if hook:
        rule.on_leave(node, node)


class _ReadOnly(cst.CSTVisitor):
    """A FINAL rule over a tree walked read-only; `Rule`'s per-node machinery (statement
    pruning, scope and call tracking) runs only at the node types the rule looks at."""

    def __init__(self, rule: Rule) -> None:
        super().__init__()
        self.rule = rule
        self.hooked = _hooked(type(rule))

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node).__name__ in self.hooked:
            return self.rule.on_visit(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if type(original_node).__name__ in self.hooked:
            self.rule.on_leave(original_node, original_node)
