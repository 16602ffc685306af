"""The transform engine: parse once, run the rules to a fixpoint, verify. Never prints or writes."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.matchers import _visitors as _matcher_visitors

from est2tpu import inert
from est2tpu.cstutil import IS_NODE, child_fields
from est2tpu.ftypes import Finding, MigrationError, Target
from est2tpu.index import ProjectIndex
from est2tpu.names import ImportTable
from est2tpu.registry import rule_classes
from est2tpu.rule import FileState, Rule, line_map
from est2tpu.scan import PREFILTER_TOKENS, may_match  # noqa: F401 - re-exported

MAX_PASSES = 4

# How deeply expressions and statements may nest (counted on Python's own AST). LibCST's
# visitors recurse several frames per level, so past about 150 nested calls they hit
# RecursionError, and its parser slows down quadratically on long operator chains (a
# 5,000-term `a+a+...` takes 11 s). Real code stays far below: the deepest module in a
# 2,500-file virtualenv is a generated data table at 87.
MAX_NESTING = 100
# A rule's RecursionError is blamed on the code's nesting only when it nests at least this
# deep; below, the rule recursed without end (a bug) and says so with its ID.
DEEP_FOR_RULES = 75


def _gathered_once_per_class(gather: Callable[[object], dict[Any, Any]]) -> None:
    """LibCST's matcher visitors (AddImportsVisitor, RemoveImportsVisitor and the visitors
    they run) search themselves for matcher-decorated methods at every construction, through
    `dir()` and `getattr` of each of their 1,650 attributes: tens of milliseconds per visitor,
    built once or twice per rule that adds or removes an import, per pass (a quarter of the
    CPU of migrating the fixtures). None of those classes has a decorated method, and a
    class's methods do not change: a class found to have none is not searched again. A class
    that has some is searched as before, at every construction (the methods found are bound
    to the instance)."""
    without: set[type] = set()

    def gather_once(obj: object) -> dict[Any, Any]:
        cls = type(obj)
        if cls in without:
            return {}
        found = gather(obj)
        if not found:
            without.add(cls)
        return found

    setattr(_matcher_visitors, gather.__name__, gather_once)


for _gather in (
    _matcher_visitors._gather_constructed_visit_funcs,
    _matcher_visitors._gather_constructed_leave_funcs,
    _matcher_visitors._gather_matchers,
):
    _gathered_once_per_class(_gather)


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


def parse(text: str) -> cst.Module:
    """Parse with a one-line reason on failure.

    Whether LibCST gives the text back unchanged is checked where it matters, before a
    changed tree's code is used (`check_round_trip`): generating the code of every parsed
    module up front cost as much as a rule's pass.
    """
    _check_nesting(text)
    _check_form_feeds(text)
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise MigrationError(f"cannot parse: {_syntax_reason(text, exc)}") from None
    except RecursionError:
        raise MigrationError("cannot parse: expression nesting too deep") from None


def check_round_trip(module: cst.Module, text: str) -> None:
    """Raise MigrationError when `module` (parsed from `text`) does not give it back."""
    rendered = module.code
    if rendered != text:
        # LibCST 1.9 drops a blank line before a last line that holds only whitespace or
        # an indented comment and no newline; everything else it gives back exactly.
        at = next((i for i, (a, b) in enumerate(zip(text, rendered)) if a != b), None)
        line = text.count("\n", 0, len(rendered) if at is None else at) + 1
        lone_cr = _LONE_CR.search(text)
        if lone_cr is not None:
            # LibCST reads a lone CR as a line end but gives it back as LF.
            line = len(_LINE_ENDS.findall(text, 0, lone_cr.start())) + 1
            raise MigrationError(
                f"cannot parse: line {line} ends with a lone CR (\\r, classic Mac OS line "
                "endings), which the parser would not give back unchanged; convert the file's "
                "line endings to LF or CRLF"
            )
        raise MigrationError(
            f"cannot parse: the parser would not give line {line} back unchanged "
            "(end the file with a newline)"
        )


_LONE_CR = re.compile(r"\r(?!\n)")
_LINE_ENDS = re.compile(r"\r\n|\r|\n")
# A form feed that starts a line of code: LibCST drops it (or, inside a block, makes it
# part of the indentation and then fails). Python resets the column after it.
_FORM_FEED_START = re.compile(r"^\f[ \t\f]*[^\s#]", re.MULTILINE)


def _check_form_feeds(text: str) -> None:
    found = _FORM_FEED_START.search(text)
    if found is not None:
        line = text.count("\n", 0, found.start()) + 1
        raise MigrationError(
            f"cannot parse: line {line} starts with a form feed (\\f) before code, which "
            "the parser would not give back unchanged; remove it"
        )


def _check_nesting(text: str) -> None:
    """Refuse code nested deeper than MAX_NESTING before LibCST spends time on it.

    Python's own parser is fast and iterative here; text it rejects is left to LibCST,
    which may still accept it (newer syntax than the running Python knows).
    """
    try:
        tree = compile(text, "<est2tpu>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except RecursionError:
        raise MigrationError(
            f"cannot parse: code nested more than {MAX_NESTING} levels deep"
        ) from None
    except SyntaxError as exc:
        # LibCST would parse this, but no Python can compile it, nor the migrated code.
        if "too many nested parentheses" in str(exc.msg):
            raise MigrationError(
                f"cannot parse: too many nested parentheses at line {exc.lineno}"
            ) from None
        return
    except (ValueError, MemoryError):
        return
    deepest, depth = _deepest(tree, MAX_NESTING)
    if depth > MAX_NESTING:
        line = getattr(deepest, "lineno", None)
        where = f" at line {line}" if line is not None else ""
        raise MigrationError(
            f"cannot parse: code nested more than {MAX_NESTING} levels deep{where}"
        )


def _deepest(tree: ast.AST, limit: int) -> tuple[ast.AST, int]:
    """The first node found deeper than `limit`, or the deepest node, with its depth
    (iteratively: the point is not to recurse)."""
    best: tuple[ast.AST, int] = (tree, 1)
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > best[1]:
            best = (node, depth)
            if depth > limit:
                break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return best


def too_deep(tree: ast.AST) -> bool:
    """Does Python's tree of some code nest deeper than `parse` accepts?"""
    return _deepest(tree, MAX_NESTING)[1] > MAX_NESTING


