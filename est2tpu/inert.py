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

In a big module (`MIN_LINES`) the same is done before LibCST ever sees the text (`split`):
parsing 45,000 lines with LibCST took most of the time left and 800 MB. Python's own parser
finds the top-level statements; without the index, a def is also kept when it mentions what
the byte pre-filter looks for, or when another file of the run mentions its name (the index
reaches defs in other modules by name). The pipeline parses, indexes and migrates the
reduced text and splices the defs back, byte for byte.
"""

from __future__ import annotations
import __future__

import ast
import dataclasses
import functools
import itertools
import keyword
import re
import sys
import warnings
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

import libcst as cst
from libcst._nodes.internal import CodegenState

from est2tpu.index import ProjectIndex
from est2tpu.names import ImportTable, canonical_tf
from est2tpu.scan import PREFILTER_TOKENS

# Below this many top-level statements the bookkeeping costs more than it saves.
MIN_STATEMENTS = 40
# From this many lines on, the inert defs are set aside before LibCST parses the module
# (`split`): parsing 45,000 lines took most of the time and 800 MB.
MIN_LINES = 1_000

_IDENT = re.compile(r"[^\W\d]\w*")
_MARK = "__est2tpu_inert_"
_STAR = re.compile(r"\bimport\s*\(?\s*\*")
# Before parsing: placeholders of their own, so that the engine's (`reduce`) never equal one.
_ASIDE = "__est2tpu_aside_"
# A line that may start a top-level def or class (or a decorator of one).
_DEF_START = re.compile(r"(?:@|def\b|class\b|async\b)")
_LONE_CR = re.compile(r"\r(?!\n)")
# A def mentioning any of these is kept: they are what the byte pre-filter lets through, so
# what the index and the rules could react to, whatever the imports say.
_NEVER_ASIDE = (*(t.decode() for t in PREFILTER_TOKENS), "tensorflow")
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
    is_def = [isinstance(s, (cst.FunctionDef, cst.ClassDef)) for s in body]
    names = [s.name.value if isinstance(s, (cst.FunctionDef, cst.ClassDef)) else "" for s in body]

    kept = _kept(words, is_def, names, imports.bindings, _scopes_in(index, path), None, codes)

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


@dataclasses.dataclass
class Split:
    """A module's text with its inert defs set aside before any parse (see `split`)."""

    text: str  # what LibCST parses and the rules see: same lines, placeholders for defs
    texts: dict[str, str]  # placeholder (its lines) -> the defs' text (the same lines)

    def restore(self, text: str) -> str | None:
        """The full text from the reduced one (the rules' output); None if a placeholder
        did not come through exactly once and untouched."""
        for placeholder, original in self.texts.items():
            if text.count(placeholder) != 1:
                return None
            text = text.replace(placeholder, original)
        return text


@dataclasses.dataclass
class _Unit:
    """Top-level statements sharing lines (usually one), as line indices (0-based)."""

    lead: int  # first line, counting the blank and comment lines before it
    first: int  # first line of its code (a decorator's)
    last: int
    name: str  # a def's or class's name; "" for anything else


def split(
    text: str,
    mentioned: Callable[[Collection[str]], Collection[str]] | None = None,
    too_deep: Callable[[ast.AST], bool] | None = None,
) -> Split | None:
    """`text` with its inert top-level defs replaced by placeholders of as many lines, for
    LibCST to parse instead of `text`; None when the module is small or anything is unsure.

    Python's own parser (fast, in C) finds the top-level statements, one piece of the text
    at a time (a piece starts at a line that opens a def, class or decorator and ends where
    the text up to the next such line compiles on its own; so at most a piece's tree is in
    memory). The statements kept are `reduce`'s, judged without a tree and without the index:
    a def is also kept when its text says anything the byte pre-filter looks for, or when
    `mentioned(names)` (the names of this module's defs that other modules of the run
    mention) names it, since the index reaches a def in another module by its name.
    `too_deep(tree)` is the engine's nesting limit: a piece past it leaves the whole text
    to the engine, which reports it as it always has.
    """
    if text.count("\n") < MIN_LINES or not text.endswith("\n"):
        return None
    if "\f" in text or _LONE_CR.search(text):
        return None  # the engine refuses or reports these; let it, on the whole text
    if not _worth_trying(text):
        return None
    units = _units(text, too_deep)
    if units is None or len(units) < MIN_STATEMENTS:
        return None
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    codes = [text[starts[u.lead] : starts[u.last + 1]] for u in units]
    words = [set(_IDENT.findall(code)) for code in codes]
    imports_code = "".join(c for c, w in zip(codes, words, strict=True) if "import" in w)
    if _STAR.search(imports_code):
        return None  # a star import binds names no table lists
    try:
        imports = ImportTable.from_module(cst.parse_module(imports_code))
    except (cst.ParserSyntaxError, RecursionError):
        return None
    is_def = [bool(u.name) for u in units]
    names = [u.name for u in units]
    forced = [any(token in code for token in _NEVER_ASIDE) for code in codes]
    seeds = set(mentioned({n for n in names if n})) if mentioned is not None else set()
    kept = _kept(words, is_def, names, imports.bindings, seeds, forced, codes)

    out: list[str] = []
    texts: dict[str, str] = {}
    done = 0  # offset in `text` copied so far
    i = 0
    while i < len(units):
        if kept[i]:
            i += 1
            continue
        j = i
        while j < len(units) and not kept[j]:
            j += 1
        begin, end = starts[units[i].first], starts[units[j - 1].last + 1]
        original = text[begin:end]
        newline = "\r\n" if original.endswith("\r\n") else "\n"
        lines = original.count("\n")
        # A string literal of exactly as many lines: every later line keeps its number.
        placeholder = f'"""{_ASIDE}{len(texts)}__' + newline * (lines - 1) + '"""' + newline
        texts[placeholder] = original
        out += [text[done:begin], placeholder]
        done = end
        i = j
    if not texts:
        return None
    out.append(text[done:])
    return Split("".join(out), texts)


