"""Set aside the top-level defs no rule can act on, so that a big module costs about a parse.

A LibCST transform rebuilds every node it enters, and the engine runs each rule over the
whole tree at least twice (the last pass proves the fixpoint): in a 45,000-line module of
small helper functions that was 25 ms per untouched helper. Here the engine hands the rules
a smaller module instead: each run of consecutive *inert* top-level defs is replaced by one
placeholder statement that spans exactly as many lines (a string literal), so every line
number the rules report is already the original's. After the rules converged, the
placeholders are swapped back for the untouched defs.

A top-level `def` or `class` is inert unless something ties it to what the rules read:

- it mentions a name bound by an import other than the standard library's and
  numpy/pandas/scipy's (the rules resolve names through imports; TensorFlow's can only be
  reached that way), or any `import`, `global` or `nonlocal`;
- the index lists it (model_fns, input_fns, Estimator constructions, use sites, model_fn
  helpers: anything keyed by its scope in this file);
- it mentions a name that a kept statement binds, or a kept statement mentions its name
  (a model_fn's helpers, which the tf2 rules follow by name through the tree);
- it sits in the module's import block or is its last statement (where LibCST adds
  imports and the final newline).

Every other top-level statement is kept. "Mentions" is over the statement's source text
(identifiers, including those in strings and comments): over-approximate, never under.
"""

from __future__ import annotations

import dataclasses
import keyword
import re
import sys
from collections.abc import Iterator

import libcst as cst
from libcst._nodes.internal import CodegenState

from est2tpu.index import ProjectIndex
from est2tpu.names import ImportTable

# Below this many top-level statements the bookkeeping costs more than it saves.
MIN_STATEMENTS = 40

_IDENT = re.compile(r"[^\W\d]\w*")
_MARK = "__est2tpu_inert_"
_STAR = re.compile(r"\bimport\s*\(?\s*\*")
# Modules whose names no rule resolves to anything it acts on.
_UNRELATED = frozenset(sys.stdlib_module_names) | {"numpy", "pandas", "scipy"}
_KEYWORDS = frozenset({"import", "global", "nonlocal"})
# Not names: left out of what a statement mentions (every def says `def` and `return`).
_PYTHON_KEYWORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)

Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


@dataclasses.dataclass
class Reduced:
    """The module the rules see, and the text each placeholder stands for."""

    module: cst.Module
    # placeholder statement's text (after its leading lines) -> the defs' text (likewise)
    texts: dict[str, str]

    def restore(self, text: str) -> str | None:
        """The full module's text from the reduced one's; None if a placeholder did not
        come through the rules exactly once and untouched."""
        for placeholder, original in self.texts.items():
            if text.count(placeholder) != 1:
                return None
            text = text.replace(placeholder, original)
        return text


