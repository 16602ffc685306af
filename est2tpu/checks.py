"""What the engine checks of a text before and after the rules: that LibCST can parse it
and give it back, that it does not nest too deeply for LibCST's recursion, and that the
migrated text compiles. Each failure is a MigrationError with a one-line reason."""

from __future__ import annotations

import ast
import re
import sys

import libcst as cst

from est2tpu import cstpieces
from est2tpu.ftypes import MigrationError
from est2tpu.index import node_code

# How deeply expressions and statements may nest (counted on Python's own AST). LibCST's
# visitors recurse several frames per level, so past about 150 nested calls they hit
# RecursionError, and its parser slows down quadratically on long operator chains (a
# 5,000-term `a+a+...` takes 11 s). Real code stays far below: the deepest module in a
# 2,500-file virtualenv is a generated data table at 87.
MAX_NESTING = 100
# A rule's RecursionError is blamed on the code's nesting only when it nests at least this
# deep; below, the rule recursed without end (a bug) and says so with its ID.
DEEP_FOR_RULES = 75


def parse(text: str) -> cst.Module:
    """Parse with a one-line reason on failure.

    Whether LibCST gives the text back unchanged is checked where it matters, before a
    changed tree's code is used (`check_round_trip`): generating the code of every parsed
    module up front cost as much as a rule's pass.
    """
    tree = _check_nesting(text)
    _check_form_feeds(text)
    try:
        return cstpieces.parse(text, tree)
    except cst.ParserSyntaxError as exc:
        raise MigrationError(f"cannot parse: {_syntax_reason(text, exc)}") from None
    except RecursionError:
        raise MigrationError("cannot parse: expression nesting too deep") from None


def check_round_trip(module: cst.Module, text: str) -> None:
    """Raise MigrationError when `module` (parsed from `text`) does not give it back."""
    rendered = node_code(module)
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


def _check_nesting(text: str) -> ast.Module | None:
    """Refuse code nested deeper than MAX_NESTING before LibCST spends time on it; Python's
    tree of the text, None when Python cannot parse it.

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
        return None
    except (ValueError, MemoryError):
        return None
    deepest, depth = _deepest(tree, MAX_NESTING)
    if depth > MAX_NESTING:
        line = getattr(deepest, "lineno", None)
        where = f" at line {line}" if line is not None else ""
        raise MigrationError(
            f"cannot parse: code nested more than {MAX_NESTING} levels deep{where}"
        )
    assert isinstance(tree, ast.Module)
    return tree


def _deepest(tree: ast.AST, limit: int) -> tuple[ast.AST, int]:
    """The first node found deeper than `limit`, or the deepest node, with its depth
    (iteratively: the point is not to recurse)."""
    best: tuple[ast.AST, int] = (tree, 1)
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > best[1]:
            best = (node, depth)
            if depth > limit:
                break
        # `ast.iter_child_nodes`, in its order, without its generators (4 x faster)
        depth += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push((item, depth))
            elif isinstance(value, ast.AST):
                push((value, depth))
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


def verify(new_text: str, path: str, original: str | None = None) -> None:
    """The output must compile (LibCST accepts `f(a=1, a=2)`; `compile` does not).

    When the `original` text does not compile either, the file is not est2tpu's doing:
    LibCST reads newer syntax (PEP 695 `type X = ...`) than the Python running est2tpu
    may compile, and the error says so.
    """
    try:
        compile(new_text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        if original is not None:
            try:
                compile(original, path, "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as own:
                version = ".".join(map(str, sys.version_info[:3]))
                raise MigrationError(
                    f"Python {version}, which runs est2tpu, cannot compile this file ({own}); "
                    "if it uses newer syntax (such as PEP 695 `type X = ...`), run est2tpu "
                    "with the Python the file is written for"
                ) from None
        raise MigrationError(f"internal error: the migrated code does not compile: {exc}") from None
