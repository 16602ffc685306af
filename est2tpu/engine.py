"""The transform engine: parse once, run the rules to a fixpoint, verify. Never prints or writes."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper

from est2tpu.ftypes import MigrationError, Target
from est2tpu.index import ProjectIndex
from est2tpu.names import ImportTable
from est2tpu.registry import rule_classes
from est2tpu.rule import FileState, Rule

MAX_PASSES = 4

# Bytes any rule can react to. A file without one of them is never parsed.
PREFILTER_TOKENS = (
    b"stimator",
    b"tpu",
    b"RunConfig",
    b"export_savedmodel",
    b"input_fn",
    b"model_fn",
)


def may_match(data: bytes) -> bool:
    """The byte pre-filter."""
    return any(token in data for token in PREFILTER_TOKENS)


def select_rules(
    target: Target, select: Collection[str] | None = None, ignore: Collection[str] = ()
) -> list[type[Rule]]:
    """The rules that run for a target, honouring select/ignore (ID prefixes allowed)."""

    def matches(rule_id: str, patterns: Collection[str]) -> bool:
        return any(rule_id.startswith(p.upper()) for p in patterns)

    chosen = []
    for cls in rule_classes():
        if target not in cls.TARGETS:
            continue
        if select is not None and not matches(cls.ID, select):
            continue
        if matches(cls.ID, ignore):
            continue
        chosen.append(cls)
    return chosen


def parse(text: str) -> cst.Module:
    """Parse with a one-line reason on failure."""
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid syntax"
        raise MigrationError(
            f"cannot parse: syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: "
            f"{first}"
        ) from None
    except RecursionError:
        raise MigrationError("cannot parse: expression nesting too deep") from None


def transform(
    module: cst.Module,
    *,
    path: str,
    index: ProjectIndex,
    target: Target,
    rules: Sequence[type[Rule]],
    use_runtime: bool = True,
) -> tuple[str, FileState]:
    """Run the rules in order, repeatedly, until a whole pass changes nothing.

    The last pass is the proof that a second run is a no-op: it ran every rule over the
    final text and changed nothing. Findings from every pass are kept (a rule reports a
    refusal in the pass where it meets the node), each pointing into the original text.
    """
    original = module.code
    state = FileState(
        path, index, target, ImportTable.from_module(module), original, use_runtime=use_runtime
    )
    for _ in range(MAX_PASSES):
        before = module.code
        for rule_cls in rules:
            state.imports = ImportTable.from_module(module)
            state.current = module
            context = CodemodContext(filename=path)
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            module = wrapper.visit(rule_cls(context, state))
            if context.scratch.get(AddImportsVisitor.CONTEXT_KEY):
                module = AddImportsVisitor(context).transform_module(module)
            if context.scratch.get(RemoveImportsVisitor.CONTEXT_KEY):
                module = RemoveImportsVisitor(context).transform_module(module)
        if module.code == before:
            break
    else:
        raise MigrationError(f"internal error: the rules did not converge in {MAX_PASSES} passes")
    state.current = None
    return module.code, state


def verify(new_text: str, path: str) -> None:
    """The output must compile (LibCST accepts `f(a=1, a=2)`; `compile` does not)."""
    try:
        compile(new_text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        raise MigrationError(f"internal error: the migrated code does not compile: {exc}") from None
