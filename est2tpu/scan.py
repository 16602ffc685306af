"""What is known about a file before it is parsed: the byte pre-filter, the module names
it may be imported as, and the TensorFlow imports a regex can see. No LibCST here."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from pathlib import PurePath

from est2tpu.ftypes import Target

# Bytes any rule can react to. A file without one of them is never parsed. (Not b"tpu":
# it matches every "output"; the old TPU spellings all say "contrib" or "estimator".)
PREFILTER_TOKENS = (
    b"stimator",
    b"contrib",
    b"RunConfig",
    b"export_savedmodel",
    b"input_fn",
    b"model_fn",
    # a project helper that makes an input function's batches (`.batch(`, `padded_batch(`)
    # in a module of its own: TPU005 threads params["batch_size"] into it
    b"batch(",
    # a project helper that applies an optimizer for a model_fn's train op, in a module of
    # its own: TPU004 threads params["use_tpu"] into it (est2tpu.project.train_ops)
    b"minimize(",
    b"apply_gradients(",
)


def may_match(data: bytes, target: Target | None = None) -> bool:
    """The byte pre-filter. On `tf2`, any TensorFlow module passes too: a model_fn may call
    a helper in it whose TF1 layers, losses and metrics must change as well."""
    if any(token in data for token in PREFILTER_TOKENS):
        return True
    return target is Target.TF2 and b"tensorflow" in data


def module_names(path: PurePath, root: PurePath | None) -> list[str]:
    """Every dotted name a file may be imported as: `model`, `trainer.model`, ..."""
    parts = list(path.with_suffix("").parts)
    if root is not None:
        try:
            parts = list(path.with_suffix("").relative_to(root).parts)
        except ValueError:
            pass
    return dotted_names(parts)


def dotted_names(parts: list[str]) -> list[str]:
    """`module_names` of a file whose path below its root, suffix dropped, is `parts`."""
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


# Each pattern starts with a literal, which lets `re` skip ahead fast (a leading `\b` or
# look-behind makes it try every position: 20 x slower). What must come before the literal
# is checked by `_matches`.
_FROM_IMPORT = re.compile(r"from\s+([\w.]+)\s+import\s*(\([^)]*\)?|[^\n;]*)")
_PLAIN_IMPORT = re.compile(r"import\s+([^\n;]*)")
_COMMENT = re.compile(r"#[^\n]*")
_WORD = re.compile(r"\w")


def _matches(pattern: re.Pattern[str], text: str, before: str) -> Iterator[re.Match[str]]:
    """`re.finditer` of the pattern with a look-behind: not preceded by a word character
    or one of `before`. Exactly finditer's matches (a candidate that fails the check is
    skipped by one character, not by its length)."""
    pos = 0
    while (match := pattern.search(text, pos)) is not None:
        start = match.start()
        prev = text[start - 1] if start else ""
        if prev and (prev in before or _WORD.match(prev)):
            pos = start + 1
            continue
        yield match
        pos = match.end()


def import_pairs(text: str) -> list[tuple[str, str]] | None:
    """(bound name, imported module) for every TensorFlow import a regex can see.

    A superset of what `ImportTable.from_module` binds to a `tensorflow*` module: it also
    sees imports inside strings and comments, and keeps names bound twice, which only ever
    adds spellings. Relative imports and `*` bind nothing there, nor here. None when a
    parenthesised import list holds a comment or does not close (the scan cannot tell).
    """
    if "tensorflow" not in text:
        return []
    if "\\" in text:
        text = re.sub(r"\\\r?\n", " ", text)
    pairs: list[tuple[str, str]] = []
    for match in _matches(_FROM_IMPORT, text, ""):
        module = match.group(1)
        if not module.startswith("tensorflow"):
            continue
        names = match.group(2)
        if names.startswith("(") and ("#" in names or not names.endswith(")")):
            return None
        names = _COMMENT.sub(" ", names).strip("() \t\r\n")
        for part in names.replace("\n", " ").split(","):
            words = part.split()
            if not words or words[0] == "*":
                continue
            bound = words[2] if len(words) >= 3 and words[1] == "as" else words[0]
            pairs.append((bound, f"{module}.{words[0]}"))
    for match in _matches(_PLAIN_IMPORT, text, "."):
        names = match.group(1)
        if "tensorflow" not in names:
            continue  # the `import` of most `from x import y` lines, and every other import
        for part in _COMMENT.sub(" ", names).split(","):
            words = part.split()
            if not words or not words[0].startswith("tensorflow"):
                continue
            if len(words) >= 3 and words[1] == "as":
                pairs.append((words[2], words[0]))
            else:
                top = words[0].split(".")[0]
                pairs.append((top, top))
    return pairs


def package_members(text: str, package: str) -> set[str]:
    """The members of `package` a module's text imports by the package's name
    (`from package import a, b as c`, `import package.a`): `{"a", "b"}`. A regex look, as
    `import_pairs`: imports in strings count too, which only adds names."""
    if package not in text:
        return set()
    text = re.sub(r"\\\r?\n", " ", text)
    found: set[str] = set()
    for match in _matches(_FROM_IMPORT, text, ""):
        module = match.group(1)
        if module == package:
            names = _COMMENT.sub(" ", match.group(2)).strip("() \t\r\n")
            found.update(
                words[0] for part in names.split(",") if (words := part.split()) and words[0] != "*"
            )
        elif module.startswith(package + "."):
            found.add(module[len(package) + 1 :].split(".")[0])
    for match in _matches(_PLAIN_IMPORT, text, "."):
        for part in _COMMENT.sub(" ", match.group(1)).split(","):
            words = part.split()
            if words and words[0].startswith(package + "."):
                found.add(words[0][len(package) + 1 :].split(".")[0])
    return found


# What `code_only` drops between two tokens it keeps, besides comments: whitespace, line
# ends and continuations (indents, dedents and line ends are whitespace in the text).
_BETWEEN_TOKENS = frozenset(" \t\f\r\n\\")


def may_spell(text: str, spellings: Iterable[str], after: str = "") -> bool:
    """Can `code_only(text)` hold one of these dotted spellings followed by `after`?

    A test on the raw text that is never false where that one is true, for the tokenizer
    (the dearer test) to run only where a spelling may be: most files that hold the last
    identifier of a spelling hold it alone (`tpu` is in every `output`). The tokens
    `code_only` joins are the text's own characters, and what it drops between those of a
    dotted name and its call is whitespace, line continuations and comments: each place
    the last identifier appears is checked backwards through the dots and forwards to
    `after`, stepping over those. A comment can be stepped over forwards (code's `#` starts
    one) but not backwards: a line end whose line holds a `#` ends the test with True.
    """
    code = _CODE.get(text)
    if code is not None:  # the exact answer is at hand (never false where code_only's is true)
        return any(spelling + after in code for spelling in spellings)
    by_last: dict[str, list[list[str]]] = {}
    for spelling in spellings:
        parts = spelling.split(".")
        by_last.setdefault(parts[-1], []).append(parts)
    for last, group in by_last.items():
        at = text.find(last)
        while at != -1:
            if any(_spelled_at(text, parts, at, after) for parts in group):
                return True
            at = text.find(last, at + 1)
    return False


def _spelled_at(text: str, parts: list[str], start: int, after: str) -> bool:
    """Is `parts` laid out in `text` with its last part at `start` (see `may_spell`)?"""
    if after:
        end = start + len(parts[-1])
        while end < len(text):
            if text[end] in _BETWEEN_TOKENS:
                end += 1
            elif text[end] == "#":
                end = text.find("\n", end)
                end = len(text) if end == -1 else end
            else:
                break
        if not text.startswith(after, end):
            return False
    for part in reversed(parts[:-1]):
        dot = _back_over_gap(text, start)
        if dot is None:
            return True
        if dot == 0 or text[dot - 1] != ".":
            return False
        before = _back_over_gap(text, dot - 1)
        if before is None:
            return True
        if not text.endswith(part, 0, before):
            return False
        start = before - len(part)
    return True


def _back_over_gap(text: str, at: int) -> int | None:
    """Where the whitespace and continuations that end at `at` begin; None when the gap
    crosses into a line with a `#` (the end of a comment cannot be told from code)."""
    while at > 0 and text[at - 1] in _BETWEEN_TOKENS:
        at -= 1
        if text[at] == "\n" and "#" in text[text.rfind("\n", 0, at) + 1 : at]:
            return None
    return at


_DROPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
_F_PREFIX = re.compile(r"[rRbBuU]?[fF]|[fF][rR]")


# The same texts are asked about in the index's "uses an Estimator" test and again by the
# rules' `applies`: a memo as big as the files a run tokenizes keeps it to once per text.
# The index's test runs in worker processes on large runs; what they tokenized comes back
# to the parent (`remember_code`) before the next workers fork, so that those inherit it.
_CODE: dict[str, str] = {}
_CODE_SIZE = 1024


def known_code(text: str) -> str | None:
    """`code_only(text)` when this process has it already (computed or remembered)."""
    return _CODE.get(text)


def remember_code(text: str, code: str) -> None:
    """Keep `code` as `code_only(text)` (computed by another process of the run)."""
    if len(_CODE) >= _CODE_SIZE:
        del _CODE[next(iter(_CODE))]  # the oldest
    _CODE[text] = code


def code_only(text: str) -> str:
    """The text's code without comments and string literals, tokens joined so that a
    dotted name or a call reads as in the usual spelling (`tf.estimator.Estimator(`).

    Names a file merely mentions in a docstring (TensorFlow's own sources mention
    `tf.estimator.Estimator` in hundreds of them) are not uses. f-strings are kept (the
    names in their fields are code). Text the tokenizer cannot read is returned as it is,
    so a test on the result never misses a use the text shows.
    """
    code = _CODE.get(text)
    if code is None:
        code = _code_only(text)
        remember_code(text, code)
    return code


def _code_only(text: str) -> str:
    out: list[str] = []
    last_word = False
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in _DROPPED:
                continue
            if tok.type == tokenize.STRING and not _F_PREFIX.match(tok.string):
                out.append(" ")
                last_word = False
                continue
            word = tok.type in (tokenize.NAME, tokenize.NUMBER)
            if word and last_word:
                out.append(" ")
            out.append(tok.string)
            last_word = word
    except (tokenize.TokenError, SyntaxError):
        return text
    return "".join(out)