def nesting_depth(text: str) -> int:
    """How deeply `text` nests, counted as MAX_NESTING counts (0 when Python cannot parse it)."""
    try:
        tree = compile(text, "<est2tpu>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return 0
    return _deepest(tree, MAX_NESTING)[1]


def _syntax_reason(text: str, exc: cst.ParserSyntaxError) -> str:
    # Python's message says what is wrong ("Missing parentheses in call to 'print'" for
    # Python 2 code); LibCST's native parser only says where.
    try:
        compile(text, "<est2tpu>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as err:
        if err.lineno is not None and err.msg:
            column = f", column {err.offset}" if err.offset else ""
            return f"syntax error at line {err.lineno}{column}: {err.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid syntax"
    return f"syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: {first}"


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
    state = FileState(
        path, index, target, ImportTable.from_module(module), original, use_runtime=use_runtime
    )
    first = imports_of = module
    # Generated code of each tree met, by identity (the first tree's is taken to be the
    # text; `check_round_trip` below holds LibCST to that before a changed tree is used).
    codes: dict[int, str] = {id(first): original}

    def code_of(tree: cst.Module) -> str:
        if id(tree) not in codes:
            codes[id(tree)] = tree.code
        return codes[id(tree)]

    state.code_of = code_of
    kept: list[cst.Module] = [first]  # trees whose ids are in `codes` stay alive
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
            context = CodemodContext(filename=path)
            rule = rule_cls(context, state)
            if rule_cls.PRUNE and not rule.statements(seen):
                continue  # nothing in this tree the rule acts on
            had = len(state.findings)
            try:
                module = seen.visit(rule)
                rule.flush(seen)
            except RecursionError:
                raise _RuleRecursion(rule_cls.ID) from None
            if module is not seen and len(state.findings) != had:
                # A finding on code its own rule replaced in the same visit is a caveat of
                # that rewrite (TPU007: converted, the batch size left to the user), never
                # stale because the code it names is gone.
                text = module.code
                for finding in state.findings - found - caveats:
                    head = state.refused_code.get(finding)
                    if head is not None and head not in text:
                        caveats.add(finding)
            if context.scratch.get(AddImportsVisitor.CONTEXT_KEY):
                leading = _head(module)
                if _adds_imports(context, leading):
                    module = _add_imports(context, module, leading)
            if context.scratch.get(RemoveImportsVisitor.CONTEXT_KEY):
                module = RemoveImportsVisitor(context).transform_module(module)
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
        rule = rule_cls(CodemodContext(filename=path), state)
        try:
            _walk_final(module, rule, _hooked(rule_cls))
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


def _walk_final(node: cst.CSTNode, rule: Rule, hooked: frozenset[str]) -> None:
    """`walk(node, _ReadOnly(rule))`, with the rule's methods called straight from the walk
    at the node types it hooks and no call at all at the others (most nodes): the FINAL
    rules walk every module they apply to whole, and the two calls per node were a third
    of that walk."""
    fields = child_fields(type(node))
    if fields is None:
        node.visit(_ReadOnly(rule))  # LibCST's own walk (see `cstutil.walk`)
        return
    hook = type(node).__name__ in hooked
    if not hook or rule.on_visit(node):
        for name in fields:
            value = getattr(node, name)
            if IS_NODE[type(value)]:
                _walk_final(value, rule, hooked)
            elif isinstance(value, (tuple, list)):
                for item in value:
                    if IS_NODE[type(item)]:
                        _walk_final(item, rule, hooked)
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


def verify(new_text: str, path: str) -> None:
    """The output must compile (LibCST accepts `f(a=1, a=2)`; `compile` does not)."""
    try:
        compile(new_text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        raise MigrationError(f"internal error: the migrated code does not compile: {exc}") from None