_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+)?import[ \t]+([^\n]*)", re.MULTILINE)
_DEF_LINE = re.compile(r"^(?:@|def\b|class\b|async\b)", re.MULTILINE)
# Below this share of the text in defs that may be inert, `split` costs more than it saves.
MIN_SHARE = 0.3


def _worth_trying(text: str) -> bool:
    """A guess from the text alone (no parse): may at least MIN_SHARE of it be inert defs?

    Every name on an import line of anything but an unrelated module counts as tied to the
    rules (more than `_kept` counts, so the guess errs towards not trying); a chunk between
    two lines that open a def counts as inert when it mentions none of them. TensorFlow's
    own big modules, where nearly every def uses TensorFlow, are not tried.
    """
    tainted: set[str] = set()
    tf_bound: dict[str, str] = {}  # a name an import line binds to TensorFlow -> its target
    for match in _IMPORT_LINE.finditer(text):
        top = _IDENT.findall(match.group(1) or match.group(2))[:1]
        if not top or top[0] not in _UNRELATED:
            tainted.update(_IDENT.findall(match.group(0)))
        if top and top[0] == "tensorflow":
            # TensorFlow's private modules are not its API: their names stay tied
            found = _line_bindings(match.group(1), match.group(2))
            tf_bound.update((k, v) for k, v in found.items() if canonical_tf(v) is not None)
    starts = [m.start() for m in _DEF_LINE.finditer(text)] + [len(text)]
    inert = 0
    for a, b in itertools.pairwise(starts):
        chunk = text[a:b]
        words = _IDENT.findall(chunk)
        tied = not tainted.isdisjoint(words)
        if tied and tf_bound:
            idents = set(words)
            if not idents.isdisjoint(tf_bound):
                idents -= plain_tf(chunk, tf_bound)  # as `_kept` will judge it
                tied = not tainted.isdisjoint(idents)
        if not tied and not any(token in chunk for token in _NEVER_ASIDE):
            inert += b - a
    return inert >= MIN_SHARE * len(text)


def _line_bindings(module: str | None, names: str) -> dict[str, str]:
    """What one import line (`_IMPORT_LINE`'s groups) binds: name -> qualified target."""
    out: dict[str, str] = {}
    for item in names.split("#", 1)[0].strip(" \t()\\").split(","):
        words = item.split()
        if not words or not all(_DOTTED.fullmatch(w) for w in words[::2]):
            continue
        bound = words[2] if len(words) == 3 and words[1] == "as" else None
        if module is not None:
            out[bound or words[0]] = f"{module}.{words[0]}"
        elif bound is not None:
            out[bound] = words[0]
        else:
            out[words[0].split(".")[0]] = words[0].split(".")[0]
    return out


_DOTTED = re.compile(r"[^\W\d][\w.]*")