def reduce(module: cst.Module, text: str, path: str, index: ProjectIndex) -> Reduced | None:
    """`module` (parsed from `text`) with its inert defs set aside, or None when there is
    nothing to set aside or LibCST would not give `text` back."""
    body: list[Statement] = list(module.body)
    if len(body) < MIN_STATEMENTS:
        return None
    codes, full = _statement_codes(module)
    if full != text:
        return None  # the engine's own round-trip check reports it, if it matters
    words = [set(_IDENT.findall(code)) for code in codes]
    # Import statements are always kept (below), so their table is the module's.
    imports = ImportTable.from_module(
        cst.Module(body=[s for s, w in zip(body, words, strict=True) if "import" in w])
    )
    if any(_STAR.search(code) for code, w in zip(codes, words, strict=True) if "import" in w):
        return None  # a star import binds names no table lists
    idents = [w - _PYTHON_KEYWORDS for w in words]
    is_def = [isinstance(s, (cst.FunctionDef, cst.ClassDef)) for s in body]
    names = [s.name.value if isinstance(s, (cst.FunctionDef, cst.ClassDef)) else "" for s in body]

    tainted = {name for name, target in imports.bindings.items() if _related(target)}
    # Names the rules resolve to unrelated modules (numpy as np) lead nowhere, wherever
    # they appear, the import statements included.
    unrelated = set(imports.bindings) - tainted
    tainted |= _scopes_in(index, path)
    # The import block (and what comes before it) stays: LibCST adds imports after it.
    first = 1 + max((i for i, w in enumerate(words) if "import" in w), default=-1)
    kept = [not d or i < first or i == len(body) - 1 for i, d in enumerate(is_def)]

    by_ident: dict[str, list[int]] = {}
    by_name: dict[str, list[int]] = {}
    for i, ids in enumerate(idents):
        if is_def[i]:
            for ident in ids:
                by_ident.setdefault(ident, []).append(i)
            by_name.setdefault(names[i], []).append(i)
    done = [False] * len(body)
    todo: list[int] = []

    def keep(i: int) -> None:
        if not done[i]:
            done[i] = kept[i] = True
            todo.append(i)

    spread: set[str] = set()

    def spread_from(idents_bound: set[str]) -> None:
        for ident in idents_bound - spread:
            spread.add(ident)
            for j in by_ident.get(ident, ()):
                keep(j)

    for i, w in enumerate(words):
        if kept[i] or w & _KEYWORDS:
            keep(i)
    spread_from(tainted)
    while todo:
        i = todo.pop()
        # What it binds at module level: a def its name, anything else every name it
        # mentions (over, never under); and the defs it mentions by name.
        spread_from({names[i]} if is_def[i] else idents[i] - unrelated)
        for ident in idents[i]:
            for j in by_name.get(ident, ()):
                keep(j)

    newline = module.default_newline
    texts: dict[str, str] = {}
    new_body: list[Statement] = []
    i = 0
    while i < len(body):
        if kept[i]:
            new_body.append(body[i])
            i += 1
            continue
        j = i
        while j < len(body) and not kept[j]:
            j += 1
        leading = len(body[i].leading_lines)
        run = "".join(codes[i:j])
        lines = run.count("\n") - leading
        cut = 0
        for _ in range(leading):
            cut = run.index("\n", cut) + 1
        # A string literal of exactly as many lines: every later line keeps its number.
        literal = f'"""{_MARK}{len(texts)}__' + newline * (lines - 1) + '"""'
        texts[literal + newline] = run[cut:]
        new_body.append(
            cst.SimpleStatementLine(
                body=[cst.Expr(cst.SimpleString(literal))], leading_lines=body[i].leading_lines
            )
        )
        i = j
    if not texts:
        return None
    return Reduced(module.with_changes(body=new_body), texts)


def _statement_codes(module: cst.Module) -> tuple[list[str], str]:
    """The code of each top-level statement, and of the module: one code generation
    (`Module._codegen_impl`, with the boundaries noted)."""
    state = CodegenState(
        default_indent=module.default_indent, default_newline=module.default_newline
    )
    for node in module.header:
        node._codegen(state)
    bounds = []
    for stmt in module.body:
        start = len(state.tokens)
        stmt._codegen(state)
        bounds.append((start, len(state.tokens)))
    for node in module.footer:
        node._codegen(state)
    if module.has_trailing_newline:
        if not state.tokens:
            state.add_token(state.default_newline)
    else:
        state.pop_trailing_newline()
    tokens = state.tokens
    return ["".join(tokens[a:b]) for a, b in bounds], "".join(tokens)


def _related(target: str) -> bool:
    """Can a name bound to `target` lead a rule anywhere (anything but unrelated modules)?"""
    return target.split(".", 1)[0] not in _UNRELATED


def _scopes_in(index: ProjectIndex, path: str) -> set[str]:
    """The top-level names of every scope the index keys by in this file."""
    found: set[str] = set()
    for value in _values(index, depth=0):
        if (
            isinstance(value, tuple)
            and len(value) >= 2
            and value[0] == path
            and isinstance(value[1], str)
        ):
            found.add(value[1].split(".", 1)[0])
    found.discard("")
    return found


def _values(value: object, depth: int) -> Iterator[object]:
    """Every tuple reachable in the index's containers and plans (keys and values)."""
    if depth > 6:
        return
    if isinstance(value, tuple):
        yield value
        for item in value:
            if isinstance(item, (tuple, dict, set, frozenset, list)):
                yield from _values(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _values(key, depth + 1)
            yield from _values(item, depth + 1)
    elif isinstance(value, (set, frozenset, list)):
        for item in value:
            yield from _values(item, depth + 1)
    elif (
        dataclasses.is_dataclass(value)
        and not isinstance(value, type)
        and not isinstance(value, cst.CSTNode)
    ):
        for f in dataclasses.fields(value):
            yield from _values(getattr(value, f.name), depth + 1)