def _units(text: str, too_deep: Callable[[ast.AST], bool] | None) -> list[_Unit] | None:
    """The top-level statements of `text`, piece by piece (see `split`); None when a piece
    does not compile, nests too deeply, or the pieces cost more than a few parses."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    breaks = [i for i, line in enumerate(lines) if i and _DEF_START.match(line)]
    breaks.append(len(lines) - 1)  # the text ends with a newline: its last "line" is empty
    units: list[_Unit] = []
    flags = 0  # the `from __future__` imports the first piece makes
    budget = 3 * len(text)  # a string holding many `def` lines makes pieces fail to compile
    a = 0
    k = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # compile's SyntaxWarnings are the engine's to give
        while a < len(lines) - 1:
            while True:
                b = breaks[k]
                piece = text[offsets[a] : offsets[b]]
                budget -= len(piece)
                if budget < 0:
                    return None
                try:
                    tree = compile(piece, "<est2tpu>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
                except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                    if b == len(lines) - 1:
                        return None
                    k += 1
                    continue
                break
            if too_deep is not None and too_deep(tree):
                return None
            assert isinstance(tree, ast.Module)
            if not a:
                flags = _future_flags(tree)
            try:
                # As the whole text's `compile` would (the pipeline's verify step): a def set
                # aside is then known to compile, wherever the rules' output puts it.
                compile(tree, "<est2tpu>", "exec", flags, dont_inherit=True)
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                return None
            for stmt in tree.body:
                first = stmt.lineno - 1 + a
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    first = min([first, *(d.lineno - 1 + a for d in stmt.decorator_list)])
                last = (stmt.end_lineno or stmt.lineno) - 1 + a
                if units and first <= units[-1].last:
                    # `a = 1; b = 2`: one statement line for LibCST
                    units[-1].last, units[-1].name = max(last, units[-1].last), ""
                    continue
                lead = units[-1].last + 1 if units else 0
                code = lead
                while code < first and (not lines[code].strip() or lines[code].lstrip()[0] == "#"):
                    code += 1
                name = (
                    stmt.name
                    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    else ""
                )
                units.append(_Unit(lead, code, last, name))
            a = b
            k += 1
    return units


def _future_flags(tree: ast.Module) -> int:
    flags = 0
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            for alias in stmt.names:
                feature = getattr(__future__, alias.name, None)
                flags |= getattr(feature, "compiler_flag", 0)
    return flags


def _kept(
    words: list[set[str]],
    is_def: list[bool],
    names: list[str],
    bindings: dict[str, str],
    seeds: set[str],
    forced: list[bool] | None = None,
    codes: list[str] | None = None,
) -> list[bool]:
    """Which top-level statements the rules must see (see the module's docstring).

    `words` are the identifiers each statement's text mentions, `bindings` the module's
    import table, `seeds` top-level names something outside the statements ties to the rules
    (the index's scopes, names other modules mention) and `forced` statements kept anyway.
    With the statements' `codes`, a def's mentions of names bound to TensorFlow count only
    where they spell a name the rules or the index read (`plain_tf`).
    """
    idents = [w - _PYTHON_KEYWORDS for w in words]
    tainted = {name for name, target in bindings.items() if _related(target)}
    # Names bound to TensorFlow's API: a def that spells them only in chains no rule or
    # index reads (`tf.nn.relu`, see `plain_tf`) is not tied to the rules by them.
    tf_bound = {
        name: target for name, target in bindings.items() if canonical_tf(target) is not None
    }
    # Names the rules resolve to unrelated modules (numpy as np) lead nowhere, wherever
    # they appear, the import statements included.
    unrelated = set(bindings) - tainted
    tainted |= seeds
    # The import block (and what comes before it) stays: LibCST adds imports after it.
    first = 1 + max((i for i, w in enumerate(words) if "import" in w), default=-1)
    kept = [not d or i < first or i == len(words) - 1 for i, d in enumerate(is_def)]
    if forced is not None:
        kept = [k or f for k, f in zip(kept, forced, strict=True)]

    by_ident: dict[str, list[int]] = {}
    by_name: dict[str, list[int]] = {}
    for i, ids in enumerate(idents):
        if is_def[i]:
            if codes is not None and not ids.isdisjoint(tf_bound):
                ids = ids - plain_tf(codes[i], tf_bound)
            for ident in ids:
                by_ident.setdefault(ident, []).append(i)
            by_name.setdefault(names[i], []).append(i)
    done = [False] * len(words)
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
    return kept


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


def plain_tf(code: str, tf_bound: dict[str, str]) -> set[str]:
    """The names of `tf_bound` (name -> the TensorFlow module or name it is bound to) that
    `code` spells only in chains the rules and the index never read: `tf.nn.relu(x)`, whose
    canonical name (`nn.relu`) no rule and no part of the index can compare anything with
    (`reads_name`). A name spelled alone (`f(tf)`), at the end of a chain that goes on past
    a comment or a line continuation is not counted as plain; after a dot it is no
    binding (`self.tf`).
    """
    plain: set[str] = set()
    read: set[str] = set()
    for match in _chains(tuple(sorted(tf_bound))).finditer(code):
        name = match.group(1)
        if name in read:
            continue
        rest = _SPACE.sub("", match.group(2))
        after = code[match.end() : match.end() + 64].lstrip(" \t")
        canonical = canonical_tf(f"{tf_bound[name]}{rest}")
        if (
            canonical is None
            or after.startswith(("#", "\\", "\n"))
            and _CONTINUED.match(code, match.end())
            or reads_name(canonical)
        ):
            read.add(name)
            plain.discard(name)
        else:
            plain.add(name)
    return plain


@functools.lru_cache(maxsize=256)
def _chains(names: tuple[str, ...]) -> re.Pattern[str]:
    """`name.attr.attr` for these names, not after a dot or inside a word (spaces and line
    breaks allowed around the dots, as in parentheses)."""
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])({alternatives})(?!\w)({_ATTRS})")


_ATTRS = r"(?:[ \t]*\n?[ \t]*\.[ \t]*\n?[ \t]*[^\W\d]\w*)*"
_SPACE = re.compile(r"\s+")
# After a chain: a comment or a continuation, then a dot: the chain may go on.
_CONTINUED = re.compile(r"[ \t]*(?:#[^\n]*)?\\?\n[\s\\]*(?:#[^\n]*\n[\s\\]*)*\.")
# Modules of est2tpu that never read user code (the runtime shim migrated code imports).
_NOT_READING = "runtime"
_NAME = re.compile(r"[A-Za-z_.][\w.]*")


@functools.cache
def _vocabulary() -> tuple[frozenset[str], frozenset[str]]:
    """What the rules and the index can compare a TensorFlow name with: every string
    literal of est2tpu's modules but the runtime's, when it is made of names alone
    (`"estimator.Estimator"`, `"train."`, `"Optimizer"`, the word lists of `_words("accuracy
    auc ...")`, an f-string's parts around its fields), each word read as a canonical name
    when it is spelled through a TensorFlow module (`"tensorflow.compat.v1.train."` is
    `"train."`). A rule that compares a name with anything spells what it compares with,
    so the words over-approximate what any rule reads. The literals are read without a
    parse: every piece of a line between two quotes of a kind, and every triple-quoted
    text, which takes in the text between literals too: more words, never fewer. As
    (words, the same words in order)."""
    words: set[str] = set()
    package = Path(__file__).parent
    for path in sorted(package.rglob("*.py")):
        if _NOT_READING in path.relative_to(package).parts:
            continue
        source = path.read_text(encoding="utf-8")
        pieces = [m.group(1) or m.group(2) or "" for m in _TRIPLE.finditer(source)]
        for line in source.splitlines():
            pieces += line.split('"')[1:-1] + line.split("'")[1:-1]
        for piece in pieces:
            found = _FIELD.sub(" ", piece).split()
            if not found or not all(_NAME.fullmatch(w) for w in found):
                continue
            for word in found:
                canonical = canonical_tf(word.rstrip(".")) if "." in word else None
                if canonical is not None:
                    word = canonical + ("." if word.endswith(".") and canonical else "")
                if word.strip("."):
                    words.add(word)
    if not any(package.glob("rules/*.py")):
        # installed without sources (bytecode only): no words to go by, every name is read
        return frozenset(), frozenset()
    under = {word[:i] for word in words for i, c in enumerate(word) if c == "." and i}
    return frozenset(words), frozenset(under)


_TRIPLE = re.compile(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'', re.DOTALL)
_FIELD = re.compile(r"\{[^{}]*\}")


@functools.lru_cache(maxsize=8192)
def reads_name(canonical: str) -> bool:
    """Can a rule or the index read the TensorFlow name `canonical` (`nn.relu`)? True when a
    word of `_vocabulary` is the name, one of its dotted parts, a name under it, or its start
    or end at a word boundary (a start ending in a dot or an underscore or followed by one or
    by a capital: `"train."`, `"sparse_"`; an end starting with a dot, an underscore or a
    capital: `"Optimizer"` in `train.AdamOptimizer`). The empty name (the module itself,
    passed around) is read, and so is every name when est2tpu's sources cannot be read."""
    words, under = _vocabulary()
    if not canonical or not words:
        return True
    if canonical in words or canonical in under or not words.isdisjoint(canonical.split(".")):
        return True
    for i in range(1, len(canonical)):
        here, before = canonical[i], canonical[i - 1]
        boundary = here in "._" or here.isupper()
        if (boundary or before in "._") and canonical[:i] in words:
            return True  # its start
        if boundary and canonical[i:] in words:
            return True  # its end
    return False


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
